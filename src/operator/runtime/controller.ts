/**
 * A controller: informers feed keys into a work queue; `maxConcurrentReconciles` workers take keys and call the
 * reconciler. Per-key backoff on errors (5 s → 60 s), 409 conflicts requeued after a moment (the cache catching
 * up) without counting as failures, exceptions contained per reconcile, periodic resync of every key.
 */
import {systemClock, type Clock} from '../../lib/clock.js'
import {setMaxListeners} from 'node:events'
import {KubeApiError, type KubeObject} from '../../kube/client.js'
import type {Logger} from '../../lib/logger.js'
import {silentLogger} from '../../lib/logger.js'
import {objectKey} from './cache.js'
import {nameSignal} from '../../lib/request-origin.js'
import type {Informer} from './informer.js'
import type {OperatorMetrics} from './metrics.js'
import type {UpdatePredicate} from './predicates.js'
import {WorkQueue} from './workqueue.js'

/** A conflict is retried after 100–200 ms: long enough for the watch to deliver the newer object. */
export const CONFLICT_REQUEUE_MS = 100

export interface ReconcileContext {
  key: string
  logger: Logger
  /** Aborted when the controller stops (shutdown or lost leadership): stop writing. */
  signal: AbortSignal
}

export interface ReconcileResult {
  /** Reconcile this key again after this long, even if nothing changes. */
  requeueAfterMs?: number
}

export type Reconciler = (context: ReconcileContext) => Promise<ReconcileResult | void>

export interface Watch<T extends KubeObject = KubeObject> {
  informer: Informer<T>
  /** Keys to reconcile for a changed object; by default the object's own key. */
  toKeys?: (object: T) => string[]
  /** Which updates count; by default every change of resourceVersion. */
  onUpdate?: UpdatePredicate<T>
  /**
   * Keys an update enqueues; by default `toKeys` of the new object. Where the keys depend on what changed (a source
   * that gave up a host must reconcile the source that takes it over), map the old object too, as controller-runtime's
   * EnqueueRequestsFromMapFunc does.
   */
  updateKeys?: (old: T, object: T) => string[]
}

export interface ControllerOptions {
  name: string
  reconcile: Reconciler
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  watches: Watch<any>[]
  /** Informers the reconciler reads without watching them: workers wait for them to sync too. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  reads?: Informer<any>[]
  maxConcurrentReconciles?: number
  /** Requeue the keys of every cached object this often (default 10 h); 0 disables. */
  resyncPeriodMs?: number
  logger?: Logger
  metrics?: OperatorMetrics
  /**
   * Whether the controller runs only while this process holds the leader lease (default true). A controller that
   * writes nothing (it only keeps in-memory state current, e.g. what the webhooks of a standby replica serve from)
   * runs on every replica, like a controller-runtime Runnable whose NeedLeaderElection() is false.
   */
  needLeaderElection?: boolean
  /** Time and timers of requeues and the resync (the system clock by default; tests pass a fake one). */
  clock?: Clock
}

export class Controller {
  readonly name: string
  readonly needLeaderElection: boolean
  queue: WorkQueue
  private readonly logger: Logger
  private readonly workers: number
  private abort?: AbortController
  private workerLoops: Promise<void>[] = []
  private unsubscribe: Array<() => void> = []
  private resyncTimer?: unknown
  private readonly clock: Clock
  private running = false

  constructor(private readonly options: ControllerOptions) {
    this.name = options.name
    this.needLeaderElection = options.needLeaderElection ?? true
    this.workers = Math.max(1, options.maxConcurrentReconciles ?? 4)
    this.logger = (options.logger ?? silentLogger).child({controller: options.name})
    this.clock = options.clock ?? systemClock
    this.queue = new WorkQueue({name: options.name, metrics: options.metrics, clock: this.clock})
  }

  get isRunning(): boolean {
    return this.running
  }

  /** Every informer this controller watches or reads. */
  get informers(): Informer<KubeObject>[] {
    return [...this.options.watches.map((watch) => watch.informer), ...(this.options.reads ?? [])]
  }

  /** Every informer of this controller has synced. */
  hasSynced(): boolean {
    return this.informers.every((informer) => informer.hasSynced())
  }

