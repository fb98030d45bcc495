/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics:
 *
 * - a candidate takes the lease over only when it has seen the same record, unchanged, for the record's lease
 *   duration, measured on its *own* clock from the moment it observed the record (remote clocks are never
 *   trusted);
 * - the leader renews every retry period and gives up leadership at once when no renew has succeeded within the
 *   renew deadline of the start of the last successful one. The deadline is checked against the elector's clock
 *   (wall time, unless a test passes a fake one) on every tick, a timer enforces it even while a request hangs, and
 *   each renew request is cut off at the deadline, so neither a blocked event loop nor a slow apiserver can keep a
 *   stale leader running. Its own times (when it observed a record, when its last renew started, the deadline) are
 *   read from the clock's monotonic time, so a step of the wall clock neither extends nor shortens them; only what
 *   it writes into the Lease (acquireTime, renewTime) is wall time;
 * - the write fence (`fence()`, asked by the clients before each write, lib/write-fence.ts): open only while
 *   `isLeader()`. A process frozen past the renew deadline (SIGSTOP, a VM migration, a long GC) wakes up with its
 *   timers overdue and I/O callbacks that run before them: the first write any of its reconciles tries finds the
 *   fence closed, and that check ends the hold at once ('lost': controllers aborted, queues dropped) — all before
 *   another replica can have taken the lease, which takes the lease duration (> renew deadline) of silence;
 * - on graceful shutdown the lease is released (holder cleared, duration 1 s), like client-go's ReleaseOnCancel,
 *   so a standby takes over within one retry period.
 *
 * Usage: `await elector.acquire(signal)`, start the work, `const outcome = await elector.hold(signal)`; on 'lost'
 * stop the work at once (the operator exits); on shutdown stop the work, abort the hold and `await release()`.
 */
