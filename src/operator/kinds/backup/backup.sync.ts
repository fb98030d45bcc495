/**
 * Backup and BackupSchedule sync: every Backup CR → `/api/v1/backups/backups/`, every BackupSchedule CR →
 * `/api/v1/backups/backup-schedules/`, with the cluster's id, as declarations on the generic sync feature. The
 * API's identity of both is (name, provider, source_namespace, k8s_cluster), which is the adopt
 * lookup; a Backup links its schedule by the BackupSchedule CR's API id (`schedule`, `status.schedule_id`), resynced
 * when the schedule gets one, so the link does not depend on which synced first.
 */
import type {Backup, BackupRequest, BackupSchedule, BackupScheduleRequest} from '../../../api/index.js'
import {backupCrd, type BackupSpec} from '../../../crds/backup.js'
import {backupScheduleCrd, type BackupScheduleSpec} from '../../../crds/backupschedule.js'
import type {CustomObject} from '../../../crds/define.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {apiSlug} from '../../../lib/api-names.js'
import {backupPayload, backupProvider, backupSchedulePayload} from './backup.payload.js'
import {defineSync, type SyncDeclaration} from '../../sync/engine.js'

/** Backups and schedules alike: the API's identity (name, provider, source_namespace, cluster) is the adopt lookup. */
function backupSync<Spec, Body extends {name: string; provider?: string | null; source_namespace?: string | null}, Api extends {id: string; is_deleted?: boolean | null}, Links = undefined>(
  session: ApiSession,
  declaration: Pick<SyncDeclaration<Spec, Body, Api, Links>, 'name' | 'crd' | 'finalizer' | 'noun' | 'api' | 'related' | 'links' | 'extraStatus'> & {payload(spec: Spec, clusterId: string, links: Links): Body},
): Feature<OperatorConfig> {
  return defineSync<Spec, Body, Api, Links>(session, {
    ...declaration,
    enabled: (config) => config.api_sync.enabled && config.backup_discovery.enabled,
    requiresCluster: true,
    payload: (object, {identity, links}) => declaration.payload(object.spec, identity.clusterId!, links),
    lookup: (body, identity) => ({
      name_exact: body.name,
      ...(body.provider ? {provider: body.provider} : {}),
      ...(body.source_namespace ? {source_namespace: body.source_namespace} : {}),
      k8s_cluster: identity.clusterId,
    }),
    inventory: (identity) => ({k8s_cluster: identity.clusterId}),
  })
}

type ScheduleCr = CustomObject<Partial<BackupScheduleSpec>, {api_id?: string}>

/** Whether a BackupSchedule CR is the schedule a Backup CR names (same namespace, API name and provider). */
export function isScheduleOf(schedule: ScheduleCr, backup: CustomObject<Partial<BackupSpec>, unknown>): boolean {
  return !!backup.spec?.schedule_name && !!schedule.spec?.name
    && schedule.metadata.namespace === backup.metadata.namespace
    && apiSlug(schedule.spec.name) === backup.spec.schedule_name
    && backupProvider(schedule.spec.provider) === backupProvider(backup.spec.provider)
}

export function BackupController(session: ApiSession): Feature<OperatorConfig> {
  return backupSync<BackupSpec, BackupRequest, Backup, {scheduleId?: string}>(session, {
    name: 'backup-sync', crd: backupCrd, finalizer: finalizers.backupSync, noun: 'backup', api: (client) => client.backups,
    // The Backup links its schedule by the schedule's API id, which exists only once the BackupSchedule synced:
    // a schedule's change (its api_id above all) resyncs the backups naming it.
    related: {
      crd: backupScheduleCrd,
      toKeys: (schedule, backups) => backups.listNamespace(schedule.metadata.namespace ?? '')
        .filter((backup) => isScheduleOf(schedule as ScheduleCr, backup))
        .map((backup) => `${backup.metadata.namespace}/${backup.metadata.name}`),
      // Only what the link depends on: a schedule's routine updates (last backup, status writes) resync nothing.
      changed: (old, next) => {
        const linkOf = (schedule: ScheduleCr) => JSON.stringify([schedule.status?.api_id, schedule.spec?.name, schedule.spec?.provider, Boolean(schedule.metadata.deletionTimestamp)])
        return linkOf(old as ScheduleCr) !== linkOf(next as ScheduleCr)
      },
    },
    links: async (object, _api, _identity, _signal, related) => {
      if (!object.spec.schedule_name) return {}
      const schedule = related.listNamespace(object.metadata.namespace ?? '')
        .find((candidate) => !candidate.metadata.deletionTimestamp && isScheduleOf(candidate as ScheduleCr, object))
      return {scheduleId: (schedule as ScheduleCr | undefined)?.status?.api_id}
    },
    payload: (spec, clusterId, links) => backupPayload(spec, clusterId, links.scheduleId),
    extraStatus: (links) => (links.scheduleId ? {schedule_id: links.scheduleId} : {}),
  })
}

export function BackupScheduleController(session: ApiSession): Feature<OperatorConfig> {
  return backupSync<BackupScheduleSpec, BackupScheduleRequest, BackupSchedule>(session, {
    name: 'backup-schedule-sync', crd: backupScheduleCrd, finalizer: finalizers.backupScheduleSync, noun: 'backup schedule',
    api: (client) => client.backupSchedules, payload: backupSchedulePayload,
  })
}
