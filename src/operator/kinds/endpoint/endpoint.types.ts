/**
 * Types of endpoint discovery (Ingress / HTTPRoute → Endpoint CRs). The `*Like` types hold only the fields discovery
 * reads, so plain objects from the API (JSON: timestamps as strings) and the typed objects of @kubernetes/client-node
 * (timestamps as Date) both fit.
 */
import type {EndpointSpec} from '../../../crds/endpoint.js'
import type {OperatorConfigSpec} from '../../../crds/operatorconfig.js'
import type {DiscoveryProblem, TimestampLike} from '../../discovery/types.js'

export type EndpointDiscoverySettings = OperatorConfigSpec['endpoint_discovery']

export interface ObjectMetaLike {
  name?: string
  namespace?: string
  uid?: string
  creationTimestamp?: TimestampLike
  deletionTimestamp?: TimestampLike
  labels?: Readonly<Record<string, string>>
  annotations?: Readonly<Record<string, string>>
}

export interface IngressLike {
  metadata?: ObjectMetaLike
  spec?: {
    ingressClassName?: string
    tls?: ReadonlyArray<{hosts?: readonly string[]}>
    rules?: ReadonlyArray<{host?: string}>
  }
}

export interface ParentReferenceLike {
  group?: string
  kind?: string
  namespace?: string
  name: string
  sectionName?: string
  port?: number
}

export interface HTTPRouteLike {
  metadata?: ObjectMetaLike
  spec?: {
    parentRefs?: readonly ParentReferenceLike[]
    hostnames?: readonly string[]
    rules?: ReadonlyArray<{matches?: ReadonlyArray<{path?: {type?: string; value?: string}}>}>
  }
}

export interface ListenerLike {
  name?: string
  hostname?: string
  port?: number
  protocol?: string
}

export interface GatewayLike {
  metadata?: ObjectMetaLike
  spec?: {
    gatewayClassName?: string
    listeners?: readonly ListenerLike[]
  }
}

export interface SourceRef {
  kind: 'Ingress' | 'HTTPRoute'
  name: string
  namespace: string
  uid?: string
  /** RFC 3339, as the API server writes it. */
  creationTimestamp?: string
}

export interface DesiredEndpoint {
  /** CR name: the host with dots → dashes (a valid DNS-1123 subdomain, ≤ 253 characters). */
  name: string
  namespace: string
  /** The host, lower-cased. */
  host: string
  spec: EndpointSpec
  source: SourceRef
}

export interface SourceResult {
  source: SourceRef
  /** The source is in scope (enabled, namespace, class) and opted in (mode + polycrate_endpoint_monitor). */
  monitored: boolean
  /** Why there are no endpoints (not monitored, no hosts, no usable host, no parent Gateway). */
  skipReason?: string
  endpoints: DesiredEndpoint[]
  problems: DiscoveryProblem[]
  /**
   * The deprecated label k8sapps.polycrate.io/name is on a monitored source: the reconciler removes it (the operator reference says
   * so). Its value is already in `spec.k8sAppName` of every endpoint unless the annotation polycrate_k8sapp_name
   * overrides it; a reconciler that wants to keep the link after removal copies it into that annotation first.
   * Only set for monitored sources, so the operator never writes to objects it does not manage.
   */
  deprecatedLabelPresent: boolean
}

/** The `reason` values of endpoint discovery problems (also used as Kubernetes Event reasons). */
export const discoveryProblemReasons = {
  invalidAnnotation: 'InvalidAnnotation',
  malformedHostConfig: 'MalformedHostConfig',
  unknownHostInHostConfig: 'UnknownHostInHostConfig',
  byoaWithoutK8sApp: 'ByoaWithoutK8sApp',
  emptyHost: 'EmptyHost',
  wildcardHost: 'WildcardHost',
  invalidHost: 'InvalidHost',
  gatewayNotFound: 'GatewayNotFound',
  listenerNotFound: 'ListenerNotFound',
  hostClaimedElsewhere: 'HostClaimedElsewhere',
  nothingToMonitor: 'NothingToMonitor',
} as const
