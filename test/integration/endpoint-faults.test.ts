import assert from 'node:assert/strict'
import type {EndpointStatus} from '../../src/crds/endpoint.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {createIngresses, operatorNamespaceFor} from '../support/api-setup.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/helpers.js'
import {killWhen, startOperator, type OperatorProcess} from '../support/operator-process.js'

type EndpointObject = KubeObject & {spec: {remoteAddress: string}; status?: EndpointStatus}

describe('endpoint sync under faults (run + simulator, 200 Ingresses)', function () {
  this.timeout(900_000)
  let client: KubeClient
  let sim: ApiSimulator
  const operators: OperatorProcess[] = []

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
  })
  afterEach(async () => {
    sim.faults.clear()
    await Promise.all(operators.splice(0).map((o) => o.stop('SIGKILL')))
  })
  after(async () => {
    client.close()
    await sim.close()
  })

  const listEndpoints = async (namespace: string) => {
    const items: EndpointObject[] = []
    let token: string | undefined
    do {
      const page = await client.request<{items: EndpointObject[]; metadata: {continue?: string}}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`, query: {limit: 500, continue: token}})
      items.push(...page.items)
      token = page.metadata.continue || undefined
    } while (token)
    return items
  }

  /** Every host has exactly one live API endpoint, and every CR points at its own. */
  const assertNoDuplicatesNoLoss = async (namespace: string, hosts: string[]) => {
    const live = sim.list('endpoints').filter((e) => String(e.name).startsWith(`${namespace}-`))
    const byHost = new Map<string, number>()
    for (const endpoint of live) byHost.set(String(endpoint.remote_address), (byHost.get(String(endpoint.remote_address)) ?? 0) + 1)
    const duplicates = [...byHost].filter(([, n]) => n > 1)
    const lost = hosts.filter((host) => !byHost.has(host))
    assert.deepEqual(duplicates, [], 'duplicate API endpoints')
    assert.deepEqual(lost, [], 'hosts without an API endpoint')
    const crs = await listEndpoints(namespace)
    assert.equal(crs.length, hosts.length)
    for (const cr of crs) assert.equal(sim.get('endpoints', cr.status!.apiID!)?.remote_address, cr.spec.remoteAddress)
  }

  const allSynced = (namespace: string, count: number) => async () => {
    const crs = await listEndpoints(namespace)
    return crs.length === count && crs.every((e) => e.status?.phase === 'Synced')
  }

  it('R1: with 50 % of API requests failing (5xx and 429), the initial sync of 200 Ingresses completes: 0 duplicates, 0 lost', async () => {
    const {namespace: operatorNamespace} = await operatorNamespaceFor(client, sim)
    const namespace = await freshNamespace(client, 'r1')
    sim.faults.set({errorRate: 0.3, errorStatuses: [500, 502, 503], rateLimitRate: 0.2, retryAfterSeconds: 0})
    const hosts = await createIngresses(client, namespace, 200)
    operators.push(await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace, logLevel: 'info'}))
    // Each call makes at most 2 attempts; the work queue's per-key backoff (5 s → 60 s) is the one retry layer, so
    // at this fault rate the unluckiest of 200 keys fails 6–7 reconciles in a row: several minutes, by design.
    await eventually(allSynced(namespace, 200), 600_000, '200 Endpoint CRs synced')
    const failed = sim.requests.filter((r) => r.status >= 500 || r.status === 429).length
    assert.ok(failed > 100, `only ${failed} requests failed: the fault injection did not bite`)
    sim.faults.clear()
    await assertNoDuplicatesNoLoss(namespace, hosts)
  })

  it('R2: SIGKILL at random points of the sync, 5 times, then restart: 0 duplicates, 0 lost', async () => {
    const {namespace: operatorNamespace} = await operatorNamespaceFor(client, sim)
    const namespace = await freshNamespace(client, 'r2')
    const hosts = await createIngresses(client, namespace, 200)
    sim.faults.set({latencyMs: 20}) // spread the sync out so the kills land in the middle of it
    const inApi = () => sim.list('endpoints').filter((e) => String(e.name).startsWith(`${namespace}-`)).length
    for (let kill = 0; kill < 5; kill++) {
      const before = inApi()
      const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace, logLevel: 'info'})
      operators.push(operator)
      // Kill it at a random point of its sync (between a create and its status write, too): the moment the API has
      // stored a random 1–20 more endpoints, however fast the machine or the operator is.
      const target = before + 1 + Math.floor(Math.random() * 20)
      await killWhen(sim, operator, (entry) => entry.method === 'POST' && entry.resource === 'endpoints' && inApi() >= target)
      operators.splice(operators.indexOf(operator), 1)
    }
    const created = inApi()
    assert.ok(created > 0 && created < 200, `the kills did not land during the sync: ${created} API endpoints`)
    operators.push(await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace, logLevel: 'info'}))
    await eventually(allSynced(namespace, 200), 300_000, '200 Endpoint CRs synced after the restarts')
    await assertNoDuplicatesNoLoss(namespace, hosts)
  })
})
