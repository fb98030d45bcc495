/**
 * The discovery planner (pure): what the desired state of one group (an Ingress or HTTPRoute, one Node, one
 * PersistentVolume, …) and what the cluster holds now imply — apply, status, delete, orphan mark, source finalizer
 * and source migration actions. external-dns' `Plan.Calculate` in spirit: the source computes the desired set, the
 * plan diffs it with the current set, the executor (engine.ts) writes it, each action on its own.
 *
 * Deletion rules (each cleanup setting has an effect):
 * - a discovered CR whose source is still cached but no longer wants it, or whose source's deletion this process
 *   saw, is deleted at once;
 * - a CR whose source is simply not there (gone while the operator did not watch, or never existed) is an orphan:
 *   the stale sweep marks it with the annotation `polycrate.io/orphaned-since` (so a restart does not reset the
 *   clock) and deletes it once it has been orphaned for `cleanup.stale_threshold_minutes`; with `cleanup.enabled:
 *   false` orphans are kept. A safety net never deletes healthy objects.
 */
import {isDeepStrictEqual} from 'node:util'
import type {KubeObject} from '../../kube/client.js'
import {annotations, labels} from '../conventions.js'

/** A Kubernetes object by kind and name (the source of a discovered CR, or the CR itself). */
export interface ObjectRef {
  kind: string
  apiVersion?: string
  namespace?: string
  name: string
  uid?: string
}

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
}

/** Something wrong with a source a person should see: a Kubernetes Event on that source. */
export interface SourceProblem {
  source: ObjectRef
  type?: 'Warning' | 'Normal'
  reason: string
  message: string
}

/** A CR discovery wants to exist, exactly as it is to be applied. */
export interface DesiredObject {
  name: string
  namespace?: string
  labels: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
  spec: unknown
  /** Status fields that discovery owns (e.g. Host `node_ready`); applied to the status subresource. */
  status?: Record<string, unknown>
  /** The source this CR comes from (Events about it go there). */
  source: ObjectRef
}

/** A source the pure layer looked at for this group. */
export interface SourceDecision {
  ref: ObjectRef
  /** In scope and opted in: only managed sources are ever written to (finalizer, migration). */
  managed: boolean
  /** A patch that moves deprecated metadata (e.g. a deprecated label into its annotation); managed sources only. */
  migration?: {patch: {metadata: {labels?: Record<string, string | null>; annotations?: Record<string, string | null>}}; description: string}
}

export interface DesiredState {
  objects: DesiredObject[]
  problems: SourceProblem[]
  sources: SourceDecision[]
  /** The desired state changes with time alone after this long (e.g. a certificate becomes expiring_soon). */
  requeueAfterMs?: number
}

/** A discovered CR as cached. */
export interface CurrentObject {
  name: string
  namespace?: string
  resourceVersion?: string
  labels: Record<string, string>
  annotations: Record<string, string>
  ownerUids: string[]
  finalizers: string[]
  deleting: boolean
  spec: unknown
  status?: Record<string, unknown>
  /** Where it came from (spec.source, labels), if it says. */
  source?: ObjectRef
}

/** A source object as cached (for its finalizer). */
export interface CurrentSource {
  ref: ObjectRef
  resourceVersion?: string
  finalizers: string[]
  deleting: boolean
}

export type SourceKnowledge = 'present' | 'deleted' | 'unknown'

export interface PlanInput {
  desired: DesiredState
  current: readonly CurrentObject[]
  /**
   * CRs of this group that another group's source wins now and takes over with its next apply. One still owned by a
   * source of this group keeps that source's finalizer: released earlier, a deleted source goes, and the garbage
   * collector deletes the CR before the winner's apply has replaced its owner (a new CR, a new API endpoint).
   */
  handingOver?: readonly CurrentObject[]
  /** The cached state of each source in `desired.sources` (undefined: not in the cache). */
  sourceState(ref: ObjectRef): CurrentSource | undefined
  /** Whether a CR's source is cached, was seen deleted by this process, or neither. */
  sourceKnowledge(ref: ObjectRef): SourceKnowledge
  /** The finalizer a source of this kind carries while it has CRs (none for e.g. Nodes). */
  sourceFinalizer(kind: string): string | undefined
  /** The sync feature's finalizer, put on each CR at creation while API sync is enabled. */
  syncFinalizer?: {name: string; enabled: boolean}
  stale: {enabled: boolean; thresholdMs: number}
  now: number
  /** This process applied exactly this object already and the cache has not caught up yet. */
  alreadyApplied?(object: DesiredObject & {finalizers?: string[]}, current: CurrentObject | undefined): boolean
}

