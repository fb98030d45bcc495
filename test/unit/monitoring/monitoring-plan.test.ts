import assert from 'node:assert/strict'
import {checkPlan, statusAccepted, type RawAgentEndpoint} from '../../../src/operator/monitoring/plan.js'
import {monitoringStatus} from '../../../src/operator/monitoring/status.js'
import {decodeAnswer, encodeQuery} from '../../../src/operator/monitoring/dns-check.js'
import {parsePing} from '../../../src/operator/monitoring/icmp-check.js'
import {classify} from '../../../src/operator/monitoring/result.js'
import {operatorAgentId} from '../../../src/operator/agent/agent-id.js'
import type {AgentSnapshot, EndpointState} from '../../../src/operator/monitoring/agent.js'
import {agentConfig} from '../../support/helpers.js'

const base: RawAgentEndpoint = {id: 'e1', name: 'shop', kind: 'http', remote_address: 'shop.example.com', remote_port: 443, organization: {id: 'o1', name: 'acme-corp'}}

describe('monitoring plan: AgentEndpoint + agent config → check settings', () => {
  it('the agent section defaults are the block README\'s', () => {
    const agent = agentConfig({enabled: undefined})
    assert.equal(agent.enabled, false)
    assert.equal(agent.agent_id_prefix, 'polycrate')
    assert.equal(agent.check_interval_seconds, 60)
    assert.equal(agent.icmp_enabled, true)
    assert.deepEqual(agent.http_check_defaults, {timeout_seconds: 10, follow_redirects: true, max_redirects: 5, user_agent: 'Polycrate-Operator-Agent/1.0'})
    assert.equal(agent.max_concurrent_checks, 100)
    assert.equal(agent.result_buffer_size, 20000)
  })

  const cases: Array<{name: string; endpoint: Partial<RawAgentEndpoint>; agent?: Record<string, unknown>; expect: Record<string, unknown>; intervalMs?: number}> = [
    {name: 'no spec: http defaults of the agent, port from remote_port, interval from check_interval_seconds', endpoint: {spec: null},
      expect: {kind: 'http', scheme: 'http', port: 443, path: '/', method: 'GET', timeoutMs: 10_000, followRedirects: true, maxRedirects: 5, userAgent: 'Polycrate-Operator-Agent/1.0', expectedStatusCode: 200, ignoreTlsErrors: false}, intervalMs: 60_000},
    {name: 'spec.http wins over the agent defaults', endpoint: {spec: {http: {tls: true, path: 'health', timeout: 3, interval: 15, method: 'post', follow_redirect: false, max_redirects: 1, user_agent: 'x/1', referer: 'r', expected_status_code: 204, accepted_status_codes: [204, 205], bad_status_codes: [500], ignore_tls_errors: true}}},
      expect: {scheme: 'https', path: '/health', timeoutMs: 3000, method: 'POST', followRedirects: false, maxRedirects: 1, userAgent: 'x/1', referer: 'r', expectedStatusCode: 204, acceptedStatusCodes: [204, 205], badStatusCodes: [500], ignoreTlsErrors: true}, intervalMs: 15_000},
    {name: 'agent http_check_defaults apply where the spec is silent', endpoint: {spec: {http: {path: '/'}}}, agent: {check_interval_seconds: 30, http_check_defaults: {timeout_seconds: 5, follow_redirects: false, max_redirects: 2, user_agent: 'mine'}},
      expect: {timeoutMs: 5000, followRedirects: false, maxRedirects: 2, userAgent: 'mine'}, intervalMs: 30_000},
    {name: 'no port: 443 with TLS, 80 without', endpoint: {remote_port: null, spec: {http: {tls: true}}}, expect: {port: 443}},
    {name: 'expected body from the annotations (Example 4)', endpoint: {annotations: {'endpoints.polycrate.io/expected-body': '"database":"connected"'}}, expect: {expectedBody: '"database":"connected"'}},
    {name: 'an unsupported method is a configuration problem', endpoint: {spec: {http: {method: 'BREW'}}}, expect: {kind: 'invalid'}},
    {name: 'tcp without a port is a configuration problem', endpoint: {kind: 'tcp', remote_port: null}, expect: {kind: 'invalid'}},
    {name: 'tcp', endpoint: {kind: 'tcp', remote_port: 22, spec: {tcp: {expected_response: 'SSH', send_string: '', timeout: 2, interval: 20}}}, expect: {kind: 'tcp', port: 22, expectedResponse: 'SSH', timeoutMs: 2000}, intervalMs: 20_000},
    {name: 'dns: server is remote_address:53, record_name queried', endpoint: {kind: 'dns', remote_address: '1.1.1.1', remote_port: null, spec: {dns: {record_name: 'example.com', record_type: 'aaaa', expected_rcode: 'noerror'}}},
      expect: {kind: 'dns', server: '1.1.1.1', port: 53, name: 'example.com', recordType: 'AAAA', protocol: 'udp', timeoutMs: 10_000, expectedRcode: 'NOERROR'}},
    {name: 'dns over TLS is not supported: configuration', endpoint: {kind: 'dns', spec: {dns: {tls_enabled: true}}}, expect: {kind: 'invalid'}},
    {name: 'icmp: icmp_enabled carried, the agent interval', endpoint: {kind: 'icmp', spec: {icmp: {ttl: 10, timeout: 2}}}, agent: {icmp_enabled: false}, expect: {kind: 'icmp', ttl: 10, timeoutMs: 2000, enabled: false, count: 3}, intervalMs: 60_000},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const plan = checkPlan({...base, ...c.endpoint}, agentConfig(c.agent))
      for (const [key, value] of Object.entries(c.expect)) assert.deepEqual((plan.settings as unknown as Record<string, unknown>)[key], value, key)
      if (c.intervalMs !== undefined) assert.equal(plan.intervalMs, c.intervalMs)
      assert.equal(plan.organization, 'acme-corp')
    })
  }

  it('status verdict: bad codes fail, an accepted list decides, else the expected code', () => {
    const plan = {expectedStatusCode: 200, acceptedStatusCodes: [] as number[], badStatusCodes: [] as number[]}
    assert.equal(statusAccepted(plan, 200), true)
    assert.equal(statusAccepted(plan, 201), false)
    assert.equal(statusAccepted({...plan, acceptedStatusCodes: [201, 301]}, 301), true)
    assert.equal(statusAccepted({...plan, acceptedStatusCodes: [201, 301]}, 200), false)
    assert.equal(statusAccepted({...plan, badStatusCodes: [200]}, 200), false)
  })
})

