/**
 * Backup discovery (pure): Velero Backups/Schedules and CloudNativePG Backups/ScheduledBackups → the polycrate.io
 * Backup and BackupSchedule CRs the operator keeps for them. No I/O; the clock is the parameter `now` (ms since the
 * epoch).
 *
 * Shared decisions:
 * - The CRs live in the namespace of the Velero/CNPG object (the caller puts them there). CR name =
 *   `velero-<name>` (Velero Backup and Schedule) or `cnpg-<name>` (CNPG Backup and ScheduledBackup); Backup and
 *   BackupSchedule are different kinds, so `velero-daily` may name one of each. A name that would be longer than
 *   253 characters (or not be a DNS subdomain) is rewritten by `discoveredCrName`: lower-cased, every character
 *   outside [a-z0-9-] → "-", runs of "-" collapsed, cut, and "-" + the first 10 hex digits of the SHA-256 of the
 *   uncut name appended, so two long names never share a CR.
 * - An object without `metadata.name` gives no CR and a `MissingName` problem. An object without a namespace (only
 *   plain test objects; the API server always sets one) counts as being in "default", as endpoint discovery does.
 * - `spec.name` = `apiSlug(<source name>)`: the API validates `name` as `^[a-z0-9]+(?:-[a-z0-9]+)*$`.
 *   The API's natural key is (`name`, `provider`, `source_namespace`, `k8s_cluster`).
 * - Timestamps are normalised to RFC 3339 in UTC (`2024-01-01T00:00:00Z`; a non-zero fraction is kept to the
 *   millisecond), whatever offset they were written with; a Date (typed client objects) works too. A value that is
 *   not an RFC 3339 date-time with `T` and `Z`/offset ("yesterday", "2024-02-30T00:00:00Z") → the field is absent
 *   and an `InvalidTimestamp` problem names field and value.
 * - A problem never stops the other fields: the CR is still produced with the field left out.
 * - `metadata` holds only values the source has (no undefined, no empty lists); it is left out when empty.
 * - Keys whose value would be undefined are left out of every spec (`withoutUndefined`).
 * - `source` = {kind, name, namespace, uid} of the object (uid only when it has one).
 *
 * Velero Backup (`veleroBackup`):
 * - `provider` = velero. `kind` = `app` when `spec.includedNamespaces` is exactly one namespace that is neither
 *   "*" nor empty — then `source_namespace` = that namespace (the namespace the backup is of); otherwise (absent,
 *   [], ["*"], several namespaces) `kind` = `cluster` and `source_namespace` = the Backup's own namespace (Velero's).
 *   ["*"] is Velero's spelling of "all namespaces": a documented default, not a problem. An includedNamespaces that
 *   is not a list of strings → `cluster` and an `InvalidIncludedNamespaces` problem. Caveat: an app backup's
 *   identity uses the backed-up namespace, so two Velero installations backing up one namespace under the same
 *   backup name would share an API object (no real set-up does that).
 * - `status` from `status.phase`: absent/"" and New, Queued, ReadyToStart → pending; InProgress,
 *   WaitingForPluginOperations*, Finalizing* → running (a *PartiallyFailed variant still runs); Completed →
 *   completed; PartiallyFailed → partial; Failed, FailedValidation → failed; Deleting → expired when
 *   `status.expiration` is at or before `now`, else unknown (a deletion somebody asked for before expiry, or no
 *   readable expiration); any other value → unknown and an `UnknownBackupPhase` problem.
 * - `started_at` / `completed_at` / `expiration` = `status.startTimestamp` / `completionTimestamp` / `expiration`.
 * - `items_backed_up` = `status.progress.itemsBackedUp` when a non-negative integer; another value → absent and an
 *   `InvalidItemCount` problem. `size_bytes`: Velero does not report it → absent.
 * - `retention_policy` = `spec.ttl` in Go's canonical spelling (`canonicalGoDuration`: "96h" → "96h0m0s", what
 *   Velero itself writes), so equal TTLs compare equal. Not a Go duration ("forever", "30d") or negative → absent
 *   and an `InvalidTTL` problem naming the value.
 * - `schedule_name` = the API slug of the Schedule the backup came from — the same slug `veleroSchedule` uses as
 *   the BackupSchedule's `name`, so the API can resolve `schedule` from it. The Schedule name is read from an owner
 *   reference of kind Schedule (`useOwnerReferencesInBackup`, the full name), else from the label
 *   `velero.io/schedule-name` (Velero shortens label values over 63 characters, so for such long schedule names
 *   the link can miss).
 * - `metadata` = {storage_location (spec.storageLocation), errors, warnings (status counts, 0 included),
 *   failure_reason (status.failureReason), included_namespaces (spec.includedNamespaces, when a non-empty list),
 *   validation_errors (status.validationErrors, when non-empty)}.
 *
 * Velero Schedule (`veleroSchedule`):
 * - `provider`, `kind`, `source_namespace` as for a Backup, from `spec.template.includedNamespaces`.
 * - `schedule_cron` = `spec.schedule` as written. It is checked like Velero does (robfig/cron v3 ParseStandard:
 *   5 fields or a descriptor, see src/lib/cron.ts); an invalid one ("every day") is KEPT — it is what the user wrote
 *   and what the UI should show — and an `InvalidCron` problem explains why Velero will not run it. Missing or
 *   empty → absent and a `MissingSchedule` problem.
 * - `paused` = `spec.paused === true` (always present).
 * - `status`: phase FailedValidation → failed (also when paused: unpausing would not make it run); else paused →
 *   paused; else Enabled, New or no phase yet → active (Velero has not validated a New schedule yet; an invalid cron
 *   shows as the InvalidCron problem now and as failed once Velero says FailedValidation: Velero's verdict is
 *   the status, ours is only a problem); any other phase → unknown and an `UnknownSchedulePhase` problem.
 * - `retention_policy` = `spec.template.ttl`, canonical, as for a Backup (`InvalidTTL` likewise).
 * - `last_backup_at` = `status.lastBackup`. Velero writes a timestamp there; the operator reference's table reads
 *   `status.lastBackup.startTime` / `.name`, so an object {startTime, name} is accepted too and its name becomes
 *   `last_backup_name`. Velero's own timestamp form has no name: `last_backup_name` is then absent.
 * - `metadata` = {storage_location, included_namespaces (of the template), validation_errors}.
 *
 * CloudNativePG Backup (`cnpgBackup`):
 * - `provider` = cloudnativepg (the API's enum spelling; the operator reference's "cloudnative-pg" is not in it), `kind` =
 *   database, `source_namespace` = the Backup's namespace (the database cluster's namespace).
 * - `status` from `status.phase`: pending or absent/"" → pending; started, running, finalizing → running;
 *   completed → completed; failed, walArchivingFailing, "invalid backup definition" → failed; another value →
 *   unknown and an `UnknownBackupPhase` problem. Phases are compared exactly (CNPG writes them lower-case).
 * - `started_at` = `status.startedAt`; `completed_at` = `status.stoppedAt` only when the phase is completed (a
 *   failed backup also has a stoppedAt, but it did not complete).
 * - `schedule_name` = the API slug of the ScheduledBackup: from an owner reference of kind ScheduledBackup
 *   (`backupOwnerReference: self`), else from the label `cnpg.io/scheduled-backup` CNPG puts on every backup a
 *   ScheduledBackup creates (the default `backupOwnerReference: none` sets no owner).
 * - `metadata` = {cluster (spec.cluster.name), method (status.method, else spec.method), backup_id
 *   (status.backupId), error (status.error), destination_path (status.destinationPath)}.
 * - No `spec.cluster.name` (CNPG requires it) → the CR is still produced, without `metadata.cluster`, and a
 *   `MissingCluster` problem. Retention is a property of the CNPG Cluster, not of the Backup: no retention_policy.
 *
 * CloudNativePG ScheduledBackup (`cnpgScheduledBackup`):
 * - `provider`, `kind`, `source_namespace` as for a CNPG Backup.
 * - `schedule_cron` = `spec.schedule` as written, checked like CNPG does (robfig/cron v1 `Parse`: 6 fields
 *   `sec min hour dom month dow`, or a descriptor). Invalid → kept and an `InvalidCron` problem. A 5-field value is
 *   accepted by CNPG but read with seconds first ("0 0 * * *" runs every hour, at minute 0 second 0): kept, with a
 *   `FiveFieldCnpgCron` problem explaining it. Missing or empty → absent and a `MissingSchedule` problem.
 * - `paused` = `spec.suspend === true` (always present).
 * - `status`: failed when the schedule is missing or invalid or `status.error` is set (CNPG cannot or did not
 *   schedule it; also when suspended, as for Velero); else paused when suspended; else active. A FiveFieldCnpgCron
 *   schedule does run, so it stays active.
 * - `last_backup_at` = `status.lastScheduleTime`.
 * - `metadata` = {cluster, method (spec.method), backup_owner_reference (spec.backupOwnerReference, absent → "none",
 *   CNPG's default), next_schedule_at (status.nextScheduleTime), error (status.error)}. No cluster → `MissingCluster`.
 */
