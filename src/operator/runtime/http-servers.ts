/**
 * The operator's two small HTTP servers, as controller-runtime has them: the probe server (`/healthz`, `/readyz`,
 * answered like controller-runtime's healthz handler) and the metrics server (`/metrics`, Prometheus text format).
 * Bind addresses follow controller-runtime's flags: `:8080` (all interfaces), `127.0.0.1:8081`, `[::1]:8081`,
 * and `0` (or empty) to disable. Also here: the event-loop-stall check that `/healthz` uses. Listening, bind
 * addresses and the response helpers are src/lib/http-server.ts.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'
import {
  allowMethods,
  sendJson,
  sendText,
  startHttpServer,
  type RunningHttpServer,
  type TlsOptions,
} from '../../lib/http-server.js'
import {monotonicNow, repeat, systemClock, type Clock} from '../../lib/clock.js'
import {silentLogger, type Logger} from '../../lib/logger.js'
import type {OperatorMetrics} from './metrics.js'

// The generic serving parts live in src/lib/http-server.ts; re-exported here for the code that imports them from here.
export {formatAddress, parseBindAddress, type BindAddress, type RunningHttpServer} from '../../lib/http-server.js'

/** One named check: ok, or failed with a message a person can act on. */
export interface CheckStatus {
  ok: boolean
  message?: string
}

/** The answer of one endpoint (`/healthz` or `/readyz`): every named check and whether the whole passes. */
export interface CheckResult {
  ok: boolean
  checks: Record<string, CheckStatus>
}

export type CheckFunction = () => CheckResult | Promise<CheckResult>

export interface ProbeChecks {
  healthz: CheckFunction
  readyz: CheckFunction
}

export interface ProbeServerOptions {
  /** The raw flag value (`:8081`, `127.0.0.1:8081`, `0` to disable). */
  bindAddress: string
  checks: ProbeChecks
  logger?: Logger
  /** A check that has not answered after this long counts as failed (default 10 s). */
  checkTimeoutMs?: number
  /** The clock of the check timeout (the manager's; the system clock by default). */
  clock?: Clock
}

export interface MetricsServerOptions {
  /** The raw flag value (`:8080`, `127.0.0.1:8080`, `0` to disable). */
  bindAddress: string
  metrics: OperatorMetrics
  logger?: Logger
  /** Serve https (--metrics-secure: secure-metrics.ts). */
  tls?: TlsOptions
  /** Decides each request for /metrics before it is served (--metrics-secure: TokenReview + SubjectAccessReview). */
  authorize?: (req: IncomingMessage) => Promise<MetricsAccess>
}

/** Whether a caller may read /metrics; refused: the status and text to answer. */
export type MetricsAccess = {allowed: true; user: string} | {allowed: false; status: 401 | 403 | 500; message: string}

// ---------------------------------------------------------------------------------------------------------------------
// probe server

