/**
 * S3Bucket provisioning (CR → API → Secret), the pure part: the S3 naming rules checked before any API call, the
 * credential Secret `s3-<bucket>-credentials` (its keys are a contract with the workloads that mount it), the
 * status of each phase (`Pending → Provisioning → WaitingForCredentials → Ready`, `Error`), and what an API error
 * means for the person who wrote the CR. Nothing here logs or returns a key outside the Secret's data.
 */
import {ApiAuthError, ApiConflictError, ApiError, ApiNetworkError, ApiValidationError, type S3CredentialWithSecrets} from '../../../api/index.js'
import {API_VERSION} from '../../../crds/define.js'
import type {Condition} from '../../../crds/schema.js'
import type {S3BucketSpec} from '../../../crds/s3bucket.js'
import {setStatusCondition} from '../../../kube/conditions.js'
import {conditionTypes, labels, labelValue} from '../../conventions.js'

export type S3Phase = 'Pending' | 'Provisioning' | 'WaitingForCredentials' | 'Ready' | 'Error'

/** A broken rule of the spec: `rule` is the reason of the condition, `message` says what to change. */
export interface SpecProblem {
  rule: string
  message: string
}

/** S3's bucket naming rules (general purpose buckets), in the order they are reported. */
const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-']
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3']

/** Every S3 naming rule `name` breaks (pure); empty when it is a valid bucket name. */
export function bucketNameProblems(name: string): SpecProblem[] {
  const problems: SpecProblem[] = []
  const shown = JSON.stringify(name)
  const rule = (id: string, text: string, detail: string) =>
    problems.push({rule: id, message: `Bucket name ${shown} breaks the S3 naming rule "${text}": ${detail}. Change spec.name.`})
  if (name.length < 3 || name.length > 63) rule('BucketNameLength', 'between 3 and 63 characters long', `it has ${name.length}`)
  const bad = [...new Set(name.replace(/[a-z0-9.-]/g, ''))]
  if (bad.length > 0) rule('BucketNameCharacters', 'only lowercase letters, digits, dots and hyphens', `it contains ${bad.map((c) => JSON.stringify(c)).join(', ')}`)
  if (name.length > 0 && (!/^[a-zA-Z0-9]/.test(name) || !/[a-zA-Z0-9]$/.test(name))) rule('BucketNameStartEnd', 'begins and ends with a letter or digit', 'it does not')
  if (name.includes('..')) rule('BucketNameAdjacentDots', 'no two adjacent dots', 'it has ".."')
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) rule('BucketNameIPAddress', 'not formatted as an IP address', 'it looks like one')
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p))
  if (prefix) rule('BucketNameReservedPrefix', `does not start with ${RESERVED_PREFIXES.join(', ')}`, `it starts with ${JSON.stringify(prefix)}`)
  const suffix = RESERVED_SUFFIXES.find((s) => name.endsWith(s))
  if (suffix) rule('BucketNameReservedSuffix', `does not end with ${RESERVED_SUFFIXES.join(', ')}`, `it ends with ${JSON.stringify(suffix)}`)
  return problems
}

/** Every problem of the spec that is visible without the API (pure). */
export function specProblems(spec: Partial<S3BucketSpec> | undefined): SpecProblem[] {
  const problems = typeof spec?.name === 'string' ? bucketNameProblems(spec.name) : [{rule: 'BucketNameMissing', message: 'spec.name is missing: set the name of the S3 bucket.'}]
  const region = spec?.region
  if (region !== undefined && region !== '' && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(region)) {
    problems.push({rule: 'InvalidRegion', message: `spec.region ${JSON.stringify(region)} is not a region name (lowercase letters, digits and hyphens, e.g. fsn1). Fix spec.region or leave it empty for the default region.`})
  }
  const policy = spec?.reclaim_policy as string | undefined
  if (policy !== undefined && policy !== 'retain' && policy !== 'delete') {
    problems.push({rule: 'InvalidReclaimPolicy', message: `spec.reclaim_policy ${JSON.stringify(policy)} is neither "retain" nor "delete".`})
  }
  return problems
}

