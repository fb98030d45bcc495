import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {runCommand} from '@oclif/test'
import {execa} from 'execa'
import {PolycrateApiClient} from '../../src/api/index.js'
import {KubeApiError, type KubeClient, type KubeObject} from '../../src/kube/client.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import {ApiSimulator, S3_KEY_PATTERN} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds} from '../support/cluster.js'
import {configRef as configOf, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'

type Bucket = KubeObject & {metadata: {name: string; namespace?: string; uid: string; finalizers?: string[]}; spec: {name: string; region?: string; reclaim_policy?: string}; status?: Record<string, unknown> & {phase?: string; conditions?: Array<{type: string; status: string; reason: string; message: string}>}}
type Secret = KubeObject & {data?: Record<string, string>; type?: string; metadata: {labels?: Record<string, string>; ownerReferences?: Array<Record<string, unknown>>; uid?: string}}
interface EventObject {
  type: string
  reason: string
  message: string
}

const bucketsIn = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace})
const secretsIn = (namespace: string) => ({group: '', version: 'v1', plural: 'secrets', namespace})
const decode = (secret: Secret | undefined) => Object.fromEntries(Object.entries(secret?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))

function helpers(client: KubeClient, sim: ApiSimulator, namespace: () => string) {
  const get = (name: string) => client.getOrUndefined<Bucket>({...bucketsIn(namespace()), name})
  const secret = (bucketName: string) => client.getOrUndefined<Secret>({...secretsIn(namespace()), name: `s3-${bucketName}-credentials`})
  return {
    get,
    secret,
    create: (name: string, spec: Record<string, unknown>) =>
      client.create({...bucketsIn(namespace())}, {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name, namespace: namespace()}, spec}),
    phase: (name: string, phase: string, timeoutMs = 30_000) =>
      eventually(async () => {
        const bucket = await get(name)
        return bucket?.status?.phase === phase ? bucket : undefined
      }, timeoutMs, `S3Bucket ${name} in phase ${phase}`),
    ready: (name: string, timeoutMs = 30_000) =>
      eventually(async () => {
        const bucket = await get(name)
        if (bucket?.status?.phase !== 'Ready') return undefined
        const found = await secret(bucket.spec.name)
        return found ? {bucket, secret: found} : undefined
      }, timeoutMs, `S3Bucket ${name} Ready with its Secret`),
    apiBuckets: (name: string) => sim.list('s3/buckets').filter((bucket) => bucket.name === name),
    events: async (name: string) =>
      (await client.request<{items: EventObject[]}>({path: `/api/v1/namespaces/${namespace()}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items,
    deleteAndWait: async (name: string) => {
      await client.delete({...bucketsIn(namespace()), name}).catch(() => {})
      await eventually(async () => (await get(name)) === undefined, 30_000, `S3Bucket ${name} gone`)
    },
  }
}

/**
 * The control plane is shared: S3Bucket CRs other files left behind (the seed examples) were provisioned by our
 * operators too. Take our finalizer off them again, so that nothing waits for an operator that is gone.
 */
async function releaseForeignBuckets(namespace: string): Promise<void> {
  const client = adminClient()
  try {
    const all = (await client.request<{items: Bucket[]}>({path: '/apis/polycrate.io/v1alpha1/s3buckets'})).items
    for (const bucket of all) {
      if (bucket.metadata.namespace === namespace || !bucket.metadata.finalizers?.includes('polycrate.io/s3bucket-cleanup')) continue
      const finalizers = bucket.metadata.finalizers.filter((name) => name !== 'polycrate.io/s3bucket-cleanup')
      await client.mergePatch({...bucketsIn(bucket.metadata.namespace!), name: bucket.metadata.name}, {metadata: {finalizers}}).catch(() => {})
    }
  } finally {
    client.close()
  }
}

describe('S3Bucket provisioning (real apiserver, simulator)', function () {
  this.timeout(180_000)
  const harness = inProcessOperator({
    logLevel: 'debug',
    metricsPort: true,
    // Delete our CRs while the operator runs, so that it releases its finalizers.
    cleanup: async ({client, sim, namespace}) => {
      const {deleteAndWait} = helpers(client, sim, () => namespace)
      const left = (await client.request<{items: Bucket[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/s3buckets`})).items
      for (const bucket of left) await deleteAndWait(bucket.metadata.name).catch((error) => process.stderr.write(`[s3bucket after] ${(error as Error).message}\n`))
    },
  })
  // Once the operator is gone (the harness stopped it).
  after(async () => {
    if (harness.namespace) await releaseForeignBuckets(harness.namespace)
  })
  let client: KubeClient
  let sim: ApiSimulator
  let namespace: string
  let workspaceId: string
  let h: ReturnType<typeof helpers>
  const region = (name: string) => sim.s3.regions.find((r) => r.name === name)!
  const kubectl = (...args: string[]) => execa('kubectl', ['--kubeconfig', controlPlane().kubeconfigPath, ...args])

  before(() => {
    ;({client, sim, namespace, workspaceId} = harness)
    h = helpers(client, sim, () => namespace)
  })

  it('every phase of the seed\'s table is reached and shown by `kubectl get s3buckets` and `polycrate operator status`', async () => {
    const watch = spawn('kubectl', ['--kubeconfig', controlPlane().kubeconfigPath, 'get', 's3buckets', '-n', namespace, '-w', '--output-watch-events'], {stdio: ['ignore', 'pipe', 'pipe']})
    let watched = ''
    watch.stdout.on('data', (chunk: Buffer) => (watched += chunk.toString()))
    // The watch is running once it shows an object created after it started.
    await h.create('phases-bad', {name: 'Phases_Bad'})
    await eventually(async () => /phases-bad/.test(watched) || undefined, 30_000, 'the kubectl watch started')
    const shown = async (name: string, phase: string) => {
      const {stdout} = await kubectl('get', 's3buckets', '-n', namespace, name)
      assert.match(stdout, /^NAME +BUCKET +REGION +SECRET +PHASE +AGE$/m)
      assert.match(stdout, new RegExp(`^${name} +\\S+ +.* ${phase} +\\S+$`, 'm'), stdout)
      const status = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath, '--namespace', namespace])
      assert.equal(status.error, undefined, status.error?.message)
      assert.match(status.stdout, /^S3Buckets\n-+\n {2}NAMESPACE +NAME +BUCKET +REGION +SECRET +PHASE/m)
      assert.match(status.stdout, new RegExp(`^ {2}${namespace} +${name} +.*${phase}`, 'm'), status.stdout)
    }
    try {
      // Pending: the regions come slowly; Provisioning: so does the bucket; WaitingForCredentials: no key yet.
      sim.faults.set({latencyMs: 8000, match: (method, path) => (method === 'POST' && path === '/api/v1/s3/buckets/') || (method === 'GET' && path === '/api/v1/s3/regions/')})
      sim.s3.credentialsPending = true
      await h.create('phases', {name: 'phases-data', region: 'fsn1'})
      await h.phase('phases', 'Pending')
      await shown('phases', 'Pending')
      await h.phase('phases', 'Provisioning')
      await shown('phases', 'Provisioning')
      await h.phase('phases', 'WaitingForCredentials')
      await shown('phases', 'WaitingForCredentials')
      sim.faults.clear()
      sim.s3.credentialsPending = false
      const {bucket} = await h.ready('phases')
      await shown('phases', 'Ready')
      assert.deepEqual([bucket.status?.region, bucket.status?.credentials_secret, bucket.status?.adopted], ['fsn1', 's3-phases-data-credentials', false])

      await h.phase('phases-bad', 'Error')
      await shown('phases-bad', 'Error')

      // Pending comes first and lasts only until the next step: the watch saw it.
      await eventually(async () => /phases +phases-data .* Pending /.test(watched) || undefined, 10_000, 'Pending in the kubectl watch')
      const order = ['Pending', 'Provisioning', 'WaitingForCredentials', 'Ready'].map((phase) => watched.search(new RegExp(`phases +phases-data .* ${phase} `)))
      assert.ok(order.every((index, i) => index >= 0 && (i === 0 || index > order[i - 1]!)), `phases in order in the watch:\n${watched}`)
    } finally {
      sim.faults.clear()
      sim.s3.credentialsPending = false
      watch.kill()
    }
  })

  it('Secret exactly as the seed shows it; deleted by hand → restored; edited → restored; keys rotated in the API → Secret updated', async () => {
    await h.create('creds', {name: 'creds-data', region: 'nbg1'})
    const {bucket, secret} = await h.ready('creds')
    assert.equal(secret.type, 'Opaque')
    assert.deepEqual(secret.metadata.labels, {polycrate_managed_by: 'operator', polycrate_object_type: 's3-credentials', polycrate_s3_bucket_name: 'creds-data', polycrate_s3_bucket_region: 'nbg1'})
    assert.deepEqual(secret.metadata.ownerReferences, [{apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', name: 'creds', uid: bucket.metadata.uid, controller: true, blockOwnerDeletion: true}])
    const values = decode(secret) // holds keys: compared, never printed
    assert.deepEqual(Object.keys(values).sort(), ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'BUCKET_NAME', 'S3_ENDPOINT', 'S3_REGION'])
    assert.deepEqual([values.BUCKET_NAME, values.S3_REGION, values.S3_ENDPOINT], ['creds-data', 'nbg1', region('nbg1').endpoint])
    const id = String(bucket.status?.bucket_id)
    const apiKeys = async () => (await new PolycrateApiClient({baseUrl: sim.url, token: sim.issueToken({kind: 'agent', workspaceId})}).s3Buckets.credentials(id)).data.credentials[0]!
    const first = await apiKeys()
    assert.ok(values.AWS_ACCESS_KEY_ID === first.access_key && values.AWS_SECRET_ACCESS_KEY === first.secret_key, 'the Secret holds the API\'s keys')

    await client.delete({...secretsIn(namespace), name: 's3-creds-data-credentials'})
    const restored = await eventually(async () => {
      const s = await h.secret('creds-data')
      return s && s.metadata.uid !== secret.metadata.uid ? s : undefined
    }, 30_000, 'the deleted Secret restored')
    assert.ok(JSON.stringify(decode(restored)) === JSON.stringify(values), 'the restored Secret holds the same values') // never print keys

    await client.mergePatch({...secretsIn(namespace), name: 's3-creds-data-credentials'}, {stringData: {AWS_SECRET_ACCESS_KEY: 'typed-by-hand', S3_REGION: 'elsewhere'}})
    await eventually(async () => JSON.stringify(decode(await h.secret('creds-data'))) === JSON.stringify(values) || undefined, 30_000, 'the edited Secret restored')

    assert.equal(sim.rotateS3Credentials(id), true)
    const rotated = await apiKeys()
    assert.ok(rotated.access_key !== first.access_key && rotated.secret_key !== first.secret_key, 'new keys in the API')
    await eventually(async () => {
      const now = decode(await h.secret('creds-data'))
      return now.AWS_ACCESS_KEY_ID === rotated.access_key && now.AWS_SECRET_ACCESS_KEY === rotated.secret_key
    }, 30_000, 'the rotated keys in the Secret')
    const reasons = (await h.events('creds')).map((event) => event.reason)
    for (const reason of ['BucketCreated', 'CredentialsWritten', 'CredentialsRestored', 'CredentialsUpdated']) assert.ok(reasons.includes(reason), `${reason} in ${reasons}`)
    assert.equal(h.apiBuckets('creds-data').length, 1)
  })

  it('adopts an API bucket of the same name and region instead of creating a second', async () => {
    const agent = new PolycrateApiClient({baseUrl: sim.url, token: sim.issueToken({kind: 'agent', workspaceId})})
    const existing = await agent.s3Buckets.create({name: 'adopt-me', region: region('hel1').id})
    sim.clearRequests()
    await h.create('adopt', {name: 'adopt-me', region: 'hel1', reclaim_policy: 'retain'})
    const {bucket} = await h.ready('adopt')
    assert.deepEqual([bucket.status?.bucket_id, bucket.status?.adopted], [existing.id, true])
    assert.equal(h.apiBuckets('adopt-me').length, 1, 'no duplicate')
    assert.equal(sim.requests.filter((r) => r.method === 'POST' && r.resource === 's3/buckets').length, 0, 'no create request')
    assert.ok((await h.events('adopt')).some((event) => event.reason === 'BucketAdopted'))
  })

  it('default region: spec.region empty → the region of SystemConfig default_s3_bucket_cluster', async () => {
    const before = sim.systemConfig.default_s3_bucket_cluster
    try {
      sim.systemConfig.default_s3_bucket_cluster = region('hel1').clusterId
      await h.create('default-region', {name: 'default-region-data'})
      const {bucket, secret} = await h.ready('default-region')
      assert.equal(bucket.status?.region, 'hel1')
      assert.equal(decode(secret).S3_REGION, 'hel1')
      assert.equal(h.apiBuckets('default-region-data')[0]?.region, region('hel1').id)
      // The region stays with the bucket when the default changes later.
      sim.systemConfig.default_s3_bucket_cluster = region('fsn1').clusterId
      const credentialReads = () => sim.requests.filter((r) => r.path === `/api/v1/s3/buckets/${String(bucket.status?.bucket_id)}/credentials/`).length
      const seen = credentialReads()
      await client.mergePatch({...bucketsIn(namespace), name: 'default-region'}, {metadata: {labels: {touched: 'yes'}}})
      await eventually(async () => credentialReads() >= seen + 2 || undefined, 30_000, 'two more reconciles of the bucket')
      assert.equal((await h.get('default-region'))?.status?.region, 'hel1')
      assert.equal((await h.get('default-region'))?.status?.phase, 'Ready')
      assert.equal(h.apiBuckets('default-region-data').length, 1)
    } finally {
      sim.systemConfig.default_s3_bucket_cluster = before
    }
  })

  it('reclaim_policy retain keeps the API bucket, delete deletes it before the CR goes; the Secret goes with the CR', async () => {
    await h.create('keep', {name: 'keep-data', region: 'fsn1', reclaim_policy: 'retain'})
    await h.create('drop', {name: 'drop-data', region: 'fsn1', reclaim_policy: 'delete'})
    const keep = (await h.ready('keep')).bucket
    const drop = (await h.ready('drop')).bucket
    assert.ok(keep.metadata.finalizers?.includes('polycrate.io/s3bucket-cleanup'))
    await h.deleteAndWait('keep')
    await h.deleteAndWait('drop')
    assert.ok(sim.get('s3/buckets', String(keep.status?.bucket_id)), 'retained bucket still in the API')
    assert.equal(sim.get('s3/buckets', String(drop.status?.bucket_id)), undefined, 'deleted bucket gone from the API')
    await eventually(async () => (await h.secret('keep-data')) === undefined && (await h.secret('drop-data')) === undefined, 60_000, 'Secrets garbage-collected with their CRs')
  })

  it('malformed inputs → phase Error with a condition and an Event naming the rule, no API call; API refusals → reason a person can act on', async () => {
    sim.clearRequests()
    const cases: Array<[cr: string, spec: Record<string, unknown>, reason: string, message: RegExp]> = [
      ['bad-short', {name: 'ab'}, 'BucketNameLength', /between 3 and 63 characters/],
      ['bad-long', {name: 'a'.repeat(64)}, 'BucketNameLength', /it has 64/],
      ['bad-chars', {name: 'Upper_Case'}, 'BucketNameCharacters', /only lowercase letters, digits, dots and hyphens/],
      ['bad-end', {name: 'bucket-'}, 'BucketNameStartEnd', /begins and ends with a letter or digit/],
      ['bad-dots', {name: 'a..b'}, 'BucketNameAdjacentDots', /no two adjacent dots/],
      ['bad-ip', {name: '10.0.0.1'}, 'BucketNameIPAddress', /not formatted as an IP address/],
      ['bad-prefix', {name: 'xn--bucket'}, 'BucketNameReservedPrefix', /does not start with/],
      ['bad-suffix', {name: 'data-s3alias'}, 'BucketNameReservedSuffix', /does not end with/],
      ['bad-region-format', {name: 'fine-name', region: 'FSN 1'}, 'InvalidRegion', /not a region name/],
    ]
    for (const [cr, spec] of cases) await h.create(cr, spec)
    for (const [cr, spec, reason, message] of cases) {
      const bucket = await h.phase(cr, 'Error')
      const ready = bucket.status?.conditions?.find((c) => c.type === 'Ready')
      assert.equal(ready?.reason, reason, cr)
      assert.match(ready?.message ?? '', message, cr)
      await eventually(async () => (await h.events(cr)).find((e) => e.type === 'Warning' && e.reason === reason), 10_000, `Event ${reason} on ${cr}`)
      assert.equal(h.apiBuckets(String(spec.name)).length, 0)
    }
    const names = new Set(cases.map(([, spec]) => String(spec.name)))
    const about = sim.requests.filter((r) => names.has(r.query.name_exact ?? '') || names.has(r.query.bucket ?? '') || names.has(String((r.body as {name?: string} | undefined)?.name)))
    assert.deepEqual(about, [], 'no API call for a malformed spec')

    // Rejected by the CRD before the CR exists: the apiserver's answer names the allowed values.
    await assert.rejects(h.create('bad-policy', {name: 'fine-name', reclaim_policy: 'delet'}), (error: unknown) =>
      error instanceof KubeApiError && error.status === 422 && /reclaim_policy.*supported values: "retain", "delete"/.test(error.message))

    // Only the API can tell: unknown region, name taken by another workspace, quota.
    await h.create('bad-region', {name: 'fine-name', region: 'mars1'})
    const unknown = await h.phase('bad-region', 'Error')
    assert.match(String(unknown.status?.message), /Region "mars1" is not an S3 region of the Polycrate API \(known: fsn1, hel1, nbg1\): fix spec\.region/)

    const otherOrg = sim.createOrganization('other-org')
    const otherWs = sim.createWorkspace({name: 'other-ws', organizationId: otherOrg.id})
    const other = new PolycrateApiClient({baseUrl: sim.url, token: sim.issueToken({kind: 'agent', workspaceId: otherWs.id})})
    await other.s3Buckets.create({name: 'taken-name', region: region('fsn1').id})
    await h.create('taken', {name: 'taken-name', region: 'fsn1'})
    const taken = await h.phase('taken', 'Error')
    assert.equal(taken.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'BucketNameTaken')
    assert.match(String(taken.status?.message), /taken in region fsn1 by another workspace: choose another spec\.name/)
    assert.equal(h.apiBuckets('taken-name').length, 1, 'the other workspace\'s bucket only')

    const live = sim.list('s3/buckets').filter((bucket) => bucket.workspace === workspaceId).length
    sim.s3.quotas.set(workspaceId, live)
    try {
      await h.create('over-quota', {name: 'over-quota-data', region: 'fsn1'})
      const over = await h.phase('over-quota', 'Error')
      assert.equal(over.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'QuotaExceeded')
      assert.match(String(over.status?.message), /quota reached: the workspace has \d+ of \d+ buckets/)
      assert.ok((await h.events('over-quota')).some((e) => e.reason === 'QuotaExceeded'))
    } finally {
      sim.s3.quotas.delete(workspaceId)
    }
    await h.ready('over-quota') // retried every sync interval: provisioned once the quota allows it
  })

  it('spec.name and spec.region are immutable once provisioned: a change → condition, not a second bucket', async () => {
    await h.create('frozen', {name: 'frozen-data', region: 'fsn1'})
    await h.ready('frozen')
    await client.mergePatch({...bucketsIn(namespace), name: 'frozen'}, {spec: {name: 'frozen-renamed'}})
    const renamed = await h.phase('frozen', 'Error')
    assert.equal(renamed.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'ImmutableFieldChanged')
    assert.match(String(renamed.status?.message), /spec\.name changed from "frozen-data" to "frozen-renamed"/)
    await client.mergePatch({...bucketsIn(namespace), name: 'frozen'}, {spec: {name: 'frozen-data', region: 'nbg1'}})
    await eventually(async () => /spec\.region changed from "fsn1" to "nbg1"/.test(String((await h.get('frozen'))?.status?.message)) || undefined, 30_000, 'region change refused')
    await client.mergePatch({...bucketsIn(namespace), name: 'frozen'}, {spec: {region: 'fsn1'}})
    await h.ready('frozen')
    assert.equal(h.apiBuckets('frozen-data').length, 1)
    assert.equal(h.apiBuckets('frozen-renamed').length, 0)
  })

  it('s3_bucket_provisioning.enabled: false → S3Buckets are left alone; true again → provisioned', async () => {
    const configRef = configOf(namespace)
    type Config = KubeObject & {status?: {controllers?: Array<{name: string; enabled: boolean; running: boolean}>}}
    await client.mergePatch(configRef, {spec: {s3_bucket_provisioning: {enabled: false}}})
    try {
      await eventually(async () => (await client.get<Config>(configRef)).status?.controllers?.find((c) => c.name === 's3-bucket-provisioning' && !c.enabled && !c.running), 30_000, 'the feature stopped')
      await h.create('switched-off', {name: 'switched-off-data', region: 'fsn1'})
      // The operator is alive meanwhile: two heartbeats after the CR was created.
      const heartbeats = () => sim.requests.filter((r) => r.resource === 'agent/health').length
      const seen = heartbeats()
      await eventually(async () => heartbeats() >= seen + 2 || undefined, 30_000, 'two more heartbeats')
      assert.equal((await h.get('switched-off'))?.status, undefined, 'no status written')
      assert.equal(h.apiBuckets('switched-off-data').length, 0, 'no bucket created')
    } finally {
      await client.mergePatch(configRef, {spec: {s3_bucket_provisioning: {enabled: true}}})
    }
    await h.ready('switched-off')
  })

  it('no S3 key in the operator\'s logs, Events, statuses or /metrics', async () => {
    const keys = [...sim.list('s3/buckets')].map((bucket) => String(bucket.id))
    assert.ok(keys.length > 0)
    const events = JSON.stringify((await client.request<{items: unknown[]}>({path: `/api/v1/namespaces/${namespace}/events`})).items)
    const statuses = JSON.stringify((await client.request<{items: Bucket[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/s3buckets`})).items.map((b) => b.status))
    const metrics = await (await fetch(harness.metricsUrl)).text()
    assert.ok(harness.logs.length > 0 && metrics.includes('polycrate'))
    for (const [where, text] of [['logs', harness.logs.map((line) => JSON.stringify(line)).join('\n')], ['events', events], ['statuses', statuses], ['metrics', metrics]] as const) {
      assert.ok(!S3_KEY_PATTERN.test(text), `an S3 key in the ${where}`)
    }
  })
})

describe('S3Bucket provisioning: SIGKILL between bucket create and Secret write (operator process)', function () {
  this.timeout(300_000)
  let client: KubeClient
  let sim: ApiSimulator
  let namespace: string
  const operators: OperatorProcess[] = []
  let h: ReturnType<typeof helpers>

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
    ;({namespace} = await operatorNamespaceFor(client, sim))
    h = helpers(client, sim, () => namespace)
  })

  after(async () => {
    const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace})
    operators.push(operator)
    const left = (await client.request<{items: Bucket[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/s3buckets`})).items
    for (const bucket of left) await h.deleteAndWait(bucket.metadata.name).catch(() => {})
    await Promise.all(operators.map((o) => o.stop('SIGKILL')))
    await releaseForeignBuckets(namespace)
    client?.close()
    await sim?.close()
  })

  it('5 kills → 0 duplicate buckets, every Secret present, no key in any output', async () => {
    // The keys come slowly, so the kill lands after the bucket's create and before its Secret.
    sim.faults.set({latencyMs: 3000, match: (method, path) => method === 'GET' && path.endsWith('/credentials/')})
    for (let i = 0; i < 5; i++) {
      await h.create(`kill-${i}`, {name: `kill-${i}-data`, region: 'fsn1'})
      const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace})
      operators.push(operator)
      await eventually(async () => sim.requests.some((r) => r.method === 'POST' && r.resource === 's3/buckets' && r.status === 201 && (r.body as {name?: string}).name === `kill-${i}-data`) || undefined, 60_000, `bucket kill-${i}-data created`)
      await operator.stop('SIGKILL')
      assert.equal(await h.secret(`kill-${i}-data`), undefined, `killed before the Secret of kill-${i}-data was written`)
    }
    sim.faults.clear()
    const final = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace})
    operators.push(final)
    for (let i = 0; i < 5; i++) {
      const {secret} = await h.ready(`kill-${i}`, 60_000)
      assert.equal(decode(secret).BUCKET_NAME, `kill-${i}-data`)
      assert.equal(h.apiBuckets(`kill-${i}-data`).length, 1, `one API bucket kill-${i}-data`)
    }
    // (Only ours: S3Bucket CRs other test files left in the shared cluster are provisioned too.)
    const creates = sim.requests.filter((r) => r.method === 'POST' && r.resource === 's3/buckets' && r.status === 201 && /^kill-\d-data$/.test(String((r.body as {name?: string}).name)))
    assert.equal(creates.length, 5, 'one create per bucket')
    const metrics = await (await fetch(final.metricsUrl)).text()
    for (const operator of operators) assert.ok(!S3_KEY_PATTERN.test(operator.rawOutput()), 'no S3 key in an operator\'s output')
    assert.ok(!S3_KEY_PATTERN.test(metrics), 'no S3 key in /metrics')
  })
})
