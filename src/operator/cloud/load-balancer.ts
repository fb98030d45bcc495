/**
 * LoadBalancer Services (pure): whether the operator manages a Service, and the Polycrate API load balancer
 * instance it wants for it (the upstream service controller of k8s.io/cloud-provider as the model). No I/O, no
 * clock: the same Service and Nodes always give the same result.
 *
 * Which Services (`serviceScope`):
 * - Only `spec.type: LoadBalancer`. A Service with `spec.loadBalancerClass` belongs to that class's controller
 *   (upstream rule) and is not managed; with the annotation `polycrate.io/loadbalancer=managed` on top, that is a
 *   `ConflictingLoadBalancerSettings` problem (still not managed: the class names the owner).
 * - `all` (default): every such Service except `polycrate.io/loadbalancer=ignore`; `opt-in`: only
 *   `polycrate.io/loadbalancer=managed`. Any other value of the annotation is an `InvalidLoadBalancerAnnotation`
 *   problem and counts as absent (managed under `all`, not under `opt-in`).
 *
 * The instance:
 * - `name` = "a" + the Service's UID without dashes (the upstream `GetLoadBalancerName`): the natural key the
 *   instance is found by after a restart, so it is adopted, never created twice. `display_name` =
 *   `<namespace>/<service>`; `consumer_meta` names the cluster and the Service (its UID is the second key, for an
 *   instance whose name is not ours: `ownsInstance`).
 * - `ports`: one per Service port, in the Service's order: `{port, name, protocol: 'tcp', target_port: nodePort}`.
 *   A port without a nodePort (`allocateLoadBalancerNodePorts: false`) is skipped with a `NodePortMissing`
 *   problem; a UDP or SCTP port with `UnsupportedProtocol` (the API's load balancers forward TCP).
 * - targets: every node that is Ready and not labelled `node.kubernetes.io/exclude-from-external-load-balancers`,
 *   by name; its address is the first ExternalIP, else the first InternalIP (IPv4 before IPv6). A node without
 *   either is skipped with `NodeWithoutAddress`. No target at all → the instance is still ensured, with an
 *   `UnAvailableLoadBalancer` problem (the upstream Event's reason).
 * - `config`: JSON `{"frontends":[{"port","protocol","backends":["ip:nodePort",…]}]}`: what forwards where.
 * - No usable port at all (none, or all skipped) → no instance (`NoUsablePorts`); one that exists is kept.
 * - `spec.loadBalancerIP` / `spec.loadBalancerSourceRanges` cannot be honoured (the API picks the IP and has no
 *   source filter) → `LoadBalancerIPUnsupported` / `SourceRangesUnsupported`, the instance is still ensured.
 */
import {isIPv4, isIPv6} from 'node:net'
import type {LoadbalancerPort} from '../../api/index.js'
import {annotations, cloudProvider} from '../conventions.js'

export type ServiceScope = 'all' | 'opt-in'

export interface ServicePort {
  name?: string
  protocol?: string
  port?: number
  nodePort?: number
}

/** Only what the service controller reads of a Service. */
export interface LbService {
  metadata: {
    name: string
    namespace: string
    uid?: string
    annotations?: Readonly<Record<string, string>>
    finalizers?: readonly string[]
    deletionTimestamp?: string
  }
  spec?: {
    type?: string
    ports?: readonly ServicePort[]
    loadBalancerClass?: string
    loadBalancerIP?: string
    loadBalancerSourceRanges?: readonly string[]
  }
  status?: {loadBalancer?: {ingress?: ReadonlyArray<{ip?: string; hostname?: string}>}}
}

/** Only what the service controller reads of a Node. */
export interface LbNode {
  metadata: {name: string; labels?: Readonly<Record<string, string>>}
  status?: {
    addresses?: ReadonlyArray<{type?: string; address?: string}>
    conditions?: ReadonlyArray<{type?: string; status?: string}>
  }
}

export interface LbProblem {
  reason: string
  message: string
}

export interface Management {
  managed: boolean
  problems: LbProblem[]
}

export interface DesiredLoadBalancer {
  name: string
  display_name: string
  ports: LoadbalancerPort[]
  config: string
  consumer_meta: {kind: 'Service'; namespace: string; name: string; uid: string; k8s_cluster: string | null}
}

