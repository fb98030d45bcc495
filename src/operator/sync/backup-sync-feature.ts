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
import {defineSync} from './sync-feature.js'

const identity = (body: {name: string; provider?: string | null; source_namespace?: string | null}, clusterId: string | undefined) => ({
  name_exact: body.name,
  ...(body.provider ? {provider: body.provider} : {}),
  ...(body.source_namespace ? {source_namespace: body.source_namespace} : {}),
  k8s_cluster: clusterId,
})

export function BackupController(session: ApiSession): Feature {
  return defineSync<BackupSpec, BackupRequest, Backup>(session, {
    name: 'backup-sync',
    crd: backupCrd,
    finalizer: finalizers.backupSync,
    noun: 'backup',
    enabled: (config) => config.api_sync.enabled && config.backup_discovery.enabled,
    api: (client) => client.backups,
    requiresCluster: true,
    payload: (object, {identity: id}) => backupPayload(object.spec, id.clusterId!),
    lookup: (body, id) => identity(body, id.clusterId),
    inventory: (id) => ({k8s_cluster: id.clusterId}),
  })
}

export function BackupScheduleController(session: ApiSession): Feature {
  return defineSync<BackupScheduleSpec, BackupScheduleRequest, BackupSchedule>(session, {
    name: 'backup-schedule-sync',
    crd: backupScheduleCrd,
    finalizer: finalizers.backupScheduleSync,
    noun: 'backup schedule',
    enabled: (config) => config.api_sync.enabled && config.backup_discovery.enabled,
    api: (client) => client.backupSchedules,
    requiresCluster: true,
    payload: (object, {identity: id}) => backupSchedulePayload(object.spec, id.clusterId!),
    lookup: (body, id) => identity(body, id.clusterId),
    inventory: (id) => ({k8s_cluster: id.clusterId}),
  })
}
