/**
 * `polycrate operator explain`: why an Ingress or HTTPRoute gives the Endpoint CRs it gives (pure). Runs the same
 * functions as endpoint discovery (endpointsForIngress / endpointsForHTTPRoute, resolveHostClaims over every source
 * of the namespace) and reports, per host, whether it is monitored and why not, and for each check setting where its
 * value came from: the host's polycrate_endpoint_host_config entry, an annotation (or its deprecated alias), the
 * OperatorConfig, the Gateway listener or HTTPRoute rules, or the built-in default.
 */
import {annotations, deprecatedAnnotations, deprecatedLabels} from '../../conventions.js'
import {DEFAULT_EXPECTED_STATUS_CODES, DEFAULT_PATH, DEFAULT_TIMEOUT_SECONDS, readHostConfig, readMonitorChoice, type HostOverrides} from './endpoint.annotations.js'
import {resolveHostClaims, sameSource} from './endpoint.claims.js'
import {rawHostsOf} from './endpoint.hosts.js'
import {endpointsForHTTPRoute} from './endpoint.httproute.js'
import {endpointsForIngress, ingressClassOf} from './endpoint.ingress.js'
import type {DiscoveryProblem} from '../../discovery/types.js'
import type {
  EndpointDiscoverySettings,
  GatewayLike,
  HTTPRouteLike,
  IngressLike,
  ObjectMetaLike,
  SourceRef,
  SourceResult,
} from './endpoint.types.js'

export interface ExplainedSetting {
  value: string | number | boolean | number[]
  /** Where the value came from, e.g. `annotation polycrate_endpoint_path`, `host_config`, `default`. */
  from: string
}

export interface ExplainedHost {
  host: string
  monitored: boolean
  /** Why not, when not monitored. */
  reason?: string
  /** The Endpoint CR (namespace/name) the host becomes. */
  endpoint?: string
  settings?: Record<string, ExplainedSetting>
}

export interface Explanation {
  source: {kind: SourceRef['kind']; namespace: string; name: string}
  /** In scope and opted in (discovery enabled, namespace, class, mode + monitor annotation). */
  monitored: boolean
  /** Why the source gives no endpoint at all, when it gives none. */
  reason?: string
  /** How the monitor decision was made: the mode and the monitor annotation, as read. */
  decision: {mode: EndpointDiscoverySettings['mode']; monitorAnnotation: string; ingressClass?: string}
  hosts: ExplainedHost[]
  problems: DiscoveryProblem[]
}

export type ExplainTarget =
  | {kind: 'Ingress'; object: IngressLike}
  | {kind: 'HTTPRoute'; object: HTTPRouteLike}

export interface ExplainContext {
  settings: EndpointDiscoverySettings
  /** Every Ingress and HTTPRoute of the namespace (the target included or not): hosts are claimed across them. */
  ingresses: readonly IngressLike[]
  routes: readonly HTTPRouteLike[]
  /** Gateways by namespace/name, for HTTPRoute parents. */
  gateways: ReadonlyMap<string, GatewayLike>
}

const gatewayClassOf = (gateway: GatewayLike) => gateway.spec?.gatewayClassName

/** The key a canonical annotation was read from: itself, or a deprecated alias standing in for it; undefined if unset. */
function annotationKey(all: Readonly<Record<string, string>> | undefined, canonical: string): string | undefined {
  if ((all?.[canonical] ?? '').trim() !== '') return canonical
  return Object.entries(deprecatedAnnotations).find(([alias, target]) => target === canonical && (all?.[alias] ?? '').trim() !== '')?.[0]
}

/** `annotation <key>` (or the deprecated form) when the annotation is set and was not rejected; else undefined. */
function fromAnnotation(meta: ObjectMetaLike | undefined, canonical: string, problems: readonly DiscoveryProblem[]): string | undefined {
  const key = annotationKey(meta?.annotations, canonical)
  if (!key || problems.some((p) => p.message.startsWith(`${key} "`))) return undefined
  return key === canonical ? `annotation ${key}` : `deprecated annotation ${key} (use ${canonical})`
}

function rawHosts(target: ExplainTarget): string[] {
  return [...new Set(rawHostsOf(target.kind, target.object).map((value) => (value ?? '').trim().toLowerCase()))]
}

function resultOf(target: ExplainTarget, context: ExplainContext): SourceResult {
  return target.kind === 'Ingress'
    ? endpointsForIngress(target.object, context.settings)
    : endpointsForHTTPRoute(target.object, context.gateways, gatewayClassOf, context.settings)
}


