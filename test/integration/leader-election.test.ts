import assert from 'node:assert/strict'
import net from 'node:net'
import path from 'node:path'
import {KubeClient} from '../../src/kube/client.js'
import {createLogger} from '../../src/lib/logger.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {LeaderElector, type Lease} from '../../src/operator/runtime/leader-election.js'
import {LeadershipLostError, Manager} from '../../src/operator/runtime/manager.js'
import {OperatorMetrics} from '../../src/operator/runtime/metrics.js'
import {adminClient, controlPlane, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'
import {eventually} from '../support/helpers.js'
import {FIELD_MANAGER} from '../../src/operator/conventions.js'
import {resources} from '../../src/kube/resources.js'
import {WriteFencedError} from '../../src/lib/write-fence.js'
import {FakeTimers} from '../support/fake-timers.js'

// Short timings: lease 3 s, renew deadline 2 s, retry 0.5 s.
const LEASE = 3000
const DEADLINE = 2000
const RETRY = 500

/** A promise that records when it settled, so a test can ask "still waiting?" without awaiting it. */
interface Tracked<T> {
  promise: Promise<T>
  settled: boolean
  error?: unknown
}
function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = {promise, settled: false}
  promise.then(
    () => (tracked.settled = true),
    (error: unknown) => {
      tracked.settled = true
      tracked.error = error
    },
  )
  return tracked
}

/**
 * A TCP forwarder in front of the apiserver: `close()` leaves a closed port behind (connection refused),
 * `blackhole()` keeps accepting connections but never answers (requests hang).
 */
class TcpProxy {
  private readonly sockets = new Set<net.Socket>()
  private mode: 'forward' | 'blackhole' = 'forward'
  private readonly server = net.createServer((socket) => this.handle(socket))

  private constructor(
    private readonly target: {host: string; port: number},
    readonly port: number,
  ) {}

  static async start(target: string): Promise<TcpProxy> {
    const url = new URL(target)
    const proxy = new TcpProxy({host: url.hostname, port: Number(url.port)}, await freePort())
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject)
      proxy.server.listen(proxy.port, '127.0.0.1', resolve)
    })
    return proxy
  }

  blackhole(): void {
    this.mode = 'blackhole'
    this.dropConnections()
  }

  async close(): Promise<void> {
    this.dropConnections()
    if (!this.server.listening) return
    await new Promise((resolve) => this.server.close(resolve))
  }

  private handle(socket: net.Socket): void {
    this.keep(socket)
    if (this.mode === 'blackhole') return
    const upstream = net.connect(this.target.port, this.target.host)
    this.keep(upstream)
    socket.pipe(upstream).pipe(socket)
    socket.on('close', () => upstream.destroy())
    upstream.on('close', () => socket.destroy())
  }

  private keep(socket: net.Socket): void {
    this.sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => this.sockets.delete(socket))
  }

  private dropConnections(): void {
    for (const socket of this.sockets) socket.destroy()
    this.sockets.clear()
  }
}

