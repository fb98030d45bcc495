/**
 * The S3 side of the simulator: regions and their S3 clusters, bucket-name availability across
 * workspaces, per-workspace bucket quotas, and credential rotation. Keys have a recognisable shape
 * (`S3_KEY_PATTERN`) so that `.ci/run` can check that no test output ever shows one.
 */
import {randomBytes, randomUUID} from 'node:crypto'
import {fieldError, ok, type Reply} from './http.js'
import type {JsonObject} from './models.js'

/** An access key `SIMS3AK` + 20 hex digits, a secret key `sim_s3sk_` + 40 hex digits. */
export const S3_KEY_PATTERN = /SIMS3AK[0-9A-F]{20}|sim_s3sk_[0-9a-f]{40}/

export interface S3Region {
  /** The workspaces.Region id a bucket request names. */
  id: string
  /** The region string (`fsn1`) users write in `S3Bucket.spec.region`. */
  name: string
  /** Its (legacy) S3 cluster; SystemConfig `default_s3_bucket_cluster` names one of these. */
  clusterId: string
  endpoint: string
}

function region(name: string): S3Region {
  return {id: randomUUID(), name, clusterId: randomUUID(), endpoint: `https://s3.${name}.polycrate-sim.invalid`}
}

export class S3Side {
  /** Known regions; tests may add or remove some. */
  readonly regions: S3Region[] = [region('fsn1'), region('nbg1'), region('hel1')]
  /** workspace id → how many live buckets it may have. */
  readonly quotas = new Map<string, number>()
  /** Set: the bucket's credentials are not provisioned yet (an empty list), as while a RadosGW user is created. */
  credentialsPending = false

  regionById(id: unknown): S3Region | undefined {
    return this.regions.find((candidate) => candidate.id === id || candidate.clusterId === id)
  }

  regionByName(name: string): S3Region | undefined {
    return this.regions.find((candidate) => candidate.name === name)
  }

  /** `region` (given, or the region of SystemConfig's default cluster), `s3_cluster`, `s3_endpoint`, `s3_region`. */
  bucketDefaults(object: JsonObject, defaultCluster: unknown): void {
    const given = object.region !== undefined && object.region !== null
    const known = this.regionById(given ? object.region : defaultCluster)
    if (!given) object.region = known?.id ?? defaultCluster ?? null
    object.s3_cluster ??= known?.clusterId ?? object.region
    object.s3_endpoint ??= known?.endpoint ?? 'https://s3.polycrate-sim.invalid'
    object.s3_region ??= known?.name ?? 'sim-1'
  }

  /** A quota error when `workspace` already has its quota of live buckets. */
  quotaError(workspace: unknown, liveBuckets: readonly JsonObject[]): {attr: string; code: string; detail: string} | undefined {
    const quota = typeof workspace === 'string' ? this.quotas.get(workspace) : undefined
    if (quota === undefined) return undefined
    const used = liveBuckets.filter((bucket) => bucket.workspace === workspace).length
    if (used < quota) return undefined
    return {attr: 'non_field_errors', code: 'quota_exceeded', detail: `S3 bucket quota reached: the workspace has ${used} of ${quota} buckets. Delete a bucket or ask for a higher quota.`}
  }

  /** A fresh primary credential with recognisable keys. */
  newCredential(bucket: JsonObject, now: string): JsonObject {
    const accessKey = `SIMS3AK${randomBytes(10).toString('hex').toUpperCase()}`
    return {
      id: randomUUID(),
      name: `${String(bucket.name ?? 'bucket')}-primary`,
      description: 'Primary access key',
      api_user: accessKey,
      created_at: now,
      updated_at: now,
      active: true,
      metadata: {},
      permissions: ['read', 'write'],
      subuser_id: null,
      principal_arn: null,
      type: 's3',
      organization: bucket.organization ?? null,
      access_key: accessKey,
      secret_key: `sim_s3sk_${randomBytes(20).toString('hex')}`,
    }
  }

  /** Fixed routes under /api/v1/: `s3/regions`, `s3/clusters`, `s3/buckets/available`; undefined for others. */
  route(path: string, method: string, query: URLSearchParams, liveBuckets: () => JsonObject[]): Reply | undefined {
    if (method !== 'GET') return undefined
    if (path === 's3/regions') return ok(this.page(this.regions.map((r) => ({id: r.id, name: r.name, legacy_s3_cluster: r.clusterId}))))
    if (path === 's3/clusters') return ok(this.page(this.regions.map((r) => this.cluster(r))))
    const clusterId = /^s3\/clusters\/([^/]+)$/.exec(path)?.[1]
    if (clusterId) {
      const found = this.regions.find((r) => r.clusterId === clusterId)
      return found ? ok(this.cluster(found)) : undefined
    }
    if (path === 's3/buckets/available') {
      const bucket = query.get('bucket') ?? ''
      if (bucket === '') return fieldError('bucket', 'required', 'This query parameter is required.')
      const wanted = this.regionById(query.get('region')) ?? this.regionByName(query.get('region') ?? '')
      const taken = liveBuckets().some((candidate) => candidate.name === bucket && (!wanted || this.regionById(candidate.region) === wanted))
      return ok({bucket, region: wanted?.name ?? query.get('region'), available: !taken})
    }
    return undefined
  }

  private cluster(r: S3Region): JsonObject {
    return {id: r.clusterId, name: `s3-${r.name}`, endpoint: r.endpoint.replace(/^https:\/\//, ''), kind: 'rook-ceph', region: {id: r.id, name: r.name}, allow_new_buckets: true}
  }

  private page(results: JsonObject[]): JsonObject {
    return {count: results.length, next: null, previous: null, results}
  }
}
