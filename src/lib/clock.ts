/**
 * Time and timers, injected: the runtime's work queues, controllers and leader election, the sync engine, the API
 * sync agent and the monitoring agent's scheduler take a Clock, so a test moves time by hand
 * (test/support/fake-timers.ts) instead of sleeping, and asserts what happened at a point in time rather than within
 * a wall-clock bound.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /**
   * A one-shot timer; the handle goes to clearTimeout. A real timer does not keep the process alive (unref) unless
   * `keepAlive` says so: a wait the process exists for (a leader's renewals, a candidate's retries) keeps it alive.
   */
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown
  clearTimeout(handle: unknown): void
}

export interface TimerOptions {
  /** Keep the process alive while the timer waits, as Node's own timers do (default false: unref'd). */
  keepAlive?: boolean
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms, options) => {
    const handle = setTimeout(callback, ms)
    if (!options?.keepAlive) handle.unref?.()
    return handle
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

/** Now on `clock`, as an RFC 3339 timestamp (status fields, reports). */
export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString()
}

/** The error an aborted wait rejects with: name AbortError, the signal's reason as its cause. */
export function abortedError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', {cause: signal.reason}), {name: 'AbortError', code: 'ABORT_ERR'})
}

/**
 * Resolves after `ms` on the clock; rejects with an AbortError (abortedError) when the signal aborts first, or at
 * once when it already has. Like `setTimeout` of node:timers/promises, the wait keeps the process alive.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortedError(signal))
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(handle)
      reject(abortedError(signal!))
    }
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms, {keepAlive: true})
    signal?.addEventListener('abort', onAbort, {once: true})
  })
}

/**
 * A signal that aborts after `ms` on the clock with a TimeoutError, like AbortSignal.timeout (whose timer does not
 * keep the process alive either); `clear` stops its timer once the guarded work is over.
 */
export function timeoutSignal(clock: Clock, ms: number): {signal: AbortSignal; clear: () => void} {
  const controller = new AbortController()
  const handle = clock.setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms)
  return {signal: controller.signal, clear: () => clock.clearTimeout(handle)}
}

/**
 * Calls `callback` every `ms` on the clock, like setInterval: the next call is armed before this one runs, so a slow
 * (async) callback does not shift the schedule. Returns the stop function.
 */
export function repeat(clock: Clock, ms: number, callback: () => void, options?: TimerOptions): () => void {
  let stopped = false
  let handle: unknown
  const arm = () => {
    handle = clock.setTimeout(() => {
      if (stopped) return
      arm()
      callback()
    }, ms, options)
  }
  arm()
  return () => {
    stopped = true
    clock.clearTimeout(handle)
  }
}
