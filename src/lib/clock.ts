/**
 * Time and timers, injected: the runtime's work queues and controllers and the monitoring agent's scheduler take a
 * Clock, so a test moves time by hand (test/support/fake-timers.ts) instead of sleeping, and asserts what happened at
 * a point in time rather than within a wall-clock bound.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** A one-shot timer; the handle goes to clearTimeout. Real timers do not keep the process alive (unref). */
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms)
    handle.unref?.()
    return handle
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}
