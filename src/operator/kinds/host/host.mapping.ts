/**
 * Host discovery (pure): a Kubernetes Node → the Host CR the operator keeps for it. No I/O, no clock: the same node
 * always gives the same result.
 *
 * Mapping and its decisions:
 * - CR name = the node name (node names are DNS subdomains, so valid CR names; the CR lives in the operator's
 *   namespace). A node without a name gives no host and a `MissingName` problem.
 * - `spec.hostname` = the node name; `spec.name` = `apiSlug(node name)`: the API validates `name` as a slug, and
 *   two nodes must never share one (see `apiSlug`).
 * - `default_ipv4`: the first ExternalIP that is IPv4, else the first InternalIP that is IPv4; `default_ipv6` the
 *   same with IPv6. Other address types (Hostname, InternalDNS, ExternalDNS) are ignored. An ExternalIP/InternalIP
 *   whose address is not an IP ("not-an-ip", "") is skipped with an `InvalidNodeAddress` problem. No address of a
 *   family → the field is absent (no problem: IPv6-less and IPv4-less nodes are normal).
 * - `resource_cpu_cores` = `toCores(capacity.cpu)` (whole cores, rounded down, at least 1 when > 0);
 *   `resource_memory` = `toMebibytes(capacity.memory)` (MB in binary units, rounded down: "Ki", "Mi", "Gi" and plain
 *   bytes all work). A value that does not parse (or is negative) → the field is absent and an `InvalidNodeCapacity`
 *   problem names the field and value. A missing capacity entry → field absent, no problem.
 * - `resource_cpu_architecture` and `provider_image_os_architecture` = `nodeInfo.architecture`.
 * - `provider_image_os_flavor` / `provider_image_os_version` from `nodeInfo.osImage`, only when it looks like
 *   "<Word> … <version>": flavor = the first word lower-cased ("Ubuntu 22.04.4 LTS" → ubuntu / 22.04.4,
 *   "Debian GNU/Linux 12 (bookworm)" → debian / 12, "Flatcar Container Linux by Kinvolk 3815.2.0" → flatcar /
 *   3815.2.0); version = the first later word that is a dotted number, ignoring surrounding brackets, a leading "v"
 *   and a trailing "-suffix" ("Talos (v1.7.0)" → talos / 1.7.0, RHCOS "414.92.202402051952-0" → 414.92.202402051952).
 *   No such word (e.g. "Container-Optimized OS from Google") → both absent. operatingSystem / kernelVersion have no
 *   Host field in the API and are not mapped.
 * - `provider_id` = `spec.providerID` when set (non-empty).
 * - `role`: `k8s-controlplane` when the label `node-role.kubernetes.io/control-plane` or the legacy
 *   `node-role.kubernetes.io/master` is present, whatever its value (kubeadm sets them with an empty value; the
 *   label's presence is the convention), else `k8s-worker`. `generic` is never chosen: every node is a k8s node.
 * - `source` = {node_name, node_uid} (node_uid only when the node has one).
 * - `status.node_ready` = the Ready condition has status "True"; no Ready condition → false.
 * - Keys whose value would be undefined are left out of the spec, so a spec deep-equals what the API server returns.
 * - No labels are produced here; a caller labelling the CR with the node must use the
 *   slug (≤ 63) or an annotation, never the raw node name (up to 253 characters).
 */
import {isIPv4, isIPv6} from 'node:net'
import type {HostSpec} from '../../../crds/host.js'
import {toCores, toMebibytes} from '../../../lib/quantity.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'
import {commonProblemReasons, type DiscoveryProblem} from '../../discovery/types.js'

/** The `reason` values of host discovery problems, also used as Kubernetes Event reasons. */
export const hostProblemReasons = {
  missingName: commonProblemReasons.missingName,
  invalidNodeAddress: 'InvalidNodeAddress',
  invalidNodeCapacity: 'InvalidNodeCapacity',
} as const

export const controlPlaneRoleLabels = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'] as const

/** Only the fields host discovery reads; plain API JSON and @kubernetes/client-node's V1Node both fit. */
export interface NodeLike {
  metadata?: {
    name?: string
    uid?: string
    labels?: Readonly<Record<string, string>>
  }
  spec?: {
    providerID?: string
  }
  status?: {
    addresses?: ReadonlyArray<{type?: string; address?: string}>
    capacity?: Readonly<Record<string, string>>
    nodeInfo?: {
      architecture?: string
      osImage?: string
      operatingSystem?: string
      kernelVersion?: string
    }
    conditions?: ReadonlyArray<{type?: string; status?: string}>
  }
}

export interface DesiredHost {
  /** CR name: the node name. */
  name: string
  spec: HostSpec
  status: {node_ready: boolean}
}

export interface HostDiscoveryResult {
  host?: DesiredHost
  problems: DiscoveryProblem[]
}