import type {BackupSpec} from '../../../crds/backup.js'
import type {BackupScheduleSpec} from '../../../crds/backupschedule.js'
import {checkCron} from '../../../lib/cron.js'
import {canonicalGoDuration, parseGoDuration} from '../../../lib/duration.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'
import {discoveredCrName} from '../../discovery/names.js'
import {timestampField, timestampMillis} from '../../discovery/timestamps.js'
import {commonProblemReasons, quoted, type DiscoveryProblem, type TimestampLike} from '../../discovery/types.js'

/** The `reason` values of backup discovery problems (also used as Kubernetes Event reasons). */
export const backupProblemReasons = {
  missingName: commonProblemReasons.missingName,
  unknownBackupPhase: 'UnknownBackupPhase',
  unknownSchedulePhase: 'UnknownSchedulePhase',
  invalidTimestamp: commonProblemReasons.invalidTimestamp,
  invalidTTL: 'InvalidTTL',
  invalidItemCount: 'InvalidItemCount',
  invalidIncludedNamespaces: 'InvalidIncludedNamespaces',
  invalidCron: 'InvalidCron',
  fiveFieldCnpgCron: 'FiveFieldCnpgCron',
  missingSchedule: 'MissingSchedule',
  missingCluster: 'MissingCluster',
} as const

