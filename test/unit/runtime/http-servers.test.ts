import assert from 'node:assert/strict'
import {createServer} from 'node:http'
import {
  createEventLoopCheck,
  formatAddress,
  parseBindAddress,
  startMetricsServer,
  startProbeServer,
  type CheckResult,
  type RunningHttpServer,
} from '../../../src/operator/runtime/http-servers.js'
import * as lib from '../../../src/lib/http-server.js'
import {createLogger} from '../../../src/lib/logger.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {FakeTimers} from '../../support/fake-timers.js'
import {parsePromText} from '../../support/prom-text.js'

const base = (server: RunningHttpServer) => `http://127.0.0.1:${server.address.port}`

describe('http-servers re-exports', () => {
  it('parseBindAddress and formatAddress are the ones of src/lib/http-server.ts (tested in http-server.test.ts)', () => {
    assert.equal(parseBindAddress, lib.parseBindAddress)
    assert.equal(formatAddress, lib.formatAddress)
    assert.deepEqual(parseBindAddress(':8080'), {host: '::', port: 8080})
  })
})

describe('probe server', () => {
  let server: RunningHttpServer
  let healthz: CheckResult
  let readyz: CheckResult | Error
  const logLines: string[] = []

  before(async () => {
    const started = await startProbeServer({
      bindAddress: '127.0.0.1:0',
      checks: {
        healthz: () => healthz,
        readyz: async () => {
          if (readyz instanceof Error) throw readyz
          return readyz
        },
      },
      logger: createLogger({format: 'json', write: (line) => logLines.push(line)}),
    })
    assert.ok(started)
    server = started
  })
  after(() => server.close())
  beforeEach(() => {
    healthz = {ok: true, checks: {ping: {ok: true}, 'event-loop': {ok: true}}}
    readyz = {ok: true, checks: {caches: {ok: true}, leader: {ok: true}}}
  })

  it('listens on the ephemeral port it was given with :0', () => {
    assert.equal(server.address.host, '127.0.0.1')
    assert.ok(server.address.port > 0)
  })

  it('GET /healthz and /readyz answer 200 "ok" when every check passes', async () => {
    for (const path of ['/healthz', '/readyz', '/healthz/']) {
      const res = await fetch(`${base(server)}${path}`)
      assert.equal(res.status, 200, path)
      assert.equal(await res.text(), 'ok')
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
    }
  })

  it('?verbose lists every check, sorted, with [+]', async () => {
    const res = await fetch(`${base(server)}/healthz?verbose`)
    assert.equal(res.status, 200)
    assert.equal(await res.text(), '[+]event-loop ok\n[+]ping ok\nhealthz check passed\n')
  })

  it('a failing check gives 500 and lists every check with [-]name failed: reason', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}}
    const res = await fetch(`${base(server)}/readyz`)
    assert.equal(res.status, 500)
    assert.equal(await res.text(), '[-]caches failed: informers not synced\n[+]leader ok\n/readyz check failed\n')
    assert.ok(logLines.some((line) => /"msg":"readyz check failed".*"failed":"caches: informers not synced"/.test(line)), logLines.join('\n'))
  })

  it('ok=false without a failing named check still fails, and says so', async () => {
    readyz = {ok: false, checks: {caches: {ok: true}}}
    const res = await fetch(`${base(server)}/readyz`)
    assert.equal(res.status, 500)
    assert.match(await res.text(), /\[-\]readyz failed: reported not ok without naming a failing check/)
  })

  it('a check that throws fails the endpoint with the error', async () => {
    readyz = new Error('cache lookup exploded')
    const res = await fetch(`${base(server)}/readyz`)
    assert.equal(res.status, 500)
    assert.match(await res.text(), /\[-\]readyz failed: the checks could not run: cache lookup exploded/)
  })

  it('?exclude=name skips a failing check', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}}
    const res = await fetch(`${base(server)}/readyz?exclude=caches&exclude=nope&verbose`)
    assert.equal(res.status, 200)
    assert.equal(await res.text(), '[+]caches excluded: ok\n[+]leader ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n')
  })

  it('/readyz/<name> answers for one check; unknown names are 404', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}}
    let res = await fetch(`${base(server)}/readyz/leader`)
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'ok')
    res = await fetch(`${base(server)}/readyz/caches`)
    assert.equal(res.status, 500)
    assert.equal(await res.text(), 'internal server error: informers not synced\n')
    res = await fetch(`${base(server)}/healthz/event-loop`)
    assert.equal(res.status, 200)
    res = await fetch(`${base(server)}/readyz/nope`)
    assert.equal(res.status, 404)
    await res.body?.cancel()
  })

  it('answers JSON for Accept: application/json or ?format=json', async () => {
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}}
    let res = await fetch(`${base(server)}/readyz`, {headers: {accept: 'application/json'}})
    assert.equal(res.status, 500)
    assert.equal(res.headers.get('content-type'), 'application/json')
    assert.deepEqual(await res.json(), {status: 'failed', checks: {caches: {ok: false, message: 'informers not synced'}, leader: {ok: true}}})
    res = await fetch(`${base(server)}/healthz?format=json`)
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), {status: 'ok', checks: {'event-loop': {ok: true}, ping: {ok: true}}})
    res = await fetch(`${base(server)}/readyz/leader?format=json`)
    assert.deepEqual(await res.json(), {status: 'ok', checks: {leader: {ok: true}}})
  })

  it('404 for any other path', async () => {
    for (const path of ['/', '/metrics', '/healthzz', '/livez']) {
      const res = await fetch(`${base(server)}${path}`)
      assert.equal(res.status, 404, path)
      assert.equal(await res.text(), '404 page not found\n')
    }
  })

  it('HEAD gives the status and headers without a body', async () => {
    let res = await fetch(`${base(server)}/healthz`, {method: 'HEAD'})
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-length'), '2')
    assert.equal(await res.text(), '')
    readyz = {ok: false, checks: {caches: {ok: false, message: 'informers not synced'}}}
    res = await fetch(`${base(server)}/readyz`, {method: 'HEAD'})
    assert.equal(res.status, 500)
    assert.equal(await res.text(), '')
  })

  it('other methods get 405 with Allow', async () => {
    const res = await fetch(`${base(server)}/healthz`, {method: 'POST'})
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'GET, HEAD')
    await res.body?.cancel()
  })

  it('a check that never answers fails after checkTimeoutMs', async () => {
    const slow = await startProbeServer({
      bindAddress: '127.0.0.1:0',
      checkTimeoutMs: 50,
      checks: {healthz: () => new Promise<CheckResult>(() => {}), readyz: () => ({ok: true, checks: {}})},
    })
    try {
      const res = await fetch(`${base(slow!)}/healthz`)
      assert.equal(res.status, 500)
      assert.match(await res.text(), /\[-\]healthz failed: the checks could not run: no answer within 50 ms/)
    } finally {
      await slow!.close()
    }
  })

  it('":0" binds all interfaces on an ephemeral port', async () => {
    const any = await startProbeServer({bindAddress: ':0', checks: {healthz: () => ({ok: true, checks: {}}), readyz: () => ({ok: true, checks: {}})}})
    try {
      assert.ok(any)
      assert.ok(['::', '0.0.0.0'].includes(any.address.host), any.address.host)
      assert.ok(any.address.port > 0)
      const res = await fetch(`http://127.0.0.1:${any.address.port}/healthz`)
      assert.equal(await res.text(), 'ok')
    } finally {
      await any?.close()
    }
  })

  it('"0" disables the server', async () => {
    const none = await startProbeServer({bindAddress: '0', checks: {healthz: () => ({ok: true, checks: {}}), readyz: () => ({ok: true, checks: {}})}})
    assert.equal(none, undefined)
  })

  it('refuses an address in use with a clear error', async () => {
    const raw = `127.0.0.1:${server.address.port}`
    await assert.rejects(
      startProbeServer({bindAddress: raw, checks: {healthz: () => ({ok: true, checks: {}}), readyz: () => ({ok: true, checks: {}})}}),
      {message: `health probe bind address ${raw} is in use: pass --health-probe-bind-address with a free port, or 0 to disable`},
    )
  })

  it('an invalid bind address names the flag', async () => {
    await assert.rejects(
      startProbeServer({bindAddress: '8081', checks: {healthz: () => ({ok: true, checks: {}}), readyz: () => ({ok: true, checks: {}})}}),
      /Invalid --health-probe-bind-address "8081"/,
    )
  })

  it('close() also drops keep-alive connections and may be called twice', async () => {
    const temp = await startProbeServer({bindAddress: '127.0.0.1:0', checks: {healthz: () => ({ok: true, checks: {}}), readyz: () => ({ok: true, checks: {}})}})
    await (await fetch(`${base(temp!)}/healthz`)).text()
    await Promise.all([temp!.close(), temp!.close()])
    await assert.rejects(fetch(`${base(temp!)}/healthz`))
  })
})