export function explainEndpoints(target: ExplainTarget, context: ExplainContext): Explanation {
  const meta = target.object.metadata
  const result = resultOf(target, context)
  const {source} = result
  // Claims are settled across every source of the namespace, as the operator does.
  const others = [
    ...context.ingresses.filter((o) => !(target.kind === 'Ingress' && o.metadata?.name === meta?.name)).map((o) => endpointsForIngress(o, context.settings)),
    ...context.routes.filter((o) => !(target.kind === 'HTTPRoute' && o.metadata?.name === meta?.name))
      .map((o) => endpointsForHTTPRoute(o, context.gateways, gatewayClassOf, context.settings)),
  ].filter((other) => other.source.namespace === source.namespace)
  const claims = resolveHostClaims([result, ...others])
  const conflicts = claims.conflicts.filter((c) => sameSource(c.loser, source))
  const problems = [...result.problems, ...conflicts.map((c) => c.problem)]

  const monitor = readMonitorChoice(meta?.annotations, context.settings.mode)
  const decision: Explanation['decision'] = {
    mode: context.settings.mode,
    monitorAnnotation: monitor.via ?? `${annotations.endpointMonitor} not set`,
    ...(target.kind === 'Ingress' ? {ingressClass: ingressClassOf(target.object) ?? '(none)'} : {}),
  }

  const hostConfig = readHostConfig(meta?.annotations, rawHosts(target).filter(Boolean))
  const hosts = rawHosts(target).map((host): ExplainedHost => {
    if (!result.monitored) return {host, monitored: false, reason: result.skipReason}
    const conflict = conflicts.find((c) => c.host === host)
    if (conflict) return {host, monitored: false, reason: `claimed by ${conflict.winner.kind} ${conflict.winner.namespace}/${conflict.winner.name}: ${conflict.problem.message}`}
    const desired = result.endpoints.find((e) => e.host === host)
    if (!desired) {
      const why = result.problems.find((p) => host !== '' && p.message.includes(`"${host}"`)) ?? (host === '' ? result.problems.find((p) => p.reason === 'EmptyHost') : undefined)
      return {host: host || '(no host)', monitored: false, reason: why?.message ?? result.skipReason ?? 'no endpoint for this host'}
    }
    const winner = claims.endpoints.find((e) => e.host === host && sameSource(e.source, source))
    return {host, monitored: true, endpoint: `${source.namespace}/${winner?.name ?? desired.name}`, settings: explainSettings(target, desired.spec, hostConfig.overrides.get(host) ?? {}, result.problems, context.settings)}
  })

  return {
    source: {kind: source.kind, namespace: source.namespace, name: source.name},
    monitored: result.monitored,
    ...(result.endpoints.length === 0 && result.skipReason ? {reason: result.skipReason} : {}),
    decision,
    hosts,
    problems,
  }
}

function explainSettings(
  target: ExplainTarget,
  spec: SourceResult['endpoints'][number]['spec'],
  override: HostOverrides,
  problems: readonly DiscoveryProblem[],
  settings: EndpointDiscoverySettings,
): Record<string, ExplainedSetting> {
  const meta = target.object.metadata
  const ingress = target.kind === 'Ingress'
  const pick = (field: keyof HostOverrides, canonical: string | undefined, fallback: string) =>
    field in override ? `host_config (${annotations.endpointHostConfig})` : (canonical && fromAnnotation(meta, canonical, problems)) || fallback
  const tlsFrom = pick('tls', annotations.endpointTls, ingress ? 'default (TLS on)' : 'Gateway listener')
  const out: Record<string, ExplainedSetting> = {
    path: {value: spec.path ?? DEFAULT_PATH, from: pick('path', annotations.endpointPath, ingress ? `default (${DEFAULT_PATH})` : 'HTTPRoute rules (first PathPrefix match, else "/")')},
    tls: {value: spec.tls ?? true, from: tlsFrom},
    port: {value: spec.remotePort ?? (spec.tls === false ? 80 : 443), from: pick('port', annotations.endpointPort, ingress ? `default (${spec.tls === false ? '80 without' : '443 with'} TLS)` : 'Gateway listener')},
    timeout: {value: spec.timeout ?? DEFAULT_TIMEOUT_SECONDS, from: pick('timeout', annotations.endpointTimeout, `default (${DEFAULT_TIMEOUT_SECONDS} s)`)},
    interval: {value: spec.interval ?? settings.default_check_interval, from: pick('interval', annotations.endpointInterval, 'OperatorConfig endpoint_discovery.default_check_interval')},
    expectedStatusCodes: {
      value: spec.expectedStatusCodes ?? [...DEFAULT_EXPECTED_STATUS_CODES],
      from: pick('expectedStatusCodes', annotations.endpointExpectedStatus, `default (${DEFAULT_EXPECTED_STATUS_CODES.join(',')})`),
    },
  }
  if (spec.expectedBody !== undefined) out.expectedBody = {value: spec.expectedBody, from: `annotation ${annotations.endpointExpectedBody}`}
  if (spec.k8sAppName !== undefined) {
    const viaLabel = (meta?.annotations?.[annotations.k8sAppName] ?? '').trim() === '' && meta?.labels?.[deprecatedLabels.k8sAppName] !== undefined
    out.k8sAppName = {value: spec.k8sAppName, from: viaLabel ? `deprecated label ${deprecatedLabels.k8sAppName} (use ${annotations.k8sAppName})` : `annotation ${annotations.k8sAppName}`}
  }
  if (spec.byoa) out.byoa = {value: true, from: `annotation ${annotations.k8sAppByoa}`}
  return out
}
