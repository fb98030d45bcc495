import assert from 'node:assert/strict'
import {nameSignal} from '../../../src/lib/request-origin.js'
import {getEventListeners} from 'node:events'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {inspect} from 'node:util'
import {Registry, type Histogram} from 'prom-client'
import {
  adoptOrCreate,
  ApiAuthError,
  ApiConflictError,
  ApiContractError,
  ApiError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiRateLimitError,
  ApiServerError,
  ApiValidationError,
  parseRetryAfter,
  PolycrateApiClient,
  resourceLabel,
  type PolycrateApiClientOptions,
} from '../../../src/api/index.js'
import {createLogger} from '../../../src/lib/logger.js'
import {FakeTimers} from '../../support/fake-timers.js'

const TOKEN = 'pct_secret-TOKEN-0123456789abcdef'
const CLUSTER = '3f1c8a52-6a7e-4c1b-9f55-0b5f3c1e2d4a'

interface Seen {
  method: string
  url: string
  path: string
  query: URLSearchParams
  headers: IncomingMessage['headers']
  body: string
}

type Handler = (req: Seen, res: ServerResponse, n: number) => void

/** A tiny HTTP server whose behaviour each test sets; it records every request. */
class TestServer {
  readonly seen: Seen[] = []
  handler: Handler = (_req, res) => json(res, 200, {})
  url = ''
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      const seen: Seen = {method: req.method ?? '', url: req.url ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString('utf8')}
      this.seen.push(seen)
      this.handler(seen, res, this.seen.length)
    })
  })

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  reset(handler: Handler): void {
    this.seen.length = 0
    this.handler = handler
  }

  count(method?: string): number {
    return method ? this.seen.filter((s) => s.method === method).length : this.seen.length
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || body === undefined) {
    res.writeHead(status, headers).end()
    return
  }
  res.writeHead(status, {'content-type': 'application/json', ...headers}).end(JSON.stringify(body))
}

const contractError = (code: string, detail: string, attr: string | null = null) => ({type: 'client_error', errors: [{code, detail, attr}]})
const page = (results: unknown[], next: string | null = null, count = results.length) => ({count, next, previous: null, results})
const app = (id: string, name: string, extra: Record<string, unknown> = {}) => ({id, name, k8s_cluster: CLUSTER, ...extra})

interface FetchCall {
  url: string
  method: string
  signal: AbortSignal | undefined
}

/**
 * A fake `fetch` (passed as the client's `fetch` option): records every call and answers with `respond`, which
 * may return a promise that never settles (a request in flight that ignores its signal).
 */
function fakeFetch(respond: (call: FetchCall, n: number) => Response | Promise<Response>): {fetch: typeof fetch; calls: FetchCall[]} {
  const calls: FetchCall[] = []
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const call: FetchCall = {url: String(input), method: init?.method ?? 'GET', signal: init?.signal ?? undefined}
    calls.push(call)
    return respond(call, calls.length)
  }
  return {fetch: fake as typeof fetch, calls}
}

const jsonResponse = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {status, headers: {'content-type': 'application/json', ...headers}})
const pending = () => new Promise<Response>(() => {})

/** A minute on `clock`, far past any retry pause the tests set: a retry still pending would have gone out by then. */
const pastAnyRetry = (clock: FakeTimers) => clock.advance(60_000)

/** Fake time that remembers the delay of every timer set on it: the client's pauses, seen without waiting them out. */
class RecordingTimers extends FakeTimers {
  readonly delays: number[] = []
  override setTimeout(callback: () => void, ms: number): unknown {
    this.delays.push(ms)
    return super.setTimeout(callback, ms)
  }

  /** The retry pauses: every timer but the per-attempt timeouts (the client's default 15 s). */
  get pauses(): number[] {
    return this.delays.filter((ms) => ms !== 15_000)
  }
}

/** Moves `clock` on, a second at a time, until `promise` settles: the retry pauses pass without waiting. */
async function onFakeTime<T>(clock: FakeTimers, promise: Promise<T>): Promise<T> {
  let settled = false
  promise.then(() => (settled = true), () => (settled = true))
  for (let i = 0; i < 600 && !settled; i++) await clock.advance(1_000)
  return promise
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof Error, 'rejected with an Error')
    return error
  }
  assert.fail('expected the promise to reject')
}

