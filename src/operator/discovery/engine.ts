/**
 * The generic discovery feature: source objects (Ingress, HTTPRoute, Node, PersistentVolume, …) → discovered
 * polycrate.io CRs. A kind is a declaration plus pure functions:
 *
 * - `sources`: what to watch (selectors, transforms, metadata-only), which group keys a change touches, and which
 *   finalizer a source carries while it has CRs;
 * - `desired(group, caches, settings)`: the CRs, problems and source decisions of one group (pure);
 * - `targetGroup` / `targetSource`: where a discovered CR belongs and which source it came from;
 * - optionally `indexes` on a source (cache lookups for `groupsOf` and `desired`) and `claimedElsewhere` (a CR that
 *   moves to another group is handed over, never deleted and recreated).
 *
 * Keep groups small (one source where claims allow): a change then costs what it touches, not its namespace.
 *
 * The generic part does the rest, the same for every kind: informers through the controller builder (workers wait
 * for every cache), the plan (plan.ts, pure), one executor that applies each action on its own — a failure becomes
 * a Warning Event on the object that caused it and never holds back the other actions of the group — the label
 * `polycrate_discovered=true`, the sync finalizer on new CRs while API sync is on, Warning Events for problems
 * (once per change), the stale sweep (`stale_cleanup_minutes`, `cleanup.*`) and echo suppression of its own writes.
 */
