/**
 * The names of every polycrate.io kind, without their schemas: what `crds --list` and `--kind` need, loaded without
 * zod and the schema modules (start-up cost). The order is `crds`'s; a unit test keeps it equal to `allCrds`.
 */
export interface CrdNames {
  kind: string
  plural: string
  singular: string
  shortNames: readonly string[]
  scope: 'Namespaced' | 'Cluster'
}

export const CATALOG_GROUP = 'polycrate.io'

export const crdCatalog: readonly CrdNames[] = [
  {kind: 'OperatorConfig', plural: 'operatorconfigs', singular: 'operatorconfig', shortNames: ['oc', 'opcfg'], scope: 'Namespaced'},
  {kind: 'K8sCluster', plural: 'k8sclusters', singular: 'k8scluster', shortNames: ['k8sc'], scope: 'Namespaced'},
  {kind: 'Endpoint', plural: 'endpoints', singular: 'endpoint', shortNames: ['ep', 'pep'], scope: 'Namespaced'},
  {kind: 'Host', plural: 'hosts', singular: 'host', shortNames: [], scope: 'Namespaced'},
  {kind: 'K8sApp', plural: 'k8sapps', singular: 'k8sapp', shortNames: ['app', 'pca'], scope: 'Namespaced'},
  {kind: 'K8sVolume', plural: 'k8svolumes', singular: 'k8svolume', shortNames: ['vol', 'pvol'], scope: 'Namespaced'},
  {kind: 'Backup', plural: 'backups', singular: 'backup', shortNames: ['backup'], scope: 'Namespaced'},
  {kind: 'BackupSchedule', plural: 'backupschedules', singular: 'backupschedule', shortNames: ['bs'], scope: 'Namespaced'},
  {kind: 'Certificate', plural: 'certificates', singular: 'certificate', shortNames: ['cert', 'pcert'], scope: 'Namespaced'},
  {kind: 'S3Bucket', plural: 's3buckets', singular: 's3bucket', shortNames: ['s3'], scope: 'Namespaced'},
  {kind: 'Artifact', plural: 'artifacts', singular: 'artifact', shortNames: [], scope: 'Cluster'},
  {kind: 'Organization', plural: 'organizations', singular: 'organization', shortNames: [], scope: 'Namespaced'},
]

/** Finds a kind by kind, plural, singular or short name, in any case. */
export function findKindNames(name: string): CrdNames | undefined {
  const wanted = name.trim().toLowerCase()
  return crdCatalog.find((def) =>
    [def.kind, def.plural, def.singular, ...def.shortNames].some((candidate) => candidate.toLowerCase() === wanted),
  )
}
