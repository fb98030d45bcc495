/**
 * What Backup and BackupSchedule CRs become in the Polycrate API (pure): the BackupRequest and
 * BackupScheduleRequest bodies.
 *
 * Decisions:
 * - Every spec field the API knows is copied: name, provider, kind, source_namespace, status, started_at,
 *   completed_at, expiration, size_bytes, items_backed_up, retention_policy (Backup); status, schedule_cron, paused,
 *   retention_policy, last_backup_at, total_backups (BackupSchedule). `source` is operator bookkeeping, never sent.
 * - `schedule` = the API id of the BackupSchedule named by `schedule_name`, once that schedule has one (the sync
 *   reads it from the BackupSchedule CR and resyncs the Backup when it changes, backup.sync.ts); until then
 *   it is left out. The API's own resolution from `metadata.schedule_name` works only at create time and only when
 *   the schedule was there first, so it cannot be relied on. `schedule_name` also goes into `metadata`. A
 *   schedule's `last_backup_name`, which BackupScheduleRequest has no field for, goes into
 *   `metadata.last_backup_name`.
 * - `metadata` is always sent, as an object: the spec's metadata plus those names. The API stores it as a whole, so
 *   a key the source lost (a failure reason that went away) disappears from the API too.
 * - A field the spec does not have is cleared on update (PATCH): null where the request type allows it
 *   (started_at, completed_at, expiration, size_bytes, items_backed_up, last_backup_at), "" for the non-nullable
 *   strings (retention_policy, source_namespace, schedule_cron). Enums and numbers that cannot be null (status,
 *   kind, provider, paused, total_backups) are left out when unset, so the API keeps its last value.
 * - `provider`: velero, cloudnativepg and custom as they are; the operator reference's spelling "cloudnative-pg" (and "cnpg") →
 *   cloudnativepg; any other value (a hand-written CR) → custom, since the API accepts only its enum.
 * - `name` = `apiSlug(spec.name)`: the spec's name when it matches the API's `^[a-z0-9]+(?:-[a-z0-9]+)*$` within 63
 *   characters, else its slug (discovered CRs already carry a slug; hand-written CRs might not).
 * - `k8s_cluster` = the cluster's API id, `created_by_component: 'operator'`.
 */
import type {BackupProvider, BackupRequest, BackupScheduleRequest} from '../../../api/requests.js'
import type {BackupSpec} from '../../../crds/backup.js'
import type {BackupScheduleSpec} from '../../../crds/backupschedule.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'

/** The API's provider enum value of a spec's provider (undefined stays undefined). */
export function backupProvider(provider: string | undefined): BackupProvider | undefined {
  switch (provider) {
    case undefined: case '':
      return undefined
    case 'velero': case 'cloudnativepg': case 'custom':
      return provider
    case 'cloudnative-pg': case 'cnpg':
      return 'cloudnativepg'
    default:
      return 'custom'
  }
}

export function backupPayload(spec: BackupSpec, clusterId: string, scheduleId?: string): BackupRequest {
  return withoutUndefined<BackupRequest>({
    schedule: spec.schedule_name ? scheduleId : undefined,
    name: apiSlug(spec.name),
    provider: backupProvider(spec.provider),
    kind: spec.kind,
    source_namespace: spec.source_namespace ?? '',
    status: spec.status,
    started_at: spec.started_at ?? null,
    completed_at: spec.completed_at ?? null,
    expiration: spec.expiration ?? null,
    size_bytes: spec.size_bytes ?? null,
    items_backed_up: spec.items_backed_up ?? null,
    retention_policy: spec.retention_policy ?? '',
    metadata: withoutUndefined({...structuredClone(spec.metadata ?? {}), schedule_name: spec.schedule_name}),
    k8s_cluster: clusterId,
    created_by_component: 'operator',
  })
}

export function backupSchedulePayload(spec: BackupScheduleSpec, clusterId: string): BackupScheduleRequest {
  return withoutUndefined<BackupScheduleRequest>({
    name: apiSlug(spec.name),
    provider: backupProvider(spec.provider),
    kind: spec.kind,
    source_namespace: spec.source_namespace ?? '',
    status: spec.status,
    schedule_cron: spec.schedule_cron ?? '',
    paused: spec.paused,
    retention_policy: spec.retention_policy ?? '',
    last_backup_at: spec.last_backup_at ?? null,
    total_backups: spec.total_backups,
    metadata: withoutUndefined({...structuredClone(spec.metadata ?? {}), last_backup_name: spec.last_backup_name}),
    k8s_cluster: clusterId,
    created_by_component: 'operator',
  })
}