import {API_VERSION, crdFullName, crdResource, type CrdDefinition, type CustomObject} from '../../crds/define.js'
import type {Logger} from '../../lib/logger.js'
import {KubeApiError, resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import type {EventRecorder} from '../../kube/events.js'
import {validateOperatorConfig, type OperatorConfig} from '../config/operator-config.js'
import {annotations, labels} from '../conventions.js'
import type {Feature, StopReason} from '../runtime/feature.js'
import {OWN, READ, type Permission} from '../permissions.js'
import type {IndexFunction} from '../runtime/cache.js'
import {objectKey} from '../runtime/cache.js'
import {forEachLimit} from '../runtime/concurrency.js'
import {WriteExpectations} from '../runtime/write-expectations.js'
import type {ReconcileContext} from '../runtime/controller.js'
import type {Informer, InformerRequest} from '../runtime/informer.js'
import type {Manager} from '../runtime/manager.js'
import {specMetadataOrDeletionChanged, type UpdatePredicate} from '../runtime/predicates.js'
import {
  planDiscovery,
  sameRef,
  upToDate,
  type Action,
  type CurrentObject,
  type CurrentSource,
  type DesiredObject,
  type DesiredState,
  type ObjectRef,
  type SourceKnowledge,
} from './plan.js'

/** Writes one group's reconcile makes at once (a namespace may hold thousands of Ingresses). */
const WRITE_CONCURRENCY = 8
/** How long a reconcile waits for the cache to show this process' own write to a CR (then it goes on regardless). */
const OWN_WRITE_WAIT_MS = 5000
/** How long a source deletion seen by this process counts as "seen" (its CRs are deleted long before). */
const SEEN_DELETED_TTL_MS = 60 * 60 * 1000
const GROUP_INDEX = 'discovery-group'

/** Read access to the source caches for the pure `desired` function (plain maps in unit tests). */
export interface SourceCaches {
  /** Objects of one source (by `id`), optionally of one namespace. */
  list(id: string, namespace?: string): KubeObject[]
  /** One object of one source by key (`namespace/name`, or `name` when cluster-scoped). */
  get(id: string, key: string): KubeObject | undefined
  /** Objects of one source filed under `value` in one of the source's `indexes`. */
  byIndex(id: string, index: string, value: string): KubeObject[]
}

export interface DiscoverySource {
  /** Name the declaration refers to it by (`ingress`, `node`). */
  id: string
  kind: string
  /** apiVersion of the source objects (lists leave it out; Events and owner references need it). */
  apiVersion: string
  request: InformerRequest<KubeObject>
  /**
   * The groups a change of this object touches (reconciled by key). An update reconciles the groups of the old and
   * of the new object (a host given up is taken over by another group).
   */
  groupsOf(object: KubeObject, caches: SourceCaches): string[]
  /** Cache indexes `groupsOf`, `desired` and `claimedElsewhere` look this source up by (`caches.byIndex`). */
  indexes?: Record<string, IndexFunction<KubeObject>>
  /** The finalizer a source of this kind carries while it has CRs (so its deletion is never missed). */
  finalizer?: string
  onUpdate?: UpdatePredicate<KubeObject>
}

export interface DiscoveryContext {
  /** The operator's namespace (where CRs of cluster-scoped sources live). */
  namespace: string
  /** Now, in ms (the manager's clock: tests move it instead of waiting). */
  now: number
  /** What the declaration's `load` read for this group (undefined without `load`). */
  loaded?: unknown
}

/** Sweep interval of sources whose config section has no `stale_cleanup_minutes` of its own (nodes, PVs). */
export const DEFAULT_SWEEP_MINUTES = 10

export interface DiscoveryDeclaration<Settings> {
  /** Feature and controller name (`endpoint-discovery`): status.controllers, metrics, logs. */
  name: string
  target: CrdDefinition
  /** Namespace of the target informer: the operator's namespace for CRs of cluster-scoped sources, else all. */
  targetNamespace?: (operatorNamespace: string) => string | undefined
  /**
   * Labels that set this feature's CRs apart where two features discover the same kind (Velero and CloudNativePG
   * Backups): put on every CR it applies, and the only CRs it looks at.
   */
  targetLabels?: Record<string, string>
  enabled(config: OperatorConfig): boolean
  requiredCrds?: readonly string[]
  /** What the pure functions read from the config and the cluster's CRDs; a change restarts the feature. */
  settings(config: OperatorConfig, isEstablished: (crd: string) => boolean): Settings
  /** Interval of the stale sweep (the section's `stale_cleanup_minutes`, else `DEFAULT_SWEEP_MINUTES`). */
  staleCleanupMinutes(config: OperatorConfig): number
  sources(settings: Settings): DiscoverySource[]
  /** The group of a discovered CR (reconciled when it changes). */
  targetGroup(object: CustomObject<unknown, unknown>): string
  /** The source a discovered CR came from, as far as the CR says. */
  targetSource(object: CustomObject<unknown, unknown>): ObjectRef | undefined
  /**
   * Reads what `desired` needs beyond the caches, before it runs (e.g. the data of the few Secrets of a group that
   * are watched metadata-only); the result is `context.loaded`. Takes the reconcile's signal.
   */
  load?(group: string, caches: SourceCaches, io: {client: KubeClient; signal: AbortSignal}): Promise<unknown>
  /** Pure: the CRs, problems and source decisions of one group. */
  desired(group: string, caches: SourceCaches, settings: Settings, context: DiscoveryContext): DesiredState
  /**
   * Where a CR can move between groups (an Endpoint CR whose host another source now wins): the group that wants
   * this CR now, if not its own. Such a CR is neither deleted nor orphaned by its old group; the group that wants it
   * is reconciled and takes it over with its apply. Pure.
   */
  claimedElsewhere?(object: CustomObject<unknown, unknown>, caches: SourceCaches, settings: Settings): string | undefined
  /** The sync feature's finalizer: on every new CR while `api_sync.enabled`, so the CR never goes unsynced. */
  syncFinalizer?: string
}

type TargetObject = CustomObject<unknown, Record<string, unknown>>

interface Settings<S> {
  own: S
  sync: boolean
  stale: {enabled: boolean; thresholdMinutes: number}
  sweepMinutes: number
}

/**
 * A finalizer a discovery put on a user's object (an Ingress, an HTTPRoute) is released when the discovery stops for
 * good — disabled, or a CRD it needs gone: nothing would remove it
 * later, so the object's deletion (and its namespace's) would hang. Its CRs and their API objects stay. Read live and
 * patched with its resourceVersion (a conflict → read again), so other finalizers are kept.
 */
async function releaseSourceFinalizers(manager: Manager, name: string, held: Array<{source: DiscoverySource; ref: ResourceRef}>, why: StopReason, logger: Logger): Promise<void> {
  const recorder = manager.recorder(name)
  await forEachLimit(held, 4, async ({source, ref}) => {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const live = await manager.client.getOrUndefined<KubeObject>(ref)
        const list = (live?.metadata?.finalizers ?? []) as string[]
        if (!live || !list.includes(source.finalizer!)) return
        await manager.client.mergePatch(ref, {metadata: {finalizers: list.filter((finalizer) => finalizer !== source.finalizer), resourceVersion: live.metadata?.resourceVersion}})
        await recorder.record(live, 'Normal', 'FinalizerReleased', `${name} is not running (${why.message}): its finalizer ${source.finalizer} is removed so deleting this ${source.kind} does not wait on it.`).catch(() => {})
        return
      } catch (error) {
        if (error instanceof KubeApiError && (error.status === 409 || error.status === 404)) continue
        logger.warn(`could not release the finalizer ${source.finalizer}`, {object: `${ref.namespace ?? ''}/${ref.name}`, error: (error as Error).message})
        return
      }
    }
  })
  if (held.length > 0) logger.info('source finalizers released', {finalizer: [...new Set(held.map(({source}) => source.finalizer))].join(', '), count: held.length, why: why.message})
}