export interface LoadBalancerPlan {
  /** Undefined when the Service has no port the instance could forward. */
  desired?: DesiredLoadBalancer
  problems: LbProblem[]
}

const MANAGED = 'managed'
const IGNORE = 'ignore'

/** Whether the operator manages this Service's load balancer (a Service being deleted still counts). */
export function serviceManagement(service: LbService, scope: ServiceScope): Management {
  const problems: LbProblem[] = []
  if (service.spec?.type !== 'LoadBalancer') return {managed: false, problems}
  const ref = `Service ${service.metadata.namespace}/${service.metadata.name}`
  const raw = service.metadata.annotations?.[annotations.loadBalancer]
  let value: string | undefined = raw
  if (raw !== undefined && raw !== MANAGED && raw !== IGNORE) {
    problems.push({
      reason: 'InvalidLoadBalancerAnnotation',
      message: `${ref}: annotation ${annotations.loadBalancer}="${raw}" is neither "${MANAGED}" nor "${IGNORE}"; it is treated as absent `
        + `(service_scope ${scope}: ${scope === 'all' ? 'managed' : 'not managed'}). Fix the value.`,
    })
    value = undefined
  }
  const lbClass = service.spec.loadBalancerClass
  if (lbClass) {
    if (value === MANAGED) {
      problems.push({
        reason: 'ConflictingLoadBalancerSettings',
        message: `${ref}: annotation ${annotations.loadBalancer}=managed conflicts with spec.loadBalancerClass "${lbClass}", which hands the Service `
          + 'to another load balancer controller; the operator leaves it alone. Remove one of the two.',
      })
    }
    return {managed: false, problems}
  }
  if (value === IGNORE) return {managed: false, problems}
  return {managed: value === MANAGED || scope === 'all', problems}
}

/** The upstream cloud-provider's load balancer name: "a" + the UID without dashes, at most 32 characters. */
export function loadBalancerName(uid: string): string {
  return `a${uid.replace(/-/g, '')}`.slice(0, 32)
}

function isReady(node: LbNode): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
}

/** ExternalIP before InternalIP, IPv4 before IPv6 within each. */
export function nodeAddress(node: LbNode): string | undefined {
  const addresses = node.status?.addresses ?? []
  for (const type of ['ExternalIP', 'InternalIP']) {
    const candidates = addresses.filter((a) => a.type === type).map((a) => a.address ?? '')
    const found = candidates.find((a) => isIPv4(a)) ?? candidates.find((a) => isIPv6(a))
    if (found) return found
  }
  return undefined
}

