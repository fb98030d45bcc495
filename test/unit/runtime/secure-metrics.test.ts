/**
 * The decisions of `--metrics-secure` against a stand-in for the apiserver's two review APIs (the real apiserver with
 * real ServiceAccount tokens: test/integration/metrics-secure.test.ts). What is asserted is what a scraper sees (the
 * status and text) and how many reviews reach the apiserver (the caches of controller-runtime's filter).
 */
import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {createCertificate} from '../../../src/lib/x509.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {bearerToken, MetricsAuthorizer, METRICS_AUTH_CACHE_TTLS, startSecureMetricsServer} from '../../../src/operator/runtime/secure-metrics.js'
import {IN_POD_LISTEN, listenAddresses, OUT_OF_POD_LISTEN} from '../../../src/cli/run-command.js'
import {FakeTimers} from '../../support/fake-timers.js'
import {eventually} from '../../support/helpers.js'

type Body = {kind: string; spec: Record<string, unknown>}

/** The apiserver's review APIs: tokens it accepts, users allowed to get /metrics, failures on demand. */
class ReviewApi {
  readonly bodies: Body[] = []
  users: Record<string, {username: string; uid: string; groups: string[]}> = {
    'token-reader': {username: 'system:serviceaccount:monitoring:vmagent', uid: 'u1', groups: ['system:serviceaccounts', 'system:serviceaccounts:monitoring', 'system:authenticated']},
    'token-other': {username: 'system:serviceaccount:default:app', uid: 'u2', groups: ['system:serviceaccounts']},
  }
  allowed = new Set(['system:serviceaccount:monitoring:vmagent get /metrics'])
  failNext = 0
  answerGate?: Promise<void>

  async create(_ref: unknown, body: object): Promise<unknown> {
    const review = body as Body
    this.bodies.push(review)
    await this.answerGate
    if (this.failNext > 0) {
      this.failNext--
      throw new Error('connect ECONNREFUSED')
    }
    if (review.kind === 'TokenReview') {
      const user = this.users[review.spec.token as string]
      return {status: user ? {authenticated: true, user} : {authenticated: false, error: 'invalid bearer token'}}
    }
    const attributes = review.spec.nonResourceAttributes as {path: string; verb: string}
    return {status: {allowed: this.allowed.has(`${review.spec.user as string} ${attributes.verb} ${attributes.path}`)}}
  }

  count(kind: string): number {
    return this.bodies.filter((body) => body.kind === kind).length
  }
}