/** Serves `/healthz` and `/readyz` (and `/healthz/<check>`, `/readyz/<check>`) until closed. Undefined when disabled. */
export async function startProbeServer(options: ProbeServerOptions): Promise<RunningHttpServer | undefined> {
  const logger = (options.logger ?? silentLogger).child({component: 'probes'})
  const timeoutMs = options.checkTimeoutMs ?? 10_000
  const lastOk: Record<string, boolean | undefined> = {}

  const handler = (req: IncomingMessage, res: ServerResponse) =>
    handleProbe(req, res).catch((error: unknown) => {
      logger.error('probe request failed', {error: errorMessage(error)})
      if (!res.headersSent) sendText(res, 500, `internal server error: ${errorMessage(error)}\n`)
      else res.destroy()
    })

  async function handleProbe(req: IncomingMessage, res: ServerResponse) {
    if (!allowMethods(req, res, ['GET', 'HEAD'])) return
    const url = new URL(req.url ?? '/', 'http://probe.local')
    const match = /^\/(healthz|readyz)(?:\/(.*))?$/.exec(url.pathname)
    const endpoint = match?.[1] as keyof ProbeChecks | undefined
    if (!match || !endpoint) return sendText(res, 404, '404 page not found\n')
    const rest = (match[2] ?? '').replace(/\/+$/, '')
    const json = wantsJson(req, url)
    const result = await runChecks(options.checks[endpoint], endpoint, timeoutMs, options.clock ?? systemClock)

    if (rest !== '') {
      let name: string
      try {
        name = decodeURIComponent(rest)
      } catch {
        return sendText(res, 404, '404 page not found\n')
      }
      const check = result.checks[name]
      if (!check) return sendText(res, 404, '404 page not found\n')
      const status = check.ok ? 200 : 500
      if (json) return sendJson(res, status, {status: check.ok ? 'ok' : 'failed', checks: {[name]: check}})
      return sendText(res, status, check.ok ? 'ok' : `internal server error: ${check.message ?? 'check failed'}\n`)
    }

    const excluded = new Set(url.searchParams.getAll('exclude').flatMap((v) => v.split(',')).filter(Boolean))
    const names = Object.keys(result.checks).sort()
    const failedNames = names.filter((n) => !excluded.has(n) && !result.checks[n]?.ok)
    const ok = failedNames.length === 0
    noteTransition(endpoint, ok, failedNames.map((n) => `${n}: ${result.checks[n]?.message ?? 'failed'}`))
    const status = ok ? 200 : 500

    if (json) {
      const checks: Record<string, CheckStatus> = {}
      for (const n of names) checks[n] = excluded.has(n) ? {ok: true, message: 'excluded'} : result.checks[n] ?? {ok: false}
      return sendJson(res, status, {status: ok ? 'ok' : 'failed', checks})
    }
    if (ok && !url.searchParams.has('verbose')) return sendText(res, 200, 'ok')
    const lines = names.map((n) => {
      const check = result.checks[n]
      if (excluded.has(n)) return `[+]${n} excluded: ok`
      return check?.ok ? `[+]${n} ok` : `[-]${n} failed: ${oneLine(check?.message ?? 'reason unknown')}`
    })
    const unknown = [...excluded].filter((n) => !(n in result.checks))
    if (unknown.length > 0) lines.push(`warn: some health checks cannot be excluded: no matches for ${unknown.map((n) => `"${n}"`).join(', ')}`)
    lines.push(ok ? `${endpoint} check passed` : `${url.pathname} check failed`)
    return sendText(res, status, `${lines.join('\n')}\n`)
  }

  function noteTransition(endpoint: string, ok: boolean, failures: string[]) {
    if (lastOk[endpoint] === ok) return
    const first = lastOk[endpoint] === undefined
    lastOk[endpoint] = ok
    if (ok) {
      if (!first) logger.info(`${endpoint} checks pass again`, {endpoint})
    } else {
      const log = endpoint === 'healthz' ? logger.warn : logger.info
      log(`${endpoint} check failed`, {endpoint, failed: failures.join('; ')})
    }
  }

  return startHttpServer({name: 'health probe', bindAddress: options.bindAddress, flag: '--health-probe-bind-address', logger, handler})
}

async function runChecks(check: CheckFunction, endpoint: string, timeoutMs: number, clock: Clock): Promise<CheckResult> {
  let timer: unknown
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    })
    const result = await Promise.race([Promise.resolve().then(check), timeout])
    const checks = {...result.checks}
    // An endpoint that says "not ok" without naming a failing check still fails, and says so.
    if (!result.ok && Object.values(checks).every((c) => c.ok)) {
      checks[endpoint] = {ok: false, message: 'reported not ok without naming a failing check'}
    }
    return {ok: Object.values(checks).every((c) => c.ok), checks}
  } catch (error) {
    return {ok: false, checks: {[endpoint]: {ok: false, message: `the checks could not run: ${errorMessage(error)}`}}}
  } finally {
    clock.clearTimeout(timer)
  }
}

function wantsJson(req: IncomingMessage, url: URL): boolean {
  const format = url.searchParams.get('format')
  if (format !== null) return format.toLowerCase() === 'json'
  return /\bapplication\/json\b/i.test(req.headers.accept ?? '')
}

// ---------------------------------------------------------------------------------------------------------------------
// metrics server

