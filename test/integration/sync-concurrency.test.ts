/**
 * `--max-concurrent-syncs` governs the API-bound sync, not `--max-concurrent-reconciles`: with 1 reconcile worker and
 * 4 sync workers, and every endpoint create held 1.5 s by the simulator, up to 4 creates are in flight at once —
 * never more (a worker sends its next create only after its last one answered). Once the inventory listing is
 * loaded a new endpoint costs one API call (no lookup GET before the create), and an API endpoint the listing does
 * not know yet (created after it) is still adopted, not duplicated (the create's 409 leads to the lookup).
 */
import assert from 'node:assert/strict'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/helpers.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'

const endpointsRef = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace})
const HOLD_MS = 1500
const SYNCS = 4
const COUNT = 12

describe('--max-concurrent-syncs (operator process, simulator)', function () {
  this.timeout(300_000)
  let client: KubeClient
  let sim: ApiSimulator
  let operator: OperatorProcess | undefined
  const listEndpoints = async (namespace: string) =>
    (await client.request<{items: Array<KubeObject & {status?: {phase?: string; apiID?: string}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items
  const createEndpoint = (namespace: string, name: string) => client.create(endpointsRef(namespace), {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name, namespace},
    spec: {remoteAddress: `${name}.${namespace}.example.com`, remotePort: 443, kind: 'http'},
  })

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
  })
  after(async () => {
    await operator?.stop('SIGTERM')
    client.close()
    await sim.close()
  })

  it('runs up to --max-concurrent-syncs endpoint creates at once (and as many discovery workers) while --max-concurrent-reconciles is 1', async () => {
    // A long sync interval: the only inventory listing is the one the first create asks for (the second test needs
    // an API object younger than the listing).
    const {namespace: operatorNamespace} = await operatorNamespaceFor(client, sim, {api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 3600}})
    const namespace = await freshNamespace(client, 'msync')
    // Created before the operator starts: all of them are queued at once when the sync starts.
    for (let i = 0; i < COUNT; i++) await createEndpoint(namespace, `e-${i}`)
    const ours = (path: string) => path.startsWith('/api/v1/endpoints')
    sim.faults.set({latencyMs: HOLD_MS, match: (method, path) => method === 'POST' && ours(path)})
    operator = await startOperator({
      kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace,
      args: ['--max-concurrent-reconciles', '1', '--max-concurrent-syncs', String(SYNCS)],
    })
    const crs = await eventually(async () => {
      const items = await listEndpoints(namespace)
      return items.length === COUNT && items.every((e) => e.status?.phase === 'Synced') ? items : undefined
    }, 180_000, `${COUNT} Endpoint CRs Synced`)
    sim.faults.clear()
    assert.equal(new Set(crs.map((e) => e.status?.apiID)).size, COUNT)

    const creates = sim.requests.filter((r) => r.method === 'POST' && ours(r.path) && String((r.body as {name?: string})?.name).startsWith(`${namespace}-`))
    assert.equal(creates.length, COUNT, 'one create per endpoint')
    // Creates arriving within half the hold time of each other were in flight together.
    const arrivals = creates.map((r) => r.at).sort((a, b) => a - b)
    let together = 0
    for (let i = 0; i < arrivals.length; i++) together = Math.max(together, arrivals.filter((at) => at >= arrivals[i]! && at < arrivals[i]! + HOLD_MS / 2).length)
    assert.ok(together > 1, `creates in flight together: ${together}; --max-concurrent-reconciles 1 would allow 1`)
    assert.ok(together <= SYNCS, `creates in flight together: ${together}; more than --max-concurrent-syncs ${SYNCS}`)

    const metrics = await (await fetch(operator.metricsUrl)).text()
    assert.match(metrics, new RegExp(`controller_runtime_max_concurrent_reconciles\\{controller="endpoint-sync"\\} ${SYNCS}\\b`))
    // Discovery waits on the apiserver too (one source per reconcile); CPU-bound controllers keep --max-concurrent-reconciles.
    assert.match(metrics, new RegExp(`controller_runtime_max_concurrent_reconciles\\{controller="endpoint-discovery"\\} ${SYNCS}\\b`))
    assert.match(metrics, /controller_runtime_max_concurrent_reconciles\{controller="k8sapp-pod-status"\} 1\b/)
  })

  it('once the inventory listing is loaded: one POST per new endpoint, and an API endpoint created after the listing is adopted', async () => {
    assert.ok(operator, 'the first test started the operator')
    const namespace = await freshNamespace(client, 'msync')
    const [cluster] = sim.list('kubernetes/clusters')
    assert.ok(cluster, 'the operator registered its cluster')
    // The listing the first creates asked for (without a name filter) has been answered.
    await eventually(async () => sim.requests.some((r) => r.method === 'GET' && r.path === '/api/v1/endpoints/' && r.query.k8s_cluster === cluster.id && !r.query.name_exact && r.status === 200), 30_000, 'the inventory listing')
    // Made behind the operator's back after its listing: the listing says "absent", the API says 409.
    const existing = sim.insert('endpoints', {name: `${namespace}-late`, k8s_cluster: cluster.id, remote_address: 'late.example.com', remote_port: 443, kind: 'http'})
    const before = sim.requests.length
    for (const name of ['n-0', 'n-1', 'late']) await createEndpoint(namespace, name)
    const crs = await eventually(async () => {
      const items = await listEndpoints(namespace)
      return items.length === 3 && items.every((e) => e.status?.phase === 'Synced') ? items : undefined
    }, 120_000, '3 Endpoint CRs Synced')
    assert.equal(crs.find((e) => e.metadata?.name === 'late')?.status?.apiID, existing.id, 'adopted, not duplicated')
    assert.equal(sim.list('endpoints').filter((e) => String(e.name).startsWith(`${namespace}-`)).length, 3)
    const ours = sim.requests.slice(before).filter((r) => r.path.startsWith('/api/v1/endpoints') && (String((r.body as {name?: string})?.name).startsWith(`${namespace}-`) || r.query.name_exact?.startsWith(`${namespace}-`)))
    const calls = ours.map((r) => `${r.method} ${r.query.name_exact ?? (r.body as {name: string}).name} ${r.status}`).sort()
    assert.deepEqual(calls.filter((c) => !c.includes('-late ')), [`POST ${namespace}-n-0 201`, `POST ${namespace}-n-1 201`], 'no lookup GET before a create')
    assert.deepEqual(calls.filter((c) => c.includes('-late ') && !c.startsWith('PATCH') && !c.startsWith('PUT')), [`GET ${namespace}-late 200`, `POST ${namespace}-late 409`])
  })
})