/**
 * The same for a discovery that is not running at all (the operator started with it disabled or missing a CRD): its
 * finalizers of an earlier run are found by listing its finalizer-carrying sources (paged, metadata only). A source
 * whose CRD is gone has no objects left to hold.
 */
async function releaseLeftoverFinalizers<S>(declaration: DiscoveryDeclaration<S>, manager: Manager, config: OperatorConfig, why: StopReason): Promise<void> {
  const sources = declaration.sources(declaration.settings(config, () => true)).filter((source) => source.finalizer)
  const held: Array<{source: DiscoverySource; ref: ResourceRef}> = []
  for (const source of sources) {
    const resource = source.request.resource
    let next: string | undefined
    try {
      do {
        const page = await manager.client.request<{items?: KubeObject[]; metadata?: {continue?: string}}>({
          path: resourcePath({...resource, namespace: undefined, name: undefined}), query: {limit: 500, continue: next},
          accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
        })
        for (const object of page.items ?? []) {
          if (((object.metadata?.finalizers ?? []) as string[]).includes(source.finalizer!)) held.push({source, ref: {...resource, namespace: object.metadata?.namespace, name: object.metadata!.name!}})
        }
        next = page.metadata?.continue || undefined
      } while (next)
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) continue // its CRD is gone, and its objects with it
      manager.logger.warn(`could not look for leftover ${source.finalizer} finalizers`, {feature: declaration.name, error: (error as Error).message})
    }
  }
  await releaseSourceFinalizers(manager, declaration.name, held, why, manager.logger)
}

export function defineDiscovery<S>(declaration: DiscoveryDeclaration<S>): Feature {
  const settingsOf = (config: OperatorConfig, isEstablished: (crd: string) => boolean): Settings<S> => ({
    own: declaration.settings(config, isEstablished),
    sync: config.api_sync.enabled,
    stale: {enabled: config.cleanup.enabled, thresholdMinutes: config.cleanup.stale_threshold_minutes},
    sweepMinutes: declaration.staleCleanupMinutes(config),
  })
  return {
    name: declaration.name,
    enabled: declaration.enabled,
    // The CRD it writes: without it every reconcile would fail with a bare 404.
    requiredCrds: [crdFullName(declaration.target), ...(declaration.requiredCrds ?? [])],
    permissions: discoveryPermissions(declaration),
    settings: settingsOf,
    start: (manager, config, isEstablished) => startDiscovery(declaration, manager, settingsOf(config, isEstablished)),
    releaseLeftovers: (manager, config, why) => releaseLeftoverFinalizers(declaration, manager, config, why),
  }
}

/**
 * What a discovery does in the cluster (derived from its declaration, with the default settings and every optional
 * CRD present): reads its sources, patches the finalizers (and deprecated labels) of those that carry one, owns its
 * target CRs and their status.
 */
export function discoveryPermissions<S>(declaration: DiscoveryDeclaration<S>): Permission[] {
  const defaults = validateOperatorConfig({})
  if (!defaults.ok) throw new Error(`the default OperatorConfig is invalid: ${defaults.problems.join('; ')}`)
  const sources = declaration.sources(declaration.settings(defaults.config, () => true))
  const target = crdResource(declaration.target)
  return [
    ...sources.map((source): Permission => ({
      group: source.request.resource.group,
      resource: source.request.resource.plural,
      verbs: source.finalizer ? [...READ, 'patch'] : READ,
    })),
    {group: target.group, resource: target.plural, verbs: OWN},
    {group: target.group, resource: `${target.plural}/status`, verbs: ['get', 'patch', 'update']},
  ]
}

