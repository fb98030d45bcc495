/** What a kind declares to the generic discovery engine (engine.ts): its sources, its targets and its pure parts. */
import type {CrdDefinition, CustomObject} from '../../crds/define.js'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import type {OperatorConfig} from '../config/operator-config.js'
import type {IndexFunction} from '../runtime/cache.js'
import type {InformerRequest} from '../runtime/informer.js'
import type {UpdatePredicate} from '../runtime/predicates.js'
import type {DesiredState, ObjectRef} from './plan.js'

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
  /**
   * Objects of this source only feed `desired` (pods, gateways): no CR comes from one — `targetSource` never names
   * this kind — so the discovery does not remember their deletions (the plan asks only about a CR's source).
   * Remembered, each deleted pod would be kept for SEEN_DELETED_TTL_MS.
   */
  inputOnly?: boolean
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

export interface Settings<S> {
  own: S
  sync: boolean
  stale: {enabled: boolean; thresholdMinutes: number}
  sweepMinutes: number
}
