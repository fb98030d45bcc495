/** What `polycrate operator rollout …` prints and how it finds clusters (src/cli/rollout-view.ts), table-driven. */
import assert from 'node:assert/strict'
import {
  ApiAuthError,
  ApiContractError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiServerError,
  rolloutDashboard,
  type RolloutCluster,
  type RolloutDashboard,
} from '../../../src/api/index.js'
import {apiClientFromFlags, missingApiSettings, withTokenAlias} from '../../../src/cli/api-flags.js'
import {
  agentText,
  blockersText,
  describeAction,
  filterClusters,
  findCluster,
  fleetHistogram,
  flagsText,
  relativeTime,
  renderStatus,
  resolveCluster,
  rolloutErrorMessage,
  sortClusters,
  summaryLines,
  tableRows,
  type RolloutAction,
} from '../../../src/cli/rollout-view.js'
import {compareVersions} from '../../../src/api/versions.js'

const NOW = Date.parse('2026-05-04T10:00:00.000Z')
const ago = (ms: number) => new Date(NOW - ms).toISOString()
const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** A dashboard row; defaults: operator 0.35.0 behind desired 0.36.0, agent OK seen 3 minutes ago, canary gate. */
function row(name: string, patch: Partial<RolloutCluster> = {}): RolloutCluster {
  return {
    id: `id-${name}`,
    name,
    workspace: {id: `ws-id-${name}`, name: `ws-${name}`},
    organization: {id: 'org', name: 'Org'},
    installed_version: '0.35.0',
    desired_version: '0.36.0',
    up_to_date: false,
    agent: {id: `agent-${name}`, state: 'OK', last_seen: ago(3 * MINUTE)},
    critical: false,
    in_maintenance: false,
    paused: false,
    forced: false,
    in_current_batch: false,
    blockers: ['canary_gate'],
    ...patch,
  }
}

function dashboard(clusters: RolloutCluster[], patch: Partial<RolloutDashboard> = {}): RolloutDashboard {
  const counts = new Map<string | null, number>()
  for (const cluster of clusters) counts.set(cluster.installed_version, (counts.get(cluster.installed_version) ?? 0) + 1)
  const batch = clusters.filter((cluster) => cluster.in_current_batch).map((cluster) => cluster.id)
  return rolloutDashboard.parse({
    desired_version: '0.36.0',
    rollout_percentage: 25,
    fleet: [...counts].map(([version, count]) => ({version, count})),
    batch: {size: batch.length, cluster_ids: batch},
    clusters,
    ...patch,
  })
}

const noOperator = (name: string): RolloutCluster =>
  row(name, {installed_version: null, agent: {id: null, state: null, last_seen: null}, blockers: ['no_agent_token', 'operator_config_missing']})

describe('rollout view: fleet histogram', () => {
  const cases: Array<[string, RolloutDashboard['fleet'], string]> = [
    ['the seeds\' example', [{version: '0.34.0', count: 30}, {version: '0.35.0', count: 12}, {version: '0.36.0', count: 2}], '30 × 0.34.0, 12 × 0.35.0, 2 × 0.36.0'],
    ['clusters without an operator as "none", last', [{version: null, count: 3}, {version: '0.36.0', count: 1}], '1 × 0.36.0, 3 × none'],
    ['semver order, not text order', [{version: '0.10.0', count: 1}, {version: '0.9.2', count: 4}], '4 × 0.9.2, 1 × 0.10.0'],
    ['pre-releases before their release', [{version: '0.36.0', count: 1}, {version: '0.36.0-rc.1', count: 2}], '2 × 0.36.0-rc.1, 1 × 0.36.0'],
    ['zero counts are left out', [{version: '0.34.0', count: 0}, {version: '0.35.0', count: 2}], '2 × 0.35.0'],
    ['an empty fleet', [], 'no clusters'],
  ]
  for (const [title, fleet, expected] of cases) it(title, () => assert.equal(fleetHistogram(fleet), expected))

  it('compares versions like semver; non-versions after versions, null last', () => {
    const sorted = [null, 'main', '1.0.0', '0.10.0', 'v0.9.1', '0.36.0-rc.10', '0.36.0-rc.2', '0.36.0'].sort(compareVersions)
    assert.deepEqual(sorted, ['v0.9.1', '0.10.0', '0.36.0-rc.2', '0.36.0-rc.10', '0.36.0', '1.0.0', 'main', null])
  })
})

