/**
 * Where the operator runs, read from the cluster: its Deployments and Pods (label app.kubernetes.io/name=
 * polycrate-operator, every namespace), its leader Leases (polycrate-operator-leader) and the heartbeat Leases of
 * processes without leader election (runtime/heartbeat.ts). `status` shows it, `install` refuses a second namespace
 * by it, and `uninstall` never releases the shared finalizers while any of it is alive.
 *
 * `operatorPresence` is pure (the listed objects and the time in, the answer out); `collectPresence` lists them.
 * A lease is fresh when its holder renewed it within its duration, by the clock of the machine that reads it (the
 * holder wrote renewTime with its own: clocks apart by more than a few seconds make the age shown that much off).
 */
import {KubeApiError, type KubeClient, type KubeObject} from '../../kube/client.js'
import {heartbeatLease, LEADER_LEASE_NAME, LEADER_POD_LABEL, OPERATOR_NAME, OPERATOR_SELECTOR} from '../conventions.js'
import type {Lease} from '../runtime/leader-election.js'

export interface DeploymentObject extends KubeObject {
  spec?: {replicas?: number; template?: {spec?: {containers?: Array<{name: string; image?: string}>}}}
  status?: {
    observedGeneration?: number
    replicas?: number
    updatedReplicas?: number
    readyReplicas?: number
    availableReplicas?: number
    conditions?: Array<{type: string; status: string; reason?: string; message?: string}>
  }
}

export interface PodObject extends KubeObject {
  spec?: {nodeName?: string; containers?: Array<{name: string; image?: string}>}
  status?: {
    phase?: string
    startTime?: string
    containerStatuses?: Array<{
      name: string
      ready?: boolean
      restartCount?: number
      image?: string
      imageID?: string
      state?: {waiting?: {reason?: string; message?: string}; running?: {startedAt?: string}; terminated?: {reason?: string; exitCode?: number; message?: string}}
      lastState?: {terminated?: {reason?: string; exitCode?: number; message?: string; finishedAt?: string}}
    }>
    conditions?: Array<{type: string; status: string; reason?: string; message?: string}>
  }
}

/** What collectPresence lists. */
export interface PresenceSnapshot {
  deployments: DeploymentObject[]
  pods: PodObject[]
  leases: Lease[]
  /** What could not be listed (e.g. 403: the caller may not list Pods in every namespace). */
  problems: string[]
}

export interface PodView {
  namespace: string
  name: string
  node: string | null
  phase: string
  ready: boolean
  restarts: number
  image: string | null
  /** The image's tag (or digest), the version it runs. */
  version: string | null
  /** Why it is not ready: the container's waiting/terminated reason, or not scheduled. */
  reason: string | null
  creationTimestamp: string | null
  terminating: boolean
  /** Its polycrate.io/leader label: true, false, or null without it. */
  leaderLabel: boolean | null
}

export interface LeaseView {
  namespace: string
  name: string
  role: 'leader' | 'heartbeat'
  /** holderIdentity; null once released (a graceful stop). */
  holder: string | null
  /** The host of the holder (its Pod's name in a Pod): the identity's part before "_", or the heartbeat's annotation. */
  host: string | null
  /** The operator Pod in the lease's namespace that holds it, when the host is one. */
  pod: string | null
  pid: string | null
  version: string | null
  renewTime: string | null
  /** now − renewTime (ms); null without renewTime. */
  renewedAgoMs: number | null
  durationMs: number
  /** Held and renewed within its duration. */
  fresh: boolean
}

/** One namespace with something of the operator in it. */
export interface OperatorInstance {
  namespace: string
  deployment: {
    name: string
    desired: number
    ready: number
    updated: number
    available: number
    /** The containers' images of the Deployment's template. */
    images: string[]
  } | null
  pods: PodView[]
  leader: LeaseView | null
  heartbeats: LeaseView[]
  /** Something of it is alive: a fresh lease, or a Pod that runs. */
  running: boolean
  /** A process outside the cluster holds a fresh lease here (a laptop's `operator run`). */
  outside: LeaseView[]
}

export interface Presence {
  /** Every namespace with a Deployment, a Pod or a lease of the operator; running ones first, then by namespace. */
  instances: OperatorInstance[]
  problems: string[]
}

const DEFAULT_LEASE_SECONDS = 15

