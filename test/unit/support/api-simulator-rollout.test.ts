/** The operator-rollout gating rule (pure, table-driven) and the simulator's /api/v1/operator-rollout/ endpoints. */
import assert from 'node:assert/strict'
import {rolloutCluster, rolloutDashboard} from '../../../src/api/rollout-types.js'
import {ApiSimulator} from '../../support/api-simulator/index.js'
import {
  batchQuota,
  computeRollout,
  parsePercentage,
  type RolloutClusterFacts,
} from '../../support/api-simulator/rollout.js'
import {compareVersions} from '../../../src/api/versions.js'

interface Spec {
  version?: string | null
  noApp?: boolean
  noAgent?: boolean
  critical?: boolean
  maintenance?: boolean
  paused?: boolean
  forced?: boolean
}

/** A cluster named `name` (its id is the name too), on operator `version` (default "0.35.0"). */
function facts(name: string, spec: Spec = {}): RolloutClusterFacts {
  return {
    id: name,
    name,
    workspace: {id: `ws-${name}`, name: `ws-${name}`},
    organization: {id: 'org', name: 'Org'},
    operatorApp: spec.noApp ? null : {installedVersion: spec.version === undefined ? '0.35.0' : spec.version},
    agent: spec.noAgent ? null : {id: `agent-${name}`, state: spec.critical ? 'CRITICAL' : 'OK', lastSeen: '2026-01-01T00:00:00.000Z'},
    inMaintenance: spec.maintenance ?? false,
    paused: spec.paused ?? false,
    forced: spec.forced ?? false,
  }
}

const names = (count: number, spec: Spec = {}) =>
  Array.from({length: count}, (_, index) => facts(`c${String(index).padStart(2, '0')}`, spec))

