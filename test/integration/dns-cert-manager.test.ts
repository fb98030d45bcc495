/**
 * The DNS01 webhook driven by cert-manager's own DNS01 webhook client (cert-manager v1.21.1
 * `pkg/issuer/acme/dns/webhook`, in test/dnsclients/certmanager-driver) through the real kube-apiserver: an
 * APIService for the solver group points at the operator (in-process, listening on loopback), kube-apiserver proxies
 * with its front-proxy client certificate. Present → TXT record in the simulator; CleanUp → gone; a name in no zone →
 * the message cert-manager shows; a direct call without the front-proxy certificate → refused; 50 concurrent
 * Presents → each applied once.
 *
 * How the aggregator reaches a loopback server: an ExternalName Service `polycrate-operator` with
 * `externalName: localhost`. kube-aggregator resolves an ExternalName service to https://<externalName>:<APIService
 * port> (no kube-proxy, no Endpoints needed; Endpoints/EndpointSlices may not hold loopback addresses), and checks
 * the serving certificate against the APIService's caBundle for the name `polycrate-operator.<namespace>.svc`.
 */
import assert from 'node:assert/strict'
import {randomBytes, X509Certificate} from 'node:crypto'
import https from 'node:https'
import type {TLSSocket} from 'node:tls'
import {execa} from 'execa'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {createCertificate, type CertificateAndKey} from '../../src/lib/x509.js'
import {createApiSyncFeature} from '../../src/operator/agent/api-sync-feature.js'
import {DNS01_SERVING_SECRET, OPERATOR_NAME} from '../../src/operator/conventions.js'
import {Dns01Webhook} from '../../src/operator/dns/dns01-webhook.js'
import {ExternalDnsWebhook} from '../../src/operator/dns/external-dns-webhook.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {controlPlane} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {dnsClients} from '../support/dns-clients.js'
import {configRef, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type Row = Record<string, unknown> & {id: string; name: string; type: string; content: string; dns_zone: string}
interface DriverChallenge {action: 'Present' | 'CleanUp'; dnsName: string; key: string; resolvedFQDN: string; resolvedZone: string; namespace: string}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}

