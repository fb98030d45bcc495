/**
 * The endpoint monitoring agent in a real operator process (real apiserver, API simulator, a real HTTP target on
 * loopback): 1,000 assigned endpoints at 10 s, spread and reported once each, operator CPU measured, an API
 * outage buffered and delivered, `polycrate operator status`, /metrics through promtool, and the agent disabled.
 */
import assert from 'node:assert/strict'
import os from 'node:os'
import {runCommand} from '@oclif/test'
import {execa} from 'execa'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {startHttpTarget, type SeenRequest, type Target} from '../support/monitoring-targets.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'
import {parsePromText} from '../support/prom-text.js'
import {configRef, eventually} from '../support/helpers.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}

describe('endpoint monitoring agent (run + simulator + loopback target)', function () {
  this.timeout(600_000)
  let client: KubeClient
  let sim: ApiSimulator
  let target: Target
  let operator: OperatorProcess | undefined
  const seen: SeenRequest[] = []

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
    target = await startHttpTarget(seen)
  })
  after(async () => {
    await operator?.stop('SIGKILL')
    client.close()
    await sim.close()
    await target.close()
  })

  it('checks 1,000 endpoints at 10 s spread evenly, reports each result once across an API outage, shows them in status and /metrics', async () => {
    const organization = sim.createOrganization('acme-corp')
    const workspace = sim.createWorkspace({name: 'production', organizationId: organization.id})
    const token = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
    const endpoint = (name: string, path: string, extra: Record<string, unknown> = {}) => sim.insert('endpoints', {
      name, kind: 'http', remote_address: '127.0.0.1', remote_port: target.port, workspace: workspace.id, organization: organization.id,
      spec: {http: {path, interval: 10, timeout: 5}}, ...extra,
    })
    for (let i = 0; i < 998; i++) endpoint(`site-${i}`, '/ok')
    const broken = endpoint('broken', '/status/503')
    endpoint('deep-health', '/degraded', {annotations: {'endpoints.polycrate.io/expected-body': '"database":"connected"'}})

    // This operator's Endpoint sync would put the Endpoint CRs earlier files left in the shared cluster into this
    // workspace, and the agent would be assigned them too: remove them first (their operators and APIs are gone).
    const leftovers = (await client.request<{items: Array<{metadata: {namespace: string; name: string}}>}>({path: '/apis/polycrate.io/v1alpha1/endpoints'})).items
    for (const {metadata: {namespace, name}} of leftovers) {
      const ref = {group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace, name}
      await client.mergePatch(ref, {metadata: {finalizers: null}}).catch(() => {})
      await client.delete(ref).catch(() => {})
    }

    const namespace = await freshNamespace(client, 'monitoring')
    await client.create({group: '', version: 'v1', plural: 'secrets', namespace}, {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace}, stringData: {token}})
    await client.create(configRef(namespace), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
      spec: {
        api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 5},
        endpoint_discovery: {enabled: false},
        agent: {enabled: true, check_interval_seconds: 10},
      },
    })
    operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace, logLevel: 'info'})
    const running = operator

    // Positive signal: the agent fetched its assignment and the first results arrived.
    await eventually(async () => sim.list('check-results').length >= 1000, 90_000, 'the first 1,000 results')
    const agentObject = sim.list('agents').find((a) => a.kind === 'operator')!
    assert.match(String(agentObject.reported_agent_id), /^polycrate-operator-/)
    const fetch1 = sim.requests.find((r) => r.resource === 'agent/endpoints' && r.status === 200)
    assert.ok(fetch1, 'GET /api/v1/agent/endpoints/ with X-Agent-ID')

    // Spread and CPU over 30 s of steady state.
    const cpu = async () => parsePromText(await (await fetch(running.metricsUrl)).text()).get('process_cpu_seconds_total')!.samples[0]!.value
    const windowStart = Date.now()
    const windowEnd = windowStart + 30_000
    const checkedSince = (at: number) => sim.list('check-results').some((r) => Date.parse(String(r.checked_at)) >= at)
    const cpuStart = await cpu()
    // The window is over once the API has a result of a check started after it.
    await eventually(() => checkedSince(windowEnd), 90_000, 'a result of a check started after the 30 s window')
    const cpuSeconds = (await cpu()) - cpuStart
    const wallSeconds = (Date.now() - windowStart) / 1000
    // Every result of the window has reached the API once one has of a check started after every check of the
    // window had ended (the 5 s check timeout): the buffer reports in the order the results came.
    await eventually(() => checkedSince(windowEnd + 5_000), 90_000, 'a result of a check started after the window\'s checks had ended')
    const results = sim.list('check-results').map((r) => ({endpoint: String(r.endpoint_id), at: Date.parse(String(r.checked_at))}))
    const inWindow = results.map((r) => r.at).filter((at) => at >= windowStart && at < windowStart + 30_000)
    const perSecond = new Array<number>(30).fill(0)
    for (const at of inWindow) perSecond[Math.floor((at - windowStart) / 1000)]!++
    const mean = inWindow.length / 30
    console.log(`      monitoring: ${inWindow.length} checks in 30 s (${mean.toFixed(1)}/s, busiest second ${Math.max(...perSecond)}); ` +
      `operator CPU ${(100 * cpuSeconds / wallSeconds).toFixed(1)}% of one core; ${sim.monitoring.duplicateResults} duplicates; load ${os.loadavg()[0]!.toFixed(1)}`)
    // 3,000 grid points. On a crowded machine checks start late (a round due just before the window may run inside
    // it) or a round is skipped while the previous check still runs: the count is about 3,000, not exactly. What
    // must hold exactly is the spacing: no endpoint is checked twice within half its interval (no burst, no repeat).
    assert.ok(inWindow.length >= 2700 && inWindow.length <= 3300, `about 3,000 checks in 30 s, got ${inWindow.length}`)
    const byEndpoint = new Map<string, number[]>()
    for (const {endpoint, at} of results) byEndpoint.set(endpoint, [...(byEndpoint.get(endpoint) ?? []), at])
    const tooClose = [...byEndpoint].filter(([, times]) => times.sort((a, b) => a - b).some((at, i) => i > 0 && at - times[i - 1]! < 5_000))
    assert.deepEqual(tooClose.map(([endpoint]) => endpoint), [], 'endpoints checked twice within half their interval')
    assert.ok(Math.max(...perSecond) <= 3 * mean, `busiest second ${Math.max(...perSecond)} vs mean ${mean}`)
    assert.ok(cpuSeconds > 0)

    // An API outage (every /api/ request dropped): the results stay buffered, then arrive.
    sim.faults.set({dropRate: 1})
    const buffering = await eventually(async () => {
      const status = (await client.get<OperatorConfigObject>(configRef(namespace))).status?.monitoring
      return status && (status.buffered_results ?? 0) >= 2000 && status.message ? status : undefined
    }, 90_000, 'results buffered during the outage')
    assert.match(buffering.message!, /Cannot (report check results|fetch the assigned endpoints)/)
    // The outage lasts until a report was refused while those results were buffered (they must survive that).
    const mark = sim.requests.length
    await eventually(() => sim.requests.slice(mark).some((r) => r.resource === 'agent/health' && r.status === 0), 90_000, 'a report dropped during the outage')
    sim.faults.clear()
    await eventually(async () => {
      const status = (await client.get<OperatorConfigObject>(configRef(namespace))).status?.monitoring
      return status && (status.buffered_results ?? 0) < 1100 && status.message === undefined ? status : undefined
    }, 90_000, 'the buffer delivered after the outage')

    // The status: the agent's line and the failing endpoints first. (On a crowded machine a site may time out now and
    // then; the two broken ones always fail, with their reasons.)
    let last: OperatorConfigStatus['monitoring']
    const monitoring = await eventually(async () => {
      last = (await client.get<OperatorConfigObject>(configRef(namespace))).status?.monitoring
      return last && last.assigned_endpoints === 1000 && (last.failing ?? 0) >= 2 && last.endpoints?.filter((e) => e.success === false).length === last.failing ? last : undefined
    }, 60_000, 'status.monitoring with the failing endpoints').catch((error: Error) => { throw new Error(`${error.message}: ${JSON.stringify({...last, endpoints: last?.endpoints?.slice(0, 5)})}`) })
    assert.equal(monitoring.reported_agent_id, agentObject.reported_agent_id)
    assert.equal(monitoring.succeeding! + monitoring.failing!, 1000)
    assert.equal(monitoring.dropped_results, 0)
    const failed = new Map(monitoring.endpoints!.filter((e) => e.success === false).map((e) => [e.name, [e.status_code, e.error?.split(':')[0]]]))
    assert.deepEqual(failed.get('broken'), [503, 'UNEXPECTED_STATUS'])
    assert.deepEqual(failed.get('deep-health'), [200, 'BODY_MISMATCH'])
    assert.ok(monitoring.endpoints!.slice(0, monitoring.failing).every((e) => e.success === false), 'failing ones first')
    const {stdout} = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath, '-n', namespace])
    assert.match(stdout, /Monitoring agent:\s+1000 endpoints assigned, \d+ up, \d+ failing; \d+ results buffered, 0 dropped; last report \S+ ago/)
    assert.match(stdout, /broken\s+http\s+failed\s+\S+ ago\s+\d+ms\s+503\s+\d+\s+UNEXPECTED_STATUS: status 503 is not accepted/)

    // /metrics: probe series per endpoint, promtool clean (but prom-client's own nodejs_active_*_total names).
    const text = await (await fetch(running.metricsUrl)).text()
    const families = parsePromText(text)
    const probe = (name: string, endpointName: string) => families.get(name)?.samples.find((s) => s.labels.endpoint === endpointName && s.labels.organization === 'acme-corp')
    assert.ok(families.get('probe_success')!.samples.filter((s) => s.value === 1).length >= 990, 'the sites are up')
    assert.equal(probe('probe_success', 'broken')?.value, 0)
    assert.equal(probe('probe_http_status_code', 'broken')?.value, 503)
    assert.ok(probe('probe_duration_seconds', 'site-0')!.value > 0)
    assert.equal(families.get('probe_success')!.samples.length, 1000)
    const promtool = await execa('promtool', ['check', 'metrics'], {input: text, reject: false})
    const complaints = `${promtool.stdout}\n${promtool.stderr}`.split('\n').filter((line) => line.trim().length > 0)
    const ours = complaints.filter((line) => !/^nodejs_active_(handles|requests|resources)_total non-counter/.test(line))
    assert.deepEqual(ours, [], `promtool check metrics: ${complaints.join('\n')}`)

    // Unassigned → its series go at the next fetch (every check_interval_seconds).
    sim.update('endpoints', String(broken.id), {archived: true})
    await eventually(async () => {
      const now = parsePromText(await (await fetch(running.metricsUrl)).text())
      return now.get('probe_success')!.samples.length === 999 && !now.get('probe_success')!.samples.some((s) => s.labels.endpoint === 'broken')
    }, 30_000, 'the archived endpoint\'s series removed')

    // Disabled: the agent finishes its checks, reports them and gives its summary up. Then every check the target
    // saw is one stored result, none twice.
    await client.mergePatch(configRef(namespace), {spec: {agent: {enabled: false}}})
    await eventually(async () => (await client.get<OperatorConfigObject>(configRef(namespace))).status?.monitoring === undefined, 60_000, 'status.monitoring given up')
    await eventually(async () => !parsePromText(await (await fetch(running.metricsUrl)).text()).get('probe_success')?.samples.length, 30_000, 'probe series gone')
    const seenCount = seen.length
    // Long enough for any check still scheduled to be due (one check interval), and the operator demonstrably alive
    // all along: it heartbeats at the start and past the end of that interval. (A hung or exited process would pass
    // a bare sleep.)
    const givenUpAt = Date.now()
    await eventually(async () => {
      const heartbeats = sim.requests.filter((r) => r.method === 'POST' && r.resource === 'agent/health' && r.at >= givenUpAt).map((r) => r.at)
      return heartbeats.length >= 2 && Math.max(...heartbeats) >= givenUpAt + 10_000
    }, 30_000, 'heartbeats through a full check interval after the agent was disabled')
    assert.equal(seen.length, seenCount, 'no check after the agent was disabled')
    const stored = sim.list('check-results')
    assert.equal(sim.monitoring.duplicateResults, 0, 'no result reported twice')
    assert.equal(new Set(stored.map((r) => `${String(r.endpoint_id)}@${String(r.checked_at)}`)).size, stored.length)
    assert.equal(stored.length, seen.length, 'every check the target saw was reported exactly once')
  })
})