describe('rollout view: relative time and the AGENT column', () => {
  const cases: Array<[string | null, string]> = [
    [null, 'never'],
    [ago(0), 'just now'],
    [ago(9_999), 'just now'],
    [ago(10_000), '10s ago'],
    [ago(59_999), '59s ago'],
    [ago(3 * MINUTE), '3m ago'],
    [ago(3 * MINUTE + 59_000), '3m ago'],
    [ago(59 * MINUTE), '59m ago'],
    [ago(HOUR), '1h ago'],
    [ago(47 * HOUR), '47h ago'],
    [ago(48 * HOUR), '2d ago'],
    [ago(-30_000), 'just now'], // a little clock skew
    [ago(-5 * MINUTE), 'in 5m'],
    ['not a date', 'at an unknown time'],
  ]
  for (const [iso, expected] of cases) it(`${iso ?? 'null'} → ${expected}`, () => assert.equal(relativeTime(iso, NOW), expected))

  const agents: Array<[RolloutCluster['agent'], string]> = [
    [{id: 'a', state: 'OK', last_seen: ago(3 * MINUTE)}, 'OK, last seen 3m ago'],
    [{id: 'a', state: 'CRITICAL', last_seen: ago(2 * HOUR)}, 'CRITICAL, last seen 2h ago'],
    [{id: null, state: null, last_seen: null}, 'never'],
    [{id: 'a', state: 'OK', last_seen: null}, 'OK, never seen'],
    [{id: 'a', state: null, last_seen: ago(0)}, 'unknown, last seen just now'],
  ]
  for (const [agent, expected] of agents) it(`agent → ${expected}`, () => assert.equal(agentText(agent, NOW), expected))
})

describe('rollout view: blockers and flags in words', () => {
  const blockers: Array<[string[], string]> = [
    [[], '-'],
    [['no_agent_token'], 'no agent token'],
    [['operator_config_missing'], 'OperatorConfig missing'],
    [['canary_gate'], 'canary gate'],
    [['no_agent_token', 'operator_config_missing'], 'no agent token, OperatorConfig missing'],
    [['crd_conflict'], 'crd conflict'],
  ]
  for (const [codes, expected] of blockers) it(`${JSON.stringify(codes)} → ${expected}`, () => assert.equal(blockersText(codes), expected))

  const flags: Array<[{paused: boolean; forced: boolean}, string]> = [
    [{paused: false, forced: false}, '-'],
    [{paused: true, forced: false}, 'paused'],
    [{paused: false, forced: true}, 'forced'],
    [{paused: true, forced: true}, 'paused, forced'],
  ]
  for (const [input, expected] of flags) it(`${JSON.stringify(input)} → ${expected}`, () => assert.equal(flagsText(input), expected))
})

