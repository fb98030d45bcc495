/**
 * The checks against real servers on loopback started here: every result field compared with what the server did.
 */
import assert from 'node:assert/strict'
import {createServer, type AddressInfo} from 'node:net'
import {constants} from 'node:os'
import {runCheck} from '../../../src/operator/monitoring/agent.js'
import type {PingRunner} from '../../../src/operator/monitoring/icmp-check.js'
import {checkPlan, type AgentConfig, type RawAgentEndpoint} from '../../../src/operator/monitoring/plan.js'
import {
  BIG_BODY_BYTES,
  closedPort,
  HEALTHY_BODY,
  makeCerts,
  startDnsTarget,
  startHttpsTarget,
  startHttpTarget,
  startTcpTarget,
  type SeenRequest,
  type Target,
  type TestCerts,
} from '../../support/monitoring-targets.js'
import {agentConfig} from '../../support/helpers.js'

let counter = 0
function endpoint(kind: RawAgentEndpoint['kind'], port: number | null, spec: Record<string, unknown>, extra: Partial<RawAgentEndpoint> = {}): RawAgentEndpoint {
  counter++
  return {id: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`, name: `ep-${counter}`, kind, remote_address: '127.0.0.1', remote_port: port, organization: {id: 'o1', name: 'acme-corp'}, spec: {[kind]: spec}, ...extra}
}

const check = (ep: RawAgentEndpoint, options: Parameters<typeof runCheck>[1] = {}, agent?: AgentConfig) => runCheck(checkPlan(ep, agent ?? agentConfig()), options)
const DAY = 24 * 60 * 60 * 1000

describe('monitoring checks: HTTP against a local server', () => {
  let target: Target
  const seen: SeenRequest[] = []
  before(async () => { target = await startHttpTarget(seen) })
  after(async () => target.close())
  beforeEach(() => { seen.length = 0 })

  it('every check and every redirect hop opens a connection of its own and closes it (no keep-alive)', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await check(endpoint('http', target.port, {path: '/ok'}))).result.success, true)
    await check(endpoint('http', target.port, {path: '/redirect/2'}))
    assert.equal(seen.length, 6)
    assert.equal(new Set(seen.map((r) => r.clientPort)).size, 6, 'six requests, six connections')
    assert.ok(seen.every((r) => r.connection === 'close'), JSON.stringify(seen.map((r) => r.connection)))
  })

  it('a healthy endpoint: success, status, size, phases, resolved IP, no TLS fields, the defaults user agent', async () => {
    const before = Date.now()
    const {result, phases} = await check(endpoint('http', target.port, {path: '/ok'}))
    assert.equal(result.success, true)
    assert.equal(result.status_code, 200)
    assert.equal(result.error_code, 0)
    assert.equal(result.error_name, '')
    assert.equal(result.http_error_category, null)
    assert.equal(result.http_response_size_bytes, Buffer.byteLength(HEALTHY_BODY))
    assert.equal(result.resolved_ip, '127.0.0.1')
    assert.equal(result.http_resolved_ip, '127.0.0.1')
    assert.equal(result.http_dns_lookup_ms, 0, 'an IP address needs no lookup')
    assert.ok((result.http_tcp_connect_ms as number) >= 0)
    assert.ok((result.http_time_to_first_byte_ms as number) >= (result.http_tcp_connect_ms as number))
    assert.ok((result.duration_ms as number) >= (result.http_time_to_first_byte_ms as number))
    assert.equal(result.http_tls_handshake_ms, null)
    assert.equal(result.http_tls_version, null)
    assert.equal(result.ssl_cert_not_after, null)
    assert.ok(Date.parse(result.checked_at as string) >= before - 1)
    assert.deepEqual(Object.keys(phases).sort(), ['connect', 'processing', 'resolve', 'tls', 'transfer'])
    assert.deepEqual(seen.map((r) => [r.method, r.path, r.userAgent]), [['GET', '/ok', 'Polycrate-Operator-Agent/1.0']])
  })

  it('a host name is resolved (DNS phase measured) and sent as Host', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/ok'}, {remote_address: 'localhost'}))
    assert.equal(result.success, true)
    assert.ok(['127.0.0.1', '::1'].includes(result.resolved_ip as string))
    assert.ok((result.http_dns_lookup_ms as number) > 0)
  })

  it('method, path, user agent and referer of the spec are sent; the agent default user agent applies otherwise', async () => {
    await check(endpoint('http', target.port, {path: 'echo', method: 'head', user_agent: 'probe/2', referer: 'https://ref.example/'}))
    const {method, path, userAgent, referer} = seen.at(-1)!
    assert.deepEqual({method, path, userAgent, referer}, {method: 'HEAD', path: '/echo', userAgent: 'probe/2', referer: 'https://ref.example/'})
    await check(endpoint('http', target.port, {path: '/echo'}), {}, agentConfig({http_check_defaults: {user_agent: 'custom-agent/9'}}))
    assert.equal(seen.at(-1)?.userAgent, 'custom-agent/9')
  })

  it('wrong status: a response failure with the status and its code', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/status/503'}))
    assert.equal(result.success, false)
    assert.equal(result.status_code, 503)
    assert.equal(result.http_error_category, 'response')
    assert.equal(result.error_name, 'UNEXPECTED_STATUS')
    assert.equal(result.error_code, 503)
  })

  it('accepted_status_codes, bad_status_codes and expected_status_code decide the verdict', async () => {
    assert.equal((await check(endpoint('http', target.port, {path: '/status/404', expected_status_code: 404}))).result.success, true)
    assert.equal((await check(endpoint('http', target.port, {path: '/status/301', follow_redirect: false, accepted_status_codes: [200, 301]}))).result.success, true)
    assert.equal((await check(endpoint('http', target.port, {path: '/ok', accepted_status_codes: [200], bad_status_codes: [200]}))).result.success, false)
  })

  it('expected body present → success; absent → a response failure (Example 4)', async () => {
    const present = await check(endpoint('http', target.port, {path: '/ok'}, {annotations: {'endpoints.polycrate.io/expected-body': '"database":"connected"'}}))
    assert.equal(present.result.success, true)
    const absent = await check(endpoint('http', target.port, {path: '/degraded'}, {annotations: {'endpoints.polycrate.io/expected-body': '"database":"connected"'}}))
    assert.equal(absent.result.success, false)
    assert.equal(absent.result.status_code, 200)
    assert.equal(absent.result.error_name, 'BODY_MISMATCH')
    assert.equal(absent.result.http_error_category, 'response')
  })

  it('redirects within max_redirects are followed to the final answer', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/redirect/3', max_redirects: 3}))
    assert.equal(result.success, true)
    assert.equal(result.status_code, 200)
    assert.deepEqual(seen.map((r) => r.path), ['/redirect/3', '/redirect/2', '/redirect/1', '/ok'])
  })

  it('redirects beyond max_redirects fail; the agent default (5) applies when the spec has none', async () => {
    const beyond = await check(endpoint('http', target.port, {path: '/redirect/3', max_redirects: 2}))
    assert.equal(beyond.result.success, false)
    assert.equal(beyond.result.error_name, 'TOO_MANY_REDIRECTS')
    assert.equal(beyond.result.http_error_category, 'response')
    assert.equal(beyond.result.status_code, 302)
    assert.equal(seen.length, 3, 'the third redirect is not followed')
    seen.length = 0
    assert.equal((await check(endpoint('http', target.port, {path: '/redirect/5'}))).result.success, true)
    assert.equal((await check(endpoint('http', target.port, {path: '/redirect/6'}))).result.error_name, 'TOO_MANY_REDIRECTS')
    assert.equal((await check(endpoint('http', target.port, {path: '/redirect/6'}), {}, agentConfig({http_check_defaults: {max_redirects: 6}}))).result.success, true)
  })

  it('follow_redirect false (or the agent default false) judges the 302 itself', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/redirect/1', follow_redirect: false}))
    assert.equal(result.status_code, 302)
    assert.equal(result.success, false)
    assert.equal(seen.length, 1)
    const viaDefault = await check(endpoint('http', target.port, {path: '/redirect/1', expected_status_code: 302}), {}, agentConfig({http_check_defaults: {follow_redirects: false}}))
    assert.equal(viaDefault.result.success, true)
  })

  it('a slow response hits the timeout: timeout category, no status', async () => {
    const started = Date.now()
    const {result} = await check(endpoint('http', target.port, {path: '/slow/3000', timeout: 0.5}))
    assert.equal(result.success, false)
    assert.equal(result.http_error_category, 'timeout')
    assert.equal(result.error_name, 'TIMEOUT')
    assert.equal(result.status_code, null)
    assert.ok(Date.now() - started < 2500, 'the check gave up at its timeout')
    assert.ok((result.duration_ms as number) >= 450)
  })

  it('the agent default timeout (http_check_defaults.timeout_seconds) applies when the spec has none', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/slow/2500'}), {}, agentConfig({http_check_defaults: {timeout_seconds: 1}}))
    assert.equal(result.http_error_category, 'timeout')
    assert.ok((result.duration_ms as number) < 2000)
  })

  it('a reset connection: connection category, ECONNRESET', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/reset'}))
    assert.equal(result.success, false)
    assert.equal(result.http_error_category, 'connection')
    assert.equal(result.error_name, 'ECONNRESET')
    assert.equal(result.error_code, constants.errno.ECONNRESET)
  })

  it('a refused connection and an unknown host have their categories', async () => {
    const refused = await check(endpoint('http', await closedPort(), {path: '/'}))
    assert.equal(refused.result.http_error_category, 'connection')
    assert.equal(refused.result.error_name, 'ECONNREFUSED')
    const unknown = await check(endpoint('http', 80, {}, {remote_address: 'no-such-host.invalid'}))
    assert.equal(unknown.result.http_error_category, 'dns')
    assert.equal(unknown.result.error_name, 'ENOTFOUND')
  })

  it('the response size counts every byte', async () => {
    const {result} = await check(endpoint('http', target.port, {path: '/big'}))
    assert.equal(result.http_response_size_bytes, BIG_BODY_BYTES)
  })

  it('an unusable spec is a configuration error, not a crash', async () => {
    const {result} = await check(endpoint('http', target.port, {method: 'BREW'}))
    assert.equal(result.success, false)
    assert.equal(result.http_error_category, 'configuration')
    assert.equal(result.error_name, 'INVALID_SPEC')
  })
})

describe('monitoring checks: HTTPS certificates', function () {
  this.timeout(60_000)
  let certs: TestCerts
  const targets: Target[] = []
  before(async () => { certs = await makeCerts() })
  after(async () => { for (const t of targets) await t.close() })
  const serve = async (pair: {key: string; cert: string}) => {
    const target = await startHttpsTarget(pair)
    targets.push(target)
    return target
  }

  it('every check does a full TLS handshake: no session is resumed', async () => {
    const seen: SeenRequest[] = []
    const target = await startHttpsTarget(certs.valid, seen)
    targets.push(target)
    for (let i = 0; i < 3; i++) {
      const {result} = await check(endpoint('http', target.port, {path: '/ok', tls: true}), {ca: [certs.ca]})
      assert.equal(result.success, true)
      assert.ok((result.http_tls_handshake_ms as number) > 0)
    }
    assert.deepEqual(seen.map((r) => r.sessionReused), [false, false, false])
    assert.equal(new Set(seen.map((r) => r.clientPort)).size, 3)
  })

  it('a certificate of a trusted CA: valid, TLS version, issuer, subject, expiry', async () => {
    const target = await serve(certs.valid)
    const checkedAt = Date.now()
    const {result, phases} = await check(endpoint('http', target.port, {path: '/ok', tls: true}), {ca: [certs.ca]})
    assert.equal(result.success, true)
    assert.equal(result.http_tls_valid, true)
    assert.match(result.http_tls_version as string, /^TLSv1\.[23]$/)
    assert.equal(result.http_tls_issuer, 'O=Monitoring Tests, CN=Test CA')
    assert.equal(result.http_tls_subject, 'CN=localhost')
    assert.equal(result.http_tls_days_until_expiry, Math.floor((certs.valid.notAfter - checkedAt) / DAY))
    // The CA (30 days) expires after the server certificate (20 days) but only the server's certificate is sent.
    assert.equal(result.ssl_cert_not_after, new Date(Math.floor(certs.valid.notAfter / 1000) * 1000).toISOString())
    assert.ok((result.http_tls_handshake_ms as number) > 0)
    assert.ok(phases.tls! > 0)
  })

  it('self-signed: fails unless ignore_tls_errors, and is reported invalid either way', async () => {
    const target = await serve(certs.selfSigned)
    const strict = await check(endpoint('http', target.port, {path: '/ok', tls: true}))
    assert.equal(strict.result.success, false)
    assert.equal(strict.result.http_tls_valid, false)
    assert.equal(strict.result.http_error_category, 'connection')
    assert.equal(strict.result.error_name, 'DEPTH_ZERO_SELF_SIGNED_CERT')
    assert.equal(strict.result.status_code, null, 'no request is sent over an untrusted connection')
    assert.equal(strict.result.http_tls_subject, 'CN=localhost')
    const lenient = await check(endpoint('http', target.port, {path: '/ok', tls: true, ignore_tls_errors: true}))
    assert.equal(lenient.result.success, true)
    assert.equal(lenient.result.http_tls_valid, false)
    assert.equal(lenient.result.status_code, 200)
    assert.equal(lenient.result.http_tls_issuer, 'CN=localhost')
  })

  it('expired: CERT_HAS_EXPIRED, negative days until expiry', async () => {
    const target = await serve(certs.expired)
    const checkedAt = Date.now()
    const {result} = await check(endpoint('http', target.port, {path: '/ok', tls: true}), {ca: [certs.ca]})
    assert.equal(result.success, false)
    assert.equal(result.error_name, 'CERT_HAS_EXPIRED')
    assert.equal(result.http_tls_valid, false)
    assert.equal(result.http_tls_days_until_expiry, Math.floor((certs.expired.notAfter - checkedAt) / DAY))
    assert.ok((result.http_tls_days_until_expiry as number) <= -10)
  })

  it('expiring in 5 days: still valid and successful, 5 days until expiry', async () => {
    const target = await serve(certs.expiresIn5Days)
    const {result} = await check(endpoint('http', target.port, {path: '/ok', tls: true}), {ca: [certs.ca]})
    assert.equal(result.success, true)
    assert.equal(result.http_tls_valid, true)
    assert.equal(result.http_tls_days_until_expiry, 5)
    assert.equal(Date.parse(result.ssl_cert_not_after as string), Math.floor(certs.expiresIn5Days.notAfter / 1000) * 1000)
  })
})

describe('monitoring checks: TCP', () => {
  let target: Target
  before(async () => { target = await startTcpTarget('SSH-2.0-TestServer_1.0\r\n') })
  after(async () => target.close())

  it('connects and reads the banner; expected_response matched', async () => {
    const {result} = await check(endpoint('tcp', target.port, {expected_response: 'SSH-2.0'}))
    assert.equal(result.success, true)
    assert.equal(result.tcp_connected, true)
    assert.equal(result.tcp_banner, 'SSH-2.0-TestServer_1.0')
    assert.equal(result.tcp_response_matched, true)
    assert.equal(result.error_name, '')
  })

  it('send_string is sent and its answer matched', async () => {
    const {result} = await check(endpoint('tcp', target.port, {send_string: 'PING\r\n', expected_response: 'PONG'}))
    assert.equal(result.success, true)
    assert.match(result.tcp_banner as string, /PONG/)
  })

  it('a banner without the expected text: response failure within the timeout', async () => {
    const {result} = await check(endpoint('tcp', target.port, {expected_response: 'SMTP', timeout: 0.5}))
    assert.equal(result.success, false)
    assert.equal(result.tcp_connected, true)
    assert.equal(result.tcp_response_matched, false)
    assert.equal(result.tcp_banner, 'SSH-2.0-TestServer_1.0')
    assert.equal(result.http_error_category, 'response')
    assert.equal(result.error_name, 'RESPONSE_MISMATCH')
  })

  it('a character split across two TCP segments is read whole: the expected response matches, the banner has no U+FFFD', async () => {
    const text = Buffer.from('220 Grüße ✓ bereit\r\n')
    const cut = text.indexOf(Buffer.from('✓')) + 1 // inside the three bytes of ✓
    const server = createServer((socket) => {
      socket.setNoDelay(true)
      socket.write(text.subarray(0, cut))
      setTimeout(() => socket.write(text.subarray(cut)), 50)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const {result} = await check(endpoint('tcp', (server.address() as AddressInfo).port, {expected_response: 'Grüße ✓ bereit'}))
      assert.equal(result.success, true)
      assert.equal(result.tcp_response_matched, true)
      assert.equal(result.tcp_banner, '220 Grüße ✓ bereit')
    } finally {
      server.close()
    }
  })

  it('no expected response: connected is enough', async () => {
    const {result} = await check(endpoint('tcp', target.port, {}))
    assert.equal(result.success, true)
    assert.equal(result.tcp_response_matched, null)
  })

  it('refused: not connected, connection category', async () => {
    const {result} = await check(endpoint('tcp', await closedPort(), {}))
    assert.equal(result.success, false)
    assert.equal(result.tcp_connected, false)
    assert.equal(result.http_error_category, 'connection')
    assert.equal(result.error_name, 'ECONNREFUSED')
  })
})

describe('monitoring checks: DNS against a local UDP responder', () => {
  let target: Target
  const queries: Array<{name: string; type: number}> = []
  before(async () => {
    target = await startDnsTarget({'svc.test': {A: ['10.1.2.3', '10.1.2.4'], TXT: ['v=spf1 -all']}}, queries)
  })
  after(async () => target.close())

  it('A records, rcode, expected results matched, query type and protocol', async () => {
    const {result} = await check(endpoint('dns', target.port, {record_name: 'svc.test', record_type: 'A', expected_results: ['10.1.2.4']}))
    assert.deepEqual(queries.at(-1), {name: 'svc.test', type: 1})
    assert.equal(result.success, true)
    assert.equal(result.dns_rcode, 'NOERROR')
    assert.deepEqual(result.dns_records, ['10.1.2.3', '10.1.2.4'])
    assert.equal(result.dns_matched, true)
    assert.equal(result.dns_record_type, 'A')
    assert.equal(result.dns_protocol, 'udp')
    assert.ok((result.dns_query_time_ms as number) >= 0)
    assert.equal(result.resolved_ip, '127.0.0.1')
  })

  it('TXT records', async () => {
    const {result} = await check(endpoint('dns', target.port, {record_name: 'svc.test', record_type: 'TXT'}))
    assert.deepEqual(queries.at(-1), {name: 'svc.test', type: 16})
    assert.deepEqual(result.dns_records, ['v=spf1 -all'])
    assert.equal(result.dns_matched, null)
    assert.equal(result.success, true)
  })

  it('an expected result missing: not matched, response failure', async () => {
    const {result} = await check(endpoint('dns', target.port, {record_name: 'svc.test', expected_results: ['10.9.9.9']}))
    assert.equal(result.success, false)
    assert.equal(result.dns_matched, false)
    assert.equal(result.error_name, 'RESULT_MISMATCH')
  })

  it('NXDOMAIN fails unless it is the expected rcode', async () => {
    const nx = await check(endpoint('dns', target.port, {record_name: 'missing.test'}))
    assert.equal(nx.result.success, false)
    assert.equal(nx.result.dns_rcode, 'NXDOMAIN')
    assert.equal(nx.result.http_error_category, 'dns')
    const wanted = await check(endpoint('dns', target.port, {record_name: 'missing.test', expected_rcode: 'nxdomain'}))
    assert.equal(wanted.result.success, true)
  })

  it('no answer: timeout', async () => {
    const {result} = await check(endpoint('dns', target.port, {record_name: 'drop.svc.test', timeout: 0.3}))
    assert.equal(result.success, false)
    assert.equal(result.http_error_category, 'timeout')
    assert.equal(result.dns_rcode, null)
  })
})

describe('monitoring checks: ICMP', () => {
  const summary = [
    'PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.',
    '64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.050 ms',
    '',
    '--- 127.0.0.1 ping statistics ---',
    '3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms',
    'rtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms',
  ].join('\n')

  it('reads loss and RTT min/avg/max from ping and passes ttl, timeout and interval', async () => {
    let args: string[] = []
    const ping: PingRunner = async (a) => { args = a; return {exitCode: 0, stdout: summary, stderr: '', failed: false} }
    const {result} = await check(endpoint('icmp', null, {ttl: 32, timeout: 2, interval: 0.5}), {ping})
    assert.deepEqual(args, ['-n', '-c', '3', '-i', '0.5', '-W', '2', '-t', '32', '127.0.0.1'])
    assert.equal(result.success, true)
    assert.equal(result.icmp_packets_sent, 3)
    assert.equal(result.icmp_packets_received, 2)
    assert.equal(result.icmp_packet_loss_percent, 33.3333)
    assert.equal(result.icmp_min_rtt_ms, 0.04)
    assert.equal(result.icmp_rtt_ms, 0.05)
    assert.equal(result.icmp_max_rtt_ms, 0.06)
    assert.equal(result.resolved_ip, '127.0.0.1')
  })

  it('without NET_RAW, without ping, or with icmp_enabled false: a configuration error', async () => {
    const denied: PingRunner = async () => ({exitCode: 2, stdout: '', stderr: 'ping: socket: Operation not permitted', failed: true})
    const noNetRaw = await check(endpoint('icmp', null, {}), {ping: denied})
    assert.equal(noNetRaw.result.http_error_category, 'configuration')
    assert.equal(noNetRaw.result.error_name, 'NO_NET_RAW')
    assert.match(noNetRaw.message!, /NET_RAW/)
    const missing: PingRunner = async () => ({stdout: '', stderr: '', failed: true, code: 'ENOENT'})
    assert.equal((await check(endpoint('icmp', null, {}), {ping: missing})).result.error_name, 'PING_MISSING')
    let called = false
    const spy: PingRunner = async () => { called = true; return {exitCode: 0, stdout: summary, stderr: '', failed: false} }
    const disabled = await check(endpoint('icmp', null, {}), {ping: spy}, agentConfig({icmp_enabled: false}))
    assert.equal(disabled.result.http_error_category, 'configuration')
    assert.equal(disabled.result.error_name, 'ICMP_DISABLED')
    assert.equal(called, false)
  })

  it('the system ping against loopback, when it may ping here', async function () {
    const {result, message} = await check(endpoint('icmp', null, {interval: 0.2}))
    if (result.error_name === 'PING_MISSING' || result.error_name === 'NO_NET_RAW') this.skip()
    assert.equal(result.success, true, message)
    assert.equal(result.icmp_packets_sent, 3)
    assert.equal(result.icmp_packets_received, 3)
    assert.equal(result.icmp_packet_loss_percent, 0)
    assert.ok((result.icmp_min_rtt_ms as number) <= (result.icmp_max_rtt_ms as number))
  })
})
