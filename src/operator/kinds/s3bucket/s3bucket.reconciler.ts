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
import {API_VERSION, crdResource} from '../../../crds/define.js'
import {resources} from '../../../kube/resources.js'
import {s3BucketCrd} from '../../../crds/s3bucket.js'
import type {ApiSession} from '../../agent/api-session.js'
import {labels} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {READ} from '../../permissions.js'
import {specMetadataOrDeletionChanged} from '../../runtime/predicates.js'
import {SECRET_OBJECT_TYPE} from './s3bucket.mapping.js'
import {S3BucketProvisioner, type S3BucketObject, type SecretObject} from './s3bucket.provisioner.js'

export function S3BucketReconciler(session: ApiSession): Feature<OperatorConfig> {
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
      const builder = manager.controller('s3-bucket-provisioning')
      const buckets = builder.for<S3BucketObject>({resource: crdResource(s3BucketCrd), kind: 'S3Bucket'}, {onUpdate: specMetadataOrDeletionChanged})
      // Only the operator's credential Secrets; a change or delete reconciles the owning S3Bucket.
      const credentialSecrets = builder.owns<SecretObject>(
        {resource: resources.secrets, kind: 'Secret', labelSelector: `${labels.objectType}=${SECRET_OBJECT_TYPE}`},
        {kind: 'S3Bucket', apiVersion: API_VERSION},
      )
      const provisioner = new S3BucketProvisioner({
        session, client: manager.client, buckets: buckets.cache, secrets: credentialSecrets.cache,
        events: manager.recorder('s3-bucket-provisioning'), intervalMs: config.api_sync.sync_interval_seconds * 1000,
        clock: manager.clock,
      })
      const running = builder.complete((context) => provisioner.reconcile(context))
      return session.resyncing(running)
    },
  }
}
