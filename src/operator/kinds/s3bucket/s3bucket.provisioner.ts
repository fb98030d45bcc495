/**
 * The reconcile of one S3Bucket CR (s3bucket.reconciler.ts wires it to a controller): the spec checks, the API bucket
 * (known, adopted or created), its keys and the credentials Secret, the status and the Events. Keys live only in the
 * Secret's data: never in logs, Events, conditions, status or errors.
 */
import {adoptOrCreate, ApiNotFoundError, findExisting, type PolycrateApiClient, type S3Bucket} from '../../../api/index.js'
import {API_VERSION, crdFullName, crdResource, type CustomObject} from '../../../crds/define.js'
import {s3BucketCrd, type S3BucketSpec} from '../../../crds/s3bucket.js'
import type {KubeClient, KubeObject} from '../../../kube/client.js'
import type {EventRecorder} from '../../../kube/events.js'
import {objectRef, resources} from '../../../kube/resources.js'
import type {Logger} from '../../../lib/logger.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {ObjectCache} from '../../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../../runtime/controller.js'
import {Finalizer} from '../../runtime/finalizer.js'
import {statusUnchanged} from '../../sync/status.js'
import {credentialsSecretName, desiredSecret, explainApiError, immutableChange, pickCredential, s3StatusPatch, secretDrift, specProblems, type S3Phase, type S3StatusFacts} from './s3bucket.mapping.js'
import {resolveRegion, type ResolvedRegion} from './s3bucket.region.js'
import {isoNow, systemClock, type Clock} from '../../../lib/clock.js'

export type S3BucketObject = CustomObject<S3BucketSpec, Record<string, unknown>>
export type SecretObject = KubeObject & {data?: Record<string, string>; metadata: {ownerReferences?: Array<{kind?: string; name?: string; uid?: string}>}}

/** While the API has no key for a new bucket yet, look again this soon. */
export const CREDENTIALS_POLL_MS = 3000

/** The status facts of a bucket that exists (pure). */
export function bucketFacts(name: string, region: ResolvedRegion, bucket: Pick<S3Bucket, 'id' | 's3_region' | 's3_endpoint'>, adopted: boolean): S3StatusFacts {
  return {
    bucketId: bucket.id, bucketName: name, region: region.name, s3Region: bucket.s3_region ?? region.name,
    endpoint: bucket.s3_endpoint ?? undefined, credentialsSecret: credentialsSecretName(name), adopted,
  }
}

/** The Event of a credentials Secret write: first written, keys rotated, or restored after a delete or an edit (pure). */
export function credentialsEvent(drift: 'missing' | 'credentials' | 'edited', wasReady: boolean, secretName: string): [reason: string, message: string] {
  return !wasReady && drift === 'missing'
    ? ['CredentialsWritten', `The bucket's credentials were written to the Secret ${secretName}.`]
    : drift === 'credentials'
      ? ['CredentialsUpdated', `The bucket's access keys changed in the Polycrate API (or in the Secret); the Secret ${secretName} was rewritten.`]
      : ['CredentialsRestored', `The Secret ${secretName} was ${drift === 'missing' ? 'deleted' : 'edited'}; it was restored.`]
}

export interface S3BucketProvisionerOptions {
  session: Pick<ApiSession, 'client' | 'problem'>
  client: KubeClient
  buckets: ObjectCache<S3BucketObject>
  /** The operator's credential Secrets. */
  secrets: ObjectCache<SecretObject>
  events: Pick<EventRecorder, 'record'>
  /** The sync interval: keys are fetched again this often. */
  intervalMs: number
  /** The manager's clock (status timestamps). */
  clock?: Clock
}

export class S3BucketProvisioner {
  readonly finalizer: Finalizer<S3BucketObject>
  private readonly resource = crdResource(s3BucketCrd)

  constructor(private readonly options: S3BucketProvisionerOptions) {
    this.finalizer = new Finalizer<S3BucketObject>({client: options.client, name: finalizers.s3Bucket, resource: this.resource, crd: crdFullName(s3BucketCrd)})
  }

