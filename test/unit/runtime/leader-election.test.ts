import assert from 'node:assert/strict'
import {KubeApiError, KubeConnectionError, type KubeClient, type RequestOptions} from '../../../src/kube/client.js'
import {createLogger} from '../../../src/lib/logger.js'
import {
  decideAcquire,
  LeaderElector,
  leaseRecordKey,
  microTime,
  type AcquireDecision,
  type HoldOutcome,
  type Lease,
  type LeaderElectionOptions,
} from '../../../src/operator/runtime/leader-election.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {FakeTimers, settle} from '../../support/fake-timers.js'

const me = 'me_1'
const other = 'other_2'
const T = Date.parse('2026-01-06T14:30:00Z')

const lease = (spec: Lease['spec']): Lease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: {name: 'l', namespace: 'ns', resourceVersion: '1'},
  spec,
})

describe('leader election', () => {
  describe('decideAcquire', () => {
    // [title, lease, observedAt, now, fallback lease duration, expected]
    const cases: Array<[string, Lease | undefined, number, number, number, AcquireDecision]> = [
      ['no lease', undefined, 0, T, 15_000, 'create'],
      ['own lease', lease({holderIdentity: me, leaseDurationSeconds: 15}), T, T, 15_000, 'renew'],
      ['own lease, long expired', lease({holderIdentity: me, leaseDurationSeconds: 15}), T - 60_000, T, 15_000, 'renew'],
      ['foreign, just observed', lease({holderIdentity: other, leaseDurationSeconds: 15}), T, T, 15_000, 'wait'],
      ['foreign, unchanged for 14.999 s', lease({holderIdentity: other, leaseDurationSeconds: 15}), T - 14_999, T, 15_000, 'wait'],
      ['foreign, unchanged for exactly the duration', lease({holderIdentity: other, leaseDurationSeconds: 15}), T - 15_000, T, 15_000, 'takeover'],
      ['foreign, unchanged for longer', lease({holderIdentity: other, leaseDurationSeconds: 15}), T - 20_000, T, 15_000, 'takeover'],
      [
        'foreign, remote renewTime far in the past but just observed (remote clocks are not trusted)',
        lease({holderIdentity: other, leaseDurationSeconds: 15, renewTime: '2000-01-01T00:00:00.000000Z'}),
        T,
        T,
        15_000,
        'wait',
      ],
      [
        'foreign, remote renewTime in the future but unchanged for the duration',
        lease({holderIdentity: other, leaseDurationSeconds: 15, renewTime: '2100-01-01T00:00:00.000000Z'}),
        T - 15_000,
        T,
        15_000,
        'takeover',
      ],
      ['foreign, the record\'s duration wins over ours (60 s)', lease({holderIdentity: other, leaseDurationSeconds: 60}), T - 20_000, T, 15_000, 'wait'],
      ['foreign, no leaseDurationSeconds: ours is used', lease({holderIdentity: other}), T - 15_000, T, 15_000, 'takeover'],
      ['foreign, leaseDurationSeconds 0: ours is used', lease({holderIdentity: other, leaseDurationSeconds: 0}), T - 14_000, T, 15_000, 'wait'],
      ['empty holderIdentity', lease({holderIdentity: '', leaseDurationSeconds: 15}), T, T, 15_000, 'takeover'],
      ['no holderIdentity', lease({leaseDurationSeconds: 15}), T, T, 15_000, 'takeover'],
      ['no spec', lease(undefined), T, T, 15_000, 'takeover'],
      ['released (no holder, leaseDurationSeconds 1), just observed', lease({leaseDurationSeconds: 1, renewTime: microTime(T)}), T, T, 15_000, 'takeover'],
      ['holder set with leaseDurationSeconds 1, observed 0.5 s ago', lease({holderIdentity: other, leaseDurationSeconds: 1}), T - 500, T, 15_000, 'wait'],
      ['holder set with leaseDurationSeconds 1, observed 1 s ago', lease({holderIdentity: other, leaseDurationSeconds: 1}), T - 1000, T, 15_000, 'takeover'],
    ]
    for (const [title, input, observedAt, now, duration, expected] of cases) {
      it(`${title} → ${expected}`, () => {
        assert.equal(decideAcquire(input, me, observedAt, now, duration), expected)
      })
    }
  })

  describe('helpers', () => {
    it('microTime is RFC 3339 with microseconds', () => {
      assert.equal(microTime(T), '2026-01-06T14:30:00.000000Z')
      assert.equal(microTime(T + 123), '2026-01-06T14:30:00.123000Z')
    })

    it('the record key changes with every field of the record, not with metadata', () => {
      const base = lease({holderIdentity: other, leaseDurationSeconds: 15, renewTime: microTime(T), acquireTime: microTime(T), leaseTransitions: 2})
      const key = leaseRecordKey(base)
      assert.equal(leaseRecordKey({...base, metadata: {...base.metadata, resourceVersion: '99'}}), key)
      for (const change of [{renewTime: microTime(T + 1)}, {holderIdentity: me}, {leaseTransitions: 3}, {leaseDurationSeconds: 1}, {acquireTime: microTime(T + 1)}]) {
        assert.notEqual(leaseRecordKey({...base, spec: {...base.spec, ...change}}), key, JSON.stringify(change))
      }
    })

    it('rejects inconsistent timings', () => {
      const client = new FakeLeaseServer().client
      const make = (o: Partial<LeaderElectionOptions>) => new LeaderElector({client, namespace: 'ns', name: 'l', identity: me, ...o})
      assert.throws(() => make({leaseDurationMs: 10_000, renewDeadlineMs: 10_000}), /leaseDuration/)
      assert.throws(() => make({renewDeadlineMs: 2_000, retryPeriodMs: 2_000}), /renewDeadline/)
      assert.throws(() => make({identity: ''}), /identity/)
      assert.doesNotThrow(() => make({}))
    })
  })

  describe('LeaderElector against an in-memory lease, on fake timers', () => {
    let server: FakeLeaseServer
    let clock: FakeTimers
    let logs: Array<Record<string, unknown>>
    let metrics: OperatorMetrics
    const controllers: AbortController[] = []
    const signal = () => {
      const controller = new AbortController()
      controllers.push(controller)
      return controller
    }
    // Lease 1 s (the smallest a record can say), deadline 50 ms, retry 10 ms (retries jittered to 10–12 ms).
    const elector = (identity = me, o: Partial<LeaderElectionOptions> = {}) =>
      new LeaderElector({
        client: server.client,
        namespace: 'ns',
        name: 'l',
        identity,
        leaseDurationMs: 1000,
        renewDeadlineMs: 50,
        retryPeriodMs: 10,
        clock,
        metrics,
        logger: createLogger({level: 'debug', format: 'json', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>)}),
        ...o,
      })
    const gauge = async () => (await metrics.leaderElectionStatus.get()).values.find((v) => v.labels.name === 'l')?.value
    /** The outcome of a hold once it has one; undefined while it runs. */
    const watch = (holding: Promise<HoldOutcome>) => {
      const seen: {outcome?: HoldOutcome} = {}
      void holding.then((outcome) => (seen.outcome = outcome))
      return seen
    }

    beforeEach(() => {
      server = new FakeLeaseServer()
      clock = new FakeTimers(T)
      logs = []
      metrics = new OperatorMetrics({processMetrics: false})
    })
    afterEach(() => {
      for (const c of controllers.splice(0)) c.abort()
    })

    it('creates a missing lease and leads', async () => {
      const e = elector()
      const changes: boolean[] = []
      e.onChange((leading) => changes.push(leading))
      assert.equal(await gauge(), 0)
      await e.acquire(signal().signal)
      assert.equal(e.isLeader(), true)
      assert.deepEqual(changes, [true])
      assert.equal(await gauge(), 1)
      const spec = server.lease!.spec!
      assert.equal(spec.holderIdentity, me)
      assert.equal(spec.leaseDurationSeconds, 1)
      assert.equal(spec.leaseTransitions, 0)
      assert.equal(spec.acquireTime, microTime(T))
      assert.equal(spec.renewTime, spec.acquireTime)
      assert.ok(logs.some((l) => l.level === 'info' && l.msg === 'acquired leader lease' && l.lease === 'ns/l' && l.identity === me))
    })

    it('waits while another holder\'s record keeps changing, takes over once it stayed unchanged for the lease duration', async () => {
      server.seed({holderIdentity: other, leaseDurationSeconds: 1, renewTime: '2000-01-01T00:00:00.000000Z', leaseTransitions: 4})
      const e = elector()
      let acquired = false
      const acquiring = e.acquire(signal().signal).then(() => (acquired = true))
      const waits = () => logs.filter((l) => l.msg === 'leader lease is held by another candidate').length
      for (let i = 0; i < 3; i++) {
        const before = waits()
        await clock.advance(800) // 2.4 s pass on the local clock, but the holder renews in between
        assert.ok(waits() > before, 'the elector looked at the lease again and chose to wait')
        server.lease!.spec!.renewTime = microTime(clock.now())
      }
      // The last change is seen within one retry (≤ 12 ms) and restarts the wait: 990 ms on, it still waits.
      await clock.advance(990)
      assert.equal(acquired, false)
      assert.equal(e.isLeader(), false)
      await clock.advance(50) // the holder stopped renewing a full lease duration ago
      await acquiring
      assert.equal(e.isLeader(), true)
      assert.equal(server.lease!.spec!.holderIdentity, me)
      assert.equal(server.lease!.spec!.leaseTransitions, 5)
    })

    it('takes a released lease over at once', async () => {
      server.seed({leaseDurationSeconds: 1, renewTime: microTime(clock.now()), leaseTransitions: 1})
      await elector().acquire(signal().signal)
      assert.equal(server.lease!.spec!.holderIdentity, me)
      assert.equal(server.lease!.spec!.leaseTransitions, 2)
    })

    it('retries after a 409 on takeover and on request errors, once per retry period', async () => {
      server.seed({leaseDurationSeconds: 1})
      server.failOn.push(['PUT', new KubeApiError(409, 'Conflict', 'the object has been modified')], ['GET', new KubeConnectionError('fake', 'ECONNRESET', 'reset')])
      let acquired = false
      const acquiring = elector().acquire(signal().signal).then(() => (acquired = true))
      await clock.advance(9)
      assert.equal(acquired, false, 'retried before the retry period')
      await clock.advance(30) // two retries of 10–12 ms
      await acquiring
      assert.equal(server.lease!.spec!.holderIdentity, me)
    })

    it('a request that hangs is cut off at the renew deadline and the attempt retried', async () => {
      server.mode = 'hang'
      let acquired = false
      const acquiring = elector().acquire(signal().signal).then(() => (acquired = true))
      await clock.advance(49)
      assert.equal(server.pending, 1)
      await clock.advance(1)
      assert.equal(server.pending, 0, 'the hanging request was not aborted at the deadline')
      assert.ok(logs.some((l) => l.msg === 'could not acquire leader lease'))
      server.mode = 'ok'
      await clock.advance(12)
      await acquiring
      assert.equal(acquired, true)
    })

    it('acquire rejects with AbortError when aborted while waiting', async () => {
      server.seed({holderIdentity: other, leaseDurationSeconds: 1})
      const controller = signal()
      const acquiring = elector().acquire(controller.signal)
      acquiring.catch(() => {})
      await clock.advance(25)
      controller.abort()
      await assert.rejects(acquiring, {name: 'AbortError'})
    })

    it('hold renews every retry period, each renewal stamped with the clock', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      assert.equal(server.writes(), 1)
      const holding = watch(e.hold(signal().signal))
      for (let i = 1; i <= 3; i++) {
        await clock.advance(9)
        assert.equal(server.writes(), i, `renewed before the retry period (renewal ${i})`)
        await clock.advance(1)
        assert.equal(server.writes(), i + 1, `no renewal at the retry period (renewal ${i})`)
        assert.equal(server.lease!.spec!.renewTime, microTime(clock.now()))
      }
      // Well past many renew deadlines: still leading, one renewal per period.
      await clock.advance(200)
      assert.equal(server.writes(), 24)
      assert.equal(e.isLeader(), true)
      assert.equal(holding.outcome, undefined)
      controllers.at(-1)!.abort()
      await settle()
      assert.equal(holding.outcome, 'released')
      assert.equal(e.isLeader(), false)
    })

    it('hold resolves \'lost\' at the renew deadline when no renew succeeds', async () => {
      const e = elector()
      const changes: boolean[] = []
      e.onChange((leading) => changes.push(leading))
      await e.acquire(signal().signal)
      server.mode = 'fail'
      const holding = watch(e.hold(signal().signal))
      await clock.advance(49)
      assert.equal(holding.outcome, undefined, 'gave up before the deadline')
      assert.equal(e.isLeader(), true)
      await clock.advance(1)
      assert.equal(holding.outcome, 'lost')
      assert.equal(e.isLeader(), false)
      assert.deepEqual(changes, [true, false])
      assert.equal(await gauge(), 0)
      assert.ok(logs.some((l) => l.level === 'info' && l.msg === 'lost leader lease' && l.lease === 'ns/l' && l.identity === me))
      assert.ok(logs.filter((l) => l.msg === 'could not renew leader lease').length >= 4, 'it tried every retry period')
    })

    it('a renew that succeeds before the deadline keeps the leadership; the deadline counts from it', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      server.mode = 'fail'
      const holding = watch(e.hold(signal().signal))
      await clock.advance(35) // the renewals at 10, 20 and 30 ms fail
      server.mode = 'ok'
      await clock.advance(5) // the one at 40 ms succeeds: the deadline moves to 90 ms
      server.mode = 'fail'
      await clock.advance(49)
      assert.equal(holding.outcome, undefined)
      assert.equal(e.isLeader(), true)
      await clock.advance(1)
      assert.equal(holding.outcome, 'lost')
    })

    it('a hanging renew request cannot hold hold() open past the deadline', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      server.mode = 'hang'
      const holding = watch(e.hold(signal().signal))
      await clock.advance(49)
      assert.equal(server.pending, 1)
      assert.equal(holding.outcome, undefined)
      await clock.advance(1)
      assert.equal(holding.outcome, 'lost')
      assert.equal(server.pending, 0, 'the hanging request was not aborted')
    })

    it('isLeader() is false the moment the deadline passes, before any timer has run', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      await clock.jump(49)
      assert.equal(e.isLeader(), true)
      await clock.jump(1)
      assert.equal(e.isLeader(), false)
    })

    it('a stalled event loop: hold() reports \'lost\' without renewing after the deadline', async () => {
      const e = elector('me', {renewDeadlineMs: 500, retryPeriodMs: 100})
      await e.acquire(signal().signal)
      const holding = watch(e.hold(signal().signal))
      const writes = server.writes()
      await clock.jump(501) // the renewal due at 100 ms fires late, at 501 ms
      assert.equal(holding.outcome, 'lost')
      assert.equal(server.writes(), writes, 'renewed after the deadline had passed')
      assert.ok(logs.some((l) => l.msg === 'lost leader lease' && l.reason === 'renew deadline passed'))
    })

    it('the write fence is open while leading within the deadline, closed for a candidate and after losing', async () => {
      const e = elector()
      assert.equal(e.fence(), 'not the leader')
      await e.acquire(signal().signal)
      const holding = watch(e.hold(signal().signal))
      assert.equal(e.fence(), undefined)
      await clock.advance(30)
      assert.equal(e.fence(), undefined, 'renewed every retry period, the fence stays open')
      server.seed({holderIdentity: other, leaseDurationSeconds: 1})
      await clock.advance(10)
      assert.equal(holding.outcome, 'lost')
      assert.equal(e.fence(), 'not the leader')
    })

    it('a process frozen past the renew deadline: on waking, the first write it tries is refused and ends the hold on the spot, before any timer runs', async () => {
      const e = elector('me', {renewDeadlineMs: 500, retryPeriodMs: 100})
      await e.acquire(signal().signal)
      const changes: boolean[] = []
      e.onChange((leading) => changes.push(leading))
      const holding = watch(e.hold(signal().signal))
      await clock.advance(100) // one renewal: the deadline now counts from 100 ms
      const writes = server.writes()
      clock.freeze(600) // SIGSTOP for 600 ms; SIGCONT: nothing has run yet
      assert.equal(holding.outcome, undefined, 'no timer has run')
      const reason = e.fence() // what a reconcile's write asks first thing after waking
      assert.match(reason ?? '', /no renew of the lease within the renew deadline \(500 ms; last 600 ms ago\)/)
      assert.deepEqual(changes, [false], 'the listeners (the manager aborts its reconciles) were told within fence()')
      await settle()
      assert.equal(holding.outcome, 'lost')
      await clock.advance(0) // the overdue timers fire now: nothing more happens
      assert.equal(server.writes(), writes, 'no renewal after waking up')
      assert.equal(e.isLeader(), false)
      assert.equal(await gauge(), 0)
      assert.ok(logs.some((l) => l.msg === 'lost leader lease' && /renew deadline/.test(String(l.reason))))
    })

    it('a process frozen for less than the renew deadline keeps leading: the fence stays open and the renewals go on', async () => {
      const e = elector('me', {renewDeadlineMs: 500, retryPeriodMs: 100})
      await e.acquire(signal().signal)
      const holding = watch(e.hold(signal().signal))
      clock.freeze(350)
      assert.equal(e.fence(), undefined)
      const writes = server.writes()
      await clock.advance(0) // the overdue renewal fires
      assert.equal(server.writes(), writes + 1)
      await clock.advance(1000)
      assert.equal(holding.outcome, undefined)
      assert.equal(e.fence(), undefined)
    })

    it('a step of the wall clock neither ends nor extends leadership (deadlines run on monotonic time); the Lease carries wall time', async () => {
      const e = elector('me', {renewDeadlineMs: 500, retryPeriodMs: 100})
      await e.acquire(signal().signal)
      const holding = watch(e.hold(signal().signal))
      clock.stepWall(-3_600_000) // an hour back
      assert.equal(e.fence(), undefined)
      await clock.advance(100)
      assert.equal(server.lease!.spec!.renewTime, microTime(T + 100 - 3_600_000), 'renewTime is wall time')
      clock.stepWall(7_200_000) // an hour ahead of where it was
      assert.equal(e.fence(), undefined)
      await clock.advance(100)
      assert.equal(holding.outcome, undefined)
      assert.equal(e.isLeader(), true)
    })

    it('hold resolves \'lost\' at the next renew after another holder took the lease', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      const holding = watch(e.hold(signal().signal))
      server.seed({holderIdentity: other, leaseDurationSeconds: 1})
      await clock.advance(9)
      assert.equal(holding.outcome, undefined)
      await clock.advance(1)
      assert.equal(holding.outcome, 'lost')
      assert.equal(e.isLeader(), false)
      assert.equal(server.lease!.spec!.holderIdentity, other)
    })

    it('hold without leadership resolves \'lost\'', async () => {
      assert.equal(await elector().hold(signal().signal), 'lost')
    })

    it('release() clears the holder, sets leaseDurationSeconds 1 and ends hold() with \'released\'', async () => {
      const e = elector()
      await e.acquire(signal().signal)
      const holding = e.hold(signal().signal)
      await e.release()
      assert.equal(await holding, 'released')
      assert.equal(e.isLeader(), false)
      assert.equal(await gauge(), 0)
      const spec = server.lease!.spec!
      assert.equal(spec.holderIdentity, undefined)
      assert.equal(spec.leaseDurationSeconds, 1)
      assert.equal(spec.leaseTransitions, 0)
      assert.ok(logs.some((l) => l.level === 'info' && l.msg === 'released leader lease' && l.lease === 'ns/l' && l.identity === me))
      // Another candidate takes it over on its first attempt.
      await elector(other).acquire(signal().signal)
      assert.equal(server.lease!.spec!.holderIdentity, other)
      assert.equal(server.lease!.spec!.leaseTransitions, 1)
    })

    it('release() is a no-op when not leader', async () => {
      server.seed({holderIdentity: other, leaseDurationSeconds: 1})
      const e = elector()
      await e.release()
      const acquiring = e.acquire(signal().signal).catch(() => {})
      await clock.advance(15)
      controllers.at(-1)!.abort()
      await acquiring
      await e.release()
      assert.equal(server.writes(), 0)
      assert.equal(server.lease!.spec!.holderIdentity, other)
    })
  })
})

