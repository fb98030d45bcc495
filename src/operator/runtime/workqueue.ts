/**
 * A work queue with controller-runtime's semantics: keys are deduplicated; a key is never handed to two workers
 * at once; a key added while it is being processed is queued again once, when the worker is done; delayed and
 * rate-limited adds; shutdown that lets in-flight work finish.
 */
import {PerKeyRateLimiter} from '../../lib/backoff.js'
import {systemClock, type Clock} from '../../lib/clock.js'
import type {OperatorMetrics} from './metrics.js'

export interface WorkQueueOptions {
  name: string
  rateLimiter?: PerKeyRateLimiter
  metrics?: OperatorMetrics
  /** Time and timers of delayed adds and of drain (the system clock by default; tests pass a fake one). */
  clock?: Clock
}

/** The longest a key waits in addAfter (see there). */
export const MAX_DELAY_MS = 24 * 60 * 60 * 1000

export class WorkQueue {
  private readonly queue: string[] = []
  private readonly dirty = new Set<string>()
  private readonly processing = new Set<string>()
  private readonly addedAt = new Map<string, number>()
  private readonly startedAt = new Map<string, number>()
  private readonly waiting = new Map<string, {at: number; timer: unknown}>()
  private readonly waiters: Array<(key: string | undefined) => void> = []
  private readonly idleWaiters: Array<() => void> = []
  private shuttingDown = false
  readonly rateLimiter: PerKeyRateLimiter
  private readonly labels: {name: string; controller: string}
  private readonly clock: Clock

  constructor(private readonly options: WorkQueueOptions) {
    this.rateLimiter = options.rateLimiter ?? new PerKeyRateLimiter()
    this.labels = {name: options.name, controller: options.name}
    this.clock = options.clock ?? systemClock
  }

  get length(): number {
    return this.queue.length
  }

  get inFlight(): number {
    return this.processing.size
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return
    this.options.metrics?.workqueueAdds.inc(this.labels)
    this.dirty.add(key)
    this.addedAt.set(key, this.clock.now())
    if (this.processing.has(key)) return
    this.push(key)
  }

  /** Adds the key after `ms`; an earlier pending add of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return
    if (ms <= 0) return this.add(key)
    // A timer fires at once past 2^31-1 ms (~24.8 days); a key asked back later than a day comes back after a day
    // (and its reconcile asks again), like controller-runtime's periodic resync covers long waits.
    ms = Math.min(ms, MAX_DELAY_MS)
    const at = this.clock.now() + ms
    const pending = this.waiting.get(key)
    if (pending && pending.at <= at) return
    if (pending) this.clock.clearTimeout(pending.timer)
    const timer = this.clock.setTimeout(() => {
      this.waiting.delete(key)
      this.add(key)
    }, ms)
    this.waiting.set(key, {at, timer})
  }

  /** Adds the key after its per-key backoff (5 s, 10 s, … 60 s). */
  addRateLimited(key: string): number {
    this.options.metrics?.workqueueRetries.inc(this.labels)
    const delay = this.rateLimiter.when(key)
    this.addAfter(key, delay)
    return delay
  }

  /** Stops the backoff of a key (after a successful reconcile). */
  forget(key: string): void {
    this.rateLimiter.forget(key)
  }

  /** The next key to work on; undefined once the queue is shut down and empty. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift()
    if (key !== undefined) return Promise.resolve(this.take(key))
    if (this.shuttingDown) return Promise.resolve(undefined)
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /** Marks the key processed; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    const started = this.startedAt.get(key)
    if (started !== undefined) {
      this.options.metrics?.workqueueWorkDuration.observe(this.labels, (this.clock.now() - started) / 1000)
      this.startedAt.delete(key)
    }
    this.processing.delete(key)
    if (this.dirty.has(key) && !this.shuttingDown) this.push(key)
    if (this.processing.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve()
    this.updateDepth()
  }

  /** Stops intake: pending delayed adds are dropped, waiting workers get undefined. */
  shutDown(): void {
    this.shuttingDown = true
    for (const {timer} of this.waiting.values()) this.clock.clearTimeout(timer)
    this.waiting.clear()
    this.queue.length = 0
    this.dirty.clear()
    for (const resolve of this.waiters.splice(0)) resolve(undefined)
    this.updateDepth()
  }

  /**
   * Resolves when no key is being processed (or after `timeoutMs` on the clock); true if drained. The wait keeps the
   * process alive: a shutdown waits for its in-flight work.
   */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.processing.size === 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(false), timeoutMs, {keepAlive: true})
      this.idleWaiters.push(() => {
        this.clock.clearTimeout(timer)
        resolve(true)
      })
    })
  }

  /** Seconds of work in progress that have not been observed yet (workqueue_unfinished_work_seconds). */
  unfinishedWorkSeconds(): number {
    const now = this.clock.now()
    let total = 0
    for (const started of this.startedAt.values()) total += (now - started) / 1000
    return total
  }

  private push(key: string): void {
    const waiter = this.waiters.shift()
    if (waiter) waiter(this.take(key))
    else this.queue.push(key)
    this.updateDepth()
  }

  private take(key: string): string {
    this.dirty.delete(key)
    this.processing.add(key)
    const added = this.addedAt.get(key)
    if (added !== undefined) this.options.metrics?.workqueueQueueDuration.observe(this.labels, (this.clock.now() - added) / 1000)
    this.addedAt.delete(key)
    this.startedAt.set(key, this.clock.now())
    this.updateDepth()
    return key
  }

  private updateDepth(): void {
    this.options.metrics?.workqueueDepth.set(this.labels, this.queue.length)
  }
}
