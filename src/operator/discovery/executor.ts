/**
 * The discovery's executor: runs a plan's actions against the apiserver, each on its own — a failure is collected
 * (and becomes a Warning Event on the object that caused it) and never holds back the other actions of the group.
 * One function per group of actions; every write takes the reconcile's signal.
 */
import {API_VERSION} from '../../crds/define.js'
import type {Logger} from '../../lib/logger.js'
import {KubeApiError, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {annotations} from '../conventions.js'
import {forEachLimit} from '../runtime/concurrency.js'
import type {Action, CurrentObject, DesiredObject, ObjectRef} from './plan.js'

/** Writes one group's reconcile makes at once (a namespace may hold thousands of Ingresses). */
export const WRITE_CONCURRENCY = 8

/** Source finalizers before any CR exists; a CR before its status; releases last. */
export const EXECUTION_PHASES: ReadonlyArray<ReadonlyArray<Action['type']>> = [
  ['addSourceFinalizer'],
  ['apply', 'delete', 'markOrphan', 'clearOrphanMark', 'releaseSyncFinalizer', 'migrateSource'],
  ['applyStatus', 'removeSourceFinalizer'],
]

export interface Failure {
  error: unknown
  message: string
  source?: ObjectRef
  target?: CurrentObject
}

export interface ExecuteContext {
  client: KubeClient
  signal: AbortSignal
  /** The target CRs' kind. */
  kind: string
  /** The sync feature's finalizer (released by `releaseSyncFinalizer`). */
  syncFinalizer?: string
  targetResource: ResourceRef
  sourceResource(ref: ObjectRef): ResourceRef
  onApplied(object: DesiredObject & {finalizers?: string[]}, before: string | undefined): void
  /** A write to a CR: the resourceVersion the cache showed before it, and the one it made. */
  onWritten(object: {namespace?: string; name: string}, before: string | undefined, after: string | undefined): void
  currentVersion(object: {namespace?: string; name: string}): string | undefined
  logger: Logger
}

/** The actions whose 404 means the object they write to is gone, which makes them moot. */
const MOOT_WHEN_GONE: ReadonlySet<Action['type']> = new Set(['delete', 'releaseSyncFinalizer', 'removeSourceFinalizer', 'applyStatus', 'markOrphan', 'clearOrphanMark'])

/**
 * A failed action that is no failure: what it deletes or releases is gone already (a source gone while our finalizer
 * was being removed took the finalizer with it: a reconcile from a cache that had not seen the removal yet), or the
 * CR whose status or orphan mark it writes was deleted meanwhile (its deletion reconciles the group again, which
 * applies it anew if it is still wanted). Not an apply's 404: that creates, so a 404 is a real problem (its namespace
 * or its CRD gone).
 */
export function alreadyDone(action: Action, error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 404 && MOOT_WHEN_GONE.has(action.type)
}

/** Runs the plan: source finalizers first, then CR writes, then releases; each action on its own. */
export async function execute(actions: readonly Action[], context: ExecuteContext): Promise<Failure[]> {
  const {signal} = context
  const failures: Failure[] = []
  for (const phase of EXECUTION_PHASES) {
    await forEachLimit(actions.filter((action) => phase.includes(action.type)), WRITE_CONCURRENCY, async (action) => {
      if (signal.aborted) return
      try {
        await run(action, context)
      } catch (error) {
        if (signal.aborted) return
        if (alreadyDone(action, error)) return
        failures.push(describeFailure(action, error, context.kind))
      }
    })
  }
  return failures
}

/** One action. */
export async function run(action: Action, context: ExecuteContext): Promise<void> {
  switch (action.type) {
    case 'addSourceFinalizer':
    case 'removeSourceFinalizer':
      return patchSourceFinalizers(action, context)
    case 'apply':
      return applyObject(action, context)
    case 'applyStatus':
      return applyStatus(action, context)
    case 'delete':
    case 'markOrphan':
    case 'clearOrphanMark':
    case 'releaseSyncFinalizer':
      return writeTarget(action, context)
    case 'migrateSource':
      await context.client.mergePatch(context.sourceResource(action.source), action.patch, {signal: context.signal})
      context.logger.info(action.description, {source: describeRef(action.source)})
  }
}

function targetRef(context: ExecuteContext, object: {namespace?: string; name: string}, subresource?: string): ResourceRef {
  return {...context.targetResource, namespace: object.namespace, name: object.name, subresource}
}

async function patchSourceFinalizers(action: Extract<Action, {type: 'addSourceFinalizer' | 'removeSourceFinalizer'}>, context: ExecuteContext): Promise<void> {
  const list = action.type === 'addSourceFinalizer'
    ? [...action.source.finalizers, action.finalizer]
    : action.source.finalizers.filter((finalizer) => finalizer !== action.finalizer)
  await context.client.mergePatch(context.sourceResource(action.source.ref), {metadata: {finalizers: list, resourceVersion: action.source.resourceVersion}}, {signal: context.signal})
  if (action.type === 'removeSourceFinalizer') context.logger.info('source released', {source: describeRef(action.source.ref)})
}

async function applyObject(action: Extract<Action, {type: 'apply'}>, context: ExecuteContext): Promise<void> {
  const {object} = action
  const before = context.currentVersion(object)
  const written = await context.client.apply(targetRef(context, object), {
    apiVersion: API_VERSION,
    kind: context.kind,
    metadata: {
      name: object.name,
      ...(object.namespace ? {namespace: object.namespace} : {}),
      labels: object.labels,
      ...(object.annotations ? {annotations: object.annotations} : {}),
      ...(object.ownerReferences ? {ownerReferences: object.ownerReferences} : {}),
      ...(object.finalizers ? {finalizers: object.finalizers} : {}),
    },
    spec: object.spec,
  }, {signal: context.signal})
  context.onApplied(object, before)
  context.onWritten(object, before, written.metadata?.resourceVersion)
  context.logger.info(`${context.kind} applied`, {name: object.name, source: describeRef(object.source)})
}

/**
 * The discovery-owned status fields: a server-side apply of those that have a value; when none has (each field it
 * owned goes), a JSON merge patch that removes them instead — an apply that drops a manager's last status field
 * leaves `status: null`, which the CRD's schema refuses (kubernetes/kubernetes#117447, before Kubernetes 1.36).
 */
export function statusWrite(status: Record<string, unknown> | undefined): {apply: Record<string, unknown>} | {mergePatch: Record<string, null>} {
  const fields = Object.entries(status ?? {})
  if (fields.some(([, value]) => value !== undefined)) return {apply: status!}
  return {mergePatch: Object.fromEntries(fields.map(([key]) => [key, null]))}
}

async function applyStatus(action: Extract<Action, {type: 'applyStatus'}>, context: ExecuteContext): Promise<void> {
  const before = context.currentVersion(action.object)
  const ref = targetRef(context, action.object, 'status')
  const write = statusWrite(action.object.status)
  const body = {
    apiVersion: API_VERSION,
    kind: context.kind,
    metadata: {name: action.object.name, ...(action.object.namespace ? {namespace: action.object.namespace} : {})},
  }
  const written = 'apply' in write
    ? await context.client.apply(ref, {...body, status: write.apply}, {signal: context.signal})
    : await context.client.mergePatch<KubeObject>(ref, {status: write.mergePatch}, {signal: context.signal})
  context.onWritten(action.object, before, written.metadata?.resourceVersion)
}

/** The writes to an existing CR: delete it, mark or unmark it orphaned, release the sync finalizer. */
async function writeTarget(action: Extract<Action, {type: 'delete' | 'markOrphan' | 'clearOrphanMark' | 'releaseSyncFinalizer'}>, context: ExecuteContext): Promise<void> {
  const {client, signal, logger, kind} = context
  const target = targetRef(context, action.target)
  switch (action.type) {
    case 'delete':
      await client.delete(target, {signal})
      logger.info(`${kind} deleted: ${action.why}`, {name: action.target.name})
      return
    case 'markOrphan':
    case 'clearOrphanMark':
      await client.mergePatch(target, {metadata: {annotations: {[annotations.orphanedSince]: action.type === 'markOrphan' ? action.since : null}}}, {signal})
      if (action.type === 'markOrphan') logger.info(`${kind} orphaned: its source is gone; deleted after cleanup.stale_threshold_minutes`, {name: action.target.name})
      return
    case 'releaseSyncFinalizer':
      await client.mergePatch(target, {
        metadata: {finalizers: action.target.finalizers.filter((finalizer) => finalizer !== context.syncFinalizer), resourceVersion: action.target.resourceVersion},
      }, {signal})
      logger.info(`${kind} released: API sync is off, so nothing is deleted from the Polycrate API`, {name: action.target.name})
  }
}

export function describeRef(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`
}

export function describeFailure(action: Action, error: unknown, kind: string): Failure {
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

/**
 * What a reconcile whose writes partly failed throws (every other action ran): only conflicts → the first conflict
 * (retried soon); otherwise one error naming them all (retried with backoff). Nothing when none failed.
 */
export function failureError(failures: readonly Failure[], actions: number): unknown {
  if (failures.length === 0) return undefined
  const conflict = failures.every((failure) => failure.error instanceof KubeApiError && failure.error.status === 409)
  if (conflict) return failures[0]!.error
  return new Error(`${failures.length} of ${actions} discovery writes failed: ${failures.map((failure) => failure.message).join('; ')}`)
}
