import assert from 'node:assert/strict'
import {ApiConflictError, ApiNetworkError, ApiValidationError} from '../../../../src/api/index.js'
import {
  bucketNameProblems,
  credentialsSecretName,
  desiredSecret,
  explainApiError,
  immutableChange,
  pickCredential,
  s3StatusPatch,
  secretDrift,
  specProblems,
} from '../../../../src/operator/kinds/s3bucket/s3bucket.mapping.js'

describe('S3Bucket provisioning (pure)', () => {
  describe('S3 naming rules, checked before any API call', () => {
    const cases: Array<[name: string, rules: string[]]> = [
      ['my-app-data', []],
      ['a.b-c.123', []],
      ['abc', []],
      ['a'.repeat(63), []],
      ['ab', ['BucketNameLength']],
      ['', ['BucketNameLength']],
      ['a'.repeat(64), ['BucketNameLength']],
      ['My-Bucket', ['BucketNameCharacters']],
      ['my_bucket', ['BucketNameCharacters']],
      ['my bucket', ['BucketNameCharacters']],
      ['-leading', ['BucketNameStartEnd']],
      ['trailing-', ['BucketNameStartEnd']],
      ['.dotted', ['BucketNameStartEnd']],
      ['two..dots', ['BucketNameAdjacentDots']],
      ['192.168.5.4', ['BucketNameIPAddress']],
      ['xn--bucket', ['BucketNameReservedPrefix']],
      ['sthree-bucket', ['BucketNameReservedPrefix']],
      ['amzn-s3-demo-bucket', ['BucketNameReservedPrefix']],
      ['bucket-s3alias', ['BucketNameReservedSuffix']],
      ['bucket--ol-s3', ['BucketNameReservedSuffix']],
      ['bucket.mrap', ['BucketNameReservedSuffix']],
      ['bucket--x-s3', ['BucketNameReservedSuffix']],
      ['bucket--table-s3', ['BucketNameReservedSuffix']],
      ['Ab', ['BucketNameLength', 'BucketNameCharacters']],
    ]
    for (const [name, rules] of cases) {
      it(`${JSON.stringify(name.length > 20 ? `${name.slice(0, 8)}…(${name.length})` : name)} → ${rules.join(', ') || 'valid'}`, () => {
        const problems = bucketNameProblems(name)
        assert.deepEqual(problems.map((problem) => problem.rule), rules)
        for (const problem of problems) assert.match(problem.message, /breaks the S3 naming rule ".+".*Change spec\.name\./)
      })
    }
  })

  describe('spec problems', () => {
    const cases: Array<[spec: Record<string, unknown>, rules: string[]]> = [
      [{name: 'ok-bucket', region: 'fsn1', reclaim_policy: 'retain'}, []],
      [{name: 'ok-bucket'}, []],
      [{name: 'ok-bucket', region: ''}, []],
      [{}, ['BucketNameMissing']],
      [{name: 'ok-bucket', region: 'FSN 1'}, ['InvalidRegion']],
      [{name: 'ok-bucket', reclaim_policy: 'delet'}, ['InvalidReclaimPolicy']],
      [{name: 'Bad_Name', region: '-x', reclaim_policy: 'keep'}, ['BucketNameCharacters', 'InvalidRegion', 'InvalidReclaimPolicy']],
    ]
    for (const [spec, rules] of cases) {
      it(`${JSON.stringify(spec)} → ${rules.join(', ') || 'valid'}`, () => {
        assert.deepEqual(specProblems(spec as never).map((problem) => problem.rule), rules)
      })
    }
  })

  describe('immutable once provisioned', () => {
    const cases: Array<[title: string, spec: Record<string, unknown>, facts: {bucketName?: string; region?: string}, expect: RegExp | undefined]> = [
      ['nothing provisioned yet', {name: 'new'}, {}, undefined],
      ['unchanged', {name: 'data', region: 'fsn1'}, {bucketName: 'data', region: 'fsn1'}, undefined],
      ['region left empty (default) stays', {name: 'data'}, {bucketName: 'data', region: 'fsn1'}, undefined],
      ['name changed', {name: 'data2', region: 'fsn1'}, {bucketName: 'data', region: 'fsn1'}, /spec\.name changed from "data" to "data2".*Set spec\.name back/],
      ['region changed', {name: 'data', region: 'nbg1'}, {bucketName: 'data', region: 'fsn1'}, /spec\.region changed from "fsn1" to "nbg1".*cannot move/],
    ]
    for (const [title, spec, facts, expect] of cases) {
      it(title, () => {
        const message = immutableChange(spec as never, facts)
        if (expect) assert.match(message ?? '', expect)
        else assert.equal(message, undefined)
      })
    }
  })

  it('the credential Secret is exactly the seed\'s example: name, labels, owner, type and the five keys', () => {
    const secret = desiredSecret({name: 'my-app-data', namespace: 'production', uid: 'uid-1'}, {
      AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK', S3_ENDPOINT: 'https://s3.fsn1.example.com', S3_REGION: 'fsn1', BUCKET_NAME: 'my-app-data',
    })
    assert.equal(credentialsSecretName('my-app-data'), 's3-my-app-data-credentials')
    assert.deepEqual(secret.metadata, {
      name: 's3-my-app-data-credentials',
      namespace: 'production',
      labels: {polycrate_managed_by: 'operator', polycrate_object_type: 's3-credentials', polycrate_s3_bucket_name: 'my-app-data', polycrate_s3_bucket_region: 'fsn1'},
      ownerReferences: [{apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', name: 'my-app-data', uid: 'uid-1', controller: true, blockOwnerDeletion: true}],
    })
    assert.equal(secret.type, 'Opaque')
    const decoded = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))
    assert.deepEqual(decoded, {AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK', S3_ENDPOINT: 'https://s3.fsn1.example.com', S3_REGION: 'fsn1', BUCKET_NAME: 'my-app-data'})
  })

  describe('Secret drift', () => {
    const desired = desiredSecret({name: 'b', namespace: 'n', uid: 'u'}, {AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK', S3_ENDPOINT: 'e', S3_REGION: 'r', BUCKET_NAME: 'bkt'})
    const same = {metadata: {labels: {...desired.metadata.labels}, ownerReferences: [{kind: 'S3Bucket', uid: 'u'}]}, data: {...desired.data}}
    const cases: Array<[title: string, actual: unknown, drift: string | undefined]> = [
      ['absent', undefined, 'missing'],
      ['as desired (extra keys of others are left alone)', {...same, data: {...same.data, EXTRA: 'eA=='}}, undefined],
      ['secret key differs (rotation)', {...same, data: {...same.data, AWS_SECRET_ACCESS_KEY: 'b2xk'}}, 'credentials'],
      ['endpoint edited', {...same, data: {...same.data, S3_ENDPOINT: 'eA=='}}, 'edited'],
      ['a key removed', {...same, data: {AWS_ACCESS_KEY_ID: same.data.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: same.data.AWS_SECRET_ACCESS_KEY}}, 'edited'],
      ['label removed', {...same, metadata: {...same.metadata, labels: {}}}, 'edited'],
      ['owner reference removed', {...same, metadata: {...same.metadata, ownerReferences: []}}, 'edited'],
    ]
    for (const [title, actual, drift] of cases) {
      it(`${title} → ${drift ?? 'none'}`, () => assert.equal(secretDrift(actual as never, desired), drift))
    }
  })

  it('picks the first active credential with both keys', () => {
    const c = (id: string, access: string | null, secret: string | null, active = true) => ({id, access_key: access, secret_key: secret, active})
    assert.equal(pickCredential([]), undefined)
    assert.equal(pickCredential([c('1', 'a', null), c('2', 'b', 's', false)]), undefined)
    assert.deepEqual(pickCredential([c('1', null, 'x'), c('2', 'b', 's')]), {accessKey: 'b', secretKey: 's'})
  })

  describe('API errors → reason a person can act on', () => {
    const init = (status: number, code: string, detail: string, attr: string | null = null) => ({status, method: 'POST', path: '/api/v1/s3/buckets/', errors: [{code, detail, attr}]})
    const cases: Array<[title: string, error: unknown, reason: string, terminal: boolean, message: RegExp]> = [
      ['409 name clash', new ApiConflictError(init(409, 'unique_s3_bucket_name_per_region', 'exists')), 'BucketNameTaken', true, /taken in region fsn1 by another workspace: choose another spec\.name/],
      ['quota', new ApiValidationError(init(400, 'quota_exceeded', 'S3 bucket quota reached: 2 of 2.')), 'QuotaExceeded', true, /quota reached/],
      ['region refused', new ApiValidationError(init(400, 'does_not_exist', 'Invalid pk.', 'region')), 'RegionUnknown', true, /Fix spec\.region/],
      ['other 400', new ApiValidationError(init(400, 'invalid', 'Name too fancy.', 'name')), 'APIRefused', true, /refused the bucket: Name too fancy/],
      ['network', new ApiNetworkError({method: 'POST', path: '/api/v1/s3/buckets/', cause: 'ECONNREFUSED', origin: 'http://api'}), 'APIUnavailable', false, /retrying/],
    ]
    for (const [title, error, reason, terminal, message] of cases) {
      it(`${title} → ${reason}`, () => {
        const explained = explainApiError(error, 'data', 'fsn1')
        assert.equal(explained.reason, reason)
        assert.equal(explained.terminal, terminal)
        assert.match(explained.message, message)
      })
    }
  })

  it('status: phase, sync_status and Ready condition per phase; facts kept from the previous status', () => {
    const now = '2026-01-01T00:00:00Z'
    const pending = s3StatusPatch(undefined, 1, {phase: 'Pending', reason: 'Accepted', message: 'm'}, {}, now)
    assert.equal(pending.sync_status, 'pending')
    const waiting = s3StatusPatch(pending, 1, {phase: 'WaitingForCredentials', reason: 'W', message: 'w'}, {bucketId: 'id-1', bucketName: 'b', region: 'fsn1', credentialsSecret: 's3-b-credentials'}, now)
    assert.equal(waiting.api_id, 'id-1')
    const ready = s3StatusPatch(waiting, 1, {phase: 'Ready', reason: 'Ready', message: 'ok'}, {}, now)
    assert.deepEqual([ready.phase, ready.sync_status, ready.bucket_id, ready.region, ready.credentials_secret], ['Ready', 'synced', 'id-1', 'fsn1', 's3-b-credentials'])
    assert.equal((ready.conditions as Array<{type: string; status: string}>).find((c) => c.type === 'Ready')?.status, 'True')
    const error = s3StatusPatch(ready, 2, {phase: 'Error', reason: 'ImmutableFieldChanged', message: 'x'}, {}, now)
    assert.deepEqual([error.sync_status, error.bucket_id], ['error', 'id-1'])
  })
})
