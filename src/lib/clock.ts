/**
 * The one clock. The Manager holds one Clock (now, monotonic time, timers) and hands it to every engine, controller,
 * informer, elector, heartbeat, scheduler, API and kube client retry, poll loop, Event recorder and probe; code reads
 * time as clock.now() / isoNow(clock) and waits with sleep / pause / poll / repeat / timeoutSignal on it. A test
 * passes a fake clock (test/support/fake-timers.ts) and moves time by hand instead of sleeping, asserting what
 * happened at a point in time rather than within a wall-clock bound.
 *
 * Lint (eslint.config.js) keeps it so: no Date.now, new Date() or timer global (setTimeout, setInterval, node:timers)
 * in src/ outside this file. Where no manager exists the code takes `systemClock` itself:
 * - the CLI's own display code (ages and "last seen" in status, info, version, rollout status, status --watch, the
 *   install summary: src/commands/, src/cli/status-read.ts, src/cli/status-watch-command.ts), install, uninstall and
 *   install-crds run from the CLI, and the kubeconfig loaders (token expiry);
 * - the logger's timestamps (made before any manager), x509's default validity start.
 * Not the clock's business: performance.now() measures how long real work took (reconcile and request durations,
 * the phases of a probe), and `new Date(ms)` formats a time the clock gave.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /**
   * Milliseconds on a monotonic clock (any origin): what intervals and deadlines are measured with, since the wall
   * clock can step (NTP, a VM migration). Optional: a clock without it (a test's fake clock) measures with now().
   */
  monotonic?(): number
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
  monotonic: () => performance.now(),
  setTimeout: (callback, ms, options) => {
    const handle = setTimeout(callback, ms)
    if (!options?.keepAlive) handle.unref?.()
    return handle
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

/** A reading of the clock's monotonic time (its now() when it has none), for intervals and deadlines. */
export function monotonicNow(clock: Clock): number {
  return clock.monotonic ? clock.monotonic() : clock.now()
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
 * Waits `ms` on the clock, or less when the signal aborts: resolves either way (the caller looks at the signal next).
 * The retry pauses of the API client, adopt-or-create and the informers' backoff.
 */
export function pause(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(clock, ms, signal).catch(() => undefined)
}

/**
 * A poll loop on the clock: calls `check` every `intervalMs` until it returns a value (not undefined). `check` is
 * told when the deadline (`timeoutMs` from the start) has passed, so that it can throw its own error with what it saw
 * last; if it returns undefined then, poll throws a plain one. An aborted signal ends the wait with an AbortError.
 */
export async function poll<T>(
  clock: Clock,
  options: {intervalMs: number; timeoutMs: number; signal?: AbortSignal},
  check: (expired: boolean) => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = monotonicNow(clock) + options.timeoutMs
  for (;;) {
    const expired = monotonicNow(clock) > deadline
    const value = await check(expired)
    if (value !== undefined) return value
    if (expired) throw new Error(`not done after ${Math.round(options.timeoutMs / 1000)}s`)
    await sleep(clock, options.intervalMs, options.signal)
  }
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