describe('rollout view: summary and table', () => {
  const fleet = [
    row('prod-eu', {in_current_batch: true, blockers: [], in_maintenance: true}),
    row('prod-us', {critical: true, agent: {id: 'a', state: 'CRITICAL', last_seen: ago(2 * HOUR)}}),
    row('edge-01', {installed_version: '0.34.0', paused: true}),
    row('edge-02', {installed_version: '0.36.0', up_to_date: true, blockers: []}),
    noOperator('legacy'),
  ]

  it('summary: desired version, percentage, histogram, batch of the clusters behind', () => {
    assert.deepEqual(summaryLines(dashboard(fleet)), [
      'Desired version:  0.36.0',
      'Rollout:          25 % of the clusters behind per batch (OPERATOR_ROLLOUT_PERCENTAGE)',
      'Fleet:            1 × 0.34.0, 2 × 0.35.0, 1 × 0.36.0, 1 × none',
      'Current batch:    1 of 3 clusters behind 0.36.0',
    ])
  })

  const batchLines: Array<[string, RolloutDashboard, string]> = [
    ['no desired version', dashboard([row('a', {desired_version: null, blockers: []})], {desired_version: null}), 'Current batch:    none: no desired version is set'],
    ['all up to date', dashboard([row('a', {installed_version: '0.36.0', up_to_date: true, blockers: []}), noOperator('b')]), 'Current batch:    none: every cluster with an operator runs 0.36.0'],
    ['one behind, in the batch', dashboard([row('a', {in_current_batch: true, blockers: []})]), 'Current batch:    1 of 1 cluster behind 0.36.0'],
  ]
  for (const [title, input, expected] of batchLines) it(`summary batch line: ${title}`, () => assert.equal(summaryLines(input)[3], expected))

  it('summary without a desired version says so', () => {
    assert.equal(summaryLines(dashboard([row('a')], {desired_version: null}))[0], 'Desired version:  not set (OPERATOR_BLOCK_VERSION is empty): nothing is rolled out')
  })

  it('renders the whole status: summary, blank line, table by name', () => {
    assert.equal(renderStatus(dashboard(fleet), {now: NOW}), [
      'Desired version:  0.36.0',
      'Rollout:          25 % of the clusters behind per batch (OPERATOR_ROLLOUT_PERCENTAGE)',
      'Fleet:            1 × 0.34.0, 2 × 0.35.0, 1 × 0.36.0, 1 × none',
      'Current batch:    1 of 3 clusters behind 0.36.0',
      '',
      'CLUSTER   WORKSPACE    INSTALLED   DESIRED   AGENT                        MAINTENANCE   FLAGS    BATCH   BLOCKERS',
      'edge-01   ws-edge-01   0.34.0      0.36.0    OK, last seen 3m ago         -             paused   -       canary gate',
      'edge-02   ws-edge-02   0.36.0      0.36.0    OK, last seen 3m ago         -             -        -       -',
      'legacy    ws-legacy    none        0.36.0    never                        -             -        -       no agent token, OperatorConfig missing',
      'prod-eu   ws-prod-eu   0.35.0      0.36.0    OK, last seen 3m ago         yes           -        yes     -',
      'prod-us   ws-prod-us   0.35.0      0.36.0    CRITICAL, last seen 2h ago   -             -        -       canary gate',
    ].join('\n'))
  })

  const sorts: Array<['name' | 'version', string[]]> = [
    ['name', ['edge-01', 'edge-02', 'legacy', 'prod-eu', 'prod-us']],
    ['version', ['edge-01', 'prod-eu', 'prod-us', 'edge-02', 'legacy']],
  ]
  for (const [sort, names] of sorts) {
    it(`sorts by ${sort}`, () => assert.deepEqual(sortClusters(fleet, sort).map((cluster) => cluster.name), names))
  }

  it('renders only the rows given, and says so when there are none', () => {
    const text = renderStatus(dashboard(fleet), {now: NOW, sort: 'version'}, fleet.slice(0, 1))
    assert.match(text, /\nCLUSTER .*\nprod-eu .*$/)
    assert.match(renderStatus(dashboard([]), {now: NOW}), /Fleet: +no clusters\n[^\n]*\n\nNo clusters\.$/)
  })

  it('BATCH follows batch.cluster_ids too', () => {
    const input = dashboard([row('a')], {batch: {size: 1, cluster_ids: ['id-a']}})
    assert.equal(tableRows(input, input.clusters, {now: NOW})[0]?.[7], 'yes')
  })

  it('colours only when asked: CRITICAL red, batch green, blockers yellow', () => {
    const input = dashboard(fleet)
    const plain = tableRows(input, input.clusters, {now: NOW, colour: false}).flat()
    assert.ok(plain.every((cell) => !cell.includes('\u001b[')))
    const coloured = tableRows(input, input.clusters, {now: NOW, colour: true})
    const prodUs = coloured.find((cells) => cells[0] === 'prod-us')
    const prodEu = coloured.find((cells) => cells[0] === 'prod-eu')
    assert.equal(prodUs?.[4], '\u001b[31mCRITICAL, last seen 2h ago\u001b[39m')
    assert.equal(prodUs?.[8], '\u001b[33mcanary gate\u001b[39m')
    assert.equal(prodEu?.[7], '\u001b[32myes\u001b[39m')
  })
})

