/**
 * `polycrate operator rollout status | force | pause | resume` against the Polycrate API simulator: a fleet of 24
 * clusters on three operator versions (plus one without an operator), some in an active maintenance, some with a
 * silent (CRITICAL) operator agent, two with the same name.
 */
import assert from 'node:assert/strict'
import {randomBytes, randomUUID} from 'node:crypto'
import {createServer} from 'node:http'
import {runCommand} from '@oclif/test'
import {rolloutCluster, rolloutDashboard, type RolloutDashboard} from '../../src/api/index.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {freePort} from '../support/control-plane.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE

interface ClusterSpec {
  name: string
  /** The installed operator version; null = no operator app and no agent at all. */
  version: string | null
  /** The operator agent has been silent for two hours (→ CRITICAL). */
  critical?: boolean
  maintenance?: boolean
  /** Report through POST /agent/health/ (last seen "just now") instead of an agent seen three minutes ago. */
  heartbeat?: boolean
  workspace?: string
}

const DESIRED = '0.36.0'
const PERCENTAGE = 25
const FLEET: ClusterSpec[] = [
  {name: 'alpha-01', version: '0.34.0', critical: true},
  {name: 'alpha-02', version: '0.34.0', critical: true, maintenance: true},
  {name: 'alpha-03', version: '0.34.0'},
  {name: 'alpha-04', version: '0.34.0'},
  {name: 'alpha-05', version: '0.34.0'},
  {name: 'bravo-01', version: '0.34.0'},
  {name: 'bravo-02', version: '0.34.0'},
  {name: 'bravo-03', version: '0.34.0'},
  {name: 'bravo-04', version: '0.34.0'},
  {name: 'bravo-05', version: '0.34.0'},
  {name: 'charlie-01', version: '0.35.0'},
  {name: 'charlie-02', version: '0.35.0'},
  {name: 'charlie-03', version: '0.35.0'},
  {name: 'charlie-04', version: '0.35.0'},
  {name: 'prod-eu', version: '0.35.0'},
  {name: 'prod-us', version: '0.35.0'},
  {name: 'xray-01', version: '0.35.0', maintenance: true},
  {name: 'yankee-01', version: '0.35.0', maintenance: true},
  {name: 'staging', version: '0.36.0', workspace: 'team-a', heartbeat: true},
  {name: 'staging', version: '0.36.0', workspace: 'team-b', heartbeat: true},
  {name: 'zulu-01', version: '0.36.0', heartbeat: true},
  {name: 'zulu-02', version: '0.36.0'},
  {name: 'zulu-03', version: '0.36.0'},
  {name: 'legacy-01', version: null},
]

/**
 * The gating rule of seed 000, written out here on its own: of the clusters whose operator is behind, one batch
 * of ceil(percentage %) (at least one); forced first, then clusters in an active maintenance, then the rest by
 * name; paused and CRITICAL clusters are left out.
 */
function expectedBatch(specs: readonly ClusterSpec[], flags: {forced?: string[]; paused?: string[]} = {}): string[] {
  const behind = specs.filter((spec) => spec.version !== null && spec.version !== DESIRED).sort((a, b) => a.name.localeCompare(b.name))
  const quota = Math.max(1, Math.ceil((PERCENTAGE * behind.length) / 100))
  const paused = (spec: ClusterSpec) => flags.paused?.includes(spec.name) ?? false
  const forced = behind.filter((spec) => flags.forced?.includes(spec.name) && !paused(spec))
  const eligible = behind.filter((spec) => !forced.includes(spec) && !paused(spec) && !spec.critical)
  const ordered = [...eligible.filter((spec) => spec.maintenance), ...eligible.filter((spec) => !spec.maintenance)]
  return [...forced, ...ordered.slice(0, Math.max(0, quota - forced.length))].map((spec) => spec.name)
}

