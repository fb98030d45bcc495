/** What Ingress and HTTPRoute discovery share: the source reference, the gates and the Endpoint spec. */
import {annotations} from '../../conventions.js'
import {namespaceInScope} from '../../discovery/namespace-scope.js'
import {readMonitorChoice, type HostOverrides, type SourceCheckSettings} from './endpoint.annotations.js'
import {endpointName} from './endpoint.hosts.js'
import type {
  DesiredEndpoint,
  EndpointDiscoverySettings,
  ObjectMetaLike,
  SourceRef,
  SourceResult,
} from './endpoint.types.js'
import {discoveryProblemReasons} from './endpoint.types.js'
import type {DiscoveryProblem, TimestampLike} from '../../discovery/types.js'

/** The API server writes an empty namespace as "default"; plain objects without one are treated the same way. */
const DEFAULT_K8S_NAMESPACE = 'default'

function timestamp(value: TimestampLike | undefined): string | undefined {
  if (value === undefined || value === null) return undefined
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString().replace(/\.\d{3}Z$/, 'Z')
  return value
}

export function sourceRef(kind: SourceRef['kind'], meta: ObjectMetaLike | undefined): SourceRef {
  const ref: SourceRef = {kind, name: meta?.name ?? '', namespace: meta?.namespace || DEFAULT_K8S_NAMESPACE}
  if (meta?.uid) ref.uid = meta.uid
  const created = timestamp(meta?.creationTimestamp)
  if (created) ref.creationTimestamp = created
  return ref
}

export function skipped(source: SourceRef, skipReason: string, problems: DiscoveryProblem[] = []): SourceResult {
  return {source, monitored: false, skipReason, endpoints: [], problems, deprecatedLabelPresent: false}
}

/**
 * The gates every source passes before its hosts are looked at: discovery enabled, not being deleted, namespace
 * watched. Returns the skip result, or undefined when the source is in scope.
 */
export function scopeGate(source: SourceRef, meta: ObjectMetaLike | undefined, settings: EndpointDiscoverySettings): SourceResult | undefined {
  if (!settings.enabled) return skipped(source, 'endpoint discovery is disabled (endpoint_discovery.enabled: false)')
  // A source being deleted claims no host: its Endpoints go with it, and another source may take the host over.
  if (meta?.deletionTimestamp) return skipped(source, `the ${source.kind} is being deleted`)
  if (!namespaceInScope(source.namespace, settings)) {
    return skipped(source, `namespace "${source.namespace}" is not watched (endpoint_discovery.watch_namespaces / ignore_namespaces)`)
  }
  return undefined
}

/**
 * The monitor gate (mode + polycrate_endpoint_monitor). An invalid monitor value is reported even when the source ends
 * up not monitored: somebody clearly meant to say something. Returns the skip result or the problems so far.
 */
export function monitorGate(
  source: SourceRef,
  meta: ObjectMetaLike | undefined,
  settings: EndpointDiscoverySettings,
): {skip: SourceResult} | {problems: DiscoveryProblem[]} {
  const monitor = readMonitorChoice(meta?.annotations, settings.mode)
  if (monitor.choice === 'opt-out') {
    return {skip: skipped(source, `the ${source.kind} opted out (${monitor.via ?? `${annotations.endpointMonitor}: "false"`})`, monitor.problems)}
  }
  if (settings.mode === 'annotation' && monitor.choice !== 'opt-in') {
    return {skip: skipped(source, `endpoint_discovery.mode is annotation and the ${source.kind} does not have ${annotations.endpointMonitor}: "true"`, monitor.problems)}
  }
  return {problems: monitor.problems}
}

/** Effective check of one host: the host_config entry, else the source-wide value (already defaulted). */
export interface HostCheck {
  path: string
  tls: boolean
  port: number
  timeout: number
  interval: number
  expectedStatusCodes: number[]
}

export function hostCheck(
  base: SourceCheckSettings,
  override: HostOverrides | undefined,
  transport: {path: string; tls: boolean; port: (tls: boolean) => number},
): HostCheck {
  const tls = override?.tls ?? base.tls ?? transport.tls
  return {
    path: override?.path ?? base.path ?? transport.path,
    tls,
    port: override?.port ?? base.port ?? transport.port(tls),
    timeout: override?.timeout ?? base.timeout,
    interval: override?.interval ?? base.interval,
    expectedStatusCodes: [...(override?.expectedStatusCodes ?? base.expectedStatusCodes)],
  }
}

/** The Endpoint CR for one host; exactly the fields of EndpointSpec, optional ones only when set. */
export function desiredEndpoint(source: SourceRef, host: string, check: HostCheck, base: SourceCheckSettings): DesiredEndpoint {
  const spec: DesiredEndpoint['spec'] = {
    displayName: host,
    remoteAddress: host,
    remotePort: check.port,
    kind: 'http',
    tls: check.tls,
    path: check.path,
    timeout: check.timeout,
    interval: check.interval,
    expectedStatusCodes: check.expectedStatusCodes,
  }
  if (base.expectedBody !== undefined) spec.expectedBody = base.expectedBody
  if (base.k8sAppName !== undefined) spec.k8sAppName = base.k8sAppName
  if (base.byoa) spec.byoa = true
  spec.source = {kind: source.kind, name: source.name, namespace: source.namespace}
  return {name: endpointName(host), namespace: source.namespace, host, spec, source}
}

export function monitoredResult(
  source: SourceRef,
  endpoints: DesiredEndpoint[],
  problems: DiscoveryProblem[],
  deprecatedLabelPresent: boolean,
  emptyReason: string,
): SourceResult {
  const result: SourceResult = {source, monitored: true, endpoints, problems, deprecatedLabelPresent}
  if (endpoints.length === 0) {
    result.skipReason = emptyReason
    // Without a Warning that explains it, a monitored source that yields nothing would pass in silence.
    if (problems.length === 0) {
      result.problems = [{
        type: 'Normal',
        reason: discoveryProblemReasons.nothingToMonitor,
        message: `${source.kind} ${source.namespace}/${source.name} is monitored, but there is nothing to monitor: ${emptyReason}.`,
      }]
    }
  }
  return result
}
