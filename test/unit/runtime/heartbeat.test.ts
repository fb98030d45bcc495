import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient, type RequestOptions} from '../../../src/kube/client.js'
import {heartbeatLease} from '../../../src/operator/conventions.js'
import {Heartbeat, heartbeatLeaseBody, heartbeatLeaseName} from '../../../src/operator/runtime/heartbeat.js'
import type {Lease} from '../../../src/operator/runtime/leader-election.js'
import {FakeTimers, settle} from '../../support/fake-timers.js'

/** One namespace's Leases: GET, POST, PUT with resourceVersion checks. */
class FakeLeases {
  readonly leases = new Map<string, Lease>()
  readonly methods: string[] = []
  failNext = 0
  private version = 0
  readonly client = {request: (options: RequestOptions) => this.request(options)} as unknown as KubeClient

  private async request(options: RequestOptions): Promise<unknown> {
    await Promise.resolve()
    const method = options.method ?? 'GET'
    if (this.failNext > 0) {
      this.failNext--
      throw new KubeApiError(503, 'ServiceUnavailable', 'try again')
    }
    this.methods.push(method)
    const name = options.path.split('/').at(-1)!
    const body = options.body as Lease
    switch (method) {
      case 'GET': {
        const lease = this.leases.get(name)
        if (!lease) throw new KubeApiError(404, 'NotFound', 'not found')
        return structuredClone(lease)
      }
      case 'POST': {
        const key = body.metadata!.name!
        if (this.leases.has(key)) throw new KubeApiError(409, 'AlreadyExists', 'exists')
        this.leases.set(key, {...structuredClone(body), metadata: {...body.metadata, resourceVersion: String(++this.version)}})
        return structuredClone(this.leases.get(key))
      }
      case 'PUT': {
        const current = this.leases.get(name)
        if (!current) throw new KubeApiError(404, 'NotFound', 'not found')
        if (current.metadata?.resourceVersion !== body.metadata?.resourceVersion) throw new KubeApiError(409, 'Conflict', 'modified')
        this.leases.set(name, {...structuredClone(body), metadata: {...body.metadata, resourceVersion: String(++this.version)}})
        return structuredClone(this.leases.get(name))
      }
      default:
        throw new Error(`unexpected ${method}`)
    }
  }
}

describe('heartbeat: a process without leader election says that it runs', () => {
  it('names the Lease after the host: a DNS label of at most 63 characters, stable, distinct per host', () => {
    const cases = ['laptop.local', 'LAPTOP', 'a'.repeat(200), '---', 'polycrate-operator-7d9f-abcde']
    for (const host of cases) {
      const name = heartbeatLeaseName(host)
      assert.ok(name.length <= 63, name)
      assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      assert.ok(name.startsWith(heartbeatLease.namePrefix))
      assert.equal(heartbeatLeaseName(host), name, 'stable')
    }
    assert.notEqual(heartbeatLeaseName('LAPTOP'), heartbeatLeaseName('laptop'))
  })

  it('the Lease body: holder, duration, renewTime, labels and annotations; acquireTime kept while the holder stays', () => {
    const options = {namespace: 'polycrate', name: 'polycrate-operator-run-x', identity: 'laptop_1', host: 'laptop', pid: 42, version: '0.1.0', durationMs: 15_000}
    const first = heartbeatLeaseBody(undefined, options, Date.parse('2026-03-01T12:00:00Z'))
    assert.equal(first.spec?.holderIdentity, 'laptop_1')
    assert.equal(first.spec?.leaseDurationSeconds, 15)
    assert.equal(first.spec?.renewTime, '2026-03-01T12:00:00.000000Z')
    assert.equal(first.metadata?.labels?.[heartbeatLease.roleLabel], 'heartbeat')
    assert.equal(first.metadata?.labels?.['app.kubernetes.io/name'], 'polycrate-operator')
    assert.deepEqual(first.metadata?.annotations, {'polycrate.io/host': 'laptop', 'polycrate.io/pid': '42', 'polycrate.io/version': '0.1.0'})
    const renewed = heartbeatLeaseBody(first, options, Date.parse('2026-03-01T12:00:05Z'))
    assert.equal(renewed.spec?.acquireTime, first.spec?.acquireTime)
    assert.equal(renewed.spec?.renewTime, '2026-03-01T12:00:05.000000Z')
    const other = heartbeatLeaseBody(first, {...options, identity: 'laptop_2'}, Date.parse('2026-03-01T12:01:00Z'))
    assert.equal(other.spec?.acquireTime, '2026-03-01T12:01:00.000000Z', 'a new holder restarts acquireTime')
    const released = heartbeatLeaseBody(renewed, options, Date.parse('2026-03-01T12:00:07Z'), false)
    assert.equal(JSON.parse(JSON.stringify(released)).spec.holderIdentity, undefined)
  })

  it('creates, renews every interval, survives a failed write, and clears the holder on stop', async () => {
    const clock = new FakeTimers()
    const server = new FakeLeases()
    const heartbeat = new Heartbeat({client: server.client, namespace: 'polycrate', identity: 'laptop_1', host: 'laptop', clock, intervalMs: 5_000, durationMs: 15_000})
    heartbeat.start()
    await settle()
    const lease = () => server.leases.get(heartbeat.name)!
    assert.equal(lease().spec?.holderIdentity, 'laptop_1')
    const created = lease().spec?.renewTime
    await clock.advance(5_000)
    assert.notEqual(lease().spec?.renewTime, created, 'renewed after one interval')
    server.failNext = 1
    const before = lease().spec?.renewTime
    await clock.advance(5_000)
    assert.equal(lease().spec?.renewTime, before, 'a failed write changes nothing')
    await clock.advance(5_000)
    assert.notEqual(lease().spec?.renewTime, before, 'the next beat renews again')
    await heartbeat.stop()
    assert.equal(lease().spec?.holderIdentity, undefined, 'a graceful stop clears the holder')
    const writes = server.methods.length
    await clock.advance(60_000)
    assert.equal(server.methods.length, writes, 'no beat after stop')
  })

  it('takes over a Lease another process of the host left (a restart), and re-reads it after a conflict', async () => {
    const clock = new FakeTimers()
    const server = new FakeLeases()
    const name = heartbeatLeaseName('laptop')
    server.leases.set(name, {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name, namespace: 'polycrate', resourceVersion: '100'}, spec: {holderIdentity: 'laptop_old'}})
    const heartbeat = new Heartbeat({client: server.client, namespace: 'polycrate', identity: 'laptop_new', host: 'laptop', clock})
    heartbeat.start()
    await settle()
    assert.equal(server.leases.get(name)!.spec?.holderIdentity, 'laptop_new')
    // Someone else writes it: the next PUT conflicts, the one after reads it afresh and wins.
    server.leases.get(name)!.metadata!.resourceVersion = '999'
    await clock.advance(5_000)
    await clock.advance(5_000)
    assert.equal(server.leases.get(name)!.spec?.holderIdentity, 'laptop_new')
    await heartbeat.stop()
  })
})