describe('metrics server', () => {
  let metrics: OperatorMetrics
  let server: RunningHttpServer

  before(async () => {
    metrics = new OperatorMetrics()
    metrics.reconcileTotal.inc({controller: 'endpoint', result: 'success'})
    metrics.reconcileTotal.inc({controller: 'endpoint', result: 'error'})
    metrics.reconcileErrors.inc({controller: 'endpoint'})
    metrics.reconcileTime.observe({controller: 'endpoint'}, 0.042)
    metrics.reconcileTime.observe({controller: 'endpoint'}, 75)
    metrics.maxConcurrentReconciles.set({controller: 'endpoint'}, 4)
    metrics.activeWorkers.set({controller: 'endpoint'}, 1)
    metrics.workqueueDepth.set({name: 'endpoint', controller: 'endpoint'}, 3)
    metrics.workqueueAdds.inc({name: 'endpoint', controller: 'endpoint'}, 5)
    metrics.workqueueQueueDuration.observe({name: 'endpoint', controller: 'endpoint'}, 0.0005)
    metrics.workqueueWorkDuration.observe({name: 'endpoint', controller: 'endpoint'}, 0.2)
    metrics.workqueueRetries.inc({name: 'endpoint', controller: 'endpoint'})
    metrics.watchRestarts.inc({resource: 'ingresses', reason: 'timeout'})
    // A label value that needs escaping, to exercise the parser on it.
    metrics.cacheObjects.set({resource: 'odd "name"\\with\nnewline'}, 7)
    const started = await startMetricsServer({bindAddress: '127.0.0.1:0', metrics})
    assert.ok(started)
    server = started
  })
  after(() => server.close())

  it('GET /metrics serves the registry in the Prometheus text format', async () => {
    const res = await fetch(`${base(server)}/metrics`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), metrics.registry.contentType)
    assert.match(metrics.registry.contentType, /^text\/plain; version=0\.0\.4/)
    const families = parsePromText(await res.text())

    const expected: Array<[string, string]> = [
      ['controller_runtime_reconcile_total', 'counter'],
      ['controller_runtime_reconcile_errors_total', 'counter'],
      ['controller_runtime_reconcile_time_seconds', 'histogram'],
      ['controller_runtime_max_concurrent_reconciles', 'gauge'],
      ['controller_runtime_active_workers', 'gauge'],
      ['workqueue_depth', 'gauge'],
      ['workqueue_adds_total', 'counter'],
      ['workqueue_queue_duration_seconds', 'histogram'],
      ['workqueue_work_duration_seconds', 'histogram'],
      ['workqueue_retries_total', 'counter'],
      ['process_resident_memory_bytes', 'gauge'],
      ['process_cpu_seconds_total', 'counter'],
      ['nodejs_eventloop_lag_seconds', 'gauge'],
    ]
    for (const [name, type] of expected) {
      const family = families.get(name)
      assert.ok(family, `${name} is exposed`)
      assert.equal(family.type, type, name)
      assert.ok(family.help, `${name} has HELP`)
      assert.ok(family.samples.length > 0, `${name} has samples`)
    }

    const reconciles = families.get('controller_runtime_reconcile_total')!.samples
    assert.deepEqual(reconciles.map((s) => [s.labels, s.value]), [
      [{controller: 'endpoint', result: 'success'}, 1],
      [{controller: 'endpoint', result: 'error'}, 1],
    ])
    const time = families.get('controller_runtime_reconcile_time_seconds')!.samples
    const inf = time.find((s) => s.name.endsWith('_bucket') && s.labels.le === '+Inf')
    assert.equal(inf?.value, 2)
    assert.equal(time.find((s) => s.name.endsWith('_count'))?.value, 2)
    assert.equal(families.get('workqueue_depth')!.samples[0]?.value, 3)
    assert.equal(families.get('polycrate_operator_cache_objects')!.samples[0]?.labels.resource, 'odd "name"\\with\nnewline')
  })

  it('HEAD /metrics has no body; other paths are 404', async () => {
    let res = await fetch(`${base(server)}/metrics`, {method: 'HEAD'})
    assert.equal(res.status, 200)
    assert.equal(await res.text(), '')
    for (const path of ['/', '/healthz', '/metrics/x']) {
      res = await fetch(`${base(server)}${path}`)
      assert.equal(res.status, 404, path)
      await res.body?.cancel()
    }
  })

  it('other methods get 405 with Allow, on any path (as before the split)', async () => {
    for (const path of ['/metrics', '/nope']) {
      const res = await fetch(`${base(server)}${path}`, {method: 'POST'})
      assert.equal(res.status, 405, path)
      assert.equal(res.headers.get('allow'), 'GET, HEAD')
      assert.equal(await res.text(), 'method not allowed\n')
    }
  })

  it('refuses a port in use with the message from the brief', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const {port} = blocker.address() as {port: number}
    try {
      await assert.rejects(
        startMetricsServer({bindAddress: `127.0.0.1:${port}`, metrics}),
        {message: `metrics bind address 127.0.0.1:${port} is in use: pass --metrics-bind-address with a free port, or 0 to disable`},
      )
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
    }
  })

  it('"0" disables the server', async () => {
    assert.equal(await startMetricsServer({bindAddress: '0', metrics}), undefined)
  })
})

