/**
 * The operator's two small HTTP servers, as controller-runtime has them: the probe server (`/healthz`, `/readyz`,
 * answered like controller-runtime's healthz handler) and the metrics server (`/metrics`, Prometheus text format).
 * Bind addresses follow controller-runtime's flags: `:8080` (all interfaces), `127.0.0.1:8081`, `[::1]:8081`,
 * and `0` (or empty) to disable. Also here: the event-loop-stall check that `/healthz` uses.
 */
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {isIPv4, isIPv6} from 'node:net'
import {performance} from 'node:perf_hooks'
import {silentLogger, type Logger} from '../../lib/logger.js'
import type {OperatorMetrics} from './metrics.js'

export interface BindAddress {
  host: string
  port: number
}

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

export interface RunningHttpServer {
  /** Where the server listens; `port` is the bound port (so `:0` gives an ephemeral one). */
  address: BindAddress
  /** Stops listening and drops open (keep-alive) connections. Safe to call more than once. */
  close(): Promise<void>
}

export interface ProbeServerOptions {
  /** The raw flag value (`:8081`, `127.0.0.1:8081`, `0` to disable). */
  bindAddress: string
  checks: ProbeChecks
  logger?: Logger
  /** A check that has not answered after this long counts as failed (default 10 s). */
  checkTimeoutMs?: number
}

export interface MetricsServerOptions {
  /** The raw flag value (`:8080`, `127.0.0.1:8080`, `0` to disable). */
  bindAddress: string
  metrics: OperatorMetrics
  logger?: Logger
}

/** All interfaces; the server falls back to 0.0.0.0 where IPv6 is not available (as Node's own `listen(port)`). */
const ALL_INTERFACES = '::'
const hostnamePattern = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i

/**
 * Parses a controller-runtime style bind address. `0` or empty means disabled (undefined); `:0` means an ephemeral
 * port on all interfaces. Throws an Error naming the value (and `flag`, when given) if it is not valid.
 */
export function parseBindAddress(value: string, flag?: string): BindAddress | undefined {
  const raw = value.trim()
  if (raw === '' || raw === '0') return undefined
  const what = flag ? `${flag} "${value}"` : `bind address "${value}"`
  const fail = (why: string): never => {
    throw new Error(`Invalid ${what}: ${why}; expected [host]:port such as ":8080", "127.0.0.1:8080" or "[::1]:8080", or "0" to disable.`)
  }

  let host: string
  let portText: string
  if (raw.startsWith('[')) {
    const match = /^\[([^\]]*)\]:(.*)$/.exec(raw)
    if (!match) return fail('a bracketed IPv6 address must be followed by ":port"')
    host = match[1] ?? ''
    portText = match[2] ?? ''
    if (!isIPv6(host)) return fail(`"${host}" is not an IPv6 address`)
  } else {
    const colon = raw.lastIndexOf(':')
    if (colon === -1) {
      return fail(/^\d+$/.test(raw) ? `the port needs a leading colon (":${raw}")` : 'missing ":port"')
    }
    host = raw.slice(0, colon)
    portText = raw.slice(colon + 1)
    if (host.includes(':')) return fail('an IPv6 address needs brackets ("[::1]:8080")')
    if (host === '') host = ALL_INTERFACES
    else if (!isIPv4(host) && !hostnamePattern.test(host)) return fail(`"${host}" is neither an IP address nor a host name`)
  }

  if (!/^\d{1,5}$/.test(portText)) return fail(portText === '' ? 'missing port' : `"${portText}" is not a port number`)
  const port = Number(portText)
  if (port > 65535) return fail(`port ${port} is above 65535`)
  return {host, port}
}

// ---------------------------------------------------------------------------------------------------------------------
// probe server