/** What the status remembers of a provisioned bucket. */
export interface ProvisionedFacts {
  bucketName?: string
  region?: string
}

/** spec.name or spec.region changed after the bucket was provisioned (pure): the message, or undefined. */
export function immutableChange(spec: Partial<S3BucketSpec>, provisioned: ProvisionedFacts): string | undefined {
  if (!provisioned.bucketName) return undefined
  if (spec.name !== provisioned.bucketName) {
    return `spec.name changed from ${JSON.stringify(provisioned.bucketName)} to ${JSON.stringify(spec.name)} after the bucket was provisioned; a bucket cannot be renamed. Set spec.name back, or create a new S3Bucket for the other bucket.`
  }
  if (spec.region && provisioned.region && spec.region !== provisioned.region) {
    return `spec.region changed from ${JSON.stringify(provisioned.region)} to ${JSON.stringify(spec.region)} after the bucket was provisioned; a bucket cannot move. Set spec.region back, or create a new S3Bucket for a bucket in the other region.`
  }
  return undefined
}

export function credentialsSecretName(bucketName: string): string {
  return `s3-${bucketName}-credentials`
}

export const SECRET_OBJECT_TYPE = 's3-credentials'
export const MANAGED_BY_OPERATOR = 'operator'

/** The keys of the credential Secret, as the operator reference lists them. */
export interface BucketCredentials {
  AWS_ACCESS_KEY_ID: string
  AWS_SECRET_ACCESS_KEY: string
  S3_ENDPOINT: string
  S3_REGION: string
  BUCKET_NAME: string
}

/** The bucket's usable key pair: the first active credential with both keys (pure); undefined when none yet. */
export function pickCredential(credentials: readonly S3CredentialWithSecrets[]): {accessKey: string; secretKey: string} | undefined {
  const usable = credentials.find((c) => c.active !== false && c.access_key && c.secret_key)
  return usable ? {accessKey: usable.access_key!, secretKey: usable.secret_key!} : undefined
}

export interface SecretOwner {
  name: string
  namespace: string
  uid: string
}

export interface SecretObject {
  apiVersion: 'v1'
  kind: 'Secret'
  metadata: {name: string; namespace: string; labels: Record<string, string>; ownerReferences: Array<Record<string, unknown>>}
  type: 'Opaque'
  data: Record<string, string>
}

/** The credential Secret of a bucket (pure), with base64 `data` (what the operator reference's `stringData` becomes). */
export function desiredSecret(owner: SecretOwner, values: BucketCredentials): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: credentialsSecretName(values.BUCKET_NAME),
      namespace: owner.namespace,
      labels: {
        [labels.managedBy]: MANAGED_BY_OPERATOR,
        [labels.objectType]: SECRET_OBJECT_TYPE,
        [labels.s3BucketName]: labelValue(values.BUCKET_NAME),
        [labels.s3BucketRegion]: labelValue(values.S3_REGION),
      },
      ownerReferences: [{apiVersion: API_VERSION, kind: 'S3Bucket', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true}],
    },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(values).map(([key, value]) => [key, Buffer.from(value, 'utf8').toString('base64')])),
  }
}

interface ActualSecret {
  metadata?: {labels?: Record<string, string>; ownerReferences?: Array<{kind?: string; uid?: string}>}
  data?: Record<string, string>
}

/**
 * How the Secret in the cluster differs from the desired one (pure): `missing`, `credentials` (the keys' values
 * changed, e.g. rotated in the API), `edited` (labels, owner or other values changed by someone), or undefined.
 */
export function secretDrift(actual: ActualSecret | undefined, desired: SecretObject): 'missing' | 'credentials' | 'edited' | undefined {
  if (!actual) return 'missing'
  const data = actual.data ?? {}
  const keyChanged = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].some((key) => data[key] !== desired.data[key])
  const otherChanged = Object.entries(desired.data).some(([key, value]) => data[key] !== value)
  const labelsChanged = Object.entries(desired.metadata.labels).some(([key, value]) => actual.metadata?.labels?.[key] !== value)
  const ownerMissing = !actual.metadata?.ownerReferences?.some((ref) => ref.uid === desired.metadata.ownerReferences[0]!.uid)
  if (keyChanged) return 'credentials'
  return otherChanged || labelsChanged || ownerMissing ? 'edited' : undefined
}