describe('monitoring wire formats and error classes', () => {
  it('DNS query encoding and answer decoding (compression, A, TXT, MX, rcode)', async () => {
    const query = await encodeQuery(0x1234, 'example.com', 'MX')
    assert.equal(query.toString('hex'), '123401000001000000000000076578616d706c6503636f6d00000f0001')
    const answer = Buffer.concat([
      Buffer.from('1234818300010002', 'hex'), Buffer.from('00000000', 'hex'), query.subarray(12),
      Buffer.from('c00c000f00010000012c0009000a046d61696cc00c', 'hex'),
      Buffer.from('c00c0001000100000e1000040a000001', 'hex'),
    ])
    assert.deepEqual(await decodeAnswer(answer), {id: 0x1234, rcode: 'NXDOMAIN', records: [
      {name: 'example.com', type: 'MX', ttl: 300, data: '10 mail.example.com'},
      {name: 'example.com', type: 'A', ttl: 3600, data: '10.0.0.1'},
    ]})
    await assert.rejects(decodeAnswer(answer.subarray(0, answer.length - 2)), /malformed/)
  })

  it('ping summaries of iputils and busybox', () => {
    assert.deepEqual(parsePing('5 packets transmitted, 0 received, 100% packet loss, time 4090ms\n'), {sent: 5, received: 0, lossPercent: 100})
    assert.deepEqual(parsePing('3 packets transmitted, 3 packets received, 0% packet loss\nround-trip min/avg/max = 0.1/0.2/0.3 ms'), {sent: 3, received: 3, lossPercent: 0, min: 0.1, avg: 0.2, max: 0.3})
    assert.equal(parsePing('ping: unknown host'), undefined)
  })

  it('error codes → categories', () => {
    const table: Array<[string, string]> = [['ENOTFOUND', 'dns'], ['EAI_AGAIN', 'dns'], ['ECONNREFUSED', 'connection'], ['ECONNRESET', 'connection'], ['EHOSTUNREACH', 'network'], ['ENETUNREACH', 'network'], ['ETIMEDOUT', 'timeout'], ['HPE_INVALID_CONSTANT', 'response'], ['EWHATEVER', 'other']]
    for (const [code, category] of table) assert.equal(classify(Object.assign(new Error(code), {code})).category, category, code)
  })
})

