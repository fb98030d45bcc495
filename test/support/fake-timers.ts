/** A clock and timers the test moves by hand (src/lib/clock.ts); real I/O settles between timers. */
import type {Clock} from '../../src/lib/clock.js'

export class FakeTimers implements Clock {
  private time: number
  /** How far the wall clock (now) is off the monotonic time (stepWall). */
  private wallOffset = 0
  private seq = 0
  private readonly pending = new Map<number, {at: number; seq: number; callback: () => void}>()

  constructor(start = Date.parse('2026-03-01T12:00:00Z')) {
    this.time = start
  }

  now(): number {
    return this.time + this.wallOffset
  }

  /** The monotonic time the timers run on (starts equal to now()). */
  monotonic(): number {
    return this.time
  }

  /** Steps the wall clock only (NTP, a VM restored from a snapshot): timers and monotonic time do not move. */
  stepWall(ms: number): void {
    this.wallOffset += ms
  }

  /**
   * Moves the clock by `ms` without running anything: a process frozen (SIGSTOP) and just woken up, whose overdue
   * timers have not fired yet (I/O callbacks can run before them). `advance(0)` fires them.
   */
  freeze(ms: number): void {
    this.time += ms
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = ++this.seq
    this.pending.set(id, {at: this.time + Math.max(0, ms), seq: id, callback})
    return id
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number)
  }

  /** Moves the clock by `ms` at once, as a stalled event loop or a clock step does; overdue timers fire late, now. */
  async jump(ms: number): Promise<void> {
    this.time += ms
    await this.advance(0)
  }

  /** Moves the clock by `ms`, firing due timers in order; after each, lets promises and I/O callbacks run. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms
    for (;;) {
      let next: {id: number; at: number; seq: number} | undefined
      for (const [id, timer] of this.pending) {
        if (timer.at <= end && (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))) next = {id, at: timer.at, seq: timer.seq}
      }
      if (!next) break
      const timer = this.pending.get(next.id)!
      this.pending.delete(next.id)
      this.time = Math.max(this.time, timer.at)
      timer.callback()
      await settle()
    }
    this.time = end
    await settle()
  }
}

/** Lets pending promise chains and immediate I/O callbacks run. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}
