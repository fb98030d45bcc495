import assert from 'node:assert/strict'
import type {KubeClient, ResourceRef} from '../../../../src/kube/client.js'
import {silentLogger} from '../../../../src/lib/logger.js'
import {finalizers} from '../../../../src/operator/conventions.js'
import {ObjectCache} from '../../../../src/operator/runtime/cache.js'
import {bucketFacts, credentialsEvent, S3BucketProvisioner, type S3BucketObject, type SecretObject} from '../../../../src/operator/kinds/s3bucket/s3bucket.provisioner.js'

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

  describe('a CR that goes (its finalizer): which API bucket goes with it', () => {
    const buckets = [{id: 'b-logs', name: 'logs', is_deleted: false}, {id: 'b-old', name: 'old', is_deleted: true}]
    const cases: Array<[string, {policy: string; status?: Record<string, unknown>; name?: string}, string[]]> = [
      ['delete, id recorded: that bucket, nothing looked up', {policy: 'delete', status: {bucket_id: 'b-1', region: 'fsn1'}}, ['delete b-1']],
      ['delete, no id but the region (a crash between the create and the status write): the bucket of its name and region', {policy: 'delete', status: {phase: 'Provisioning', region: 'fsn1'}}, ['regions', 'list logs in r-fsn1', 'delete b-logs']],
      ['delete, no id, none of that name in the API: nothing', {policy: 'delete', status: {phase: 'Provisioning', region: 'fsn1'}, name: 'other'}, ['regions', 'list other in r-fsn1']],
      ['delete, no id, a deleted one of that name: nothing', {policy: 'delete', status: {phase: 'Error', region: 'fsn1'}, name: 'old'}, ['regions', 'list old in r-fsn1']],
      ['delete, neither id nor region (never got to the create): nothing looked up', {policy: 'delete', status: {phase: 'Error'}}, []],
      ['retain, no id but the region: nothing looked up', {policy: 'retain', status: {phase: 'Provisioning', region: 'fsn1'}}, []],
      ['retain, id recorded: kept', {policy: 'retain', status: {bucket_id: 'b-1', region: 'fsn1'}}, []],
    ]
    for (const [name, {policy, status, name: bucketName}, expected] of cases) {
      it(name, async () => {
        const apiCalls: string[] = []
        const kubeCalls: string[] = []
        const api = {
          s3Regions: {listAll: async () => { apiCalls.push('regions'); return [{id: 'r-fsn1', name: 'fsn1'}] }},
          s3Buckets: {
            list: async function* (query: {name_exact: string; region: string}) {
              apiCalls.push(`list ${query.name_exact} in ${query.region}`)
              yield* buckets.filter((b) => b.name === query.name_exact)
            },
            delete: async (id: string) => { apiCalls.push(`delete ${id}`); return 'deleted' },
          },
        }
        const client = {
          getOrUndefined: async () => ({metadata: {name: 's3buckets.polycrate.io'}}),
          mergePatch: async (_ref: ResourceRef, patch: {metadata?: {finalizers?: string[]}}) => { kubeCalls.push(`finalizers ${JSON.stringify(patch.metadata?.finalizers)}`); return {} },
        } as unknown as KubeClient
        const cache = new ObjectCache<S3BucketObject>()
        cache.upsert({apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', status,
          metadata: {name: 'b', namespace: 'ns', uid: 'u', resourceVersion: '1', generation: 1, deletionTimestamp: '2026-12-02T06:00:00Z', finalizers: [finalizers.s3Bucket]},
          spec: {name: bucketName ?? 'logs', reclaim_policy: policy} as never})
        const provisioner = new S3BucketProvisioner({
          session: {client: api as never, problem: undefined}, client, buckets: cache, secrets: new ObjectCache<SecretObject>(),
          events: {record: async () => {}}, intervalMs: 60_000,
        })
        await provisioner.reconcile({key: 'ns/b', logger: silentLogger, signal: new AbortController().signal})
        assert.deepEqual(apiCalls, expected)
        assert.deepEqual(kubeCalls, ['finalizers []'], 'the finalizer is released')
      })
    }
  })
})