describe('rollout view: finding a cluster by id or name', () => {
  const rows = [
    row('prod-eu'),
    row('staging', {id: 'id-staging-a', workspace: {id: 'ws-a', name: 'team-a'}}),
    row('staging', {id: 'id-staging-b', workspace: {id: 'ws-b', name: 'team-b'}}),
    row('Mixed-Case'),
    row('id-prod-eu', {id: 'id-other'}), // a name that looks like another cluster's id: the id wins
  ]
  const cases: Array<[string, string]> = [
    ['id-prod-eu', 'found id-prod-eu'],
    ['ID-PROD-EU', 'found id-prod-eu'],
    ['prod-eu', 'found id-prod-eu'],
    ['  prod-eu ', 'found id-prod-eu'],
    ['mixed-case', 'found id-Mixed-Case'],
    ['id-staging-b', 'found id-staging-b'],
    ['staging', 'ambiguous id-staging-a,id-staging-b'],
    ['STAGING', 'ambiguous id-staging-a,id-staging-b'],
    ['nope', 'unknown'],
    ['', 'unknown'],
  ]
  for (const [reference, expected] of cases) {
    it(`${JSON.stringify(reference)} → ${expected}`, () => {
      const lookup = findCluster(rows, reference)
      const got = lookup.kind === 'found' ? `found ${lookup.row.id}` : lookup.kind === 'ambiguous' ? `ambiguous ${lookup.matches.map((match) => match.id).join(',')}` : 'unknown'
      assert.equal(got, expected)
    })
  }

  it('messages for ambiguous and unknown names', () => {
    assert.deepEqual(resolveCluster(rows, 'staging'), {
      message: '2 clusters are named staging: id-staging-a (workspace team-a), id-staging-b (workspace team-b); pass the id instead.',
    })
    assert.deepEqual(resolveCluster(rows, 'nope'), {message: 'No cluster named or with id nope; `polycrate operator rollout status` lists them.'})
    assert.deepEqual(resolveCluster(rows, 'prod-eu'), {row: rows[0]})
  })

  const filters: Array<[string[], string[], string[]]> = [
    [['prod-eu'], ['id-prod-eu'], []],
    [['staging', 'MIXED-CASE'], ['id-staging-a', 'id-staging-b', 'id-Mixed-Case'], []],
    [['id-staging-a', 'ghost'], ['id-staging-a'], ['ghost']],
  ]
  for (const [references, ids, unknown] of filters) {
    it(`--cluster ${references.join(' --cluster ')}`, () => {
      const result = filterClusters(rows, references)
      assert.deepEqual(result.rows.map((match) => match.id), ids)
      assert.deepEqual(result.unknown, unknown)
    })
  }
})