/** Serves `/healthz` and `/readyz` (and `/healthz/<check>`, `/readyz/<check>`) until closed. Undefined when disabled. */
export async function startProbeServer(options: ProbeServerOptions): Promise<RunningHttpServer | undefined> {
  const flag = '--health-probe-bind-address'
  const address = parseBindAddress(options.bindAddress, flag)
  if (!address) return undefined
  const logger = (options.logger ?? silentLogger).child({component: 'probes'})
  const timeoutMs = options.checkTimeoutMs ?? 10_000
  const lastOk: Record<string, boolean | undefined> = {}

  const server = createServer((req, res) => {
    void handleProbe(req, res).catch((error: unknown) => {
      logger.error('probe request failed', {error: errorMessage(error)})
      if (!res.headersSent) sendText(req, res, 500, `internal server error: ${errorMessage(error)}\n`)
      else res.destroy()
    })
  })

  async function handleProbe(req: IncomingMessage, res: ServerResponse) {
    if (!allowMethod(req, res)) return
    const url = new URL(req.url ?? '/', 'http://probe.local')
    const match = /^\/(healthz|readyz)(?:\/(.*))?$/.exec(url.pathname)
    const endpoint = match?.[1] as keyof ProbeChecks | undefined
    if (!match || !endpoint) return sendText(req, res, 404, '404 page not found\n')
    const rest = (match[2] ?? '').replace(/\/+$/, '')
    const json = wantsJson(req, url)
    const result = await runChecks(options.checks[endpoint], endpoint, timeoutMs)

    if (rest !== '') {
      let name: string
      try {
        name = decodeURIComponent(rest)
      } catch {
        return sendText(req, res, 404, '404 page not found\n')
      }
      const check = result.checks[name]
      if (!check) return sendText(req, res, 404, '404 page not found\n')
      const status = check.ok ? 200 : 500
      if (json) return sendJson(req, res, status, {status: check.ok ? 'ok' : 'failed', checks: {[name]: check}})
      return sendText(req, res, status, check.ok ? 'ok' : `internal server error: ${check.message ?? 'check failed'}\n`)
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
      return sendJson(req, res, status, {status: ok ? 'ok' : 'failed', checks})
    }
    if (ok && !url.searchParams.has('verbose')) return sendText(req, res, 200, 'ok')
    const lines = names.map((n) => {
      const check = result.checks[n]
      if (excluded.has(n)) return `[+]${n} excluded: ok`
      return check?.ok ? `[+]${n} ok` : `[-]${n} failed: ${oneLine(check?.message ?? 'reason unknown')}`
    })
    const unknown = [...excluded].filter((n) => !(n in result.checks))
    if (unknown.length > 0) lines.push(`warn: some health checks cannot be excluded: no matches for ${unknown.map((n) => `"${n}"`).join(', ')}`)
    lines.push(ok ? `${endpoint} check passed` : `${url.pathname} check failed`)
    return sendText(req, res, status, `${lines.join('\n')}\n`)
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

  return listen(server, address, {name: 'health probe', raw: options.bindAddress, flag}, logger)
}

async function runChecks(check: CheckFunction, endpoint: string, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      timer.unref()
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
    clearTimeout(timer)
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
  const flag = '--metrics-bind-address'
  const address = parseBindAddress(options.bindAddress, flag)
  if (!address) return undefined
  const logger = (options.logger ?? silentLogger).child({component: 'metrics'})
  const {metrics} = options

  const server = createServer((req, res) => {
    if (!allowMethod(req, res)) return
    const url = new URL(req.url ?? '/', 'http://metrics.local')
    if (url.pathname !== '/metrics') return sendText(req, res, 404, '404 page not found\n')
    metrics.text().then(
      (body) => send(req, res, 200, metrics.registry.contentType, body),
      (error: unknown) => {
        logger.error('collecting metrics failed', {error: errorMessage(error)})
        sendText(req, res, 500, `collecting metrics failed: ${errorMessage(error)}\n`)
      },
    )
  })

  return listen(server, address, {name: 'metrics', raw: options.bindAddress, flag}, logger)
}

// ---------------------------------------------------------------------------------------------------------------------
// shared HTTP plumbing

function allowMethod(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return true
  res.setHeader('Allow', 'GET, HEAD')
  sendText(req, res, 405, 'method not allowed\n')
  return false
}

function sendText(req: IncomingMessage, res: ServerResponse, status: number, body: string): void {
  send(req, res, status, 'text/plain; charset=utf-8', body)
}

function sendJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  send(req, res, status, 'application/json', `${JSON.stringify(body)}\n`)
}

function send(req: IncomingMessage, res: ServerResponse, status: number, contentType: string, body: string): void {
  res.statusCode = status
  res.setHeader('Content-Type', contentType)
  res.setHeader('Content-Length', Buffer.byteLength(body))
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Cache-Control', 'no-store')
  if (req.method === 'HEAD') res.end()
  else res.end(body)
}

interface ListenLabels {
  /** "metrics", "health probe" */
  name: string
  raw: string
  flag: string
}

async function listen(server: Server, address: BindAddress, labels: ListenLabels, logger: Logger): Promise<RunningHttpServer> {
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening)
      reject(new Error(listenErrorMessage(error, address, labels), {cause: error}))
    }
    const onListening = () => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    // No host for "all interfaces": Node then listens on :: (dual stack) and falls back to 0.0.0.0 without IPv6.
    if (address.host === ALL_INTERFACES) server.listen({port: address.port})
    else server.listen({port: address.port, host: address.host})
  })
  server.on('error', (error) => logger.error(`${labels.name} server error`, {error: error.message}))

  const bound = server.address()
  const actual: BindAddress = typeof bound === 'object' && bound
    ? {host: bound.address, port: bound.port}
    : {...address}
  logger.info(`${labels.name} server listening`, {address: formatAddress(actual)})

  let closing: Promise<void> | undefined
  return {
    address: actual,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}

function listenErrorMessage(error: NodeJS.ErrnoException, address: BindAddress, labels: ListenLabels): string {
  const what = `${labels.name} bind address ${labels.raw.trim()}`
  const remedy = `pass ${labels.flag} with a free port, or 0 to disable`
  switch (error.code) {
    case 'EADDRINUSE':
      return `${what} is in use: ${remedy}`
    case 'EACCES':
      return `${what} needs privileges to bind port ${address.port} (EACCES): pass ${labels.flag} with a port above 1023, or 0 to disable`
    case 'EADDRNOTAVAIL':
      return `${what} is not an address of this machine (EADDRNOTAVAIL): pass ${labels.flag} with a local address such as :${address.port}, or 0 to disable`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${what}: the host name "${address.host}" does not resolve (${error.code}): pass ${labels.flag} with an IP address, or 0 to disable`
    default:
      return `${what} cannot be used (${error.code ?? 'error'}: ${error.message}): ${remedy}`
  }
}

export function formatAddress(address: BindAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`
}

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

  let lastTick = performance.now()
  let stopped = false
  /** Lags above maxLagMs seen within the window: [when, lag] in ms, oldest first. */
  let stalls: Array<[at: number, lag: number]> = []
  const prune = (now: number) => {
    if (stalls.length > 0) stalls = stalls.filter(([at]) => now - at <= windowMs)
  }

  const timer = setInterval(() => {
    const now = performance.now()
    const lag = now - lastTick - intervalMs
    lastTick = now
    prune(now)
    if (lag > maxLagMs) stalls.push([now, lag])
  }, intervalMs)
  timer.unref()

  const check = (): CheckStatus => {
    if (stopped) return {ok: true, message: 'event loop not monitored (stopped)'}
    const now = performance.now()
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
      clearInterval(timer)
    },
  })
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms)} ms`
}
