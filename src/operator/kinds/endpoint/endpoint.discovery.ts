/**
 * Endpoint discovery, `EndpointDiscoveryReconciler`: Ingress and, once the Gateway API CRDs exist, HTTPRoute hosts
 * → Endpoint CRs, one per host, as one declaration on the generic discovery engine (discovery/engine.ts). The operator reference's
 * `HTTPRouteDiscoveryReconciler` is this controller's HTTPRoute sources (the function of that name below), not a
 * controller of its own: host claims are settled across both source kinds, so they are one controller.
 *
 * The group is one source (`Ingress/<namespace>/<name>`): a change to one Ingress recomputes that Ingress, not its
 * namespace. Hosts are claimed across the sources of a namespace (HTTPRoute wins over Ingress, else the oldest
 * source); only sources sharing a host slot (`HOST_SLOT_INDEX`) can compete, so a source's claims are settled among
 * those (pure, see `desiredEndpoints`), and a change reconciles the sources it competes with too. When a host
 * changes hands its Endpoint CR moves from one group to the other: the loser leaves it alone (`endpointClaimedBy`)
 * and the winner's apply takes it over, so the CR (and its API endpoint) is never deleted and recreated. Sources
 * carry a finalizer while they have endpoints; a Gateway change reconciles the routes attached to it.
 */
import {endpointCrd, type EndpointSpec, type EndpointStatus} from '../../../crds/endpoint.js'
import type {CustomObject} from '../../../crds/define.js'
import type {KubeObject} from '../../../kube/client.js'
import {gatewayApiCrds, resources} from '../../../kube/resources.js'
import {annotations, deprecatedLabels, finalizers, labels, labelValue} from '../../conventions.js'
import {objectKey} from '../../runtime/cache.js'
import {defineDiscovery, type DiscoveryDeclaration, type DiscoverySource, type SourceCaches} from '../../discovery/engine.js'
import {
  endpointName,
  endpointsForHTTPRoute,
  endpointsForIngress,
  rawHostsOf,
  resolveHostClaims,
  sameSource,
  type DesiredEndpoint,
  type EndpointDiscoverySettings,
  type SourceRef,
  type SourceResult,
} from './endpoint.sources.js'
import type {DesiredObject, DesiredState, ObjectRef} from '../../discovery/plan.js'

export type EndpointObject = CustomObject<EndpointSpec, EndpointStatus>

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
    // The source's full name is in spec.source; the label only has to fit (63 characters, see labelValue).
    labels: {[labels.discovered]: 'true', [sourceLabelOf(source.kind)]: labelValue(source.name), [labels.managedBy]: 'operator'},
    ...(source.uid ? {ownerReferences: [{apiVersion: apiVersions[source.kind], kind: source.kind, name: source.name, uid: source.uid}]} : {}),
    spec: desired.spec,
    source: toRef(source),
  }
}