export const veleroScheduleNameLabel = 'velero.io/schedule-name'
export const cnpgScheduledBackupLabel = 'cnpg.io/scheduled-backup'

// -- input shapes (only the fields read; plain JSON from the API server fits) -----------------------------------

export interface OwnerReferenceLike {
  apiVersion?: string
  kind?: string
  name?: string
  uid?: string
}

export interface BackupObjectMeta {
  name?: string
  namespace?: string
  uid?: string
  labels?: Readonly<Record<string, string>>
  ownerReferences?: readonly OwnerReferenceLike[]
}

interface VeleroBackupSpecLike {
  ttl?: string
  includedNamespaces?: readonly string[]
  storageLocation?: string
}

export interface VeleroBackupLike {
  metadata?: BackupObjectMeta
  spec?: VeleroBackupSpecLike
  status?: {
    phase?: string
    startTimestamp?: TimestampLike
    completionTimestamp?: TimestampLike
    expiration?: TimestampLike
    progress?: {totalItems?: number; itemsBackedUp?: number}
    errors?: number
    warnings?: number
    failureReason?: string
    validationErrors?: readonly string[]
  }
}

export interface VeleroScheduleLike {
  metadata?: BackupObjectMeta
  spec?: {
    schedule?: string
    paused?: boolean
    template?: VeleroBackupSpecLike
  }
  status?: {
    phase?: string
    /** Velero writes a timestamp; the operator reference's `{startTime, name}` is accepted too. */
    lastBackup?: TimestampLike | {startTime?: TimestampLike; name?: string}
    validationErrors?: readonly string[]
  }
}

export interface CnpgBackupLike {
  metadata?: BackupObjectMeta
  spec?: {
    cluster?: {name?: string}
    method?: string
  }
  status?: {
    phase?: string
    startedAt?: TimestampLike
    stoppedAt?: TimestampLike
    backupId?: string
    error?: string
    method?: string
    destinationPath?: string
  }
}

export interface CnpgScheduledBackupLike {
  metadata?: BackupObjectMeta
  spec?: {
    schedule?: string
    suspend?: boolean
    cluster?: {name?: string}
    method?: string
    backupOwnerReference?: string
  }
  status?: {
    lastScheduleTime?: TimestampLike
    nextScheduleTime?: TimestampLike
    error?: string
  }
}