describe('leader election on a real kube-apiserver', () => {
  let admin: KubeClient
  let namespace: string
  let leaseCounter = 0
  let leaseName: string
  const clients: KubeClient[] = []
  const controllers: AbortController[] = []
  const proxies: TcpProxy[] = []
  /** The electors' decisions (debug log lines) with the wall-clock time they were made: the positive signals. */
  const decisions: Array<{identity: string; msg: string; at: number}> = []
  /** The times `identity` found the lease held by another candidate and chose to wait, since `since`. */
  const waits = (identity: string, since = 0) =>
    decisions.filter((d) => d.identity === identity && d.msg === 'leader lease is held by another candidate' && d.at >= since).map((d) => d.at)
  const waitedTimes = (identity: string, count: number) =>
    eventually(async () => waits(identity).length >= count, 10_000, `${identity} chose to wait ${count} times`)

  const controller = () => {
    const c = new AbortController()
    controllers.push(c)
    return c
  }
  const client = () => {
    const c = adminClient()
    clients.push(c)
    return c
  }
  const elector = (identity: string, options: {client?: KubeClient; metrics?: OperatorMetrics} = {}) =>
    new LeaderElector({
      client: options.client ?? client(),
      namespace,
      name: leaseName,
      identity,
      leaseDurationMs: LEASE,
      renewDeadlineMs: DEADLINE,
      retryPeriodMs: RETRY,
      metrics: options.metrics,
      logger: createLogger({level: 'debug', format: 'json', write: (line) => decisions.push({identity, msg: String((JSON.parse(line) as {msg: unknown}).msg), at: Date.now()})}),
    })
  const readLease = () =>
    admin.get<Lease>({group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace, name: leaseName})
  /** A client that reaches the apiserver through a proxy the test can cut. */
  const proxiedClient = async () => {
    const proxy = await TcpProxy.start(controlPlane().server)
    proxies.push(proxy)
    const file = await writeKubeconfig(path.join(controlPlane().dir, `proxied-${proxy.port}`), `https://127.0.0.1:${proxy.port}`, controlPlane().token)
    const c = KubeClient.from(loadKubeConfig({kubeconfig: file}), {fieldManager: FIELD_MANAGER})
    clients.push(c)
    return {proxy, client: c}
  }
  const gauge = async (metrics: OperatorMetrics) =>
    (await metrics.leaderElectionStatus.get()).values.find((v) => v.labels.name === leaseName)?.value

  before(async () => {
    admin = adminClient()
    namespace = await freshNamespace(admin, 'leader')
  })
  after(() => admin.close())
  beforeEach(() => {
    leaseName = `lease-${++leaseCounter}`
  })
  afterEach(async () => {
    for (const c of controllers.splice(0)) c.abort()
    await Promise.all(proxies.splice(0).map((p) => p.close()))
    for (const c of clients.splice(0)) c.close()
  })

  it('of two candidates exactly one acquires; the other keeps waiting while the leader renews', async () => {
    const a = elector('candidate-a')
    const b = elector('candidate-b')
    const acquiringA = track(a.acquire(controller().signal).then(() => a))
    const acquiringB = track(b.acquire(controller().signal).then(() => b))
    const leader = await Promise.race([acquiringA.promise, acquiringB.promise])
    const [standby, standbyAcquiring] = leader === a ? [b, acquiringB] : [a, acquiringA]
    const holding = track(leader.hold(controller().signal))

    const first = await readLease()
    assert.equal(first.spec?.holderIdentity, leader.identity)
    assert.equal(first.spec?.leaseTransitions, 0)
    assert.equal(first.spec?.leaseDurationSeconds, 3)

    // The positive signal: the standby still chose to wait a full lease duration (and a retry) after it first
    // did; without renewals it would have taken the lease by then.
    await waitedTimes(standby.identity, 1)
    const firstWait = waits(standby.identity)[0]!
    await eventually(async () => waits(standby.identity, firstWait + LEASE + RETRY).length > 0, LEASE + 10_000, 'the standby waiting past a lease duration')
    assert.equal(standbyAcquiring.settled, false, 'the standby acquired too')
    assert.equal(standby.isLeader(), false)
    assert.equal(leader.isLeader(), true)
    assert.equal(holding.settled, false)
    const later = await readLease()
    assert.equal(later.spec?.holderIdentity, leader.identity)
    assert.equal(later.spec?.leaseTransitions, 0)
    assert.notEqual(later.spec?.renewTime, first.spec?.renewTime, 'the leader did not renew')
    assert.match(later.spec?.renewTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
  })

  it('release() leaves the lease free: no holder, leaseDurationSeconds 1', async () => {
    const a = elector('candidate-a')
    await a.acquire(controller().signal)
    const hold = controller()
    const holding = a.hold(hold.signal)
    hold.abort()
    assert.equal(await holding, 'released')
    await a.release()
    const lease = await readLease()
    assert.equal(lease.spec?.holderIdentity ?? '', '')
    assert.equal(lease.spec?.leaseDurationSeconds, 1)
    assert.equal(a.isLeader(), false)
    // Safe to call again, and on an elector that never led.
    await a.release()
    await elector('candidate-c').release()
    assert.equal((await readLease()).metadata?.resourceVersion, lease.metadata?.resourceVersion)
  })

  it('release() lets a waiting candidate acquire well within the lease duration', async () => {
    const a = elector('candidate-a')
    const b = elector('candidate-b')
    await a.acquire(controller().signal)
    const hold = controller()
    const holding = a.hold(hold.signal)
    const acquiringB = track(b.acquire(controller().signal))
    await waitedTimes('candidate-b', 2)
    assert.equal(acquiringB.settled, false)

    const started = Date.now()
    hold.abort()
    await a.release()
    assert.equal(await holding, 'released')
    await acquiringB.promise
    const elapsed = Date.now() - started
    assert.ok(elapsed < 1500, `took ${elapsed} ms`)
    assert.equal(b.isLeader(), true)
    assert.equal(a.isLeader(), false)
    const lease = await readLease()
    assert.equal(lease.spec?.holderIdentity, 'candidate-b')
    assert.equal(lease.spec?.leaseTransitions, 1)
  })

  it('when the leader stops renewing (a crash), the other takes over after about the lease duration', async () => {
    const a = elector('candidate-a')
    const b = elector('candidate-b')
    await a.acquire(controller().signal)
    const crash = controller()
    const holding = a.hold(crash.signal)
    const acquiringB = track(b.acquire(controller().signal))
    await waitedTimes('candidate-b', 2)
    assert.equal(acquiringB.settled, false)

    const started = Date.now()
    crash.abort() // no release()
    assert.equal(await holding, 'released')
    await acquiringB.promise
    const elapsed = Date.now() - started
    // The last renew was at most one retry period before the crash; takeover is one lease duration after the
    // standby saw it (plus up to one jittered retry period).
    assert.ok(elapsed >= LEASE - RETRY - 500 && elapsed <= LEASE + 2 * RETRY + 500, `took ${elapsed} ms`)
    const lease = await readLease()
    assert.equal(lease.spec?.holderIdentity, 'candidate-b')
    assert.equal(lease.spec?.leaseTransitions, 1)
    assert.equal(lease.spec?.leaseDurationSeconds, 3)
  })

  for (const failure of ['closed port', 'hanging connection'] as const) {
    it(`a leader that cannot reach the apiserver (${failure}) gives up within the renew deadline`, async () => {
      const {proxy, client: proxied} = await proxiedClient()
      const metrics = new OperatorMetrics({processMetrics: false})
      const a = elector('candidate-a', {client: proxied, metrics})
      const b = elector('candidate-b')
      await a.acquire(controller().signal)
      const holding = track(a.hold(controller().signal))
      const acquiringB = track(b.acquire(controller().signal))
      // The positive signals: the leader renewed through the proxy, and the standby chose to wait twice.
      const acquired = (await readLease()).spec?.renewTime
      await eventually(async () => (await readLease()).spec?.renewTime !== acquired, 10_000, 'a renewal through the proxy')
      await waitedTimes('candidate-b', 2)
      assert.equal(a.isLeader(), true, 'renewing through the proxy failed')
      assert.equal(await gauge(metrics), 1)
      assert.equal(acquiringB.settled, false)

      const started = Date.now()
      if (failure === 'closed port') await proxy.close()
      else proxy.blackhole()
      assert.equal(await holding.promise, 'lost')
      const elapsed = Date.now() - started
      assert.ok(elapsed <= DEADLINE + 400, `took ${elapsed} ms`)
      assert.ok(elapsed >= DEADLINE - RETRY - 500, `gave up after only ${elapsed} ms`)
      assert.equal(a.isLeader(), false)
      assert.equal(await gauge(metrics), 0)

      // The lease it can no longer renew expires and the standby takes it.
      await acquiringB.promise
      assert.equal((await readLease()).spec?.holderIdentity, 'candidate-b')
      assert.ok(Date.now() - started >= DEADLINE, 'the standby took over while the old leader could still think it leads')
    })
  }

  it('a manager that loses its lease stops reconciling and ends its run with LeadershipLostError (the process exits, like controller-runtime)', async () => {
    const {proxy, client: proxied} = await proxiedClient()
    const manager = new Manager({
      client: proxied,
      namespace,
      leaderElection: {leaseName, leaseDurationMs: LEASE, renewDeadlineMs: DEADLINE, retryPeriodMs: RETRY},
      metricsBindAddress: '0',
      probeBindAddress: '0',
      metrics: new OperatorMetrics({processMetrics: false}),
    })
    let reconciling = false
    const leading = new Promise<void>((resolve) => manager.onLeadershipChange((now) => {
      reconciling = now
      if (now) resolve()
    }))
    const run = track(manager.run(controller().signal))
    await leading
    assert.equal(manager.isLeader, true)
    proxy.blackhole()
    await assert.rejects(run.promise, (error: unknown) => error instanceof LeadershipLostError && /lost the leader lease/.test((error as Error).message))
    assert.equal(reconciling, false, 'leadership was given up before the run ended')
    assert.equal(manager.isLeader, false)
  })

  it('two managers, the leader frozen past the lease (its clock moved, no timer run yet): its in-flight reconcile\'s write is refused by the fence, it steps down and exits; only the new leader writes', async () => {
    const configMaps = {...resources.configMaps, namespace}
    const exists = async (name: string) => Boolean(await admin.getOrUndefined({...configMaps, name}))
    // Each manager reconciles ConfigMaps src-*: it writes <its name>-<source> (the second source of A waits for the test).
    const startManager = (name: string, timers?: FakeTimers, gate?: {key: string; reached: () => void; open: Promise<void>}) => {
      const c = client()
      const manager = new Manager({
        client: c, namespace, identity: `manager-${name}`, clock: timers,
        leaderElection: {leaseName, leaseDurationMs: LEASE, renewDeadlineMs: DEADLINE, retryPeriodMs: RETRY},
        metricsBindAddress: '0', probeBindAddress: '0', metrics: new OperatorMetrics({processMetrics: false}),
      })
      const outcomes: Array<{source: string; error?: unknown; aborted: boolean}> = []
      const builder = manager.controller(`writer-${name}`)
      builder.for({resource: configMaps, kind: 'ConfigMap'})
      builder.complete(async ({key, signal}) => {
        const source = key.split('/')[1]!
        if (!source.startsWith('src-')) return
        if (gate?.key === source) {
          gate.reached()
          await gate.open
        }
        try {
          await c.create(configMaps, {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: `${name}-${source}`}}, undefined, {signal})
          outcomes.push({source, aborted: signal.aborted})
        } catch (error) {
          outcomes.push({source, error, aborted: signal.aborted})
          if (!(error instanceof Error && /already exists/.test(error.message))) throw error
        }
      })
      const leading = new Promise<void>((resolve) => manager.onLeadershipChange((now) => now && resolve()))
      const run = track(manager.run(controller().signal))
      return {manager, outcomes, leading, run}
    }

    await admin.create(configMaps, {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'src-1'}})
    const clockA = new FakeTimers(Date.now())
    let reached!: () => void
    const atGate = new Promise<void>((resolve) => (reached = resolve))
    let open!: () => void
    const a = startManager('a', clockA, {key: 'src-2', reached, open: new Promise<void>((resolve) => (open = resolve))})
    await a.leading
    await eventually(() => exists('a-src-1'), 30_000, 'the leader A writing')
    await admin.create(configMaps, {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'src-2'}})
    await atGate // A's reconcile of src-2 is in flight; A's clock stands still from here: it renews no more (frozen)

    const b = startManager('b')
    await b.leading // B saw A's record unchanged for the lease duration and took the lease
    assert.equal((await readLease()).spec?.holderIdentity, 'manager-b')

    // A wakes up: its clock jumped past the lease, its overdue timers have not run; its reconcile goes on first.
    clockA.freeze(LEASE + 1000)
    open()
    await eventually(async () => a.outcomes.some((o) => o.source === 'src-2'), 10_000, 'A\'s in-flight reconcile ending')
    const refused = a.outcomes.find((o) => o.source === 'src-2')!
    assert.ok(refused.error instanceof WriteFencedError, `A's write was not refused: ${String(refused.error)}`)
    assert.equal(refused.aborted, true, 'the reconcile\'s signal was aborted by the time the refused write returned')
    assert.equal(a.manager.isLeader, false)
    await assert.rejects(a.run.promise, LeadershipLostError)

    await eventually(async () => (await exists('b-src-1')) && exists('b-src-2'), 30_000, 'the new leader B writing')
    assert.equal(await exists('a-src-2'), false, 'the frozen leader wrote after the other had taken the lease')
    assert.deepEqual(a.outcomes.map((o) => o.source), ['src-1', 'src-2'])
  })
})
