/**
 * Backup and BackupSchedule sync: every Backup CR → `/api/v1/backups/backups/`, every BackupSchedule CR →
 * `/api/v1/backups/backup-schedules/`, with the cluster's id, as declarations on the generic sync feature. The
 * API's identity of both is (name, provider, source_namespace, k8s_cluster) (SPEC-NOTES), which is the adopt
 * lookup; a Backup names its schedule in `metadata.schedule_name` and the API resolves it.
 */
import type {Backup, BackupRequest, BackupSchedule, BackupScheduleRequest} from '../../api/index.js'
import {backupCrd, type BackupSpec} from '../../crds/backup.js'
import {backupScheduleCrd, type BackupScheduleSpec} from '../../crds/backup-schedule.js'
import type {ApiSession} from '../agent/api-session.js'
import {finalizers} from '../conventions.js'
import type {Feature} from '../features.js'
import {backupPayload, backupSchedulePayload} from './backup-payload.js'
import {defineSync, type SyncDeclaration} from './sync-feature.js'

/** Backups and schedules alike: the API's identity (name, provider, source_namespace, cluster) is the adopt lookup. */
function backupSync<Spec, Body extends {name: string; provider?: string | null; source_namespace?: string | null}, Api extends {id: string; is_deleted?: boolean | null}>(
  session: ApiSession,
  declaration: Pick<SyncDeclaration<Spec, Body, Api>, 'name' | 'crd' | 'finalizer' | 'noun' | 'api'> & {payload(spec: Spec, clusterId: string): Body},
): Feature {
  return defineSync<Spec, Body, Api>(session, {
    ...declaration,
    enabled: (config) => config.api_sync.enabled && config.backup_discovery.enabled,
    requiresCluster: true,
    payload: (object, {identity}) => declaration.payload(object.spec, identity.clusterId!),
    lookup: (body, identity) => ({
      name_exact: body.name,
      ...(body.provider ? {provider: body.provider} : {}),
      ...(body.source_namespace ? {source_namespace: body.source_namespace} : {}),
      k8s_cluster: identity.clusterId,
    }),
    inventory: (identity) => ({k8s_cluster: identity.clusterId}),
  })
}

export function BackupController(session: ApiSession): Feature {
  return backupSync<BackupSpec, BackupRequest, Backup>(session, {
    name: 'backup-sync', crd: backupCrd, finalizer: finalizers.backupSync, noun: 'backup', api: (client) => client.backups, payload: backupPayload,
  })
}

export function BackupScheduleController(session: ApiSession): Feature {
  return backupSync<BackupScheduleSpec, BackupScheduleRequest, BackupSchedule>(session, {
    name: 'backup-schedule-sync', crd: backupScheduleCrd, finalizer: finalizers.backupScheduleSync, noun: 'backup schedule',
    api: (client) => client.backupSchedules, payload: backupSchedulePayload,
  })
}