describe('PolycrateApiClient', function () {
  this.timeout(20_000)
  let server: TestServer
  let logLines: string[]

  const client = (options: Partial<PolycrateApiClientOptions> = {}) =>
    new PolycrateApiClient({
      baseUrl: server.url,
      token: TOKEN,
      retry: {baseDelayMs: 1, maxDelayMs: 20, ...options.retry},
      logger: createLogger({level: 'debug', format: 'json', write: (line) => logLines.push(line)}),
      ...options,
    })

  before(async () => {
    server = await new TestServer().start()
  })
  after(() => server.close())
  beforeEach(() => {
    logLines = []
  })

  describe('requests', () => {
    it('sends the bearer token, a user agent and JSON, and validates the answer', async () => {
      server.reset((req, res) => json(res, 201, app('a1', 'web')))
      const created = await client().k8sApps.create({name: 'web', k8s_cluster: CLUSTER})
      assert.equal(created.id, 'a1')
      const [req] = server.seen
      assert.ok(req)
      assert.equal(req.method, 'POST')
      assert.equal(req.path, '/api/v1/kubernetes/apps/')
      assert.equal(req.headers.authorization, `Bearer ${TOKEN}`)
      assert.match(String(req.headers['user-agent']), /^polycrate-operator\/\d+\.\d+\.\d+/)
      assert.equal(req.headers['content-type'], 'application/json')
      assert.equal(req.headers.accept, 'application/json')
      assert.deepEqual(JSON.parse(req.body), {name: 'web', k8s_cluster: CLUSTER})
    })

    it('names the controller whose reconcile signal a call carries in the user agent', async () => {
      server.reset((req, res) => json(res, 201, app('a1', 'web')))
      const reconcile = new AbortController()
      nameSignal(reconcile.signal, 'k8sapp-discovery')
      await client().k8sApps.create({name: 'web', k8s_cluster: CLUSTER}, {signal: reconcile.signal})
      assert.match(String(server.seen[0]?.headers['user-agent']), /^polycrate-operator\/\d+\.\d+\.\d+\S* controller\/k8sapp-discovery$/)
    })

    it('keeps unknown response keys (lenient) and fills the endpoint spec defaults', async () => {
      server.reset((_req, res) => json(res, 200, {id: 'e1', name: 'web', remote_address: 'app.example.com', kind: 'http', remote_port: 443, spec: {http: {path: '/healthz'}}, brand_new_field: {x: 1}}))
      const ep = await client().endpoints.get('e1')
      assert.equal((ep as Record<string, unknown>).brand_new_field !== undefined, true)
      assert.equal(ep.spec?.http?.path, '/healthz')
      assert.equal(ep.spec?.http?.timeout, 5)
      assert.equal(ep.spec?.http?.expected_status_code, 200)
    })

    it('sends multi-valued filters as repeated query parameters and leaves out undefined ones', async () => {
      server.reset((_req, res) => json(res, 200, page([])))
      await client().endpoints.listAll({kind: ['http', 'tcp'], workspaces: ['w1', 'w2'], archived: false, name_exact: undefined, page_size: 50})
      const [req] = server.seen
      assert.ok(req)
      assert.deepEqual(req.query.getAll('kind'), ['http', 'tcp'])
      assert.deepEqual(req.query.getAll('workspaces'), ['w1', 'w2'])
      assert.equal(req.query.get('archived'), 'false')
      assert.equal(req.query.get('page_size'), '50')
      assert.equal(req.query.has('name_exact'), false)
    })

    it('URL-encodes composite DNS record ids', async () => {
      server.reset((_req, res) => json(res, 200, {id: 'z1::rec-9', content: '1.2.3.4', type: 'A', dns_zone: {id: 'z1', name: 'example.com', kind: 'external'}}))
      const record = await client().dnsRecords.get('z1::rec-9')
      assert.equal(record.id, 'z1::rec-9')
      assert.equal(server.seen[0]?.url, '/api/v1/domains/dnsrecords/z1%3A%3Arec-9/')
    })

    it('sends X-Agent-ID for the agent endpoints and reads the plain array', async () => {
      server.reset((_req, res) => json(res, 200, [{id: 'e1', name: 'web', kind: 'http', remote_address: 'a.example.com', remote_port: 443, workspace: {id: 'w'}, organization: null, spec: null}]))
      const endpoints = await client().agent.endpoints('agent-7')
      assert.equal(endpoints.length, 1)
      assert.equal(server.seen[0]?.headers['x-agent-id'], 'agent-7')
      assert.equal(server.seen[0]?.path, '/api/v1/agent/endpoints/')
    })

    it('maps delete answers: 204 deleted, 202 soft-deleted, 404 not-found', async () => {
      const statuses = [204, 202, 404]
      server.reset((_req, res, n) => json(res, statuses[n - 1] ?? 500, statuses[n - 1] === 404 ? contractError('not_found', 'Not found.') : undefined))
      const c = client()
      assert.equal(await c.hosts.delete('h1'), 'deleted')
      assert.equal(await c.endpoints.delete('e1'), 'soft-deleted')
      assert.equal(await c.endpoints.delete('e1'), 'not-found')
      assert.deepEqual(server.seen.map((s) => `${s.method} ${s.path}`), ['DELETE /api/v1/hosts/h1/', 'DELETE /api/v1/endpoints/e1/', 'DELETE /api/v1/endpoints/e1/'])
    })

    it('resolves a DNS zone, and answers undefined on 404', async () => {
      server.reset((req, res) =>
        req.query.get('fqdn') === '_acme-challenge.app.example.com'
          ? json(res, 200, {id: 'z1', name: 'example.com', kind: 'internal'})
          : json(res, 404, contractError('not_found', 'No zone.')))
      const c = client()
      assert.equal((await c.dnsZones.resolve('_acme-challenge.app.example.com'))?.name, 'example.com')
      assert.equal(await c.dnsZones.resolve('nothing.invalid'), undefined)
      assert.equal(server.seen[0]?.path, '/api/v1/domains/dnszones/resolve/')
    })

    it('keeps extra SystemConfig keys', async () => {
      server.reset((req, res) => json(res, 200, {SYSTEM_NAME: 'ayedo', OPERATOR_BLOCK_VERSION: '1.4.0', OPERATOR_ROLLOUT_PERCENTAGE: 25, SOMETHING_NEW: true, ...(req.body ? JSON.parse(req.body) : {})}))
      const c = client()
      const config = await c.systemConfig.get()
      assert.equal(config.OPERATOR_BLOCK_VERSION, '1.4.0')
      assert.equal(config.SOMETHING_NEW, true)
      const patched = await c.systemConfig.patch({OPERATOR_BLOCK_VERSION: '1.5.0'})
      assert.equal(patched.OPERATOR_BLOCK_VERSION, '1.5.0')
      assert.equal(server.seen[1]?.method, 'PATCH')
    })

    it('calls the action endpoints on their contract paths', async () => {
      const row = {
        id: CLUSTER, name: 'c', workspace: {id: 'w', name: 'W'}, organization: null, installed_version: '1.0.0', desired_version: '1.1.0',
        up_to_date: false, agent: {id: null, state: null, last_seen: null}, critical: false, in_maintenance: false, paused: false,
        forced: false, in_current_batch: false, blockers: [],
      }
      server.reset((req, res) => {
        if (req.path === '/api/v1/workspaces/w1/maintenance-window-status/') return json(res, 200, {in_maintenance_window: true, window_id: 'mw', window_name: 'sunday', window_display_name: 'Sunday'})
        if (req.path === '/api/v1/certificates/sync/') return json(res, 200, {...JSON.parse(req.body), id: 7})
        if (req.path === '/api/v1/s3/buckets/b1/credentials/') return json(res, 200, {success: true, data: {bucket_id: 'b1', bucket_name: 'b', credentials: [{id: 'c1', access_key: 'AK', secret_key: 'SK'}]}, meta: {}})
        if (req.path.startsWith('/api/v1/operator-rollout/')) return json(res, 200, row)
        json(res, 404, contractError('not_found', 'Not found.'))
      })
      const c = client()
      assert.equal((await c.workspaces.maintenanceWindowStatus('w1')).in_maintenance_window, true)
      assert.equal((await c.certificates.sync({cert_data: {kind: 'Certificate'}, k8s_cluster_id: 1, organization_id: 2})).k8s_cluster_id, 1)
      assert.equal((await c.s3Buckets.credentials('b1')).data.credentials[0]?.secret_key, 'SK')
      for (const action of ['force', 'pause', 'resume'] as const) assert.equal((await c.operatorRollout[action](CLUSTER)).id, CLUSTER)
      assert.deepEqual(server.seen.map((r) => `${r.method} ${r.path}`), [
        'GET /api/v1/workspaces/w1/maintenance-window-status/',
        'POST /api/v1/certificates/sync/',
        'GET /api/v1/s3/buckets/b1/credentials/',
        `POST /api/v1/operator-rollout/${CLUSTER}/force-update/`,
        `POST /api/v1/operator-rollout/${CLUSTER}/pause/`,
        `POST /api/v1/operator-rollout/${CLUSTER}/resume/`,
      ])
    })

    it('exposes artifacts read-only', () => {
      const artifacts = client().artifacts as unknown as Record<string, unknown>
      for (const method of ['create', 'update', 'replace', 'delete']) assert.equal(method in artifacts, false, method)
      for (const method of ['list', 'listAll', 'listPage', 'get', 'findOne']) assert.equal(typeof artifacts[method], 'function', method)
    })

    it('rejects a base URL with credentials and a token that cannot be a header, without echoing the token', () => {
      assert.throws(() => new PolycrateApiClient({baseUrl: 'https://u:p@api.example.com', token: TOKEN}), /must not contain credentials/)
      assert.throws(() => new PolycrateApiClient({baseUrl: 'api.example.com', token: TOKEN}), /not a URL/)
      const bad = `${TOKEN}\n`
      assert.throws(() => new PolycrateApiClient({baseUrl: server.url, token: bad}), (error: Error) => !error.message.includes(TOKEN) && /not allowed in an HTTP header/.test(error.message))
    })
  })

  describe('retries', () => {
    it('retries 503 and then succeeds', async () => {
      server.reset((_req, res, n) => (n < 3 ? json(res, 503, contractError('service_unavailable', 'Try later.')) : json(res, 200, app('a1', 'web'))))
      const got = await client().k8sApps.get('a1')
      assert.equal(got.name, 'web')
      assert.equal(server.count(), 3)
    })

    it('a create is not sent again after an answer that leaves open whether the API made the object (500, 502, 504, a reset, a timeout): the call fails, adopt-or-create finds it next time', async () => {
      for (const status of [500, 502, 504]) {
        server.reset((_req, res) => json(res, status, contractError('bad_gateway', 'Upstream.')))
        await assert.rejects(client().k8sApps.create({name: 'web'}), ApiServerError)
        assert.equal(server.count('POST'), 1, `${status}: sent again`)
      }
      server.reset((_req, res) => res.socket?.destroy())
      await assert.rejects(client().k8sApps.create({name: 'web'}), ApiNetworkError)
      assert.equal(server.count('POST'), 1, 'a reset: sent again')
    })

    it('a create is sent again after an answer that says nothing was applied (429, 503); other POSTs (the health report) after any failure', async () => {
      for (const status of [429, 503]) {
        server.reset((_req, res, n) => (n === 1 ? json(res, status, contractError('throttled', 'Later.'), {'retry-after': '0'}) : json(res, 201, app('a1', 'web'))))
        await client().k8sApps.create({name: 'web'})
        assert.equal(server.count('POST'), 2, String(status))
      }
      server.reset((_req, res, n) => (n === 1 ? json(res, 502, contractError('bad_gateway', 'Upstream.')) : json(res, 200, {})))
      await client().request({method: 'POST', path: '/api/v1/agent/health/', body: {}})
      assert.equal(server.count('POST'), 2)
    })

    it('honours Retry-After in seconds on 429', async () => {
      server.reset((_req, res, n) => (n === 1 ? json(res, 429, contractError('throttled', 'Slow down.'), {'retry-after': '1'}) : json(res, 200, page([]))))
      const clock = new RecordingTimers()
      await onFakeTime(clock, client({retry: {baseDelayMs: 1, maxDelayMs: 5_000}, clock}).hosts.listAll())
      assert.equal(server.count(), 2)
      assert.deepEqual(clock.pauses, [1_000])
    })

    it('honours Retry-After as an HTTP date, capped at maxDelayMs', async () => {
      const clock = new RecordingTimers()
      server.reset((_req, res, n) => (n === 1 ? json(res, 429, {}, {'retry-after': new Date(clock.now() + 30_000).toUTCString()}) : json(res, 200, page([]))))
      await onFakeTime(clock, client({retry: {baseDelayMs: 1, maxDelayMs: 300}, clock}).hosts.listAll())
      assert.deepEqual(clock.pauses, [300], 'the cap, not the 30 s the date asks for')
    })

    it('backs off exponentially with jitter when no Retry-After is given', async () => {
      server.reset((_req, res, n) => (n < 4 ? json(res, 500, {}) : json(res, 200, page([]))))
      const clock = new RecordingTimers()
      await onFakeTime(clock, client({retry: {baseDelayMs: 50, maxDelayMs: 1_000}, clock}).hosts.listAll())
      // 50, 100, 200 ms, each ± 25 %
      assert.equal(clock.pauses.length, 3)
      clock.pauses.forEach((ms, i) => assert.ok(Math.abs(ms - 50 * 2 ** i) <= 50 * 2 ** i * 0.25, `pause ${i + 1}: ${ms} ms`))
    })

    it('retries a dropped connection', async () => {
      server.reset((req, res, n) => {
        if (n === 1) res.socket?.destroy()
        else json(res, 200, app('a1', 'web'))
      })
      assert.equal((await client().k8sApps.get('a1')).id, 'a1')
      assert.equal(server.count(), 2)
    })

    for (const status of [400, 401, 403, 404, 409, 422]) {
      it(`does not retry ${status}`, async () => {
        server.reset((_req, res) => json(res, status, contractError('some_code', 'Nope.')))
        await rejection(client().k8sApps.create({name: 'web'}))
        assert.equal(server.count(), 1)
      })
    }

    it('gives up on a persistent 503 with ApiServerError after maxAttempts', async () => {
      server.reset((_req, res) => json(res, 503, contractError('service_unavailable', 'Maintenance.')))
      const error = await rejection(client({retry: {maxAttempts: 3, baseDelayMs: 1}}).k8sClusters.get(CLUSTER))
      assert.ok(error instanceof ApiServerError)
      assert.equal(error.status, 503)
      assert.equal(error.attempts, 3)
      assert.equal(server.count(), 3)
      assert.equal(error.message, `The Polycrate API failed on GET /api/v1/kubernetes/clusters/${CLUSTER}/ (503 Service Unavailable: service_unavailable: Maintenance.); gave up after 3 attempts.`)
    })

    it('gives up on a persistent 429 with ApiRateLimitError', async () => {
      server.reset((_req, res) => json(res, 429, contractError('throttled', 'Request was throttled.'), {'retry-after': '0'}))
      const error = await rejection(client({retry: {maxAttempts: 4}}).hosts.listAll())
      assert.ok(error instanceof ApiRateLimitError)
      assert.equal(error.retryAfterMs, 0)
      assert.equal(server.count(), 4)
      assert.match(error.message, /rate-limiting GET \/api\/v1\/hosts\/ \(429 Too Many Requests: throttled: Request was throttled\.\); gave up after 4 attempts/)
    })

    it('times out a silent server: ApiNetworkError with cause "timeout", retried', async () => {
      server.reset(() => {})
      const error = await rejection(client({timeoutMs: 100, retry: {maxAttempts: 2, baseDelayMs: 1}}).hosts.get('h1'))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'timeout')
      assert.equal(error.status, 0)
      assert.equal(server.count(), 2)
      assert.match(error.message, /^Cannot reach the Polycrate API at http:\/\/127\.0\.0\.1:\d+ for GET \/api\/v1\/hosts\/h1\/ \(no answer within 100 ms\); gave up after 2 attempts/)
    })

    it('reports a refused connection as ApiNetworkError ECONNREFUSED', async () => {
      const dead = await new TestServer().start()
      const url = dead.url
      await dead.close()
      const error = await rejection(client({baseUrl: url, retry: {maxAttempts: 2, baseDelayMs: 1}}).hosts.get('h1'))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'ECONNREFUSED')
      assert.equal(error.attempts, 2)
    })

    it('reports a connection dropped on every attempt as ApiNetworkError ECONNRESET', async () => {
      server.reset((_req, res) => res.socket?.destroy())
      const error = await rejection(client({retry: {maxAttempts: 3, baseDelayMs: 1}}).hosts.get('h1'))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'ECONNRESET')
      assert.equal(server.count(), 3)
    })

    it('stops retrying when the client signal aborts', async () => {
      server.reset((_req, res) => json(res, 503, {}))
      const controller = new AbortController()
      // On fake time the 5 s pauses never pass by themselves: only the abort can end the call.
      const c = client({signal: controller.signal, retry: {maxAttempts: 10, baseDelayMs: 5_000, maxDelayMs: 5_000}, clock: new FakeTimers()})
      setTimeout(() => controller.abort(), 100)
      const error = await rejection(c.hosts.get('h1'))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'aborted')
    })
  })

  describe('cancellation (per-call signal)', () => {
    const isAborted = (error: Error, attempts: number) => {
      assert.ok(error instanceof ApiNetworkError, `${error.name}: ${error.message}`)
      assert.equal(error.cause, 'aborted')
      assert.equal(error.status, 0)
      assert.equal(error.attempts, attempts)
    }

    it('aborting the call signal while the request is in flight rejects at once with cause aborted and no retry', async () => {
      const {fetch, calls} = fakeFetch(() => pending()) // ignores its signal: the client must not wait for it
      const controller = new AbortController()
      // On fake time: the per-attempt timeout never fires, so only the abort can end the call.
      const clock = new FakeTimers()
      const c = client({fetch, retry: {maxAttempts: 5, baseDelayMs: 1}, clock})
      setTimeout(() => controller.abort(), 20)
      const error = await rejection(c.request({method: 'GET', path: '/api/v1/hosts/h1/', signal: controller.signal}))
      isAborted(error, 1)
      assert.equal(calls[0]?.signal?.aborted, true, 'the signal handed to fetch aborts with the call signal')
      await pastAnyRetry(clock)
      assert.equal(calls.length, 1, 'no second attempt')
    })

    it('also when the fetch honours its signal and rejects with an AbortError', async () => {
      const {fetch, calls} = fakeFetch((call) => new Promise<Response>((_resolve, reject) => call.signal?.addEventListener('abort', () => reject(call.signal?.reason))))
      const controller = new AbortController()
      setTimeout(() => controller.abort(new Error('reconcile cancelled')), 20)
      const clock = new FakeTimers()
      const error = await rejection(client({fetch, clock}).endpoints.get('e1', {signal: controller.signal}))
      isAborted(error, 1)
      await pastAnyRetry(clock)
      assert.equal(calls.length, 1)
    })

    it('aborting during the retry pause after a 503 rejects promptly without the next attempt', async () => {
      const controller = new AbortController()
      const {fetch, calls} = fakeFetch(() => {
        setTimeout(() => controller.abort(), 20)
        return jsonResponse(503, contractError('service_unavailable', 'Later.'), {'retry-after': '30'})
      })
      // On fake time the 30 s Retry-After never passes by itself: only the abort can end the pause.
      const clock = new FakeTimers()
      const c = client({fetch, retry: {maxAttempts: 5, baseDelayMs: 30_000, maxDelayMs: 60_000}, clock})
      const error = await rejection(c.hosts.get('h1', {signal: controller.signal}))
      isAborted(error, 1)
      await pastAnyRetry(clock)
      assert.equal(calls.length, 1, 'no second attempt')
    })

    it('the client signal and the call signal both stop a pending retry', async () => {
      for (const which of ['client', 'call'] as const) {
        const controller = new AbortController()
        const {fetch, calls} = fakeFetch(() => jsonResponse(503, {}))
        const c = client({fetch, retry: {maxAttempts: 5, baseDelayMs: 30_000, maxDelayMs: 30_000}, ...(which === 'client' ? {signal: controller.signal} : {})})
        setTimeout(() => controller.abort(), 20)
        const error = await rejection(c.hosts.get('h1', which === 'call' ? {signal: controller.signal} : {}))
        isAborted(error, 1)
        assert.equal(calls.length, 1, which)
      }
    })

    it('an already aborted call signal sends nothing', async () => {
      const {fetch, calls} = fakeFetch(() => jsonResponse(200, {}))
      const error = await rejection(client({fetch}).request({method: 'GET', path: '/api/v1/hosts/', signal: AbortSignal.abort()}))
      isAborted(error, 0)
      assert.equal(calls.length, 0)
    })

    it('removes its abort listeners from the call and client signals after retries', async () => {
      const call = new AbortController()
      const clientWide = new AbortController()
      const {fetch, calls} = fakeFetch((_call, n) => (n === 1 ? jsonResponse(503, {}) : jsonResponse(200, app('a1', 'web'))))
      const got = await client({fetch, signal: clientWide.signal}).k8sApps.get('a1', {signal: call.signal})
      assert.equal(got.id, 'a1')
      assert.equal(calls.length, 2)
      assert.equal(getEventListeners(call.signal, 'abort').length, 0)
      assert.equal(getEventListeners(clientWide.signal, 'abort').length, 0)
    })

    it('a timeout is still retried when a call signal is given (it is not an abort)', async () => {
      const {fetch, calls} = fakeFetch((call) => new Promise<Response>((_resolve, reject) => call.signal?.addEventListener('abort', () => reject(call.signal?.reason))))
      const error = await rejection(client({fetch, timeoutMs: 30, retry: {maxAttempts: 2, baseDelayMs: 1}}).hosts.get('h1', {signal: new AbortController().signal}))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'timeout')
      assert.equal(calls.length, 2)
    })

    it('every typed method passes its signal into the request', async () => {
      const {fetch, calls} = fakeFetch(() => jsonResponse(200, {}))
      const c = client({fetch})
      const opts = {signal: AbortSignal.abort()}
      const methods: Array<[string, () => Promise<unknown>]> = [
        ['listPage', () => c.k8sApps.listPage({}, opts)],
        ['list', async () => {
          for await (const item of c.k8sApps.list({}, opts)) void item
        }],
        ['listAll', () => c.k8sApps.listAll({}, opts)],
        ['findOne', () => c.k8sApps.findOne({name_exact: 'web'}, opts)],
        ['get', () => c.k8sApps.get('a1', opts)],
        ['create', () => c.k8sApps.create({name: 'web'}, opts)],
        ['update', () => c.k8sApps.update('a1', {name: 'web'}, opts)],
        ['replace', () => c.hosts.replace('h1', {name: 'h', hostname: 'h'}, opts)],
        ['delete', () => c.endpoints.delete('e1', opts)],
        ['artifacts.get', () => c.artifacts.get('x', opts)],
        ['certificates.sync', () => c.certificates.sync({cert_data: {}, k8s_cluster_id: 1, organization_id: 2}, opts)],
        ['s3Buckets.credentials', () => c.s3Buckets.credentials('b1', opts)],
        ['dnsZones.resolve', () => c.dnsZones.resolve('a.example.com', opts)],
        ['workspaces.maintenanceWindowStatus', () => c.workspaces.maintenanceWindowStatus('w1', opts)],
        ['agent.health', () => c.agent.health({}, opts)],
        ['agent.endpoints', () => c.agent.endpoints('agent-1', opts)],
        ['agent.errors', () => c.agent.errors({error_type: 'x', error_message: 'y'} as never, opts)],
        ['systemConfig.get', () => c.systemConfig.get(opts)],
        ['systemConfig.patch', () => c.systemConfig.patch({}, opts)],
        ['operatorRollout.status', () => c.operatorRollout.status(opts)],
        ['operatorRollout.force', () => c.operatorRollout.force(CLUSTER, opts)],
        ['operatorRollout.pause', () => c.operatorRollout.pause(CLUSTER, opts)],
        ['operatorRollout.resume', () => c.operatorRollout.resume(CLUSTER, opts)],
      ]
      for (const [name, call] of methods) {
        const error = await rejection(call())
        assert.ok(error instanceof ApiNetworkError && error.cause === 'aborted', `${name}: ${error.message}`)
      }
      assert.equal(calls.length, 0)
    })

    it('endpoints.get(id, {signal}) stops an in-flight request', async () => {
      const {fetch, calls} = fakeFetch(() => pending())
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 20)
      const error = await rejection(client({fetch}).endpoints.get('e1', {signal: controller.signal}))
      isAborted(error, 1)
      assert.equal(calls[0]?.url.endsWith('/api/v1/endpoints/e1/'), true)
      assert.equal(calls.length, 1)
    })

    it('list() passes the signal into every page request: aborting between pages ends the iteration', async () => {
      const next = `${server.url}/api/v1/kubernetes/apps/?page=2`
      // Whether the call signal is followed while each request is in flight (and let go after it: no link outlives it).
      const controller = new AbortController()
      const followed: boolean[] = []
      const {fetch, calls} = fakeFetch((call) => {
        followed.push(getEventListeners(controller.signal, 'abort').length > 0 && call.signal?.aborted === false)
        return call.url.includes('page=2') ? jsonResponse(200, page([app('a3', 'three')], null, 3)) : jsonResponse(200, page([app('a1', 'one'), app('a2', 'two')], next, 3))
      })
      const c = client({fetch})

      // Not aborted: both pages, each request under the call signal.
      const ids: string[] = []
      for await (const a of c.k8sApps.list({}, {signal: controller.signal})) ids.push(a.id)
      assert.deepEqual(ids, ['a1', 'a2', 'a3'])
      assert.equal(calls.length, 2)
      assert.deepEqual(followed, [true, true], 'every page request ran under the call signal')
      assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'nothing holds on to the call signal afterwards')

      // Aborted after the first page: no second page request.
      calls.length = 0
      const stop = new AbortController()
      const seen: string[] = []
      const error = await rejection((async () => {
        for await (const a of c.k8sApps.list({}, {signal: stop.signal})) {
          seen.push(a.id)
          if (a.id === 'a2') stop.abort()
        }
      })())
      isAborted(error, 0)
      assert.deepEqual(seen, ['a1', 'a2'])
      assert.equal(calls.length, 1)
    })

    it('adoptOrCreate with an aborted signal makes no request', async () => {
      const {fetch, calls} = fakeFetch(() => jsonResponse(200, page([])))
      const error = await rejection(adoptOrCreate(client({fetch}).k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}, signal: AbortSignal.abort()}))
      isAborted(error, 0)
      assert.equal(calls.length, 0)
    })

    it('adoptOrCreate passes the signal into list and create, and an abort ends its post-409 lookup delay', async () => {
      const controller = new AbortController()
      const followed: boolean[] = []
      const {fetch, calls} = fakeFetch((call) => {
        followed.push(getEventListeners(controller.signal, 'abort').length > 0)
        if (call.method === 'POST') {
          setTimeout(() => controller.abort(), 20)
          return jsonResponse(409, contractError('unique', 'exists'))
        }
        return jsonResponse(200, page([]))
      })
      // On fake time the 30 s lookup delay never passes by itself: only the abort can end it.
      const clock = new FakeTimers()
      const error = await rejection(adoptOrCreate(client({fetch, clock}).k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}, conflictLookupDelayMs: 30_000, signal: controller.signal, clock}))
      isAborted(error, 0)
      // The initial lookup, the create and the first post-409 lookup (no delay before it); nothing after the abort.
      assert.deepEqual(calls.map((call) => call.method), ['GET', 'POST', 'GET'])
      assert.deepEqual(followed, [true, true, true], 'every request ran under the signal')
    })
  })

  describe('maxAttempts', () => {
    it('maxAttempts 2 with an always-503 API makes exactly 2 requests', async () => {
      const {fetch, calls} = fakeFetch(() => jsonResponse(503, contractError('service_unavailable', 'Down.')))
      const clock = new FakeTimers()
      const error = await rejection(onFakeTime(clock, client({fetch, retry: {maxAttempts: 2, baseDelayMs: 1}, clock}).hosts.get('h1')))
      assert.ok(error instanceof ApiServerError)
      assert.equal(error.attempts, 2)
      await pastAnyRetry(clock)
      assert.equal(calls.length, 2)
    })

    it('maxAttempts 2 with a network error on every attempt makes exactly 2 requests', async () => {
      const {fetch, calls} = fakeFetch(() => Promise.reject(Object.assign(new TypeError('fetch failed'), {cause: {code: 'ECONNRESET'}})))
      const clock = new FakeTimers()
      const error = await rejection(onFakeTime(clock, client({fetch, retry: {maxAttempts: 2, baseDelayMs: 1}, clock}).hosts.get('h1')))
      assert.ok(error instanceof ApiNetworkError)
      assert.equal(error.cause, 'ECONNRESET')
      assert.equal(error.attempts, 2)
      await pastAnyRetry(clock)
      assert.equal(calls.length, 2)
    })

    it('maxAttempts 1 makes exactly one request', async () => {
      const {fetch, calls} = fakeFetch(() => jsonResponse(503, {}))
      await rejection(client({fetch, retry: {maxAttempts: 1}}).hosts.get('h1'))
      assert.equal(calls.length, 1)
    })
  })

  describe('errors', () => {
    it('401 → ApiAuthError (not forbidden) with the contract code', async () => {
      server.reset((_req, res) => json(res, 401, contractError('authentication_failed', 'Invalid token.')))
      const error = await rejection(client().agents.listAll())
      assert.ok(error instanceof ApiAuthError)
      assert.ok(error instanceof ApiError)
      assert.equal(error.forbidden, false)
      assert.equal(error.status, 401)
      assert.equal(error.code, 'authentication_failed')
      assert.equal(error.detail, 'Invalid token.')
      assert.equal(error.method, 'GET')
      assert.equal(error.path, '/api/v1/agents/')
      assert.equal(error.message, 'The Polycrate API rejected the API token (401 Unauthorized: authentication_failed: Invalid token.) on GET /api/v1/agents/: check the token (OperatorConfig secret or --token); it may be revoked or expired.')
    })

    it('403 → ApiAuthError forbidden', async () => {
      server.reset((_req, res) => json(res, 403, contractError('permission_denied', 'You do not have permission to perform this action.')))
      const error = await rejection(client().operatorRollout.status())
      assert.ok(error instanceof ApiAuthError)
      assert.equal(error.forbidden, true)
      assert.equal(error.code, 'permission_denied')
      assert.match(error.message, /^The Polycrate API refused GET \/api\/v1\/operator-rollout\/ \(403 Forbidden: permission_denied: You do not have permission/)
    })

    it('404 → ApiNotFoundError', async () => {
      server.reset((_req, res) => json(res, 404, contractError('not_found', 'No K8sApp matches the given query.')))
      const error = await rejection(client().k8sApps.get('missing'))
      assert.ok(error instanceof ApiNotFoundError)
      assert.equal(error.message, 'Not found (404) on GET /api/v1/kubernetes/apps/missing/: not_found: No K8sApp matches the given query.')
    })

    it('409 → ApiConflictError naming the constraint', async () => {
      server.reset((_req, res) => json(res, 409, contractError('unique_k8s_cluster_per_workspace', 'A cluster already exists in this workspace.')))
      const error = await rejection(client().k8sClusters.create({name: 'c', kind: 'generic'}))
      assert.ok(error instanceof ApiConflictError)
      assert.equal(error.code, 'unique_k8s_cluster_per_workspace')
      assert.match(error.message, /^Conflict \(409\) on POST \/api\/v1\/kubernetes\/clusters\/: the object already exists/)
    })

    it('400 → ApiValidationError with every field error', async () => {
      server.reset((_req, res) => json(res, 400, {
        type: 'validation_error',
        errors: [
          {code: 'required', detail: 'This field is required.', attr: 'remote_address'},
          {code: 'invalid', detail: 'Enter a valid slug.', attr: 'name'},
        ],
      }))
      const error = await rejection(client().endpoints.create({name: 'Not A Slug', remote_address: ''}))
      assert.ok(error instanceof ApiValidationError)
      assert.equal(error.attr, 'remote_address')
      assert.deepEqual(error.fieldErrors, {remote_address: ['This field is required.'], name: ['Enter a valid slug.']})
      assert.equal(error.message, 'The Polycrate API rejected POST /api/v1/endpoints/ (400 Bad Request): remote_address: This field is required.; name: Enter a valid slug.')
    })

    it('reads DRF-style {detail} and plain-text error bodies', async () => {
      server.reset((_req, res, n) => {
        if (n === 1) json(res, 404, {detail: 'Not found.'})
        else res.writeHead(405, {'content-type': 'text/plain'}).end('Method "PUT" not allowed.')
      })
      const c = client()
      const notFound = await rejection(c.hosts.get('x'))
      assert.ok(notFound instanceof ApiNotFoundError)
      assert.equal(notFound.detail, 'Not found.')
      const other = await rejection(c.hosts.replace('x', {name: 'h', hostname: 'h'}))
      assert.ok(other instanceof ApiError)
      assert.equal(other.status, 405)
      assert.equal(other.message, 'The Polycrate API answered 405 Method Not Allowed on PUT /api/v1/hosts/x/: Method "PUT" not allowed.')
    })

    it('a 2xx body that breaks the contract → ApiContractError naming the path', async () => {
      server.reset((_req, res) => json(res, 200, page([{id: 'e1', name: 'web', remote_address: 'a', kind: 'http', remote_port: '80'}])))
      const error = await rejection(client().endpoints.listAll())
      assert.ok(error instanceof ApiContractError)
      assert.equal(error.message, 'GET /api/v1/endpoints/ → results[0].remote_port: expected number, received string')
      assert.equal(server.count(), 1, 'a contract error is not retried')
    })

    it('names every mismatch: the first in the message, all in `issues`', async () => {
      server.reset((_req, res) => json(res, 200, {id: 'z1::1', content: 7, type: 'BOGUS', dns_zone: 5}))
      const error = await rejection(client().dnsRecords.get('z1::1'))
      assert.ok(error instanceof ApiContractError)
      assert.equal(error.message, 'GET /api/v1/domains/dnsrecords/z1%3A%3A1/ → dns_zone: matches none of the allowed types (and 2 more mismatches)')
      assert.deepEqual(error.issues.slice(1), ['content: expected string, received number', 'type: expected one of "A"|"AAAA"|"CNAME"|"MX"|"TXT"|"SRV"|"CAA"|"NS"|"PTR"|"TLSA"|"SSHFP"|"HTTPS"|"SVCB"|"ALIAS"|"NAPTR"'])
    })

    it('a missing required field and a non-JSON body are contract errors', async () => {
      server.reset((_req, res, n) => (n === 1 ? json(res, 200, {status: 'success', workspace_id: 'w', workspace_name: 'W', organization_id: null, organization_name: null}) : res.writeHead(200, {'content-type': 'text/html'}).end('<html>login</html>')))
      const c = client()
      const missing = await rejection(c.agent.health({kind: 'operator', version: '1.0.0'}))
      assert.ok(missing instanceof ApiContractError)
      assert.equal(missing.message, 'POST /api/v1/agent/health/ → agent_id: missing (expected string)')
      const html = await rejection(c.systemConfig.get())
      assert.ok(html instanceof ApiContractError)
      assert.equal(html.message, 'GET /api/v1/system/config/ → the response body is not JSON')
    })
  })

  describe('pagination', () => {
    it('follows `next` across 3 pages, keeping the filters, on the client origin', async () => {
      server.reset((req, res) => {
        const p = Number(req.query.get('page') ?? '1')
        // The API reports a different host (behind a proxy); the client must stay on its own origin.
        const next = (n: number) => `http://api.internal.example:8000/api/v1/kubernetes/apps/?k8s_cluster=${CLUSTER}&page=${n}&page_size=2`
        if (p === 1) json(res, 200, page([app('a1', 'one'), app('a2', 'two')], next(2), 5))
        else if (p === 2) json(res, 200, page([app('a3', 'three'), app('a4', 'four')], next(3), 5))
        else json(res, 200, page([app('a5', 'five')], null, 5))
      })
      const all = await client().k8sApps.listAll({k8s_cluster: CLUSTER, page_size: 2})
      assert.deepEqual(all.map((a) => a.id), ['a1', 'a2', 'a3', 'a4', 'a5'])
      assert.equal(server.count(), 3)
      assert.deepEqual(server.seen.map((s) => s.query.get('page')), [null, '2', '3'])
      for (const s of server.seen) {
        assert.equal(s.query.get('k8s_cluster'), CLUSTER)
        assert.equal(s.headers.authorization, `Bearer ${TOKEN}`)
      }
    })

    it('counts pages up with page= when the API leaves `next` out', async () => {
      server.reset((req, res) => {
        const p = Number(req.query.get('page') ?? '1')
        res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({count: 3, results: p === 1 ? [app('a1', 'one'), app('a2', 'two')] : p === 2 ? [app('a3', 'three')] : []}))
      })
      const ids: string[] = []
      for await (const a of client().k8sApps.list()) ids.push(a.id)
      assert.deepEqual(ids, ['a1', 'a2', 'a3'])
      assert.equal(server.count(), 2)
    })

    it('listPage returns one page and findOne the first match', async () => {
      server.reset((req, res) => json(res, 200, page(req.query.get('name_exact') === 'two' ? [app('a2', 'two')] : [], null)))
      const c = client()
      assert.equal((await c.k8sApps.findOne({name_exact: 'two', k8s_cluster: CLUSTER}))?.id, 'a2')
      assert.equal(await c.k8sApps.findOne({name_exact: 'zzz'}), undefined)
      const first = await c.k8sApps.listPage({page: 1, page_size: 10})
      assert.equal(first.count, 0)
      assert.equal(server.seen[2]?.query.get('page_size'), '10')
    })
  })

  describe('metrics', () => {
    it('counts every attempt by method, resource (no ids) and code, and times them', async () => {
      const registry = new Registry()
      server.reset((_req, res, n) => (n === 1 ? json(res, 503, {}) : json(res, 200, app('a1', 'web'))))
      const c = client({registry})
      await c.k8sApps.get(CLUSTER)
      server.reset((_req, res) => res.socket?.destroy())
      await rejection(c.hosts.get('h1'))
      const counter = await registry.getSingleMetric('polycrate_api_requests_total')?.get()
      assert.ok(counter)
      const byLabels = Object.fromEntries(counter.values.map((v) => [`${v.labels.method} ${v.labels.resource} ${v.labels.code}`, v.value]))
      assert.deepEqual(byLabels, {
        'GET kubernetes/apps 503': 1,
        'GET kubernetes/apps 200': 1,
        'GET hosts network': 5,
      })
      const histogram = await (registry.getSingleMetric('polycrate_api_request_duration_seconds') as Histogram | undefined)?.get()
      assert.ok(histogram)
      const count = histogram.values.find((v) => v.metricName === 'polycrate_api_request_duration_seconds_count' && v.labels.resource === 'kubernetes/apps')
      assert.equal(count?.value, 2)
      assert.equal(count?.labels.method, 'GET')
    })

    it('shares the metrics of two clients on one registry', () => {
      const registry = new Registry()
      client({registry})
      client({registry})
      assert.equal(registry.getMetricsAsArray().length, 2)
    })

    it('derives the resource label from a path without ids', () => {
      assert.equal(resourceLabel(`/api/v1/kubernetes/apps/${CLUSTER}/`), 'kubernetes/apps')
      assert.equal(resourceLabel(`/api/v1/operator-rollout/${CLUSTER}/force-update/`), 'operator-rollout/force-update')
      assert.equal(resourceLabel('/api/v1/domains/dnsrecords/z1%3A%3A77/'), 'domains/dnsrecords')
      assert.equal(resourceLabel('/api/v1/backups/backup-schedules/'), 'backups/backup-schedules')
    })
  })

  describe('the token stays secret', () => {
    it('appears nowhere in errors or logs, even when the API echoes it', async () => {
      const errors: Error[] = []
      const c = client({retry: {maxAttempts: 2, baseDelayMs: 1}, timeoutMs: 100})
      server.reset((_req, res) => json(res, 401, contractError('authentication_failed', `Invalid token ${TOKEN}.`, `token ${TOKEN}`)))
      errors.push(await rejection(c.agents.listAll()))
      server.reset((_req, res) => json(res, 400, {token: [`${TOKEN} is not valid`]}))
      errors.push(await rejection(c.agent.health({})))
      server.reset((_req, res) => json(res, 200, {[TOKEN]: 1, count: 'x', results: []}))
      errors.push(await rejection(c.hosts.listAll()))
      server.reset((_req, res) => json(res, 503, contractError('down', TOKEN)))
      errors.push(await rejection(c.hosts.get('h1')))
      server.reset(() => {})
      errors.push(await rejection(c.hosts.get('h1')))
      server.reset((_req, res) => res.socket?.destroy())
      errors.push(await rejection(c.hosts.get('h1')))

      assert.deepEqual(errors.map((e) => e.constructor.name), ['ApiAuthError', 'ApiValidationError', 'ApiContractError', 'ApiServerError', 'ApiNetworkError', 'ApiNetworkError'])
      for (const error of errors) {
        for (const text of [JSON.stringify(error), error.message, String(error.stack), inspect(error, {depth: 10}), String(error)]) {
          assert.equal(text.includes(TOKEN), false, `${error.name}: ${text}`)
        }
      }
      assert.ok(logLines.length > 0)
      for (const line of logLines) assert.equal(line.includes(TOKEN), false, line)
      assert.equal(inspect(c, {depth: 10}).includes(TOKEN), false)
      assert.equal(JSON.stringify(c).includes(TOKEN), false)
    })
  })

  describe('adoptOrCreate', () => {
    it('adopts an existing object without POST', async () => {
      server.reset((req, res) => json(res, 200, page(req.query.get('name_exact') === 'web' ? [app('a1', 'web')] : [])))
      const result = await adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web', k8s_cluster: CLUSTER}, body: {name: 'web', k8s_cluster: CLUSTER}})
      assert.deepEqual({id: result.object.id, created: result.created}, {id: 'a1', created: false})
      assert.equal(server.count('POST'), 0)
      assert.equal(server.seen[0]?.query.get('k8s_cluster'), CLUSTER)
    })

    it('creates once when nothing matches', async () => {
      server.reset((req, res) => (req.method === 'POST' ? json(res, 201, app('a9', 'web')) : json(res, 200, page([]))))
      const result = await adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web', k8s_cluster: CLUSTER}, body: {name: 'web', k8s_cluster: CLUSTER}})
      assert.deepEqual({id: result.object.id, created: result.created}, {id: 'a9', created: true})
      assert.equal(server.count('POST'), 1)
    })

    it('treats 409 as "exists" and adopts the object once the lookup sees it', async () => {
      let gets = 0
      server.reset((req, res) => {
        if (req.method === 'POST') return json(res, 409, contractError('unique', 'exists'))
        gets++
        // The racing create becomes visible only on the third lookup.
        json(res, 200, page(gets >= 3 ? [app('a1', 'web')] : []))
      })
      const result = await adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}, conflictLookupDelayMs: 5})
      assert.deepEqual({id: result.object.id, created: result.created}, {id: 'a1', created: false})
      assert.equal(server.count('POST'), 1)
      assert.equal(gets, 3)
    })

    it('skipLookup: creates without the first lookup, and a 409 (the key existed after all) still adopts', async () => {
      server.reset((req, res) => (req.method === 'POST' ? json(res, 409, contractError('unique', 'exists')) : json(res, 200, page([app('a1', 'web')]))))
      const result = await adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}, skipLookup: true})
      assert.deepEqual({id: result.object.id, created: result.created}, {id: 'a1', created: false})
      assert.deepEqual(server.seen.map((req) => req.method), ['POST', 'GET'])
    })

    it('applies the match rule to the candidates', async () => {
      server.reset((_req, res) => json(res, 200, page([app('a1', 'web', {namespace: 'other'}), app('a2', 'web', {namespace: 'shop'})])))
      const result = await adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web', namespace: 'shop'}, matches: (a) => a.namespace === 'shop'})
      assert.equal(result.object.id, 'a2')
      assert.equal(server.count('POST'), 0)
    })

    it('gives up with ApiConflictError when a 409 never becomes visible', async () => {
      server.reset((req, res) => (req.method === 'POST' ? json(res, 409, contractError('unique', 'exists')) : json(res, 200, page([]))))
      const error = await rejection(adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}, conflictLookups: 3, conflictLookupDelayMs: 1}))
      assert.ok(error instanceof ApiConflictError)
      assert.match(error.message, /no existing object matches the lookup \(name_exact=web\) after 3 lookups/)
      assert.equal(server.count('GET'), 4)
    })

    it('does not swallow other errors', async () => {
      server.reset((req, res) => (req.method === 'POST' ? json(res, 400, contractError('invalid', 'bad', 'name')) : json(res, 200, page([]))))
      const error = await rejection(adoptOrCreate(client().k8sApps, {lookup: {name_exact: 'web'}, body: {name: 'web'}}))
      assert.ok(error instanceof ApiValidationError)
    })
  })

  describe('parseRetryAfter', () => {
    const now = Date.parse('2026-01-06T14:30:00Z')
    const cases: Array<[string | null, number | undefined]> = [
      [null, undefined],
      ['', undefined],
      ['0', 0],
      ['3', 3_000],
      ['1.5', 1_500],
      ['Tue, 06 Jan 2026 14:30:10 GMT', 10_000],
      ['Tue, 06 Jan 2026 14:29:00 GMT', 0],
      ['soon', undefined],
      ['-1', undefined],
    ]
    for (const [value, expected] of cases) {
      it(`${JSON.stringify(value)} → ${expected}`, () => assert.equal(parseRetryAfter(value, now), expected))
    }
  })
})
