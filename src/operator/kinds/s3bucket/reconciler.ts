/**
 * S3Bucket provisioning (`S3BucketReconciler`, `s3_bucket_provisioning.enabled`): a user-declared S3Bucket CR → a
 * bucket in the Polycrate API (adopted when one of the same name and region exists) → its keys in the Secret
 * `s3-<bucket>-credentials` beside the CR.
 *
 * Level-triggered: each reconcile observes the CR, its Secret (watched: a deleted or edited Secret is restored) and
 * the API, and moves the phase `Pending → Provisioning → WaitingForCredentials → Ready` (`Error` with a reason a
 * person can act on). The S3 naming rules are checked before any API call. The bucket id is in the status before
 * the keys are fetched, and a bucket is always looked up by name and region before one is created, so a crash at
 * any point never makes a second bucket. Every sync interval the keys are fetched again: rotated keys reach the
 * Secret. `reclaim_policy: delete` deletes the API bucket before the finalizer lets the CR go; `retain` keeps it.
 * Keys live only in the Secret's data: never in logs, Events, conditions, status or errors.
 */
import {adoptOrCreate, ApiNotFoundError, type PolycrateApiClient, type S3Bucket} from '../../../api/index.js'
import {API_VERSION, crdFullName, crdResource, type CustomObject} from '../../../crds/define.js'
import {s3BucketCrd, type S3BucketSpec} from '../../../crds/s3-bucket.js'
import type {KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers, labels} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import {READ} from '../../permissions.js'
import type {ReconcileContext} from '../../runtime/controller.js'
import {Finalizer} from '../../runtime/finalizer.js'
import {specMetadataOrDeletionChanged} from '../../runtime/predicates.js'
import {statusUnchanged} from '../../sync/engine.js'
import {
  credentialsSecretName,
  desiredSecret,
  explainApiError,
  immutableChange,
  pickCredential,
  s3StatusPatch,
  SECRET_OBJECT_TYPE,
  secretDrift,
  specProblems,
  type S3Phase,
  type S3StatusFacts,
} from './mapping.js'

type S3BucketObject = CustomObject<S3BucketSpec, Record<string, unknown>>
type SecretObject = KubeObject & {data?: Record<string, string>; metadata: {ownerReferences?: Array<{kind?: string; name?: string; uid?: string}>}}

/** While the API has no key for a new bucket yet, look again this soon. */
const CREDENTIALS_POLL_MS = 3000

/** A region the bucket can be created in: the API's region id and the name users write. */
interface ResolvedRegion {
  id: string
  name: string
}

/** `spec.region`, or the region of SystemConfig `default_s3_bucket_cluster`; a string when it cannot be resolved. */
async function resolveRegion(api: PolycrateApiClient, wanted: string | undefined, signal: AbortSignal): Promise<ResolvedRegion | {problem: string; reason: string}> {
  const regions = await api.s3Regions.listAll({}, {signal})
  let name = wanted
  if (!name) {
    const defaultCluster = (await api.systemConfig.get({signal})).default_s3_bucket_cluster
    if (!defaultCluster) {
      return {reason: 'NoDefaultRegion', problem: 'spec.region is empty and the Polycrate API has no default (SystemConfig default_s3_bucket_cluster): set spec.region, or set the default under System Settings in the dashboard.'}
    }
    const byCluster = regions.find((region) => region.legacy_s3_cluster === defaultCluster)
    if (byCluster) return {id: byCluster.id, name: byCluster.name}
    const cluster = await api.s3Clusters.get(defaultCluster, {signal}).catch((error: unknown) => {
      if (error instanceof ApiNotFoundError) return undefined
      throw error
    })
    const clusterRegion = cluster?.region
    name = typeof clusterRegion === 'object' && clusterRegion ? clusterRegion.name ?? undefined : undefined
    const byId = regions.find((region) => region.id === clusterRegion || (typeof clusterRegion === 'object' && region.id === clusterRegion?.id))
    if (byId) return {id: byId.id, name: byId.name}
    if (!name) return {reason: 'NoDefaultRegion', problem: `The default S3 cluster ${defaultCluster} of the Polycrate API (SystemConfig default_s3_bucket_cluster) has no region: set spec.region.`}
  }
  const found = regions.find((region) => region.name === name)
  if (!found) {
    const known = regions.map((region) => region.name).sort().join(', ') || 'none'
    return {reason: 'RegionUnknown', problem: `Region ${JSON.stringify(name)} is not an S3 region of the Polycrate API (known: ${known}): fix spec.region.`}
  }
  return {id: found.id, name: found.name}
}

