/**
 * The DNS webhooks serve on every replica: an in-process operator that is a standby (the test holds the leader lease
 * as the "other replica") serves the external-dns webhook with the identity the leader wrote into the status, sends no
 * heartbeat and writes nothing; once the lease is free it leads, and the webhook keeps serving through the promotion
 * (the same server: it is not restarted).
 */
import assert from 'node:assert/strict'
import type {OperatorConfigStatus} from '../../src/crds/operator-config.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'
import {LeaderElector} from '../../src/operator/runtime/leader-election.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {freePort} from '../support/control-plane.js'
import {configRef} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually} from '../support/operator-process.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}

describe('DNS webhooks on a standby replica (in-process operator, lease held by the test)', function () {
  this.timeout(120_000)
  let port: number
  const harness = inProcessOperator({
    spec: ({sim}) => ({
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 5},
      local_cluster: {enabled: false},
      external_dns_webhook: {enabled: true, port},
    }),
    setup: async () => {
      port = await freePort()
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
    const starts = harness.logs.filter((line) => line.msg === 'feature started' && line.feature === 'external-dns-webhook')
    assert.equal(starts.length, 1, 'the webhook started once, as a standby, and kept serving')
  })
})