export interface BackupDiscoveryResult {
  cr?: {name: string; spec: BackupSpec}
  problems: DiscoveryProblem[]
}

export interface BackupScheduleDiscoveryResult {
  cr?: {name: string; spec: BackupScheduleSpec}
  problems: DiscoveryProblem[]
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string') ? [...value] : undefined
}

function integerCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined
}

function compact(metadata: Record<string, unknown>): Record<string, unknown> | undefined {
  const kept = withoutUndefined(metadata)
  return Object.keys(kept).length > 0 ? kept : undefined
}

function missingName(what: string): DiscoveryProblem {
  return {
    reason: backupProblemReasons.missingName,
    message: `The ${what} has no metadata.name: there is nothing to name the CR after, so none is created for it.`,
  }
}

const DEFAULT_NAMESPACE = 'default'

function sourceOf(kind: string, meta: BackupObjectMeta | undefined, name: string): NonNullable<BackupSpec['source']> {
  return withoutUndefined({kind, name, namespace: meta?.namespace || DEFAULT_NAMESPACE, uid: meta?.uid || undefined})
}

/** The name of the owner of `kind` (first one), else the value of `label`, as an API slug. */
function scheduleNameOf(meta: BackupObjectMeta | undefined, kind: string, label: string): string | undefined {
  const owners = Array.isArray(meta?.ownerReferences) ? meta.ownerReferences : []
  const owner = owners.find((o) => o?.kind === kind && nonEmptyString(o.name))?.name
  const name = owner ?? nonEmptyString(meta?.labels?.[label])
  return name === undefined ? undefined : apiSlug(name)
}

// -- Velero -----------------------------------------------------------------------------------------------------

/** Velero Backup phase → API status (the table above); `unknownPhase` when the phase is not one Velero defines. */
export function veleroBackupStatus(
  phase: string | undefined,
  expiration: number | undefined,
  now: number,
): {status: NonNullable<BackupSpec['status']>; unknownPhase?: true} {
  switch (phase) {
    case undefined: case '': case 'New': case 'Queued': case 'ReadyToStart':
      return {status: 'pending'}
    case 'InProgress':
      return {status: 'running'}
    case 'Completed':
      return {status: 'completed'}
    case 'PartiallyFailed':
      return {status: 'partial'}
    case 'Failed': case 'FailedValidation':
      return {status: 'failed'}
    case 'Deleting':
      return {status: expiration !== undefined && expiration <= now ? 'expired' : 'unknown'}
  }
  if (typeof phase !== 'string') return {status: 'unknown', unknownPhase: true}
  if (phase.startsWith('WaitingForPluginOperations') || phase.startsWith('Finalizing')) return {status: 'running'}
  return {status: 'unknown', unknownPhase: true}
}

/** kind + source_namespace from includedNamespaces (see the top comment). */
function veleroScope(
  included: unknown,
  ownNamespace: string,
  subject: string,
  path: string,
  problems: DiscoveryProblem[],
): {kind: 'cluster' | 'app'; source_namespace: string; included?: string[]} {
  if (included === undefined || included === null) return {kind: 'cluster', source_namespace: ownNamespace}
  if (!Array.isArray(included) || !included.every((n) => typeof n === 'string')) {
    problems.push({
      reason: backupProblemReasons.invalidIncludedNamespaces,
      message: `${subject}: ${path} ${quoted(included)} is not a list of namespace names; the backup is treated as a cluster backup.`,
    })
    return {kind: 'cluster', source_namespace: ownNamespace}
  }
  const list = included as string[]
  const only = list.length === 1 ? list[0] : undefined
  if (only && only !== '*') return {kind: 'app', source_namespace: only, included: [...list]}
  return {kind: 'cluster', source_namespace: ownNamespace, included: list.length > 0 ? [...list] : undefined}
}