describe('--metrics-secure: who may read /metrics (MetricsAuthorizer)', () => {
  let api: ReviewApi
  let clock: FakeTimers
  let authorizer: MetricsAuthorizer
  beforeEach(() => {
    api = new ReviewApi()
    clock = new FakeTimers()
    authorizer = new MetricsAuthorizer({client: api, clock})
  })
  const get = (authorization?: string, method = 'GET') => authorizer.check({authorization, method, path: '/metrics'})

  const answers: Array<{name: string; authorization?: string; method?: string; status: number | 'allowed'; message?: string; reviews: [tokenReviews: number, accessReviews: number]}> = [
    {name: 'no Authorization header → 401, no review', status: 401, message: 'Unauthorized', reviews: [0, 0]},
    {name: 'Basic credentials → 401, no review', authorization: 'Basic dXNlcjpwYXNz', status: 401, message: 'Unauthorized', reviews: [0, 0]},
    {name: '"Bearer" without a token → 401, no review', authorization: 'Bearer ', status: 401, message: 'Unauthorized', reviews: [0, 0]},
    {name: 'a token the apiserver does not accept → 401', authorization: 'Bearer forged', status: 401, message: 'Unauthorized', reviews: [1, 0]},
    {name: 'a valid token without the right → 403 naming the user', authorization: 'Bearer token-other', status: 403, message: 'Authorization denied for user system:serviceaccount:default:app', reviews: [1, 1]},
    {name: 'a valid token with get on /metrics → allowed', authorization: 'Bearer token-reader', status: 'allowed', reviews: [1, 1]},
    {name: 'the scheme in any case, as Kubernetes reads it', authorization: 'bearer token-reader', status: 'allowed', reviews: [1, 1]},
    {name: 'HEAD is the verb "head", which the reader\'s rule does not grant → 403', authorization: 'Bearer token-reader', method: 'HEAD', status: 403, reviews: [1, 1]},
  ]
  for (const c of answers) {
    it(c.name, async () => {
      const access = await get(c.authorization, c.method)
      if (c.status === 'allowed') assert.deepEqual(access, {allowed: true, user: 'system:serviceaccount:monitoring:vmagent'})
      else {
        assert.equal(access.allowed, false)
        if (!access.allowed) {
          assert.equal(access.status, c.status)
          if (c.message) assert.equal(access.message, c.message)
        }
      }
      assert.deepEqual([api.count('TokenReview'), api.count('SubjectAccessReview')], c.reviews)
    })
  }

  it('asks as controller-runtime\'s filter does: the token, then the user with system:authenticated, the non-resource path and verb', async () => {
    api.users['token-other']!.groups = ['system:serviceaccounts'] // without system:authenticated: it is added
    await get('Bearer token-other')
    assert.deepEqual(api.bodies[0], {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: {token: 'token-other'}})
    assert.deepEqual(api.bodies[1], {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: {user: 'system:serviceaccount:default:app', uid: 'u2', groups: ['system:serviceaccounts', 'system:authenticated'], nonResourceAttributes: {path: '/metrics', verb: 'get'}},
    })
  })

  it('caches a token\'s review for 1 minute, an allowed decision for 5 minutes', async () => {
    assert.equal((await get('Bearer token-reader')).allowed, true)
    await clock.advance(METRICS_AUTH_CACHE_TTLS.tokenMs - 1)
    assert.equal((await get('Bearer token-reader')).allowed, true)
    assert.deepEqual([api.count('TokenReview'), api.count('SubjectAccessReview')], [1, 1])
    await clock.advance(1)
    assert.equal((await get('Bearer token-reader')).allowed, true)
    assert.deepEqual([api.count('TokenReview'), api.count('SubjectAccessReview')], [2, 1], 'the token reviewed again, the decision still cached')
    await clock.advance(METRICS_AUTH_CACHE_TTLS.allowMs - METRICS_AUTH_CACHE_TTLS.tokenMs)
    assert.equal((await get('Bearer token-reader')).allowed, true)
    assert.deepEqual([api.count('TokenReview'), api.count('SubjectAccessReview')], [3, 2])
  })

  it('caches a refused token for 1 minute and a denied decision for 30 seconds: a right granted shows after that', async () => {
    assert.equal((await get('Bearer forged')).allowed, false)
    assert.equal((await get('Bearer forged')).allowed, false)
    assert.equal(api.count('TokenReview'), 1)
    assert.equal(((await get('Bearer token-other')) as {status: number}).status, 403)
    api.allowed.add('system:serviceaccount:default:app get /metrics')
    await clock.advance(METRICS_AUTH_CACHE_TTLS.denyMs - 1)
    assert.equal(((await get('Bearer token-other')) as {status: number}).status, 403, 'still the cached denial')
    await clock.advance(1)
    assert.equal((await get('Bearer token-other')).allowed, true)
    assert.equal(api.count('SubjectAccessReview'), 2)
  })

  it('a review that fails → 500, not cached: the next scrape asks again', async () => {
    api.failNext = 1 // the TokenReview
    assert.deepEqual(await get('Bearer token-reader'), {allowed: false, status: 500, message: 'Authentication failed'})
    assert.equal((await get('Bearer token-reader')).allowed, true)
    await clock.advance(METRICS_AUTH_CACHE_TTLS.allowMs) // both caches expired
    api.users['token-reader'] = {...api.users['token-reader']!}
    const reviews = api.bodies.length
    const failAccessReview = {create: (ref: unknown, body: object) => ((body as Body).kind === 'SubjectAccessReview' && api.bodies.length === reviews + 1 ? (api.bodies.push(body as Body), Promise.reject(new Error('timeout'))) : api.create(ref, body))}
    authorizer = new MetricsAuthorizer({client: failAccessReview, clock})
    assert.deepEqual(await get('Bearer token-reader'), {allowed: false, status: 500, message: 'Authorization for user system:serviceaccount:monitoring:vmagent failed'})
    assert.equal((await get('Bearer token-reader')).allowed, true)
  })

  it('concurrent scrapes with one token share one review of each kind', async () => {
    let open!: () => void
    api.answerGate = new Promise((resolve) => (open = resolve))
    const pending = Array.from({length: 10}, () => get('Bearer token-reader'))
    open()
    const results = await Promise.all(pending)
    assert.ok(results.every((result) => result.allowed))
    assert.deepEqual([api.count('TokenReview'), api.count('SubjectAccessReview')], [1, 1])
  })

  it('bearerToken reads the header as Kubernetes does', () => {
    const cases: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined], ['', undefined], ['Bearer', undefined], ['Bearer  x', undefined], ['Token x', undefined],
      ['Bearer abc', 'abc'], ['  BEARER abc  ', 'abc'], ['Bearer abc def', 'abc'],
    ]
    for (const [header, token] of cases) assert.equal(bearerToken(header), token, String(header))
  })
})