import {KubeApiError, resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {monotonicNow, sleep, systemClock, timeoutSignal, type Clock} from '../../lib/clock.js'
import {silentLogger, type Logger} from '../../lib/logger.js'
import {nameSignal} from '../../lib/request-origin.js'
import {anySignal} from '../../lib/signals.js'
import type {OperatorMetrics} from './metrics.js'

export interface LeaseSpec {
  holderIdentity?: string
  leaseDurationSeconds?: number
  /** MicroTime: RFC 3339 with microseconds. */
  acquireTime?: string
  renewTime?: string
  leaseTransitions?: number
  [key: string]: unknown
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec
}

export interface LeaderElectionOptions {
  client: KubeClient
  namespace: string
  /** Lease name, e.g. 'polycrate-operator-leader'. */
  name: string
  /** Unique per process, e.g. `${hostname}_${randomUUID()}`. */
  identity: string
  /** How long a candidate waits, after it last saw the record change, before taking the lease over. Default 15 s. */
  leaseDurationMs?: number
  /** How long the leader keeps leading without a successful renew. Default 10 s. */
  renewDeadlineMs?: number
  /** Interval between acquire attempts (jittered 1.0–1.2×) and between renews. Default 2 s. */
  retryPeriodMs?: number
  logger?: Logger
  metrics?: OperatorMetrics
  /**
   * Time and timers: the renew deadline, the renewals, the retries and each request's cut-off (the system clock by
   * default; tests pass a fake one). The waits of the renew loop and of the retries keep the process alive.
   */
  clock?: Clock
}

export type AcquireDecision = 'create' | 'takeover' | 'renew' | 'wait'
export type HoldOutcome = 'lost' | 'released'

export const DEFAULT_LEASE_DURATION_MS = 15_000
export const DEFAULT_RENEW_DEADLINE_MS = 10_000
export const DEFAULT_RETRY_PERIOD_MS = 2_000
/** What the elector's requests name as their origin in the User-Agent (`… controller/leader-election`). */
export const LEADER_ELECTION_ORIGIN = 'leader-election'
/** client-go's JitterFactor for the retry period. */
const JITTER = 0.2
/** The elector's own waits (renewals, the deadline, retries) keep the process alive, as Node's timers do. */
const KEEP_ALIVE = {keepAlive: true}

/**
 * What a candidate should do with the lease it just read.
 *
 * @param lease the lease as read, undefined when it does not exist
 * @param observedAt local time (ms) at which this candidate first saw the lease's current record
 * @param now local time (ms)
 * @param leaseDurationMs used when the record carries no (positive) leaseDurationSeconds
 */
export function decideAcquire(
  lease: Lease | undefined,
  identity: string,
  observedAt: number,
  now: number,
  leaseDurationMs: number,
): AcquireDecision {
  if (!lease) return 'create'
  const holder = lease.spec?.holderIdentity ?? ''
  if (holder === identity) return 'renew'
  if (holder === '') return 'takeover'
  return observedAt + recordDurationMs(lease, leaseDurationMs) > now ? 'wait' : 'takeover'
}

/** The lease duration a record announces (its holder's setting), else the fallback. */
export function recordDurationMs(lease: Lease, fallbackMs: number): number {
  const seconds = lease.spec?.leaseDurationSeconds
  return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : fallbackMs
}

/** The part of a lease that identifies one record: any change to it restarts the observer's expiry clock. */
export function leaseRecordKey(lease: Lease): string {
  const spec = lease.spec ?? {}
  return JSON.stringify([spec.holderIdentity ?? '', spec.leaseDurationSeconds, spec.acquireTime, spec.renewTime, spec.leaseTransitions])
}

/** A metav1.MicroTime: `2026-01-06T14:30:00.000000Z`. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

export class LeaderElector {
  readonly namespace: string
  readonly name: string
  readonly identity: string
  readonly leaseDurationMs: number
  readonly renewDeadlineMs: number
  readonly retryPeriodMs: number

  private readonly client: KubeClient
  private readonly logger: Logger
  private readonly metrics: OperatorMetrics | undefined
  private readonly clock: Clock
  private readonly ref: ResourceRef
  private readonly fields: {lease: string; identity: string}

  private leading = false
  /** Local time at which the last successful acquire/renew request was *sent*. */
  private lastRenewAt = Number.NEGATIVE_INFINITY
  /** The last lease read or written (its resourceVersion is used for the next write). */
  private lease: Lease | undefined
  private observedKey: string | undefined
  private observedAt = 0
  private activeHold: {promise: Promise<HoldOutcome>; finish: (outcome: HoldOutcome, reason?: string) => void} | undefined
  private readonly listeners: Array<(leading: boolean) => void> = []

  constructor(options: LeaderElectionOptions) {
    this.client = options.client
    this.namespace = options.namespace
    this.name = options.name
    this.identity = options.identity
    this.leaseDurationMs = options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS
    this.renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS
    this.retryPeriodMs = options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS
    this.logger = options.logger ?? silentLogger
    this.metrics = options.metrics
    this.clock = options.clock ?? systemClock
    if (!this.namespace || !this.name) throw new Error('leader election: namespace and lease name are required')
    if (!this.identity) throw new Error('leader election: identity must not be empty')
    if (!(this.retryPeriodMs > 0)) throw new Error('leader election: retryPeriod must be positive')
    if (!(this.renewDeadlineMs > this.retryPeriodMs * (1 + JITTER))) {
      throw new Error(`leader election: renewDeadline (${this.renewDeadlineMs} ms) must be greater than 1.2 × retryPeriod (${this.retryPeriodMs} ms)`)
    }
    if (!(this.leaseDurationMs > this.renewDeadlineMs)) {
      throw new Error(`leader election: leaseDuration (${this.leaseDurationMs} ms) must be greater than renewDeadline (${this.renewDeadlineMs} ms)`)
    }
    this.ref = {...resources.leases, namespace: this.namespace, name: this.name}
    this.fields = {lease: `${this.namespace}/${this.name}`, identity: this.identity}
    this.metrics?.leaderElectionStatus.set({name: this.name}, 0)
  }

  /** True while leading: false at once when the renew deadline has passed, even before any timer has run. */
  isLeader(): boolean {
    return this.leading && this.now() - this.lastRenewAt < this.renewDeadlineMs
  }

  /**
   * The write fence: undefined while this replica may write (it leads and renewed within the renew deadline), else
   * why not. Finding the deadline passed while still marked leading (the timers have not run yet: a frozen process
   * that just woke up) ends the hold right here, synchronously: 'lost', the listeners told (the manager aborts its
   * reconciles and drops its queues) before the refused write returns.
   */
  fence(): string | undefined {
    if (this.isLeader()) return undefined
    if (!this.leading) return 'not the leader'
    const reason = `no renew of the lease within the renew deadline (${this.renewDeadlineMs} ms; last ${Math.round(this.now() - this.lastRenewAt)} ms ago)`
    if (this.activeHold) this.activeHold.finish('lost', reason)
    else this.stopLeading('lost', reason)
    return reason
  }

  onChange(listener: (leading: boolean) => void): void {
    this.listeners.push(listener)
  }

  /** Resolves when leadership is acquired (or rejects with AbortError when the signal aborts first). */
  async acquire(signal: AbortSignal): Promise<void> {
    throwIfAborted(signal)
    if (this.isLeader()) return
    this.logger.debug('trying to acquire leader lease', this.fields)
    for (;;) {
      const started = this.now()
      try {
        const acquired = await this.within(this.renewDeadlineMs, signal, (cut) => this.tryAcquire(cut, this.renewDeadlineMs))
        // A response that arrives after the renew deadline proves nothing any more: try again.
        if (acquired && this.now() - started < this.renewDeadlineMs) {
          this.lastRenewAt = started
          this.setLeading(true)
          this.logger.info('acquired leader lease', this.fields)
          return
        }
      } catch (error) {
        if (signal.aborted) throw abortError(signal)
        this.logFailure('could not acquire leader lease', error)
      }
      throwIfAborted(signal)
      try {
        await sleep(this.clock, this.retryPeriodMs * (1 + Math.random() * JITTER), signal)
      } catch {
        throw abortError(signal)
      }
    }
  }

  /**
   * After acquire(): keeps renewing every retryPeriod; resolves with 'lost' as soon as the renew deadline passes
   * without a successful renew (or another holder is seen), or 'released' when the signal aborts (or release() is
   * called). Either way isLeader() is false afterwards; request errors are retried and never thrown.
   */
  hold(signal: AbortSignal): Promise<HoldOutcome> {
    if (this.activeHold) {
      const {promise, finish} = this.activeHold
      if (signal.aborted) finish('released')
      else signal.addEventListener('abort', () => finish('released'), {once: true})
      return promise
    }
    if (!this.isLeader()) {
      if (this.leading) this.stopLeading('lost', 'renew deadline passed before hold()')
      return Promise.resolve('lost')
    }
    if (signal.aborted) {
      this.stopLeading('released')
      return Promise.resolve('released')
    }
    return this.renewUntilDone(signal)
  }

  /** hold()'s loop: a renew every retry period, and a deadline timer that fires even while a renew request hangs. */
  private renewUntilDone(signal: AbortSignal): Promise<HoldOutcome> {
    let resolveHold!: (outcome: HoldOutcome) => void
    const promise = new Promise<HoldOutcome>((resolve) => (resolveHold = resolve))
    const stop = new AbortController()
    let tickTimer: unknown
    let deadlineTimer: unknown
    const remaining = () => this.renewDeadlineMs - (this.now() - this.lastRenewAt)

    const finish = (outcome: HoldOutcome, reason?: string) => {
      if (stop.signal.aborted) return
      stop.abort()
      this.clock.clearTimeout(tickTimer)
      this.clock.clearTimeout(deadlineTimer)
      signal.removeEventListener('abort', onAbort)
      this.activeHold = undefined
      this.stopLeading(outcome, reason)
      resolveHold(outcome)
    }
    const onAbort = () => finish('released')
    signal.addEventListener('abort', onAbort, {once: true})
    this.activeHold = {promise, finish}

    const armDeadline = () => {
      this.clock.clearTimeout(deadlineTimer)
      deadlineTimer = this.clock.setTimeout(() => {
        if (remaining() <= 0) finish('lost', 'renew deadline passed')
        else armDeadline()
      }, Math.max(1, remaining()), KEEP_ALIVE)
    }

    const tick = async () => {
      if (stop.signal.aborted) return
      const left = remaining()
      if (left <= 0) return finish('lost', 'renew deadline passed')
      const renew = await this.renewWithin(stop.signal, left)
      if (stop.signal.aborted) return
      if (renew.holder !== undefined) return finish('lost', `lease is held by ${renew.holder || 'nobody'}`)
      if (renew.renewed) armDeadline()
      if (remaining() <= 0) return finish('lost', 'renew deadline passed')
      tickTimer = this.clock.setTimeout(() => void tick(), this.retryPeriodMs, KEEP_ALIVE)
    }

    armDeadline()
    tickTimer = this.clock.setTimeout(() => void tick(), Math.max(0, this.retryPeriodMs - (this.now() - this.lastRenewAt)), KEEP_ALIVE)
    return promise
  }

  /**
   * One renew of hold(), cut off when the deadline is `left` ms away: renewed (lastRenewAt moves to its start), or
   * another holder seen, or neither (an error, logged unless the hold stopped meanwhile).
   */
  private async renewWithin(stop: AbortSignal, left: number): Promise<{renewed: boolean; holder?: string}> {
    const started = this.now()
    try {
      const result = await this.within(Math.max(1, Math.ceil(left)), stop, (cut) => this.tryRenew(cut, left))
      if (!result.renewed) return {renewed: false, holder: result.holder}
      if (!stop.aborted) this.lastRenewAt = Math.max(this.lastRenewAt, started)
      return {renewed: true}
    } catch (error) {
      if (!stop.aborted) this.logFailure('could not renew leader lease', error)
      return {renewed: false}
    }
  }

  /**
   * Gives the lease up at once: holderIdentity cleared, leaseDurationSeconds 1, renewTime now (client-go's
   * ReleaseOnCancel), so a standby takes over on its next attempt. Ends a running hold() with 'released'.
   * A no-op when this elector is not the last known holder; failures are logged, not thrown (the lease then
   * simply expires).
   */
  async release(): Promise<void> {
    this.activeHold?.finish('released')
    this.stopLeading('released')
    let lease = this.lease
    for (let attempt = 0; attempt < 3; attempt++) {
      if (!lease || (lease.spec?.holderIdentity ?? '') !== this.identity) return
      const now = this.wallNow()
      const {holderIdentity: _, ...spec} = lease.spec ?? {}
      const body: Lease = {
        ...lease,
        spec: {...spec, leaseDurationSeconds: 1, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: spec.leaseTransitions ?? 0},
      }
      try {
        this.observe(await this.within(this.renewDeadlineMs, undefined, (cut) => this.send<Lease>('PUT', body, cut, this.renewDeadlineMs)))
        this.logger.info('released leader lease', this.fields)
        return
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 409)) {
          this.logFailure('could not release leader lease; it will expire', error, 'warn')
          return
        }
      }
      // Conflict: somebody wrote the lease since we last saw it. Release only if it is still ours.
      try {
        lease = await this.within(this.renewDeadlineMs, undefined, (cut) => this.fetch(cut, this.renewDeadlineMs))
        if (lease) this.observe(lease)
      } catch (error) {
        this.logFailure('could not release leader lease; it will expire', error, 'warn')
        return
      }
    }
  }

  /** One acquire attempt: true when the lease is now ours. */
  private async tryAcquire(signal: AbortSignal, timeoutMs: number): Promise<boolean> {
    const current = await this.fetch(signal, timeoutMs)
    if (current) this.observe(current)
    const decision = decideAcquire(current, this.identity, this.observedAt, this.now(), this.leaseDurationMs)
    const now = this.wallNow()
    try {
      switch (decision) {
        case 'create':
          this.observe(await this.send<Lease>('POST', this.createBody(now), signal, timeoutMs))
          return true
        case 'renew':
          this.observe(await this.send<Lease>('PUT', this.heldBody(current!, now, false), signal, timeoutMs))
          return true
        case 'takeover':
          this.observe(await this.send<Lease>('PUT', this.heldBody(current!, now, true), signal, timeoutMs))
          return true
        case 'wait':
          this.logger.debug('leader lease is held by another candidate', {...this.fields, holder: current?.spec?.holderIdentity})
          return false
      }
    } catch (error) {
      // 409: another candidate created or wrote the lease first; try again on the next attempt.
      if (error instanceof KubeApiError && error.status === 409) {
        this.logger.debug('lost the race for the leader lease', {...this.fields, decision})
        return false
      }
      throw error
    }
  }

  /** One renew: writes renewTime optimistically on the last known version, re-reading it on a conflict. */
  private async tryRenew(signal: AbortSignal, timeoutMs: number): Promise<{renewed: true} | {renewed: false; holder: string}> {
    if (this.lease && (this.lease.spec?.holderIdentity ?? '') === this.identity) {
      try {
        this.observe(await this.send<Lease>('PUT', this.heldBody(this.lease, this.wallNow(), false), signal, timeoutMs))
        return {renewed: true}
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 409)) throw error
      }
    }
    const current = await this.fetch(signal, timeoutMs)
    if (!current) {
      // Somebody deleted the lease: recreate it (a 409 here means another candidate was faster).
      this.observe(await this.send<Lease>('POST', this.createBody(this.wallNow()), signal, timeoutMs))
      return {renewed: true}
    }
    this.observe(current)
    const holder = current.spec?.holderIdentity ?? ''
    if (holder !== this.identity) return {renewed: false, holder}
    this.observe(await this.send<Lease>('PUT', this.heldBody(current, this.wallNow(), false), signal, timeoutMs))
    return {renewed: true}
  }

  private createBody(now: number): Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: this.name, namespace: this.namespace},
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseDurationSeconds(),
        acquireTime: microTime(now),
        renewTime: microTime(now),
        leaseTransitions: 0,
      },
    }
  }

  /**
   * The lease held by us: a renew keeps acquireTime and transitions; a takeover restarts acquireTime and counts a
   * transition when the holder changes.
   */
  private heldBody(lease: Lease, now: number, takeover: boolean): Lease {
    const spec = lease.spec ?? {}
    const transitions = spec.leaseTransitions ?? 0
    const holderChanges = takeover && (spec.holderIdentity ?? '') !== this.identity
    return {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseDurationSeconds(),
        acquireTime: takeover ? microTime(now) : (spec.acquireTime ?? microTime(now)),
        renewTime: microTime(now),
        leaseTransitions: holderChanges ? transitions + 1 : transitions,
      },
    }
  }

  private leaseDurationSeconds(): number {
    return Math.max(1, Math.ceil(this.leaseDurationMs / 1000))
  }

  /** Remembers the lease; restarts the expiry clock when its record changed. */
  private observe(lease: Lease): void {
    this.lease = lease
    const key = leaseRecordKey(lease)
    if (key !== this.observedKey) {
      this.observedKey = key
      this.observedAt = this.now()
    }
  }

  private async fetch(signal: AbortSignal, timeoutMs: number): Promise<Lease | undefined> {
    try {
      return await this.send<Lease>('GET', undefined, signal, timeoutMs)
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined
      throw error
    }
  }

  /**
   * A request for the Lease: never fenced (it is what the fence is made of); its User-Agent names `leader-election`
   * as a reconcile's names its controller, so an audit log (or the campaign's proxy) tells lease writes apart.
   */
  private send<T>(method: 'GET' | 'POST' | 'PUT', body: unknown, signal: AbortSignal, timeoutMs: number): Promise<T> {
    nameSignal(signal, LEADER_ELECTION_ORIGIN)
    const path = resourcePath(method === 'POST' ? {...this.ref, name: undefined} : this.ref)
    return this.client.request<T>({method, path, body, signal, timeoutMs: Math.max(1, Math.ceil(timeoutMs)), unfenced: true})
  }

  /** Local monotonic time (ms) on the elector's clock: observations, renewals, the deadline. */
  private now(): number {
    return monotonicNow(this.clock)
  }

  /** Wall time (ms) on the elector's clock: what goes into the Lease. */
  private wallNow(): number {
    return this.clock.now()
  }

  /** Runs `request` with a signal that aborts with `signal` or after `ms` on the clock, whichever comes first. */
  private async within<T>(ms: number, signal: AbortSignal | undefined, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeout = timeoutSignal(this.clock, ms)
    // Not AbortSignal.any: `signal` lives as long as the elector and would keep one signal per renewal (signals.ts).
    const combined = signal ? anySignal([signal, timeout.signal]) : undefined
    try {
      return await request(combined?.signal ?? timeout.signal)
    } finally {
      timeout.clear()
      combined?.dispose()
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return
    this.leading = leading
    this.metrics?.leaderElectionStatus.set({name: this.name}, leading ? 1 : 0)
    for (const listener of this.listeners) {
      try {
        listener(leading)
      } catch (error) {
        this.logger.error('leader election listener threw', {...this.fields, error})
      }
    }
  }

  private stopLeading(outcome: HoldOutcome, reason?: string): void {
    if (!this.leading) return
    this.setLeading(false)
    if (outcome === 'lost') this.logger.info('lost leader lease', {...this.fields, reason})
    else this.logger.info('stopped leading', this.fields)
  }

  private logFailure(message: string, error: unknown, level: 'debug' | 'warn' = 'warn'): void {
    const conflict = error instanceof KubeApiError && error.status === 409
    this.logger[conflict ? 'debug' : level](message, {...this.fields, error: error instanceof Error ? error.message : String(error)})
  }
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof Error && reason.name === 'AbortError') return reason
  return new DOMException('leader election aborted', 'AbortError')
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal)
}