/** Serves `GET /metrics` in the Prometheus text format until closed. Undefined when disabled. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<RunningHttpServer | undefined> {
  const logger = (options.logger ?? silentLogger).child({component: 'metrics'})
  const {metrics} = options

  // Method before path, as before: any method other than GET/HEAD is 405, on any path.
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (!allowMethods(req, res, ['GET', 'HEAD'])) return
    const url = new URL(req.url ?? '/', 'http://metrics.local')
    if (url.pathname !== '/metrics') return sendText(res, 404, '404 page not found\n')
    const access = options.authorize ? options.authorize(req) : Promise.resolve<MetricsAccess>({allowed: true, user: ''})
    access.then(
      (decision) => {
        if (!decision.allowed) return sendText(res, decision.status, `${decision.message}\n`)
        return metrics.text().then((body) => sendText(res, 200, body, metrics.registry.contentType))
      },
    ).catch((error: unknown) => {
      logger.error('collecting metrics failed', {error: errorMessage(error)})
      if (!res.headersSent) sendText(res, 500, `collecting metrics failed: ${errorMessage(error)}\n`)
    })
  }

  return startHttpServer({name: 'metrics', bindAddress: options.bindAddress, flag: '--metrics-bind-address', logger, handler, ...(options.tls ? {tls: options.tls} : {})})
}

// ---------------------------------------------------------------------------------------------------------------------
// small helpers

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim()
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

// ---------------------------------------------------------------------------------------------------------------------
// event-loop stall check

export interface EventLoopCheckOptions {
  /** Fail when the event loop was blocked longer than this (default 5000 ms). */
  maxLagMs?: number
  /** How long a stall keeps the check failing (default 10 s: about one kubelet probe period). */
  windowMs?: number
  /** How often the timer samples the loop (default maxLagMs/10, between 10 ms and 500 ms). */
  intervalMs?: number
  /** The clock the timer runs on and the lag is measured with (the manager's; the system clock by default). */
  clock?: Clock
}

export interface EventLoopCheck {
  (): CheckStatus
  /** Stops the timer; the check then always passes. */
  stop(): void
}

/**
 * A healthz check for a stalled event loop. A periodic (unref'd) timer measures how late it fires; the check fails
 * while a lag above `maxLagMs` was seen within the last `windowMs`. The time since the last tick counts too, so a
 * block that just ended is seen even before the timer has run again.
 */
export function createEventLoopCheck(options: EventLoopCheckOptions = {}): EventLoopCheck {
  const maxLagMs = options.maxLagMs ?? 5000
  const windowMs = options.windowMs ?? 10_000
  const intervalMs = options.intervalMs ?? Math.min(500, Math.max(10, Math.floor(maxLagMs / 10)))
  if (!(maxLagMs > 0) || !(windowMs >= 0) || !(intervalMs > 0)) {
    throw new Error(`createEventLoopCheck: maxLagMs (${maxLagMs}) and intervalMs (${intervalMs}) must be positive, windowMs (${windowMs}) not negative`)
  }

  const clock = options.clock ?? systemClock
  let lastTick = monotonicNow(clock)
  let stopped = false
  /** Lags above maxLagMs seen within the window: [when, lag] in ms, oldest first. */
  let stalls: Array<[at: number, lag: number]> = []
  const prune = (now: number) => {
    if (stalls.length > 0) stalls = stalls.filter(([at]) => now - at <= windowMs)
  }

  const stopTimer = repeat(clock, intervalMs, () => {
    const now = monotonicNow(clock)
    const lag = now - lastTick - intervalMs
    lastTick = now
    prune(now)
    if (lag > maxLagMs) stalls.push([now, lag])
  })

  const check = (): CheckStatus => {
    if (stopped) return {ok: true, message: 'event loop not monitored (stopped)'}
    const now = monotonicNow(clock)
    const pending = now - lastTick - intervalMs
    if (pending > maxLagMs) return {ok: false, message: `event loop blocked for ${Math.round(pending)} ms (limit ${maxLagMs} ms)`}
    prune(now)
    const latest = stalls.at(-1)
    if (!latest) return {ok: true}
    const longest = Math.max(...stalls.map(([, lag]) => lag))
    return {
      ok: false,
      message: `event loop blocked for ${Math.round(longest)} ms within the last ${formatMs(windowMs)} ` +
        `(limit ${maxLagMs} ms; last stall ${formatMs(now - latest[0])} ago)`,
    }
  }
  return Object.assign(check, {
    stop() {
      stopped = true
      stopTimer()
    },
  })
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms)} ms`
}
