import assert from 'node:assert/strict'
import {createServer, type Socket} from 'node:net'
import {runCommand} from '@oclif/test'
import {startProbeServer, type CheckResult, type RunningHttpServer} from '../../src/operator/runtime/http-servers.js'
import {freePort} from '../support/control-plane.js'

describe('polycrate operator health', () => {
  let server: RunningHttpServer
  let url: string
  let healthz: CheckResult
  let readyz: CheckResult

  before(async () => {
    const started = await startProbeServer({
      bindAddress: '127.0.0.1:0',
      checks: {healthz: () => healthz, readyz: () => readyz},
    })
    assert.ok(started)
    server = started
    url = `http://127.0.0.1:${server.address.port}`
  })
  after(() => server.close())
  beforeEach(() => {
    healthz = {ok: true, checks: {ping: {ok: true}, 'event-loop': {ok: true}}}
    readyz = {ok: true, checks: {caches: {ok: true}, leader: {ok: true}}}
  })

  it('a healthy operator: both lines ok, exit 0', async () => {
    const {stdout, error} = await runCommand(['operator', 'health', '--url', url])
    assert.equal(error, undefined)
    assert.equal(stdout, `Operator at ${url}\n  liveness   ok\n  readiness  ok\n`)
  })

  it('readiness failing: prints the failing check and its reason, exit 1', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}}
    const {stdout, error} = await runCommand(['operator', 'health', '--url', url])
    assert.equal(error?.oclif?.exit, 1)
    assert.equal(stdout, `Operator at ${url}\n  liveness   ok\n  readiness  failed: [-]caches failed: informers not synced\n`)
  })

  it('several failing checks are listed one per line, aligned', async () => {
    healthz = {ok: false, checks: {'event-loop': {ok: false, message: 'event loop blocked for 6000 ms'}, ping: {ok: true}}}
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: false, message: 'not leader yet'}}}
    const {stdout, error} = await runCommand(['operator', 'health', '--url', url])
    assert.equal(error?.oclif?.exit, 1)
    assert.equal(stdout, [
      `Operator at ${url}`,
      '  liveness   failed: [-]event-loop failed: event loop blocked for 6000 ms',
      '  readiness  failed: [-]caches failed: informers not synced',
      '                     [-]leader failed: not leader yet',
      '',
    ].join('\n'))
  })

  it('--json prints the report; exit 0 when healthy', async () => {
    const {stdout, error} = await runCommand(['operator', 'health', '--url', `${url}/`, '--json'])
    assert.equal(error, undefined)
    assert.deepEqual(JSON.parse(stdout), {
      url,
      healthy: true,
      live: {ok: true, status: 200, body: '[+]event-loop ok\n[+]ping ok\nhealthz check passed\n'},
      ready: {ok: true, status: 200, body: '[+]caches ok\n[+]leader ok\nreadyz check passed\n'},
    })
  })

  it('--json still prints the report, alone, before exiting 1', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}}}
    const {stdout, error} = await runCommand(['operator', 'health', '--url', url, '--json'])
    assert.equal(error?.oclif?.exit, 1)
    const report = JSON.parse(stdout) as {healthy: boolean; live: {ok: boolean}; ready: {ok: boolean; status: number; body: string}}
    assert.equal(report.healthy, false)
    assert.equal(report.live.ok, true)
    assert.deepEqual(report.ready, {ok: false, status: 500, body: '[-]caches failed: informers not synced\n/readyz check failed\n'})
  })

  it('a URL that answers 404 (e.g. the metrics port) is reachable but failing, exit 1', async () => {
    const {stdout, error} = await runCommand(['operator', 'health', '--url', `${url}/nested`])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(stdout, /liveness {3}failed: HTTP 404: not a health endpoint/)
  })

  it('unreachable: exit 2 with what to check', async () => {
    const port = await freePort()
    const {stdout, error} = await runCommand(['operator', 'health', '--url', `http://127.0.0.1:${port}`, '--timeout', '2'])
    assert.equal(error?.oclif?.exit, 2)
    assert.equal(error?.message,
      `Cannot reach the operator's health endpoint at http://127.0.0.1:${port} (ECONNREFUSED): ` +
      'is `polycrate operator run` running, and is --health-probe-bind-address the same?')
    assert.equal(stdout, '')
  })

  it('unreachable with --json: the error as JSON on stdout, still exit 2', async () => {
    const port = await freePort()
    const {stdout, error} = await runCommand(['operator', 'health', '--url', `http://127.0.0.1:${port}`, '--json'])
    assert.equal(error?.oclif?.exit, 2)
    const printed = JSON.parse(stdout) as {error: {message: string; oclif: {exit: number}}}
    assert.equal(printed.error.oclif.exit, 2)
    assert.match(printed.error.message, new RegExp(`^Cannot reach the operator's health endpoint at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`))
  })

  it('no answer within --timeout: exit 2', async () => {
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => sockets.add(socket)) // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const {port} = silent.address() as {port: number}
    try {
      const {error} = await runCommand(['operator', 'health', '--url', `http://127.0.0.1:${port}`, '--timeout', '1'])
      assert.equal(error?.oclif?.exit, 2)
      assert.match(error!.message, new RegExp(`at http://127\\.0\\.0\\.1:${port} \\(no answer within 1 s\\)`))
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('a bare host:port is taken as http://', async () => {
    const {stdout, error} = await runCommand(['operator', 'health', '--url', `127.0.0.1:${server.address.port}`])
    assert.equal(error, undefined)
    assert.match(stdout, new RegExp(`^Operator at ${url}\\n`))
  })
})
