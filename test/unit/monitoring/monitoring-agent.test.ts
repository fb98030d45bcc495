/**
 * The MonitoringAgent against the API simulator on a fake clock: assignment, spread, every result reported once,
 * an API outage of 2 (simulated) minutes, a full buffer, a hanging target, /metrics (promtool) and series removal.
 */
import assert from 'node:assert/strict'
import {execa} from 'execa'
import {Registry} from 'prom-client'
import {PolycrateApiClient} from '../../../src/api/index.js'
import {MonitoringAgent, type CheckRunner} from '../../../src/operator/monitoring/agent.js'
import {ProbeMetrics} from '../../../src/operator/monitoring/metrics.js'
import {phaseOffset} from '../../../src/operator/monitoring/schedule.js'
import {createLogger, silentLogger, type Logger} from '../../../src/lib/logger.js'
import {ApiSimulator} from '../../support/api-simulator/index.js'
import {FakeTimers} from '../../support/fake-timers.js'
import {parsePromText} from '../../support/prom-text.js'
import {startHttpTarget, type Target} from '../../support/monitoring-targets.js'
import {agentConfig, eventually} from '../../support/helpers.js'

const AGENT_ID = 'polycrate-operator-test-cluster'

interface World {
  sim: ApiSimulator
  timers: FakeTimers
  registry: Registry
  workspaceId: string
  organizationId: string
  client: PolycrateApiClient
}

async function world(): Promise<World> {
  const timers = new FakeTimers()
  const sim = await ApiSimulator.start({now: () => timers.now()})
  const org = sim.createOrganization('acme-corp')
  const ws = sim.createWorkspace({name: 'prod', organizationId: org.id})
  const token = sim.issueToken({kind: 'agent', workspaceId: ws.id})
  const client = new PolycrateApiClient({baseUrl: sim.url, token, retry: {maxAttempts: 1}})
  return {sim, timers, registry: new Registry(), workspaceId: ws.id, organizationId: org.id, client}
}

function addEndpoints(w: World, count: number, spec: Record<string, unknown> = {http: {interval: 10}}, prefix = 'ep'): string[] {
  return Array.from({length: count}, (_, i) => String(w.sim.insert('endpoints', {
    name: `${prefix}-${i}`, kind: 'http', remote_address: '127.0.0.1', remote_port: 80, workspace: w.workspaceId, organization: w.organizationId, spec,
  }).id))
}

/** A check that succeeds at once and stamps the fake time (no network). */
function instantCheck(w: World, log: Array<{id: string; at: number}> = []): CheckRunner {
  return async (plan) => {
    log.push({id: plan.endpointId, at: w.timers.now()})
    return {result: {endpoint_id: plan.endpointId, success: true, checked_at: new Date(w.timers.now()).toISOString(), duration_ms: 1, status_code: 200}, phases: {connect: 0.001}}
  }
}

function startAgent(w: World, options: {config?: Record<string, unknown>; check?: CheckRunner; api?: () => PolycrateApiClient | undefined; logger?: Logger}) {
  const agent = new MonitoringAgent({
    config: agentConfig({check_interval_seconds: 10, ...options.config}),
    agentId: async () => AGENT_ID,
    api: options.api ?? (() => w.client),
    metrics: ProbeMetrics.for(w.registry),
    logger: options.logger ?? silentLogger,
    clock: w.timers,
    ...(options.check ? {check: options.check} : {}),
  })
  agent.start()
  return agent
}

/** Moves fake time in 1 s steps; API calls are real HTTP and settle in between. */
async function run(w: World, seconds: number): Promise<void> {
  for (let i = 0; i < seconds; i++) await w.timers.advance(1000)
}

async function drain(agent: MonitoringAgent): Promise<void> {
  for (let i = 0; agent.buffer.size > 0; i++) {
    if (i > 100) throw new Error('the buffer does not drain')
    await agent.report()
  }
}

