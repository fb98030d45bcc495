import assert from 'node:assert/strict'
import type {KubeClient, ResourceRef} from '../../src/kube/client.js'
import {silentLogger} from '../../src/lib/logger.js'
import {ObjectCache} from '../../src/operator/runtime/cache.js'
import {bucketFacts, credentialsEvent, S3BucketProvisioner, type S3BucketObject, type SecretObject} from '../../src/operator/kinds/s3bucket/provisioner.js'

describe('S3Bucket provisioner (the parts of its reconcile)', () => {
  describe('credentialsEvent', () => {
    const cases: Array<[string, 'missing' | 'credentials' | 'edited', boolean, string]> = [
      ['first write', 'missing', false, 'CredentialsWritten'],
      ['deleted after Ready', 'missing', true, 'CredentialsRestored'],
      ['keys rotated', 'credentials', true, 'CredentialsUpdated'],
      ['keys rotated before Ready', 'credentials', false, 'CredentialsUpdated'],
      ['edited', 'edited', true, 'CredentialsRestored'],
    ]
    for (const [name, drift, wasReady, reason] of cases) it(`${name} → ${reason}`, () => assert.equal(credentialsEvent(drift, wasReady, 's3-b-credentials')[0], reason))
    it('the message names the Secret and never a key', () => assert.equal(credentialsEvent('edited', true, 's3-b-credentials')[1], 'The Secret s3-b-credentials was edited; it was restored.'))
  })

  describe('bucketFacts', () => {
    const region = {id: 'r1', name: 'eu-central'}
    const cases: Array<[string, {id: string; s3_region?: string | null; s3_endpoint?: string | null}, Record<string, unknown>]> = [
      ['the bucket says its S3 region and endpoint', {id: 'b1', s3_region: 'eu-1', s3_endpoint: 'https://s3'}, {s3Region: 'eu-1', endpoint: 'https://s3'}],
      ['it does not: the region\'s name, no endpoint', {id: 'b1', s3_region: null, s3_endpoint: null}, {s3Region: 'eu-central', endpoint: undefined}],
    ]
    for (const [name, bucket, expected] of cases) {
      it(name, () => assert.deepEqual(bucketFacts('logs', region, bucket as never, false), {
        bucketId: 'b1', bucketName: 'logs', region: 'eu-central', credentialsSecret: 's3-logs-credentials', adopted: false, ...expected,
      }))
    }
  })

  describe('reconcile (fake kube client, no API)', () => {
    const make = (spec: Record<string, unknown>, connected = false) => {
      const calls: string[] = []
      const events: string[] = []
      const client = {
        mergePatch: async (ref: ResourceRef, patch: {status?: {phase?: string; reason?: string}; metadata?: unknown}) => {
          calls.push(`patch ${ref.subresource ?? 'object'}${patch.status ? ` ${patch.status.phase}` : ''}`)
          return {}
        },
      } as unknown as KubeClient
      const buckets = new ObjectCache<S3BucketObject>()
      buckets.upsert({apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'b', namespace: 'ns', uid: 'u', resourceVersion: '1', generation: 1}, spec: {name: 'logs', reclaim_policy: 'retain', ...spec} as never})
      const provisioner = new S3BucketProvisioner({
        session: {client: connected ? ({} as never) : undefined, problem: 'no token'}, client, buckets, secrets: new ObjectCache<SecretObject>(),
        events: {record: async (_object, type, reason) => { events.push(`${type} ${reason}`) }}, intervalMs: 60_000,
      })
      return {provisioner, calls, events}
    }
    const context = {key: 'ns/b', logger: silentLogger, signal: new AbortController().signal}

    it('a name against the S3 rules: Error and a Warning, before any API call or finalizer', async () => {
      const {provisioner, calls, events} = make({name: 'Bad_Name'})
      assert.equal(await provisioner.reconcile(context), undefined)
      assert.deepEqual(calls, ['patch status Error'])
      assert.equal(events.length, 1)
      assert.match(events[0]!, /^Warning /)
    })

    it('not connected: Pending (Accepted, then APINotConnected), no finalizer yet', async () => {
      const {provisioner, calls, events} = make({})
      await provisioner.reconcile(context)
      assert.deepEqual(calls, ['patch status Pending', 'patch status Pending'])
      assert.deepEqual(events, [])
    })
  })
})