function leaseView(lease: Lease, role: LeaseView['role'], podNames: ReadonlySet<string>, now: number): LeaseView {
  const spec = lease.spec ?? {}
  const holder = typeof spec.holderIdentity === 'string' && spec.holderIdentity !== '' ? spec.holderIdentity : null
  const annotations = lease.metadata?.annotations ?? {}
  const host = annotations[heartbeatLease.hostAnnotation] ?? (holder ? holder.split('_')[0] ?? null : null)
  const renewed = spec.renewTime ? Date.parse(spec.renewTime) : Number.NaN
  const renewedAgoMs = Number.isNaN(renewed) ? null : Math.max(0, now - renewed)
  const durationMs = (typeof spec.leaseDurationSeconds === 'number' && spec.leaseDurationSeconds > 0 ? spec.leaseDurationSeconds : DEFAULT_LEASE_SECONDS) * 1000
  return {
    namespace: lease.metadata?.namespace ?? '',
    name: lease.metadata?.name ?? '',
    role,
    holder,
    host,
    pod: host && podNames.has(host) ? host : null,
    pid: annotations[heartbeatLease.pidAnnotation] ?? null,
    version: annotations[heartbeatLease.versionAnnotation] ?? null,
    renewTime: spec.renewTime ?? null,
    renewedAgoMs,
    durationMs,
    fresh: holder !== null && renewedAgoMs !== null && renewedAgoMs < durationMs,
  }
}

/** The version an image reference names: its digest, else its tag, else "latest". */
export function imageVersion(image: string | undefined): string | null {
  if (!image) return null
  const at = image.indexOf('@')
  if (at >= 0) return image.slice(at + 1, at + 1 + 19)
  const lastSlash = image.lastIndexOf('/')
  const colon = image.lastIndexOf(':')
  return colon > lastSlash ? image.slice(colon + 1) : 'latest'
}

export function podView(pod: PodObject): PodView {
  const containers = pod.status?.containerStatuses ?? []
  const main = containers.find((c) => c.name === 'operator') ?? containers[0]
  const image = pod.spec?.containers?.find((c) => c.name === 'operator')?.image ?? pod.spec?.containers?.[0]?.image ?? main?.image ?? null
  const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
  const reason = ready
    ? null
    : main?.state?.waiting?.reason ?? main?.state?.terminated?.reason ?? (unscheduled ? `Unschedulable: ${unscheduled.message ?? unscheduled.reason ?? ''}`.trim() : null)
  const label = pod.metadata?.labels?.[LEADER_POD_LABEL]
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    node: pod.spec?.nodeName ?? null,
    phase: pod.status?.phase ?? 'Pending',
    ready,
    restarts: containers.reduce((sum, c) => sum + (c.restartCount ?? 0), 0),
    image,
    version: imageVersion(image ?? undefined),
    reason,
    creationTimestamp: (pod.metadata?.creationTimestamp as string | undefined) ?? null,
    terminating: Boolean(pod.metadata?.deletionTimestamp),
    leaderLabel: label === 'true' ? true : label === 'false' ? false : null,
  }
}

/** Where the operator runs (pure). */
export function operatorPresence(snapshot: Pick<PresenceSnapshot, 'deployments' | 'pods' | 'leases'> & {problems?: string[]}, now: number): Presence {
  const namespaces = new Set<string>()
  const ns = (object: KubeObject) => object.metadata?.namespace ?? ''
  for (const object of [...snapshot.deployments, ...snapshot.pods, ...snapshot.leases]) namespaces.add(ns(object))
  const instances: OperatorInstance[] = []
  for (const namespace of namespaces) {
    const deploymentObject = snapshot.deployments.find((d) => ns(d) === namespace && d.metadata?.name === OPERATOR_NAME)
      ?? snapshot.deployments.find((d) => ns(d) === namespace)
    const pods = snapshot.pods.filter((p) => ns(p) === namespace).map(podView).sort((a, b) => a.name.localeCompare(b.name))
    const podNames = new Set(pods.map((pod) => pod.name))
    const leaderLease = snapshot.leases.find((l) => ns(l) === namespace && l.metadata?.name === LEADER_LEASE_NAME)
    const heartbeats = snapshot.leases
      .filter((l) => ns(l) === namespace && l.metadata?.labels?.[heartbeatLease.roleLabel] === heartbeatLease.roleValue)
      .map((l) => leaseView(l, 'heartbeat', podNames, now))
      .sort((a, b) => (a.renewedAgoMs ?? Infinity) - (b.renewedAgoMs ?? Infinity))
    const leader = leaderLease ? leaseView(leaderLease, 'leader', podNames, now) : null
    const status = deploymentObject?.status ?? {}
    const deployment = deploymentObject
      ? {
        name: deploymentObject.metadata?.name ?? OPERATOR_NAME,
        desired: deploymentObject.spec?.replicas ?? 1,
        ready: status.readyReplicas ?? 0,
        updated: status.updatedReplicas ?? 0,
        available: status.availableReplicas ?? 0,
        images: (deploymentObject.spec?.template?.spec?.containers ?? []).map((c) => c.image ?? '').filter(Boolean),
      }
      : null
    const fresh = [...(leader ? [leader] : []), ...heartbeats].filter((lease) => lease.fresh)
    const podRuns = pods.some((pod) => pod.phase === 'Running' && !pod.terminating)
    const outside = fresh.filter((lease) => lease.pod === null)
    instances.push({namespace, deployment, pods, leader, heartbeats, running: fresh.length > 0 || podRuns, outside})
  }
  instances.sort((a, b) => Number(b.running) - Number(a.running) || a.namespace.localeCompare(b.namespace))
  return {instances, problems: snapshot.problems ?? []}
}

