/**
 * Both DNS webhooks at the HTTP level, served in-process against the API simulator: malformed requests (each a
 * 4xx with a reason, no DNS write, the server keeps serving), zone scoping, idempotency, undoing a half-applied
 * multi-value change, DNS01 caller authentication, and load (500 changes in one POST /records; p99 per change).
 */
import assert from 'node:assert/strict'
import {X509Certificate} from 'node:crypto'
import https from 'node:https'
import {Registry} from 'prom-client'
import {createLogger} from '../../src/lib/logger.js'
import {createCertificate, type CertificateAndKey} from '../../src/lib/x509.js'
import {ApiSession} from '../../src/operator/agent/api-session.js'
import {startDns01Webhook} from '../../src/operator/dns/dns01-webhook.js'
import {startExternalDnsWebhook} from '../../src/operator/dns/external-dns-webhook.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'
import type {RunningHttpServer} from '../../src/lib/http-server.js'
import {ApiSimulator} from '../support/api-simulator/index.js'

const MEDIA = EXTERNAL_DNS_MEDIA_TYPE
type Row = Record<string, unknown> & {id: string; name: string; type: string; content: string; dns_zone: string}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}

describe('DNS webhooks at the HTTP level (in-process servers, API simulator)', function () {
  this.timeout(300_000)
  let sim: ApiSimulator
  let zone: {id: string; name: string}
  let foreignZone: {id: string; name: string}
  const logLines: Array<Record<string, unknown>> = []
  const logger = createLogger({level: 'debug', format: 'json', write: (line) => logLines.push(JSON.parse(line) as Record<string, unknown>)})
  const registry = new Registry()
  let session: ApiSession

  const records = (zoneId = zone.id) => sim.list('domains/dnsrecords').filter((r) => r.dns_zone === zoneId) as Row[]
  const writes = () => sim.requests.filter((r) => r.path.includes('/domains/dnsrecords') && r.method !== 'GET')

  before(async () => {
    sim = await ApiSimulator.start()
    const org = sim.createOrganization(`org-${Math.random().toString(36).slice(2, 8)}`)
    const workspace = sim.createWorkspace({name: 'ws', organizationId: org.id})
    const token = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
    zone = sim.insert('domains/dnszones', {name: 'zone-a.example', kind: 'internal', organization: org.id}) as {id: string; name: string}
    // A zone of another organization: the token can neither see nor write it.
    const other = sim.createOrganization(`other-${Math.random().toString(36).slice(2, 8)}`)
    foreignZone = sim.insert('domains/dnszones', {name: 'foreign.example', kind: 'internal', organization: other.id}) as {id: string; name: string}
    session = new ApiSession({})
    session.clientFor(sim.url, token)
    session.connected({workspaceId: workspace.id, workspaceName: 'ws'})
  })
  after(async () => {
    await sim.close()
  })

  describe('external-dns webhook provider', () => {
    let server: RunningHttpServer
    let base: string
    const post = (path: string, body: unknown, contentType = MEDIA) =>
      fetch(`${base}${path}`, {method: 'POST', headers: {'Content-Type': contentType, Accept: MEDIA}, body: typeof body === 'string' ? body : JSON.stringify(body)})
    const a = (dnsName: string, ...targets: string[]) => ({dnsName, targets, recordType: 'A'})

    before(async () => {
      server = await startExternalDnsWebhook({port: 0, host: '127.0.0.1', session, registry, logger})
      base = `http://127.0.0.1:${server.address.port}`
    })
    after(() => server.close())

    it('negotiates with the exact media type and the zones the token sees as DomainFilter', async () => {
      const response = await fetch(`${base}/`, {headers: {Accept: MEDIA}})
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('content-type'), MEDIA)
      assert.deepEqual(await response.json(), {include: ['zone-a.example']})
      assert.equal((await fetch(`${base}/healthz`)).status, 200)
    })

    it('answers 12+ malformed requests with a 4xx and a reason, writes nothing, and keeps serving', async () => {
      sim.clearRequests()
      const before = records().length
      const cases: Array<[string, () => Promise<Response>, number, RegExp]> = [
        ['negotiation with the wrong media type', () => fetch(`${base}/`, {headers: {Accept: 'application/json'}}), 406, /Accept must be/],
        ['POST /records as application/json', () => post('/records', {create: [a('x.zone-a.example', '192.0.2.1')]}, 'application/json'), 415, /Content-Type must be/],
        ['truncated JSON', () => post('/records', '{"create":[{"dnsName":"x.zone-a.example","targ'), 400, /not valid JSON/],
        ['unknown record type', () => post('/records', {create: [{dnsName: 'x.zone-a.example', targets: ['x'], recordType: 'PTRX'}]}), 400, /not supported/],
        ['a 10 MB body', () => post('/records', JSON.stringify({create: [a('x.zone-a.example', '192.0.2.1')], pad: 'x'.repeat(10 * 1024 * 1024)})), 413, /larger than/],
        ['a name in a zone of another organization', () => post('/records', {create: [a('www.foreign.example', '192.0.2.1')]}), 422, /no DNS zone the agent token can see/],
        ['a name in no zone at all', () => post('/records', {create: [a('www.nowhere.test', '192.0.2.1')]}), 422, /no DNS zone the agent token can see/],
        ['one good and one outside name: nothing written', () => post('/records', {create: [a('ok.zone-a.example', '192.0.2.1'), a('www.nowhere.test', '192.0.2.1')]}), 422, /nothing was changed/],
        ['an A record with a host name', () => post('/records', {create: [a('x.zone-a.example', 'not-an-ip')]}), 400, /not valid for a A record/],
        ['updateOld without updateNew', () => post('/records', {updateOld: [a('x.zone-a.example', '192.0.2.1')]}), 400, /must pair up/],
        ['an array instead of Changes', () => post('/records', [a('x.zone-a.example', '192.0.2.1')]), 400, /expected object/],
        ['a routing policy (setIdentifier)', () => post('/records', {create: [{...a('x.zone-a.example', '192.0.2.1'), setIdentifier: 'eu'}]}), 400, /setIdentifier/],
        ['an invalid DNS name', () => post('/records', {create: [a('bad..name.zone-a.example', '192.0.2.1')]}), 400, /not a valid DNS name/],
        ['a create without targets', () => post('/records', {create: [{dnsName: 'x.zone-a.example', recordType: 'A'}]}), 400, /no targets/],
        ['a negative TTL', () => post('/records', {create: [{...a('x.zone-a.example', '192.0.2.1'), recordTTL: -5}]}), 400, /recordTTL/],
        ['PUT /records', () => fetch(`${base}/records`, {method: 'PUT', body: '{}'}), 405, /method not allowed/],
        ['adjustendpoints with targets that are not a list', () => post('/adjustendpoints', [{dnsName: 'x.zone-a.example', targets: 'oops', recordType: 'A'}]), 400, /targets/],
      ]
      assert.ok(cases.length >= 12)
      for (const [what, send, status, reason] of cases) {
        const response = await send()
        const text = await response.text()
        assert.equal(response.status, status, `${what}: ${response.status} ${text}`)
        assert.match(text, reason, what)
      }
      assert.deepEqual(writes(), [], 'no DNS write')
      assert.equal(records().length, before)
      assert.equal((await fetch(`${base}/healthz`)).status, 200)
      const good = await post('/records', {create: [a('still-serving.zone-a.example', '192.0.2.7')]})
      assert.equal(good.status, 204)
      assert.deepEqual(records().filter((r) => r.name === 'still-serving.zone-a.example').map((r) => r.content), ['192.0.2.7'])
    })

    it('creates multi-value records as one Endpoint, idempotently, and lists them back', async () => {
      const change = {create: [a('multi.zone-a.example', '192.0.2.10', '192.0.2.11'), {dnsName: 'mail.zone-a.example', targets: ['10 mx.zone-a.example'], recordType: 'MX', recordTTL: 300}]}
      assert.equal((await post('/records', change)).status, 204)
      assert.equal((await post('/records', change)).status, 204)
      assert.deepEqual(records().filter((r) => r.name === 'multi.zone-a.example').map((r) => r.content).sort(), ['192.0.2.10', '192.0.2.11'])
      const mx = records().filter((r) => r.name === 'mail.zone-a.example')
      assert.deepEqual(mx.map((r) => [r.content, r.priority, r.ttl]), [['mx.zone-a.example', 10, 300]])
      const listed = await (await fetch(`${base}/records`, {headers: {Accept: MEDIA}})).json() as Array<{dnsName: string; targets: string[]; recordType: string; recordTTL?: number}>
      assert.deepEqual(listed.find((e) => e.dnsName === 'multi.zone-a.example')?.targets.sort(), ['192.0.2.10', '192.0.2.11'])
      assert.deepEqual(listed.find((e) => e.dnsName === 'mail.zone-a.example'), {dnsName: 'mail.zone-a.example', targets: ['10 mx.zone-a.example'], recordType: 'MX', recordTTL: 300})
      assert.ok(listed.every((e) => e.dnsName.endsWith('zone-a.example')), 'only the token\'s zones')
    })

    it('undoes a half-applied multi-value update when the API fails part way, and answers 503', async () => {
      let posts = 0
      sim.faults.set({errorRate: 1, errorStatuses: [500], match: (method, path) => method === 'POST' && path.includes('/domains/dnsrecords') && ++posts >= 2})
      try {
        const response = await post('/records', {updateOld: [a('multi.zone-a.example', '192.0.2.10', '192.0.2.11')], updateNew: [a('multi.zone-a.example', '192.0.2.20', '192.0.2.21')]})
        assert.equal(response.status, 503, await response.text())
      } finally {
        sim.faults.clear()
      }
      assert.deepEqual(records().filter((r) => r.name === 'multi.zone-a.example').map((r) => r.content).sort(), ['192.0.2.10', '192.0.2.11'], 'the old record, whole')
      assert.ok(logLines.some((l) => l.msg === 'dns change failed' && l.undone === true && l.dnsName === 'multi.zone-a.example'))
      // external-dns sends the same change on its next sync: now it goes through.
      const retry = await post('/records', {updateOld: [a('multi.zone-a.example', '192.0.2.10', '192.0.2.11')], updateNew: [a('multi.zone-a.example', '192.0.2.20', '192.0.2.21')]})
      assert.equal(retry.status, 204)
      assert.deepEqual(records().filter((r) => r.name === 'multi.zone-a.example').map((r) => r.content).sort(), ['192.0.2.20', '192.0.2.21'])
    })

    it('applies 500 record changes in one POST /records, each once', async () => {
      const endpoints = Array.from({length: 500}, (_, i) => a(`load-${i}.zone-a.example`, `198.51.100.${i % 250}`))
      logLines.length = 0
      const started = performance.now()
      const response = await post('/records', {create: endpoints})
      const seconds = (performance.now() - started) / 1000
      assert.equal(response.status, 204, await response.text())
      const load = records().filter((r) => r.name.startsWith('load-'))
      assert.equal(load.length, 500)
      assert.equal(new Set(load.map((r) => r.name)).size, 500, 'each once')
      const ms = logLines.filter((l) => l.msg === 'dns change applied').map((l) => Number(l.ms))
      assert.equal(ms.length, 500, 'every change logged with its result')
      process.stderr.write(`[dns load] 500 changes in one POST /records: ${seconds.toFixed(2)} s, per change p50 ${percentile(ms, 50).toFixed(2)} ms, p99 ${percentile(ms, 99).toFixed(2)} ms\n`)
      const deleted = await post('/records', {delete: endpoints})
      assert.equal(deleted.status, 204)
      assert.equal(records().filter((r) => r.name.startsWith('load-')).length, 0)
    })

    it('counts requests by route and code, and DNS API errors', async () => {
      const text = await registry.metrics()
      assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="external-dns",route="\/records",code="204"\} \d+/)
      assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="external-dns",route="\/records",code="400"\} \d+/)
      assert.match(text, /polycrate_dns_webhook_api_errors_total\{webhook="external-dns",operation="create-record"\} [1-9]/)
    })
  })

  describe('DNS01 webhook', () => {
    let server: RunningHttpServer
    let ca: CertificateAndKey
    let client: CertificateAndKey
    const group = 'acme.polycrate.test'
    const path = `/apis/${group}/v1alpha1/polycrate`

    const call = (options: {method?: string; path?: string; body?: string | Buffer; contentType?: string; cert?: CertificateAndKey}) =>
      new Promise<{status: number; body: string}>((resolve, reject) => {
        const request = https.request({
          host: '127.0.0.1', port: server.address.port, method: options.method ?? 'POST', path: options.path ?? path,
          headers: {'Content-Type': options.contentType ?? 'application/json'},
          rejectUnauthorized: false,
          ...(options.cert === undefined ? {} : {cert: options.cert.cert, key: options.cert.key}),
        }, (response) => {
          let body = ''
          response.on('data', (chunk: Buffer) => (body += chunk.toString()))
          response.on('end', () => resolve({status: response.statusCode ?? 0, body}))
        })
        request.on('error', reject)
        request.end(options.body)
      })
    const payload = (request: Record<string, unknown>) => JSON.stringify({request: {uid: '', type: 'dns-01', resourceNamespace: 'default', ...request}})
    const challenge = (action: string, dnsName: string, key: string) => call({body: payload({action, dnsName, key, resolvedFQDN: `_acme-challenge.${dnsName.replace(/^\*\./, '')}.`, resolvedZone: `${zone.name}.`}), cert: client})
    const txt = (name: string) => records().filter((r) => r.type === 'TXT' && r.name === name).map((r) => r.content).sort()

    before(async () => {
      ca = await createCertificate({commonName: 'front-proxy-ca', isCa: true})
      client = await createCertificate({commonName: 'front-proxy-client', usages: ['client'], issuer: ca})
      const serving = await createCertificate({commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1']})
      server = await startDns01Webhook({
        port: 0, host: '127.0.0.1', groupName: group, solverName: 'polycrate', session, registry, logger, tls: serving,
        loadAuth: async () => ({cas: [new X509Certificate(ca.cert)], allowedNames: ['front-proxy-client']}),
      })
    })
    after(() => server.close())

    it('answers 12+ malformed or unauthenticated requests with a 4xx and a reason, writes nothing, and keeps serving', async () => {
      sim.clearRequests()
      const otherCa = await createCertificate({commonName: 'other-ca', isCa: true})
      const foreignClient = await createCertificate({commonName: 'front-proxy-client', usages: ['client'], issuer: otherCa})
      const intruder = await createCertificate({commonName: 'intruder', usages: ['client'], issuer: ca})
      const good = {action: 'Present', dnsName: `www.${zone.name}`, key: 'k1'}
      const cases: Array<[string, Parameters<typeof call>[0], number, RegExp]> = [
        ['no client certificate', {body: payload(good)}, 401, /no client certificate/],
        ['a certificate of another CA', {body: payload(good), cert: foreignClient}, 401, /not signed by the front-proxy CA/],
        ['a front-proxy certificate with a name that is not allowed', {body: payload(good), cert: intruder}, 403, /not one of the allowed/],
        ['wrong media type', {body: payload(good), contentType: 'text/plain', cert: client}, 415, /Content-Type must be/],
        ['truncated JSON', {body: '{"request":{"action":"Pres', cert: client}, 400, /not valid JSON/],
        ['a 10 MB body', {body: Buffer.alloc(10 * 1024 * 1024, 'x'), cert: client}, 413, /larger than/],
        ['no request', {body: '{"kind":"ChallengePayload"}', cert: client}, 400, /request/],
        ['missing key', {body: payload({action: 'Present', dnsName: `www.${zone.name}`}), cert: client}, 400, /key/],
        ['unknown action', {body: payload({...good, action: 'Delete'}), cert: client}, 400, /action \\"Delete\\" is unknown/],
        ['not dns-01', {body: payload({...good, type: 'http-01'}), cert: client}, 400, /not dns-01/],
        ['invalid dnsName', {body: payload({...good, dnsName: 'bad name!'}), cert: client}, 400, /not a DNS name/],
        ['a key with a quote', {body: payload({...good, key: 'a"b'}), cert: client}, 400, /key/],
        ['an array body', {body: '[]', cert: client}, 400, /expected object/],
        ['GET on the solver', {method: 'GET', cert: client}, 405, /method not allowed/],
        ['another solver', {path: `/apis/${group}/v1alpha1/someone-else`, body: payload(good), cert: client}, 404, /no such resource/],
      ]
      assert.ok(cases.length >= 12)
      for (const [what, options, status, reason] of cases) {
        const response = await call(options)
        assert.equal(response.status, status, `${what}: ${response.status} ${response.body}`)
        assert.match(response.body, reason, what)
      }
      assert.deepEqual(writes(), [], 'no DNS write')
      assert.equal((await call({method: 'GET', path: '/healthz'})).status, 200)
      const discovery = await call({method: 'GET', path: `/apis/${group}/v1alpha1`, cert: client})
      assert.equal(discovery.status, 200)
      assert.equal((JSON.parse(discovery.body) as {resources: Array<{name: string}>}).resources[0]?.name, 'polycrate')
    })

    it('Present is idempotent; apex and wildcard keep their own value; CleanUp removes only its key', async () => {
      for (const [dnsName, key] of [[zone.name, 'apex-key'], [`*.${zone.name}`, 'wildcard-key'], [zone.name, 'apex-key']] as const) {
        const response = await challenge('Present', dnsName, key)
        assert.equal(response.status, 201)
        assert.equal((JSON.parse(response.body) as {response: {success: boolean}}).response.success, true, response.body)
      }
      assert.deepEqual(txt(`_acme-challenge.${zone.name}`), ['"apex-key"', '"wildcard-key"'])
      assert.equal((await challenge('CleanUp', zone.name, 'apex-key')).status, 201)
      assert.deepEqual(txt(`_acme-challenge.${zone.name}`), ['"wildcard-key"'])
      assert.equal((await challenge('CleanUp', `*.${zone.name}`, 'wildcard-key')).status, 201)
      assert.deepEqual(txt(`_acme-challenge.${zone.name}`), [])
    })

    it('writes into the zone the API resolves: the internal one before an external one of the same name, else the primary external zone', async () => {
      const organization = String(sim.get('domains/dnszones', zone.id)?.organization)
      const internal = sim.insert('domains/dnszones', {name: 'split.example', kind: 'internal', organization}) as {id: string}
      const external = sim.insert('domains/dnszones', {name: 'split.example', kind: 'external', provider: 'hetzner', primary_zone: true, organization}) as {id: string}
      const externalOnly = sim.insert('domains/dnszones', {name: 'ext-only.example', kind: 'external', provider: 'hetzner', primary_zone: true, organization}) as {id: string}
      for (const name of ['split.example', 'ext-only.example']) {
        const response = await call({body: payload({action: 'Present', dnsName: `www.${name}`, key: `key-${name}`, resolvedFQDN: `_acme-challenge.www.${name}.`}), cert: client})
        assert.equal((JSON.parse(response.body) as {response: {success: boolean}}).response.success, true, response.body)
      }
      assert.deepEqual(records(internal.id).map((r) => r.content), ['"key-split.example"'])
      assert.deepEqual(records(external.id), [])
      const ext = records(externalOnly.id)
      assert.deepEqual(ext.map((r) => r.content), ['"key-ext-only.example"'])
      assert.match(ext[0]?.id ?? '', /::/, 'an external zone\'s record id <zone>::<provider id>')
      // CleanUp finds it again (listing an external zone's records needs ?dns_zone=) and removes it.
      const cleanUp = await call({body: payload({action: 'CleanUp', dnsName: 'www.ext-only.example', key: 'key-ext-only.example', resolvedFQDN: '_acme-challenge.www.ext-only.example.'}), cert: client})
      assert.equal(cleanUp.status, 201)
      assert.deepEqual(records(externalOnly.id), [])
    })

    it('reports a name in a zone the token cannot see as a failure cert-manager shows, without a write', async () => {
      sim.clearRequests()
      const response = await call({body: payload({action: 'Present', dnsName: `www.${foreignZone.name}`, key: 'k', resolvedFQDN: `_acme-challenge.www.${foreignZone.name}.`}), cert: client})
      const body = JSON.parse(response.body) as {response: {success: boolean; status?: {message: string}}}
      assert.equal(body.response.success, false)
      assert.match(body.response.status?.message ?? '', /no DNS zone for "_acme-challenge\.www\.foreign\.example" in the scope of the agent token/)
      assert.deepEqual(writes(), [])
      assert.equal(sim.list('domains/dnsrecords').filter((r) => r.dns_zone === foreignZone.id).length, 0)
    })
  })
})