type Column = 'CLUSTER' | 'WORKSPACE' | 'INSTALLED' | 'DESIRED' | 'AGENT' | 'MAINTENANCE' | 'FLAGS' | 'BATCH' | 'BLOCKERS'
type TableRow = Record<Column, string>

/** The table of `rollout status` as one record per row, cut at the header's column positions. */
function tableOf(stdout: string): TableRow[] {
  const lines = stdout.split('\n')
  const headerAt = lines.findIndex((line) => line.startsWith('CLUSTER'))
  assert.ok(headerAt >= 0, `no table in:\n${stdout}`)
  const header = lines[headerAt] ?? ''
  const columns = [...header.matchAll(/\S+/g)].map((match) => ({name: match[0], start: match.index}))
  assert.deepEqual(columns.map((column) => column.name), ['CLUSTER', 'WORKSPACE', 'INSTALLED', 'DESIRED', 'AGENT', 'MAINTENANCE', 'FLAGS', 'BATCH', 'BLOCKERS'])
  return lines
    .slice(headerAt + 1)
    .filter((line) => line.trim() !== '')
    .map((line) =>
      Object.fromEntries(columns.map((column, index) => [column.name, line.slice(column.start, columns[index + 1]?.start ?? line.length).trim()])) as TableRow,
    )
}

const sorted = (values: Iterable<string>) => [...values].sort()