/** `3s`, `4m 5s`, `2h 3m`, `3d 4h`: how long ago, for "renewed … ago" (pure). */
export function formatAgo(ms: number): string {
  const seconds = Math.floor(ms / 1000)
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m${seconds % 60 ? ` ${seconds % 60}s` : ''}`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h${minutes % 60 ? ` ${minutes % 60}m` : ''}`
  const days = Math.floor(hours / 24)
  return `${days}d${hours % 24 ? ` ${hours % 24}h` : ''}`
}

/** Who holds a lease, in words: `Pod polycrate-operator-6d4f9-a1`, `a process on host laptop (pid 4242)`. */
export function holderText(lease: LeaseView): string {
  if (lease.pod) return `Pod ${lease.pod}`
  if (lease.host) return `a process on host ${lease.host}${lease.pid ? ` (pid ${lease.pid})` : ''}, outside the cluster`
  return lease.holder ?? 'nobody'
}

/** A lease in words: `leader Pod x, renewed 3s ago` / `heartbeat of …, stopped 5m ago`. */
export function leaseText(lease: LeaseView): string {
  const ago = lease.renewedAgoMs === null ? 'never renewed' : `${formatAgo(lease.renewedAgoMs)} ago`
  const what = lease.role === 'leader' ? `Lease ${lease.name}` : `heartbeat Lease ${lease.name}`
  if (lease.fresh) return `${what} held by ${holderText(lease)}, renewed ${ago}`
  if (lease.holder === null) return `${what} released ${ago} (the process stopped)`
  return `${what} of ${holderText(lease)} expired: last renewed ${ago}`
}

/** One line on where an instance stands: `namespace polycrate (Deployment 1/1 ready; Lease … renewed 3s ago)`. */
export function instanceText(instance: OperatorInstance): string {
  const parts: string[] = []
  if (instance.deployment) parts.push(`Deployment ${instance.deployment.name} ${instance.deployment.ready}/${instance.deployment.desired} ready`)
  else if (instance.pods.length > 0) parts.push(`${instance.pods.length} Pod(s)`)
  const fresh = [...(instance.leader?.fresh ? [instance.leader] : []), ...instance.heartbeats.filter((h) => h.fresh)]
  for (const lease of fresh) parts.push(leaseText(lease))
  return `namespace ${instance.namespace}${parts.length > 0 ? ` (${parts.join('; ')})` : ''}`
}

/** Every Deployment, Pod, leader Lease and heartbeat Lease of the operator, in every namespace (or in `namespace`
 * alone where the caller may not list across namespaces). */