describe('startSecureMetricsServer: the certificate directory', () => {
  const start = (certDir: string, bindAddress = '127.0.0.1:0', clock = new FakeTimers()) => startSecureMetricsServer({bindAddress, certDir, metrics: new OperatorMetrics({processMetrics: false}), client: new ReviewApi(), clock, namespace: 'polycrate'})

  it('a key of another certificate stops the start, saying what to give; disabled (0): nothing is read', async function () {
    this.timeout(10_000)
    const dir = await mkdtemp(path.join(tmpdir(), 'metrics-certs-'))
    try {
      const [a, b] = await Promise.all([createCertificate({commonName: 'a'}), createCertificate({commonName: 'b'})])
      await writeFile(path.join(dir, 'tls.crt'), a.cert)
      await writeFile(path.join(dir, 'tls.key'), b.key)
      await assert.rejects(start(dir), /--metrics-cert-dir .*: no usable tls\.crt and tls\.key \(.*the private key does not belong to the certificate.*\); give a directory with a PEM certificate and its key, or leave the flag out/)
      assert.equal(await start(path.join(dir, 'missing'), '0'), undefined)
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })

  it('no tls.crt/tls.key (the optional Secret not there yet): a self-signed certificate for the metrics Service, then the files once they appear', async function () {
    this.timeout(20_000)
    const dir = await mkdtemp(path.join(tmpdir(), 'metrics-certs-'))
    const clock = new FakeTimers()
    const server = await start(dir, '127.0.0.1:0', clock)
    try {
      const served = (subject: RegExp) => eventually(async () => {
        if (subject.test(server!.reloader.serving?.subject ?? '')) return true
        await clock.advance(10_000) // the directory's poll (file-system events may come first)
        return false
      }, 15_000, `serving ${subject}`)
      await served(/CN=polycrate-operator-metrics\.polycrate\.svc/)
      const pair = await createCertificate({commonName: 'from-the-secret'})
      await writeFile(path.join(dir, 'tls.key'), pair.key)
      await writeFile(path.join(dir, 'tls.crt'), pair.cert)
      await served(/CN=from-the-secret/)
    } finally {
      await server?.close()
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('operator run: where its servers listen (listenAddresses)', () => {
  type Flags = Record<'metrics-bind-address' | 'health-probe-bind-address' | 'external-dns-webhook-host', string | undefined>
  const none: Flags = {'metrics-bind-address': undefined, 'health-probe-bind-address': undefined, 'external-dns-webhook-host': undefined}
  const cases: Array<{name: string; flags: Partial<Flags>; inPod: boolean; want?: ReturnType<typeof listenAddresses>; error?: RegExp}> = [
    {name: 'out of a Pod, no flags: loopback', flags: {}, inPod: false, want: {metrics: '127.0.0.1:8080', probes: '127.0.0.1:8081', externalDnsWebhookHost: '127.0.0.1'}},
    {name: 'in a Pod, no flags: the reference\'s addresses on every interface', flags: {}, inPod: true, want: {metrics: ':8080', probes: ':8081', externalDnsWebhookHost: '::'}},
    {name: 'out of a Pod, addresses given: those', flags: {'metrics-bind-address': ':9090', 'health-probe-bind-address': '0', 'external-dns-webhook-host': '0.0.0.0'}, inPod: false, want: {metrics: ':9090', probes: '0', externalDnsWebhookHost: '0.0.0.0'}},
    {name: 'in a Pod, addresses given: those', flags: {'metrics-bind-address': '127.0.0.1:8080', 'external-dns-webhook-host': '::1'}, inPod: true, want: {metrics: '127.0.0.1:8080', probes: ':8081', externalDnsWebhookHost: '::1'}},
    {name: 'a bad metrics address names its flag', flags: {'metrics-bind-address': '8080'}, inPod: false, error: /Invalid --metrics-bind-address "8080"/},
    {name: 'a bad webhook host names its flag', flags: {'external-dns-webhook-host': 'not a host'}, inPod: true, error: /Invalid --external-dns-webhook-host "not a host"/},
    {name: 'a host with a port is no host', flags: {'external-dns-webhook-host': '127.0.0.1:8888'}, inPod: true, error: /Invalid --external-dns-webhook-host/},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const flags = {...none, ...c.flags}
      if (c.error) return assert.throws(() => listenAddresses(flags, c.inPod), c.error)
      assert.deepEqual(listenAddresses(flags, c.inPod), c.want)
    })
  }

  it('the defaults are the exported constants the manifests and the README use', () => {
    assert.deepEqual(listenAddresses(none, true), IN_POD_LISTEN)
    assert.deepEqual(listenAddresses(none, false), OUT_OF_POD_LISTEN)
  })
})