export function S3BucketReconciler(session: ApiSession): Feature {
  return {
    name: 's3-bucket-provisioning',
    enabled: (config) => config.s3_bucket_provisioning.enabled,
    permissions: [
      {group: 'polycrate.io', resource: s3BucketCrd.plural, verbs: [...READ, 'patch', 'update']},
      {group: 'polycrate.io', resource: `${s3BucketCrd.plural}/status`, verbs: ['patch']},
      // The credentials Secret beside each CR (server-side apply; it goes with the CR through its owner reference).
      {group: '', resource: 'secrets', verbs: [...READ, 'create', 'patch']},
    ],
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const client = manager.client
      const resource = crdResource(s3BucketCrd)
      const intervalMs = config.api_sync.sync_interval_seconds * 1000
      const builder = manager.controller('s3-bucket-provisioning')
      const buckets = builder.for<S3BucketObject>({resource, kind: 'S3Bucket'}, {onUpdate: specMetadataOrDeletionChanged})
      // Only the operator's credential Secrets; a change or delete reconciles the owning S3Bucket.
      const credentialSecrets = builder.owns<SecretObject>(
        {resource: resources.secrets, kind: 'Secret', labelSelector: `${labels.objectType}=${SECRET_OBJECT_TYPE}`},
        {kind: 'S3Bucket', apiVersion: API_VERSION},
      )
      const recorder = manager.recorder('s3-bucket-provisioning')

      const refOf = (object: S3BucketObject, subresource?: string) => ({...resource, namespace: object.metadata.namespace, name: object.metadata.name, subresource})
      const writeStatus = async (object: S3BucketObject, phase: S3Phase, reason: string, message: string, facts: S3StatusFacts, signal: AbortSignal) => {
        const patch = s3StatusPatch(object.status, object.metadata.generation, {phase, reason, message}, facts, new Date().toISOString())
        if (statusUnchanged(object.status, patch)) return
        await client.mergePatch(refOf(object, 'status'), {apiVersion: API_VERSION, kind: 'S3Bucket', status: patch}, {signal})
        object.status = {...object.status, ...patch} // the next step of this reconcile compares against what it wrote
      }
      /** Phase Error with a Warning Event (recorded when the message is new, so a retry loop adds nothing). */
      const fail = async (object: S3BucketObject, reason: string, message: string, signal: AbortSignal) => {
        const repeated = object.status?.phase === 'Error' && object.status.message === message
        await writeStatus(object, 'Error', reason, message, {}, signal)
        if (!repeated) await recorder.record(object, 'Warning', reason, message)
      }
      const guard = new Finalizer<S3BucketObject>({client, name: finalizers.s3Bucket, refOf: (object) => refOf(object), crd: crdFullName(s3BucketCrd)})

      const cleanup = async (object: S3BucketObject, logger: ReconcileContext['logger'], signal: AbortSignal) => {
        const bucketId = object.status?.bucket_id as string | undefined
        if (object.spec.reclaim_policy === 'delete' && bucketId) {
          const api = session.client
          if (!api) throw new Error(`cannot delete S3 bucket ${bucketId} (reclaim_policy: delete) yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
          const outcome = await api.s3Buckets.delete(bucketId, {signal})
          logger.info('S3 bucket deleted from the API (reclaim_policy: delete)', {bucketId, outcome})
          await recorder.record(object, 'Normal', 'BucketDeleted', `The S3 bucket ${String(object.status?.bucket_name)} (${bucketId}) was deleted in the Polycrate API (reclaim_policy: delete).`)
        } else if (bucketId) {
          logger.info('S3 bucket kept in the API (reclaim_policy: retain)', {bucketId})
          await recorder.record(object, 'Normal', 'BucketRetained', `The S3 bucket ${String(object.status?.bucket_name)} (${bucketId}) stays in the Polycrate API (reclaim_policy: retain).`)
        }
      }

      /** The API bucket: the one in the status, else one of the same name and region (adopt), else a new one. */
      const ensureBucket = async (object: S3BucketObject, api: PolycrateApiClient, region: ResolvedRegion, logger: ReconcileContext['logger'], signal: AbortSignal): Promise<{bucket: S3Bucket; adopted: boolean} | undefined> => {
        const name = object.spec.name
        const knownId = object.status?.bucket_id as string | undefined
        if (knownId) {
          try {
            const bucket = await api.s3Buckets.get(knownId, {signal})
            if (!bucket.is_deleted) return {bucket, adopted: object.status?.adopted === true}
          } catch (error) {
            if (!(error instanceof ApiNotFoundError)) throw error
          }
          logger.info('S3 bucket was deleted on the API side; provisioning it again', {bucketId: knownId})
          await recorder.record(object, 'Warning', 'BucketRecreated', `The S3 bucket ${knownId} was deleted in the Polycrate API; it is created again (its objects are gone).`)
        }
        const existing = (await api.s3Buckets.listAll({name_exact: name, region: region.id}, {signal})).find((bucket) => bucket.name === name && !bucket.is_deleted)
        if (existing) {
          if (existing.id !== knownId) {
            logger.info('existing S3 bucket adopted', {bucketId: existing.id})
            await recorder.record(object, 'Normal', 'BucketAdopted', `The S3 bucket ${name} already exists in region ${region.name} (${existing.id}); it is adopted, not created again.`)
          }
          return {bucket: existing, adopted: true}
        }
        if (!(await api.s3Buckets.available(name, region.id, {signal}))) {
          await fail(object, 'BucketNameTaken', `The bucket name ${JSON.stringify(name)} is taken in region ${region.name} by another workspace: choose another spec.name.`, signal)
          return undefined
        }
        await writeStatus(object, 'Provisioning', 'Provisioning', `Creating the S3 bucket ${name} in region ${region.name}.`, {region: region.name}, signal)
        // A 409 (a create whose answer got lost, a race) is looked up again and adopted; still none → taken.
        const {object: bucket, created} = await adoptOrCreate(api.s3Buckets, {lookup: {name_exact: name, region: region.id}, body: {name, region: region.id}, matches: (candidate) => candidate.name === name, signal})
        logger.info(created ? 'S3 bucket created in the API' : 'existing S3 bucket adopted', {bucketId: bucket.id})
        await recorder.record(object, 'Normal', created ? 'BucketCreated' : 'BucketAdopted', created
          ? `The S3 bucket ${name} was created in region ${region.name} (${bucket.id}).`
          : `The S3 bucket ${name} already exists in region ${region.name} (${bucket.id}); it is adopted, not created again.`)
        return {bucket, adopted: !created}
      }

      const reconcile = async ({key, logger, signal}: ReconcileContext) => {
        const cached = buckets.cache.get(key)
        if (!cached) return
        const object: S3BucketObject = {...cached, status: cached.status ? {...cached.status} : undefined}
        // Its CRD is being deleted, not the CR by a user: whatever the CR says, the API object is kept.
        if (await guard.finalize(object, signal, {kept: () => logger.info('CR goes with its CRD; the API S3 bucket is kept'), cleanup: () => cleanup(object, logger, signal)})) return

        // Checked before any API call: the S3 naming rules, then the fields that cannot change once provisioned.
        const problems = specProblems(object.spec)
        if (problems.length > 0) {
          await fail(object, problems[0]!.rule, problems.map((problem) => problem.message).join(' '), signal)
          return
        }
        const frozen = immutableChange(object.spec, {bucketName: object.status?.bucket_name as string | undefined, region: object.status?.region as string | undefined})
        if (frozen) {
          await fail(object, 'ImmutableFieldChanged', frozen, signal)
          return
        }
        if (!object.status?.phase) await writeStatus(object, 'Pending', 'Accepted', 'Waiting to provision the bucket.', {}, signal)
        const api = session.client
        if (!api) {
          await writeStatus(object, 'Pending', 'APINotConnected', `Waiting for the Polycrate API connection: ${session.problem ?? 'the first health report is still out'}.`, {}, signal)
          return // a change of the session requeues every S3Bucket
        }
        // On before the API bucket can exist, so reclaim_policy: delete can never be skipped.
        await guard.add(object, signal)

        const name = object.spec.name
        let regionName = object.spec.region || (object.status?.region as string | undefined)
        try {
          const region = await resolveRegion(api, regionName, signal)
          if ('problem' in region) {
            await fail(object, region.reason, region.problem, signal)
            return {requeueAfterMs: intervalMs}
          }
          regionName = region.name
          const ensured = await ensureBucket(object, api, region, logger, signal)
          if (!ensured) return {requeueAfterMs: intervalMs}
          const {bucket, adopted} = ensured
          const secretName = credentialsSecretName(name)
          const facts: S3StatusFacts = {
            bucketId: bucket.id, bucketName: name, region: region.name, s3Region: bucket.s3_region ?? region.name,
            endpoint: bucket.s3_endpoint ?? undefined, credentialsSecret: secretName, adopted,
          }
          // The id is in the status before the keys are fetched: a crash from here on adopts this bucket.
          if (object.status?.bucket_id !== bucket.id || object.status?.phase !== 'Ready') {
            await writeStatus(object, 'WaitingForCredentials', 'WaitingForCredentials', `The bucket ${name} exists (${bucket.id}); fetching its access keys.`, facts, signal)
          }
          const credential = pickCredential((await api.s3Buckets.credentials(bucket.id, {signal})).data.credentials)
          if (!credential) {
            await writeStatus(object, 'WaitingForCredentials', 'NoCredentialsYet', `The Polycrate API has no access key for the bucket ${name} yet; checking again shortly.`, facts, signal)
            return {requeueAfterMs: CREDENTIALS_POLL_MS}
          }
          const desired = desiredSecret({name: object.metadata.name!, namespace: object.metadata.namespace!, uid: object.metadata.uid!}, {
            AWS_ACCESS_KEY_ID: credential.accessKey,
            AWS_SECRET_ACCESS_KEY: credential.secretKey,
            S3_ENDPOINT: facts.endpoint ?? '',
            S3_REGION: facts.s3Region ?? region.name,
            BUCKET_NAME: name,
          })
          const drift = secretDrift(credentialSecrets.cache.get(`${object.metadata.namespace}/${secretName}`), desired)
          if (drift) {
            await client.apply({...resources.secrets, namespace: object.metadata.namespace, name: secretName}, desired, {signal})
            const wasReady = object.status?.phase === 'Ready'
            const [reason, message] = !wasReady && drift === 'missing'
              ? ['CredentialsWritten', `The bucket's credentials were written to the Secret ${secretName}.`]
              : drift === 'credentials'
                ? ['CredentialsUpdated', `The bucket's access keys changed in the Polycrate API (or in the Secret); the Secret ${secretName} was rewritten.`]
                : ['CredentialsRestored', `The Secret ${secretName} was ${drift === 'missing' ? 'deleted' : 'edited'}; it was restored.`]
            logger.info('credential Secret written', {secret: secretName, reason})
            await recorder.record(object, 'Normal', reason, message)
          }
          await writeStatus(object, 'Ready', 'Ready', `The bucket ${name} is ready; its credentials are in the Secret ${secretName}.`, {...facts, syncedAt: drift ? new Date().toISOString() : undefined}, signal)
          return {requeueAfterMs: intervalMs}
        } catch (error) {
          if (signal.aborted) throw error
          const explained = explainApiError(error, name, regionName ?? 'the default region')
          await fail(object, explained.reason, explained.message, signal)
          if (explained.terminal) return {requeueAfterMs: intervalMs}
          throw error
        }
      }

      const running = builder.complete(reconcile)
      return session.resyncing(running)
    },
  }
}