/** Just enough of the apiserver for one Lease: GET, POST, PUT with resourceVersion checks. */
class FakeLeaseServer {
  lease: Lease | undefined
  mode: 'ok' | 'fail' | 'hang' = 'ok'
  /** Failures for the next requests with these methods, in order. */
  failOn: Array<[method: string, error: Error]> = []
  pending = 0
  private resourceVersion = 0
  private readonly log: string[] = []
  readonly client = {request: (options: RequestOptions) => this.request(options)} as unknown as KubeClient

  seed(spec: Lease['spec']): void {
    this.lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: 'l', namespace: 'ns', resourceVersion: String(++this.resourceVersion)},
      spec,
    }
  }

  writes(): number {
    return this.log.filter((m) => m !== 'GET').length
  }

  private async request(options: RequestOptions): Promise<unknown> {
    const method = options.method ?? 'GET'
    await Promise.resolve()
    if (this.mode === 'fail') throw new KubeConnectionError('fake', 'ECONNREFUSED', 'connection refused')
    if (this.mode === 'hang') {
      this.pending++
      return new Promise((_, reject) =>
        options.signal?.addEventListener('abort', () => {
          this.pending--
          reject(Object.assign(new Error('aborted'), {name: 'AbortError'}))
        }),
      )
    }
    if (this.failOn[0]?.[0] === method) throw this.failOn.shift()![1]
    this.log.push(method)
    const body = options.body as Lease | undefined
    switch (method) {
      case 'GET':
        if (!this.lease) throw new KubeApiError(404, 'NotFound', 'not found')
        return structuredClone(this.lease)
      case 'POST':
        if (this.lease) throw new KubeApiError(409, 'AlreadyExists', 'already exists')
        this.lease = {...structuredClone(body!), metadata: {...body!.metadata, resourceVersion: String(++this.resourceVersion)}}
        return structuredClone(this.lease)
      case 'PUT':
        if (!this.lease) throw new KubeApiError(404, 'NotFound', 'not found')
        if (body!.metadata?.resourceVersion !== this.lease.metadata?.resourceVersion) throw new KubeApiError(409, 'Conflict', 'the object has been modified')
        this.lease = {...structuredClone(body!), metadata: {...body!.metadata, resourceVersion: String(++this.resourceVersion)}}
        return structuredClone(this.lease)
      default:
        throw new Error(`unexpected ${method}`)
    }
  }
}
