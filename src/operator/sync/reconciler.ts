/**
 * The reconcile of the generic sync (engine.ts): one CR → its API object. `defineSync` wires the controller; this
 * class holds what the reconcile needs across calls (the finalizer, the inventory loader) and splits the reconcile
 * into its steps: finalize, wait for the connection, create-or-update, write the status, handle the failure.
 * Every API and kube call takes the reconcile's AbortSignal.
 */
import {adoptOrCreate, ApiError, ApiNotFoundError, findExisting, type PolycrateApiClient, type Resource} from '../../api/index.js'
import {API_VERSION, crdFullName, crdResource, syncStatusFields, type StatusStyle} from '../../crds/define.js'
import type {EventRecorder} from '../../kube/events.js'
import {KubeApiError, type KubeClient, type ResourceRef} from '../../kube/client.js'
import {isoNow, systemClock, type Clock} from '../../lib/clock.js'
import type {Logger} from '../../lib/logger.js'
import type {ApiIdentity, ApiSession} from '../agent/api-session.js'
import type {ObjectCache} from '../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../runtime/controller.js'
import {Finalizer} from '../runtime/finalizer.js'
import type {RelatedCache, SyncDeclaration, SyncObject} from './declaration.js'
import {configHash} from './hash.js'
import type {InventoryItem, InventoryLoader} from './inventory-loader.js'
import {createDelayMs, failureReason, isTerminal, missingFromInventory, statusUnchanged, syncStatusPatch, type SyncState} from './status.js'
import {objectRef} from '../../kube/resources.js'

export interface SyncReconcilerOptions<Spec, Body, Api extends InventoryItem, Links> {
  declaration: SyncDeclaration<Spec, Body, Api, Links>
  session: Pick<ApiSession, 'client' | 'identity' | 'problem'>
  client: KubeClient
  /** The primary CRs (the controller's `for` cache). */
  objects: ObjectCache<SyncObject<Spec>>
  related: RelatedCache
  events: Pick<EventRecorder, 'record'>
  inventory: InventoryLoader<Api>
  /** Now, for a new CR's settle time and the status timestamps: the manager's timers, on which its requeues run. */
  clock?: Clock
}

/** What a create-or-update works with once the connection is there and the reads are in. */
interface Push<Body, Api extends InventoryItem, Links> {
  api: PolycrateApiClient
  identity: ApiIdentity
  resourceApi: Resource<Api, Body>
  apiId: string | undefined
  links: Links
  stillExists: boolean
}

export class SyncReconciler<Spec, Body, Api extends InventoryItem, Links = undefined> {
  private readonly declaration: SyncDeclaration<Spec, Body, Api, Links>
  private readonly style: StatusStyle
  private readonly fields: ReturnType<typeof syncStatusFields>
  readonly finalizer: Finalizer<SyncObject<Spec>>
  private readonly clock: Clock
  /** The CRD's resource (group, version, plural). */
  private readonly resource: ResourceRef

  constructor(private readonly options: SyncReconcilerOptions<Spec, Body, Api, Links>) {
    this.declaration = options.declaration
    this.style = this.declaration.crd.statusStyle ?? 'snake'
    this.fields = syncStatusFields(this.style)
    this.clock = options.clock ?? systemClock
    this.resource = crdResource(this.declaration.crd)
    this.finalizer = new Finalizer<SyncObject<Spec>>({
      client: options.client, name: this.declaration.finalizer, resource: this.resource, crd: crdFullName(this.declaration.crd),
    })
  }