describe('parsePromText (the strict test parser itself)', () => {
  const ok = [
    '# HELP a_total A counter.\n# TYPE a_total counter\na_total{x="1",} 3 1700000000000\n',
    '# TYPE g gauge\ng +Inf\ng{a="b"} -Inf\ng{a="c"} NaN\ng{a="d"} Nan\ng{a="e"} 1.5e-3\n',
    '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 0.3\nh_count 2\n',
    '# TYPE s summary\ns{quantile="0.5"} 1\ns_sum 3\ns_count 2\n',
    '# some comment\n\nfree_form 1\n',
    '',
  ]
  for (const text of ok) {
    it(`accepts ${JSON.stringify(text).slice(0, 60)}`, () => {
      parsePromText(text)
    })
  }

  const bad: Array<[string, RegExp]> = [
    ['m 1', /must end with a line feed/],
    ['1m 1\n', /invalid metric name/],
    ['m{1a="x"} 1\n', /invalid label name "1a"/],
    ['m{__x="x"} 1\n', /reserved/],
    ['m{a="x",a="y"} 1\n', /appears twice/],
    ['m{a=x} 1\n', /must be quoted/],
    ['m{a="\\t"} 1\n', /invalid escape/],
    ['m{a="x" 1\n', /expected "," or "}"/],
    ['m one\n', /invalid sample value "one"/],
    ['m 1 2.5\n', /invalid timestamp/],
    ['m 1 2 3\n', /expected " value \[timestamp\]"/],
    ['# TYPE m bogus\nm 1\n', /unknown metric type "bogus"/],
    ['# TYPE m gauge\n# TYPE m gauge\nm 1\n', /second TYPE/],
    ['# HELP m a\n# HELP m b\nm 1\n', /second HELP/],
    ['# HELP m bad \\t escape\nm 1\n', /invalid escape/],
    ['m 1\n# TYPE m gauge\n', /TYPE line for m after its samples/],
    ['m 1\nn 1\nm{a="b"} 1\n', /must be contiguous/],
    ['m 1\nm 2\n', /duplicate series/],
    ['# TYPE c counter\nc -1\n', /counter c is negative/],
    ['# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', /not cumulative/],
    ['# TYPE h histogram\nh_bucket{le="2"} 1\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', /increasing le order/],
    ['# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', /no le="\+Inf" bucket/],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 1\n', /no _count/],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 1\n', /no _sum/],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', /differs from the \+Inf bucket/],
    ['# TYPE h histogram\nh_bucket 1\n', /no "le" label/],
    ['# TYPE h histogram\nh 1\n', /does not belong to histogram h/],
    ['# TYPE s summary\ns 1\n', /no "quantile" label/],
  ]
  for (const [text, reason] of bad) {
    it(`rejects ${JSON.stringify(text).slice(0, 60)}`, () => {
      assert.throws(() => parsePromText(text), reason)
    })
  }
})