export type Action =
  | {type: 'apply'; object: DesiredObject & {finalizers?: string[]}}
  | {type: 'applyStatus'; object: DesiredObject}
  | {type: 'delete'; target: CurrentObject; why: string}
  | {type: 'markOrphan'; target: CurrentObject; since: string}
  | {type: 'clearOrphanMark'; target: CurrentObject}
  | {type: 'releaseSyncFinalizer'; target: CurrentObject}
  | {type: 'addSourceFinalizer'; source: CurrentSource; finalizer: string}
  | {type: 'removeSourceFinalizer'; source: CurrentSource; finalizer: string}
  | {type: 'migrateSource'; source: ObjectRef; patch: NonNullable<SourceDecision['migration']>['patch']; description: string}

export interface Plan {
  actions: Action[]
  /** Reconcile again after this long (a source waits for its CRs to go; an orphan's threshold runs out). */
  requeueAfterMs?: number
}

export function sameRef(a: ObjectRef, b: ObjectRef): boolean {
  return a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '')
}

/** The identity `sameRef` compares, as a string. */
const refKey = (ref: ObjectRef) => `${ref.kind}\u0000${ref.namespace ?? ''}\u0000${ref.name}`

const normalize = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)))

/** Whether the cached CR already has everything `wanted` would apply (then nothing is written). */
export function upToDate(current: CurrentObject | undefined, wanted: DesiredObject & {finalizers?: string[]}): boolean {
  if (!current || current.deleting) return false
  const subset = (want: Record<string, string> | undefined, have: Record<string, string>) =>
    Object.entries(want ?? {}).every(([key, value]) => have[key] === value)
  return subset(wanted.labels, current.labels) &&
    subset(wanted.annotations, current.annotations) &&
    (wanted.ownerReferences ?? []).every((owner) => current.ownerUids.includes(owner.uid)) &&
    (wanted.finalizers ?? []).every((finalizer) => current.finalizers.includes(finalizer)) &&
    isDeepStrictEqual(normalize(current.spec), normalize(wanted.spec))
}

/** Whether the discovery-owned status fields differ from the cached ones. */
export function statusDiffers(current: CurrentObject | undefined, wanted: DesiredObject): boolean {
  if (!wanted.status) return false
  return Object.entries(wanted.status).some(([key, value]) => !isDeepStrictEqual(normalize(current?.status?.[key]), normalize(value)))
}

