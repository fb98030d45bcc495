/**
 * The parts of a running discovery (engine.ts's startDiscovery wires them to a controller):
 *
 * - `SourceView`: the source informers as `SourceCaches`, and what the plan and the Events need of one source;
 * - `TargetKeys`: which of the target CRs are this discovery's, their group, and which events of them need a pass;
 * - `DiscoveryReconciler`: one group's reconcile — desired state, current CRs, plan, execute, report.
 */
import type {Clock} from '../../lib/clock.js'
import {API_VERSION, type CustomObject} from '../../crds/define.js'
import type {KubeClient, KubeObject, ResourceRef} from '../../kube/client.js'
import type {EventRecorder} from '../../kube/events.js'
import {labels} from '../conventions.js'
import {objectKey, type ObjectCache} from '../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../runtime/controller.js'
import type {Informer} from '../runtime/informer.js'
import type {WriteExpectations} from '../runtime/write-expectations.js'
import type {DiscoveryDeclaration, DiscoverySource, Settings, SourceCaches} from './declaration.js'
import {execute, failureError, type Failure} from './executor.js'
import {crKey, type AppliedMemo, type ReportedProblems, type SeenDeletions} from './memory.js'
import {planDiscovery, type Action, type CurrentObject, type CurrentSource, type DesiredState, type ObjectRef, type SourceKnowledge} from './plan.js'

export type TargetObject = CustomObject<unknown, Record<string, unknown>>

/** A discovered CR as the plan sees it (pure). */
export function toCurrent(object: TargetObject, source: ObjectRef | undefined): CurrentObject {
  return {
    name: object.metadata.name,
    namespace: object.metadata.namespace,
    resourceVersion: object.metadata.resourceVersion,
    labels: object.metadata.labels ?? {},
    annotations: object.metadata.annotations ?? {},
    ownerUids: (object.metadata.ownerReferences ?? []).map((owner) => owner.uid),
    finalizers: object.metadata.finalizers ?? [],
    deleting: Boolean(object.metadata.deletionTimestamp),
    spec: object.spec,
    status: object.status,
    source,
  }
}

/** The source informers of one discovery, and what the plan and the Events need of a source. */
export class SourceView {
  private readonly informers = new Map<string, Informer<KubeObject>>()
  private readonly byKind: Map<string, DiscoverySource>
  /** Read access for the declaration's pure functions. */
  readonly caches: SourceCaches = {
    list: (id, namespace) => {
      const cache = this.informers.get(id)?.cache
      return !cache ? [] : namespace === undefined ? cache.list() : cache.listNamespace(namespace)
    },
    get: (id, key) => this.informers.get(id)?.cache.get(key),
    byIndex: (id, index, value) => this.informers.get(id)?.cache.byIndex(index, value) ?? [],
  }

  constructor(private readonly sources: readonly DiscoverySource[], private readonly seenDeleted: Pick<SeenDeletions, 'has'>) {
    this.byKind = new Map(sources.map((source) => [source.kind, source]))
  }

  add(id: string, informer: Informer<KubeObject>): void {
    this.informers.set(id, informer)
  }

  informer(id: string): Informer<KubeObject> {
    const informer = this.informers.get(id)
    if (!informer) throw new Error(`no informer for source ${id}`)
    return informer
  }

  finalizerOf(kind: string): string | undefined {
    return this.byKind.get(kind)?.finalizer
  }

  cached(ref: ObjectRef): KubeObject | undefined {
    const source = this.byKind.get(ref.kind)
    return source ? this.caches.get(source.id, ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name) : undefined
  }

  state(ref: ObjectRef): CurrentSource | undefined {
    const metadata = this.cached(ref)?.metadata as {finalizers?: string[]; deletionTimestamp?: string; resourceVersion?: string} | undefined
    return metadata ? {ref, resourceVersion: metadata.resourceVersion, finalizers: metadata.finalizers ?? [], deleting: Boolean(metadata.deletionTimestamp)} : undefined
  }

  knowledge(ref: ObjectRef): SourceKnowledge {
    if (this.cached(ref)) return 'present'
    return this.seenDeleted.has(ref) ? 'deleted' : 'unknown'
  }

  /** What Events and patches need of a source: its live identity where cached. */
  object(ref: ObjectRef): KubeObject {
    const cached = this.cached(ref)
    return {
      apiVersion: ref.apiVersion ?? this.byKind.get(ref.kind)?.apiVersion,
      kind: ref.kind,
      metadata: {name: ref.name, namespace: ref.namespace, uid: cached?.metadata?.uid ?? ref.uid, resourceVersion: cached?.metadata?.resourceVersion},
    }
  }