function startDiscovery<S>(declaration: DiscoveryDeclaration<S>, manager: Manager, settings: Settings<S>) {
  const sources = declaration.sources(settings.own)
  const targetResource: ResourceRef = {...crdResource(declaration.target), namespace: declaration.targetNamespace?.(manager.namespace)}
  const targetLabels = {[labels.discovered]: 'true', ...declaration.targetLabels}
  const builder = manager.controller(declaration.name)
  const informers = new Map<string, Informer<KubeObject>>()
  const caches: SourceCaches = {
    list: (id, namespace) => {
      const cache = informers.get(id)?.cache
      return !cache ? [] : namespace === undefined ? cache.list() : cache.listNamespace(namespace)
    },
    get: (id, key) => informers.get(id)?.cache.get(key),
    byIndex: (id, index, value) => informers.get(id)?.cache.byIndex(index, value) ?? [],
  }
  const sourceOfKind = new Map(sources.map((source) => [source.kind, source]))

  /** What this process last applied per CR key, and the cached resourceVersion it replaced. */
  const applied = new Map<string, {json: string; wanted: DesiredObject & {finalizers?: string[]}; before: string | undefined}>()
  /** CRs this process wrote whose new version the cache does not show yet: their group waits for it. */
  const unseenWrites = new WriteExpectations(OWN_WRITE_WAIT_MS)
  /** Sources whose deletion this process saw (`kind/namespace/name` → when). */
  const seenDeleted = new Map<string, number>()
  /** Problems last reported per source, so each change of a source's problems is one set of Events. */
  const reported = new Map<string, string>()
  const refKey = (ref: ObjectRef) => `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`
  /** A CR's cache key (`namespace/name`, as objectKey makes it). */
  const crKey = (object: {namespace?: string; name: string}) => (object.namespace ? `${object.namespace}/${object.name}` : object.name)

  // The CRs of this discovery are those with its labels. They are picked out here rather than with a label selector,
  // so the informer is the one the kind's API sync watches too: one cache and one watch of each CR, not two.
  const ours = (object: TargetObject) => Object.entries(targetLabels).every(([key, value]) => object.metadata.labels?.[key] === value)
  const groupIndex = `${GROUP_INDEX}:${declaration.name}`
  const targetKeys = (object: TargetObject) => {
    if (!ours(object)) return []
    // Our own applies come back as events: no new pass for them.
    const memo = applied.get(objectKey(object))
    return memo && !object.metadata.deletionTimestamp && upToDate(toCurrent(object), memo.wanted) ? [] : [declaration.targetGroup(object)]
  }
  const targets = builder.watches<TargetObject>(
    {resource: targetResource, kind: declaration.target.kind},
    targetKeys,
    {
      onUpdate: specMetadataOrDeletionChanged,
      indexes: {[groupIndex]: ((object: TargetObject) => (ours(object) ? [declaration.targetGroup(object)] : [])) as IndexFunction<TargetObject>},
      // A CR taken over by another group: the group it left looks again (e.g. to release its source).
      updateKeys: (old, object) => {
        const before = ours(old) ? declaration.targetGroup(old) : undefined
        const now = ours(object) ? declaration.targetGroup(object) : undefined
        return before === undefined || before === now ? targetKeys(object) : [...targetKeys(object), before]
      },
    },
  )
  for (const source of sources) {
    informers.set(source.id, builder.watches(source.request, (object) => source.groupsOf(object, caches), {
      onUpdate: source.onUpdate,
      indexes: source.indexes,
      updateKeys: (old, object) => [...new Set([...source.groupsOf(object, caches), ...source.groupsOf(old, caches)])],
    }))
  }

  const toCurrent = (object: TargetObject): CurrentObject => ({
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
    source: declaration.targetSource(object),
  })
  const cachedSource = (ref: ObjectRef): KubeObject | undefined => {
    const source = sourceOfKind.get(ref.kind)
    return source ? caches.get(source.id, ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name) : undefined
  }
  const sourceState = (ref: ObjectRef): CurrentSource | undefined => {
    const object = cachedSource(ref)
    const metadata = object?.metadata as {finalizers?: string[]; deletionTimestamp?: string; resourceVersion?: string} | undefined
    return metadata ? {ref, resourceVersion: metadata.resourceVersion, finalizers: metadata.finalizers ?? [], deleting: Boolean(metadata.deletionTimestamp)} : undefined
  }
  const sourceKnowledge = (ref: ObjectRef): SourceKnowledge => {
    if (cachedSource(ref)) return 'present'
    return seenDeleted.has(refKey(ref)) ? 'deleted' : 'unknown'
  }
  /** What Events and patches need of a source: its live identity where cached. */
  const sourceObject = (ref: ObjectRef): KubeObject => {
    const cached = cachedSource(ref)
    return {
      apiVersion: ref.apiVersion ?? sourceOfKind.get(ref.kind)?.apiVersion,
      kind: ref.kind,
      metadata: {name: ref.name, namespace: ref.namespace, uid: cached?.metadata?.uid ?? ref.uid, resourceVersion: cached?.metadata?.resourceVersion},
    }
  }
  const sourceResource = (ref: ObjectRef): ResourceRef => {
    const source = sourceOfKind.get(ref.kind)
    if (!source) throw new Error(`no source of kind ${ref.kind}`)
    return {...source.request.resource, namespace: ref.namespace, name: ref.name}
  }
  const targetObject = (target: CurrentObject): KubeObject => ({
    apiVersion: API_VERSION,
    kind: declaration.target.kind,
    metadata: {name: target.name, namespace: target.namespace},
  })

  const reconcile = async ({key: group, logger, signal}: ReconcileContext) => {
    for (const object of targets.cache.byIndex(groupIndex, group)) {
      if (unseenWrites.behind(objectKey(object), object.metadata.resourceVersion)) return {requeueAfterMs: 50}
    }
    const now = manager.clock()
    const loaded = declaration.load ? await declaration.load(group, caches, {client: manager.client, signal}) : undefined
    const found = declaration.desired(group, caches, settings.own, {namespace: manager.namespace, now, loaded})
    const desired = declaration.targetLabels
      ? {...found, objects: found.objects.map((object) => ({...object, labels: {...object.labels, ...declaration.targetLabels}}))}
      : found
    await reportProblems(running.recorder, desired, reported, sourceObject)
    const wanted = new Set(desired.objects.map(crKey))
    const current: CurrentObject[] = []
    for (const object of targets.cache.byIndex(groupIndex, group)) {
      const takenOver = !wanted.has(objectKey(object)) && !object.metadata.deletionTimestamp
        ? declaration.claimedElsewhere?.(object, caches, settings.own)
        : undefined
      if (takenOver !== undefined && takenOver !== group) running.enqueue(takenOver)
      else current.push(toCurrent(object))
    }
    const plan = planDiscovery({
      desired,
      current,
      sourceState,
      sourceKnowledge,
      sourceFinalizer: (kind) => sourceOfKind.get(kind)?.finalizer,
      syncFinalizer: declaration.syncFinalizer ? {name: declaration.syncFinalizer, enabled: settings.sync} : undefined,
      stale: {enabled: settings.stale.enabled, thresholdMs: settings.stale.thresholdMinutes * 60_000},
      now,
      alreadyApplied: (object, current) => {
        const memo = applied.get(crKey(object))
        return memo !== undefined && memo.json === JSON.stringify(object) && memo.before === current?.resourceVersion
      },
    })
    const failures = await execute(plan.actions, {
      client: manager.client,
      signal,
      declaration,
      targetResource,
      sourceResource,
      onApplied: (object, before) => applied.set(crKey(object), {json: JSON.stringify(object), wanted: object, before}),
      onWritten: (object, before, after) => {
        unseenWrites.written(crKey(object), before, after)
      },
      currentVersion: (object) => {
        const cached = targets.cache.get(crKey(object))
        return cached && ours(cached) ? cached.metadata.resourceVersion : undefined
      },
      logger,
    })
    for (const failure of failures) {
      const about = failure.source ? sourceObject(failure.source) : failure.target ? targetObject(failure.target) : undefined
      if (about) await running.recorder.record(about, 'Warning', 'DiscoveryFailed', failure.message)
    }
    if (failures.length > 0) {
      // Every other action of this group ran; the key is retried with backoff (or soon, for conflicts).
      const conflict = failures.every((failure) => failure.error instanceof KubeApiError && failure.error.status === 409)
      if (conflict) throw failures[0]!.error
      throw new Error(`${failures.length} of ${plan.actions.length} discovery writes failed: ${failures.map((failure) => failure.message).join('; ')}`)
    }
    return plan.requeueAfterMs !== undefined ? {requeueAfterMs: plan.requeueAfterMs} : undefined
  }

  // A group is small (one source, or one Node): its reconcile mostly waits on the apiserver, so the I/O-bound
  // worker count applies, as for the API syncs.
  const running = builder.complete(reconcile, {resyncPeriodMs: settings.sweepMinutes * 60_000, maxConcurrentReconciles: manager.maxConcurrentSyncs})
  // Deletions this process sees: the CRs of a deleted source go at once (not after the orphan threshold); a
  // deleted CR is forgotten and its group reconciled (it may have to come back).
  const unsubscribe = [
    ...sources.map((source) => informers.get(source.id)!.addHandler({
      onDelete: (object) => {
        const now = Date.now()
        for (const [key, at] of seenDeleted) if (now - at > SEEN_DELETED_TTL_MS) seenDeleted.delete(key)
        const ref = {kind: source.kind, namespace: object.metadata?.namespace, name: object.metadata?.name ?? ''}
        seenDeleted.set(refKey(ref), now)
        reported.delete(refKey(ref))
      },
    })),
    targets.addHandler({
      onDelete: (object) => {
        if (!ours(object)) return
        applied.delete(objectKey(object))
        unseenWrites.forget(objectKey(object))
        running.enqueue(declaration.targetGroup(object))
      },
    }),
  ]
  return {
    async stop(why?: StopReason) {
      const release = why?.kind === 'disabled' || why?.kind === 'missing-crds'
      // Taken before the caches go; released after the workers stopped, so none puts one back.
      const held = !release ? [] : sources.filter((source) => source.finalizer).flatMap((source) =>
        (informers.get(source.id)?.cache.list() ?? [])
          .filter((object) => ((object.metadata?.finalizers ?? []) as string[]).includes(source.finalizer!))
          .map((object) => ({source, ref: {...source.request.resource, namespace: object.metadata?.namespace, name: object.metadata!.name!}})))
      for (const off of unsubscribe) off()
      await running.stop()
      if (release) await releaseSourceFinalizers(manager, declaration.name, held, why, running.logger)
    },
  }
}