describe('rollout view: what force, pause and resume changed', () => {
  const behind = row('prod-eu')
  const cases: Array<[RolloutAction, RolloutCluster, RolloutCluster, string]> = [
    ['force', behind, row('prod-eu', {forced: true, in_current_batch: true, blockers: []}), 'Forced cluster prod-eu (id id-prod-eu) into the next rollout batch.'],
    ['force', row('prod-eu', {paused: true}), row('prod-eu', {forced: true, in_current_batch: true, blockers: []}), 'Forced cluster prod-eu (id id-prod-eu) into the next rollout batch (its pause is lifted).'],
    ['force', row('prod-eu', {forced: true, in_current_batch: true}), row('prod-eu', {forced: true, in_current_batch: true}), 'Cluster prod-eu (id id-prod-eu) was already forced into the next rollout batch; nothing changed.'],
    ['force', row('prod-eu', {installed_version: '0.36.0', up_to_date: true, blockers: []}), row('prod-eu', {installed_version: '0.36.0', up_to_date: true, forced: true, blockers: []}), 'Forced cluster prod-eu (id id-prod-eu), but it already runs 0.36.0.'],
    ['force', noOperator('prod-eu'), {...noOperator('prod-eu'), forced: true}, 'Forced cluster prod-eu (id id-prod-eu), but it has no operator installed (OperatorConfig missing), and the rollout only updates existing operators.'],
    ['force', row('prod-eu', {desired_version: null, blockers: []}), row('prod-eu', {desired_version: null, forced: true, blockers: []}), 'Forced cluster prod-eu (id id-prod-eu), but no desired version is set (OPERATOR_BLOCK_VERSION), so nothing is rolled out.'],
    ['pause', behind, row('prod-eu', {paused: true}), 'Paused the rollout of cluster prod-eu (id id-prod-eu): it stays out of rollout batches until `polycrate operator rollout resume`.'],
    ['pause', row('prod-eu', {forced: true, in_current_batch: true}), row('prod-eu', {paused: true}), 'Paused the rollout of cluster prod-eu (id id-prod-eu) (its force-update is withdrawn): it stays out of rollout batches until `polycrate operator rollout resume`.'],
    ['pause', row('prod-eu', {paused: true}), row('prod-eu', {paused: true}), 'The rollout of cluster prod-eu (id id-prod-eu) was already paused; nothing changed.'],
    ['resume', row('prod-eu', {paused: true}), behind, 'Resumed the rollout of cluster prod-eu (id id-prod-eu): it waits behind the canary gate.'],
    ['resume', row('prod-eu', {paused: true}), row('prod-eu', {in_current_batch: true, blockers: []}), 'Resumed the rollout of cluster prod-eu (id id-prod-eu): it is in the next rollout batch.'],
    ['resume', row('prod-eu', {paused: true, critical: true}), row('prod-eu', {critical: true}), 'Resumed the rollout of cluster prod-eu (id id-prod-eu): its operator agent is CRITICAL, so it is deferred.'],
    ['resume', row('prod-eu', {forced: true, in_current_batch: true}), behind, 'Withdrew the force-update of cluster prod-eu (id id-prod-eu): it waits behind the canary gate.'],
    ['resume', behind, behind, 'Cluster prod-eu (id id-prod-eu) was neither paused nor forced; nothing changed.'],
  ]
  for (const [action, before, after, expected] of cases) it(`${action}: ${expected}`, () => assert.equal(describeAction(action, before, after), expected))
})

describe('rollout view: API errors as one line', () => {
  const apiUrl = 'http://127.0.0.1:9'
  const get = {method: 'GET', path: '/api/v1/operator-rollout/'}
  const action = {method: 'POST', path: '/api/v1/operator-rollout/3f6c1a52-8d0e-4d0b-9a57-2f1d1f3f7c10/pause/'}
  const cases: Array<[string, unknown, string | undefined, string | undefined]> = [
    ['401', new ApiAuthError({...get, status: 401}), undefined, 'The Polycrate API rejected the token (401): check --token / POLYCRATE_API_TOKEN.'],
    ['403', new ApiAuthError({...get, status: 403}), undefined, 'The operator rollout is platform-admin only (403): use a platform-admin API token.'],
    ['refused', new ApiNetworkError({...get, cause: 'ECONNREFUSED', origin: apiUrl}), undefined, `Cannot reach the Polycrate API at ${apiUrl} (ECONNREFUSED): check --api-url / POLYCRATE_API_URL.`],
    ['timeout', new ApiNetworkError({...get, cause: 'timeout', origin: apiUrl, timeoutMs: 15_000}), undefined, `Cannot reach the Polycrate API at ${apiUrl} (no answer within 15000 ms): check --api-url / POLYCRATE_API_URL.`],
    ['contract mismatch: the client\'s message', new ApiContractError({...get, status: 200, issues: ['clusters[0].id: expected string, received number']}), undefined, 'GET /api/v1/operator-rollout/ → clusters[0].id: expected string, received number'],
    ['404 on a cluster action: the cluster is gone', new ApiNotFoundError({...action, status: 404}), 'prod-eu', 'No cluster named or with id prod-eu; `polycrate operator rollout status` lists them.'],
    ['404 on the dashboard: the client\'s message', new ApiNotFoundError({...get, status: 404}), undefined, 'Not found (404) on GET /api/v1/operator-rollout/'],
    ['5xx: the client\'s message', new ApiServerError({...get, status: 502, attempts: 3}), undefined, 'The Polycrate API failed on GET /api/v1/operator-rollout/ (502 Bad Gateway); gave up after 3 attempts.'],
    ['not an API error', new Error('boom'), undefined, undefined],
  ]
  for (const [title, error, clusterReference, expected] of cases) {
    it(title, () => assert.equal(rolloutErrorMessage(error, {apiUrl, clusterReference}), expected))
  }
})