describe('operator rollout gating (pure)', () => {
  const cases: Array<{title: string; desired?: string | null; percentage: unknown; clusters: RolloutClusterFacts[]; batch: string[]}> = [
    {title: '25 % of 10 diverging rounds up to 3', percentage: 25, clusters: names(10), batch: ['c00', 'c01', 'c02']},
    {title: '30 % of 10 is exactly 3 (integer arithmetic)', percentage: 30, clusters: names(10), batch: ['c00', 'c01', 'c02']},
    {title: '1 % of 10 is at least one', percentage: 1, clusters: names(10), batch: ['c00']},
    {title: '0 % still updates one cluster', percentage: 0, clusters: names(3), batch: ['c00']},
    {title: '100 % takes every diverging cluster', percentage: 100, clusters: names(4), batch: ['c00', 'c01', 'c02', 'c03']},
    {title: 'a percentage string is read as a number', percentage: '50', clusters: names(4), batch: ['c00', 'c01']},
    {title: 'a missing percentage counts as 100', percentage: undefined, clusters: names(2), batch: ['c00', 'c01']},
    {
      title: 'only diverging clusters count and are picked',
      percentage: 50,
      clusters: [facts('a', {version: '0.36.0'}), facts('b'), facts('c', {version: '0.36.0'}), facts('d'), facts('e'), facts('f')],
      batch: ['b', 'd'],
    },
    {
      title: 'clusters in an active maintenance go first, by name',
      percentage: 50,
      clusters: [facts('a'), facts('b'), facts('c'), facts('z', {maintenance: true}), facts('y', {maintenance: true}), facts('x')],
      batch: ['y', 'z', 'a'],
    },
    {
      title: 'CRITICAL clusters are deferred (but count toward the batch size)',
      percentage: 50,
      clusters: [facts('a', {critical: true}), facts('b', {critical: true}), facts('c'), facts('d')],
      batch: ['c', 'd'],
    },
    {
      title: 'a CRITICAL cluster in maintenance is still deferred',
      percentage: 25,
      clusters: [facts('a'), facts('b', {critical: true, maintenance: true}), facts('c'), facts('d')],
      batch: ['a'],
    },
    {
      title: 'forced clusters come first and may exceed the quota',
      percentage: 10,
      clusters: [...names(8), facts('x', {forced: true}), facts('w', {forced: true})],
      batch: ['w', 'x'],
    },
    {
      title: 'forced clusters take slots before maintenance ones',
      percentage: 50,
      clusters: [facts('a', {maintenance: true}), facts('b'), facts('c', {forced: true}), facts('d', {maintenance: true})],
      batch: ['c', 'a'],
    },
    {title: 'force wins over CRITICAL', percentage: 10, clusters: [facts('a'), facts('b', {critical: true, forced: true})], batch: ['b']},
    {
      title: 'paused clusters are never in the batch, even first in line',
      percentage: 50,
      clusters: [facts('a', {paused: true, maintenance: true}), facts('b', {paused: true}), facts('c'), facts('d')],
      batch: ['c', 'd'],
    },
    {title: 'pause wins over force', percentage: 100, clusters: [facts('a', {paused: true, forced: true}), facts('b')], batch: ['b']},
    {title: 'all up to date → empty batch', percentage: 100, clusters: names(5, {version: '0.36.0'}), batch: []},
    {title: 'a leading "v" does not make a difference', percentage: 100, clusters: names(2, {version: 'v0.36.0'}), batch: []},
    {title: 'forcing an up-to-date cluster does nothing', percentage: 100, clusters: [facts('a', {version: '0.36.0', forced: true})], batch: []},
    {title: 'clusters without the operator app are not rolled out', percentage: 100, clusters: [facts('a', {noApp: true}), facts('b')], batch: ['b']},
    {title: 'an operator app without a version diverges', percentage: 100, clusters: [facts('a', {version: null})], batch: ['a']},
    {title: 'no desired version → nothing to roll out', desired: null, percentage: 100, clusters: names(3), batch: []},
    {title: 'only deferred clusters → empty batch', percentage: 100, clusters: names(3, {critical: true}), batch: []},
  ]
  for (const testCase of cases) {
    it(testCase.title, () => {
      const dashboard = computeRollout({
        desiredVersion: testCase.desired === undefined ? '0.36.0' : testCase.desired,
        rolloutPercentage: testCase.percentage,
        clusters: testCase.clusters,
      })
      rolloutDashboard.parse(dashboard)
      assert.deepEqual(dashboard.batch.cluster_ids, testCase.batch)
      assert.equal(dashboard.batch.size, testCase.batch.length)
      for (const row of dashboard.clusters) assert.equal(row.in_current_batch, testCase.batch.includes(row.id), row.id)
    })
  }

  it('computes the quota, the percentage and the version order', () => {
    assert.deepEqual(
      [[0, 50], [1, 1], [3, 34], [3, 33], [20, 10], [20, 12.5], [7, 100]].map(([count = 0, percentage = 0]) => batchQuota(count, percentage)),
      [0, 1, 2, 1, 2, 3, 7],
    )
    assert.deepEqual([25, '25', ' 40 ', 'abc', null, 150, -5].map(parsePercentage), [25, 25, 40, 100, 100, 100, 0])
    const sorted = ['0.10.0', null, '0.9.1', 'v0.36.0', '0.36.0-rc.2', '0.36.0-rc.10', 'main', '1.0.0', '0.36.0-beta'].sort(compareVersions)
    assert.deepEqual(sorted, ['0.9.1', '0.10.0', '0.36.0-beta', '0.36.0-rc.2', '0.36.0-rc.10', 'v0.36.0', '1.0.0', 'main', null])
  })

  it('builds rows: versions, flags, agent, blockers, fleet', () => {
    const dashboard = computeRollout({
      desiredVersion: '0.36.0',
      rolloutPercentage: 25,
      clusters: [
        facts('b-current', {version: '0.36.0'}),
        facts('a-old', {version: '0.34.0', maintenance: true}),
        facts('c-waiting', {version: '0.35.0'}),
        facts('d-bare', {noApp: true, noAgent: true}),
        facts('e-paused', {version: '0.35.0', paused: true, critical: true}),
      ],
    })
    rolloutDashboard.parse(dashboard)
    assert.equal(dashboard.desired_version, '0.36.0')
    assert.equal(dashboard.rollout_percentage, 25)
    assert.deepEqual(dashboard.fleet, [
      {version: '0.34.0', count: 1},
      {version: '0.35.0', count: 2},
      {version: '0.36.0', count: 1},
      {version: null, count: 1},
    ])
    assert.deepEqual(dashboard.batch, {size: 1, cluster_ids: ['a-old']})
    assert.deepEqual(
      dashboard.clusters.map((row) => [row.name, row.up_to_date, row.in_current_batch, row.blockers]),
      [
        ['a-old', false, true, []],
        ['b-current', true, false, []],
        ['c-waiting', false, false, ['canary_gate']],
        ['d-bare', false, false, ['no_agent_token', 'operator_config_missing']],
        ['e-paused', false, false, ['canary_gate']],
      ],
    )
    const paused = dashboard.clusters.find((row) => row.name === 'e-paused')
    assert.deepEqual(paused && {critical: paused.critical, paused: paused.paused, agent: paused.agent}, {
      critical: true,
      paused: true,
      agent: {id: 'agent-e-paused', state: 'CRITICAL', last_seen: '2026-01-01T00:00:00.000Z'},
    })
    const bare = dashboard.clusters.find((row) => row.name === 'd-bare')
    assert.deepEqual(bare?.agent, {id: null, state: null, last_seen: null})
    assert.equal(bare?.installed_version, null)
  })
})