  async reconcile({key, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    const object = this.options.objects.get(key)
    if (!object) return
    const {session, declaration} = this.options
    const api = session.client
    const identity = session.identity
    const apiId = object.status?.[this.fields.apiId] as string | undefined
    if (await this.finalize(object, api, apiId, logger, signal)) return
    if (!api || !identity) {
      // Right after a start the first health report is still out: nothing to tell yet, and a restart must not
      // flip every object to Pending and back. A known problem (no token, rejected, unreachable) is shown.
      if (session.problem) {
        await this.writeStatus(object, this.status(object, {phase: 'Pending', syncStatus: 'pending', reason: 'APINotConnected', message: `Waiting for the Polycrate API connection: ${session.problem}`}), signal)
      }
      return // a change of the session requeues every object
    }
    if (declaration.requiresCluster && !identity.clusterId) {
      const message = `The Polycrate API has no cluster for this workspace yet, and a ${declaration.noun} belongs to one: set local_cluster.enabled (and cluster_name) in the OperatorConfig.`
      await this.writeStatus(object, this.status(object, {phase: 'Pending', syncStatus: 'pending', reason: 'NoLocalCluster', message}), signal)
      return
    }
    const settle = createDelayMs(apiId, declaration.createAfterMs?.(object), object.metadata.creationTimestamp, this.clock.now())
    if (settle > 0) return {requeueAfterMs: settle}
    const resourceApi = declaration.api(api)
    // The reads (links, existence) run while the finalizer patch is in flight; they are awaited in the try below.
    const reads = Promise.all([
      declaration.links ? declaration.links(object, api, identity, signal, this.options.related) : (undefined as Links),
      apiId ? this.exists(resourceApi, apiId, signal) : true,
    ])
    reads.catch(() => {}) // a failing finalizer patch must not leave it unhandled
    // The finalizer is on before the API object exists, so the CR can never go without deleting it.
    await this.finalizer.add(object, signal)
    // What the CR's status holds as far as this reconcile knows: push() clears the recorded hash before an update,
    // and a failure's status must not write the old hash back.
    const current = {object}
    try {
      const [links, stillExists] = await reads
      return await this.push(current, {api, identity, resourceApi, apiId, links, stillExists}, logger, signal)
    } catch (error) {
      return this.failed(current.object, error, signal)
    }
  }

  /** The inventory check: lists the API objects and enqueues every live CR whose API object is gone. */
  async checkInventory(ready: boolean, enqueue: (key: string) => void, logger: Pick<Logger, 'debug'>): Promise<void> {
    const {session, declaration} = this.options
    const api = session.client
    const identity = session.identity
    if (!api || !identity || !ready) return
    if (declaration.requiresCluster && !identity.clusterId) return
    try {
      const ids = await this.options.inventory.list(api, identity)
      for (const key of missingFromInventory(this.options.objects.list(), ids, this.fields.apiId)) enqueue(key)
    } catch (error) {
      logger.debug('inventory check failed; the next interval retries', {error: (error as Error).message})
    }
  }

  /** Writes the status patch unless it would change nothing. */
  async writeStatus(object: SyncObject<Spec>, patch: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    if (statusUnchanged(object.status, patch)) return
    await this.options.client.mergePatch(objectRef(this.resource, object, 'status'), {apiVersion: API_VERSION, kind: this.declaration.crd.kind, status: patch}, {signal})
  }

  private status(object: SyncObject<Spec>, state: SyncState, synced: Parameters<typeof syncStatusPatch>[4] = {}): Record<string, unknown> {
    return syncStatusPatch(this.style, object.status, object.metadata.generation, state, synced, isoNow(this.clock))
  }


  /** The finalizer's Apply/Cleanup: true when the CR is being deleted (cleaned up or released; nothing else to do). */
  private finalize(object: SyncObject<Spec>, api: PolycrateApiClient | undefined, apiId: string | undefined, logger: Logger, signal: AbortSignal): Promise<boolean> {
    const {noun} = this.declaration
    return this.finalizer.finalize(object, signal, {
      // Its CRD is being deleted: not a user deleting the object. The API object stays, to be adopted by its
      // natural key when the CRD is back and the CR is made again.
      kept: () => logger.info(`${noun} CR goes with its CRD; the API object is kept`, {apiId}),
      cleanup: async () => {
        if (!api) throw new Error(`cannot delete ${noun} ${apiId ?? ''} from the Polycrate API yet: ${this.options.session.problem ?? 'not connected'}`)
        // Without a recorded id the API object may still exist: a process that died between the create and the
        // status write left it unrecorded. Its natural key finds it, as the next sync would have adopted it.
        const id = apiId ?? await this.findUnrecorded(object, api, logger, signal)
        if (!id) return
        const outcome = await this.remove(api, id, object, signal)
        logger.info(`${noun} deleted from the API`, {apiId: id, outcome})
      },
    })
  }

  /** The API object a CR without a recorded API id would adopt (its natural key), if any. */
  private async findUnrecorded(object: SyncObject<Spec>, api: PolycrateApiClient, logger: Logger, signal: AbortSignal): Promise<string | undefined> {
    const {declaration} = this
    const identity = this.options.session.identity
    if (!identity || (declaration.requiresCluster && !identity.clusterId)) return undefined
    // Deleted before its settle time was up: never created, and a lookup could find another CR's object.
    const deletedAt = Date.parse(object.metadata.deletionTimestamp ?? '') || this.clock.now()
    if (createDelayMs(undefined, declaration.createAfterMs?.(object), object.metadata.creationTimestamp, deletedAt) > 0) return undefined
    const links = declaration.links ? await declaration.links(object, api, identity, signal, this.options.related) : (undefined as Links)
    const payload = declaration.payload(object, {identity, links})
    const found = await findExisting(declaration.api(api), {
      lookup: declaration.lookup(payload, identity),
      matches: declaration.matches ? (candidate) => declaration.matches!(candidate, payload) : undefined,
      signal,
    })
    if (found) logger.info(`${declaration.noun} CR goes without a recorded API id; the API object of its natural key goes with it`, {apiId: found.id})
    return found?.id
  }

  private remove(api: PolycrateApiClient, id: string, object: SyncObject<Spec>, signal: AbortSignal): Promise<unknown> {
    return this.declaration.remove ? this.declaration.remove(api, id, object, signal, this.clock.now()) : this.declaration.api(api).delete(id, {signal})
  }

  private async exists(api: Resource<Api, Body>, id: string, signal: AbortSignal): Promise<boolean> {
    try {
      return !(await api.get(id, {signal})).is_deleted
    } catch (error) {
      if (error instanceof ApiNotFoundError || (error instanceof ApiError && error.status === 404)) return false
      throw error
    }
  }

  /** Creates, adopts or updates the API object as needed, then writes the Synced status. */
  private async push(current: {object: SyncObject<Spec>}, push: Push<Body, Api, Links>, logger: Logger, signal: AbortSignal): Promise<undefined> {
    const {noun} = this.declaration
    let object = current.object
    const payload = this.declaration.payload(object, {identity: push.identity, links: push.links})
    const hash = configHash(payload)
    let id = push.apiId
    if (id && !push.stillExists) {
      logger.info(`${noun} was deleted on the API side; recreating it`, {apiId: id})
      await this.options.events.record(object, 'Normal', 'Recreated', `The ${noun} ${id} was deleted in the Polycrate API; it is created again.`)
      id = undefined
    }
    let wrote = false
    let createdNow = false
    if (!id) {
      ({id, created: createdNow} = await this.adoptOrCreate(payload, push, logger, signal))
      wrote = true
    } else if (hash !== object.status?.[this.fields.configHash]) {
      object = current.object = await this.clearRecordedHash(object, signal)
      await push.resourceApi.update(id, payload as Partial<Body>, {signal})
      wrote = true
      logger.info(`${noun} updated in the API`, {apiId: id})
    }
    try {
      await this.writeStatus(object, this.status(object, {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: `Synced to the Polycrate API as ${id}.`}, {
        apiId: id, configHash: hash, at: wrote ? isoNow(this.clock) : undefined, extra: this.declaration.extraStatus?.(push.links),
      }), signal)
    } catch (error) {
      // The CR is gone: the cache showed an object that no longer exists (a stale list after a reconnect brings
      // back a CR deleted since). What this reconcile created for it would have no owner: it goes again.
      if (createdNow && error instanceof KubeApiError && error.status === 404) {
        await this.remove(push.api, id, object, signal)
        logger.info(`${noun} CR is gone (a stale cache); the API object just created for it is deleted again`, {apiId: id})
        return undefined
      }
      throw error
    }
    return undefined
  }

  /**
   * Before an update of the API object: the status no longer says which payload it holds (the recorded hash is
   * cleared; one status write, none when it holds none). A process that dies between the update and the Synced
   * status write would otherwise leave the old hash beside the new payload, and a spec back at the old one would
   * match it and never reach the API. Returns the CR as it is now known.
   */
  private async clearRecordedHash(object: SyncObject<Spec>, signal: AbortSignal): Promise<SyncObject<Spec>> {
    const field = this.fields.configHash
    if (object.status?.[field] === undefined || object.status[field] === null) return object
    await this.writeStatus(object, {[field]: null}, signal)
    return {...object, status: {...object.status, [field]: undefined}}
  }

  /** Adopt-or-create by the natural key; the inventory keys let it skip the lookup for a key the listing lacks. */
  private async adoptOrCreate(payload: Body, push: Push<Body, Api, Links>, logger: Logger, signal: AbortSignal): Promise<{id: string; created: boolean}> {
    const {declaration} = this
    const keys = this.options.inventory.keys
    const naturalKey = declaration.naturalKey?.body(payload)
    const skipLookup = naturalKey !== undefined && keys.absent(naturalKey)
    if (naturalKey !== undefined) {
      keys.add(naturalKey) // before the create: from now on it may exist, whatever the answer
      this.options.inventory.load(push.api, push.identity, logger)
    }
    const {object: found, created} = await adoptOrCreate(push.resourceApi, {
      lookup: declaration.lookup(payload, push.identity),
      body: payload,
      matches: declaration.matches ? (candidate) => declaration.matches!(candidate, payload) : undefined,
      signal,
      skipLookup,
      clock: this.clock,
    })
    if (!created) await push.resourceApi.update(found.id, payload as Partial<Body>, {signal})
    logger.info(created ? `${declaration.noun} created in the API` : `existing API ${declaration.noun} adopted`, {apiId: found.id})
    return {id: found.id, created}
  }

  /** A failed sync: terminal → Error status and a Warning Event, no retry; otherwise Error status and a retry. */
  private async failed(object: SyncObject<Spec>, error: unknown, signal: AbortSignal): Promise<undefined> {
    if (signal.aborted) throw error
    const {noun} = this.declaration
    if (isTerminal(error)) {
      const message = `The Polycrate API refused the ${noun}: ${(error as Error).message}`
      await this.writeStatus(object, this.status(object, {phase: 'Error', syncStatus: 'error', reason: 'Rejected', message}), signal)
      await this.options.events.record(object, 'Warning', 'SyncRejected', message)
      return undefined
    }
    await this.writeStatus(object, this.status(object, {phase: 'Error', syncStatus: 'error', reason: failureReason(error), message: `Sync failed, retrying with backoff: ${(error as Error).message}`}), signal)
    throw error
  }
}