describe('MonitoringAgent with the API simulator (fake clock)', function () {
  this.timeout(60_000)
  let w: World
  let agent: MonitoringAgent | undefined
  beforeEach(async () => { w = await world() })
  afterEach(async () => {
    agent?.stop()
    agent = undefined
    await w.sim.close()
  })

  it('registers through a health report, fetches its assignment with X-Agent-ID and checks it', async () => {
    const ids = addEndpoints(w, 3)
    const log: Array<{id: string; at: number}> = []
    agent = startAgent(w, {check: instantCheck(w, log)})
    await eventually(() => agent!.snapshot().assigned === 3, 10_000, 'the assignment')
    const fetches = w.sim.requests.filter((r) => r.resource === 'agent/endpoints')
    assert.deepEqual(fetches.map((r) => r.status), [404, 200], 'unknown agent first, registered by the health report')
    const agentObject = w.sim.list('agents').find((a) => a.reported_agent_id === AGENT_ID)
    assert.equal(agentObject?.kind, 'operator')
    await run(w, 10)
    assert.deepEqual(new Set(log.map((l) => l.id)), new Set(ids))
  })

  it('1,000 endpoints at 10 s: spread (no second above 3× the mean), every result stored once, agent state OK', async () => {
    const ids = addEndpoints(w, 1000)
    const log: Array<{id: string; at: number}> = []
    agent = startAgent(w, {check: instantCheck(w, log)})
    await eventually(() => agent!.snapshot().assigned === 1000, 10_000, 'the assignment')
    const start = w.timers.now()
    await run(w, 60)
    await drain(agent)
    const stored = w.sim.list('check-results')
    // A grid point exactly at the end of the minute may fire too: count the minute [start, start + 60 s).
    const minute = log.filter((l) => l.at < start + 60_000)
    assert.equal(minute.length, 6000, 'each endpoint 6 times in a minute')
    assert.equal(stored.length, log.length, 'every result reported')
    assert.equal(w.sim.monitoring.duplicateResults, 0, 'none twice')
    assert.equal(w.sim.monitoring.unassignedResults, 0)
    const perSecond = new Array<number>(60).fill(0)
    for (const {at} of minute) perSecond[Math.floor((at - start) / 1000)]!++
    assert.ok(Math.max(...perSecond) <= 3 * 100, `busiest second ${Math.max(...perSecond)}, mean 100`)
    for (const id of ids.slice(0, 20)) assert.equal(minute.filter((l) => l.id === id).length, 6)
    const agentId = String(w.sim.list('agents')[0]!.id)
    assert.deepEqual(w.sim.list('agents')[0]!.check_status, {check_state: 'OK', assigned: 1000, reporting: 1000, failing: 0})
    const assignments = await w.client.request<Array<Record<string, unknown>>>({method: 'GET', path: `/api/v1/agents/${agentId}/assignments/`})
    assert.equal(assignments.data.length, 1000)
    assert.ok(assignments.data.every((a) => a.total_checks === 6 || a.total_checks === 7))
    // Reports stay bounded: at most 500 results each.
    const reports = w.sim.requests.filter((r) => r.resource === 'agent/health' && r.method === 'POST')
    assert.ok(reports.every((r) => ((r.body as {check_results?: unknown[]}).check_results ?? []).length <= 500))
    assert.equal(agent.snapshot().dropped, 0)
  })

  it('an API outage of 2 minutes: results buffered, then delivered once each, nothing dropped', async () => {
    addEndpoints(w, 100)
    const log: Array<{id: string; at: number}> = []
    agent = startAgent(w, {check: instantCheck(w, log)})
    await eventually(() => agent!.snapshot().assigned === 100, 10_000, 'the assignment')
    await run(w, 20)
    await drain(agent)
    const before = w.sim.list('check-results').length
    assert.equal(before, log.length)
    // 2 minutes: 503s for the first, dropped connections for the second.
    w.sim.faults.set({errorRate: 1, errorStatuses: [503]})
    await run(w, 60)
    w.sim.faults.set({dropRate: 1})
    await run(w, 60)
    const during = log.length - before
    assert.equal(during, 1200)
    assert.equal(w.sim.list('check-results').length, before, 'nothing got through during the outage')
    assert.ok(agent.buffer.size >= during, `buffered ${agent.buffer.size}`)
    assert.match(agent.snapshot().reportError ?? '', /./)
    assert.ok(w.sim.requests.filter((r) => r.resource === 'agent/health' && r.status !== 201).length >= 10, 'it kept trying')
    w.sim.faults.clear()
    await run(w, 10)
    await drain(agent)
    const stored = w.sim.list('check-results')
    assert.equal(stored.length, log.length, 'every result delivered')
    assert.equal(w.sim.monitoring.duplicateResults, 0, 'none twice')
    const keys = new Set(stored.map((r) => `${String(r.endpoint_id)}@${String(r.checked_at)}`))
    assert.equal(keys.size, stored.length)
    assert.equal(agent.snapshot().dropped, 0)
    assert.equal(agent.snapshot().reportError, undefined)
  })

  it('a full buffer drops the oldest results and counts them (result_buffer_size)', async () => {
    addEndpoints(w, 49)
    // …and one whose grid starts at t0 itself (random ids hit that 1 time in 200 runs: CI once counted 301 checks).
    const aligned = 'a3632cd3-c6cd-4355-af4f-3af3fc592554'
    assert.equal(phaseOffset(aligned, 10_000), 0)
    assert.equal(w.timers.now() % 10_000, 0)
    w.sim.insert('endpoints', {id: aligned, name: 'aligned', kind: 'http', remote_address: '127.0.0.1', remote_port: 80, workspace: w.workspaceId, organization: w.organizationId, spec: {http: {interval: 10}}})
    const log: Array<{id: string; at: number}> = []
    agent = startAgent(w, {check: instantCheck(w, log), config: {result_buffer_size: 200}})
    await eventually(() => agent!.snapshot().assigned === 50, 10_000, 'the assignment')
    w.sim.faults.set({errorRate: 1, errorStatuses: [503]})
    // [t0, t0 + 60 s): exactly 6 checks per endpoint whatever its phase (one due at t0 itself runs at once; a closed
    // window of 60 s would give that one a 7th check at t0 + 60 s).
    await run(w, 59)
    await w.timers.advance(999)
    assert.equal(log.length, 300)
    assert.equal(agent.buffer.size, 200)
    assert.equal(agent.snapshot().dropped, 100)
    w.sim.faults.clear()
    await drain(agent)
    const stored = w.sim.list('check-results')
    assert.equal(stored.length, 200)
    const newest = new Set(log.slice(-200).map((l) => `${l.id}@${new Date(l.at).toISOString()}`))
    assert.ok(stored.every((r) => newest.has(`${String(r.endpoint_id)}@${String(r.checked_at)}`)), 'the newest were kept')
    const dropped = parsePromText(await w.registry.metrics()).get('polycrate_agent_results_dropped_total')
    assert.equal(dropped?.samples[0]?.value, 100)
  })

  it('a hanging check ends at its deadline as a timeout; the other endpoints stay on schedule', async () => {
    const [hang] = addEndpoints(w, 1, {http: {interval: 10, timeout: 3}}, 'hang')
    addEndpoints(w, 20, {http: {interval: 10}}, 'fine')
    const log: Array<{id: string; at: number}> = []
    const instant = instantCheck(w, log)
    agent = startAgent(w, {check: (plan) => (plan.endpointId === hang ? new Promise(() => {}) : instant(plan)), config: {max_concurrent_checks: 2}})
    await eventually(() => agent!.snapshot().assigned === 21, 10_000, 'the assignment')
    const start = w.timers.now()
    await run(w, 60)
    await drain(agent)
    const hangResults = w.sim.list('check-results').filter((r) => r.endpoint_id === hang)
    assert.ok(hangResults.length >= 5, `hang results ${hangResults.length}`)
    assert.ok(hangResults.every((r) => r.success === false && r.error_name === 'TIMEOUT' && r.http_error_category === 'timeout'))
    // The minute [start, start + 60 s): a grid point exactly at its end may fire too.
    const fine = log.filter((l) => l.id !== hang && l.at < start + 60_000)
    assert.equal(fine.length, 20 * 6)
    const byEndpoint = new Map<string, number[]>()
    for (const l of fine) byEndpoint.set(l.id, [...(byEndpoint.get(l.id) ?? []), l.at - start])
    for (const times of byEndpoint.values()) for (let i = 1; i < times.length; i++) assert.equal(times[i]! - times[i - 1]!, 10_000)
  })

  it('probe_* metrics from real checks pass promtool; an unassigned endpoint\'s series go away', async () => {
    const target: Target = await startHttpTarget()
    try {
      const [ok] = addEndpoints(w, 1, {http: {interval: 10, path: '/ok'}}, 'api-example-com')
      const [bad] = addEndpoints(w, 1, {http: {interval: 10, path: '/status/500'}}, 'broken')
      for (const id of [ok!, bad!]) w.sim.update('endpoints', id, {remote_port: target.port})
      agent = startAgent(w, {})
      await eventually(() => agent!.snapshot().assigned === 2, 10_000, 'the assignment')
      await run(w, 10)
      await eventually(() => [...agent!.snapshot().endpoints.values()].every((e) => e.lastResult !== undefined), 10_000, 'both checked')
      await run(w, 1)
      const text = await w.registry.metrics()
      const families = parsePromText(text)
      const labelsOk = {endpoint: 'api-example-com-0', organization: 'acme-corp'}
      const sample = (name: string, labels: Record<string, string>) => families.get(name)?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      assert.equal(sample('probe_success', labelsOk)?.value, 1)
      assert.equal(sample('probe_success', {endpoint: 'broken-0'})?.value, 0)
      assert.equal(sample('probe_http_status_code', labelsOk)?.value, 200)
      assert.equal(sample('probe_http_status_code', {endpoint: 'broken-0'})?.value, 500)
      assert.ok(sample('probe_duration_seconds', labelsOk)!.value > 0)
      for (const phase of ['resolve', 'connect', 'tls', 'processing', 'transfer']) assert.ok(sample('probe_http_duration_seconds', {...labelsOk, phase}), phase)
      const promtool = await execa('promtool', ['check', 'metrics'], {input: text, reject: false})
      assert.equal(promtool.exitCode, 0, `${promtool.stdout}${promtool.stderr}`)

      w.sim.update('endpoints', bad!, {archived: true})
      await run(w, 10)
      await eventually(() => agent!.snapshot().assigned === 1, 10_000, 'the new assignment')
      const after = parsePromText(await w.registry.metrics())
      for (const name of ['probe_success', 'probe_duration_seconds', 'probe_http_status_code', 'probe_http_duration_seconds']) {
        assert.ok(!after.get(name)?.samples.some((s) => s.labels.endpoint === 'broken-0'), `${name} of the unassigned endpoint removed`)
        assert.ok(after.get(name)?.samples.some((s) => s.labels.endpoint === 'api-example-com-0'), `${name} of the assigned one kept`)
      }
      assert.equal(after.get('polycrate_agent_assigned_endpoints')?.samples[0]?.value, 1)

      // Later results (after several fetches of the same assignment) still update the series.
      await target.close()
      await run(w, 20)
      await eventually(() => agent!.snapshot().endpoints.get(ok!)?.lastResult?.success === false, 10_000, 'a failed check of the closed target')
      const later = parsePromText(await w.registry.metrics())
      assert.equal(later.get('probe_success')?.samples.find((s) => s.labels.endpoint === 'api-example-com-0')?.value, 0)
      assert.equal(later.get('probe_http_status_code')?.samples.find((s) => s.labels.endpoint === 'api-example-com-0')?.value, 0)
    } finally {
      await target.close()
    }
  })

  it('shutdown: no new checks, the running ones finish, everything is reported', async () => {
    addEndpoints(w, 30)
    const log: Array<{id: string; at: number}> = []
    const instant = instantCheck(w, log)
    // Each check takes 5 s of (fake) time, so some run when the agent is told to stop.
    const slow: CheckRunner = (plan) => new Promise((resolve) => { w.timers.setTimeout(() => resolve(instant(plan)), 5000) })
    agent = startAgent(w, {check: slow, config: {check_interval_seconds: 10}})
    await eventually(() => agent!.snapshot().assigned === 30, 10_000, 'the assignment')
    await run(w, 12)
    const done = agent.shutdown(15_000)
    await w.timers.advance(6000)
    await done
    const checked = log.length
    assert.ok(checked > 0)
    assert.equal(w.sim.list('check-results').length, checked, 'the checks running at the stop were reported too')
    await run(w, 20)
    assert.equal(log.length, checked, 'no check after the stop')
  })

  it('without an API connection it waits, keeps no assignment and says why (in its status; no warning: api-sync logs the disconnection)', async () => {
    addEndpoints(w, 2)
    const lines: Array<{level: string; msg: string}> = []
    agent = startAgent(w, {api: () => undefined, check: instantCheck(w), logger: createLogger({level: 'debug', format: 'json', write: (line) => lines.push(JSON.parse(line))})})
    await run(w, 12)
    assert.equal(agent.snapshot().assigned, 0)
    assert.match(agent.snapshot().fetchError ?? '', /not connected to the Polycrate API/)
    assert.equal(w.sim.requests.length, 0)
    assert.deepEqual(lines.filter((line) => line.level !== 'debug'), [])
    assert.ok(lines.some((line) => /waiting for the Polycrate API connection/.test(line.msg)))
  })
})