/** What a failed API call means: the reason and message for the status, and whether a retry can help. */
export function explainApiError(error: unknown, bucketName: string, region: string): {reason: string; message: string; terminal: boolean} {
  if (error instanceof ApiConflictError) {
    return {reason: 'BucketNameTaken', terminal: true, message: `The bucket name ${JSON.stringify(bucketName)} is taken in region ${region} by another workspace: choose another spec.name.`}
  }
  if (error instanceof ApiValidationError) {
    if (error.code === 'quota_exceeded') return {reason: 'QuotaExceeded', terminal: true, message: `The Polycrate API refused the bucket: ${error.detail}`}
    if (error.attr === 'region') return {reason: 'RegionUnknown', terminal: true, message: `The Polycrate API does not know region ${region}: ${error.detail} Fix spec.region.`}
    return {reason: 'APIRefused', terminal: true, message: `The Polycrate API refused the bucket: ${error.detail || error.message}`}
  }
  if (error instanceof ApiAuthError) {
    return error.forbidden
      ? {reason: 'APIRefused', terminal: true, message: `The Polycrate API does not allow this operator's token to manage S3 buckets (403): grant the agent token access to S3 in the workspace.`}
      : {reason: 'APIUnauthorized', terminal: false, message: 'The Polycrate API rejected the operator\'s token (401): check api_sync.credentials_ref in the OperatorConfig.'}
  }
  if (error instanceof ApiNetworkError || (error instanceof ApiError && (error.status >= 500 || error.status === 429))) {
    return {reason: 'APIUnavailable', terminal: false, message: `The Polycrate API is unavailable (${(error as Error).message}); retrying with backoff.`}
  }
  return {reason: 'ProvisioningFailed', terminal: false, message: `Provisioning failed, retrying with backoff: ${(error as Error).message}`}
}

export interface S3StatusFacts {
  bucketId?: string
  bucketName?: string
  region?: string
  s3Region?: string
  endpoint?: string
  credentialsSecret?: string
  adopted?: boolean
  syncedAt?: string
}

/**
 * The status after a step (pure): phase, sync_status, the bucket's facts (kept from `previous` where this step
 * does not know them), message and the Ready condition (`lastTransitionTime` moves only on a flip).
 */
export function s3StatusPatch(
  previous: Record<string, unknown> | undefined,
  generation: number | undefined,
  state: {phase: S3Phase; reason: string; message: string},
  facts: S3StatusFacts,
  now: string,
): Record<string, unknown> {
  const keep = <T>(value: T | undefined, key: string) => value ?? (previous?.[key] as T | undefined)
  const ready = state.phase === 'Ready'
  const bucketId = keep(facts.bucketId, 'bucket_id')
  return {
    phase: state.phase,
    sync_status: ready ? 'synced' : state.phase === 'Error' ? 'error' : 'pending',
    api_id: bucketId,
    bucket_id: bucketId,
    bucket_name: keep(facts.bucketName, 'bucket_name'),
    region: keep(facts.region, 'region'),
    s3_region: keep(facts.s3Region, 's3_region'),
    endpoint: keep(facts.endpoint, 'endpoint'),
    credentials_secret: keep(facts.credentialsSecret, 'credentials_secret'),
    adopted: keep(facts.adopted, 'adopted'),
    last_synced_at: keep(facts.syncedAt, 'last_synced_at'),
    observed_generation: generation,
    message: state.message,
    conditions: setStatusCondition(previous?.conditions as Condition[] | undefined, {
      type: conditionTypes.ready, status: ready ? 'True' : 'False', reason: state.reason, message: state.message, observedGeneration: generation,
    }, now),
  }
}
