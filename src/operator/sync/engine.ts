/**
 * The generic sync feature: each CR of a kind → one object in the Polycrate API. A kind is a declaration plus a
 * pure payload function; the generic part owns, for every kind alike:
 *
 * - the finalizer (kube-rs' `finalizer()` Apply/Cleanup): on before the API object can exist (discovered CRs are
 *   created with it already), and on deletion the API object is deleted before it is removed — unless the CR goes
 *   because its CRD is being deleted (read live): then it is released and the API object kept, for adoption later;
 * - the existence check that recreates an object deleted on the API side (self-healing),
 *   adopt-or-create by the kind's natural key (a crash between create and status write never duplicates), and
 *   writes only when the payload hash (`configHash`/`config_hash`) changed;
 * - the status in the kind's style (`statusStyle` of its CRD: `apiID` or `api_id`, …), one write per change;
 * - terminal errors (the API refuses the object as it is: 400, 403) → phase Error, a Warning Event, no retry until
 *   the spec changes; transient ones (network, 5xx, 429) → phase Error and a retry with the queue's backoff;
 * - the inventory check every sync interval: one paged listing of the cluster's API objects instead of a GET per CR;
 *   a CR whose API object is missing is reconciled at once. For a kind with a `naturalKey` the same listing (taken
 *   once on demand, then every interval) answers adopt-or-create's lookup for keys it does not hold
 *   (inventory-keys.ts), so a new object costs one POST instead of a GET and a POST;
 * - API-bound concurrency: the sync's workers are `--max-concurrent-syncs` (the manager's `maxConcurrentSyncs`), not
 *   `--max-concurrent-reconciles`, since a sync mostly waits on the API and the apiserver; the reads of one sync
 *   (links, the existence check) run while its finalizer patch is in flight.
 * Every API and kube call takes the reconcile's AbortSignal (shutdown, lost leadership).
 */
import {
  ApiAuthError,
  ApiContractError,
  ApiError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiValidationError,
  adoptOrCreate,
  type Filters,
  type PolycrateApiClient,
  type Resource,
} from '../../api/index.js'
import {API_VERSION, crdFullName, crdResource, syncStatusFields, type CrdDefinition, type CustomObject, type StatusStyle} from '../../crds/define.js'
import type {Condition} from '../../crds/schema.js'
import type {ApiIdentity, ApiSession} from '../agent/api-session.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {setCondition} from '../config/operator-config.js'
import {conditionTypes} from '../conventions.js'
import type {Feature} from '../runtime/feature.js'
import {READ} from '../permissions.js'
import {ObjectCache} from '../runtime/cache.js'
import {Finalizer} from '../runtime/finalizer.js'
import type {ReconcileContext, ReconcileResult} from '../runtime/controller.js'
import {specMetadataOrDeletionChanged} from '../runtime/predicates.js'
import {KubeApiError} from '../../kube/client.js'
import {configHash} from './hash.js'
import {InventoryKeys} from './inventory-keys.js'

type SyncObject<Spec> = CustomObject<Spec, Record<string, unknown>>
/** The cache of the declaration's `related` CRs (empty without one). */
export type RelatedCache = ObjectCache<CustomObject<Record<string, unknown>, Record<string, unknown>>>
interface ApiObject {
  id: string
  is_deleted?: boolean | null
}