export function planDiscovery(input: PlanInput): Plan {
  const actions: Action[] = []
  let requeueAfterMs: number | undefined
  const requeue = (ms: number) => {
    requeueAfterMs = requeueAfterMs === undefined ? ms : Math.min(requeueAfterMs, ms)
  }
  if (input.desired.requeueAfterMs !== undefined) requeue(Math.max(0, input.desired.requeueAfterMs))
  const currentByName = new Map(input.current.map((object) => [`${object.namespace ?? ''}/${object.name}`, object]))
  const keyOf = (object: {namespace?: string; name: string}) => `${object.namespace ?? ''}/${object.name}`
  const syncFinalizers = input.syncFinalizer?.enabled ? [input.syncFinalizer.name] : []

  // Source finalizers go on before any CR of the source exists, so a source can never go unseen.
  const managed = input.desired.sources.filter((decision) => decision.managed)
  // By source, once: a namespace may hold thousands of sources and CRs (no per-source scan of every CR).
  const withDesired = new Set(input.desired.objects.map((object) => refKey(object.source)))
  const withCurrent = new Set(input.current.flatMap((object) => (object.source ? [refKey(object.source)] : [])))
  const sourcesWithObjects = (ref: ObjectRef) => withDesired.has(refKey(ref))
  for (const decision of input.desired.sources) {
    const finalizer = input.sourceFinalizer(decision.ref.kind)
    const state = input.sourceState(decision.ref)
    if (!finalizer || !state) continue
    const has = state.finalizers.includes(finalizer)
    const want = decision.managed && !state.deleting && sourcesWithObjects(decision.ref)
    if (want && !has) actions.push({type: 'addSourceFinalizer', source: state, finalizer})
  }

  for (const wanted of input.desired.objects) {
    const current = currentByName.get(keyOf(wanted))
    if (current?.deleting) {
      requeue(1000) // wait until it is gone, then create it anew
      continue
    }
    const object = syncFinalizers.length > 0 ? {...wanted, finalizers: syncFinalizers} : wanted
    if (!upToDate(current, object) && !(input.alreadyApplied?.(object, current) ?? false)) actions.push({type: 'apply', object})
    if (statusDiffers(current, wanted)) actions.push({type: 'applyStatus', object: wanted})
    if (current?.annotations[annotations.orphanedSince] !== undefined) actions.push({type: 'clearOrphanMark', target: current})
  }

  const wantedKeys = new Set(input.desired.objects.map(keyOf))
  for (const current of input.current) {
    if (current.deleting) {
      // Nobody else will remove the sync finalizer while API sync is off: the CR must not hang in deletion.
      if (input.syncFinalizer && !input.syncFinalizer.enabled && current.finalizers.includes(input.syncFinalizer.name)) {
        actions.push({type: 'releaseSyncFinalizer', target: current})
      }
      continue
    }
    if (wantedKeys.has(keyOf(current))) continue
    const knowledge = current.source ? input.sourceKnowledge(current.source) : 'unknown'
    if (knowledge === 'present') {
      actions.push({type: 'delete', target: current, why: 'its source no longer claims it'})
      continue
    }
    if (knowledge === 'deleted') {
      actions.push({type: 'delete', target: current, why: 'its source was deleted'})
      continue
    }
    if (!input.stale.enabled) continue
    const since = Date.parse(current.annotations[annotations.orphanedSince] ?? '')
    if (Number.isNaN(since)) {
      actions.push({type: 'markOrphan', target: current, since: new Date(input.now).toISOString()})
      requeue(input.stale.thresholdMs)
    } else if (input.now - since >= input.stale.thresholdMs) {
      actions.push({type: 'delete', target: current, why: `its source is gone (orphaned since ${new Date(since).toISOString()}, cleanup.stale_threshold_minutes passed)`})
    } else {
      requeue(since + input.stale.thresholdMs - input.now)
    }
  }

  // Release sources that want no CRs any more, once their CRs are gone or handed over.
  const ownersHandingOver = new Set((input.handingOver ?? []).flatMap((object) => object.ownerUids))
  for (const decision of input.desired.sources) {
    const finalizer = input.sourceFinalizer(decision.ref.kind)
    const state = input.sourceState(decision.ref)
    if (!finalizer || !state || !state.finalizers.includes(finalizer)) continue
    const want = decision.managed && !state.deleting && sourcesWithObjects(decision.ref)
    if (want) continue
    const handingOver = decision.ref.uid !== undefined && ownersHandingOver.has(decision.ref.uid)
    if (!withCurrent.has(refKey(decision.ref)) && !handingOver) actions.push({type: 'removeSourceFinalizer', source: state, finalizer})
    else requeue(1000)
  }

  for (const decision of managed) {
    if (decision.migration) actions.push({type: 'migrateSource', source: decision.ref, ...decision.migration})
  }
  return {actions, requeueAfterMs}
}

/**
 * The desired state of a group that is one source object (a Node, a PersistentVolume, a Velero Backup, a
 * cert-manager Certificate): its one CR in `namespace` (the source's own, or the operator's for cluster-scoped
 * sources), labelled as discovered, owned by the source, and the source's problems (pure). `map` may decline
 * (`cr` absent) with problems, or with `skipped` (filtered out: no CR and no problem).
 */
export function desiredOfOneSource(
  source: {kind: string; apiVersion: string; name: string; namespace?: string; object: KubeObject | undefined},
  namespace: string,
  map: (object: KubeObject) => {cr?: {name: string; labels?: Record<string, string>; spec: unknown; status?: Record<string, unknown>}; problems: Array<{reason: string; message: string}>; requeueAfterMs?: number},
): DesiredState {
  const {object} = source
  if (!object || object.metadata?.deletionTimestamp) return {objects: [], problems: [], sources: []}
  const uid = object.metadata?.uid
  const ref: ObjectRef = {kind: source.kind, apiVersion: source.apiVersion, ...(source.namespace ? {namespace: source.namespace} : {}), name: source.name, uid}
  const {cr, problems, requeueAfterMs} = map(object)
  return {
    objects: cr
      ? [{
        name: cr.name,
        namespace,
        labels: {...cr.labels, [labels.discovered]: 'true', [labels.managedBy]: 'operator'},
        ...(uid ? {ownerReferences: [{apiVersion: source.apiVersion, kind: source.kind, name: source.name, uid}]} : {}),
        spec: cr.spec,
        ...(cr.status ? {status: cr.status} : {}),
        source: ref,
      }]
      : [],
    problems: problems.map((problem) => ({source: ref, ...problem})),
    sources: [{ref, managed: cr !== undefined}],
    ...(requeueAfterMs !== undefined ? {requeueAfterMs} : {}),
  }
}
