/**
 * HTTPRoute (Gateway API) → desired Endpoint CRs (pure).
 *
 * Hosts come from spec.hostnames (none → no Endpoint). Path: polycrate_endpoint_path, else the first PathPrefix match
 * of the rules, else "/". TLS and port come from the parent Gateway listener: parentRefs[].sectionName → that
 * listener, else the first HTTPS listener, else the first HTTP listener (HTTPS/TLS → TLS, HTTP → plain). The same
 * annotations as on an Ingress apply, and an explicit TLS/port (annotation or host_config) overrides the listener's.
 *
 * Decisions where the operator reference is silent:
 * - Only parentRefs of group gateway.networking.k8s.io (the default) and kind Gateway (the default) count; others
 *   (e.g. a Service parent of a mesh route) are ignored. A parentRef without namespace means the route's namespace.
 * - A parentRef `port` narrows the listeners the same way sectionName does (as in the Gateway API). A listener's
 *   `hostname` is not matched against the route's hostnames: the operator reference's selection rule does not mention it, and the
 *   Gateway's own status already reports routes that do not attach.
 * - Several parents: the first one in spec.parentRefs that is found, is in gateway_classes and has a usable
 *   listener decides TLS and port; every other parent that cannot be used (Gateway missing, no such listener) is still
 *   reported as a problem. One Endpoint per host in any case.
 * - gateway_classes (non-empty): a route passes when at least one parent Gateway is of a listed class, or when a parent
 *   Gateway is missing (its class is unknown, and the user should hear that the Gateway is missing). A route whose
 *   parents are all found and all of other classes (or that has no Gateway parent) is out of scope, silently.
 * - If the annotation/host_config changes TLS away from the listener's protocol without giving a port, the listener
 *   port no longer fits: the port is then 443 with TLS, 80 without.
 * - Gateway problems (missing Gateway, missing listener) are only reported for monitored routes.
 */
import {DEFAULT_PATH, problem, readHostConfig, readSourceSettings} from './endpoint.annotations.js'
import {desiredEndpoint, hostCheck, monitorGate, monitoredResult, scopeGate, skipped, sourceRef} from './endpoint.source-gates.js'
import {collectHosts} from './endpoint.hosts.js'
import type {DiscoveryProblem} from '../../discovery/types.js'
import {
  discoveryProblemReasons,
  type EndpointDiscoverySettings,
  type GatewayLike,
  type HTTPRouteLike,
  type ListenerLike,
  type ParentReferenceLike,
  type SourceResult,
} from './endpoint.types.js'

const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'

export interface ListenerTransport {
  gateway: string
  listener: string
  tls: boolean
  port: number
}

interface ParentVerdict {
  ref: string
  found: boolean
  classAllowed: boolean
  transport?: ListenerTransport
  problem?: DiscoveryProblem
}

/** The path of the first PathPrefix match (a match without path, or a path without type, is PathPrefix "/"). */
export function routePath(route: HTTPRouteLike): string {
  for (const rule of route.spec?.rules ?? []) {
    // A rule without matches matches PathPrefix "/" (the Gateway API default).
    if (!rule.matches || rule.matches.length === 0) return DEFAULT_PATH
    for (const match of rule.matches) {
      const type = match.path?.type ?? 'PathPrefix'
      if (type === 'PathPrefix') return match.path?.value || DEFAULT_PATH
    }
  }
  return DEFAULT_PATH
}

function protocolOf(listener: ListenerLike): 'HTTPS' | 'TLS' | 'HTTP' | undefined {
  const protocol = listener.protocol?.toUpperCase()
  return protocol === 'HTTPS' || protocol === 'TLS' || protocol === 'HTTP' ? protocol : undefined
}

function transportOf(gateway: string, listener: ListenerLike, index: number): ListenerTransport {
  const tls = protocolOf(listener) !== 'HTTP'
  return {gateway, listener: listener.name ?? `#${index}`, tls, port: listener.port ?? (tls ? 443 : 80)}
}

/** The listener of `gateway` a parentRef attaches to, as the operator reference defines it. */
export function selectListener(gateway: GatewayLike, gatewayKey: string, parent: ParentReferenceLike): {transport: ListenerTransport} | {problem: DiscoveryProblem} {
  const listeners = gateway.spec?.listeners ?? []
  const names = listeners.map((l) => l.name).filter(Boolean).join(', ') || 'none'
  const notFound = (message: string) => ({problem: problem(discoveryProblemReasons.listenerNotFound, message)})
  if (parent.sectionName) {
    const index = listeners.findIndex((l) => l.name === parent.sectionName)
    const listener = listeners[index]
    if (!listener) {
      return notFound(`spec.parentRefs: Gateway ${gatewayKey} has no listener named "${parent.sectionName}" (its listeners: ${names}); `
        + 'no Endpoints through this Gateway. Fix sectionName or leave it out to use the first HTTPS/HTTP listener.')
    }
    if (!protocolOf(listener)) {
      return notFound(`spec.parentRefs: listener "${parent.sectionName}" of Gateway ${gatewayKey} has protocol ${listener.protocol ?? '(none)'}, `
        + 'not HTTP, HTTPS or TLS; no Endpoints through this Gateway.')
    }
    return {transport: transportOf(gatewayKey, listener, index)}
  }
  const candidates = listeners
    .map((listener, index) => ({listener, index}))
    .filter(({listener}) => parent.port === undefined || listener.port === parent.port)
  const pick = candidates.find(({listener}) => protocolOf(listener) === 'HTTPS')
    ?? candidates.find(({listener}) => protocolOf(listener) === 'HTTP')
  if (!pick) {
    return notFound(`spec.parentRefs: Gateway ${gatewayKey} has no HTTPS or HTTP listener${parent.port === undefined ? '' : ` on port ${parent.port}`} `
      + `(its listeners: ${names}); no Endpoints through this Gateway.`)
  }
  return {transport: transportOf(gatewayKey, pick.listener, pick.index)}
}