// -- node → host ------------------------------------------------------------------------------------------------

/** The Host CR for a node, with the problems found on the way (a problem never stops the other fields). */
export function hostForNode(node: NodeLike): HostDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const nodeName = node.metadata?.name
  if (!nodeName) {
    problems.push({
      reason: hostProblemReasons.missingName,
      message: 'The node has no metadata.name: there is nothing to name the Host after, so no Host is created for it.',
    })
    return {problems}
  }

  const addresses = nodeAddresses(node, problems)
  const capacity = node.status?.capacity ?? {}
  const info = node.status?.nodeInfo
  const os = parseOsImage(info?.osImage)
  const uid = node.metadata?.uid

  const spec: HostSpec = withoutUndefined({
    name: apiSlug(nodeName),
    hostname: nodeName,
    role: isControlPlane(node.metadata?.labels) ? 'k8s-controlplane' as const : 'k8s-worker' as const,
    default_ipv4: addresses.ipv4,
    default_ipv6: addresses.ipv6,
    resource_cpu_cores: capacityValue(nodeName, capacity, 'cpu', toCores, 'a CPU quantity such as "4" or "3500m"', problems),
    resource_cpu_architecture: info?.architecture || undefined,
    resource_memory: capacityValue(nodeName, capacity, 'memory', toMebibytes, 'a memory quantity such as "16Gi", "16393232Ki" or "17179869184"', problems),
    provider_id: node.spec?.providerID || undefined,
    provider_image_os_flavor: os?.flavor,
    provider_image_os_version: os?.version,
    provider_image_os_architecture: info?.architecture || undefined,
    source: uid ? {node_name: nodeName, node_uid: uid} : {node_name: nodeName},
  })

  return {host: {name: nodeName, spec, status: {node_ready: isReady(node)}}, problems}
}

function isControlPlane(labels: Readonly<Record<string, string>> | undefined): boolean {
  if (!labels) return false
  return controlPlaneRoleLabels.some((key) => Object.hasOwn(labels, key))
}

function isReady(node: NodeLike): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
}

function nodeAddresses(node: NodeLike, problems: DiscoveryProblem[]): {ipv4?: string; ipv6?: string} {
  const found: Record<'ExternalIP' | 'InternalIP', {ipv4?: string; ipv6?: string}> = {ExternalIP: {}, InternalIP: {}}
  for (const [index, entry] of (node.status?.addresses ?? []).entries()) {
    if (entry.type !== 'ExternalIP' && entry.type !== 'InternalIP') continue
    const address = entry.address ?? ''
    const slot = found[entry.type]
    if (isIPv4(address)) slot.ipv4 ??= address
    else if (isIPv6(address)) slot.ipv6 ??= address
    else {
      problems.push({
        reason: hostProblemReasons.invalidNodeAddress,
        message: `Node "${node.metadata?.name}": status.addresses[${index}] (${entry.type}) "${address}" is not an IPv4 or IPv6 address; `
          + 'it is skipped when choosing default_ipv4 / default_ipv6.',
      })
    }
  }
  return {
    ipv4: found.ExternalIP.ipv4 ?? found.InternalIP.ipv4,
    ipv6: found.ExternalIP.ipv6 ?? found.InternalIP.ipv6,
  }
}

function capacityValue(
  nodeName: string,
  capacity: Readonly<Record<string, string>>,
  key: 'cpu' | 'memory',
  convert: (text: string) => number | undefined,
  accepted: string,
  problems: DiscoveryProblem[],
): number | undefined {
  if (!Object.hasOwn(capacity, key)) return undefined
  const raw = capacity[key]
  if (raw === undefined || raw === null) return undefined
  const value = convert(String(raw))
  if (value === undefined) {
    const field = key === 'cpu' ? 'resource_cpu_cores' : 'resource_memory'
    problems.push({
      reason: hostProblemReasons.invalidNodeCapacity,
      message: `Node "${nodeName}": status.capacity.${key} "${String(raw)}" is not ${accepted} (a non-negative Kubernetes quantity); `
        + `${field} is left out.`,
    })
  }
  return value
}

/** Flavor and version of an osImage such as "Ubuntu 22.04.4 LTS"; undefined when it does not look like one. */
export function parseOsImage(osImage: string | undefined): {flavor: string; version: string} | undefined {
  if (!osImage) return undefined
  const [first, ...rest] = osImage.trim().split(/\s+/)
  if (!first || !/^[A-Za-z][A-Za-z0-9_-]*$/.test(first)) return undefined
  for (const word of rest) {
    const match = /^v?(\d+(?:\.\d+)*)(?:[-+~_][0-9A-Za-z.+~_-]*)?$/i.exec(word.replace(/^[([{]+|[)\]},;:]+$/g, ''))
    if (match?.[1]) return {flavor: first.toLowerCase(), version: match[1]}
  }
  return undefined
}
