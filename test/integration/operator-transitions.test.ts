/**
 * The operator's own transitions (a feature disabled, a CRD removed), end to end against the real
 * apiserver and the API simulator: a feature disabled releases the finalizers it put on users' objects.
 */
import assert from 'node:assert/strict'
import type {KubeObject} from '../../src/kube/client.js'
import {allCrds} from '../../src/crds/index.js'
import {customResourceDefinitions} from '../../src/crds/render.js'
import {installCrds} from '../../src/kube/crd-install.js'
import {finalizers} from '../../src/operator/conventions.js'
import {createIngresses} from '../support/api-setup.js'
import {freshNamespace} from '../support/cluster.js'
import {configRef as configOf, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

const ingresses = (namespace: string, name?: string) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace, name})
const endpoints = (namespace: string, name?: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace, name})
type Synced = KubeObject & {status?: {phase?: string; apiID?: string}}

describe('The operator\'s own transitions (in-process operator, real apiserver, simulator)', function () {
  this.timeout(300_000)
  const harness = inProcessOperator({spec: {endpoint_discovery: {enabled: true}}})
  const configRef = () => configOf(harness.namespace)
  const events = async (namespace: string, name: string) =>
    (await harness.client.request<{items: Array<{type: string; reason: string; message: string}>}>({path: `/api/v1/namespaces/${namespace}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items


  it('the Endpoint CRD deleted and installed again → the API endpoints are never deleted, the CRs come back with the same API ids, no duplicates', async () => {
    const namespace = await freshNamespace(harness.client, 'crd')
    await createIngresses(harness.client, namespace, 2, 'crd')
    const listSynced = async () => {
      const items = (await harness.client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items
      return items.length === 2 && items.every((item) => item.status?.phase === 'Synced' && item.status.apiID) ? items : undefined
    }
    const before = await eventually(listSynced, 60_000, 'two Endpoints synced')
    const ids = before.map((item) => item.status!.apiID!).sort()
    const crdRef = {group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'endpoints.polycrate.io'}
    await harness.client.delete(crdRef)
    await eventually(async () => (await harness.client.getOrUndefined(crdRef)) === undefined, 60_000, 'the Endpoint CRD gone')
    for (const id of ids) {
      const api = harness.sim.get('endpoints', id)
      assert.ok(api && !api.is_deleted, `API endpoint ${id} still there after the CRD went`)
    }
    await installCrds(harness.client, customResourceDefinitions(allCrds.filter((crd) => crd.kind === 'Endpoint')))
    const after = await eventually(listSynced, 60_000, 'two Endpoints synced again')
    assert.deepEqual(after.map((item) => item.status!.apiID!).sort(), ids, 'adopted by natural key: the same API ids')
    const names = before.map((item) => harness.sim.get('endpoints', item.status!.apiID!)!.name)
    assert.equal((harness.sim.list('endpoints') as Array<{name: string; is_deleted?: boolean}>).filter((e) => names.includes(e.name) && !e.is_deleted).length, 2, 'no duplicates')
  })

  it('the S3Bucket CRD deleted → a bucket with reclaim_policy delete is NOT deleted in the API', async () => {
    const buckets = {group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace: harness.namespace}
    const bucketName = `crd-drop-${Math.random().toString(36).slice(2, 8)}`
    await harness.client.create(buckets, {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'drop', namespace: harness.namespace}, spec: {name: bucketName, region: 'fsn1', reclaim_policy: 'delete'}})
    const ready = await eventually(async () => {
      const bucket = await harness.client.getOrUndefined<KubeObject & {status?: {phase?: string; bucket_id?: string}}>({...buckets, name: 'drop'})
      return bucket?.status?.phase === 'Ready' && bucket.status.bucket_id ? bucket : undefined
    }, 60_000, 'S3Bucket Ready')
    const crdRef = {group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 's3buckets.polycrate.io'}
    await harness.client.delete(crdRef)
    await eventually(async () => (await harness.client.getOrUndefined(crdRef)) === undefined, 60_000, 'the S3Bucket CRD gone')
    assert.ok(harness.sim.get('s3/buckets', ready.status!.bucket_id!), 'the API bucket is still there')
    await installCrds(harness.client, customResourceDefinitions(allCrds.filter((crd) => crd.kind === 'S3Bucket')))
  })

  it('endpoint_discovery disabled → its finalizer is released from every monitored Ingress (with an Event), the Endpoints and their API objects stay, and deleting an Ingress no longer waits', async () => {
    const namespace = await freshNamespace(harness.client, 'fin')
    await createIngresses(harness.client, namespace, 2, 'fin')
    const synced = await eventually(async () => {
      const items = (await harness.client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items
      return items.length === 2 && items.every((item) => item.status?.phase === 'Synced' && item.status.apiID) ? items : undefined
    }, 60_000, 'two Endpoints synced')
    for (const name of ['fin-0', 'fin-1']) {
      const ingress = await harness.client.get<KubeObject>(ingresses(namespace, name))
      assert.ok((ingress.metadata?.finalizers as string[] | undefined)?.includes(finalizers.ingressDiscovery), `${name} carries the discovery finalizer`)
    }

    await harness.client.mergePatch(configRef(), {spec: {endpoint_discovery: {enabled: false}}})
    for (const name of ['fin-0', 'fin-1']) {
      await eventually(async () => !((await harness.client.get<KubeObject>(ingresses(namespace, name))).metadata?.finalizers as string[] | undefined)?.includes(finalizers.ingressDiscovery), 30_000, `${name} released`)
    }
    const event = await eventually(async () => (await events(namespace, 'fin-0')).find((e) => e.reason === 'FinalizerReleased'), 30_000, 'FinalizerReleased Event on fin-0')
    assert.match(event.message, /disabled/)

    await harness.client.delete(ingresses(namespace, 'fin-0'))
    await eventually(async () => (await harness.client.getOrUndefined(ingresses(namespace, 'fin-0'))) === undefined, 10_000, 'fin-0 deleted at once')
    // The feature is stopped, not cleaning up: its CRs and their API objects stay as they are.
    for (const endpoint of synced) {
      assert.ok(await harness.client.getOrUndefined(endpoints(namespace, endpoint.metadata!.name!)), `Endpoint ${endpoint.metadata!.name} kept`)
      assert.ok(harness.sim.get('endpoints', endpoint.status!.apiID!), `API endpoint ${endpoint.status!.apiID} kept`)
    }
  })

  it('an invalid OperatorConfig change → Valid=False names the field and says the last valid configuration stays in force; every controller keeps running; the heartbeat goes on', async () => {
    type Config = KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason: string}>; conditions?: Array<{type: string; status: string; reason: string; message: string}>}}
    const before = await eventually(async () => {
      const config = await harness.client.get<Config>(configRef())
      return config.status?.conditions?.find((c) => c.type === 'Valid')?.status === 'True' && config.status.conditions.find((c) => c.type === 'APIConnected')?.status === 'True' ? config : undefined
    }, 30_000, 'a valid, connected OperatorConfig')
    const runningBefore = before.status!.controllers!.filter((c) => c.running).map((c) => c.name).sort()
    assert.ok(runningBefore.includes('api-sync') && runningBefore.includes('host-discovery'), runningBefore.join(', '))

    await harness.client.mergePatch(configRef(), {spec: {node_discovery: {label_selector: 'a b=c!!'}}})
    const invalid = await eventually(async () => {
      const config = await harness.client.get<Config>(configRef())
      return config.status?.conditions?.find((c) => c.type === 'Valid')?.status === 'False' ? config : undefined
    }, 30_000, 'Valid=False')
    const valid = invalid.status!.conditions!.find((c) => c.type === 'Valid')!
    assert.match(valid.message, /spec\.node_discovery\.label_selector/)
    assert.match(valid.message, /last valid configuration .*stays in force/)
    assert.deepEqual(invalid.status!.controllers!.filter((c) => c.running).map((c) => c.name).sort(), runningBefore, 'every controller keeps running')
    assert.equal(invalid.status!.controllers!.some((c) => c.reason === 'PausedInvalidConfig'), false)
    const reports = harness.sim.list('agent/health').length
    await eventually(async () => harness.sim.list('agent/health').length >= reports + 2, 30_000, 'two more heartbeats after the invalid change')
    const connected = (await harness.client.get<Config>(configRef())).status!.conditions!.find((c) => c.type === 'APIConnected')!
    assert.equal(connected.status, 'True', `${connected.reason}: ${connected.message}`)

    await harness.client.mergePatch(configRef(), {spec: {node_discovery: {label_selector: ''}}})
    await eventually(async () => (await harness.client.get<Config>(configRef())).status?.conditions?.find((c) => c.type === 'Valid')?.status === 'True', 30_000, 'valid again')
  })
})

describe('An OperatorConfig never valid since the start (in-process operator, simulator)', function () {
  this.timeout(120_000)
  const harness = inProcessOperator({spec: {node_discovery: {label_selector: 'a b=c!!'}}, waitForCluster: false})

  it('→ discovery paused, but API sync runs (api_sync is valid by itself): the agent heartbeats, Valid=False says so', async () => {
    const {client, sim, namespace} = harness
    await eventually(async () => sim.list('agent/health').length >= 2, 30_000, 'heartbeats with a never-valid OperatorConfig')
    type Config = KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason: string}>; conditions?: Array<{type: string; status: string; message: string}>}}
    const config = await eventually(async () => {
      const found = await client.get<Config>(configOf(namespace))
      return found.status?.conditions?.find((c) => c.type === 'Valid')?.status === 'False' && found.status.controllers?.length ? found : undefined
    }, 30_000, 'Valid=False')
    assert.match(config.status!.conditions!.find((c) => c.type === 'Valid')!.message, /API sync runs/)
    assert.deepEqual(config.status!.controllers!.filter((c) => c.running).map((c) => c.name), ['api-sync'])
    assert.equal(config.status!.controllers!.find((c) => c.name === 'host-discovery')?.reason, 'PausedInvalidConfig')
  })
})

describe('A feature disabled while the operator was down (in-process operator, simulator)', function () {
  this.timeout(120_000)
  const harness = inProcessOperator({spec: {endpoint_discovery: {enabled: true}}, start: false})

  it('the operator starts with endpoint_discovery disabled → the finalizers of the earlier run are released', async () => {
    const {client, namespace: operatorNamespace} = harness
    const namespace = await freshNamespace(client, 'left')
    await createIngresses(client, namespace, 1, 'left')
    const hasFinalizer = async () => ((await client.get<KubeObject>(ingresses(namespace, 'left-0'))).metadata?.finalizers as string[] | undefined ?? []).includes(finalizers.ingressDiscovery)
    harness.start()
    await eventually(hasFinalizer, 60_000, 'the Ingress carries the discovery finalizer')
    // A crash-like stop: the feature never stops for good, so this run releases nothing.
    await harness.stop()
    assert.equal(await hasFinalizer(), true, 'still there after a shutdown')
    await client.mergePatch(configOf(operatorNamespace), {spec: {endpoint_discovery: {enabled: false}}})
    harness.start()
    await eventually(async () => !(await hasFinalizer()), 30_000, 'the finalizer of the earlier run released')
  })
})
