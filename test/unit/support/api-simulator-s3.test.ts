/** The simulator's S3 side (s3.ts): regions and clusters, name availability across workspaces, quota, rotation, key shape. */
import assert from 'node:assert/strict'
import {PolycrateApiClient} from '../../../src/api/index.js'
import {ApiSimulator, S3_KEY_PATTERN} from '../../support/api-simulator/index.js'

describe('API simulator: S3 regions, availability, quota, rotation', () => {
  let sim: ApiSimulator
  let mine: PolycrateApiClient
  let theirs: PolycrateApiClient
  let workspaceId: string
  before(async () => {
    sim = await ApiSimulator.start()
    const org = sim.createOrganization('acme')
    workspaceId = sim.createWorkspace({name: 'mine', organizationId: org.id}).id
    const other = sim.createWorkspace({name: 'theirs', organizationId: org.id})
    mine = new PolycrateApiClient({baseUrl: sim.url, token: sim.issueToken({kind: 'agent', workspaceId})})
    theirs = new PolycrateApiClient({baseUrl: sim.url, token: sim.issueToken({kind: 'agent', workspaceId: other.id})})
  })
  after(() => sim.close())

  it('lists regions and clusters; the default cluster is one of them; a bucket gets its region\'s endpoint', async () => {
    const regions = await mine.s3Regions.listAll()
    assert.deepEqual(regions.map((r) => r.name).sort(), ['fsn1', 'hel1', 'nbg1'])
    const defaultCluster = await mine.s3Clusters.get(String(sim.systemConfig.default_s3_bucket_cluster))
    assert.equal(typeof defaultCluster.region === 'object' && defaultCluster.region?.name, 'fsn1')
    const nbg1 = regions.find((r) => r.name === 'nbg1')!
    const bucket = await mine.s3Buckets.create({name: 'in-nbg1', region: nbg1.id})
    assert.deepEqual([bucket.region, bucket.s3_region, bucket.s3_endpoint], [nbg1.id, 'nbg1', 'https://s3.nbg1.polycrate-sim.invalid'])
    const defaulted = await mine.s3Buckets.create({name: 'in-default'})
    assert.equal(defaulted.s3_region, 'fsn1')
  })

  it('a name is available per region until any workspace takes it', async () => {
    const fsn1 = sim.s3.regions.find((r) => r.name === 'fsn1')!
    const hel1 = sim.s3.regions.find((r) => r.name === 'hel1')!
    assert.equal(await mine.s3Buckets.available('shared-name', fsn1.id), true)
    await theirs.s3Buckets.create({name: 'shared-name', region: fsn1.id})
    assert.equal(await mine.s3Buckets.available('shared-name', fsn1.id), false)
    assert.equal(await mine.s3Buckets.available('shared-name', hel1.id), true)
    await assert.rejects(mine.s3Buckets.create({name: 'shared-name', region: fsn1.id}), {name: 'ApiConflictError'})
  })

  it('quota per workspace → 400 quota_exceeded', async () => {
    const used = sim.list('s3/buckets').filter((b) => b.workspace === workspaceId).length
    sim.s3.quotas.set(workspaceId, used)
    await assert.rejects(mine.s3Buckets.create({name: 'one-too-many'}), (error: {code?: string; detail?: string}) => error.code === 'quota_exceeded' && /quota reached/.test(String(error.detail)))
    sim.s3.quotas.delete(workspaceId)
    await mine.s3Buckets.create({name: 'one-too-many'})
  })

  it('keys have the recognisable shape; rotation replaces them; pending credentials are an empty list', async () => {
    const bucket = await mine.s3Buckets.create({name: 'rotating'})
    const first = (await mine.s3Buckets.credentials(bucket.id)).data.credentials[0]!
    assert.ok(S3_KEY_PATTERN.test(String(first.access_key)) && S3_KEY_PATTERN.test(String(first.secret_key)))
    assert.equal(sim.rotateS3Credentials(bucket.id), true)
    const second = (await mine.s3Buckets.credentials(bucket.id)).data.credentials[0]!
    assert.ok(second.access_key !== first.access_key && second.secret_key !== first.secret_key, 'both keys replaced') // never print keys
    sim.s3.credentialsPending = true
    assert.deepEqual((await mine.s3Buckets.credentials(bucket.id)).data.credentials, [])
    sim.s3.credentialsPending = false
    assert.equal(sim.rotateS3Credentials('00000000-0000-4000-8000-000000000000'), false)
  })
})