/** Problems → Events on their source, once per change of that source's set of problems. */
async function reportProblems(
  recorder: EventRecorder,
  desired: DesiredState,
  reported: Map<string, string>,
  sourceObject: (ref: ObjectRef) => KubeObject,
): Promise<void> {
  for (const decision of desired.sources) {
    const problems = desired.problems.filter((problem) => sameRef(problem.source, decision.ref))
    const key = `${decision.ref.kind}/${decision.ref.namespace ?? ''}/${decision.ref.name}`
    const fingerprint = JSON.stringify(problems.map(({type, reason, message}) => [type, reason, message]))
    if ((reported.get(key) ?? '[]') === fingerprint) continue
    reported.set(key, fingerprint)
    for (const problem of problems) await recorder.record(sourceObject(problem.source), problem.type ?? 'Warning', problem.reason, problem.message)
  }
}

interface Failure {
  error: unknown
  message: string
  source?: ObjectRef
  target?: CurrentObject
}

interface ExecuteContext<S> {
  client: KubeClient
  signal: AbortSignal
  declaration: DiscoveryDeclaration<S>
  targetResource: ResourceRef
  sourceResource(ref: ObjectRef): ResourceRef
  onApplied(object: DesiredObject & {finalizers?: string[]}, before: string | undefined): void
  /** A write to a CR: the resourceVersion the cache showed before it, and the one it made. */
  onWritten(object: {namespace?: string; name: string}, before: string | undefined, after: string | undefined): void
  currentVersion(object: {namespace?: string; name: string}): string | undefined
  logger: ReconcileContext['logger']
}