  async reconcile({key, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    const cached = this.options.buckets.get(key)
    if (!cached) return
    const object: S3BucketObject = {...cached, status: cached.status ? {...cached.status} : undefined}
    // Its CRD is being deleted, not the CR by a user: whatever the CR says, the API object is kept.
    if (await this.finalizer.finalize(object, signal, {kept: () => logger.info('CR goes with its CRD; the API S3 bucket is kept'), cleanup: () => this.cleanup(object, logger, signal)})) return
    if (await this.refuseSpec(object, signal)) return
    if (!object.status?.phase) await this.writeStatus(object, 'Pending', 'Accepted', 'Waiting to provision the bucket.', {}, signal)
    const {session} = this.options
    const api = session.client
    if (!api) {
      await this.writeStatus(object, 'Pending', 'APINotConnected', `Waiting for the Polycrate API connection: ${session.problem ?? 'the first health report is still out'}.`, {}, signal)
      return // a change of the session requeues every S3Bucket
    }
    // On before the API bucket can exist, so reclaim_policy: delete can never be skipped.
    await this.finalizer.add(object, signal)
    const attempt = {regionName: object.spec.region || (object.status?.region as string | undefined)}
    try {
      return await this.provision(object, api, attempt, logger, signal)
    } catch (error) {
      if (signal.aborted) throw error
      const explained = explainApiError(error, object.spec.name, attempt.regionName ?? 'the default region')
      await this.fail(object, explained.reason, explained.message, signal)
      if (explained.terminal) return {requeueAfterMs: this.options.intervalMs}
      throw error
    }
  }

  /** Checked before any API call: the S3 naming rules, then the fields that cannot change once provisioned. */
  private async refuseSpec(object: S3BucketObject, signal: AbortSignal): Promise<boolean> {
    const problems = specProblems(object.spec)
    if (problems.length > 0) {
      await this.fail(object, problems[0]!.rule, problems.map((problem) => problem.message).join(' '), signal)
      return true
    }
    const frozen = immutableChange(object.spec, {bucketName: object.status?.bucket_name as string | undefined, region: object.status?.region as string | undefined})
    if (frozen) {
      await this.fail(object, 'ImmutableFieldChanged', frozen, signal)
      return true
    }
    return false
  }

  /** Region, bucket, keys, Secret, Ready. `attempt.regionName` follows the resolved region (for error messages). */
  private async provision(object: S3BucketObject, api: PolycrateApiClient, attempt: {regionName?: string}, logger: Logger, signal: AbortSignal): Promise<ReconcileResult> {
    const {intervalMs} = this.options
    const name = object.spec.name
    const region = await resolveRegion(api, attempt.regionName, signal)
    if ('problem' in region) {
      await this.fail(object, region.reason, region.problem, signal)
      return {requeueAfterMs: intervalMs}
    }
    attempt.regionName = region.name
    const ensured = await this.ensureBucket(object, api, region, logger, signal)
    if (!ensured) return {requeueAfterMs: intervalMs}
    const {bucket} = ensured
    const facts = bucketFacts(name, region, bucket, ensured.adopted)
    // The id is in the status before the keys are fetched: a crash from here on adopts this bucket.
    if (object.status?.bucket_id !== bucket.id || object.status?.phase !== 'Ready') {
      await this.writeStatus(object, 'WaitingForCredentials', 'WaitingForCredentials', `The bucket ${name} exists (${bucket.id}); fetching its access keys.`, facts, signal)
    }
    const credential = pickCredential((await api.s3Buckets.credentials(bucket.id, {signal})).data.credentials)
    if (!credential) {
      await this.writeStatus(object, 'WaitingForCredentials', 'NoCredentialsYet', `The Polycrate API has no access key for the bucket ${name} yet; checking again shortly.`, facts, signal)
      return {requeueAfterMs: CREDENTIALS_POLL_MS}
    }
    const drift = await this.writeSecret(object, facts, credential, region, logger, signal)
    await this.writeStatus(object, 'Ready', 'Ready', `The bucket ${name} is ready; its credentials are in the Secret ${facts.credentialsSecret}.`, {...facts, syncedAt: drift ? isoNow(this.options.clock ?? systemClock) : undefined}, signal)
    return {requeueAfterMs: intervalMs}
  }

  /** The credentials Secret, written when it is missing or differs; returns the drift it repaired. */
  private async writeSecret(object: S3BucketObject, facts: S3StatusFacts, credential: {accessKey: string; secretKey: string}, region: ResolvedRegion, logger: Logger, signal: AbortSignal): Promise<ReturnType<typeof secretDrift>> {
    const name = object.spec.name
    const secretName = facts.credentialsSecret!
    const desired = desiredSecret({name: object.metadata.name!, namespace: object.metadata.namespace!, uid: object.metadata.uid!}, {
      AWS_ACCESS_KEY_ID: credential.accessKey,
      AWS_SECRET_ACCESS_KEY: credential.secretKey,
      S3_ENDPOINT: facts.endpoint ?? '',
      S3_REGION: facts.s3Region ?? region.name,
      BUCKET_NAME: name,
    })
    const drift = secretDrift(this.options.secrets.get(`${object.metadata.namespace}/${secretName}`), desired)
    if (drift) {
      await this.options.client.apply({...resources.secrets, namespace: object.metadata.namespace, name: secretName}, desired, {signal})
      const [reason, message] = credentialsEvent(drift, object.status?.phase === 'Ready', secretName)
      logger.info('credential Secret written', {secret: secretName, reason})
      await this.options.events.record(object, 'Normal', reason, message)
    }
    return drift
  }

  /** The API bucket: the one in the status, else one of the same name and region (adopt), else a new one. */
  private async ensureBucket(object: S3BucketObject, api: PolycrateApiClient, region: ResolvedRegion, logger: Logger, signal: AbortSignal): Promise<{bucket: S3Bucket; adopted: boolean} | undefined> {
    const {events} = this.options
    const name = object.spec.name
    const knownId = object.status?.bucket_id as string | undefined
    if (knownId) {
      const known = await this.knownBucket(api, knownId, signal)
      if (known) return {bucket: known, adopted: object.status?.adopted === true}
      logger.info('S3 bucket was deleted on the API side; provisioning it again', {bucketId: knownId})
      await events.record(object, 'Warning', 'BucketRecreated', `The S3 bucket ${knownId} was deleted in the Polycrate API; it is created again (its objects are gone).`)
    }
    const existing = await this.bucketByName(api, name, region, signal)
    if (existing) {
      if (existing.id !== knownId) {
        logger.info('existing S3 bucket adopted', {bucketId: existing.id})
        await events.record(object, 'Normal', 'BucketAdopted', `The S3 bucket ${name} already exists in region ${region.name} (${existing.id}); it is adopted, not created again.`)
      }
      return {bucket: existing, adopted: true}
    }
    return this.createBucket(object, api, region, logger, signal)
  }

  /** The live bucket of that name in that region (the key a bucket is adopted by). */
  private async bucketByName(api: PolycrateApiClient, name: string, region: ResolvedRegion, signal: AbortSignal): Promise<S3Bucket | undefined> {
    return findExisting(api.s3Buckets, {lookup: {name_exact: name, region: region.id}, matches: (bucket) => bucket.name === name && !bucket.is_deleted, signal})
  }

  /** The bucket of the status, unless the API deleted it. */
  private async knownBucket(api: PolycrateApiClient, id: string, signal: AbortSignal): Promise<S3Bucket | undefined> {
    try {
      const bucket = await api.s3Buckets.get(id, {signal})
      if (!bucket.is_deleted) return bucket
    } catch (error) {
      if (!(error instanceof ApiNotFoundError)) throw error
    }
    return undefined
  }

  /** A new bucket, unless its name is taken by another workspace (then phase Error). */
  private async createBucket(object: S3BucketObject, api: PolycrateApiClient, region: ResolvedRegion, logger: Logger, signal: AbortSignal): Promise<{bucket: S3Bucket; adopted: boolean} | undefined> {
    const name = object.spec.name
    if (!(await api.s3Buckets.available(name, region.id, {signal}))) {
      await this.fail(object, 'BucketNameTaken', `The bucket name ${JSON.stringify(name)} is taken in region ${region.name} by another workspace: choose another spec.name.`, signal)
      return undefined
    }
    await this.writeStatus(object, 'Provisioning', 'Provisioning', `Creating the S3 bucket ${name} in region ${region.name}.`, {region: region.name}, signal)
    // A 409 (a create whose answer got lost, a race) is looked up again and adopted; still none → taken.
    const {object: bucket, created} = await adoptOrCreate(api.s3Buckets, {lookup: {name_exact: name, region: region.id}, body: {name, region: region.id}, matches: (candidate) => candidate.name === name, signal, clock: this.options.clock})
    logger.info(created ? 'S3 bucket created in the API' : 'existing S3 bucket adopted', {bucketId: bucket.id})
    await this.options.events.record(object, 'Normal', created ? 'BucketCreated' : 'BucketAdopted', created
      ? `The S3 bucket ${name} was created in region ${region.name} (${bucket.id}).`
      : `The S3 bucket ${name} already exists in region ${region.name} (${bucket.id}); it is adopted, not created again.`)
    return {bucket, adopted: !created}
  }

  /**
   * reclaim_policy: delete → the API bucket goes first; retain → it stays (an Event either way). A CR that goes
   * without a recorded bucket id but with its region recorded (written just before the create) may have a bucket: a
   * process that died between the create and the status write left it unrecorded. Its name and region find it, as
   * the next reconcile would have adopted it.
   */
  private async cleanup(object: S3BucketObject, logger: Logger, signal: AbortSignal): Promise<void> {
    const {session, events} = this.options
    const recordedId = object.status?.bucket_id as string | undefined
    const name = String(object.status?.bucket_name ?? object.spec.name)
    if (object.spec.reclaim_policy === 'delete' && (recordedId || object.status?.region)) {
      const api = session.client
      if (!api) throw new Error(`cannot delete S3 bucket ${recordedId ?? name} (reclaim_policy: delete) yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
      const bucketId = recordedId ?? await this.unrecordedBucket(object, api, logger, signal)
      if (!bucketId) return
      const outcome = await api.s3Buckets.delete(bucketId, {signal})
      logger.info('S3 bucket deleted from the API (reclaim_policy: delete)', {bucketId, outcome})
      await events.record(object, 'Normal', 'BucketDeleted', `The S3 bucket ${name} (${bucketId}) was deleted in the Polycrate API (reclaim_policy: delete).`)
    } else if (recordedId) {
      logger.info('S3 bucket kept in the API (reclaim_policy: retain)', {bucketId: recordedId})
      await events.record(object, 'Normal', 'BucketRetained', `The S3 bucket ${name} (${recordedId}) stays in the Polycrate API (reclaim_policy: retain).`)
    }
  }

  /** The id of the bucket a CR without a recorded id would adopt: spec.name in the region its status recorded. */
  private async unrecordedBucket(object: S3BucketObject, api: PolycrateApiClient, logger: Logger, signal: AbortSignal): Promise<string | undefined> {
    const region = await resolveRegion(api, object.status?.region as string, signal)
    if ('problem' in region) return undefined
    const bucket = await this.bucketByName(api, object.spec.name, region, signal)
    if (bucket) logger.info('S3Bucket CR goes without a recorded bucket id; the bucket of its name and region goes with it', {bucketId: bucket.id})
    return bucket?.id
  }

  private async writeStatus(object: S3BucketObject, phase: S3Phase, reason: string, message: string, facts: S3StatusFacts, signal: AbortSignal): Promise<void> {
    const patch = s3StatusPatch(object.status, object.metadata.generation, {phase, reason, message}, facts, isoNow(this.options.clock ?? systemClock))
    if (statusUnchanged(object.status, patch)) return
    await this.options.client.mergePatch(objectRef(this.resource, object, 'status'), {apiVersion: API_VERSION, kind: 'S3Bucket', status: patch}, {signal})
    object.status = {...object.status, ...patch} // the next step of this reconcile compares against what it wrote
  }

  /** Phase Error with a Warning Event (recorded when the message is new, so a retry loop adds nothing). */
  private async fail(object: S3BucketObject, reason: string, message: string, signal: AbortSignal): Promise<void> {
    const repeated = object.status?.phase === 'Error' && object.status.message === message
    await this.writeStatus(object, 'Error', reason, message, {}, signal)
    if (!repeated) await this.options.events.record(object, 'Warning', reason, message)
  }
}