describe('polycrate operator rollout', function () {
  this.timeout(30_000)

  let sim: ApiSimulator
  let admin: string
  let agentToken: string
  /** Every token of this run, the wrong ones included: none may ever show up in any output. */
  const tokens: string[] = []
  const outputs: string[] = []
  const ids = new Map<string, string>()
  const stagingIds: string[] = []
  const savedEnv = {url: process.env.POLYCRATE_API_URL, token: process.env.POLYCRATE_API_TOKEN}

  /** runCommand, recording everything it printed (and the error) for the token check. */
  async function run(args: string[]) {
    const result = await runCommand(args)
    outputs.push(result.stdout, result.stderr, result.error?.message ?? '')
    return result
  }

  const withApi = (...args: string[]) => [...args, '--api-url', sim.url, '--token', admin]
  const idOf = (name: string) => ids.get(name) ?? assert.fail(`no cluster ${name}`)

  async function dashboard(): Promise<RolloutDashboard> {
    const response = await fetch(`${sim.url}/api/v1/operator-rollout/`, {headers: {authorization: `Bearer ${admin}`}})
    assert.equal(response.status, 200)
    return rolloutDashboard.parse(await response.json())
  }

  async function status() {
    const {stdout, error} = await run(withApi('operator', 'rollout', 'status'))
    assert.equal(error, undefined, error?.message)
    const table = tableOf(stdout)
    return {stdout, table, row: (name: string) => table.find((row) => row.CLUSTER === name) ?? assert.fail(`no row ${name}`)}
  }

  before(async () => {
    delete process.env.POLYCRATE_API_URL
    delete process.env.POLYCRATE_API_TOKEN
    sim = await ApiSimulator.start()
    admin = sim.issueToken({kind: 'platform-admin'})
    tokens.push(admin)
    const organization = sim.createOrganization('Fleet')
    const now = Date.now()
    for (const spec of FLEET) {
      const workspace = sim.createWorkspace({name: spec.workspace ?? `ws-${spec.name}`, organizationId: organization.id})
      const cluster = sim.insert('kubernetes/clusters', {name: spec.name, kind: 'generic', workspace: workspace.id})
      if (spec.name === 'staging') stagingIds.push(String(cluster.id))
      else ids.set(spec.name, String(cluster.id))
      if (spec.maintenance) {
        sim.insert('maintenances', {
          name: `patch-day-${spec.name}`,
          affected_workspace: workspace.id,
          start: new Date(now - HOUR).toISOString(),
          end: new Date(now + HOUR).toISOString(),
        })
      }
      if (spec.version === null) continue
      sim.insert('kubernetes/apps', {name: 'polycrate-operator', k8s_cluster: cluster.id, installed_version: spec.version, kind: 'polycrate'})
      if (spec.heartbeat) {
        const token = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
        tokens.push(token)
        agentToken = token
        const health = await fetch(`${sim.url}/api/v1/agent/health/`, {
          method: 'POST',
          headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'},
          body: JSON.stringify({reported_agent_id: `operator-${spec.name}-${workspace.name}`, kind: 'operator', version: spec.version, status: 'healthy'}),
        })
        assert.equal(health.status, 201)
      } else {
        sim.insert('agents', {
          kind: 'operator',
          name: `operator-${spec.name}`,
          reported_agent_id: `operator-${spec.name}`,
          version: spec.version,
          workspace: workspace.id,
          state: 'OK',
          last_seen: new Date(now - (spec.critical ? 2 * HOUR : 3 * MINUTE)).toISOString(),
        })
      }
    }
    // A maintenance that ended last week changes nothing.
    sim.insert('maintenances', {name: 'last-week', affected_workspace: sim.get('kubernetes/clusters', idOf('bravo-01'))?.workspace, start: new Date(now - 7 * 24 * HOUR).toISOString(), end: new Date(now - 7 * 24 * HOUR + HOUR).toISOString()})
    sim.systemConfig.OPERATOR_BLOCK_VERSION = DESIRED
    sim.systemConfig.OPERATOR_ROLLOUT_PERCENTAGE = PERCENTAGE
  })

  afterEach(async () => {
    // Undo whatever a test forced or paused.
    for (const row of (await dashboard()).clusters) {
      if (!row.paused && !row.forced) continue
      const response = await fetch(`${sim.url}/api/v1/operator-rollout/${row.id}/resume/`, {method: 'POST', headers: {authorization: `Bearer ${admin}`}})
      assert.equal(response.status, 200)
    }
  })

  after(async () => {
    await sim?.close()
    if (savedEnv.url === undefined) delete process.env.POLYCRATE_API_URL
    else process.env.POLYCRATE_API_URL = savedEnv.url
    if (savedEnv.token === undefined) delete process.env.POLYCRATE_API_TOKEN
    else process.env.POLYCRATE_API_TOKEN = savedEnv.token
  })

  describe('status', () => {
    it('shows desired version, percentage, the fleet histogram and the batch size', async () => {
      const {stdout} = await status()
      assert.equal(stdout.split('\n').slice(0, 5).join('\n'), [
        'Desired version:  0.36.0',
        'Rollout:          25 % of the clusters behind per batch (OPERATOR_ROLLOUT_PERCENTAGE)',
        'Fleet:            10 × 0.34.0, 8 × 0.35.0, 5 × 0.36.0, 1 × none',
        'Current batch:    5 of 18 clusters behind 0.36.0',
        '',
      ].join('\n'))
      assert.equal(stdout.split('\n')[5], stdout.split('\n')[5]?.trimEnd())
      assert.match(stdout.split('\n')[5] ?? '', /^CLUSTER +WORKSPACE +INSTALLED +DESIRED +AGENT +MAINTENANCE +FLAGS +BATCH +BLOCKERS$/)
    })

    it('BATCH marks exactly the clusters the gating rule picks: maintenance first, CRITICAL deferred', async () => {
      const {table} = await status()
      const api = await dashboard()
      const marked = table.filter((row) => row.BATCH === 'yes').map((row) => row.CLUSTER)
      const fromApi = api.batch.cluster_ids.map((id) => api.clusters.find((row) => row.id === id)?.name ?? id)
      assert.deepEqual(sorted(marked), sorted(fromApi), 'the BATCH column is the dashboard\'s batch')
      // 18 clusters behind 0.36.0, 25 % → 5. xray-01 and yankee-01 are in a maintenance: first. alpha-02 is in a
      // maintenance too but CRITICAL, and alpha-01 is CRITICAL: both deferred. Then by name: alpha-03, -04, -05.
      assert.deepEqual(expectedBatch(FLEET), ['xray-01', 'yankee-01', 'alpha-03', 'alpha-04', 'alpha-05'])
      assert.deepEqual(fromApi, expectedBatch(FLEET))
      assert.equal(api.batch.size, 5)
      assert.equal(table.length, FLEET.length)
      for (const row of table) assert.equal(row.BATCH === 'yes' || row.BATCH === '-', true, row.CLUSTER)
    })

    it('one row per cluster: versions, agent, maintenance, flags, blockers in words', async () => {
      const {row} = await status()
      assert.deepEqual(row('alpha-03'), {
        CLUSTER: 'alpha-03', WORKSPACE: 'ws-alpha-03', INSTALLED: '0.34.0', DESIRED: '0.36.0', AGENT: 'OK, last seen 3m ago',
        MAINTENANCE: '-', FLAGS: '-', BATCH: 'yes', BLOCKERS: '-',
      })
      assert.deepEqual(row('alpha-02'), {
        CLUSTER: 'alpha-02', WORKSPACE: 'ws-alpha-02', INSTALLED: '0.34.0', DESIRED: '0.36.0', AGENT: 'CRITICAL, last seen 2h ago',
        MAINTENANCE: 'yes', FLAGS: '-', BATCH: '-', BLOCKERS: 'canary gate',
      })
      assert.equal(row('alpha-01').AGENT, 'CRITICAL, last seen 2h ago')
      assert.equal(row('xray-01').MAINTENANCE, 'yes')
      assert.equal(row('bravo-01').MAINTENANCE, '-', 'a maintenance that ended is not active')
      assert.equal(row('bravo-01').BLOCKERS, 'canary gate')
      assert.deepEqual(row('zulu-01'), {
        CLUSTER: 'zulu-01', WORKSPACE: 'ws-zulu-01', INSTALLED: '0.36.0', DESIRED: '0.36.0', AGENT: 'OK, last seen just now',
        MAINTENANCE: '-', FLAGS: '-', BATCH: '-', BLOCKERS: '-',
      })
      assert.deepEqual(row('legacy-01'), {
        CLUSTER: 'legacy-01', WORKSPACE: 'ws-legacy-01', INSTALLED: 'none', DESIRED: '0.36.0', AGENT: 'never',
        MAINTENANCE: '-', FLAGS: '-', BATCH: '-', BLOCKERS: 'no agent token, OperatorConfig missing',
      })
    })

    it('--json prints the dashboard unchanged', async () => {
      const {stdout, error} = await run([...withApi('operator', 'rollout', 'status'), '--json'])
      assert.equal(error, undefined)
      const printed = JSON.parse(stdout) as unknown
      assert.deepEqual(printed, await dashboard())
      rolloutDashboard.parse(printed)
    })

    it('--cluster filters the table by name or id (any case); --json keeps only those rows', async () => {
      const {stdout, error} = await run([...withApi('operator', 'rollout', 'status'), '--cluster', 'prod-eu', '--cluster', 'LEGACY-01', '--cluster', idOf('zulu-02')])
      assert.equal(error, undefined)
      assert.deepEqual(tableOf(stdout).map((row) => row.CLUSTER), ['legacy-01', 'prod-eu', 'zulu-02'])
      assert.match(stdout, /^Fleet: +10 × 0\.34\.0, 8 × 0\.35\.0, 5 × 0\.36\.0, 1 × none$/m, 'the summary is still the whole fleet')

      const json = await run([...withApi('operator', 'rollout', 'status'), '--cluster', 'staging', '--json'])
      const filtered = rolloutDashboard.parse(JSON.parse(json.stdout))
      assert.deepEqual(sorted(filtered.clusters.map((row) => row.id)), sorted(stagingIds))
      const full = await dashboard()
      assert.deepEqual({...filtered, clusters: []}, {...full, clusters: []})
    })

    it('--cluster with a cluster that does not exist: exit 1', async () => {
      const {error, stdout} = await run([...withApi('operator', 'rollout', 'status'), '--cluster', 'ghost'])
      assert.equal(error?.oclif?.exit, 1)
      assert.equal(error?.message, 'No cluster named or with id ghost; `polycrate operator rollout status` lists them.')
      assert.equal(stdout, '')
    })

    it('--sort version: oldest operator first, clusters without one last', async () => {
      const {stdout, error} = await run([...withApi('operator', 'rollout', 'status'), '--sort', 'version'])
      assert.equal(error, undefined)
      const installed = tableOf(stdout).map((row) => row.INSTALLED)
      assert.deepEqual(installed, [...Array<string>(10).fill('0.34.0'), ...Array<string>(8).fill('0.35.0'), ...Array<string>(5).fill('0.36.0'), 'none'])
      const byName = tableOf((await status()).stdout).map((row) => row.CLUSTER)
      assert.deepEqual(byName, [...byName].sort())
    })
  })

  describe('force, pause, resume', () => {
    it('force by name puts the cluster in the batch; status shows it forced', async () => {
      const {stdout, error} = await run(withApi('operator', 'rollout', 'force', 'prod-eu'))
      assert.equal(error, undefined)
      assert.equal(stdout, `Forced cluster prod-eu (id ${idOf('prod-eu')}) into the next rollout batch.\n`)
      const {row, table} = await status()
      assert.deepEqual([row('prod-eu').FLAGS, row('prod-eu').BATCH, row('prod-eu').BLOCKERS], ['forced', 'yes', '-'])
      const expected = expectedBatch(FLEET, {forced: ['prod-eu']})
      assert.deepEqual(expected, ['prod-eu', 'xray-01', 'yankee-01', 'alpha-03', 'alpha-04'], 'the forced cluster takes a slot of the batch')
      assert.deepEqual(sorted(table.filter((r) => r.BATCH === 'yes').map((r) => r.CLUSTER)), sorted(expected))
      assert.deepEqual((await dashboard()).batch.cluster_ids, expected.map(idOf))
    })

    it('force wins over CRITICAL', async () => {
      const {stdout, error} = await run(withApi('operator', 'rollout', 'force', 'alpha-01'))
      assert.equal(error, undefined)
      assert.equal(stdout, `Forced cluster alpha-01 (id ${idOf('alpha-01')}) into the next rollout batch.\n`)
      assert.equal((await status()).row('alpha-01').BATCH, 'yes')
    })

    it('pause keeps a cluster out of the batch (the next one moves up); resume undoes it', async () => {
      const paused = await run(withApi('operator', 'rollout', 'pause', 'alpha-03'))
      assert.equal(paused.error, undefined)
      assert.equal(paused.stdout, `Paused the rollout of cluster alpha-03 (id ${idOf('alpha-03')}): it stays out of rollout batches until \`polycrate operator rollout resume\`.\n`)
      let view = await status()
      assert.deepEqual([view.row('alpha-03').FLAGS, view.row('alpha-03').BATCH, view.row('alpha-03').BLOCKERS], ['paused', '-', 'canary gate'])
      const expected = expectedBatch(FLEET, {paused: ['alpha-03']})
      assert.deepEqual(expected, ['xray-01', 'yankee-01', 'alpha-04', 'alpha-05', 'bravo-01'])
      assert.deepEqual(sorted(view.table.filter((r) => r.BATCH === 'yes').map((r) => r.CLUSTER)), sorted(expected))

      const again = await run(withApi('operator', 'rollout', 'pause', 'alpha-03'))
      assert.equal(again.stdout, `The rollout of cluster alpha-03 (id ${idOf('alpha-03')}) was already paused; nothing changed.\n`)

      const resumed = await run(withApi('operator', 'rollout', 'resume', 'alpha-03'))
      assert.equal(resumed.error, undefined)
      assert.equal(resumed.stdout, `Resumed the rollout of cluster alpha-03 (id ${idOf('alpha-03')}): it is in the next rollout batch.\n`)
      view = await status()
      assert.deepEqual([view.row('alpha-03').FLAGS, view.row('alpha-03').BATCH], ['-', 'yes'])
      assert.deepEqual((await dashboard()).batch.cluster_ids, expectedBatch(FLEET).map(idOf))
    })

    it('pause wins over a force: a forced cluster paused leaves the batch; resume puts it back behind the gate', async () => {
      await run(withApi('operator', 'rollout', 'force', 'prod-us'))
      const paused = await run(withApi('operator', 'rollout', 'pause', 'prod-us'))
      assert.equal(paused.stdout, `Paused the rollout of cluster prod-us (id ${idOf('prod-us')}) (its force-update is withdrawn): it stays out of rollout batches until \`polycrate operator rollout resume\`.\n`)
      assert.deepEqual([(await status()).row('prod-us').FLAGS, (await status()).row('prod-us').BATCH], ['paused', '-'])
      const resumed = await run(withApi('operator', 'rollout', 'resume', 'prod-us'))
      assert.equal(resumed.stdout, `Resumed the rollout of cluster prod-us (id ${idOf('prod-us')}): it waits behind the canary gate.\n`)
      const row = (await status()).row('prod-us')
      assert.deepEqual([row.FLAGS, row.BATCH, row.BLOCKERS], ['-', '-', 'canary gate'])
    })

    it('works with a cluster id too', async () => {
      const id = idOf('charlie-01')
      const {stdout, error} = await run(withApi('operator', 'rollout', 'force', id))
      assert.equal(error, undefined)
      assert.equal(stdout, `Forced cluster charlie-01 (id ${id}) into the next rollout batch.\n`)
      const paused = await run(withApi('operator', 'rollout', 'pause', id.toUpperCase()))
      assert.equal(paused.error, undefined)
      assert.equal((await status()).row('charlie-01').FLAGS, 'paused')
    })

    it('an ambiguous name: exit 1 listing the matching ids; the id then works', async () => {
      const {error, stdout} = await run(withApi('operator', 'rollout', 'force', 'staging'))
      assert.equal(error?.oclif?.exit, 1)
      assert.equal(stdout, '')
      const [first = '', second = ''] = stagingIds
      assert.match(error?.message ?? '', /^2 clusters are named staging: .*; pass the id instead\.$/)
      assert.ok(error?.message.includes(`${first} (workspace team-a)`) && error.message.includes(`${second} (workspace team-b)`), error?.message)
      const byId = await run(withApi('operator', 'rollout', 'force', second))
      assert.equal(byId.error, undefined)
      assert.equal(byId.stdout, `Forced cluster staging (id ${second}), but it already runs 0.36.0.\n`)
    })

    it('an unknown name or id: exit 1, and nothing changes', async () => {
      sim.clearRequests()
      for (const reference of ['ghost', randomUUID()]) {
        const {error, stdout} = await run(withApi('operator', 'rollout', 'pause', reference))
        assert.equal(error?.oclif?.exit, 1)
        assert.equal(error?.message, `No cluster named or with id ${reference}; \`polycrate operator rollout status\` lists them.`)
        assert.equal(stdout, '')
      }
      assert.deepEqual(sim.requests.map((entry) => `${entry.method} ${entry.path}`), Array<string>(2).fill('GET /api/v1/operator-rollout/'))
    })

    it('--json prints the updated row', async () => {
      const forced = await run([...withApi('operator', 'rollout', 'force', 'bravo-05'), '--json'])
      assert.equal(forced.error, undefined)
      const forcedRow = rolloutCluster.parse(JSON.parse(forced.stdout))
      assert.deepEqual([forcedRow.id, forcedRow.name, forcedRow.forced, forcedRow.paused, forcedRow.in_current_batch], [idOf('bravo-05'), 'bravo-05', true, false, true])

      const paused = rolloutCluster.parse(JSON.parse((await run([...withApi('operator', 'rollout', 'pause', 'bravo-05'), '--json'])).stdout))
      assert.deepEqual([paused.forced, paused.paused, paused.in_current_batch, paused.blockers], [false, true, false, ['canary_gate']])
      const resumed = rolloutCluster.parse(JSON.parse((await run([...withApi('operator', 'rollout', 'resume', 'bravo-05'), '--json'])).stdout))
      assert.deepEqual([resumed.forced, resumed.paused], [false, false])
      assert.deepEqual(resumed, (await dashboard()).clusters.find((row) => row.id === idOf('bravo-05')))
    })

    it('a missing cluster argument: exit 2 (with --json too, and the JSON error does not carry the command line)', async () => {
      const {error} = await run(withApi('operator', 'rollout', 'force'))
      assert.equal(error?.oclif?.exit, 2)
      assert.match(error?.message ?? '', /Missing 1 required arg/)
      const json = await run([...withApi('operator', 'rollout', 'force'), '--json'])
      assert.equal(json.error?.oclif?.exit, 2)
      const printed = JSON.parse(json.stdout) as {error: Record<string, unknown>}
      assert.deepEqual(Object.keys(printed.error).sort(), ['message', 'name', 'oclif'])
      assert.match(String(printed.error.message), /Missing 1 required arg/)
      assert.ok(!json.stdout.includes(admin))
    })
  })

  describe('errors', () => {
    it('a token the API rejects: 401, exit 1', async () => {
      const wrong = `sim_admin_${randomBytes(20).toString('hex')}`
      tokens.push(wrong)
      for (const args of [['status'], ['force', 'prod-eu'], ['status', '--json']]) {
        const {error, stdout} = await run(['operator', 'rollout', ...args, '--api-url', sim.url, '--token', wrong])
        assert.equal(error?.oclif?.exit, 1, args.join(' '))
        if (args.includes('--json')) {
          assert.equal((JSON.parse(stdout) as {error: {message: string}}).error.message, 'The Polycrate API rejected the token (401): check --token / POLYCRATE_API_TOKEN.')
        } else {
          assert.equal(error?.message, 'The Polycrate API rejected the token (401): check --token / POLYCRATE_API_TOKEN.')
        }
      }
    })

    it('an agent token: 403, platform-admin only, exit 1', async () => {
      for (const args of [['status'], ['pause', 'prod-eu']]) {
        const {error} = await run(['operator', 'rollout', ...args, '--api-url', sim.url, '--token', agentToken])
        assert.equal(error?.oclif?.exit, 1)
        assert.equal(error?.message, 'The operator rollout is platform-admin only (403): use a platform-admin API token.')
      }
      assert.equal((await dashboard()).clusters.find((row) => row.name === 'prod-eu')?.paused, false)
    })

    it('an API that cannot be reached: exit 1 naming the URL', async () => {
      const port = await freePort()
      const {error, stdout} = await run(['operator', 'rollout', 'status', '--api-url', `http://127.0.0.1:${port}`, '--token', admin])
      assert.equal(error?.oclif?.exit, 1)
      assert.equal(error?.message, `Cannot reach the Polycrate API at http://127.0.0.1:${port} (ECONNREFUSED): check --api-url / POLYCRATE_API_URL.`)
      assert.equal(stdout, '')
    })

    it('a dashboard that breaks the contract: the client\'s message, exit 1', async () => {
      const liar = createServer((_request, response) => {
        response.writeHead(200, {'content-type': 'application/json'})
        response.end(JSON.stringify({desired_version: '0.36.0', rollout_percentage: '25', fleet: [], batch: {size: 0, cluster_ids: []}, clusters: []}))
      })
      await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve))
      const {port} = liar.address() as {port: number}
      try {
        const {error} = await run(['operator', 'rollout', 'status', '--api-url', `http://127.0.0.1:${port}`, '--token', admin])
        assert.equal(error?.oclif?.exit, 1)
        assert.equal(error?.message, 'GET /api/v1/operator-rollout/ → rollout_percentage: expected number, received string')
      } finally {
        liar.closeAllConnections()
        await new Promise((resolve) => liar.close(resolve))
      }
    })

    it('missing --api-url / --token (and no environment): exit 2 with one line saying what to set', async () => {
      const cases: Array<[string[], string]> = [
        [[], 'Missing the Polycrate API URL and token: pass --api-url and --token, or set POLYCRATE_API_URL and POLYCRATE_API_TOKEN.'],
        [['--api-url', sim.url], 'Missing the Polycrate API token: pass --token or set POLYCRATE_API_TOKEN.'],
        [['--token', admin], 'Missing the Polycrate API URL: pass --api-url or set POLYCRATE_API_URL.'],
      ]
      for (const [flags, message] of cases) {
        for (const command of [['status'], ['force', 'prod-eu']]) {
          const {error, stdout} = await run(['operator', 'rollout', ...command, ...flags])
          assert.equal(error?.oclif?.exit, 2, `${command.join(' ')} ${flags.join(' ')}`)
          assert.equal(error?.message, message)
          assert.equal(stdout, '')
        }
      }
      const json = await run(['operator', 'rollout', 'status', '--json'])
      assert.equal(json.error?.oclif?.exit, 2)
      assert.equal((JSON.parse(json.stdout) as {error: {message: string}}).error.message, cases[0]?.[1])
    })

    it('an --api-url that is not a URL: exit 2', async () => {
      const {error} = await run(['operator', 'rollout', 'status', '--api-url', 'not-a-url', '--token', admin])
      assert.equal(error?.oclif?.exit, 2)
      assert.match(error?.message ?? '', /^--api-url \/ POLYCRATE_API_URL is not usable: /)
    })
  })

  describe('environment', () => {
    afterEach(() => {
      delete process.env.POLYCRATE_API_URL
      delete process.env.POLYCRATE_API_TOKEN
    })

    it('POLYCRATE_API_URL and POLYCRATE_API_TOKEN are used when the flags are absent', async () => {
      process.env.POLYCRATE_API_URL = sim.url
      process.env.POLYCRATE_API_TOKEN = admin
      const shown = await run(['operator', 'rollout', 'status'])
      assert.equal(shown.error, undefined)
      assert.match(shown.stdout, /^Fleet: +10 × 0\.34\.0, 8 × 0\.35\.0, 5 × 0\.36\.0, 1 × none$/m)
      const forced = await run(['operator', 'rollout', 'force', 'prod-eu'])
      assert.equal(forced.error, undefined)
      assert.equal(forced.stdout, `Forced cluster prod-eu (id ${idOf('prod-eu')}) into the next rollout batch.\n`)
    })

    it('flags win over the environment', async () => {
      process.env.POLYCRATE_API_URL = `http://127.0.0.1:${await freePort()}`
      process.env.POLYCRATE_API_TOKEN = agentToken
      const {error} = await run(withApi('operator', 'rollout', 'status'))
      assert.equal(error, undefined)
    })

    it('a token from the environment that the API rejects is not printed either', async () => {
      const wrong = `sim_admin_${randomBytes(20).toString('hex')}`
      tokens.push(wrong)
      process.env.POLYCRATE_API_URL = sim.url
      process.env.POLYCRATE_API_TOKEN = wrong
      const {error} = await run(['operator', 'rollout', 'status', '--json'])
      assert.equal(error?.oclif?.exit, 1)
    })
  })

  describe('secrets', () => {
    it('no token appears in any stdout, stderr or error of this file\'s runs', () => {
      assert.ok(outputs.length > 50, `only ${outputs.length} outputs recorded`)
      assert.ok(tokens.length >= 4)
      for (const token of tokens) {
        for (const output of outputs) assert.ok(!output.includes(token), `a token was printed: ${output.replaceAll(token, '<TOKEN>').slice(0, 2000)}`)
      }
    })
  })
})