  enqueue(key: string): void {
    this.queue.add(key)
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.abort = new AbortController()
    // Every in-flight call of every worker listens on it: more than Node's default of 10 listeners is expected.
    setMaxListeners(0, this.abort.signal)
    nameSignal(this.abort.signal, this.name)
    if (this.queue.isShuttingDown) this.queue = new WorkQueue({name: this.name, metrics: this.options.metrics, clock: this.clock})
    this.options.metrics?.maxConcurrentReconciles.set({controller: this.name}, this.workers)
    this.options.metrics?.activeWorkers.set({controller: this.name}, 0)
    for (const watch of this.options.watches) {
      const toKeys = watch.toKeys ?? ((object: KubeObject) => [objectKey(object)])
      const enqueueAll = (object: KubeObject) => {
        for (const key of toKeys(object)) this.queue.add(key)
      }
      this.unsubscribe.push(watch.informer.addHandler({
        onAdd: enqueueAll,
        onUpdate: (old, object) => {
          if (watch.onUpdate && !watch.onUpdate(old, object)) return
          if (!watch.updateKeys) return enqueueAll(object)
          for (const key of watch.updateKeys(old, object)) this.queue.add(key)
        },
        onDelete: enqueueAll,
      }))
    }
    const period = this.options.resyncPeriodMs ?? 10 * 60 * 60 * 1000
    if (period > 0) {
      const every = () => {
        this.resyncTimer = this.clock.setTimeout(() => {
          this.resync()
          every()
        }, period)
      }
      every()
    }
    // Workers start only once every cache they read has synced (controller-runtime's WaitForCacheSync): before
    // that, "not in the cache" would not mean "gone". Keys queued meanwhile wait in the queue.
    const signal = this.abort.signal
    this.workerLoops.push((async () => {
      const pending = this.informers.filter((informer) => !informer.hasSynced())
      if (pending.length > 0) {
        this.logger.info('waiting for caches to sync', {informers: pending.map((informer) => informer.name)})
        await Promise.all(pending.map((informer) => informer.waitForSync(signal)))
      }
      if (signal.aborted) return
      const loops: Promise<void>[] = []
      for (let i = 0; i < this.workers; i++) loops.push(this.work(signal))
      this.logger.info('controller started', {workers: this.workers})
      await Promise.all(loops)
    })())
  }

  /** Requeues the key of every cached object of every watch (the periodic resync). */
  resync(): void {
    for (const watch of this.options.watches) {
      const toKeys = watch.toKeys ?? ((object: KubeObject) => [objectKey(object)])
      for (const object of watch.informer.cache.list()) for (const key of toKeys(object)) this.queue.add(key)
    }
  }

  /**
   * Stops intake at once; in-flight reconciles get an aborted signal right away when `abortInFlight` is set
   * (lost leadership), else they may finish within `graceMs`.
   */
  async stop(options: {graceMs?: number; abortInFlight?: boolean} = {}): Promise<boolean> {
    if (!this.running) return true
    this.running = false
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe()
    this.clock.clearTimeout(this.resyncTimer)
    if (options.abortInFlight) this.abort?.abort()
    this.queue.shutDown()
    const drained = await this.queue.drain(options.graceMs ?? 30_000)
    this.abort?.abort()
    await Promise.all(this.workerLoops.splice(0))
    this.logger.info('controller stopped', {drained})
    return drained
  }

  private async work(signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await this.queue.get()
      if (key === undefined) return
      this.options.metrics?.activeWorkers.inc({controller: this.name})
      try {
        await this.reconcileKey(key, signal)
      } finally {
        this.options.metrics?.activeWorkers.dec({controller: this.name})
        this.queue.done(key)
      }
    }
  }

  private async reconcileKey(key: string, signal: AbortSignal): Promise<void> {
    const logger = this.logger.child({key})
    const metrics = this.options.metrics
    const started = performance.now()
    let result: string
    try {
      const outcome = await this.options.reconcile({key, logger, signal})
      this.queue.forget(key)
      if (outcome?.requeueAfterMs !== undefined && outcome.requeueAfterMs >= 0) {
        this.queue.addAfter(key, outcome.requeueAfterMs)
        result = 'requeue_after'
      } else {
        result = 'success'
      }
    } catch (error) {
      if (signal.aborted) {
        result = 'error'
      } else if (error instanceof KubeApiError && error.status === 409) {
        // Someone changed the object under us: read it again once the cache has caught up, without counting a failure.
        logger.debug('conflict; requeued', {error: error.message})
        this.queue.addAfter(key, CONFLICT_REQUEUE_MS + Math.round(Math.random() * CONFLICT_REQUEUE_MS))
        result = 'requeue'
      } else {
        const delay = this.queue.addRateLimited(key)
        metrics?.reconcileErrors.inc({controller: this.name})
        if (!(error instanceof Error) || isProgrammingError(error)) metrics?.reconcilePanics.inc({controller: this.name})
        logger.error('reconcile failed', {
          error: error instanceof Error ? error.message : String(error),
          ...(isProgrammingError(error) ? {stack: (error as Error).stack} : {}),
          retryInMs: delay,
        })
        result = 'error'
      }
    }
    metrics?.reconcileTotal.inc({controller: this.name, result})
    metrics?.reconcileTime.observe({controller: this.name}, (performance.now() - started) / 1000)
    metrics?.workqueueUnfinishedWork.set({name: this.name, controller: this.name}, this.queue.unfinishedWorkSeconds())
  }
}

function isProgrammingError(error: unknown): boolean {
  return error instanceof TypeError || error instanceof ReferenceError || error instanceof RangeError
}