/** The discovery group of a source: `Ingress/<namespace>/<name>` or `HTTPRoute/<namespace>/<name>`. */
export function sourceGroup(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`
}

const sourceIds = {Ingress: 'ingress', HTTPRoute: 'httproute'} as const
type SourceKind = keyof typeof sourceIds
const isSourceKind = (kind: string): kind is SourceKind => Object.hasOwn(sourceIds, kind)
/** The group of a cached source object. */
const groupOfObject = (kind: string, object: KubeObject) => sourceGroup(kind, object.metadata?.namespace ?? '', object.metadata?.name ?? '')

/**
 * Cache index of Ingresses and HTTPRoutes by host slot: `<namespace>/<endpoint name of the host>`. Only sources
 * that share a slot can compete for an Endpoint CR (the same host, or two hosts with the same CR name), so the
 * claims of one source are settled among the sources of its slots, not among every source of the namespace.
 */
export const HOST_SLOT_INDEX = 'endpoint-host-slot'

const slotOf = (namespace: string, host: string) => `${namespace}/${endpointName(host.trim().toLowerCase())}`

function hostSlots(kind: SourceKind, object: KubeObject): string[] {
  const namespace = object.metadata?.namespace ?? ''
  return [...new Set(rawHostsOf(kind, object).flatMap((host) => (host && host.trim() !== '' ? [slotOf(namespace, host)] : [])))]
}

interface Claimant {
  kind: SourceKind
  object: KubeObject
}

const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp)

/** The sources that claim a host in one of these slots (each once), being deleted or not. */
function claimantsOf(slots: Iterable<string>, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): Claimant[] {
  const found = new Map<string, Claimant>()
  const kinds: SourceKind[] = settings.gatewayApi ? ['Ingress', 'HTTPRoute'] : ['Ingress']
  for (const slot of slots) {
    for (const kind of kinds) {
      for (const object of caches.byIndex(sourceIds[kind], HOST_SLOT_INDEX, slot)) {
        found.set(groupOfObject(kind, object), {kind, object})
      }
    }
  }
  return [...found.values()]
}

function resultOf({kind, object}: Claimant, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): SourceResult {
  if (kind === 'Ingress') return endpointsForIngress(object as never, settings)
  const gateways = {get: (key: string) => caches.get('gateway', key) as never}
  return endpointsForHTTPRoute(object as never, gateways, (gateway) => gateway.spec?.gatewayClassName, settings)
}

/** Host claims among the sources that compete with these (being deleted, a source claims nothing). */
function settleClaims(slots: Iterable<string>, first: SourceResult[], caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings) {
  const taken = new Set(first.map((result) => sourceGroup(result.source.kind, result.source.namespace, result.source.name)))
  const others = claimantsOf(slots, caches, settings)
    .filter(({kind, object}) => !deleting(object) && !taken.has(groupOfObject(kind, object)))
    .map((claimant) => resultOf(claimant, caches, settings))
  return resolveHostClaims([...first, ...others])
}

const empty = (): DesiredState => ({objects: [], problems: [], sources: []})

/**
 * The desired Endpoint CRs of one source (group `Kind/namespace/name`), its problems and whether it is managed
 * (pure). The same as settling the claims of the whole namespace and keeping this source's share, at the cost of
 * the sources it competes with.
 */
export function desiredEndpoints(group: string, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): DesiredState {
  const [kind = '', namespace = '', ...rest] = group.split('/')
  const name = rest.join('/')
  if (!isSourceKind(kind) || (kind === 'HTTPRoute' && !settings.gatewayApi)) return empty()
  const object = caches.get(sourceIds[kind], `${namespace}/${name}`)
  // Gone: its CRs are the plan's business (deleted, or orphaned until the stale threshold).
  if (!object) return empty()
  const ref: ObjectRef = {kind, apiVersion: apiVersions[kind], namespace, name, uid: object.metadata?.uid}
  if (deleting(object)) return {objects: [], problems: [], sources: [{ref, managed: false}]}

  const result = resultOf({kind, object}, caches, settings)
  const slots = new Set(result.endpoints.map((endpoint) => slotOf(namespace, endpoint.host)))
  const {endpoints, conflicts} = settleClaims(slots, [result], caches, settings)
  const legacyApp = object.metadata?.labels?.[deprecatedLabels.k8sAppName]
  return {
    objects: endpoints.filter((endpoint) => sameSource(endpoint.source, result.source)).map(endpointObjectFor),
    problems: [
      ...result.problems.map((problem) => ({source: toRef(result.source), ...problem})),
      ...conflicts.filter((conflict) => sameSource(conflict.loser, result.source)).map((conflict) => ({source: toRef(conflict.loser), ...conflict.problem})),
    ],
    sources: [{
      ref,
      managed: result.monitored,
      // Migrate, do not lose: the deprecated label's value moves to the annotation unless that is set already.
      ...(result.deprecatedLabelPresent && legacyApp !== undefined
        ? {migration: {
          patch: {metadata: {
            labels: {[deprecatedLabels.k8sAppName]: null},
            // Blank counts as unset, as annotations are read: the label's value then moves into it.
            annotations: (object.metadata?.annotations?.[annotations.k8sAppName] ?? '').trim() === '' ? {[annotations.k8sAppName]: legacyApp} : {} as Record<string, string>,
          }},
          description: `move the deprecated label ${deprecatedLabels.k8sAppName} into the annotation ${annotations.k8sAppName}`,
        }}
        : {}),
    }],
  }
}

/** The group of the source that wins an Endpoint CR's host and name now (pure); undefined when none does. */
export function endpointClaimedBy(object: CustomObject<unknown, unknown>, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): string | undefined {
  const host = (object.spec as EndpointSpec | undefined)?.remoteAddress
  const namespace = object.metadata.namespace ?? ''
  if (!host) return undefined
  const winner = settleClaims([slotOf(namespace, host)], [], caches, settings).endpoints
    .find((endpoint) => endpoint.name === object.metadata.name && endpoint.namespace === namespace)
  return winner ? sourceGroup(winner.source.kind, winner.source.namespace, winner.source.name) : undefined
}

/** The groups a change of a source touches: its own and those of the sources it competes with for a host. */
function groupsOfSource(kind: SourceKind) {
  return (object: KubeObject, caches: SourceCaches, settings: EndpointDiscoveryFeatureSettings): string[] => {
    const competing = claimantsOf(hostSlots(kind, object), caches, settings).map((claimant) => groupOfObject(claimant.kind, claimant.object))
    return [...new Set([groupOfObject(kind, object), ...competing])]
  }
}

/** The HTTPRoutes attached to a Gateway (a Gateway change re-evaluates them and their competitors). */
function routesUsing(gateway: KubeObject, caches: SourceCaches): KubeObject[] {
  const key = objectKey(gateway)
  return caches.list('httproute')
    .filter((route) => ((route as {spec?: {parentRefs?: Array<{name: string; namespace?: string}>}}).spec?.parentRefs ?? [])
      .some((ref) => `${ref.namespace ?? route.metadata?.namespace}/${ref.name}` === key))
}

/**
 * The seeds' `HTTPRouteDiscoveryReconciler`: the HTTPRoute sources (and their parent Gateways) of endpoint discovery,
 * watched once the Gateway API CRDs are established. Their host claims are settled with the Ingresses' (HTTPRoute
 * wins), so they run inside `EndpointDiscoveryReconciler`, not as a controller of their own.
 */
export function HTTPRouteDiscoveryReconciler(settings: EndpointDiscoveryFeatureSettings): DiscoverySource[] {
  const routeGroups = groupsOfSource('HTTPRoute')
  return [
    {
      id: 'httproute', kind: 'HTTPRoute', apiVersion: apiVersions.HTTPRoute, request: {resource: resources.httpRoutes, kind: 'HTTPRoute'},
      groupsOf: (object, caches) => routeGroups(object, caches, settings),
      indexes: {[HOST_SLOT_INDEX]: (object) => hostSlots('HTTPRoute', object)},
      finalizer: finalizers.httpRouteDiscovery,
    },
    {
      id: 'gateway', kind: 'Gateway', apiVersion: 'gateway.networking.k8s.io/v1', request: {resource: resources.gateways, kind: 'Gateway'},
      groupsOf: (gateway, caches) => [...new Set(routesUsing(gateway, caches).flatMap((route) => routeGroups(route, caches, settings)))],
      // An Endpoint comes from its Ingress or HTTPRoute (targetSource), never from the Gateway it is served by.
      inputOnly: true,
    },
  ]
}

/** The declaration (exported for tests: sources with their indexes, groups, desired state). */
export const endpointDiscovery: DiscoveryDeclaration<EndpointDiscoveryFeatureSettings> = {
  name: 'endpoint-discovery',
  target: endpointCrd,
  enabled: (config) => config.endpoint_discovery.enabled,
  settings: (config, isEstablished) => ({...config.endpoint_discovery, gatewayApi: gatewayApiCrds.every(isEstablished)}),
  staleCleanupMinutes: (config) => config.endpoint_discovery.stale_cleanup_minutes,
  sources: (settings) => {
    const ingressGroups = groupsOfSource('Ingress')
    return [
      {
        id: 'ingress', kind: 'Ingress', apiVersion: apiVersions.Ingress, request: {resource: resources.ingresses, kind: 'Ingress'},
        groupsOf: (object, caches) => ingressGroups(object, caches, settings),
        indexes: {[HOST_SLOT_INDEX]: (object) => hostSlots('Ingress', object)},
        finalizer: finalizers.ingressDiscovery,
      },
      ...(settings.gatewayApi ? HTTPRouteDiscoveryReconciler(settings) : []),
    ]
  },
  targetGroup: (object) => {
    const source = targetSource(object)
    const namespace = object.metadata.namespace ?? ''
    // Without a source it is its own group: nothing wants it, so it ages as an orphan (or a source takes it over).
    return source ? sourceGroup(source.kind, source.namespace ?? namespace, source.name) : sourceGroup('Endpoint', namespace, object.metadata.name)
  },
  targetSource,
  desired: (group, caches, settings) => desiredEndpoints(group, caches, settings),
  claimedElsewhere: endpointClaimedBy,
  syncFinalizer: finalizers.endpointSync,
}

export const EndpointDiscoveryReconciler = defineDiscovery(endpointDiscovery)

/** The source an Endpoint CR came from: spec.source, else (CRs from before spec.source existed) its source label. */
function targetSource(object: CustomObject<unknown, unknown>): ObjectRef | undefined {
  const source = (object.spec as EndpointSpec | undefined)?.source
  const namespace = object.metadata.namespace
  if (source) return {kind: source.kind, namespace: source.namespace ?? namespace, name: source.name}
  for (const kind of ['HTTPRoute', 'Ingress'] as const) {
    const name = object.metadata.labels?.[sourceLabelOf(kind)]
    if (name !== undefined) return {kind, namespace, name}
  }
  return undefined
}