function ttlField(value: unknown, subject: string, path: string, problems: DiscoveryProblem[]): string | undefined {
  if (value === undefined || value === null) return undefined
  const text = typeof value === 'string' ? value : undefined
  const nanos = text === undefined ? undefined : parseGoDuration(text)
  if (nanos === undefined || nanos < 0n) {
    problems.push({
      reason: backupProblemReasons.invalidTTL,
      message: `${subject}: ${path} ${quoted(value)} is not ${nanos === undefined ? 'a Go duration' : 'a non-negative duration'} `
        + '(such as "720h0m0s", "96h" or "1h30m"); retention_policy is left out.',
    })
    return undefined
  }
  return canonicalGoDuration(text!)
}

function qualified(kind: string, meta: BackupObjectMeta | undefined, name: string): string {
  return `${kind} "${meta?.namespace || DEFAULT_NAMESPACE}/${name}"`
}

/** The Backup CR for a Velero Backup (see the top comment for every mapping decision). */
export function veleroBackup(backup: VeleroBackupLike, now: number): BackupDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const meta = backup.metadata
  const name = meta?.name
  if (!name) return {problems: [missingName('Velero Backup')]}
  const subject = qualified('Velero Backup', meta, name)
  const namespace = meta?.namespace || DEFAULT_NAMESPACE
  const spec = backup.spec ?? {}
  const status = backup.status ?? {}

  const scope = veleroScope(spec.includedNamespaces, namespace, subject, 'spec.includedNamespaces', problems)
  const expiration = timestampField(status.expiration, subject, 'status.expiration', 'expiration', problems)
  const phase = veleroBackupStatus(status.phase, timestampMillis(expiration), now)
  if (phase.unknownPhase) {
    problems.push({
      reason: backupProblemReasons.unknownBackupPhase,
      message: `${subject}: status.phase ${quoted(status.phase)} is not a Velero backup phase (New, Queued, ReadyToStart, InProgress, `
        + 'WaitingForPluginOperations*, Finalizing*, Completed, PartiallyFailed, Failed, FailedValidation, Deleting); status is unknown.',
    })
  }
  const items = status.progress?.itemsBackedUp
  let itemsBackedUp: number | undefined
  if (items !== undefined && items !== null) {
    itemsBackedUp = integerCount(items)
    if (itemsBackedUp === undefined) {
      problems.push({
        reason: backupProblemReasons.invalidItemCount,
        message: `${subject}: status.progress.itemsBackedUp ${quoted(items)} is not a non-negative integer; items_backed_up is left out.`,
      })
    }
  }

  const result: BackupSpec = withoutUndefined({
    name: apiSlug(name),
    provider: 'velero',
    kind: scope.kind,
    source_namespace: scope.source_namespace,
    status: phase.status,
    started_at: timestampField(status.startTimestamp, subject, 'status.startTimestamp', 'started_at', problems),
    completed_at: timestampField(status.completionTimestamp, subject, 'status.completionTimestamp', 'completed_at', problems),
    expiration,
    items_backed_up: itemsBackedUp,
    retention_policy: ttlField(spec.ttl, subject, 'spec.ttl', problems),
    schedule_name: scheduleNameOf(meta, 'Schedule', veleroScheduleNameLabel),
    metadata: compact({
      storage_location: nonEmptyString(spec.storageLocation),
      errors: integerCount(status.errors),
      warnings: integerCount(status.warnings),
      failure_reason: nonEmptyString(status.failureReason),
      included_namespaces: scope.included,
      validation_errors: stringList(status.validationErrors),
    }),
    source: sourceOf('Backup', meta, name),
  })
  return {cr: {name: discoveredCrName('velero', name), spec: result}, problems}
}

