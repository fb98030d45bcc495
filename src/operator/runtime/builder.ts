/**
 * The controller builder, in the spirit of controller-runtime's `ControllerManagedBy(m).For().Watches()` and
 * kube-rs' `Controller::new().watches()`:
 *
 *   const b = manager.controller('host-discovery')
 *   const nodes = b.watches<Node>({resource: …}, (node) => [node.metadata.name])
 *   const hosts = b.for<Host>({resource: …})
 *   const running = b.complete(reconcile)
 *   …
 *   await running.stop()
 *
 * The builder takes the informers from the manager (shared per resource + selectors + metadata-only + transform),
 * wires their events into the work queue, and hands the controller its logger, metrics, Event recorder and the
 * manager's leadership; workers start only once every informer it watches or reads has synced. `stop()` removes
 * the controller and releases its informers (stopped when their last user lets go).
 */
import type {Clock} from '../../lib/clock.js'
import type {EventRecorder} from '../../kube/events.js'
import type {KubeObject} from '../../kube/client.js'
import type {Logger} from '../../lib/logger.js'
import type {IndexFunction} from './cache.js'
import {Controller, type Reconciler, type Watch} from './controller.js'
import type {Informer, InformerRequest} from './informer.js'
import type {OperatorMetrics} from './metrics.js'
import type {UpdatePredicate} from './predicates.js'

export interface WatchOptions<T extends KubeObject> {
  /** Which updates count; by default every change of resourceVersion. */
  onUpdate?: UpdatePredicate<T>
  /** Cache indexes the reconciler looks objects up by (added once to the shared cache). */
  indexes?: Record<string, IndexFunction<T>>
  /** Keys an update enqueues (default: `toKeys` of the new object); see Watch.updateKeys. */
  updateKeys?: (old: T, object: T) => string[]
}

export interface CompleteOptions {
  /** Workers; the manager's `--max-concurrent-reconciles` by default. */
  maxConcurrentReconciles?: number
  /** Requeue every watched object's keys this often (default 10 h); 0 disables. */
  resyncPeriodMs?: number
  /** false: the controller runs on every replica, not only on the leader (it must then write nothing). */
  needLeaderElection?: boolean
}

export interface RunningController {
  readonly controller: Controller
  readonly logger: Logger
  readonly recorder: EventRecorder
  enqueue(key: string): void
  /** Removes the controller from the manager (in-flight reconciles drain) and releases its informers. */
  stop(): Promise<void>
}

/**
 * What a builder needs of the manager that made it (the Manager is one). Declared here, so that builder.ts does not
 * import manager.ts, which imports it.
 */
export interface BuilderHost {
  readonly logger: Logger
  readonly metrics: OperatorMetrics
  readonly maxConcurrentReconciles: number
  readonly clock?: Clock
  informer<T extends KubeObject>(request: InformerRequest<T>): Informer<T>
  releaseInformer<T extends KubeObject>(informer: Informer<T>): Promise<void>
  recorder(name: string): EventRecorder
  addController(controller: Controller): void
  removeController(controller: Controller): Promise<void>
}

export class ControllerBuilder {
  private readonly watchList: Watch[] = []
  private readonly readList: Informer<KubeObject>[] = []
  private readonly acquired: Informer<KubeObject>[] = []
  private built = false

  constructor(
    private readonly manager: BuilderHost,
    readonly name: string,
  ) {}

  /** The primary resource: each object's own key (`namespace/name`) is reconciled. */
  for<T extends KubeObject>(request: InformerRequest<T>, options: WatchOptions<T> = {}): Informer<T> {
    return this.watches(request, undefined, options)
  }

  /** A related resource: `toKeys` maps a changed object to the keys to reconcile (default: its own key). */
  watches<T extends KubeObject>(request: InformerRequest<T>, toKeys?: (object: T) => string[], options: WatchOptions<T> = {}): Informer<T> {
    const informer = this.acquire(request, options)
    this.watchList.push({informer, toKeys, onUpdate: options.onUpdate, updateKeys: options.updateKeys} as unknown as Watch)
    return informer
  }

  /**
   * Objects this controller owns (controller-runtime's `Owns()`): a change or delete of one reconciles the owner its
   * ownerReferences name (same namespace; owner kinds `ownerKind` of `ownerApiVersion`).
   */
  owns<T extends KubeObject>(request: InformerRequest<T>, owner: {kind: string; apiVersion: string}, options: WatchOptions<T> = {}): Informer<T> {
    return this.watches(request, (object) => ownerKeys(object, owner), options)
  }

  /** A cache the reconciler reads but whose changes trigger nothing; workers still wait for it to sync. */
  reads<T extends KubeObject>(request: InformerRequest<T>, options: WatchOptions<T> = {}): Informer<T> {
    const informer = this.acquire(request, options)
    this.readList.push(informer as unknown as Informer<KubeObject>)
    return informer
  }

  /** Builds the controller and adds it to the manager (it runs while this process leads, unless needLeaderElection is false). */
  complete(reconcile: Reconciler, options: CompleteOptions = {}): RunningController {
    if (this.built) throw new Error(`controller ${this.name} is built already`)
    this.built = true
    const manager = this.manager
    const controller = new Controller({
      name: this.name,
      reconcile,
      watches: this.watchList,
      reads: this.readList,
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? manager.maxConcurrentReconciles,
      resyncPeriodMs: options.resyncPeriodMs,
      needLeaderElection: options.needLeaderElection,
      logger: manager.logger,
      metrics: manager.metrics,
      clock: manager.clock,
    })
    manager.addController(controller)
    const acquired = this.acquired
    let stopped: Promise<void> | undefined
    return {
      controller,
      logger: manager.logger.child({controller: this.name}),
      recorder: manager.recorder(this.name),
      enqueue: (key) => controller.enqueue(key),
      stop: () => (stopped ??= (async () => {
        await manager.removeController(controller)
        await Promise.all(acquired.map((informer) => manager.releaseInformer(informer)))
      })()),
    }
  }

  private acquire<T extends KubeObject>(request: InformerRequest<T>, options: WatchOptions<T>): Informer<T> {
    if (this.built) throw new Error(`controller ${this.name} is built already`)
    const informer = this.manager.informer(request)
    for (const [name, fn] of Object.entries(options.indexes ?? {})) informer.cache.addIndex(name, fn)
    this.acquired.push(informer as unknown as Informer<KubeObject>)
    return informer
  }
}

/** The keys (`namespace/name`) of the owners of `kind` and `apiVersion` an object's ownerReferences name (pure). */
export function ownerKeys(object: KubeObject, owner: {kind: string; apiVersion: string}): string[] {
  const references = object.metadata?.ownerReferences
  if (!Array.isArray(references)) return []
  const namespace = object.metadata?.namespace
  return (references as Array<{kind?: string; apiVersion?: string; name?: string}>)
    .filter((reference) => reference.kind === owner.kind && reference.apiVersion === owner.apiVersion && reference.name)
    .map((reference) => (namespace ? `${namespace}/${reference.name}` : reference.name!))
}