describe('DNS01 webhook with cert-manager\'s own webhook client through the real kube-apiserver (APIService)', function () {
  this.timeout(30 * 60 * 1000)
  let port: number
  let driver: string
  const group = `acme-${randomBytes(3).toString('hex')}.webhook.polycrate.test`
  const apiService = {group: 'apiregistration.k8s.io', version: 'v1', plural: 'apiservices', name: `v1alpha1.${group}`}
  const harness = inProcessOperator({
    spec: () => ({dns01_webhook: {enabled: true, group_name: group, solver_name: 'polycrate', port}, external_dns_webhook: {enabled: false}}),
    features: (session) => [createApiSyncFeature(session), ExternalDnsWebhook(session), Dns01Webhook(session)],
    setup: async () => {
      driver = (await dnsClients()).certManagerDriver
      port = await freePort()
    },
    // Started below, once the zone, the serving certificate and the Service are there.
    start: false,
    logLevel: 'info',
    cleanup: async ({client}) => {
      await client.delete(apiService).catch(() => {})
    },
  })
  let client: KubeClient
  let sim: ApiSimulator
  let namespace: string
  let zone: {id: string; name: string}
  let serving: CertificateAndKey

  const txt = (name: string) => sim.list('domains/dnsrecords').filter((r) => r.type === 'TXT' && r.name === name).map((r) => (r as Row).content).sort()
  const writes = () => sim.requests.filter((r) => r.path.includes('/domains/dnsrecords') && r.method !== 'GET')
  const challenge = (action: DriverChallenge['action'], dnsName: string, key: string): DriverChallenge => {
    const base = dnsName.replace(/^\*\./, '')
    const zoneName = base.endsWith(zone.name) ? zone.name : base.split('.').slice(-2).join('.')
    return {action, dnsName, key, resolvedFQDN: `_acme-challenge.${base}.`, resolvedZone: `${zoneName}.`, namespace: 'default'}
  }
  /** Runs the challenges concurrently through kube-apiserver with cert-manager's client; one result per challenge. */
  const certManager = async (challenges: DriverChallenge[]) => {
    const result = await execa(driver, ['--kubeconfig', controlPlane().kubeconfigPath, '--group', group, '--solver', 'polycrate'], {input: JSON.stringify(challenges), reject: false, timeout: 120_000})
    assert.equal(result.exitCode, 0, result.stderr)
    return result.stdout.trim().split('\n').map((line) => JSON.parse(line) as {index: number; error: string; ms: number})
  }

  /** The fingerprint of the certificate the webhook presents in a TLS handshake now. */
  const servedFingerprint = () => new Promise<string>((resolve, reject) => {
    const request = https.get({host: '127.0.0.1', port, path: '/healthz', rejectUnauthorized: false, agent: false}, (response) => {
      resolve((response.socket as TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? '')
      response.resume()
    })
    request.on('error', reject)
  })

  before(async () => {
    ;({client, sim, namespace} = harness)
    const organization = String(sim.get('workspaces', harness.workspaceId)?.organization)
    zone = sim.insert('domains/dnszones', {name: `dns01-${randomBytes(3).toString('hex')}.example`, kind: 'internal', organization}) as {id: string; name: string}

    // The serving certificate the operator block would deploy, and what the aggregator needs to reach and trust it.
    serving = await createCertificate({commonName: `${OPERATOR_NAME}.${namespace}.svc`, dnsNames: [`${OPERATOR_NAME}.${namespace}.svc`]})
    await client.create({group: '', version: 'v1', plural: 'secrets', namespace}, {
      apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: {name: DNS01_SERVING_SECRET, namespace},
      data: {'tls.crt': Buffer.from(serving.cert).toString('base64'), 'tls.key': Buffer.from(serving.key).toString('base64')},
    })
    await client.create({group: '', version: 'v1', plural: 'services', namespace}, {
      apiVersion: 'v1', kind: 'Service', metadata: {name: OPERATOR_NAME, namespace}, spec: {type: 'ExternalName', externalName: 'localhost'},
    })

    const operator = harness.start()
    await eventually(async () => operator.api.client !== undefined, 60_000, 'the API connected')

    await client.create({group: 'apiregistration.k8s.io', version: 'v1', plural: 'apiservices'}, {
      apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: {name: apiService.name},
      spec: {group, version: 'v1alpha1', service: {namespace, name: OPERATOR_NAME, port}, caBundle: Buffer.from(serving.cert).toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15},
    })
    await eventually(async () => {
      const service = await client.get<KubeObject & {status?: {conditions?: Array<{type: string; status: string}>}}>(apiService)
      return service.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True')
    }, 90_000, 'the APIService Available')
  })

  it('is in the OperatorConfig status when enabled', async () => {
    await eventually(async () => {
      const config = await client.get<KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason: string}>}}>(configRef(namespace))
      const entry = config.status?.controllers?.find((c) => c.name === 'dns01-webhook')
      return entry?.running === true && entry.reason === 'Running'
    }, 30_000, 'dns01-webhook running in status.controllers')
  })

  it('Present writes the TXT record, CleanUp removes it (cert-manager\'s client, through kube-apiserver)', async () => {
    const name = `_acme-challenge.www.${zone.name}`
    const [present] = await certManager([challenge('Present', `www.${zone.name}`, 'key-present-1')])
    assert.equal(present?.error, '')
    assert.deepEqual(txt(name), ['"key-present-1"'])
    const [cleanUp] = await certManager([challenge('CleanUp', `www.${zone.name}`, 'key-present-1')])
    assert.equal(cleanUp?.error, '')
    assert.deepEqual(txt(name), [])
  })

  it('a name in no zone: cert-manager shows the webhook\'s message', async () => {
    const outside = `www.nozone-${randomBytes(3).toString('hex')}.test`
    const [result] = await certManager([challenge('Present', outside, 'k')])
    assert.match(result?.error ?? '', new RegExp(`no DNS zone for "_acme-challenge\\.${outside.replace(/\./g, '\\.')}" in the scope of the agent token`))
  })

  it('refuses a direct call without the front-proxy client certificate, and writes nothing', async () => {
    sim.clearRequests()
    const body = JSON.stringify({request: {uid: '', action: 'Present', type: 'dns-01', dnsName: `www.${zone.name}`, key: 'direct', resolvedFQDN: `_acme-challenge.www.${zone.name}.`}})
    const answer = await new Promise<{status: number; body: string}>((resolve, reject) => {
      const request = https.request({host: '127.0.0.1', port, method: 'POST', path: `/apis/${group}/v1alpha1/polycrate`, rejectUnauthorized: false,
        headers: {'Content-Type': 'application/json', Authorization: `Bearer ${controlPlane().token}`, 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters'}}, (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({status: response.statusCode ?? 0, body: text}))
      })
      request.on('error', reject)
      request.end(body)
    })
    assert.equal(answer.status, 401, answer.body)
    assert.match(answer.body, /no client certificate/)
    assert.deepEqual(writes(), [])
    assert.deepEqual(txt(`_acme-challenge.www.${zone.name}`), [])
  })

  it('50 concurrent Presents are each applied once (and again: still once); 50 CleanUps remove them', async () => {
    // 10 names with 5 keys each: calls for one name wait for each other, different names run side by side.
    const challenges = Array.from({length: 50}, (_, i) => challenge('Present', `host-${i % 10}.${zone.name}`, `load-key-${i}`))
    const first = await certManager(challenges)
    assert.deepEqual(first.filter((r) => r.error !== ''), [])
    const second = await certManager(challenges)
    assert.deepEqual(second.filter((r) => r.error !== ''), [])
    const all = sim.list('domains/dnsrecords').filter((r) => r.type === 'TXT' && String(r.content).includes('load-key-')) as Row[]
    assert.equal(all.length, 50)
    assert.equal(new Set(all.map((r) => `${r.name} ${r.content}`)).size, 50, 'each once')
    for (let i = 0; i < 10; i++) assert.equal(txt(`_acme-challenge.host-${i}.${zone.name}`).length, 5)
    const ms = first.map((r) => r.ms)
    process.stderr.write(`[dns01 load] 50 concurrent Presents through kube-apiserver: p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (repeat: p99 ${percentile(second.map((r) => r.ms), 99).toFixed(1)} ms)\n`)
    const cleanUps = await certManager(challenges.map((c) => ({...c, action: 'CleanUp' as const})))
    assert.deepEqual(cleanUps.filter((r) => r.error !== ''), [])
    assert.equal(sim.list('domains/dnsrecords').filter((r) => String(r.content).includes('load-key-')).length, 0)
  })

  it('a renewed certificate (new key, new CA in the APIService) is served by the same process while cert-manager keeps calling: 0 failed calls once the new CA is in place', async () => {
    // cert-manager's client presents and cleans up challenges one after the other, through kube-apiserver, throughout.
    interface Call {action: string; start: number; end: number; error: string}
    const calls: Call[] = []
    let stopCalling = false
    const calling = (async () => {
      for (let i = 0; !stopCalling; i++) {
        for (const action of ['Present', 'CleanUp'] as const) {
          const start = Date.now()
          const [result] = await certManager([challenge(action, `rotate-${i % 3}.${zone.name}`, `rotate-key-${i}`)])
          calls.push({action, start, end: Date.now(), error: result?.error ?? 'no result'})
        }
      }
    })()
    const succeeded = (from: number) => calls.filter((call) => call.start >= from && call.error === '').length
    try {
      await eventually(async () => succeeded(0) >= 6, 120_000, '6 calls with the first certificate')

      // The renewal as cert-manager and cainjector make it: the Secret gets a new key and a certificate of a new CA,
      // then the APIService gets the new CA bundle.
      const ca = await createCertificate({commonName: 'dns01 webhook CA 2', isCa: true})
      const renewed = await createCertificate({commonName: `${OPERATOR_NAME}.${namespace}.svc`, dnsNames: [`${OPERATOR_NAME}.${namespace}.svc`], issuer: ca})
      const oldFingerprint = new X509Certificate(serving.cert).fingerprint256
      const newFingerprint = new X509Certificate(renewed.cert).fingerprint256
      assert.equal(await servedFingerprint(), oldFingerprint)
      const changedAt = Date.now()
      await client.mergePatch({group: '', version: 'v1', plural: 'secrets', namespace, name: DNS01_SERVING_SECRET}, {
        data: {'tls.crt': Buffer.from(renewed.cert).toString('base64'), 'tls.key': Buffer.from(renewed.key).toString('base64'), 'ca.crt': Buffer.from(ca.cert).toString('base64')},
      })
      // The time from the Secret's change to the new certificate in a TLS handshake with the webhook, polled.
      const served = (async () => {
        while (Date.now() - changedAt < 60_000) {
          if (await servedFingerprint().catch(() => '') === newFingerprint) return Date.now()
          await new Promise((resolve) => setTimeout(resolve, 2))
        }
        throw new Error('the webhook still serves the old certificate 60 s after the Secret changed')
      })()
      await client.mergePatch(apiService, {spec: {caBundle: Buffer.from(ca.cert).toString('base64')}})
      const caAt = Date.now()
      const servedAt = await served
      const inPlace = Math.max(caAt, servedAt)

      await eventually(async () => succeeded(inPlace) >= 6, 120_000, '6 calls after the new CA is in place')
      stopCalling = true
      await calling
      const phase = (call: Call) => (call.start < changedAt ? 'before' : call.start < inPlace ? 'during' : 'after')
      const counts = Object.fromEntries(['before', 'during', 'after'].map((name) => {
        const inPhase = calls.filter((call) => phase(call) === name)
        return [name, {calls: inPhase.length, failed: inPhase.filter((call) => call.error !== '').length}]
      }))
      const failedDuring = calls.filter((call) => phase(call) === 'during' && call.error !== '').map((call) => call.error.slice(0, 160))
      process.stderr.write(`[dns01 rotation] calls ${JSON.stringify(counts)}; Secret changed → new certificate served in ${servedAt - changedAt} ms; APIService caBundle written ${caAt - changedAt} ms after the Secret${failedDuring.length > 0 ? `; failures during: ${JSON.stringify(failedDuring)}` : ''}\n`)
      assert.equal(counts.after!.failed, 0, JSON.stringify(calls.filter((call) => phase(call) === 'after' && call.error !== '')))
      assert.equal(counts.before!.failed, 0)
      // The same process, the same server: reloaded, not restarted.
      assert.equal(harness.logs.filter((line) => line.msg === 'DNS01 webhook server listening').length, 1, 'the webhook server started once')
      const reloaded = harness.logs.filter((line) => line.msg === 'DNS01 webhook: serving certificate reloaded')
      assert.deepEqual(reloaded.map((line) => [line.fingerprint, line.source]), [[newFingerprint, `Secret ${namespace}/${DNS01_SERVING_SECRET}`]])
      assert.equal(await servedFingerprint(), newFingerprint)
      serving = renewed
    } finally {
      stopCalling = true
      await calling
    }
  })

  it('counts discovery and challenge requests, and refusals, in /metrics', async () => {
    const text = await harness.operator!.manager.metrics.text()
    assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="dns01",route="discovery",code="200"\} [1-9]/)
    assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="dns01",route="challenge",code="201"\} [1-9]/)
    assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="dns01",route="challenge",code="401"\} 1/)
  })
})
