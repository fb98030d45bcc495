/** The generic sync's pure decisions about status and errors (re-exported by engine.ts). */
import {ApiAuthError, ApiContractError, ApiError, ApiNetworkError, ApiValidationError} from '../../api/index.js'
import {syncStatusFields, type CustomObject, type StatusStyle} from '../../crds/define.js'
import type {Condition} from '../../crds/schema.js'
import {setStatusCondition} from '../../kube/conditions.js'
import {conditionTypes} from '../conventions.js'

export interface SyncState {
  phase: 'Pending' | 'Synced' | 'Error'
  syncStatus: 'pending' | 'synced' | 'error'
  reason: string
  message: string
}

/**
 * The status patch after a sync attempt (pure): only the fields sync owns, spelled in the kind's style; values it
 * does not know now are kept from `previous`; `lastTransitionTime` moves only when the condition flips.
 */
export function syncStatusPatch(
  style: StatusStyle,
  previous: Record<string, unknown> | undefined,
  generation: number | undefined,
  state: SyncState,
  synced: {apiId?: string; configHash?: string; at?: string; extra?: Record<string, unknown>},
  now: string,
): Record<string, unknown> {
  const f = syncStatusFields(style)
  const ok = state.phase === 'Synced'
  return {
    phase: state.phase,
    [f.syncStatus]: state.syncStatus,
    [f.apiId]: synced.apiId ?? previous?.[f.apiId],
    [f.configHash]: synced.configHash ?? previous?.[f.configHash],
    [f.lastSyncedAt]: synced.at ?? previous?.[f.lastSyncedAt],
    [f.observedGeneration]: generation,
    message: ok ? null : state.message,
    ...synced.extra,
    conditions: setStatusCondition(previous?.conditions as Condition[] | undefined, {
      type: conditionTypes.synced, status: ok ? 'True' : 'False', reason: state.reason, message: state.message, observedGeneration: generation,
    }, now),
  }
}

/** Whether applying `patch` would change nothing (null = absent). */
export function statusUnchanged(previous: Record<string, unknown> | undefined, patch: Record<string, unknown>): boolean {
  const clean = (value: unknown) => JSON.stringify(value ?? null)
  return Object.entries(patch).every(([key, value]) => clean(previous?.[key]) === clean(value))
}

/** The API refuses the object as it is: retrying does not help, a spec change may. */
export function isTerminal(error: unknown): boolean {
  return error instanceof ApiValidationError || (error instanceof ApiAuthError && error.forbidden) || error instanceof ApiContractError
}

/** The reason a failed (non-terminal) sync shows: the API is unavailable (network, 5xx, 429) or something else failed. */
export function failureReason(error: unknown): 'APIUnavailable' | 'SyncFailed' {
  return error instanceof ApiNetworkError || (error instanceof ApiError && (error.status >= 500 || error.status === 429)) ? 'APIUnavailable' : 'SyncFailed'
}

/**
 * How long to wait before creating the API object of a new CR (ms; ≤ 0: now): `createAfterMs` counted from its
 * creationTimestamp. Only before the first create (no API id yet) and only for kinds that declare a delay.
 */
export function createDelayMs(apiId: string | undefined, createAfterMs: number | undefined, creationTimestamp: string | undefined, now: number): number {
  return !apiId && createAfterMs !== undefined ? createAfterMs - (now - Date.parse(creationTimestamp ?? '')) : 0
}

/** The keys of live CRs whose API object the inventory listing (`ids`) no longer holds: reconciled at once. */
export function missingFromInventory(objects: Iterable<CustomObject<unknown, Record<string, unknown>>>, ids: Set<string>, apiIdField: string): string[] {
  const keys: string[] = []
  for (const object of objects) {
    const id = object.status?.[apiIdField] as string | undefined
    if (id && !ids.has(id) && !object.metadata.deletionTimestamp) keys.push(`${object.metadata.namespace}/${object.metadata.name}`)
  }
  return keys
}