function cronField(
  value: unknown,
  dialect: 'standard' | 'cnpg',
  subject: string,
  problems: DiscoveryProblem[],
): {cron?: string; usable: boolean} {
  if (value === undefined || value === null || value === '') {
    problems.push({
      reason: backupProblemReasons.missingSchedule,
      message: `${subject}: spec.schedule is missing or empty, so no backup is ever scheduled; schedule_cron is left out.`,
    })
    return {usable: false}
  }
  const cron = typeof value === 'string' ? value : String(value)
  const check = checkCron(cron, dialect)
  const expected = dialect === 'standard'
    ? 'a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 3 * * *") or a descriptor such as @daily or "@every 6h"'
    : 'a 6-field cron expression (second minute hour day-of-month month day-of-week, e.g. "0 0 3 * * *") or a descriptor such as @daily or "@every 6h"'
  if (!check.valid) {
    problems.push({
      reason: backupProblemReasons.invalidCron,
      message: `${subject}: spec.schedule "${cron}" is not ${expected} (${check.error}); `
        + `${dialect === 'standard' ? 'Velero' : 'CloudNativePG'} will not run it. schedule_cron keeps the value as written.`,
    })
    return {cron, usable: false}
  }
  if (check.fiveFieldCnpg) {
    problems.push({
      reason: backupProblemReasons.fiveFieldCnpgCron,
      message: `${subject}: spec.schedule "${cron}" has 5 fields; CloudNativePG reads them as second minute hour day-of-month month `
        + '(seconds first, no day-of-week), not as standard cron, so it runs far more often than it looks. Write 6 fields, '
        + `e.g. "0 ${cron}" to mean the standard "${cron}".`,
    })
  }
  return {cron, usable: true}
}

/** The BackupSchedule CR for a Velero Schedule (see the top comment). `now` is not needed today. */
export function veleroSchedule(schedule: VeleroScheduleLike, _now: number): BackupScheduleDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const meta = schedule.metadata
  const name = meta?.name
  if (!name) return {problems: [missingName('Velero Schedule')]}
  const subject = qualified('Velero Schedule', meta, name)
  const namespace = meta?.namespace || DEFAULT_NAMESPACE
  const spec = schedule.spec ?? {}
  const template = spec.template ?? {}
  const status = schedule.status ?? {}

  const scope = veleroScope(template.includedNamespaces, namespace, subject, 'spec.template.includedNamespaces', problems)
  const cron = cronField(spec.schedule, 'standard', subject, problems)
  const paused = spec.paused === true
  let state: NonNullable<BackupScheduleSpec['status']>
  switch (status.phase) {
    case 'FailedValidation': state = 'failed'; break
    case undefined: case '': case 'New': case 'Enabled': state = paused ? 'paused' : 'active'; break
    default:
      state = 'unknown'
      problems.push({
        reason: backupProblemReasons.unknownSchedulePhase,
        message: `${subject}: status.phase ${quoted(status.phase)} is not a Velero schedule phase (New, Enabled, FailedValidation); status is unknown.`,
      })
  }
  const last = status.lastBackup
  const lastIsObject = typeof last === 'object' && last !== null && !(last instanceof Date)
  const lastAt = lastIsObject ? (last as {startTime?: TimestampLike}).startTime : last
  const lastName = lastIsObject ? nonEmptyString((last as {name?: unknown}).name) : undefined

  const result: BackupScheduleSpec = withoutUndefined({
    name: apiSlug(name),
    provider: 'velero',
    kind: scope.kind,
    source_namespace: scope.source_namespace,
    status: state,
    schedule_cron: cron.cron,
    paused,
    retention_policy: ttlField(template.ttl, subject, 'spec.template.ttl', problems),
    last_backup_at: timestampField(lastAt, subject, lastIsObject ? 'status.lastBackup.startTime' : 'status.lastBackup', 'last_backup_at', problems),
    last_backup_name: lastName,
    metadata: compact({
      storage_location: nonEmptyString(template.storageLocation),
      included_namespaces: scope.included,
      validation_errors: stringList(status.validationErrors),
    }),
    source: sourceOf('Schedule', meta, name),
  })
  return {cr: {name: discoveredCrName('velero', name), spec: result}, problems}
}

// -- CloudNativePG ----------------------------------------------------------------------------------------------

/** CNPG Backup phase → API status; `unknownPhase` when CNPG defines no such phase. */
export function cnpgBackupStatus(phase: string | undefined): {status: NonNullable<BackupSpec['status']>; unknownPhase?: true} {
  switch (phase) {
    case undefined: case '': case 'pending':
      return {status: 'pending'}
    case 'started': case 'running': case 'finalizing':
      return {status: 'running'}
    case 'completed':
      return {status: 'completed'}
    case 'failed': case 'walArchivingFailing': case 'invalid backup definition':
      return {status: 'failed'}
    default:
      return {status: 'unknown', unknownPhase: true}
  }
}

