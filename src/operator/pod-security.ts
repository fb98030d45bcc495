/**
 * Pod Security Admission for the operator's namespace (pure): which Pod Security Standards level its Pod meets, the
 * namespace labels install puts on a namespace it creates, and the level an existing namespace enforces.
 *
 * The operator's Pod meets `restricted` (non-root, RuntimeDefault seccomp, no privilege escalation, every capability
 * dropped, only emptyDir/secret/projected volumes, and the sysctl `net.ipv4.ping_group_range`, which both baseline and
 * restricted allow). Only `security.add_capabilities` can take it out: restricted allows adding NET_BIND_SERVICE
 * only, baseline the capabilities of BASELINE_CAPABILITIES (NET_RAW is not one of them), anything else is privileged.
 */

export type PodSecurityLevel = 'privileged' | 'baseline' | 'restricted'

const ORDER: readonly PodSecurityLevel[] = ['privileged', 'baseline', 'restricted']

/** The Kubernetes minor whose policy `enforce` is pinned to (the version the tests run); warn and audit follow `latest`. */
export const POD_SECURITY_VERSION = 'v1.35'

export const POD_SECURITY_LABEL = 'pod-security.kubernetes.io'

/** Capabilities the restricted profile lets a container add. */
export const RESTRICTED_CAPABILITIES: ReadonlySet<string> = new Set(['NET_BIND_SERVICE'])
/** Capabilities the baseline profile lets a container add (Pod Security Standards, "Capabilities"). */
export const BASELINE_CAPABILITIES: ReadonlySet<string> = new Set([
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
])

/** The unprivileged ICMP sockets of every group in the Pod (what `ping` needs without NET_RAW); a safe, namespaced sysctl. */
export const PING_GROUP_RANGE_SYSCTL = {name: 'net.ipv4.ping_group_range', value: '0 2147483647'} as const

/** The highest level a Pod of the operator meets with these added capabilities. */
export function podSecurityLevel(addCapabilities: readonly string[]): PodSecurityLevel {
  if (addCapabilities.every((capability) => RESTRICTED_CAPABILITIES.has(capability))) return 'restricted'
  if (addCapabilities.every((capability) => BASELINE_CAPABILITIES.has(capability))) return 'baseline'
  return 'privileged'
}

/**
 * The labels of a namespace install creates: `enforce` at the level the Pod meets, pinned to POD_SECURITY_VERSION (a
 * cluster upgrade does not change what is admitted), `warn` and `audit` at restricted on `latest` (a newer policy,
 * or capabilities that leave restricted, are reported before they are enforced).
 */
export function namespacePodSecurityLabels(level: PodSecurityLevel): Record<string, string> {
  return {
    [`${POD_SECURITY_LABEL}/enforce`]: level,
    [`${POD_SECURITY_LABEL}/enforce-version`]: POD_SECURITY_VERSION,
    [`${POD_SECURITY_LABEL}/warn`]: 'restricted',
    [`${POD_SECURITY_LABEL}/warn-version`]: 'latest',
    [`${POD_SECURITY_LABEL}/audit`]: 'restricted',
    [`${POD_SECURITY_LABEL}/audit-version`]: 'latest',
  }
}

/** Whether a label key is one of Pod Security Admission's. */
export const isPodSecurityLabel = (key: string) => key.startsWith(`${POD_SECURITY_LABEL}/`)

/**
 * The level a namespace enforces, from its labels: none or an unknown value → `privileged` (the admission plugin's
 * default, unless the cluster's AdmissionConfiguration sets another, which a client cannot see).
 */
export function enforcedLevel(namespaceLabels: Readonly<Record<string, string>> | undefined): PodSecurityLevel {
  const value = namespaceLabels?.[`${POD_SECURITY_LABEL}/enforce`]
  return ORDER.includes(value as PodSecurityLevel) ? value as PodSecurityLevel : 'privileged'
}

/** `a` is less strict than `b`. */
export const weaker = (a: PodSecurityLevel, b: PodSecurityLevel) => ORDER.indexOf(a) < ORDER.indexOf(b)