  resource(ref: ObjectRef): ResourceRef {
    const source = this.byKind.get(ref.kind)
    if (!source) throw new Error(`no source of kind ${ref.kind}`)
    return {...source.request.resource, namespace: ref.namespace, name: ref.name}
  }

  /** The cached sources that carry their kind's finalizer (released when the discovery stops for good). */
  heldFinalizers(): Array<{source: DiscoverySource; ref: ResourceRef}> {
    return this.sources.filter((source) => source.finalizer).flatMap((source) =>
      (this.informers.get(source.id)?.cache.list() ?? [])
        .filter((object) => ((object.metadata?.finalizers ?? []) as string[]).includes(source.finalizer!))
        .map((object) => ({source, ref: {...source.request.resource, namespace: object.metadata?.namespace, name: object.metadata!.name!}})))
  }
}

/**
 * Which target CRs are this discovery's: those with its labels. They are picked out here rather than with a label
 * selector, so the informer is the one the kind's API sync watches too: one cache and one watch of each CR, not two.
 */
export class TargetKeys<S> {
  private readonly labels: Record<string, string>

  constructor(private readonly declaration: DiscoveryDeclaration<S>, private readonly applied: Pick<AppliedMemo, 'isEcho'>) {
    this.labels = {[labels.discovered]: 'true', ...declaration.targetLabels}
  }

  ours(object: TargetObject): boolean {
    return Object.entries(this.labels).every(([key, value]) => object.metadata.labels?.[key] === value)
  }

  /** The group index: a CR of ours is filed under its group. */
  group(object: TargetObject): string[] {
    return this.ours(object) ? [this.declaration.targetGroup(object)] : []
  }

  /** The group an event of this CR reconciles; none for our own applies coming back as events. */
  of(object: TargetObject): string[] {
    if (!this.ours(object)) return []
    return this.applied.isEcho(objectKey(object), () => toCurrent(object, this.declaration.targetSource(object))) ? [] : [this.declaration.targetGroup(object)]
  }

  /** An update: a CR taken over by another group makes the group it left look again (e.g. to release its source). */
  ofUpdate(old: TargetObject, object: TargetObject): string[] {
    const before = this.ours(old) ? this.declaration.targetGroup(old) : undefined
    const now = this.ours(object) ? this.declaration.targetGroup(object) : undefined
    return before === undefined || before === now ? this.of(object) : [...this.of(object), before]
  }
}

export interface DiscoveryReconcilerOptions<S> {
  declaration: DiscoveryDeclaration<S>
  settings: Settings<S>
  client: KubeClient
  /** The operator's namespace. */
  namespace: string
  /** The manager's clock. */
  clock: Clock
  sources: SourceView
  targets: ObjectCache<TargetObject>
  /** The name of the targets' group index. */
  groupIndex: string
  targetResource: ResourceRef
  keys: TargetKeys<S>
  applied: AppliedMemo
  unseenWrites: WriteExpectations
  seenDeleted: SeenDeletions
  reported: ReportedProblems
  events: Pick<EventRecorder, 'record'>
  enqueue(group: string): void
}

/** One group's reconcile: what should exist, what does, the plan between them, its writes and their failures. */
export class DiscoveryReconciler<S> {
  constructor(private readonly options: DiscoveryReconcilerOptions<S>) {}

