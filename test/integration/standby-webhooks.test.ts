/**
 * The DNS webhooks serve on every replica: an in-process operator that is a standby (the test holds the leader lease
 * as the "other replica") serves the external-dns webhook with the identity the leader wrote into the status, sends no
 * heartbeat and writes nothing of its own (the changes external-dns sends it it applies); its DNS01 webhook serves a self-signed certificate until the serving Secret appears,
 * then the Secret's, and reloads it when it is renewed; once the lease is free it leads, and the webhooks keep serving
 * through the promotion (the same servers: they are not restarted).
 */
import assert from 'node:assert/strict'
import {X509Certificate} from 'node:crypto'
import https from 'node:https'
import type {TLSSocket} from 'node:tls'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {createCertificate} from '../../src/lib/x509.js'
import {DNS01_SERVING_SECRET, OPERATOR_NAME} from '../../src/operator/conventions.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'
import {LeaderElector} from '../../src/operator/runtime/leader-election.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {freePort} from '../support/control-plane.js'
import {configRef, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}

describe('DNS webhooks on a standby replica (in-process operator, lease held by the test)', function () {
  this.timeout(120_000)
  let port: number
  let dns01Port: number
  const harness = inProcessOperator({
    spec: ({sim}) => ({
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 5},
      local_cluster: {enabled: false},
      external_dns_webhook: {enabled: true, port},
      dns01_webhook: {enabled: true, group_name: 'acme.standby.polycrate.test', solver_name: 'polycrate', port: dns01Port},
    }),
    setup: async () => {
      port = await freePort()
      dns01Port = await freePort()
    },
    leaderElection: {leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500},
    logLevel: 'info',
    // Started below, once the test holds the lease.
    start: false,
    cleanup: async () => otherHold?.abort(),
  })
  let client: KubeClient
  let sim: ApiSimulator
  let namespace: string
  let other: LeaderElector
  let otherHold: AbortController
  let webhook: string
  const heartbeats = () => sim.requests.filter((r) => r.method === 'POST' && r.path.includes('/agent/health')).length
  const negotiate = () => fetch(`${webhook}/`, {headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}})

  before(async () => {
    ;({client, sim, namespace} = harness)
    webhook = `http://127.0.0.1:${port}`
    const workspace = sim.get('workspaces', harness.workspaceId)!
    const organization = sim.get('organizations', String(workspace.organization))!
    sim.insert('domains/dnszones', {name: 'standby.example', kind: 'internal', organization: organization.id})
    // The other replica: it holds the lease, and wrote the identity it resolved into the status.
    other = new LeaderElector({client, namespace, name: 'polycrate-operator-leader', identity: 'other-replica', leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500})
    await other.acquire(AbortSignal.timeout(10_000))
    otherHold = new AbortController()
    void other.hold(otherHold.signal)
    await client.apply({...configRef(namespace), subresource: 'status'}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
      status: {api_sync: {workspace_id: workspace.id, workspace_name: workspace.name, organization_id: organization.id, organization_name: organization.name}},
    }, {fieldManager: 'the-other-replica'})
    harness.start()
  })

  it('a standby serves the external-dns webhook with the leader\'s identity, sends no heartbeat and writes no status', async () => {
    const answer = await eventually(async () => {
      const response = await negotiate().catch(() => undefined)
      return response?.status === 200 ? response : undefined
    }, 30_000, 'the standby\'s webhook answers negotiation')
    assert.deepEqual(await answer.json(), {include: ['standby.example']})
    assert.equal(harness.operator!.manager.isLeader, false)
    assert.equal(heartbeats(), 0)
    const status = (await client.get<OperatorConfigObject>(configRef(namespace))).status
    assert.equal(status?.controllers, undefined, 'a standby writes no feature states')
    assert.equal(status?.conditions, undefined, 'a standby writes no conditions')
  })

  it('a standby applies the changes external-dns sends it (the write fence guards its own work, not a caller\'s request)', async () => {
    const response = await fetch(`${webhook}/records`, {
      method: 'POST', headers: {'Content-Type': EXTERNAL_DNS_MEDIA_TYPE},
      body: JSON.stringify({create: [{dnsName: 'www.standby.example', targets: ['192.0.2.10'], recordType: 'A'}]}),
    })
    assert.equal(response.status, 204, await response.text())
    assert.equal(harness.operator!.manager.isLeader, false, 'still a standby')
    assert.deepEqual(sim.list('domains/dnsrecords').filter((r) => r.type === 'A').map((r) => `${r.name} ${r.content}`), ['www.standby.example 192.0.2.10'])
  })

  it('a standby serves the DNS01 webhook: self-signed without the Secret, then the Secret\'s certificate, and its renewal, without a restart', async () => {
    const served = () => new Promise<X509Certificate | undefined>((resolve, reject) => {
      const request = https.get({host: '127.0.0.1', port: dns01Port, path: '/healthz', rejectUnauthorized: false, agent: false}, (response) => {
        resolve((response.socket as TLSSocket).getPeerX509Certificate())
        response.resume()
      })
      request.on('error', reject)
    })
    const first = await eventually(() => served().catch(() => undefined), 30_000, 'the DNS01 webhook answers TLS')
    assert.equal(first.subject, `CN=${OPERATOR_NAME}.${namespace}.svc`)
    assert.equal(first.issuer, first.subject, 'self-signed, as without the Secret before')
    const secretRef = {group: '', version: 'v1', plural: 'secrets', namespace}
    const data = (pair: {cert: string; key: string}) => ({'tls.crt': Buffer.from(pair.cert).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64')})
    const ca = await createCertificate({commonName: 'standby CA', isCa: true})
    const issued = await createCertificate({commonName: `${OPERATOR_NAME}.${namespace}.svc`, dnsNames: [`${OPERATOR_NAME}.${namespace}.svc`], issuer: ca})
    await client.create(secretRef, {apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: {name: DNS01_SERVING_SECRET, namespace}, data: data(issued)})
    await eventually(async () => (await served())?.fingerprint256 === new X509Certificate(issued.cert).fingerprint256, 30_000, 'the Secret\'s certificate served')
    const renewed = await createCertificate({commonName: `${OPERATOR_NAME}.${namespace}.svc`, dnsNames: [`${OPERATOR_NAME}.${namespace}.svc`], issuer: ca})
    await client.mergePatch({...secretRef, name: DNS01_SERVING_SECRET}, {data: data(renewed)})
    await eventually(async () => (await served())?.fingerprint256 === new X509Certificate(renewed.cert).fingerprint256, 30_000, 'the renewed certificate served')
    assert.equal(harness.operator!.manager.isLeader, false, 'still a standby')
    assert.equal(harness.logs.filter((line) => line.msg === 'DNS01 webhook server listening').length, 1, 'one server, reloaded')
  })

  it('promoted: it heartbeats, writes the status and starts the leader\'s features; the webhook is not restarted', async () => {
    otherHold.abort()
    await other.release()
    await eventually(async () => heartbeats() > 0, 30_000, 'the first heartbeat of the new leader')
    const status = await eventually(async () => {
      const object = await client.get<OperatorConfigObject>(configRef(namespace))
      // The feature states and the API sync condition are two status writes: wait until both are there.
      const written = object.status?.controllers?.some((c) => c.name === 'endpoint-discovery' && c.running) && object.status?.conditions?.some((c) => c.type === 'APIConnected')
      return written ? object.status : undefined
    }, 30_000, 'feature states and the APIConnected condition written by the new leader')
    assert.equal(status.conditions?.find((c) => c.type === 'APIConnected')?.status, 'True')
    assert.equal((await negotiate()).status, 200)
    for (const feature of ['external-dns-webhook', 'dns01-webhook']) {
      const starts = harness.logs.filter((line) => line.msg === 'feature started' && line.feature === feature)
      assert.equal(starts.length, 1, `${feature} started once, as a standby, and kept serving`)
    }
  })
})
