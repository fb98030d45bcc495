/**
 * Endpoint discovery: Ingress (and HTTPRoute, once the Gateway API CRDs exist) → Endpoint CRs, one per host.
 *
 * The key is a namespace: hosts are claimed across all sources of a namespace (HTTPRoute wins over Ingress, else
 * the oldest source), so the desired set of Endpoint CRs of a namespace is computed from all its sources at once
 * (a pure function), then diffed with the discovered Endpoint CRs there: apply what differs, delete what is no
 * longer wanted. Sources carry a finalizer while they have endpoints; on deletion the finalizer is removed only
 * once their Endpoint CRs are gone (the Endpoint sync's own finalizer deletes the API objects first).
 * The periodic stale sweep is a requeue of every namespace that has discovered Endpoint CRs.
 */
import {isDeepStrictEqual} from 'node:util'
import {endpointCrd, type EndpointSpec, type EndpointStatus} from '../../crds/endpoint.js'
import {API_VERSION, type CustomObject} from '../../crds/define.js'
import {KubeApiError, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {EventRecorder} from '../../kube/events.js'
import {annotations, deprecatedLabels, finalizers, labels, OPERATOR_NAME} from '../conventions.js'
import type {Feature} from '../features.js'
import {objectKey} from '../runtime/cache.js'
import {forEachLimit} from '../runtime/concurrency.js'
import {specMetadataOrDeletionChanged} from '../runtime/predicates.js'
import {Controller, type ReconcileContext} from '../runtime/controller.js'
import type {Informer} from '../runtime/informer.js'
import {
  endpointsForHTTPRoute,
  endpointsForIngress,
  resolveHostClaims,
  type DesiredEndpoint,
  type SourceResult,
} from './endpoints/index.js'

/** Writes one namespace's reconcile makes at once (a namespace may hold thousands of Ingresses). */
const WRITE_CONCURRENCY = 8

export type EndpointObject = CustomObject<EndpointSpec, EndpointStatus>

export const gatewayApiCrds = ['httproutes.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io'] as const

export const resources = {
  ingresses: {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses'},
  httpRoutes: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes'},
  gateways: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways'},
  gatewayClasses: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses'},
  endpoints: {group: 'polycrate.io', version: 'v1alpha1', plural: endpointCrd.plural},
} satisfies Record<string, ResourceRef>

interface SourceObject extends KubeObject {
  metadata: NonNullable<KubeObject['metadata']> & {deletionTimestamp?: string; finalizers?: string[]; creationTimestamp?: string}
  spec?: unknown
}

const finalizerOf = (kind: 'Ingress' | 'HTTPRoute') => (kind === 'Ingress' ? finalizers.ingressDiscovery : finalizers.httpRouteDiscovery)
const sourceLabelOf = (kind: 'Ingress' | 'HTTPRoute') => (kind === 'Ingress' ? labels.endpointSourceIngress : labels.endpointSourceHTTPRoute)

/** The labels and spec a discovered Endpoint CR must have (pure). */
export function endpointObjectFor(desired: DesiredEndpoint): {apiVersion: string; kind: string; metadata: {name: string; namespace: string; labels: Record<string, string>; ownerReferences?: unknown[]}; spec: EndpointSpec} {
  const {source} = desired
  return {
    apiVersion: API_VERSION,
    kind: endpointCrd.kind,
    metadata: {
      name: desired.name,
      namespace: desired.namespace,
      labels: {[labels.discovered]: 'true', [sourceLabelOf(source.kind)]: source.name, [labels.managedBy]: 'operator'},
      ...(source.uid
        ? {ownerReferences: [{
          apiVersion: source.kind === 'Ingress' ? 'networking.k8s.io/v1' : 'gateway.networking.k8s.io/v1',
          kind: source.kind,
          name: source.name,
          uid: source.uid,
        }]}
        : {}),
    },
    spec: desired.spec,
  }
}

/** Whether the cached CR already has what `endpointObjectFor` would apply (then nothing is written). */
export function upToDate(current: EndpointObject | undefined, wanted: ReturnType<typeof endpointObjectFor>): boolean {
  if (!current) return false
  const currentLabels = current.metadata.labels ?? {}
  const labelsOk = Object.entries(wanted.metadata.labels).every(([k, v]) => currentLabels[k] === v) &&
    !(wanted.metadata.labels[labels.endpointSourceIngress] === undefined && currentLabels[labels.endpointSourceIngress] !== undefined) &&
    !(wanted.metadata.labels[labels.endpointSourceHTTPRoute] === undefined && currentLabels[labels.endpointSourceHTTPRoute] !== undefined)
  const ownersOk = isDeepStrictEqual(
    (current.metadata.ownerReferences ?? []).map((o) => o.uid),
    ((wanted.metadata.ownerReferences ?? []) as Array<{uid: string}>).map((o) => o.uid),
  )
  return labelsOk && ownersOk && isDeepStrictEqual(JSON.parse(JSON.stringify(current.spec)), JSON.parse(JSON.stringify(wanted.spec)))
}

export const endpointDiscoveryFeature: Feature = {
  name: 'endpoint-discovery',
  enabled: (config) => config.endpoint_discovery.enabled,
  settings: (config, isEstablished) => ({...config.endpoint_discovery, gatewayApi: gatewayApiCrds.every(isEstablished)}),
  start(manager, config, isEstablished) {
    const settings = config.endpoint_discovery
    const gatewayApi = gatewayApiCrds.every(isEstablished)
    const logger = manager.logger.child({feature: 'endpoint-discovery'})
    const client = manager.client
    const recorder = new EventRecorder({client, component: OPERATOR_NAME, onError: (error) => logger.debug('event not recorded', {error: (error as Error).message})})

    const ingresses = manager.informer<SourceObject>({resource: resources.ingresses, kind: 'Ingress'})
    const endpoints = manager.informer<EndpointObject>({resource: resources.endpoints, kind: endpointCrd.kind, labelSelector: `${labels.discovered}=true`})
    const httpRoutes = gatewayApi ? manager.informer<SourceObject>({resource: resources.httpRoutes, kind: 'HTTPRoute'}) : undefined
    const gateways = gatewayApi ? manager.informer<SourceObject>({resource: resources.gateways, kind: 'Gateway'}) : undefined
    const informers: Informer<never>[] = [ingresses, endpoints, ...(httpRoutes ? [httpRoutes] : []), ...(gateways ? [gateways] : [])] as unknown as Informer<never>[]
    const reportedProblems = new Map<string, string>()
    /** What this process last applied per Endpoint CR, and the cached resourceVersion it replaced. */
    const applied = new Map<string, {object: string; wanted: ReturnType<typeof endpointObjectFor>; before: string | undefined}>()

    const namespaceOf = (object: KubeObject) => [object.metadata?.namespace ?? '']
    const routesUsing = (gateway: KubeObject) => {
      const key = objectKey(gateway)
      return (httpRoutes?.cache.list() ?? [])
        .filter((route) => ((route.spec as {parentRefs?: Array<{name: string; namespace?: string}>})?.parentRefs ?? [])
          .some((ref) => `${ref.namespace ?? route.metadata.namespace}/${ref.name}` === key))
        .map((route) => route.metadata.namespace ?? '')
    }

    const sourcesIn = (namespace: string): SourceObject[] => [
      ...ingresses.cache.listNamespace(namespace),
      ...(httpRoutes?.cache.listNamespace(namespace) ?? []),
    ]

    const resultFor = (source: SourceObject): SourceResult => {
      if (source.kind === 'HTTPRoute') {
        const gatewayMap = new Map((gateways?.cache.list() ?? []).map((g) => [objectKey(g), g]))
        return endpointsForHTTPRoute(source as never, gatewayMap as never, (gateway) => (gateway as {spec?: {gatewayClassName?: string}}).spec?.gatewayClassName, settings)
      }
      return endpointsForIngress(source as never, settings)
    }

    const reconcile = async ({key: namespace, logger: log, signal}: ReconcileContext) => {
      const sources = sourcesIn(namespace)
      const live = sources.filter((s) => !s.metadata.deletionTimestamp)
      const results = live.map(resultFor)
      const {endpoints: desired, conflicts} = resolveHostClaims(results)

      // Problems → Warning events on the source, once per change of its problem set.
      for (const result of results) {
        const problems = [...result.problems, ...conflicts.filter((c) => c.loser.name === result.source.name && c.loser.kind === result.source.kind).map((c) => c.problem)]
        const sourceKey = `${result.source.kind}/${namespace}/${result.source.name}`
        const fingerprint = JSON.stringify(problems)
        if ((reportedProblems.get(sourceKey) ?? '[]') === fingerprint) continue
        reportedProblems.set(sourceKey, fingerprint)
        const object = sources.find((s) => s.kind === result.source.kind && s.metadata.name === result.source.name)
        for (const problem of problems) if (object) await recorder.record(object, 'Warning', problem.reason, problem.message)
      }

      const current = new Map(endpoints.cache.listNamespace(namespace).map((e) => [e.metadata.name, e]))

      const owners = new Set([...current.values()].flatMap((e) => (['Ingress', 'HTTPRoute'] as const)
        .filter((kind) => e.metadata.labels?.[sourceLabelOf(kind)] !== undefined)
        .map((kind) => `${kind}/${e.metadata.labels![sourceLabelOf(kind)]}`)))

      // Finalizers (before any Endpoint CR exists for a source) and the deprecated label on the sources.
      let waitingForCleanup = false
      await forEachLimit(sources, WRITE_CONCURRENCY, async (source) => {
        const kind = source.kind === 'HTTPRoute' ? 'HTTPRoute' : 'Ingress'
        const finalizer = finalizerOf(kind)
        const has = source.metadata.finalizers?.includes(finalizer) ?? false
        const result = results.find((r) => r.source.kind === kind && r.source.name === source.metadata.name)
        const ownsEndpoints = owners.has(`${kind}/${source.metadata.name}`)
        const wantFinalizer = !source.metadata.deletionTimestamp && (result?.endpoints.length ?? 0) > 0
        const ref = {...(kind === 'Ingress' ? resources.ingresses : resources.httpRoutes), namespace, name: source.metadata.name!}
        if (wantFinalizer && !has) {
          await client.mergePatch(ref, {metadata: {finalizers: [...(source.metadata.finalizers ?? []), finalizer], resourceVersion: source.metadata.resourceVersion}})
        } else if (!wantFinalizer && has && !ownsEndpoints) {
          await client.mergePatch(ref, {metadata: {finalizers: (source.metadata.finalizers ?? []).filter((f) => f !== finalizer), resourceVersion: source.metadata.resourceVersion}})
          log.info('source released', {source: `${kind}/${source.metadata.name}`})
        } else if (!wantFinalizer && has) {
          waitingForCleanup = true // its Endpoint CRs are deleted below; release it on a later pass
        }
        const legacyApp = source.metadata.labels?.[deprecatedLabels.k8sAppName]
        if (legacyApp !== undefined) {
          // Migrate, do not lose: the label's value moves to the annotation unless that is set already.
          const annotationsPatch = source.metadata.annotations?.[annotations.k8sAppName] === undefined ? {[annotations.k8sAppName]: legacyApp} : {}
          await client.mergePatch(ref, {metadata: {labels: {[deprecatedLabels.k8sAppName]: null}, annotations: annotationsPatch}})
          log.info('moved the deprecated label to the annotation', {source: `${kind}/${source.metadata.name}`, label: deprecatedLabels.k8sAppName})
        }
      })

      // Endpoint CRs: apply what differs, delete what is not wanted any more.
      const changed = desired.filter((wanted) => {
        const cached = current.get(wanted.name)
        const object = endpointObjectFor(wanted)
        if (upToDate(cached, object)) return false
        // Applied by us already, and the cache still shows the version from before that apply: it is lagging.
        const memo = applied.get(`${namespace}/${wanted.name}`)
        return !(memo && memo.object === JSON.stringify(object) && memo.before === cached?.metadata.resourceVersion)
      })
      await forEachLimit(changed, WRITE_CONCURRENCY, async (wanted) => {
        if (signal.aborted) return
        const object = endpointObjectFor(wanted)
        await client.apply({...resources.endpoints, namespace, name: wanted.name}, object)
        applied.set(`${namespace}/${wanted.name}`, {object: JSON.stringify(object), wanted: object, before: current.get(wanted.name)?.metadata.resourceVersion})
        log.info('endpoint applied', {endpoint: wanted.name, host: wanted.host, source: `${wanted.source.kind}/${wanted.source.name}`})
      })
      const wantedNames = new Set(desired.map((d) => d.name))
      const unwanted = [...current.values()].filter((e) => !wantedNames.has(e.metadata.name) && !e.metadata.deletionTimestamp)
      await forEachLimit(unwanted, WRITE_CONCURRENCY, async (endpoint) => {
        try {
          applied.delete(`${namespace}/${endpoint.metadata.name}`)
          await client.delete({...resources.endpoints, namespace, name: endpoint.metadata.name})
          log.info('endpoint deleted: its source no longer claims the host', {endpoint: endpoint.metadata.name})
        } catch (error) {
          if (!(error instanceof KubeApiError && error.status === 404)) throw error
        }
      })
      return waitingForCleanup ? {requeueAfterMs: 1000} : undefined
    }

    const controller = new Controller({
      name: 'endpoint-discovery',
      reconcile,
      maxConcurrentReconciles: manager.maxConcurrentReconciles,
      // The stale sweep: every namespace with a source or a discovered Endpoint CR is reconciled every period.
      resyncPeriodMs: settings.stale_cleanup_minutes * 60_000,
      logger: manager.logger,
      metrics: manager.metrics,
      watches: [
        // Our own applies come back as events: they need no new pass. Status and finalizer writes of the sync do
        // not matter here; spec or label edits by someone else, and deletions, do.
        {
          informer: endpoints,
          toKeys: (endpoint: EndpointObject) => {
            const memo = applied.get(objectKey(endpoint))
            return memo && !endpoint.metadata.deletionTimestamp && upToDate(endpoint, memo.wanted) ? [] : namespaceOf(endpoint)
          },
          onUpdate: specMetadataOrDeletionChanged,
        },
        {informer: ingresses, toKeys: namespaceOf},
        ...(httpRoutes ? [{informer: httpRoutes, toKeys: namespaceOf}] : []),
        ...(gateways ? [{informer: gateways, toKeys: routesUsing}] : []),
      ],
    })
    // A deleted Endpoint CR is forgotten and its namespace reconciled (it may have to come back).
    const forgetApplied = endpoints.addHandler({
      onDelete: (endpoint) => {
        applied.delete(objectKey(endpoint))
        for (const key of namespaceOf(endpoint)) controller.enqueue(key)
      },
    })
    manager.addController(controller)
    return {
      async stop() {
        forgetApplied()
        await manager.removeController(controller)
        await Promise.all(informers.map((informer) => manager.releaseInformer(informer)))
      },
    }
  },
}