describe('createEventLoopCheck (on fake time: a frozen clock is a blocked loop, its timers overdue)', () => {
  it('passes while the loop is free', async () => {
    const clock = new FakeTimers()
    const check = createEventLoopCheck({maxLagMs: 250, intervalMs: 10, clock})
    try {
      await clock.advance(120)
      assert.deepEqual(check(), {ok: true})
    } finally {
      check.stop()
    }
  })

  it('fails right after a synchronous block longer than maxLagMs, and stays failed within the window', async () => {
    const clock = new FakeTimers()
    const check = createEventLoopCheck({maxLagMs: 50, windowMs: 500, clock}) // samples every 10 ms
    try {
      await clock.advance(30)
      clock.freeze(200)
      const now = check()
      assert.equal(now.ok, false)
      assert.match(now.message ?? '', /event loop blocked for 190 ms \(limit 50 ms\)/)
      await clock.advance(0) // the overdue timer runs and records the stall: 200 ms late less one interval
      const after = check()
      assert.equal(after.ok, false)
      assert.match(after.message ?? '', /event loop blocked for 190 ms within the last 500 ms \(limit 50 ms; last stall 0 ms ago\)/)
      await clock.advance(501)
      assert.deepEqual(check(), {ok: true})
    } finally {
      check.stop()
    }
  })

  it('a block shorter than maxLagMs does not fail it', async () => {
    const clock = new FakeTimers()
    const check = createEventLoopCheck({maxLagMs: 300, intervalMs: 10, clock})
    try {
      await clock.advance(30)
      clock.freeze(100)
      assert.deepEqual(check(), {ok: true})
      await clock.advance(30)
      assert.deepEqual(check(), {ok: true})
    } finally {
      check.stop()
    }
  })

  it('stop() clears the timer and the check then passes', async () => {
    const clock = new FakeTimers()
    const check = createEventLoopCheck({maxLagMs: 20, clock})
    check.stop()
    clock.freeze(60)
    await clock.advance(0)
    assert.equal(check().ok, true)
  })

  it('rejects nonsense options', () => {
    assert.throws(() => createEventLoopCheck({maxLagMs: 0}), /must be positive/)
  })
})