describe('operator rollout over HTTP', () => {
  let sim: ApiSimulator
  let admin: string
  const clusterIds = new Map<string, string>()
  const call = async (method: string, path: string, token = admin) => {
    const response = await fetch(`${sim.url}${path}`, {method, headers: {authorization: `Bearer ${token}`}})
    return {status: response.status, body: (await response.json()) as unknown}
  }

  /**
   * 24 clusters: 8 on 0.34.0, 8 on 0.35.0, 6 on 0.36.0 (desired), 2 without the operator. Every cluster with the
   * operator has a reporting operator agent; cluster-05 is in a maintenance; cluster-01's agent goes silent.
   */
  beforeEach(async () => {
    let clock = Date.parse('2026-05-04T10:00:00Z')
    sim = await ApiSimulator.start({now: () => clock})
    admin = sim.issueToken({kind: 'platform-admin'})
    const org = sim.createOrganization('Fleet')
    const versions = [...Array<string>(8).fill('0.34.0'), ...Array<string>(8).fill('0.35.0'), ...Array<string>(6).fill('0.36.0'), null, null]
    for (const [index, version] of versions.entries()) {
      const name = `cluster-${String(index).padStart(2, '0')}`
      const ws = sim.createWorkspace({name: `ws-${name}`, organizationId: org.id})
      const cluster = sim.insert('kubernetes/clusters', {name, kind: 'generic', workspace: ws.id})
      clusterIds.set(name, String(cluster.id))
      if (version === null) continue
      const agentToken = sim.issueToken({kind: 'agent', workspaceId: ws.id})
      const app = await fetch(`${sim.url}/api/v1/kubernetes/apps/`, {
        method: 'POST',
        headers: {authorization: `Bearer ${agentToken}`, 'content-type': 'application/json'},
        body: JSON.stringify({name: 'polycrate-operator', k8s_cluster: cluster.id, installed_version: version, kind: 'polycrate'}),
      })
      assert.equal(app.status, 201)
      if (name === 'cluster-01') clock -= 20 * 60_000 // its last heartbeat is 20 minutes old
      const health = await fetch(`${sim.url}/api/v1/agent/health/`, {
        method: 'POST',
        headers: {authorization: `Bearer ${agentToken}`, 'content-type': 'application/json'},
        body: JSON.stringify({reported_agent_id: `operator-${name}`, kind: 'operator', version}),
      })
      assert.equal(health.status, 201)
      if (name === 'cluster-01') clock += 20 * 60_000
      if (name === 'cluster-05') sim.insert('maintenances', {name: 'patch-day', affected_workspace: ws.id, start: '2026-05-04T09:00:00Z', end: '2026-05-04T12:00:00Z'})
    }
    // A finished maintenance changes nothing.
    sim.insert('maintenances', {name: 'last-week', affected_workspace: sim.get('kubernetes/clusters', clusterIds.get('cluster-07') ?? '')?.workspace, start: '2026-04-27T09:00:00Z', end: '2026-04-27T12:00:00Z'})
    sim.systemConfig.OPERATOR_BLOCK_VERSION = '0.36.0'
    sim.systemConfig.OPERATOR_ROLLOUT_PERCENTAGE = 25
  })
  afterEach(async () => {
    await sim.close()
    clusterIds.clear()
  })

  it('serves a dashboard that validates against rolloutDashboard', async () => {
    const answer = await call('GET', '/api/v1/operator-rollout/')
    assert.equal(answer.status, 200)
    const dashboard = rolloutDashboard.parse(answer.body)
    assert.equal(dashboard.clusters.length, 24)
    assert.equal(dashboard.desired_version, '0.36.0')
    assert.equal(dashboard.rollout_percentage, 25)
    assert.deepEqual(dashboard.fleet, [
      {version: '0.34.0', count: 8},
      {version: '0.35.0', count: 8},
      {version: '0.36.0', count: 6},
      {version: null, count: 2},
    ])
    // 16 diverging → ceil(4) = 4: cluster-05 (maintenance) first, cluster-01 (CRITICAL) deferred.
    const idOf = (name: string) => clusterIds.get(name) ?? name
    assert.deepEqual(dashboard.batch, {size: 4, cluster_ids: ['cluster-05', 'cluster-00', 'cluster-02', 'cluster-03'].map(idOf)})
    const row = (name: string) => dashboard.clusters.find((candidate) => candidate.name === name)
    assert.equal(row('cluster-01')?.critical, true)
    assert.equal(row('cluster-01')?.agent.state, 'CRITICAL')
    assert.deepEqual(row('cluster-01')?.blockers, ['canary_gate'])
    assert.equal(row('cluster-05')?.in_maintenance, true)
    assert.equal(row('cluster-07')?.in_maintenance, false)
    assert.equal(row('cluster-16')?.up_to_date, true)
    assert.equal(row('cluster-16')?.organization?.name, 'Fleet')
    assert.equal(row('cluster-16')?.workspace.name, 'ws-cluster-16')
    assert.equal(row('cluster-00')?.agent.last_seen, '2026-05-04T10:00:00.000Z')
    assert.deepEqual(row('cluster-22')?.blockers, ['no_agent_token', 'operator_config_missing'])
    assert.equal(sim.list('downtimes').length, 1, 'the silent operator opened a downtime')
  })

  it('forces, pauses and resumes a cluster; each action answers the row', async () => {
    const id = clusterIds.get('cluster-15') ?? ''
    const forced = await call('POST', `/api/v1/operator-rollout/${id}/force-update/`)
    assert.equal(forced.status, 200)
    const forcedRow = rolloutCluster.parse(forced.body)
    assert.deepEqual([forcedRow.forced, forcedRow.paused, forcedRow.in_current_batch], [true, false, true])
    const afterForce = rolloutDashboard.parse((await call('GET', '/api/v1/operator-rollout/')).body)
    assert.equal(afterForce.batch.cluster_ids[0], id)
    assert.equal(afterForce.batch.size, 4)

    const paused = rolloutCluster.parse((await call('POST', `/api/v1/operator-rollout/${id}/pause/`)).body)
    assert.deepEqual([paused.forced, paused.paused, paused.in_current_batch, paused.blockers], [false, true, false, ['canary_gate']])
    const resumed = rolloutCluster.parse((await call('POST', `/api/v1/operator-rollout/${id}/resume/`)).body)
    assert.deepEqual([resumed.forced, resumed.paused], [false, false])

    const unknown = await call('POST', `/api/v1/operator-rollout/${crypto.randomUUID()}/pause/`)
    assert.equal(unknown.status, 404)
    assert.equal(((unknown.body as {errors: Array<{code: string}>}).errors[0])?.code, 'not_found')
    const user = sim.issueToken({kind: 'user'})
    assert.equal((await call('POST', `/api/v1/operator-rollout/${id}/pause/`, user)).status, 403)
    assert.equal((await call('GET', `/api/v1/operator-rollout/${id}/pause/`)).status, 405)
  })

  it('follows the fleet as operators report new versions', async () => {
    const apps = sim.list('kubernetes/apps')
    for (const app of apps) sim.update('kubernetes/apps', String(app.id), {installed_version: '0.36.0'})
    const dashboard = rolloutDashboard.parse((await call('GET', '/api/v1/operator-rollout/')).body)
    assert.deepEqual(dashboard.batch, {size: 0, cluster_ids: []})
    assert.deepEqual(dashboard.fleet, [
      {version: '0.36.0', count: 22},
      {version: null, count: 2},
    ])
    assert.equal(dashboard.clusters.filter((row) => row.blockers.includes('canary_gate')).length, 0)
  })
})