function judgeParents(
  route: HTTPRouteLike,
  namespace: string,
  gateways: Pick<ReadonlyMap<string, GatewayLike>, 'get'>,
  gatewayClassOf: (gateway: GatewayLike) => string | undefined,
  classes: readonly string[],
): ParentVerdict[] {
  const verdicts: ParentVerdict[] = []
  for (const parent of route.spec?.parentRefs ?? []) {
    if ((parent.group ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP || (parent.kind ?? 'Gateway') !== 'Gateway') continue
    const key = `${parent.namespace || namespace}/${parent.name}`
    const gateway = gateways.get(key)
    if (!gateway) {
      verdicts.push({ref: key, found: false, classAllowed: true, problem: problem(
        discoveryProblemReasons.gatewayNotFound,
        `spec.parentRefs: the parent Gateway ${key} does not exist (or is not visible to the operator); no Endpoints through it. `
          + 'Check the name and namespace of the parentRef.',
      )})
      continue
    }
    const gatewayClass = gatewayClassOf(gateway)
    const classAllowed = classes.length === 0 || (gatewayClass !== undefined && classes.includes(gatewayClass))
    const listener = selectListener(gateway, key, parent)
    verdicts.push({ref: key, found: true, classAllowed, ...listener})
  }
  return verdicts
}

export function endpointsForHTTPRoute(
  route: HTTPRouteLike,
  gateways: Pick<ReadonlyMap<string /* ns/name */, GatewayLike>, 'get'>,
  gatewayClassOf: (gateway: GatewayLike) => string | undefined,
  settings: EndpointDiscoverySettings,
): SourceResult {
  const meta = route.metadata
  const source = sourceRef('HTTPRoute', meta)
  const outOfScope = scopeGate(source, meta, settings)
  if (outOfScope) return outOfScope

  const parents = judgeParents(route, source.namespace, gateways, gatewayClassOf, settings.gateway_classes)
  if (settings.gateway_classes.length > 0 && !parents.some((p) => p.classAllowed)) {
    const list = settings.gateway_classes.join(', ')
    return skipped(source, parents.length === 0
      ? `the HTTPRoute has no parent Gateway, so no GatewayClass in endpoint_discovery.gateway_classes (${list})`
      : `no parent Gateway of the HTTPRoute is of a GatewayClass in endpoint_discovery.gateway_classes (${list})`)
  }

  const monitor = monitorGate(source, meta, settings)
  if ('skip' in monitor) return monitor.skip

  const base = readSourceSettings(meta, 'HTTPRoute', settings)
  const hosts = collectHosts((route.spec?.hostnames ?? []).map((value, index) => ({value, where: `spec.hostnames[${index}]`})))
  const hostConfig = readHostConfig(meta?.annotations, hosts.all)
  const usable = parents.filter((p) => p.classAllowed)
  const transport = usable.find((p) => p.transport)?.transport
  const parentProblems = usable.flatMap((p) => (p.problem ? [p.problem] : []))
  const problems = [...monitor.problems, ...base.problems, ...hostConfig.problems, ...hosts.problems, ...parentProblems]

  let emptyReason: string
  if (hosts.all.length === 0) emptyReason = 'spec.hostnames is empty: an HTTPRoute without hostnames has no host to check'
  else if (parents.length === 0) emptyReason = 'the HTTPRoute has no parentRef of kind Gateway, so there is no listener to take TLS and port from'
  else if (!transport) emptyReason = 'no parent Gateway of the HTTPRoute could be resolved to an HTTP or HTTPS listener (see the problems)'
  else emptyReason = 'none of the hostnames of the HTTPRoute can be monitored (see the problems)'

  const path = routePath(route)
  const endpoints = transport === undefined ? [] : hosts.hosts.map((host) => desiredEndpoint(
    source,
    host,
    hostCheck(base, hostConfig.overrides.get(host), {
      path,
      tls: transport.tls,
      port: (tls) => (tls === transport.tls ? transport.port : tls ? 443 : 80),
    }),
    base,
  ))
  return monitoredResult(source, endpoints, problems, base.deprecatedLabelPresent, emptyReason)
}
