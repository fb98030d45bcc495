/**
 * When each endpoint is checked. Every endpoint keeps a fixed grid: `offset + k × interval` (ms since the epoch),
 * the offset taken from a hash of its id, so 1,000 endpoints with one interval are spread evenly over it (and a
 * restarted agent keeps the same grid). Due checks wait in one FIFO queue for one of `concurrency` slots; an
 * endpoint whose previous check still runs skips that round (counted), so a hanging target holds at most one slot
 * and never moves another endpoint's grid. The clock and timers are injected (tests drive a fake one).
 *
 * One timer serves all endpoints: the entries wait in a min-heap by due time and the timer is set for the earliest.
 * A timer per endpoint cost a Timeout object and a closure per check, each living a whole interval (so promoted to
 * V8's old space), and 15,000 of each at 15,000 endpoints.
 */
import {createHash} from 'node:crypto'

import {systemClock, type Clock} from '../../lib/clock.js'

/** The scheduler's clock and timers (the shared Clock). */

/** Where in its interval an endpoint's checks fall: [0, interval), uniform over ids. */
export function phaseOffset(id: string, intervalMs: number): number {
  const hash = createHash('sha256').update(id).digest().readUInt32BE(0)
  return Math.floor((hash / 0x1_0000_0000) * intervalMs)
}

/** The first grid point at or after `now`. */
export function nextDue(now: number, intervalMs: number, offsetMs: number): number {
  const k = Math.ceil((now - offsetMs) / intervalMs)
  return offsetMs + k * intervalMs
}

export interface Schedulable {
  endpointId: string
  intervalMs: number
}

interface Entry<T extends Schedulable> {
  plan: T
  /** The endpoint's place in its interval (phaseOffset), computed once rather than hashed again at every check. */
  offset: number
  /** The next grid point; the heap's order (ties: `seq`, the order they were set in). */
  due: number
  seq: number
  /** The grid point of the check waiting in the queue, if one does (so a second one is skipped without a search). */
  queuedDue?: number
}

const before = (a: Entry<Schedulable>, b: Entry<Schedulable>) => a.due < b.due || (a.due === b.due && a.seq < b.seq)

/** Adds to a binary min-heap (by `before`). */
function heapPush<E extends Entry<Schedulable>>(heap: E[], entry: E): void {
  let i = heap.push(entry) - 1
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (!before(entry, heap[parent]!)) break
    heap[i] = heap[parent]!
    i = parent
  }
  heap[i] = entry
}

/** Removes and returns the earliest entry of a binary min-heap. */
function heapPop<E extends Entry<Schedulable>>(heap: E[]): E | undefined {
  const top = heap[0]
  const last = heap.pop()
  if (top === undefined || last === undefined || heap.length === 0) return top
  let i = 0
  for (;;) {
    let child = 2 * i + 1
    if (child >= heap.length) break
    if (child + 1 < heap.length && before(heap[child + 1]!, heap[child]!)) child++
    if (!before(heap[child]!, last)) break
    heap[i] = heap[child]!
    i = child
  }
  heap[i] = last
  return top
}

export interface SchedulerOptions<T extends Schedulable> {
  clock?: Clock
  concurrency: number
  /** Runs one check; must settle (the agent bounds each check by its own deadline). */
  run: (plan: T) => Promise<void>
  /** Called as a check starts: how late it starts against its grid point. */
  onStart?: (plan: T, delayMs: number) => void
  /** Called when a round is skipped because the endpoint's previous check still runs. */
  onSkip?: (plan: T) => void
}

export class CheckScheduler<T extends Schedulable> {
  private readonly clock: Clock
  private readonly entries = new Map<string, Entry<T>>()
  private readonly queue: Array<Entry<T>> = []
  /**
   * Every entry by due time (an entry replaced or removed by update() stays until its time comes, then is dropped).
   * The timer is set for the earliest, at `timerDue`.
   */
  private readonly heap: Array<Entry<T>> = []
  private timer?: unknown
  private timerDue = Infinity
  private readonly onTimerCallback = () => this.onTimer()
  private seq = 0
  /** Endpoint ids whose check runs now (kept across a plan change, so a changed endpoint is not checked twice at once). */
  private readonly inFlight = new Set<string>()
  private stopped = false
  private idleWaiters: Array<() => void> = []