function target(address: string, port: number): string {
  return isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`
}

/** The instance the Service wants, and what is wrong with it (`clusterId` may be unknown: null in consumer_meta). */
export function desiredLoadBalancer(service: LbService, nodes: readonly LbNode[], clusterId: string | undefined): LoadBalancerPlan {
  const problems: LbProblem[] = []
  const {namespace, name} = service.metadata
  const ref = `Service ${namespace}/${name}`
  const ports: LoadbalancerPort[] = []
  const specPorts = service.spec?.ports ?? []
  for (const [index, port] of specPorts.entries()) {
    const label = `port ${port.name ? `"${port.name}" ` : ''}(${port.port ?? `#${index}`})`
    const protocol = (port.protocol ?? 'TCP').toUpperCase()
    if (protocol !== 'TCP') {
      problems.push({reason: 'UnsupportedProtocol', message: `${ref}: ${label} uses ${protocol}; Polycrate load balancers forward TCP only, so this port is left out.`})
      continue
    }
    if (!port.port || !Number.isInteger(port.port)) {
      problems.push({reason: 'InvalidPort', message: `${ref}: ${label} has no valid port number; it is left out.`})
      continue
    }
    if (!port.nodePort) {
      problems.push({
        reason: 'NodePortMissing',
        message: `${ref}: ${label} has no nodePort (spec.allocateLoadBalancerNodePorts is false?); the load balancer forwards to NodeIP:NodePort, so this port is left out. Allocate node ports.`,
      })
      continue
    }
    if (ports.some((existing) => existing.port === port.port)) {
      problems.push({reason: 'DuplicatePort', message: `${ref}: ${label} repeats port ${port.port}; only the first one is forwarded.`})
      continue
    }
    ports.push({port: port.port, ...(port.name ? {name: port.name} : {}), protocol: 'tcp', target_port: port.nodePort})
  }
  if (service.spec?.loadBalancerIP) {
    problems.push({reason: 'LoadBalancerIPUnsupported', message: `${ref}: spec.loadBalancerIP "${service.spec.loadBalancerIP}" cannot be honoured: the Polycrate API assigns the load balancer's IP. Remove the field.`})
  }
  if ((service.spec?.loadBalancerSourceRanges ?? []).length > 0) {
    problems.push({reason: 'SourceRangesUnsupported', message: `${ref}: spec.loadBalancerSourceRanges is not supported by Polycrate load balancers; the load balancer accepts traffic from everywhere.`})
  }
  if (ports.length === 0) {
    problems.push({
      reason: 'NoUsablePorts',
      message: specPorts.length === 0
        ? `${ref} has no ports: there is nothing for a load balancer to forward. Add a TCP port.`
        : `${ref} has no port a load balancer can forward (see the other events); no load balancer is ensured.`,
    })
    return {problems}
  }

  const backends: string[] = []
  const targets = [...nodes]
    .filter((node) => isReady(node) && node.metadata.labels?.[cloudProvider.excludeFromLoadBalancersLabel] === undefined)
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0))
  for (const node of targets) {
    const address = nodeAddress(node)
    if (address) backends.push(address)
    else problems.push({reason: 'NodeWithoutAddress', message: `Node ${node.metadata.name} has no ExternalIP or InternalIP address; it is left out of the load balancer of ${ref}.`})
  }
  if (backends.length === 0) {
    problems.push({reason: 'UnAvailableLoadBalancer', message: `There are no available nodes for LoadBalancer ${ref}: no node is Ready with an address.`})
  }
  const config = JSON.stringify({
    frontends: ports.map((port) => ({port: port.port, protocol: 'tcp', backends: backends.map((address) => target(address, port.target_port!))})),
  })
  const uid = service.metadata.uid ?? ''
  return {
    desired: {
      name: loadBalancerName(uid),
      display_name: `${namespace}/${name}`,
      ports,
      config,
      consumer_meta: {kind: 'Service', namespace, name, uid, k8s_cluster: clusterId ?? null},
    },
    problems,
  }
}

/**
 * Whether an API instance belongs to the Service: its name is the Service's (`loadBalancerName`), or its
 * `consumer_meta` names the Service's UID (the fallback for an API that names instances itself).
 */
export function ownsInstance(instance: {name?: string | null; consumer_meta?: unknown}, uid: string): boolean {
  if (!uid) return false
  if (instance.name === loadBalancerName(uid)) return true
  const meta = instance.consumer_meta
  return typeof meta === 'object' && meta !== null && (meta as {uid?: unknown}).uid === uid
}

/** Whether the API instance already forwards as desired (ports and config; other fields are the API's). */
export interface CurrentLoadBalancer {
  ports?: ReadonlyArray<{port: number; name?: string | null; protocol?: string | null; target_port?: number | null}> | null
  config?: string | null
}

export function loadBalancerUpToDate(current: CurrentLoadBalancer, desired: DesiredLoadBalancer): boolean {
  const ports = (current.ports ?? []).map((p) => ({port: p.port, ...(p.name ? {name: p.name} : {}), protocol: p.protocol ?? 'tcp', target_port: p.target_port}))
  return JSON.stringify(ports) === JSON.stringify(desired.ports) && (current.config ?? '') === desired.config
}

/** `status.loadBalancer` for a known IP (the apiserver fills in ipMode VIP). */
export function ingressStatus(ip: string | undefined): {ingress?: Array<{ip: string}>} {
  return ip ? {ingress: [{ip}]} : {}
}

/** Whether the Service's status already shows exactly this ingress. */
export function ingressUpToDate(service: LbService, ip: string | undefined): boolean {
  const current = (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? entry.hostname ?? '')
  return JSON.stringify(current) === JSON.stringify(ip ? [ip] : [])
}