function cnpgCluster(cluster: unknown, subject: string, problems: DiscoveryProblem[]): string | undefined {
  const name = nonEmptyString((cluster as {name?: unknown} | undefined)?.name)
  if (name === undefined) {
    problems.push({
      reason: backupProblemReasons.missingCluster,
      message: `${subject}: spec.cluster.name is missing; CloudNativePG does not know which database cluster to back up. metadata.cluster is left out.`,
    })
  }
  return name
}

/** The Backup CR for a CloudNativePG Backup (see the top comment). `now` is not needed today. */
export function cnpgBackup(backup: CnpgBackupLike, _now: number): BackupDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const meta = backup.metadata
  const name = meta?.name
  if (!name) return {problems: [missingName('CloudNativePG Backup')]}
  const subject = qualified('CloudNativePG Backup', meta, name)
  const spec = backup.spec ?? {}
  const status = backup.status ?? {}

  const cluster = cnpgCluster(spec.cluster, subject, problems)
  const phase = cnpgBackupStatus(status.phase)
  if (phase.unknownPhase) {
    problems.push({
      reason: backupProblemReasons.unknownBackupPhase,
      message: `${subject}: status.phase ${quoted(status.phase)} is not a CloudNativePG backup phase (pending, started, running, finalizing, `
        + 'completed, failed, walArchivingFailing, "invalid backup definition"); status is unknown.',
    })
  }
  const startedAt = timestampField(status.startedAt, subject, 'status.startedAt', 'started_at', problems)
  const completedAt = status.phase === 'completed'
    ? timestampField(status.stoppedAt, subject, 'status.stoppedAt', 'completed_at', problems)
    : undefined

  const result: BackupSpec = withoutUndefined({
    name: apiSlug(name),
    provider: 'cloudnativepg',
    kind: 'database' as const,
    source_namespace: meta?.namespace || DEFAULT_NAMESPACE,
    status: phase.status,
    started_at: startedAt,
    completed_at: completedAt,
    schedule_name: scheduleNameOf(meta, 'ScheduledBackup', cnpgScheduledBackupLabel),
    metadata: compact({
      cluster,
      method: nonEmptyString(status.method) ?? nonEmptyString(spec.method),
      backup_id: nonEmptyString(status.backupId),
      error: nonEmptyString(status.error),
      destination_path: nonEmptyString(status.destinationPath),
    }),
    source: sourceOf('Backup', meta, name),
  })
  return {cr: {name: discoveredCrName('cnpg', name), spec: result}, problems}
}

/** The BackupSchedule CR for a CloudNativePG ScheduledBackup (see the top comment). `now` is not needed today. */
export function cnpgScheduledBackup(scheduled: CnpgScheduledBackupLike, _now: number): BackupScheduleDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const meta = scheduled.metadata
  const name = meta?.name
  if (!name) return {problems: [missingName('CloudNativePG ScheduledBackup')]}
  const subject = qualified('CloudNativePG ScheduledBackup', meta, name)
  const spec = scheduled.spec ?? {}
  const status = scheduled.status ?? {}

  const cluster = cnpgCluster(spec.cluster, subject, problems)
  const cron = cronField(spec.schedule, 'cnpg', subject, problems)
  const paused = spec.suspend === true
  const error = nonEmptyString(status.error)
  const state = !cron.usable || error ? 'failed' as const : paused ? 'paused' as const : 'active' as const

  const result: BackupScheduleSpec = withoutUndefined({
    name: apiSlug(name),
    provider: 'cloudnativepg',
    kind: 'database' as const,
    source_namespace: meta?.namespace || DEFAULT_NAMESPACE,
    status: state,
    schedule_cron: cron.cron,
    paused,
    last_backup_at: timestampField(status.lastScheduleTime, subject, 'status.lastScheduleTime', 'last_backup_at', problems),
    metadata: compact({
      cluster,
      method: nonEmptyString(spec.method),
      backup_owner_reference: nonEmptyString(spec.backupOwnerReference) ?? 'none',
      next_schedule_at: timestampField(status.nextScheduleTime, subject, 'status.nextScheduleTime', 'metadata.next_schedule_at', problems),
      error,
    }),
    source: sourceOf('ScheduledBackup', meta, name),
  })
  return {cr: {name: discoveredCrName('cnpg', name), spec: result}, problems}
}