export interface SyncDeclaration<Spec, Body, Api extends ApiObject, Links = undefined> {
  /** Feature and controller name (`host-sync`). */
  name: string
  crd: CrdDefinition
  finalizer: string
  /** What to call the object in messages (`host`, `endpoint`). */
  noun: string
  /** Default: `api_sync.enabled`. */
  enabled?(config: OperatorConfig): boolean
  api(client: PolycrateApiClient): Resource<Api, Body>
  /** The API object needs this cluster's K8sCluster id (k8s_cluster): wait for `local_cluster` to resolve it. */
  requiresCluster?: boolean
  /**
   * CRs of another polycrate.io kind this kind's payload links to by their API id (a Backup → its BackupSchedule):
   * the sync watches them, reads them in `links` (`related`), and a change of one (e.g. it got its API id) resyncs
   * the CRs `toKeys` names — the link never depends on which of the two synced first.
   */
  related?: {
    crd: CrdDefinition
    toKeys(related: CustomObject<Record<string, unknown>, Record<string, unknown>>, primaries: ObjectCache<SyncObject<Spec>>): string[]
    /** Which updates of a related CR matter to the links (e.g. its API id); without it, every update. */
    changed?(old: CustomObject<Record<string, unknown>, Record<string, unknown>>, next: CustomObject<Record<string, unknown>, Record<string, unknown>>): boolean
  }
  /** Lookups the payload needs (e.g. the K8sApp's API id); may call the API, must pass `signal` on. */
  links?(object: SyncObject<Spec>, api: PolycrateApiClient, identity: ApiIdentity, signal: AbortSignal, related: RelatedCache): Promise<Links>
  /** Pure: the request body for this CR. */
  payload(object: SyncObject<Spec>, context: {identity: ApiIdentity; links: Links}): Body
  /** The natural key as list filters, for adopt-or-create. */
  lookup(body: Body, identity: ApiIdentity): Filters
  /** Narrows the lookup's candidates (e.g. same namespace). */
  matches?(candidate: Api, body: Body): boolean
  /** Filters listing every API object of this cluster (the inventory check). */
  inventory(identity: ApiIdentity): Filters
  /**
   * The lookup's natural key, of a request body and of a listed API object — only for a kind whose key the API
   * enforces as unique (a second create gets 409). Adopt-or-create then skips the lookup for a key the inventory
   * listing does not hold: a stale listing costs a 409 and the real lookup, never a duplicate. Without it, every
   * create looks up first.
   */
  naturalKey?: {body(body: Body): string; object(object: Api): string}
  /**
   * Removes the API object when its CR goes (default: DELETE); returns what happened, for the log. K8sApps, which
   * agent tokens may not delete, are marked uninstalled instead.
   */
  remove?(api: PolycrateApiClient, id: string, object: SyncObject<Spec>, signal: AbortSignal): Promise<string>
  /**
   * How long a new CR must have existed before its API object is created (ms since creationTimestamp; default 0).
   * For CRs that discovery may take back at once (a K8sApp claimed by annotation whose name turns out to be claimed
   * in another namespace too), so a short-lived claim leaves nothing in the API.
   */
  createAfterMs?(object: SyncObject<Spec>): number
  /** Status fields of the kind beyond the generic ones (e.g. Endpoint `k8sAppID`). */
  extraStatus?(links: Links): Record<string, unknown>
}

export interface SyncState {
  phase: 'Pending' | 'Synced' | 'Error'
  syncStatus: 'pending' | 'synced' | 'error'
  reason: string
  message: string
}

/**
 * The status patch after a sync attempt (pure): only the fields sync owns, spelled in the kind's style; values it
 * does not know now are kept from `previous`; `lastTransitionTime` moves only when the condition flips.
 */
export function syncStatusPatch(
  style: StatusStyle,
  previous: Record<string, unknown> | undefined,
  generation: number | undefined,
  state: SyncState,
  synced: {apiId?: string; configHash?: string; at?: string; extra?: Record<string, unknown>},
  now: string,
): Record<string, unknown> {
  const f = syncStatusFields(style)
  const ok = state.phase === 'Synced'
  return {
    phase: state.phase,
    [f.syncStatus]: state.syncStatus,
    [f.apiId]: synced.apiId ?? previous?.[f.apiId],
    [f.configHash]: synced.configHash ?? previous?.[f.configHash],
    [f.lastSyncedAt]: synced.at ?? previous?.[f.lastSyncedAt],
    [f.observedGeneration]: generation,
    message: ok ? null : state.message,
    ...synced.extra,
    conditions: setCondition(previous?.conditions as Condition[] | undefined, {
      type: conditionTypes.synced, status: ok ? 'True' : 'False', reason: state.reason, message: state.message, observedGeneration: generation,
    }, now),
  }
}

