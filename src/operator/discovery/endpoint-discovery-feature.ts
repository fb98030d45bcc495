/**
 * Endpoint discovery (`EndpointDiscoveryReconciler`, and `HTTPRouteDiscoveryReconciler` once the Gateway API CRDs
 * exist): Ingress and HTTPRoute hosts → Endpoint CRs, one per host, as a declaration on the generic discovery
 * feature (discovery-feature.ts).
 *
 * The group is a namespace: hosts are claimed across all sources of a namespace (HTTPRoute wins over Ingress, else
 * the oldest source), so the desired Endpoint CRs of a namespace come from all its sources at once (pure, see
 * `desiredEndpoints`). Sources carry a finalizer while they have endpoints; a Gateway change reconciles the
 * namespaces of the routes attached to it.
 */
import {endpointCrd, type EndpointSpec, type EndpointStatus} from '../../crds/endpoint.js'
import type {CustomObject} from '../../crds/define.js'
import type {KubeObject, ResourceRef} from '../../kube/client.js'
import {annotations, deprecatedLabels, finalizers, labels, labelValue} from '../conventions.js'
import {objectKey} from '../runtime/cache.js'
import {defineDiscovery, type SourceCaches} from './discovery-feature.js'
import {
  endpointsForHTTPRoute,
  endpointsForIngress,
  resolveHostClaims,
  type DesiredEndpoint,
  type EndpointDiscoverySettings,
  type SourceRef,
  type SourceResult,
} from './endpoints/index.js'
import type {DesiredObject, DesiredState, ObjectRef, SourceDecision} from './plan.js'

export type EndpointObject = CustomObject<EndpointSpec, EndpointStatus>

export const gatewayApiCrds = ['httproutes.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io'] as const

export const resources = {
  ingresses: {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses'},
  httpRoutes: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes'},
  gateways: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways'},
  endpoints: {group: 'polycrate.io', version: 'v1alpha1', plural: endpointCrd.plural},
} satisfies Record<string, ResourceRef>

const apiVersions = {Ingress: 'networking.k8s.io/v1', HTTPRoute: 'gateway.networking.k8s.io/v1'} as const
const sourceLabelOf = (kind: SourceRef['kind']) => (kind === 'Ingress' ? labels.endpointSourceIngress : labels.endpointSourceHTTPRoute)

export type EndpointDiscoveryFeatureSettings = EndpointDiscoverySettings & {gatewayApi: boolean}

const toRef = (source: SourceRef): ObjectRef => ({kind: source.kind, apiVersion: apiVersions[source.kind], namespace: source.namespace, name: source.name, uid: source.uid})

/** The Endpoint CR a desired endpoint becomes (pure): labels, owner and spec. */
export function endpointObjectFor(desired: DesiredEndpoint): DesiredObject {
  const {source} = desired
  return {
    name: desired.name,
    namespace: desired.namespace,
    // The source's full name is in spec.source; the label only has to fit (SPEC-NOTES "Label values").
    labels: {[labels.discovered]: 'true', [sourceLabelOf(source.kind)]: labelValue(source.name), [labels.managedBy]: 'operator'},
    ...(source.uid ? {ownerReferences: [{apiVersion: apiVersions[source.kind], kind: source.kind, name: source.name, uid: source.uid}]} : {}),
    spec: desired.spec,
    source: toRef(source),
  }
}

/** The desired Endpoint CRs of one namespace, the problems of its sources and what is managed (pure). */
export function desiredEndpoints(namespace: string, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): DesiredState {
  const ingresses = caches.list('ingress', namespace)
  const routes = settings.gatewayApi ? caches.list('httproute', namespace) : []
  const gateways = settings.gatewayApi ? new Map(caches.list('gateway').map((gateway) => [objectKey(gateway), gateway])) : new Map()
  const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp)
  const results: SourceResult[] = [
    ...ingresses.filter((object) => !deleting(object)).map((object) => endpointsForIngress(object as never, settings)),
    ...routes.filter((object) => !deleting(object)).map((object) =>
      endpointsForHTTPRoute(object as never, gateways as never, (gateway) => gateway.spec?.gatewayClassName, settings)),
  ]
  const {endpoints, conflicts} = resolveHostClaims(results)
  const resultOf = new Map(results.map((result) => [`${result.source.kind}/${result.source.name}`, result]))
  const sources: SourceDecision[] = [...ingresses.map((o) => ['Ingress', o] as const), ...routes.map((o) => ['HTTPRoute', o] as const)].map(([kind, object]) => {
    const result = resultOf.get(`${kind}/${object.metadata?.name}`)
    const ref: ObjectRef = {kind, apiVersion: apiVersions[kind], namespace, name: object.metadata?.name ?? '', uid: object.metadata?.uid}
    const legacyApp = object.metadata?.labels?.[deprecatedLabels.k8sAppName]
    return {
      ref,
      managed: result?.monitored ?? false,
      // Migrate, do not lose: the deprecated label's value moves to the annotation unless that is set already.
      ...(result?.deprecatedLabelPresent && legacyApp !== undefined
        ? {migration: {
          patch: {metadata: {
            labels: {[deprecatedLabels.k8sAppName]: null},
            // Blank counts as unset, as annotations are read: the label's value then moves into it.
            annotations: (object.metadata?.annotations?.[annotations.k8sAppName] ?? '').trim() === '' ? {[annotations.k8sAppName]: legacyApp} : {} as Record<string, string>,
          }},
          description: `move the deprecated label ${deprecatedLabels.k8sAppName} into the annotation ${annotations.k8sAppName}`,
        }}
        : {}),
    }
  })
  return {
    objects: endpoints.map(endpointObjectFor),
    problems: [
      ...results.flatMap((result) => result.problems.map((problem) => ({source: toRef(result.source), ...problem}))),
      ...conflicts.map((conflict) => ({source: toRef(conflict.loser), ...conflict.problem})),
    ],
    sources,
  }
}