describe('monitoring status summary', () => {
  it('counts, failing first, at most 100 entries, error text', () => {
    const endpoints = new Map<string, EndpointState>()
    for (let i = 0; i < 150; i++) {
      endpoints.set(`id-${i}`, {name: `ep-${String(i).padStart(3, '0')}`, kind: 'http', consecutiveFailures: 0, lastResult: {endpoint_id: `id-${i}`, success: true, checked_at: '2026-03-01T12:00:00.000Z', duration_ms: 12, status_code: 200}})
    }
    endpoints.set('bad', {name: 'zz-bad', kind: 'http', consecutiveFailures: 3, message: 'status 503 is not accepted', lastResult: {endpoint_id: 'bad', success: false, error_name: 'UNEXPECTED_STATUS', status_code: 503, checked_at: '2026-03-01T12:00:00.000Z', duration_ms: 5}})
    endpoints.set('new', {name: 'new-one', kind: 'tcp', consecutiveFailures: 0})
    const snapshot: AgentSnapshot = {reportedAgentId: 'polycrate-operator-x', assigned: 152, endpoints, buffered: 7, dropped: 2, lastFetchAt: Date.parse('2026-03-01T12:00:00Z'), totalChecks: 151, reportError: 'Cannot reach'}
    const status = monitoringStatus(snapshot)
    assert.equal(status.assigned_endpoints, 152)
    assert.equal(status.succeeding, 150)
    assert.equal(status.failing, 1)
    assert.equal(status.buffered_results, 7)
    assert.equal(status.dropped_results, 2)
    assert.equal(status.last_fetch_at, '2026-03-01T12:00:00.000Z')
    assert.equal(status.last_report_at, undefined)
    assert.match(status.message!, /Cannot report check results: Cannot reach/)
    assert.equal(status.endpoints!.length, 100)
    assert.deepEqual(status.endpoints![0], {id: 'bad', name: 'zz-bad', kind: 'http', success: false, checked_at: '2026-03-01T12:00:00.000Z', duration_ms: 5, status_code: 503, error: 'UNEXPECTED_STATUS: status 503 is not accepted', consecutive_failures: 3})
    assert.deepEqual(status.endpoints![1], {id: 'new', name: 'new-one', kind: 'tcp'})
    assert.equal(status.endpoints![2]!.name, 'ep-000')
  })
})

describe('the operator\'s agent id', () => {
  it('is <agent_id_prefix>-operator-<kube-system uid>, with the fallback when kube-system cannot be read', async () => {
    const reads: unknown[] = []
    const client = {getOrUndefined: async (ref: unknown) => { reads.push(ref); return {metadata: {name: 'kube-system', uid: 'uid-123'}} }}
    assert.equal(await operatorAgentId(client as never, 'acme', () => 'unused'), 'acme-operator-uid-123')
    assert.deepEqual(reads, [{group: '', version: 'v1', plural: 'namespaces', name: 'kube-system'}])
    const forbidden = {getOrUndefined: async () => { throw new Error('403') }}
    assert.equal(await operatorAgentId(forbidden as never, 'polycrate', async () => 'config-uid'), 'polycrate-operator-config-uid')
  })
})
