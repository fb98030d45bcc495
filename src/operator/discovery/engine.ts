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
import {crdFullName, crdResource} from '../../crds/define.js'
import type {Logger} from '../../lib/logger.js'
import {KubeApiError, resourcePath, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {validateOperatorConfig, type OperatorConfig} from '../config/operator-config.js'
import type {Feature, StopReason} from '../runtime/feature.js'
import {OWN, READ, type Permission} from '../permissions.js'
import type {IndexFunction} from '../runtime/cache.js'
import {forEachLimit} from '../runtime/concurrency.js'
import {WriteExpectations} from '../runtime/write-expectations.js'
import type {Manager} from '../runtime/manager.js'
import {specMetadataOrDeletionChanged} from '../runtime/predicates.js'
import {AppliedMemo, ReportedProblems, SeenDeletions} from './memory.js'
import {DiscoveryReconciler, SourceView, TargetKeys, type TargetObject} from './reconciler.js'
import type {DiscoverySource, DiscoveryDeclaration, Settings} from './declaration.js'

export type {SourceCaches, DiscoverySource, DiscoveryContext, DiscoveryDeclaration, Settings} from './declaration.js'
export {DEFAULT_SWEEP_MINUTES} from './declaration.js'

/** How long a reconcile waits for the cache to show this process' own write to a CR (then it goes on regardless). */
const OWN_WRITE_WAIT_MS = 5000
const GROUP_INDEX = 'discovery-group'

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

export function defineDiscovery<S>(declaration: DiscoveryDeclaration<S>): Feature<OperatorConfig> {
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
let defaults: OperatorConfig | undefined

/** The OperatorConfig of an empty spec (validated once: every discovery feature's permissions start from it). */
function defaultConfig(): OperatorConfig {
  if (!defaults) {
    const validated = validateOperatorConfig({})
    if (!validated.ok) throw new Error(`the default OperatorConfig is invalid: ${validated.problems.join('; ')}`)
    defaults = validated.config
  }
  return defaults
}

export function discoveryPermissions<S>(declaration: DiscoveryDeclaration<S>): Permission[] {
  const sources = declaration.sources(declaration.settings(defaultConfig(), () => true))
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
  const builder = manager.controller(declaration.name)
  const seenDeleted = new SeenDeletions()
  const view = new SourceView(sources, seenDeleted)
  const applied = new AppliedMemo()
  const keys = new TargetKeys(declaration, applied)
  const groupIndex = `${GROUP_INDEX}:${declaration.name}`
  const targets = builder.watches<TargetObject>({resource: targetResource, kind: declaration.target.kind}, (object) => keys.of(object), {
    onUpdate: specMetadataOrDeletionChanged,
    indexes: {[groupIndex]: ((object: TargetObject) => keys.group(object)) as IndexFunction<TargetObject>},
    updateKeys: (old, object) => keys.ofUpdate(old, object),
  })
  for (const source of sources) {
    view.add(source.id, builder.watches(source.request, (object) => source.groupsOf(object, view.caches), {
      onUpdate: source.onUpdate,
      indexes: source.indexes,
      updateKeys: (old, object) => [...new Set([...source.groupsOf(object, view.caches), ...source.groupsOf(old, view.caches)])],
    }))
  }
  const reconciler = new DiscoveryReconciler({
    declaration, settings, client: manager.client, namespace: manager.namespace, clock: manager.clock,
    sources: view, targets: targets.cache, groupIndex, targetResource, keys, applied, seenDeleted,
    unseenWrites: new WriteExpectations(OWN_WRITE_WAIT_MS, manager.clock), reported: new ReportedProblems(),
    events: manager.recorder(declaration.name), enqueue: (group) => running.enqueue(group),
  })

  // A group is small (one source, or one Node): its reconcile mostly waits on the apiserver, so the I/O-bound
  // worker count applies, as for the API syncs.
  const running = builder.complete((context) => reconciler.reconcile(context), {resyncPeriodMs: settings.sweepMinutes * 60_000, maxConcurrentReconciles: manager.maxConcurrentSyncs})
  // Deletions this process sees: the CRs of a deleted source go at once (not after the orphan threshold); a
  // deleted CR is forgotten and its group reconciled (it may have to come back).
  const unsubscribe = [
    ...sources.map((source) => view.informer(source.id).addHandler({onDelete: (object) => reconciler.sourceDeleted(source, object)})),
    targets.addHandler({onDelete: (object) => reconciler.targetDeleted(object)}),
  ]
  return {
    async stop(why?: StopReason) {
      const release = why?.kind === 'disabled' || why?.kind === 'missing-crds'
      // Taken before the caches go; released after the workers stopped, so none puts one back.
      const held = release ? view.heldFinalizers() : []
      for (const off of unsubscribe) off()
      await running.stop()
      if (release) await releaseSourceFinalizers(manager, declaration.name, held, why, running.logger)
    },
  }
}
