/**
 * A list/watch loop we own: paged initial list, watch with bookmarks and a jittered timeoutSeconds,
 * restart from the last resourceVersion, relist on 410 Gone (as HTTP status or in-stream ERROR), an idle timeout
 * for silent dead connections, and every other error retried forever with jittered backoff. Never stops on its own.
 */
import {KubeApiError, resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import type {Logger} from '../../lib/logger.js'
import {silentLogger} from '../../lib/logger.js'
import {Backoff, watchBackoffPolicy, type BackoffPolicy} from '../../lib/backoff.js'
import {monotonicNow, pause, systemClock, type Clock} from '../../lib/clock.js'
import {ObjectCache, stripManagedFields, type CacheChange} from './cache.js'
import type {OperatorMetrics} from './metrics.js'
import {readWatchEvents, ResourceExpiredError, WatchIdleError} from './watch-stream.js'

export interface InformerOptions<T extends KubeObject> {
  client: KubeClient
  /** What to watch; `namespace` limits it to one namespace, `name` must be unset. */
  resource: ResourceRef
  /** Kind of the items, filled in where a list leaves it out. */
  kind?: string
  labelSelector?: string
  fieldSelector?: string
  /** Watch only metadata (PartialObjectMetadata), e.g. for Secrets whose data we do not need. */
  metadataOnly?: boolean
  /** Applied to every object before it is cached (after managedFields are stripped). */
  transform?: (object: T) => T
  pageSize?: number
  /** The server ends each watch after a random time in this range (seconds). */
  watchTimeoutSeconds?: [min: number, max: number]
  /** No bytes for this long (bookmarks included) → the connection is presumed dead and the watch restarted. */
  idleTimeoutMs?: number
  /** Delays between failed attempts (default ≈0.8 s → 30 s, jittered). */
  backoff?: BackoffPolicy
  logger?: Logger
  metrics?: OperatorMetrics
  random?: () => number
  /** The clock of the idle timeout and the backoff (the manager's; the system clock by default). */
  clock?: Clock
}

/** What a user of a shared informer asks for: the options without what the manager supplies. */
export type InformerRequest<T extends KubeObject> = Omit<InformerOptions<T>, 'client' | 'logger' | 'metrics' | 'clock'>

export interface EventHandler<T> {
  onAdd?(object: T): void
  onUpdate?(old: T, object: T): void
  onDelete?(object: T): void
}

const metadataOnlyList = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'
const metadataOnlyWatch = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json'

export function describeResource(resource: ResourceRef): string {
  return `${resource.plural}${resource.group ? `.${resource.group}` : ''}`
}

/** How many lists older than the informer's view are refused in a row before one is taken (a restored etcd). */
const MAX_STALE_LISTS = 5

/** A list older than what the informer already saw; retried like any failed list. */
export class StaleListError extends Error {
  override name = 'StaleListError'
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly cache = new ObjectCache<T>()
  readonly name: string
  private readonly handlers = new Set<EventHandler<T>>()
  private synced = false
  private syncWaiters: Array<() => void> = []
  private abort?: AbortController
  private running?: Promise<void>
  private readonly logger: Logger
  private readonly random: () => number
  private readonly clock: Clock

  constructor(private readonly options: InformerOptions<T>) {
    this.name = describeResource(options.resource) + (options.resource.namespace ? ` in ${options.resource.namespace}` : '')
    this.logger = (options.logger ?? silentLogger).child({informer: this.name})
    this.random = options.random ?? Math.random
    this.clock = options.clock ?? systemClock
  }

  /** Adds a handler; if the cache is filled already, the handler first gets every cached object as an add. */
  addHandler(handler: EventHandler<T>): () => void {
    this.handlers.add(handler)
    if (this.synced) for (const object of this.cache.list()) this.call(handler, {type: 'added', object})
    return () => this.handlers.delete(handler)
  }

  hasSynced(): boolean {
    return this.synced
  }

  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced || signal?.aborted) return Promise.resolve(this.synced)
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done)
        this.syncWaiters = this.syncWaiters.filter((waiter) => waiter !== done)
        resolve(this.synced)
      }
      this.syncWaiters.push(done)
      signal?.addEventListener('abort', done, {once: true})
    })
  }

  start(): void {
    if (this.running) return
    this.abort = new AbortController()
    this.running = this.loop(this.abort.signal)
  }

  async stop(): Promise<void> {
    this.abort?.abort()
    await this.running
    this.running = undefined
  }

  /** The newest resourceVersion this informer has seen (an etcd revision), to refuse a list older than its view. */
  private newest?: bigint
  private staleLists = 0

  /** Remembers a resourceVersion as seen; numeric ones only (they are etcd revisions; opaque ones are not compared). */
  private saw(resourceVersion: string | undefined): void {
    if (!resourceVersion || !/^\d+$/.test(resourceVersion)) return
    const version = BigInt(resourceVersion)
    if (this.newest === undefined || version > this.newest) this.newest = version
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.options.backoff ?? watchBackoffPolicy, this.random)
    const resource = describeResource(this.options.resource)
    let resourceVersion: string | undefined
    while (!signal.aborted) {
      const startedAt = monotonicNow(this.clock)
      try {
        if (resourceVersion === undefined) resourceVersion = await this.list(signal)
        resourceVersion = await this.watch(resourceVersion, signal, (rv) => (resourceVersion = rv))
        this.options.metrics?.watchRestarts.inc({resource, reason: 'timeout'})
        backoff.reset()
      } catch (error) {
        if (signal.aborted) break
        if (error instanceof ResourceExpiredError || (error instanceof KubeApiError && error.status === 410)) {
          this.logger.debug('resource version expired; relisting', {resourceVersion})
          this.options.metrics?.watchRestarts.inc({resource, reason: 'gone'})
          resourceVersion = undefined
          continue
        }
        if (monotonicNow(this.clock) - startedAt > 60_000) backoff.reset()
        const delay = backoff.next()
        const reason = error instanceof WatchIdleError ? 'idle' : error instanceof StaleListError ? 'stale' : 'error'
        this.options.metrics?.watchRestarts.inc({resource, reason})
        this.logger[backoff.attempts > 3 ? 'warn' : 'info']('watch interrupted; retrying', {
          error: (error as Error).message,
          retryInMs: delay,
          attempt: backoff.attempts,
        })
        await pause(this.clock, delay, signal)
      }
    }
  }

  /** Paged list; replaces the cache; returns the list's resourceVersion. */
  private async list(signal: AbortSignal): Promise<string> {
    const items: T[] = []
    let continueToken: string | undefined
    let resourceVersion = ''
    do {
      const page = await this.options.client.request<{metadata?: {resourceVersion?: string; continue?: string}; items?: T[]}>({
        path: resourcePath(this.options.resource),
        query: {
          limit: this.options.pageSize ?? 500,
          continue: continueToken,
          labelSelector: this.options.labelSelector,
          fieldSelector: this.options.fieldSelector,
        },
        accept: this.options.metadataOnly ? metadataOnlyList : undefined,
        signal,
        timeoutMs: 60_000,
      })
      for (const item of page.items ?? []) items.push(this.prepare(item))
      continueToken = page.metadata?.continue || undefined
      resourceVersion = page.metadata?.resourceVersion ?? ''
    } while (continueToken)
    // A list older than what this informer already saw (an apiserver that lags behind after a restart: time travel)
    // would bring back deleted objects and old versions, and reconciles would act on them. It is not applied; the
    // informer lists again after a backoff. A few times only: an etcd restored from a backup is older for good.
    if (/^\d+$/.test(resourceVersion) && this.newest !== undefined && BigInt(resourceVersion) < this.newest && this.staleLists < MAX_STALE_LISTS) {
      this.staleLists++
      throw new StaleListError(`the list's resourceVersion ${resourceVersion} is older than ${this.newest}, already seen: not applied, listing again`)
    }
    this.staleLists = 0
    this.saw(resourceVersion)
    const changes = this.cache.replace(items)
    this.options.metrics?.cacheObjects.set({resource: describeResource(this.options.resource)}, this.cache.size)
    for (const change of changes) this.dispatch(change)
    if (!this.synced) {
      this.synced = true
      this.logger.debug('cache synced', {objects: items.length})
      for (const resolve of this.syncWaiters.splice(0)) resolve()
    }
    return resourceVersion
  }

  private async watch(resourceVersion: string, signal: AbortSignal, onVersion: (rv: string) => void): Promise<string> {
    const [min, max] = this.options.watchTimeoutSeconds ?? [300, 600]
    const idleTimeoutMs = this.options.idleTimeoutMs ?? 295_000
    let latest = resourceVersion
    const stream = await this.options.client.stream({
      path: resourcePath(this.options.resource),
      query: {
        watch: true,
        resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.round(min + (max - min) * this.random()),
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
      },
      accept: this.options.metadataOnly ? metadataOnlyWatch : undefined,
      signal,
      timeoutMs: idleTimeoutMs + 5_000,
    })
    await readWatchEvents<T>(stream, idleTimeoutMs, (event) => {
      const rv = event.object.metadata?.resourceVersion
      if (rv) {
        latest = rv
        onVersion(rv)
        this.saw(rv)
      }
      if (event.type === 'BOOKMARK') return
      const object = this.prepare(event.object)
      const change = event.type === 'DELETED' ? this.cache.remove(object) : this.cache.upsert(object)
      if (change) this.dispatch(change)
    }, this.clock)
    this.options.metrics?.cacheObjects.set({resource: describeResource(this.options.resource)}, this.cache.size)
    return latest
  }

  private prepare(item: T): T {
    let object = stripManagedFields(item)
    if (this.options.kind && !object.kind) object = {...object, kind: this.options.kind}
    return this.options.transform ? this.options.transform(object) : object
  }

  private dispatch(change: CacheChange<T>): void {
    for (const handler of this.handlers) this.call(handler, change)
  }

  private call(handler: EventHandler<T>, change: CacheChange<T>): void {
    try {
      if (change.type === 'added') handler.onAdd?.(change.object)
      else if (change.type === 'updated') handler.onUpdate?.(change.old, change.object)
      else handler.onDelete?.(change.object)
    } catch (error) {
      this.logger.error('event handler failed', {error: (error as Error).message})
    }
  }
}
