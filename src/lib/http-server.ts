/**
 * One small HTTP(S) serving module for every listener the process opens (probes, metrics, webhooks): bind addresses
 * in controller-runtime's flag form (`:8080`, `127.0.0.1:8080`, `[::1]:8080`, `0` to disable), a server that
 * listens over http or https and whose `close()` also ends keep-alive connections, exact-path routing with a
 * per-route method check, and the few response/request helpers handlers need. Knows nothing of the operator.
 */
import {createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {createServer as createHttpsServer, type Server as HttpsServer} from 'node:https'
import {isIPv4, isIPv6, type Socket} from 'node:net'
import {silentLogger, type Logger} from './logger.js'

export interface BindAddress {
  host: string
  port: number
}

export interface RunningHttpServer {
  /** Where the server listens; `port` is the bound port (so `:0` gives an ephemeral one). */
  address: BindAddress
  /** Stops listening and drops open (keep-alive) connections. Safe to call more than once. */
  close(): Promise<void>
  /**
   * https only: serves this key and certificate from the next TLS handshake on (established connections keep
   * theirs); the `ca` for client certificates stays. See serving-certificate.ts for checking a pair first.
   */
  setCertificate?(pair: {key: string; cert: string}): void
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'

/** The handlers of one path, by method. A GET handler also answers HEAD (the body is left out) unless HEAD has its own. */
export type Route = Partial<Record<HttpMethod, RequestHandler>>

/** Routes by exact path (`/records`; no query, no trailing-slash folding). */
export type Routes = Record<string, Route>

export interface TlsOptions {
  /**
   * PEM private key and certificate (chain) of the server. Without them the server listens but every handshake
   * fails until `setCertificate` gives it one (a certificate still being made).
   */
  key?: string | Buffer
  cert?: string | Buffer
  /** PEM CA certificate(s) that client certificates must chain to (with `requestCert`). */
  ca?: string | Buffer | Array<string | Buffer>
  /** Ask for a client certificate; clients without one signed by `ca` are refused (mutual TLS). */
  requestCert?: boolean
  /**
   * With `requestCert`: false lets clients without a valid certificate through the handshake, so that the handler
   * can answer them (401/403) after checking `getPeerX509Certificate()` itself. Default true.
   */
  rejectUnauthorized?: boolean
}

interface BaseServerOptions {
  /** Names the server in log lines and errors: "metrics", "health probe", "webhook". */
  name: string
  /** The flag the address came from (`--metrics-bind-address`); listen errors tell the user to pass it. */
  flag?: string
  logger?: Logger
  /** Serve https with this key and certificate instead of plain http. */
  tls?: TlsOptions
  /** Exact-path routes; unknown paths go to `handler`, or get 404 without one. */
  routes?: Routes
  /** Answers every request (or, with `routes`, those no route matches). */
  handler?: RequestHandler
}

export interface AddressServerOptions extends BaseServerOptions {
  address: BindAddress
  bindAddress?: undefined
}

export interface BindAddressServerOptions extends BaseServerOptions {
  /** A raw flag value, parsed with `parseBindAddress`; `0` or empty disables the server (the result is undefined). */
  bindAddress: string
  address?: undefined
}

export type HttpServerOptions = AddressServerOptions | BindAddressServerOptions

/**
 * An error a handler (or `readBody`) throws to answer with a given status: the server sends `message` as text with
 * `headers`. Any other error from a handler becomes a 500 without details (and is logged).
 */
export class HttpError extends Error {
  readonly status: number
  readonly headers: Record<string, string>

  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.name = 'HttpError'
    this.status = status
    this.headers = headers
  }
}

/** All interfaces; the server falls back to 0.0.0.0 where IPv6 is not available (as Node's own `listen(port)`). */
const ALL_INTERFACES = '::'
const hostnamePattern = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 30_000
const methodOrder: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

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

/** `host:port`, with brackets around an IPv6 host. */
export function formatAddress(address: BindAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`
}

// ---------------------------------------------------------------------------------------------------------------------
// the server

/**
 * Listens on the address (http, or https with `tls`) and serves `routes` and/or `handler` until closed. With a
 * `bindAddress` of `0` (or empty) nothing is started and the result is undefined. Rejects with a message naming the
 * server, the address and (with `flag`) what to pass instead when the address cannot be bound.
 */
export function startHttpServer(options: AddressServerOptions): Promise<RunningHttpServer>
export function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer | undefined>
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer | undefined> {
  if (!options.routes && !options.handler) throw new TypeError(`startHttpServer (${options.name}): pass routes, a handler, or both`)
  const address = options.address ?? parseBindAddress(options.bindAddress, options.flag)
  if (!address) return undefined
  const logger = options.logger ?? silentLogger
  const dispatch = createDispatcher(options.routes, options.handler)

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // async, so that a synchronous throw is answered like a rejection
    void (async () => dispatch(req, res))().catch((error: unknown) => answerError(res, error, options.name, logger))
  }
  const {tls} = options
  const server: Server = tls
    ? createHttpsServer({...(tls.key && tls.cert ? {key: tls.key, cert: tls.cert} : {}), ca: tls.ca, requestCert: tls.requestCert ?? false, rejectUnauthorized: tls.rejectUnauthorized ?? true}, listener)
    : createHttpServer(listener)
  server.headersTimeout = HEADERS_TIMEOUT_MS
  server.requestTimeout = REQUEST_TIMEOUT_MS

  // Every TCP connection (for https, the socket under TLS, so half-done handshakes too), to end them on close().
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening)
      reject(new Error(listenErrorMessage(error, address, options), {cause: error}))
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
  server.on('error', (error) => logger.error(`${options.name} server error`, {error: error.message}))

  const bound = server.address()
  const actual: BindAddress = typeof bound === 'object' && bound ? {host: bound.address, port: bound.port} : {...address}
  logger.info(`${options.name} server listening`, tls ? {address: formatAddress(actual), tls: true} : {address: formatAddress(actual)})

  let closing: Promise<void> | undefined
  return {
    address: actual,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      })
      return closing
    },
    ...(tls
      ? {
        setCertificate(pair: {key: string; cert: string}) {
          ;(server as HttpsServer).setSecureContext({key: pair.key, cert: pair.cert, ...(tls.ca ? {ca: tls.ca} : {})})
        },
      }
      : {}),
  }
}

function createDispatcher(routes: Routes | undefined, fallback: RequestHandler | undefined): RequestHandler {
  const table = new Map(Object.entries(routes ?? {}))
  return (req, res) => {
    const route = table.get(requestPath(req))
    if (!route) {
      if (fallback) return fallback(req, res)
      return sendText(res, 404, '404 page not found\n')
    }
    const methods = methodOrder.filter((m) => route[m] !== undefined)
    if (!allowMethods(req, res, methods)) return
    const handler = route[req.method as HttpMethod] ?? (req.method === 'HEAD' ? route.GET : undefined)
    return handler?.(req, res)
  }
}

/** The path of the request target, raw (not percent-decoded), without query or fragment. */
function requestPath(req: IncomingMessage): string {
  const target = req.url ?? '/'
  const end = target.search(/[?#]/)
  return end === -1 ? target : target.slice(0, end)
}

function answerError(res: ServerResponse, error: unknown, name: string, logger: Logger): void {
  if (error instanceof HttpError) {
    if (res.headersSent) return void res.destroy()
    for (const [header, value] of Object.entries(error.headers)) res.setHeader(header, value)
    return sendText(res, error.status, `${error.message}\n`)
  }
  logger.error(`${name} request failed`, {error: error instanceof Error ? error.message : String(error), path: requestPath(res.req)})
  if (res.headersSent) res.destroy()
  else sendText(res, 500, 'internal server error\n')
}

function listenErrorMessage(error: NodeJS.ErrnoException, address: BindAddress, options: HttpServerOptions): string {
  const raw = options.bindAddress !== undefined ? options.bindAddress.trim() : formatAddress(address)
  const what = `${options.name} bind address ${raw}`
  // A flag value can be 0 (disabled); a fixed address cannot.
  const disable = options.bindAddress !== undefined ? ', or 0 to disable' : ''
  const use = (instead: string) => (options.flag ? `pass ${options.flag} with ${instead}${disable}` : `use ${instead}${disable}`)
  switch (error.code) {
    case 'EADDRINUSE':
      return `${what} is in use: ${use('a free port')}`
    case 'EACCES':
      return `${what} needs privileges to bind port ${address.port} (EACCES): ${use('a port above 1023')}`
    case 'EADDRNOTAVAIL':
      return `${what} is not an address of this machine (EADDRNOTAVAIL): ${use(`a local address such as :${address.port}`)}`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${what}: the host name "${address.host}" does not resolve (${error.code}): ${use('an IP address')}`
    default:
      return `${what} cannot be used (${error.code ?? 'error'}: ${error.message}): ${use('a free port')}`
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// request and response helpers

/**
 * True when the request's method is one of `methods` (HEAD counts as allowed wherever GET is); otherwise answers
 * 405 with an `Allow` header and returns false.
 */
export function allowMethods(req: IncomingMessage, res: ServerResponse, methods: readonly string[]): boolean {
  const allowed = new Set(methods.map((m) => m.toUpperCase()))
  if (allowed.has('GET')) allowed.add('HEAD')
  if (req.method !== undefined && allowed.has(req.method)) return true
  const known = methodOrder.filter((m) => allowed.has(m))
  res.setHeader('Allow', [...known, ...[...allowed].filter((m) => !known.includes(m as HttpMethod))].join(', '))
  sendText(res, 405, 'method not allowed\n')
  return false
}

/** Sends `body` with its length and no-store/nosniff headers; a HEAD request (or a 204/304) gets no body. */
export function sendText(res: ServerResponse, status: number, body: string | Buffer, contentType = 'text/plain; charset=utf-8'): void {
  res.statusCode = status
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Cache-Control', 'no-store')
  if (status === 204 || status === 304) {
    res.end()
    return
  }
  res.setHeader('Content-Type', contentType)
  res.setHeader('Content-Length', Buffer.byteLength(body))
  if (res.req?.method === 'HEAD') res.end()
  else res.end(body)
}

/** Sends `body` as JSON (one line, newline-terminated), as `application/json` or the given media type. */
export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  sendText(res, status, `${JSON.stringify(body) ?? 'null'}\n`, contentType)
}

export interface ReadBodyOptions {
  /** The largest body accepted; a larger one rejects with HttpError 413 (and the connection is not reused). */
  limitBytes: number
}

/**
 * Reads the whole request body. Past `limitBytes` (declared in Content-Length, or as it arrives) it rejects with
 * an HttpError 413 at once and discards the rest; an aborted request rejects too.
 */
export function readBody(req: IncomingMessage, options: ReadBodyOptions): Promise<Buffer> {
  const {limitBytes} = options
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    const tooLarge = () => {
      cleanup()
      req.resume() // discard the rest, so that the client gets to read the answer
      reject(new HttpError(413, `request body larger than ${limitBytes} bytes`, {Connection: 'close'}))
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limitBytes) return tooLarge()
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resolve(Buffer.concat(chunks, size))
    }
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    const onClose = () => {
      cleanup()
      reject(new Error('request aborted before its body was read'))
    }

    const declared = Number(req.headers['content-length'])
    if (Number.isFinite(declared) && declared > limitBytes) return tooLarge()
    if (req.readableEnded) return reject(new Error('request body already read'))
    req.on('data', onData)
    req.once('end', onEnd)
    req.once('error', onError)
    req.once('close', onClose)
  })
}