  async reconcile({key: group, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    const {targets, groupIndex, unseenWrites} = this.options
    for (const object of targets.byIndex(groupIndex, group)) {
      if (unseenWrites.behind(objectKey(object), object.metadata.resourceVersion)) return {requeueAfterMs: 50}
    }
    const now = this.options.clock.now()
    const desired = await this.desired(group, now, signal)
    await this.options.reported.report(this.options.events, desired, (ref) => this.options.sources.object(ref))
    const {current, handingOver} = this.current(group, desired)
    const plan = this.plan(desired, current, handingOver, now)
    const failures = await execute(plan.actions, {
      client: this.options.client,
      signal,
      kind: this.options.declaration.target.kind,
      syncFinalizer: this.options.declaration.syncFinalizer,
      targetResource: this.options.targetResource,
      sourceResource: (ref) => this.options.sources.resource(ref),
      onApplied: (object, before) => this.options.applied.remember(object, before),
      onWritten: (object, before, after) => unseenWrites.written(crKey(object), before, after),
      currentVersion: (object) => {
        const cached = targets.get(crKey(object))
        return cached && this.options.keys.ours(cached) ? cached.metadata.resourceVersion : undefined
      },
      logger,
    })
    await this.recordFailures(failures)
    // Every other action of this group ran; the key is retried with backoff (or soon, for conflicts).
    const error = failureError(failures, plan.actions.length)
    if (error !== undefined) throw error
    return plan.requeueAfterMs !== undefined ? {requeueAfterMs: plan.requeueAfterMs} : undefined
  }

  /**
   * A source was deleted: remembered (its CRs go at once) unless no CR can come from its kind, and its reported
   * problems forgotten.
   */
  sourceDeleted(source: DiscoverySource, object: KubeObject): void {
    const ref = {kind: source.kind, namespace: object.metadata?.namespace, name: object.metadata?.name ?? ''}
    if (!source.inputOnly) this.options.seenDeleted.see(ref, this.options.clock.now())
    this.options.reported.forget(ref)
  }

  /** A CR of ours was deleted: forgotten, and its group reconciled (it may have to come back). */
  targetDeleted(object: TargetObject): void {
    if (!this.options.keys.ours(object)) return
    this.options.applied.forget(objectKey(object))
    this.options.unseenWrites.forget(objectKey(object))
    this.options.enqueue(this.options.declaration.targetGroup(object))
  }

  /** The declaration's desired state of the group, with this discovery's labels on every CR. */
  private async desired(group: string, now: number, signal: AbortSignal): Promise<DesiredState> {
    const {declaration, sources, client, settings, namespace} = this.options
    const loaded = declaration.load ? await declaration.load(group, sources.caches, {client, signal}) : undefined
    const found = declaration.desired(group, sources.caches, settings.own, {namespace, now, loaded})
    return declaration.targetLabels
      ? {...found, objects: found.objects.map((object) => ({...object, labels: {...object.labels, ...declaration.targetLabels}}))}
      : found
  }

  /**
   * The group's CRs, except those another group claims now (`handingOver`): that group is reconciled and takes them
   * over, and until its apply has replaced their owner they hold this group's source finalizer (the plan's rule).
   */
  private current(group: string, desired: DesiredState): {current: CurrentObject[]; handingOver: CurrentObject[]} {
    const {declaration, sources, settings} = this.options
    const wanted = new Set(desired.objects.map(crKey))
    const current: CurrentObject[] = []
    const handingOver: CurrentObject[] = []
    for (const object of this.options.targets.byIndex(this.options.groupIndex, group)) {
      const takenOver = !wanted.has(objectKey(object)) && !object.metadata.deletionTimestamp
        ? declaration.claimedElsewhere?.(object, sources.caches, settings.own)
        : undefined
      const cached = toCurrent(object, declaration.targetSource(object))
      if (takenOver !== undefined && takenOver !== group) {
        this.options.enqueue(takenOver)
        handingOver.push(cached)
      } else {
        current.push(cached)
      }
    }
    return {current, handingOver}
  }

  private plan(desired: DesiredState, current: CurrentObject[], handingOver: CurrentObject[], now: number): {actions: Action[]; requeueAfterMs?: number} {
    const {declaration, sources, settings, applied} = this.options
    return planDiscovery({
      desired,
      current,
      handingOver,
      sourceState: (ref) => sources.state(ref),
      sourceKnowledge: (ref) => sources.knowledge(ref),
      sourceFinalizer: (kind) => sources.finalizerOf(kind),
      syncFinalizer: declaration.syncFinalizer ? {name: declaration.syncFinalizer, enabled: settings.sync} : undefined,
      stale: {enabled: settings.stale.enabled, thresholdMs: settings.stale.thresholdMinutes * 60_000},
      now,
      alreadyApplied: (object, current) => applied.alreadyApplied(object, current),
    })
  }

  /** Each failure → a Warning Event on the object that caused it. */
  private async recordFailures(failures: readonly Failure[]): Promise<void> {
    for (const failure of failures) {
      const about = failure.source
        ? this.options.sources.object(failure.source)
        : failure.target ? {apiVersion: API_VERSION, kind: this.options.declaration.target.kind, metadata: {name: failure.target.name, namespace: failure.target.namespace}} : undefined
      if (about) await this.options.events.record(about, 'Warning', 'DiscoveryFailed', failure.message)
    }
  }
}