/** Runs the plan: source finalizers first, then CR writes, then releases; each action on its own. */
async function execute<S>(actions: readonly Action[], context: ExecuteContext<S>): Promise<Failure[]> {
  const {client, signal, declaration, logger} = context
  const failures: Failure[] = []
  const kind = declaration.target.kind
  const target = (object: {namespace?: string; name: string}, subresource?: string): ResourceRef =>
    ({...context.targetResource, namespace: object.namespace, name: object.name, subresource})
  // Source finalizers before any CR exists; a CR before its status; releases last.
  const phases: Array<Action['type'][]> = [
    ['addSourceFinalizer'],
    ['apply', 'delete', 'markOrphan', 'clearOrphanMark', 'releaseSyncFinalizer', 'migrateSource'],
    ['applyStatus', 'removeSourceFinalizer'],
  ]
  for (const phase of phases) {
    await forEachLimit(actions.filter((action) => phase.includes(action.type)), WRITE_CONCURRENCY, async (action) => {
      if (signal.aborted) return
      try {
        await run(action)
      } catch (error) {
        if (signal.aborted) return
        if (error instanceof KubeApiError && error.status === 404 && (action.type === 'delete' || action.type === 'releaseSyncFinalizer')) return
        failures.push(describeFailure(action, error, kind))
      }
    })
  }
  return failures

  async function run(action: Action): Promise<void> {
    switch (action.type) {
      case 'addSourceFinalizer':
      case 'removeSourceFinalizer': {
        const list = action.type === 'addSourceFinalizer'
          ? [...action.source.finalizers, action.finalizer]
          : action.source.finalizers.filter((finalizer) => finalizer !== action.finalizer)
        await client.mergePatch(context.sourceResource(action.source.ref), {metadata: {finalizers: list, resourceVersion: action.source.resourceVersion}}, {signal})
        if (action.type === 'removeSourceFinalizer') logger.info('source released', {source: describeRef(action.source.ref)})
        return
      }
      case 'apply': {
        const {object} = action
        const before = context.currentVersion(object)
        const written = await client.apply(target(object), {
          apiVersion: API_VERSION,
          kind,
          metadata: {
            name: object.name,
            ...(object.namespace ? {namespace: object.namespace} : {}),
            labels: object.labels,
            ...(object.annotations ? {annotations: object.annotations} : {}),
            ...(object.ownerReferences ? {ownerReferences: object.ownerReferences} : {}),
            ...(object.finalizers ? {finalizers: object.finalizers} : {}),
          },
          spec: object.spec,
        }, {signal})
        context.onApplied(object, before)
        context.onWritten(object, before, written.metadata?.resourceVersion)
        logger.info(`${kind} applied`, {name: object.name, source: describeRef(object.source)})
        return
      }
      case 'applyStatus': {
        const before = context.currentVersion(action.object)
        const written = await client.apply(target(action.object, 'status'), {
          apiVersion: API_VERSION,
          kind,
          metadata: {name: action.object.name, ...(action.object.namespace ? {namespace: action.object.namespace} : {})},
          status: action.object.status,
        }, {signal})
        context.onWritten(action.object, before, written.metadata?.resourceVersion)
        return
      }
      case 'delete':
        await client.delete(target(action.target), {signal})
        logger.info(`${kind} deleted: ${action.why}`, {name: action.target.name})
        return
      case 'markOrphan':
      case 'clearOrphanMark':
        await client.mergePatch(target(action.target), {metadata: {annotations: {[annotations.orphanedSince]: action.type === 'markOrphan' ? action.since : null}}}, {signal})
        if (action.type === 'markOrphan') logger.info(`${kind} orphaned: its source is gone; deleted after cleanup.stale_threshold_minutes`, {name: action.target.name})
        return
      case 'releaseSyncFinalizer':
        await client.mergePatch(target(action.target), {
          metadata: {finalizers: action.target.finalizers.filter((finalizer) => finalizer !== declaration.syncFinalizer), resourceVersion: action.target.resourceVersion},
        }, {signal})
        logger.info(`${kind} released: API sync is off, so nothing is deleted from the Polycrate API`, {name: action.target.name})
        return
      case 'migrateSource':
        await client.mergePatch(context.sourceResource(action.source), action.patch, {signal})
        logger.info(action.description, {source: describeRef(action.source)})
    }
  }
}

function describeRef(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`
}

function describeFailure(action: Action, error: unknown, kind: string): Failure {
  const why = error instanceof Error ? error.message : String(error)
  switch (action.type) {
    case 'apply':
    case 'applyStatus':
      return {error, source: action.object.source, message: `Could not write ${kind} ${action.object.name} for this ${action.object.source.kind}: ${why}`}
    case 'delete':
    case 'markOrphan':
    case 'clearOrphanMark':
    case 'releaseSyncFinalizer':
      return {error, target: action.target, message: `Could not update or delete ${kind} ${action.target.name}: ${why}`}
    case 'addSourceFinalizer':
    case 'removeSourceFinalizer':
      return {error, source: action.source.ref, message: `Could not ${action.type === 'addSourceFinalizer' ? 'add' : 'remove'} the finalizer ${action.finalizer}: ${why}`}
    case 'migrateSource':
      return {error, source: action.source, message: `Could not ${action.description}: ${why}`}
  }
}