describe('api flags: --api-url and --token', () => {
  const secret = 'sim_admin_0123456789abcdef'
  const cases: Array<[string, {'api-url'?: string; token?: string}, string | undefined]> = [
    ['both set', {'api-url': 'http://api', token: secret}, undefined],
    ['both missing', {}, 'Missing the Polycrate API URL and token: pass --api-url and --token, or set POLYCRATE_API_URL and POLYCRATE_API_TOKEN.'],
    ['no URL', {token: secret}, 'Missing the Polycrate API URL: pass --api-url or set POLYCRATE_API_URL.'],
    ['no token', {'api-url': 'http://api'}, 'Missing the Polycrate API token: pass --token or set POLYCRATE_API_TOKEN.'],
    ['blank token', {'api-url': 'http://api', token: '  '}, 'Missing the Polycrate API token: pass --token or set POLYCRATE_API_TOKEN.'],
  ]
  for (const [title, flags, expected] of cases) it(title, () => assert.equal(missingApiSettings(flags), expected))

  const clients: Array<[string, {'api-url'?: string; token?: string}, RegExp]> = [
    ['a usable pair gives a client on the base URL', {'api-url': 'https://app.example.com/', token: secret}, /^client https:\/\/app\.example\.com$/],
    ['not a URL', {'api-url': 'app example', token: secret}, /^--api-url \/ POLYCRATE_API_URL is not usable: .*not a URL/],
    ['not http(s)', {'api-url': 'ftp://app.example.com', token: secret}, /^--api-url \/ POLYCRATE_API_URL is not usable: .*must be http\(s\)/],
    ['a token with a space inside', {'api-url': 'http://api', token: `${secret} x`}, /^The API token \(--token \/ POLYCRATE_API_TOKEN\) is not usable: it contains characters/],
  ]
  for (const [title, flags, expected] of clients) {
    it(title, () => {
      const result = apiClientFromFlags(flags)
      const text = 'client' in result ? `client ${result.client.baseUrl}` : result.problem
      assert.match(text, expected)
      assert.ok(!text.includes(secret), 'the token is never in a message')
      if ('client' in result) assert.ok(!JSON.stringify(result.client).includes(secret))
    })
  }
})

describe('the API token: one variable name, the earlier one as an alias', () => {
  const cases: Array<[string, {token?: string}, NodeJS.ProcessEnv, string | undefined]> = [
    ['--token / POLYCRATE_API_TOKEN wins', {token: 'a'}, {POLYCRATE_ADMIN_TOKEN: 'b'}, 'a'],
    ['POLYCRATE_ADMIN_TOKEN (what api-sim printed) when nothing else is set', {}, {POLYCRATE_ADMIN_TOKEN: 'b'}, 'b'],
    ['an empty alias does not count', {}, {POLYCRATE_ADMIN_TOKEN: ' '}, undefined],
    ['neither', {}, {}, undefined],
  ]
  for (const [name, flags, env, token] of cases) {
    it(name, () => assert.equal(withTokenAlias(flags, env).token, token))
  }
})
