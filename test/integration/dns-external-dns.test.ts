/**
 * The external-dns webhook provider driven by the real external-dns v0.18.0 (`--source=ingress --provider=webhook
 * --registry=txt --policy=sync --once`) against the real kube-apiserver, the operator (in-process) and the API
 * simulator: Ingress hosts → A + TXT ownership records; host changed → records moved; Ingress deleted → records
 * gone; a record of another owner untouched; a host outside every zone not written (and external-dns exits 0).
 * Also: the feature's `enabled`/`port` settings and its entry in the OperatorConfig status and /metrics.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import tls from 'node:tls'
import {execa} from 'execa'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {createApiSyncFeature} from '../../src/operator/agent/api-sync-feature.js'
import {Dns01Webhook} from '../../src/operator/dns/dns01-webhook.js'
import {ExternalDnsWebhook} from '../../src/operator/dns/external-dns-webhook.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'
import {OPERATOR_NAME} from '../../src/operator/conventions.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {controlPlane, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {dnsClients} from '../support/dns-clients.js'
import {configRef, eventually, ingressRef} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type Row = Record<string, unknown> & {id: string; name: string; type: string; content: string; dns_zone: string}

describe('external-dns webhook provider with the real external-dns v0.18.0', function () {
  this.timeout(30 * 60 * 1000)
  let port: number
  let externalDns: string
  const harness = inProcessOperator({
    spec: () => ({external_dns_webhook: {port}}),
    features: (session) => [createApiSyncFeature(session), ExternalDnsWebhook(session), Dns01Webhook(session)],
    setup: async () => {
      externalDns = (await dnsClients()).externalDns
      port = await freePort()
    },
    // Started below, once the zone is there.
    start: false,
  })
  let client: KubeClient
  let sim: ApiSimulator
  let operatorNamespace: string
  let appNamespace: string
  let zone: {id: string; name: string}
  const owner = `cluster-${randomBytes(3).toString('hex')}`
  const outsideHost = `app.outside-${randomBytes(3).toString('hex')}.test`

  const records = () => sim.list('domains/dnsrecords').filter((r) => r.dns_zone === zone.id) as Row[]
  const values = (name: string, type: string) => records().filter((r) => r.name === name && r.type === type).map((r) => r.content).sort()
  const ownedTxt = (host: string) => records().filter((r) => r.type === 'TXT' && r.name.endsWith(host) && r.content.includes(`external-dns/owner=${owner}`))
  const config = () => client.get<KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason: string}>}}>(configRef(operatorNamespace))

  const externalDnsArgs = async () => [
    '--source=ingress', `--namespace=${appNamespace}`,
    '--provider=webhook', `--webhook-provider-url=http://127.0.0.1:${port}`,
    '--registry=txt', `--txt-owner-id=${owner}`, '--policy=sync',
    `--kubeconfig=${controlPlane().kubeconfigPath}`, `--metrics-address=127.0.0.1:${await freePort()}`,
  ]
  const runExternalDns = async () => execa(externalDns, [...(await externalDnsArgs()), '--once'], {reject: false, timeout: 180_000, all: true})
  const ingress = async (name: string, host: string, ips: string[]) => {
    await client.create(ingressRef(appNamespace), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name, namespace: appNamespace},
      spec: {rules: [{host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]},
    })
    await setIps(name, ips)
  }
  const setIps = (name: string, ips: string[]) => client.request({
    method: 'PATCH', path: `/apis/networking.k8s.io/v1/namespaces/${appNamespace}/ingresses/${name}/status`,
    contentType: 'application/merge-patch+json', body: {status: {loadBalancer: {ingress: ips.map((ip) => ({ip}))}}},
  })

  before(async () => {
    ;({client, sim, namespace: operatorNamespace} = harness)
    const organization = String(sim.get('workspaces', harness.workspaceId)?.organization)
    zone = sim.insert('domains/dnszones', {name: `edns-${randomBytes(3).toString('hex')}.example`, kind: 'internal', organization}) as {id: string; name: string}
    appNamespace = await freshNamespace(client, 'edns')
    const operator = harness.start()
    await eventually(async () => operator.api.client !== undefined, 60_000, 'the API connected')
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`, {headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}})).status === 200, 30_000, 'the webhook serving')
  })

  it('shows the webhooks in the OperatorConfig status (external-dns on by default, DNS01 opt-in)', async () => {
    const controllers = await eventually(async () => {
      const list = (await config()).status?.controllers ?? []
      return list.some((c) => c.name === 'external-dns-webhook') ? list : undefined
    }, 30_000, 'status.controllers')
    assert.deepEqual(controllers.find((c) => c.name === 'external-dns-webhook'), {name: 'external-dns-webhook', enabled: true, running: true, reason: 'Running'})
    assert.deepEqual(controllers.find((c) => c.name === 'dns01-webhook'), {name: 'dns01-webhook', enabled: false, running: false, reason: 'Disabled'})
  })

  it('Ingress hosts → A and TXT ownership records; another owner\'s record and an outside host untouched', async () => {
    const web = `web.${zone.name}`
    const legacy = `legacy.${zone.name}`
    // A record external-dns of another cluster owns (both TXT formats), and an Ingress here that wants its name.
    sim.insert('domains/dnsrecords', {dns_zone: zone.id, name: legacy, type: 'A', content: '192.0.2.99', ttl: 300})
    for (const name of [legacy, `a-${legacy}`]) {
      sim.insert('domains/dnsrecords', {dns_zone: zone.id, name, type: 'TXT', content: '"heritage=external-dns,external-dns/owner=other-cluster,external-dns/resource=ingress/other/legacy"', ttl: 300})
    }
    const foreignBefore = records().filter((r) => r.name.endsWith(legacy)).map((r) => `${r.id} ${r.type} ${r.content}`).sort()
    await ingress('web', web, ['192.0.2.10', '192.0.2.20'])
    await ingress('legacy', legacy, ['192.0.2.12'])
    await ingress('outside', outsideHost, ['192.0.2.13'])

    const result = await runExternalDns()
    assert.equal(result.exitCode, 0, result.all)
    assert.deepEqual(values(web, 'A'), ['192.0.2.10', '192.0.2.20'])
    assert.ok(ownedTxt(web).length >= 1, `TXT ownership record of ${web}: ${JSON.stringify(records().map((r) => [r.name, r.type, r.content]))}`)
    assert.deepEqual(records().filter((r) => r.name.endsWith(legacy)).map((r) => `${r.id} ${r.type} ${r.content}`).sort(), foreignBefore, 'the other owner\'s records untouched')
    assert.equal(sim.list('domains/dnsrecords').filter((r) => String(r.name).includes(outsideHost)).length, 0, 'nothing written for the outside host')
    assert.ok(!sim.requests.some((r) => r.method === 'GET' && r.path.includes('dnszones/resolve') && r.query.fqdn?.includes(outsideHost)), 'external-dns did not even send the outside host (DomainFilter)')
  })

  it('moves the records when the host changes and removes them when the Ingress is deleted', async () => {
    const web = `web.${zone.name}`
    const moved = `moved.${zone.name}`
    await client.mergePatch(ingressRef(appNamespace, 'web'), {spec: {rules: [{host: moved, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]}})
    let result = await runExternalDns()
    assert.equal(result.exitCode, 0, result.all)
    assert.deepEqual(values(moved, 'A'), ['192.0.2.10', '192.0.2.20'])
    assert.ok(ownedTxt(moved).length >= 1)
    assert.deepEqual(values(web, 'A'), [], 'the old name is gone')
    assert.equal(ownedTxt(web).length, 0)

    await client.delete(ingressRef(appNamespace, 'web'))
    await eventually(async () => (await client.getOrUndefined(ingressRef(appNamespace, 'web'))) === undefined, 30_000, 'the Ingress gone')
    result = await runExternalDns()
    assert.equal(result.exitCode, 0, result.all)
    assert.deepEqual(values(moved, 'A'), [])
    assert.equal(ownedTxt(moved).length, 0)
    assert.deepEqual(values(`legacy.${zone.name}`, 'A'), ['192.0.2.99'], 'the other owner\'s record is still there')
  })

  it('an API outage is a soft error (503): external-dns keeps running and applies the change once the API is back', async () => {
    const host = `retry.${zone.name}`
    sim.faults.set({errorRate: 1, errorStatuses: [503], match: (method, path) => method === 'POST' && path.includes('/domains/dnsrecords')})
    await ingress('retry', host, ['192.0.2.50'])
    const child = execa(externalDns, [...(await externalDnsArgs()), '--interval=1s'], {reject: false, all: true})
    let output = ''
    child.all?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    try {
      await eventually(async () => output.includes('consecutive soft errors: 2'), 90_000, 'external-dns reporting soft errors')
      assert.equal(child.exitCode, null, `external-dns is still running:\n${output}`)
      assert.deepEqual(values(host, 'A'), [], 'nothing written while the API fails')
      assert.equal(ownedTxt(host).length, 0)
      sim.faults.clear()
      await eventually(async () => values(host, 'A').length === 1 && ownedTxt(host).length >= 1, 90_000, 'the records applied on a later sync')
      await eventually(async () => output.includes('Reconciliation succeeded after'), 30_000, 'external-dns recovered')
    } finally {
      sim.faults.clear()
      child.kill()
      await child
    }
    await client.delete(ingressRef(appNamespace, 'retry'))
  })

  it('counts the requests by route and code in /metrics', async () => {
    const text = await harness.operator!.manager.metrics.text()
    for (const route of ['/', '/records', '/adjustendpoints']) {
      assert.match(text, new RegExp(`polycrate_dns_webhook_requests_total\\{webhook="external-dns",route="${route}",code="200"\\} [1-9]`), route)
    }
    assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="external-dns",route="\/records",code="204"\} [1-9]/)
    assert.match(text, /polycrate_dns_webhook_requests_total\{webhook="external-dns",route="\/records",code="503"\} [1-9]/)
    assert.match(text, /polycrate_dns_webhook_api_errors_total\{webhook="external-dns",operation="create-record"\} [1-9]/)
  })

  it('stops serving when disabled and serves on the new port when it changes', async () => {
    const patchSpec = (spec: Record<string, unknown>) => client.mergePatch(configRef(operatorNamespace), {spec})
    await patchSpec({external_dns_webhook: {enabled: false, port}})
    await eventually(async () => (await config()).status?.controllers?.find((c) => c.name === 'external-dns-webhook')?.reason === 'Disabled', 30_000, 'reported disabled')
    await eventually(async () => fetch(`http://127.0.0.1:${port}/healthz`).then(() => false, () => true), 30_000, 'the port closed')
    const next = await freePort()
    await patchSpec({external_dns_webhook: {enabled: true, port: next}})
    await eventually(async () => (await fetch(`http://127.0.0.1:${next}/healthz`).catch(() => undefined))?.status === 200, 30_000, 'serving on the new port')
  })

  it('DNS01 is opt-in: enabled without a serving certificate Secret, it serves TLS with a certificate made at start', async () => {
    const dns01Port = await freePort()
    const patchSpec = (spec: Record<string, unknown>) => client.mergePatch(configRef(operatorNamespace), {spec})
    await patchSpec({dns01_webhook: {enabled: true, port: dns01Port}})
    await eventually(async () => (await config()).status?.controllers?.find((c) => c.name === 'dns01-webhook')?.running === true, 30_000, 'dns01-webhook running')
    const peer = await eventually(() => new Promise<tls.PeerCertificate | undefined>((resolve) => {
      const socket = tls.connect({host: '127.0.0.1', port: dns01Port, rejectUnauthorized: false}, () => {
        resolve(socket.getPeerCertificate())
        socket.end()
      })
      socket.on('error', () => resolve(undefined))
    }), 30_000, 'a TLS handshake with the DNS01 webhook')
    assert.match(peer.subjectaltname ?? '', new RegExp(`DNS:${OPERATOR_NAME}\\.${operatorNamespace}\\.svc\\b`))
    await patchSpec({dns01_webhook: {enabled: false}})
    await eventually(async () => (await config()).status?.controllers?.find((c) => c.name === 'dns01-webhook')?.reason === 'Disabled', 30_000, 'dns01-webhook disabled')
  })
})