/** The namespaces of the HTTPRoutes attached to a Gateway (a Gateway change re-evaluates them). */
function namespacesOfRoutesUsing(gateway: KubeObject, caches: SourceCaches): string[] {
  const key = objectKey(gateway)
  return caches.list('httproute')
    .filter((route) => ((route as {spec?: {parentRefs?: Array<{name: string; namespace?: string}>}}).spec?.parentRefs ?? [])
      .some((ref) => `${ref.namespace ?? route.metadata?.namespace}/${ref.name}` === key))
    .map((route) => route.metadata?.namespace ?? '')
}

const namespaceOf = (object: KubeObject) => [object.metadata?.namespace ?? '']

export const EndpointDiscoveryReconciler = defineDiscovery<EndpointDiscoveryFeatureSettings>({
  name: 'endpoint-discovery',
  target: endpointCrd,
  enabled: (config) => config.endpoint_discovery.enabled,
  settings: (config, isEstablished) => ({...config.endpoint_discovery, gatewayApi: gatewayApiCrds.every(isEstablished)}),
  staleCleanupMinutes: (config) => config.endpoint_discovery.stale_cleanup_minutes,
  sources: (settings) => [
    {id: 'ingress', kind: 'Ingress', apiVersion: apiVersions.Ingress, request: {resource: resources.ingresses, kind: 'Ingress'}, groupsOf: namespaceOf, finalizer: finalizers.ingressDiscovery},
    ...(settings.gatewayApi
      ? [
        {id: 'httproute', kind: 'HTTPRoute', apiVersion: apiVersions.HTTPRoute, request: {resource: resources.httpRoutes, kind: 'HTTPRoute'}, groupsOf: namespaceOf, finalizer: finalizers.httpRouteDiscovery},
        {id: 'gateway', kind: 'Gateway', apiVersion: 'gateway.networking.k8s.io/v1', request: {resource: resources.gateways, kind: 'Gateway'}, groupsOf: namespacesOfRoutesUsing},
      ]
      : []),
  ],
  targetGroup: (object) => object.metadata.namespace ?? '',
  targetSource: (object) => {
    const source = (object.spec as EndpointSpec | undefined)?.source
    const namespace = object.metadata.namespace
    if (source) return {kind: source.kind, namespace: source.namespace ?? namespace, name: source.name}
    // CRs from before spec.source existed: the source label.
    for (const kind of ['HTTPRoute', 'Ingress'] as const) {
      const name = object.metadata.labels?.[sourceLabelOf(kind)]
      if (name !== undefined) return {kind, namespace, name}
    }
    return undefined
  },
  desired: (namespace, caches, settings) => desiredEndpoints(namespace, caches, settings),
  syncFinalizer: finalizers.endpointSync,
})