  constructor(private readonly options: SchedulerOptions<T>) {
    this.clock = options.clock ?? systemClock
  }

  /** Checks waiting for a slot. */
  get queued(): number {
    return this.queue.length
  }

  /**
   * Makes the schedule match the plans (by endpoint id): new endpoints join their grid, removed ones leave (a
   * running check finishes, its result still counts), changed ones keep their grid if the interval is unchanged.
   */
  update(plans: readonly T[]): void {
    const wanted = new Map(plans.map((plan) => [plan.endpointId, plan]))
    for (const id of this.entries.keys()) if (!wanted.has(id)) this.entries.delete(id)
    for (const plan of wanted.values()) {
      const entry = this.entries.get(plan.endpointId)
      // Unchanged or only its settings changed: the grid stays; the entry takes the new plan object, so the agent's
      // current plans and the scheduler's are one copy, not two.
      if (entry && entry.plan.intervalMs === plan.intervalMs) {
        entry.plan = plan
        continue
      }
      const offset = phaseOffset(plan.endpointId, plan.intervalMs)
      const fresh: Entry<T> = {plan, offset, due: 0, seq: 0}
      this.entries.set(plan.endpointId, fresh)
      this.arm(fresh, nextDue(this.clock.now(), plan.intervalMs, offset))
    }
  }

  /** Resolves once no check runs (at once when none does). */
  idle(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  stop(): void {
    this.stopped = true
    this.clock.clearTimeout(this.timer)
    this.entries.clear()
    this.queue.length = 0
    this.heap.length = 0
  }

  private arm(entry: Entry<T>, due: number): void {
    entry.due = due
    entry.seq = ++this.seq
    heapPush(this.heap, entry)
    if (due < this.timerDue) this.setTimer(due)
  }

  private setTimer(due: number): void {
    this.clock.clearTimeout(this.timer)
    this.timerDue = due
    this.timer = this.clock.setTimeout(this.onTimerCallback, Math.max(0, due - this.clock.now()))
  }

  /** Fires every entry that is due (each sets its next grid point), then sets the timer for the earliest left. */
  private onTimer(): void {
    this.timer = undefined
    // While the due entries fire, arm() sets no timer: one is set for the earliest entry afterwards.
    this.timerDue = -Infinity
    try {
      const now = this.clock.now()
      while (!this.stopped && this.heap.length > 0 && this.heap[0]!.due <= now) this.fire(heapPop(this.heap)!)
    } finally {
      this.timerDue = Infinity
      const earliest = this.heap[0]
      if (!this.stopped && earliest) this.setTimer(earliest.due)
    }
  }

  private fire(entry: Entry<T>): void {
    if (this.stopped || this.entries.get(entry.plan.endpointId) !== entry) return
    const due = entry.due
    const {intervalMs, endpointId} = entry.plan
    // After a stall (a blocked event loop, a clock step) grid points that already passed are skipped, not made up
    // in a burst: the next check is the next grid point after now.
    const next = Math.max(due + intervalMs, nextDue(this.clock.now() + 1, intervalMs, entry.offset))
    const missed = Math.round((next - due) / intervalMs) - 1
    for (let i = 0; i < missed; i++) this.options.onSkip?.(entry.plan)
    this.arm(entry, next)
    if (this.inFlight.has(endpointId) || entry.queuedDue !== undefined) {
      this.options.onSkip?.(entry.plan)
      return
    }
    entry.queuedDue = due
    this.queue.push(entry)
    this.pump()
  }

  private pump(): void {
    while (!this.stopped && this.inFlight.size < this.options.concurrency && this.queue.length > 0) {
      const entry = this.queue.shift()!
      const due = entry.queuedDue!
      entry.queuedDue = undefined
      const id = entry.plan.endpointId
      if (this.entries.get(id) !== entry) continue
      this.inFlight.add(id)
      this.options.onStart?.(entry.plan, this.clock.now() - due)
      void this.options.run(entry.plan).catch(() => {}).finally(() => {
        this.inFlight.delete(id)
        this.pump()
        if (this.inFlight.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve()
      })
    }
  }
}