describe('simulator: endpoint assignment', () => {
  it('monitoring modes, capacity, stickiness, max_agents_per_endpoint', async () => {
    const {planAssignment} = await import('../../support/api-simulator/monitoring.js')
    const ws = (mode: string, pop?: string) => ({id: `ws-${mode}`, organization: 'org', endpoint_monitoring_mode: mode, ...(pop ? {pop} : {})})
    const workspaces = new Map([ws('auto'), ws('workspace_only'), ws('organization_only'), ws('pop_only', 'pop-1')].map((w) => [w.id, w]))
    const agents = [
      {id: 'a-ws', workspace: 'ws-auto', organization: 'org'},
      {id: 'b-org', workspace: 'ws-other', organization: 'org'},
      {id: 'c-pop', workspace: 'ws-x', organization: 'org-2', source_pop: 'pop-1'},
      {id: 'd-dead', workspace: 'ws-auto', organization: 'org', state: 'CRITICAL'},
    ]
    const e = (id: string, workspace: string, extra: Record<string, unknown> = {}) => ({id, workspace, organization: 'org', ...extra})
    const plan = planAssignment({
      endpoints: [
        e('1', 'ws-auto'), e('2', 'ws-workspace_only'), e('3', 'ws-organization_only'), e('4', 'ws-pop_only'),
        e('5', 'ws-auto', {max_agents_per_endpoint: 2}), e('6', 'ws-auto', {do_not_monitor: true}), e('7', 'ws-auto', {agents: ['b-org']}),
      ],
      agents, workspaces, current: new Map(),
    })
    assert.deepEqual(Object.fromEntries(plan), {'1': ['a-ws'], '2': [], '3': ['a-ws'], '4': ['c-pop'], '5': ['a-ws'], '7': ['b-org']})
    // Capacity: one endpoint per agent; sticky: the second run keeps the first run's choice.
    const limited = agents.map((a) => ({...a, capacity: 1}))
    const first = planAssignment({endpoints: [e('x', 'ws-organization_only'), e('y', 'ws-organization_only'), e('z', 'ws-organization_only')], agents: limited, workspaces, current: new Map()})
    assert.deepEqual(Object.fromEntries(first), {x: ['a-ws'], y: ['b-org'], z: []})
    const second = planAssignment({endpoints: [e('y', 'ws-organization_only'), e('z', 'ws-organization_only')], agents: limited, workspaces, current: first})
    assert.deepEqual(Object.fromEntries(second), {y: ['b-org'], z: ['a-ws']})
  })
})
