import assert from 'node:assert/strict'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {operatorVersion} from '../../src/version.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'
import {configRef, eventually} from '../support/helpers.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}
const secretRef = (namespace: string, name?: string) => ({group: '', version: 'v1', plural: 'secrets', namespace, name})
const apiConnected = (object: OperatorConfigObject) => object.status?.conditions?.find((c) => c.type === 'APIConnected')

describe('API sync identity: token Secret, heartbeat, workspace resolution, local cluster (run + simulator)', function () {
  this.timeout(180_000)
  let client: KubeClient
  let sim: ApiSimulator
  let token: string
  let workspace: {id: string; name: string}
  const operators: OperatorProcess[] = []

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
    const organization = sim.createOrganization('acme-corp')
    workspace = sim.createWorkspace({name: 'production', organizationId: organization.id})
    token = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
  })
  afterEach(async () => {
    await Promise.all(operators.splice(0).map((o) => o.stop('SIGKILL')))
  })
  after(async () => {
    client.close()
    await sim.close()
  })

  const run = async (namespace: string) => {
    const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace})
    operators.push(operator)
    return operator
  }
  const status = async (namespace: string) => client.get<OperatorConfigObject>(configRef(namespace))

  it('resolves the workspace, registers the cluster and its own K8sApp once; survives a lost token and a restart', async () => {
    const namespace = await freshNamespace(client, 'apisync')
    await client.create(secretRef(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-creds', namespace}, stringData: {token}})
    await client.create(configRef(namespace), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
      spec: {
        api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 2, credentials_ref: {secret_name: 'polycrate-api-creds', token_key: 'token'}},
        local_cluster: {enabled: true, cluster_name: 'Production Cluster'},
        endpoint_discovery: {enabled: false},
      },
    })
    let operator = await run(namespace)
    const connected = await eventually(async () => {
      const object = await status(namespace)
      return apiConnected(object)?.status === 'True' && object.status?.local_cluster?.cluster_id ? object : undefined
    }, 30_000, 'APIConnected')
    assert.equal(connected.status?.api_sync?.workspace_id, workspace.id)
    assert.equal(connected.status?.api_sync?.workspace_name, 'production')
    assert.equal(connected.status?.api_sync?.organization_name, 'acme-corp')
    assert.ok(connected.status?.api_sync?.resolved_at)
    assert.equal(connected.status?.local_cluster?.registered, true)
    assert.equal(apiConnected(connected)?.reason, 'Connected')
    assert.equal(connected.status?.conditions?.find((c) => c.type === 'Valid')?.status, 'True', 'the config controller keeps its own conditions')

    const clusters = sim.list('kubernetes/clusters')
    assert.equal(clusters.length, 1)
    assert.equal(clusters[0]!.display_name, 'Production Cluster')
    const apps = sim.list('kubernetes/apps').filter((a) => a.name === 'polycrate-operator')
    assert.equal(apps.length, 1)
    assert.equal(apps[0]!.installed_version, operatorVersion())
    assert.equal(apps[0]!.k8s_cluster, clusters[0]!.id)
    const agents = sim.list('agents').filter((a) => a.kind === 'operator')
    assert.equal(agents.length, 1)
    assert.equal(agents[0]!.version, operatorVersion())

    // Heartbeat: health reports keep coming; idle heartbeats write nothing to the OperatorConfig.
    const reports = () => sim.requests.filter((r) => r.resource === 'agent/health').length
    const before = reports()
    const resourceVersion = (await status(namespace)).metadata?.resourceVersion
    // The positive signal: two more heartbeats went out; only then is the OperatorConfig checked for writes.
    await eventually(async () => reports() >= before + 2, 30_000, 'two more heartbeats')
    assert.equal((await status(namespace)).metadata?.resourceVersion, resourceVersion, 'a heartbeat changed the OperatorConfig')

    // The token Secret goes away → "No agent token", naming it; back → connected again.
    await client.delete(secretRef(namespace, 'polycrate-api-creds'))
    const lost = await eventually(async () => {
      const object = await status(namespace)
      return apiConnected(object)?.reason === 'NoAgentToken' ? object : undefined
    }, 20_000, 'NoAgentToken')
    assert.match(apiConnected(lost)!.message!, new RegExp(`No agent token: Secret ${namespace}/polycrate-api-creds does not exist`))
    await client.create(secretRef(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-creds', namespace}, stringData: {token}})
    await eventually(async () => apiConnected(await status(namespace))?.status === 'True', 20_000, 'connected again')

    // A restart registers no second cluster, agent or app.
    assert.equal(await operator.stop('SIGTERM'), 0)
    operator = await run(namespace)
    await operator.waitForLog((l) => l.msg === 'controller started' && l.controller === 'api-sync')
    const after = reports()
    await eventually(async () => reports() > after, 20_000, 'heartbeat after restart')
    assert.equal(sim.list('kubernetes/clusters').length, 1)
    assert.equal(sim.list('agents').filter((a) => a.kind === 'operator').length, 1)
    assert.equal(sim.list('kubernetes/apps').filter((a) => a.name === 'polycrate-operator').length, 1)

    for (const output of operators.map((o) => o.rawOutput())) assert.equal(output.includes(token), false, 'the token was logged')
  })

  it('a rejected token and an unreachable API each get a condition that says what to do; the operator keeps running', async () => {
    const namespace = await freshNamespace(client, 'apibad')
    await client.create(secretRef(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace}, stringData: {token: 'not-a-valid-token'}})
    await client.create(configRef(namespace), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
      spec: {api_sync: {enabled: true, api_url: sim.url}, endpoint_discovery: {enabled: false}},
    })
    const operator = await run(namespace)
    const rejected = await eventually(async () => {
      const object = await status(namespace)
      return apiConnected(object)?.reason === 'TokenRejected' ? object : undefined
    }, 30_000, 'TokenRejected')
    assert.match(apiConnected(rejected)!.message!, /rejected the agent token from Secret .*\/polycrate-api-token \(401 Unauthorized\): create a new API token/)

    const closed = await freePort()
    await client.mergePatch(configRef(namespace), {spec: {api_sync: {api_url: `http://127.0.0.1:${closed}`}}})
    const unreachable = await eventually(async () => {
      const object = await status(namespace)
      return apiConnected(object)?.reason === 'APIUnreachable' ? object : undefined
    }, 60_000, 'APIUnreachable')
    assert.match(apiConnected(unreachable)!.message!, new RegExp(`Cannot reach the Polycrate API at http://127\\.0\\.0\\.1:${closed}`))
    assert.equal(operator.child.exitCode, null)
    assert.equal(operator.rawOutput().includes('not-a-valid-token'), false)
  })

  it('with 50 % of API requests failing (5xx, 429), workspace resolution and cluster registration complete exactly once', async () => {
    const organization = sim.createOrganization('flaky-org')
    const flaky = sim.createWorkspace({name: 'flaky', organizationId: organization.id})
    const flakyToken = sim.issueToken({kind: 'agent', workspaceId: flaky.id})
    const namespace = await freshNamespace(client, 'apiflaky')
    await client.create(secretRef(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace}, stringData: {token: flakyToken}})
    sim.faults.set({errorRate: 0.3, rateLimitRate: 0.2, retryAfterSeconds: 0})
    try {
      await client.create(configRef(namespace), {
        apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
        spec: {api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 2}, local_cluster: {enabled: true, cluster_name: 'flaky-cluster'}, endpoint_discovery: {enabled: false}},
      })
      await run(namespace)
      const resolved = await eventually(async () => {
        const object = await status(namespace)
        return apiConnected(object)?.status === 'True' && object.status?.local_cluster?.cluster_id ? object : undefined
      }, 90_000, 'resolved under faults')
      assert.equal(resolved.status?.api_sync?.workspace_id, flaky.id)
      // More heartbeats, still failing half the time.
      await eventually(async () => sim.requests.filter((r) => r.status >= 500 || r.status === 429).length > 3, 30_000, 'the faults bit more than 3 times')
    } finally {
      sim.faults.clear()
    }
    const clusters = sim.list('kubernetes/clusters').filter((c) => c.workspace === flaky.id)
    assert.equal(clusters.length, 1, 'duplicate clusters')
    assert.equal(sim.list('agents').filter((a) => a.workspace === flaky.id).length, 1, 'duplicate agents')
    assert.equal(sim.list('kubernetes/apps').filter((a) => a.name === 'polycrate-operator' && a.k8s_cluster === clusters[0]!.id).length, 1)
  })
})
