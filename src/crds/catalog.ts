/**
 * The names of every polycrate.io kind, without their schemas: the one place they are written. Each definition
 * (`src/crds/<kind>.ts`) takes its names from `crdNames`, and `crds --list` and `--kind` read `crdCatalog` without
 * loading zod and the schema modules (start-up cost). The order is `crds`'s; a unit test keeps it equal to `allCrds`.
 */
export interface CrdNames {
  kind: string
  plural: string
  singular: string
  shortNames: readonly string[]
  scope: 'Namespaced' | 'Cluster'
}

export const CATALOG_GROUP = 'polycrate.io'

/** Each kind's names, by kind, in the order `crds` prints them. */
export const crdNames = {
  OperatorConfig: {kind: 'OperatorConfig', plural: 'operatorconfigs', singular: 'operatorconfig', shortNames: ['oc', 'opcfg'], scope: 'Namespaced'},
  K8sCluster: {kind: 'K8sCluster', plural: 'k8sclusters', singular: 'k8scluster', shortNames: ['k8sc'], scope: 'Namespaced'},
  Endpoint: {kind: 'Endpoint', plural: 'endpoints', singular: 'endpoint', shortNames: ['ep', 'pep'], scope: 'Namespaced'},
  Host: {kind: 'Host', plural: 'hosts', singular: 'host', shortNames: [], scope: 'Namespaced'},
  K8sApp: {kind: 'K8sApp', plural: 'k8sapps', singular: 'k8sapp', shortNames: ['app', 'pca'], scope: 'Namespaced'},
  K8sVolume: {kind: 'K8sVolume', plural: 'k8svolumes', singular: 'k8svolume', shortNames: ['vol', 'pvol'], scope: 'Namespaced'},
  Backup: {kind: 'Backup', plural: 'backups', singular: 'backup', shortNames: ['backup'], scope: 'Namespaced'},
  BackupSchedule: {kind: 'BackupSchedule', plural: 'backupschedules', singular: 'backupschedule', shortNames: ['bs'], scope: 'Namespaced'},
  Certificate: {kind: 'Certificate', plural: 'certificates', singular: 'certificate', shortNames: ['cert', 'pcert'], scope: 'Namespaced'},
  S3Bucket: {kind: 'S3Bucket', plural: 's3buckets', singular: 's3bucket', shortNames: ['s3'], scope: 'Namespaced'},
  Artifact: {kind: 'Artifact', plural: 'artifacts', singular: 'artifact', shortNames: [], scope: 'Cluster'},
  Organization: {kind: 'Organization', plural: 'organizations', singular: 'organization', shortNames: [], scope: 'Namespaced'},
} as const satisfies Record<string, CrdNames>

export const crdCatalog: readonly CrdNames[] = Object.values(crdNames)

/** Finds a kind by kind, plural, singular or short name, in any case. */
export function findKindNames(name: string): CrdNames | undefined {
  const wanted = name.trim().toLowerCase()
  return crdCatalog.find((def) =>
    [def.kind, def.plural, def.singular, ...def.shortNames].some((candidate) => candidate.toLowerCase() === wanted),
  )
}
