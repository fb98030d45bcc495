/**
 * Backup discovery (`BackupDiscoveryReconciler`): Velero Backups and Schedules and, with
 * `backup_discovery.cnpg_enabled`, CloudNativePG Backups and ScheduledBackups → Backup / BackupSchedule CRs in the
 * namespace of their source, as four declarations on the generic discovery feature (one per source kind, each
 * started when its CRD is Established and stopped when it goes). The mappings are pure (backup.mapping.ts). Sources get no
 * finalizer (Velero and CloudNativePG delete their objects themselves); each CR has an owner reference to its source.
 * `velero_namespace` is where Velero keeps its objects (only that namespace is watched); `ignore_namespaces` skips
 * CloudNativePG objects there and Velero backups of those namespaces.
 */
import {backupCrd, type BackupSpec} from '../../../crds/backup.js'
import {backupScheduleCrd} from '../../../crds/backupschedule.js'
import type {CrdDefinition} from '../../../crds/define.js'
import type {KubeObject, ResourceRef} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {finalizers, labels} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import {cnpgBackup, cnpgScheduledBackup, veleroBackup, veleroSchedule} from './backup.mapping.js'
import {defineDiscovery} from '../../discovery/engine.js'
import {desiredOfOneSource, type DesiredState} from '../../discovery/plan.js'
import {namespaceInScope} from '../../discovery/namespace-scope.js'

type BackupSettings = OperatorConfig['backup_discovery']
type Mapping = (object: never, now: number) => {cr?: {name: string; spec: unknown}; problems: Array<{reason: string; message: string}>}

export const veleroCrds = {backups: 'backups.velero.io', schedules: 'schedules.velero.io'} as const
export const cnpgCrds = {backups: 'backups.postgresql.cnpg.io', scheduledBackups: 'scheduledbackups.postgresql.cnpg.io'} as const

interface BackupSource {
  name: string
  provider: 'velero' | 'cloudnativepg'
  kind: string
  apiVersion: string
  resource: ResourceRef
  crd: string
  target: CrdDefinition
  map: Mapping
  /** Velero keeps its objects in one namespace; CloudNativePG's live beside their database clusters. */
  namespace(settings: BackupSettings): string | undefined
  enabled(settings: BackupSettings): boolean
}

/** The source namespace a backup is about (for ignore_namespaces): the spec's, else the source's own. */
function sourceNamespaceOf(spec: unknown, object: KubeObject): string | undefined {
  return (spec as Pick<BackupSpec, 'source_namespace'> | undefined)?.source_namespace ?? object.metadata?.namespace
}

/** The Backup or BackupSchedule CR of one source object (pure). */
export function desiredBackup(source: BackupSource, key: string, object: KubeObject | undefined, settings: BackupSettings, now: number): DesiredState {
  const [namespace = '', name = ''] = key.split('/')
  return desiredOfOneSource({kind: source.kind, apiVersion: source.apiVersion, namespace, name, object}, namespace, (found) => {
    const {cr, problems} = source.map(found as never, now)
    // A backup about no single namespace (a cluster-wide one) is kept: the ignore list names namespaces.
    const about = cr && sourceNamespaceOf(cr.spec, found)
    if (about && !namespaceInScope(about, {ignore_namespaces: settings.ignore_namespaces})) return {problems: []}
    return {cr: cr && {...cr, labels: {[labels.backupProvider]: source.provider}}, problems}
  })
}

function backupDiscovery(source: BackupSource): Feature<OperatorConfig> {
  return defineDiscovery<BackupSettings>({
    name: source.name,
    target: source.target,
    enabled: (config) => config.backup_discovery.enabled && source.enabled(config.backup_discovery),
    requiredCrds: [source.crd],
    settings: (config) => config.backup_discovery,
    staleCleanupMinutes: (config) => config.backup_discovery.stale_cleanup_minutes,
    targetLabels: {[labels.backupProvider]: source.provider},
    sources: (settings) => [{
      id: 'source',
      kind: source.kind,
      apiVersion: source.apiVersion,
      request: {resource: {...source.resource, namespace: source.namespace(settings)}, kind: source.kind},
      groupsOf: (object) => [`${object.metadata?.namespace}/${object.metadata?.name}`],
    }],
    targetGroup: (object) => `${object.metadata.namespace}/${(object.spec as {source?: {name?: string}} | undefined)?.source?.name ?? object.metadata.name}`,
    targetSource: (object) => {
      const ref = (object.spec as {source?: {kind: string; name: string}} | undefined)?.source
      return ref ? {kind: ref.kind, apiVersion: source.apiVersion, namespace: object.metadata.namespace, name: ref.name} : undefined
    },
    desired: (key, caches, settings, {now}) => desiredBackup(source, key, caches.get('source', key), settings, now),
    syncFinalizer: source.target === backupCrd ? finalizers.backupSync : finalizers.backupScheduleSync,
  })
}

export const veleroBackupDiscovery = backupDiscovery({
  name: 'velero-backup-discovery', provider: 'velero', kind: 'Backup', apiVersion: 'velero.io/v1', resource: resources.veleroBackups,
  crd: veleroCrds.backups, target: backupCrd, map: veleroBackup as Mapping,
  namespace: (settings) => settings.velero_namespace, enabled: () => true,
})
export const veleroScheduleDiscovery = backupDiscovery({
  name: 'velero-schedule-discovery', provider: 'velero', kind: 'Schedule', apiVersion: 'velero.io/v1', resource: resources.veleroSchedules,
  crd: veleroCrds.schedules, target: backupScheduleCrd, map: veleroSchedule as Mapping,
  namespace: (settings) => settings.velero_namespace, enabled: () => true,
})
export const cnpgBackupDiscovery = backupDiscovery({
  name: 'cnpg-backup-discovery', provider: 'cloudnativepg', kind: 'Backup', apiVersion: 'postgresql.cnpg.io/v1', resource: resources.cnpgBackups,
  crd: cnpgCrds.backups, target: backupCrd, map: cnpgBackup as Mapping,
  namespace: () => undefined, enabled: (settings) => settings.cnpg_enabled,
})
export const cnpgScheduleDiscovery = backupDiscovery({
  name: 'cnpg-schedule-discovery', provider: 'cloudnativepg', kind: 'ScheduledBackup', apiVersion: 'postgresql.cnpg.io/v1', resource: resources.cnpgScheduledBackups,
  crd: cnpgCrds.scheduledBackups, target: backupScheduleCrd, map: cnpgScheduledBackup as Mapping,
  namespace: () => undefined, enabled: (settings) => settings.cnpg_enabled,
})

/** `BackupDiscoveryReconciler` of the operator reference: the four source kinds. */
export const BackupDiscoveryReconciler: readonly Feature<OperatorConfig>[] = [veleroBackupDiscovery, veleroScheduleDiscovery, cnpgBackupDiscovery, cnpgScheduleDiscovery]
