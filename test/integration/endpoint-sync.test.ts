import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import yaml from 'js-yaml'
import type {EndpointSpec, EndpointStatus} from '../../src/crds/endpoint.js'
import type {KubeObject} from '../../src/kube/client.js'
import {freshNamespace} from '../support/cluster.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually, ingressRef} from '../support/helpers.js'

type EndpointObject = KubeObject & {spec: EndpointSpec; status?: EndpointStatus}
type ApiEndpoint = Record<string, unknown> & {id: string; name: string; remote_address: string; spec?: {http?: Record<string, unknown>}; is_deleted?: boolean}
const fixtures = path.resolve(import.meta.dirname, '../fixtures/discovery')
const examples = yaml.loadAll(readFileSync(path.join(fixtures, 'ingress-examples.yaml'), 'utf8')) as KubeObject[]
const example = (name: string) => examples.find((e) => e.metadata?.name === name)!

describe('endpoint sync to the Polycrate API (in-process operator + simulator)', function () {
  this.timeout(120_000)
  const harness = inProcessOperator({waitForCluster: false})

  const listEndpoints = async (namespace: string) =>
    (await harness.client.request<{items: EndpointObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items
  const apiEndpoints = () => harness.sim.list('endpoints') as ApiEndpoint[]


  it('Example 9 → four Endpoint CRs → four API endpoints with the check settings in spec.http; edits, API-side deletes and source deletion follow', async () => {
    const namespace = await freshNamespace(harness.client, 'sync')
    const source = example('multi-service-platform')
    await harness.client.create(ingressRef(namespace), {...source, metadata: {...source.metadata, namespace}})
    const synced = await eventually(async () => {
      const list = await listEndpoints(namespace)
      return list.length === 4 && list.every((e) => e.status?.phase === 'Synced') ? list : undefined
    }, 30_000, 'four synced Endpoint CRs')
    const cluster = harness.sim.list('kubernetes/clusters')[0]!
    for (const endpoint of synced) {
      assert.equal(endpoint.status?.syncStatus, 'synced')
      assert.ok(endpoint.status?.configHash)
      assert.ok(endpoint.status?.lastSyncedAt)
      assert.deepEqual(endpoint.metadata?.finalizers, ['polycrate.io/endpoint-cleanup'])
      const api = harness.sim.get('endpoints', endpoint.status!.apiID!) as ApiEndpoint
      assert.equal(api.remote_address, endpoint.spec.remoteAddress)
      assert.equal(api.remote_port, 443)
      assert.equal(api.k8s_cluster, cluster.id)
      assert.equal(api.spec?.http?.path, endpoint.spec.path)
      assert.equal(api.spec?.http?.tls, true)
      assert.equal(api.spec?.http?.timeout, endpoint.spec.timeout)
      assert.deepEqual(api.spec?.http?.accepted_status_codes, endpoint.spec.expectedStatusCodes)
    }
    const data = synced.find((e) => e.spec.remoteAddress === 'data.example.com')!
    assert.equal((harness.sim.get('endpoints', data.status!.apiID!) as ApiEndpoint).spec?.http?.timeout, 10)

    // Idle: nothing is written to the API or the CRs once synced (heartbeats aside).
    harness.sim.clearRequests()
    const versions = (await listEndpoints(namespace)).map((e) => e.metadata?.resourceVersion)
    // The positive signal: two inventory checks (a listing of the cluster's API endpoints, every sync interval) went by.
    const inventoryChecks = () => harness.sim.requests.filter((r) => r.method === 'GET' && r.resource === 'endpoints' && r.query.k8s_cluster).length
    await eventually(async () => inventoryChecks() >= 2, 30_000, 'two inventory checks while idle')
    // (The operator syncs every Endpoint CR of the cluster, other test files' too: count the writes about ours.)
    const ours = new Set(synced.map((e) => e.status!.apiID!))
    const writes = harness.sim.requests.filter((r) => r.method !== 'GET' && r.resource !== 'agent/health' &&
      ([...ours].some((id) => r.path.includes(id)) || String((r.body as {name?: string} | undefined)?.name ?? '').startsWith(`${namespace}-`)))
    assert.deepEqual(writes, [], 'API writes while idle')
    assert.deepEqual((await listEndpoints(namespace)).map((e) => e.metadata?.resourceVersion), versions, 'CR writes while idle')

    // An annotation edit reaches the API.
    await harness.client.mergePatch(ingressRef(namespace, 'multi-service-platform'), {metadata: {annotations: {polycrate_endpoint_path: '/live'}}})
    const booking = synced.find((e) => e.spec.remoteAddress === 'booking.example.com')!
    await eventually(async () => (harness.sim.get('endpoints', booking.status!.apiID!) as ApiEndpoint).spec?.http?.path === '/live', 20_000, 'path updated in the API')

    // Deleted behind the operator's back → recreated by the next inventory check, no duplicate.
    harness.sim.deleteBehindBack('endpoints', booking.status!.apiID!)
    const recreated = await eventually(async () => {
      const current = (await listEndpoints(namespace)).find((e) => e.metadata?.name === booking.metadata?.name)
      return current?.status?.apiID && current.status.apiID !== booking.status!.apiID && harness.sim.get('endpoints', current.status.apiID) ? current : undefined
    }, 30_000, 'endpoint recreated')
    assert.equal(apiEndpoints().filter((e) => e.remote_address === 'booking.example.com' && e.name.startsWith(`${namespace}-`)).length, 1)
    assert.equal((harness.sim.get('endpoints', recreated.status!.apiID!) as ApiEndpoint).spec?.http?.path, '/live')

    // Deleting the source deletes the CRs, which delete the API objects first; then the Ingress goes.
    await harness.client.delete(ingressRef(namespace, 'multi-service-platform'))
    await eventually(async () => (await harness.client.getOrUndefined(ingressRef(namespace, 'multi-service-platform'))) === undefined, 30_000, 'Ingress gone')
    assert.deepEqual(await listEndpoints(namespace), [])
    const live = apiEndpoints().filter((e) => String(e.name).startsWith(namespace) && !e.is_deleted)
    assert.deepEqual(live, [], 'API endpoints left behind')
  })
})
