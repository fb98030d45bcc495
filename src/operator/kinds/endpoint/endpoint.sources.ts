/**
 * Endpoint discovery, the pure part: Ingress / HTTPRoute (+ parent Gateways) → desired Endpoint CRs, problems for
 * Warning events, and the host claims across sources. No I/O, no Kubernetes client, no clock.
 */
export type {
  DesiredEndpoint,
  EndpointDiscoverySettings,
  GatewayLike,
  HTTPRouteLike,
  IngressLike,
  ListenerLike,
  ObjectMetaLike,
  ParentReferenceLike,
  SourceRef,
  SourceResult,
} from './endpoint.types.js'
export {discoveryProblemReasons} from './endpoint.types.js'
export {
  DEFAULT_EXPECTED_STATUS_CODES,
  DEFAULT_PATH,
  DEFAULT_TIMEOUT_SECONDS,
  endpointCheckLimits,
  readHostConfig,
  readMonitorChoice,
  readSourceSettings,
  type HostOverrides,
  type MonitorChoice,
  type SourceCheckSettings,
} from './endpoint.annotations.js'
export {endpointName, endpointNameWithHash, isValidHostName, rawHostsOf} from './endpoint.hosts.js'
export {endpointsForIngress, ingressClassOf} from './endpoint.ingress.js'
export {endpointsForHTTPRoute, routePath, selectListener, type ListenerTransport} from './endpoint.httproute.js'
export {compareClaims, resolveHostClaims, sameSource, type HostConflict} from './endpoint.claims.js'