/** Whether applying `patch` would change nothing (null = absent). */
export function statusUnchanged(previous: Record<string, unknown> | undefined, patch: Record<string, unknown>): boolean {
  const clean = (value: unknown) => JSON.stringify(value ?? null)
  return Object.entries(patch).every(([key, value]) => clean(previous?.[key]) === clean(value))
}

/** The API refuses the object as it is: retrying does not help, a spec change may. */
export function isTerminal(error: unknown): boolean {
  return error instanceof ApiValidationError || (error instanceof ApiAuthError && error.forbidden) || error instanceof ApiContractError
}

export function defineSync<Spec, Body, Api extends ApiObject, Links = undefined>(
  session: ApiSession,
  declaration: SyncDeclaration<Spec, Body, Api, Links>,
): Feature {
  const resource = crdResource(declaration.crd)
  return {
    name: declaration.name,
    enabled: declaration.enabled ?? ((config) => config.api_sync.enabled),
    requiredCrds: [crdFullName(declaration.crd), ...(declaration.related ? [crdFullName(declaration.related.crd)] : [])],
    // Reads its CRs, sets and releases its finalizer, writes their status; reads the related CRs.
    permissions: [
      {group: resource.group, resource: resource.plural, verbs: [...READ, 'patch', 'update']},
      {group: resource.group, resource: `${resource.plural}/status`, verbs: ['get', 'patch', 'update']},
      ...(declaration.related ? [{group: crdResource(declaration.related.crd).group, resource: crdResource(declaration.related.crd).plural, verbs: READ}] : []),
    ],
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const {crd, finalizer, noun} = declaration
      const style = crd.statusStyle ?? 'snake'
      const f = syncStatusFields(style)
      const client = manager.client
      const stopping = new AbortController()
      const builder = manager.controller(declaration.name)
      const objects = builder.for<SyncObject<Spec>>({resource, kind: crd.kind}, {onUpdate: specMetadataOrDeletionChanged})
      const relatedDeclaration = declaration.related
      const related: RelatedCache = relatedDeclaration
        ? builder.watches<CustomObject<Record<string, unknown>, Record<string, unknown>>>(
          {resource: crdResource(relatedDeclaration.crd), kind: relatedDeclaration.crd.kind},
          (object) => relatedDeclaration.toKeys(object, objects.cache),
          relatedDeclaration.changed ? {onUpdate: (old, next) => relatedDeclaration.changed!(old, next)} : {},
        ).cache
        : new ObjectCache()

      const refOf = (object: SyncObject<Spec>, subresource?: string) => ({...resource, namespace: object.metadata.namespace, name: object.metadata.name, subresource})
      const writeStatus = async (object: SyncObject<Spec>, patch: Record<string, unknown>, signal: AbortSignal) => {
        if (statusUnchanged(object.status, patch)) return
        await client.mergePatch(refOf(object, 'status'), {apiVersion: API_VERSION, kind: crd.kind, status: patch}, {signal})
      }
      const guard = new Finalizer<SyncObject<Spec>>({client, name: finalizer, refOf: (object) => refOf(object), crd: crdFullName(crd)})
      const status = (object: SyncObject<Spec>, state: SyncState, synced: Parameters<typeof syncStatusPatch>[4] = {}) =>
        syncStatusPatch(style, object.status, object.metadata.generation, state, synced, new Date().toISOString())

      const exists = async (api: Resource<Api, Body>, id: string, signal: AbortSignal) => {
        try {
          return !(await api.get(id, {signal})).is_deleted
        } catch (error) {
          if (error instanceof ApiNotFoundError || (error instanceof ApiError && error.status === 404)) return false
          throw error
        }
      }

      // Natural keys of the API objects (one listing, refreshed by the inventory check): adopt-or-create skips its
      // lookup for keys absent there. Replaced when the session changes (another workspace or cluster).
      let keys = new InventoryKeys()
      let keysLoading = false
      let keysFailedAt = 0
      const listInventory = async (api: PolycrateApiClient, identity: ApiIdentity): Promise<Set<string>> => {
        const into = keys
        const token = into.begin()
        const ids = new Set<string>()
        const listed: string[] = []
        for await (const item of declaration.api(api).list(declaration.inventory(identity), {signal: stopping.signal})) {
          ids.add(item.id)
          if (declaration.naturalKey && !item.is_deleted) listed.push(declaration.naturalKey.object(item))
        }
        into.complete(token, listed)
        return ids
      }
      /** Starts the first listing in the background; until it completes, lookups go to the API as before. */
      const loadKeys = (api: PolycrateApiClient, identity: ApiIdentity, logger: ReconcileContext['logger']) => {
        if (keys.loaded || keysLoading || Date.now() - keysFailedAt < 10_000) return
        keysLoading = true
        listInventory(api, identity).then(
          () => logger.debug(`inventory listing loaded for adopt-or-create`, {keys: keys.size}),
          (error: Error) => {
            keysFailedAt = Date.now()
            logger.debug('inventory listing failed; lookups go to the API', {error: error.message})
          },
        ).finally(() => {
          keysLoading = false
        })
      }

      const reconcile = async ({key, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> => {
        const object = objects.cache.get(key)
        if (!object) return
        const api = session.client
        const identity = session.identity
        const apiId = object.status?.[f.apiId] as string | undefined

        const deleted = await guard.finalize(object, signal, {
          // Its CRD is being deleted: not a user deleting the object. The API object stays, to be adopted by its
          // natural key when the CRD is back and the CR is made again.
          kept: () => logger.info(`${noun} CR goes with its CRD; the API object is kept`, {apiId}),
          cleanup: async () => {
            if (!api) throw new Error(`cannot delete ${noun} ${apiId ?? ''} from the Polycrate API yet: ${session.problem ?? 'not connected'}`)
            if (!apiId) return
            const outcome = declaration.remove ? await declaration.remove(api, apiId, object, signal) : await declaration.api(api).delete(apiId, {signal})
            logger.info(`${noun} deleted from the API`, {apiId, outcome})
          },
        })
        if (deleted) return
        if (!api || !identity) {
          // Right after a start the first health report is still out: nothing to tell yet, and a restart must not
          // flip every object to Pending and back. A known problem (no token, rejected, unreachable) is shown.
          if (session.problem) {
            await writeStatus(object, status(object, {phase: 'Pending', syncStatus: 'pending', reason: 'APINotConnected', message: `Waiting for the Polycrate API connection: ${session.problem}`}), signal)
          }
          return // a change of the session requeues every object
        }
        if (declaration.requiresCluster && !identity.clusterId) {
          const message = `The Polycrate API has no cluster for this workspace yet, and a ${noun} belongs to one: set local_cluster.enabled (and cluster_name) in the OperatorConfig.`
          await writeStatus(object, status(object, {phase: 'Pending', syncStatus: 'pending', reason: 'NoLocalCluster', message}), signal)
          return
        }
        const settle = !apiId && declaration.createAfterMs ? declaration.createAfterMs(object) - (Date.now() - Date.parse(object.metadata.creationTimestamp ?? '')) : 0
        if (settle > 0) return {requeueAfterMs: settle}
        const resourceApi = declaration.api(api)
        // The reads (links, existence) run while the finalizer patch is in flight; they are awaited in the try below.
        const reads = Promise.all([
          declaration.links ? declaration.links(object, api, identity, signal, related) : (undefined as Links),
          apiId ? exists(resourceApi, apiId, signal) : true,
        ])
        reads.catch(() => {}) // a failing finalizer patch must not leave it unhandled
        // The finalizer is on before the API object exists, so the CR can never go without deleting it.
        await guard.add(object, signal)

        try {
          const [links, stillExists] = await reads
          const payload = declaration.payload(object, {identity, links})
          const hash = configHash(payload)
          let id = apiId
          if (id && !stillExists) {
            logger.info(`${noun} was deleted on the API side; recreating it`, {apiId: id})
            await manager.recorder(declaration.name).record(object, 'Normal', 'Recreated', `The ${noun} ${id} was deleted in the Polycrate API; it is created again.`)
            id = undefined
          }
          let wrote = false
          let createdNow = false
          if (!id) {
            const naturalKey = declaration.naturalKey?.body(payload)
            const skipLookup = naturalKey !== undefined && keys.absent(naturalKey)
            if (naturalKey !== undefined) {
              keys.add(naturalKey) // before the create: from now on it may exist, whatever the answer
              loadKeys(api, identity, logger)
            }
            const {object: found, created} = await adoptOrCreate(resourceApi, {
              lookup: declaration.lookup(payload, identity),
              body: payload,
              matches: declaration.matches ? (candidate) => declaration.matches!(candidate, payload) : undefined,
              signal,
              skipLookup,
            })
            id = found.id
            createdNow = created
            if (!created) await resourceApi.update(id, payload as Partial<Body>, {signal})
            wrote = true
            logger.info(created ? `${noun} created in the API` : `existing API ${noun} adopted`, {apiId: id})
          } else if (hash !== object.status?.[f.configHash]) {
            await resourceApi.update(id, payload as Partial<Body>, {signal})
            wrote = true
            logger.info(`${noun} updated in the API`, {apiId: id})
          }
          try {
            await writeStatus(object, status(object, {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: `Synced to the Polycrate API as ${id}.`}, {
              apiId: id, configHash: hash, at: wrote ? new Date().toISOString() : undefined, extra: declaration.extraStatus?.(links),
            }), signal)
          } catch (error) {
            // The CR is gone: the cache showed an object that no longer exists (a stale list after a reconnect brings
            // back a CR deleted since). What this reconcile created for it would have no owner: it goes again.
            if (createdNow && error instanceof KubeApiError && error.status === 404) {
              if (declaration.remove) await declaration.remove(api, id, object, signal)
              else await resourceApi.delete(id, {signal})
              logger.info(`${noun} CR is gone (a stale cache); the API object just created for it is deleted again`, {apiId: id})
              return undefined
            }
            throw error
          }
        } catch (error) {
          if (signal.aborted) throw error
          if (isTerminal(error)) {
            const message = `The Polycrate API refused the ${noun}: ${(error as Error).message}`
            await writeStatus(object, status(object, {phase: 'Error', syncStatus: 'error', reason: 'Rejected', message}), signal)
            await manager.recorder(declaration.name).record(object, 'Warning', 'SyncRejected', message)
            return undefined
          }
          const reason = error instanceof ApiNetworkError || (error instanceof ApiError && (error.status >= 500 || error.status === 429)) ? 'APIUnavailable' : 'SyncFailed'
          await writeStatus(object, status(object, {phase: 'Error', syncStatus: 'error', reason, message: `Sync failed, retrying with backoff: ${(error as Error).message}`}), signal)
          throw error
        }
      }

      const running = builder.complete(reconcile, {maxConcurrentReconciles: manager.maxConcurrentSyncs})
      const unsubscribe = session.onChange(() => {
        keys = new InventoryKeys()
        running.controller.resync()
      })

      // Inventory check every sync interval: an object whose API twin is gone is reconciled (and recreated) at once.
      const inventory = setInterval(async () => {
        const api = session.client
        const identity = session.identity
        if (!api || !identity || !manager.isLeader || !objects.hasSynced()) return
        if (declaration.requiresCluster && !identity.clusterId) return
        try {
          const ids = await listInventory(api, identity)
          for (const object of objects.cache.list()) {
            const id = object.status?.[f.apiId] as string | undefined
            if (id && !ids.has(id) && !object.metadata.deletionTimestamp) running.enqueue(`${object.metadata.namespace}/${object.metadata.name}`)
          }
        } catch (error) {
          running.logger.debug('inventory check failed; the next interval retries', {error: (error as Error).message})
        }
      }, config.api_sync.sync_interval_seconds * 1000)
      inventory.unref()
      return {
        async stop() {
          clearInterval(inventory)
          stopping.abort()
          unsubscribe()
          await running.stop()
        },
      }
    },
  }
}