export async function collectPresence(client: Pick<KubeClient, 'request'>, options: {namespace?: string} = {}): Promise<PresenceSnapshot> {
  const problems: string[] = []
  const list = async <T>(what: string, path: (namespace?: string) => string, query: Record<string, string>): Promise<T[]> => {
    try {
      return (await client.request<{items?: T[]}>({path: path(), query})).items ?? []
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 403)) throw error
    }
    if (options.namespace) {
      try {
        const items = (await client.request<{items?: T[]}>({path: path(options.namespace), query})).items ?? []
        problems.push(`cannot list ${what} in every namespace (403 Forbidden): only namespace ${options.namespace} was looked at`)
        return items
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 403)) throw error
      }
    }
    problems.push(`cannot list ${what} (403 Forbidden): your identity may not read them`)
    return []
  }
  const at = (base: string, plural: string) => (namespace?: string) => (namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}` : `${base}/${plural}`)
  const [deployments, pods, leaders, heartbeats] = await Promise.all([
    list<DeploymentObject>('Deployments', at('/apis/apps/v1', 'deployments'), {labelSelector: OPERATOR_SELECTOR}),
    list<PodObject>('Pods', at('/api/v1', 'pods'), {labelSelector: OPERATOR_SELECTOR}),
    list<Lease>('Leases', at('/apis/coordination.k8s.io/v1', 'leases'), {fieldSelector: `metadata.name=${LEADER_LEASE_NAME}`}),
    list<Lease>('Leases', at('/apis/coordination.k8s.io/v1', 'leases'), {labelSelector: `${heartbeatLease.roleLabel}=${heartbeatLease.roleValue}`}),
  ])
  return {deployments, pods, leases: [...leaders, ...heartbeats], problems: [...new Set(problems)]}
}

/** The operator `status` looks at: where it runs, and how that was decided. */
export interface OperatorStatus {
  namespace: string
  /**
   * flag: --operator-namespace; install: the namespace install just installed into; found: where an operator runs or
   * is installed; default: nothing found, the default.
   */
  chosenBy: 'flag' | 'install' | 'found' | 'default'
  running: boolean
  instance: OperatorInstance | null
  /** One line: what runs (or that nothing does, and what was found instead). */
  summary: string
  /** Other namespaces where an operator runs or is installed. */
  elsewhere: OperatorInstance[]
  problems: string[]
}

/**
 * The operator `status` reports on (pure): the instance in `--operator-namespace`, else the one that runs (or is
 * installed) — the running one first — else the default namespace with nothing in it.
 */
export function operatorStatus(presence: Presence, options: {operatorNamespace?: string; defaultNamespace: string; installed?: boolean}): OperatorStatus {
  const found = presence.instances.find((instance) => instance.running) ?? presence.instances.find((instance) => instance.deployment)
  const namespace = options.operatorNamespace ?? found?.namespace ?? options.defaultNamespace
  const chosenBy = options.operatorNamespace ? (options.installed ? 'install' : 'flag') : found ? 'found' : 'default'
  const instance = presence.instances.find((candidate) => candidate.namespace === namespace) ?? null
  const elsewhere = presence.instances.filter((candidate) => candidate.namespace !== namespace && (candidate.running || candidate.deployment))
  const running = instance?.running ?? false
  return {namespace, chosenBy, running, instance, summary: statusSummary(namespace, instance), elsewhere, problems: presence.problems}
}

/** `running: …` or `NOTHING RUNS …`, with what there is instead (pure). */
export function statusSummary(namespace: string, instance: OperatorInstance | null): string {
  if (!instance) return `nothing runs: no Deployment, Pod or lease of the operator in namespace ${namespace}`
  const parts: string[] = []
  const deployment = instance.deployment
  if (deployment) parts.push(`Deployment ${deployment.name} ${deployment.ready}/${deployment.desired} ready`)
  const leader = instance.leader
  if (leader?.fresh) parts.push(`leader ${holderText(leader)} (Lease renewed ${formatAgo(leader.renewedAgoMs ?? 0)} ago)`)
  for (const heartbeat of instance.heartbeats.filter((h) => h.fresh)) {
    parts.push(`${holderText(heartbeat)} without leader election (heartbeat renewed ${formatAgo(heartbeat.renewedAgoMs ?? 0)} ago)`)
  }
  if (instance.running) {
    if (!leader?.fresh && instance.heartbeats.every((h) => !h.fresh)) parts.push('Pods running, no live lease yet')
    return `running: ${parts.join('; ')}`
  }
  const last = [...(leader ? [leader] : []), ...instance.heartbeats].filter((lease) => lease.renewedAgoMs !== null)
    .sort((a, b) => a.renewedAgoMs! - b.renewedAgoMs!)[0]
  const notReady = instance.pods.filter((pod) => !pod.ready).map((pod) => `Pod ${pod.name} ${pod.terminating ? 'terminating' : pod.reason ?? pod.phase}`)
  return [
    `nothing runs in namespace ${namespace}`,
    ...(deployment ? [`Deployment ${deployment.name} ${deployment.ready}/${deployment.desired} ready${deployment.desired === 0 ? ' (scaled to 0)' : ''}`] : []),
    ...notReady,
    ...(last ? [`last seen: ${leaseText(last)}`] : []),
  ].join('; ')
}
