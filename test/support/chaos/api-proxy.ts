/**
 * A fault proxy between the operator and the Polycrate API simulator (test support for the fault campaign). The
 * OperatorConfig's `api_sync.api_url` names the proxy; it forwards every request to the simulator as it came.
 *
 * Faults follow a schedule (`ApiFaultStep[]`, drawn from the campaign's seed by `apiFaultSchedule`): step `nth` of
 * class `on` hits the nth request of that class — `write` (POST, PUT, PATCH, DELETE under /api/v1/, but the
 * heartbeat and error reports) or `read` (GET) — counted in the order they arrive, retries included:
 * - the answer lost after the write (the simulator applied it, the operator never learns it): `lost-timeout` (no answer
 *   until the client gives up), `lost-reset` (the connection reset), `lost-502` / `lost-504` (a gateway's error page
 *   after the upstream answered);
 * - refused before it: `before-503` and `before-429`, with `Retry-After: 1` (nothing reaches the simulator);
 * - `slow`: forwarded and answered, but only after the client's timeout;
 * - `reset-mid-body`: the status line, the headers and half the body, then a reset.
 *
 * Connections are tagged with the process that opened them (`processOf`, by the client's port, asked once per
 * connection), so two replicas calling one API URL are told apart: `log` says who sent each request and what became of
 * it.
 */
import http from 'node:http'
import type {AddressInfo, Socket} from 'node:net'
import {resourceOfPath} from '../api-simulator/core.js'
import type {Prng} from './prng.js'

export const API_FAULT_KINDS = ['lost-timeout', 'lost-reset', 'lost-502', 'lost-504', 'before-503', 'before-429', 'slow', 'reset-mid-body'] as const
export type ApiFaultKind = (typeof API_FAULT_KINDS)[number]
/** What a read can get (a read has no "after the write"; a reset is a reset). */
export const READ_FAULT_KINDS = ['lost-reset', 'before-503', 'before-429', 'slow', 'reset-mid-body'] as const satisfies readonly ApiFaultKind[]

export interface ApiFaultStep {
  on: 'write' | 'read'
  /** The nth request of its class (1-based). */
  nth: number
  kind: ApiFaultKind
}

/** The class of a fault, as the campaign reports it: the answer lost after the upstream applied a write, etc. (pure). */
export function faultClass(kind: ApiFaultKind, method: string, upstreamStatus: number): 'applied-then-lost' | 'before' | 'slow' | 'reset-mid-body' | 'read-lost' | 'not-applied' {
  if (kind === 'before-503' || kind === 'before-429') return 'before'
  if (kind === 'slow') return 'slow'
  if (kind === 'reset-mid-body') return 'reset-mid-body'
  if (method === 'GET') return 'read-lost'
  return upstreamStatus > 0 && upstreamStatus < 400 ? 'applied-then-lost' : 'not-applied'
}

/** Which class of the schedule a request belongs to (undefined: never faulted), pure. */
export function requestClass(method: string, path: string): 'write' | 'read' | undefined {
  if (!path.startsWith('/api/v1/')) return undefined
  if (/^\/api\/v1\/agent\/(health|errors)\//.test(path)) return undefined
  if (method === 'GET') return 'read'
  return /^(POST|PUT|PATCH|DELETE)$/.test(method) ? 'write' : undefined
}

/**
 * A seeded schedule (pure in the PRNG's state): `count` faults (default 6–11), three in four on writes, spread over the
 * first `writes` writes and `reads` reads a reference run made (at least 1 each), every kind possible on writes, the
 * read kinds on reads.
 */
export function apiFaultSchedule(random: Prng, writes: number, reads: number, count = 6 + random.int(6)): ApiFaultStep[] {
  const steps: ApiFaultStep[] = []
  const taken = new Set<string>()
  for (let i = 0; i < count; i++) {
    const on = random.next() < 0.75 ? 'write' as const : 'read' as const
    const nth = 1 + random.int(Math.max(1, on === 'write' ? writes : reads))
    const kind = on === 'write' ? random.pick(API_FAULT_KINDS) : random.pick(READ_FAULT_KINDS)
    if (taken.has(`${on}#${nth}`)) continue
    taken.add(`${on}#${nth}`)
    steps.push({on, nth, kind})
  }
  // Writes first, then reads, each in request order.
  return steps.sort((a, b) => (a.on === b.on ? a.nth - b.nth : a.on === 'write' ? -1 : 1))
}

export interface ApiProxyEntry {
  at: number
  method: string
  path: string
  /** The collection (`kubernetes/apps`, `s3/buckets`, …). */
  resource: string
  /** The simulator's answer (0: not forwarded or not answered). */
  upstreamStatus: number
  fault?: ApiFaultKind
  /** The process that sent it (`processOf`), when known. */
  process?: string
}

export interface ApiFaultProxy {
  url: string
  log: ApiProxyEntry[]
  /** Faults that happened: `<class> <resource>` → count (see faultClass). */
  counts: Map<string, number>
  /** Replaces the schedule and restarts the request counts. */
  schedule(steps: ApiFaultStep[]): void
  close(): Promise<void>
}

export interface ApiFaultProxyOptions {
  upstream: string
  /** The operator's per-attempt timeout: `slow` answers 1 s after it, `lost-timeout` never. */
  clientTimeoutMs?: number
  /** The process (label) that owns the client end of a connection from `remotePort`. */
  processOf?: (remotePort: number) => string | undefined
}

export async function startApiFaultProxy(options: ApiFaultProxyOptions): Promise<ApiFaultProxy> {
  const upstream = new URL(options.upstream)
  const agent = new http.Agent({keepAlive: true, maxSockets: 64})
  const clientTimeoutMs = options.clientTimeoutMs ?? 15_000
  const sockets = new Set<Socket>()
  const tags = new WeakMap<Socket, string | undefined>()
  const timers = new Set<NodeJS.Timeout>()
  let steps: ApiFaultStep[] = []
  const seen = {write: 0, read: 0}
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      run()
    }, ms)
    timers.add(timer)
  }

  const proxy: ApiFaultProxy = {
    url: '',
    log: [],
    counts: new Map(),
    schedule(next) {
      steps = [...next]
      seen.write = 0
      seen.read = 0
    },
    async close() {
      for (const timer of timers) clearTimeout(timer)
      for (const socket of sockets) socket.destroy()
      agent.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }

  const server = http.createServer((request, response) => {
    const method = (request.method ?? 'GET').toUpperCase()
    const path = new URL(request.url ?? '/', 'http://x').pathname
    const entry: ApiProxyEntry = {at: Date.now(), method, path, resource: resourceOfPath(path), upstreamStatus: 0, process: tags.get(request.socket)}
    proxy.log.push(entry)
    const kind = requestClass(method, path)
    let fault: ApiFaultKind | undefined
    if (kind) {
      const nth = ++seen[kind]
      fault = steps.find((step) => step.on === kind && step.nth === nth)?.kind
    }
    entry.fault = fault
    const count = () => {
      if (!fault) return
      const key = `${faultClass(fault, method, entry.upstreamStatus)} ${entry.resource}`
      proxy.counts.set(key, (proxy.counts.get(key) ?? 0) + 1)
    }
    if (fault === 'before-503' || fault === 'before-429') {
      request.resume()
      count()
      const status = fault === 'before-503' ? 503 : 429
      response.writeHead(status, {'content-type': 'application/json', 'retry-after': '1'})
      response.end(JSON.stringify({type: 'server_error', errors: [{code: status === 429 ? 'throttled' : 'unavailable', detail: 'injected by the API fault proxy', attr: null}]}))
      return
    }
    const forward = http.request({
      hostname: upstream.hostname, port: upstream.port, path: request.url, method, headers: {...request.headers, host: upstream.host}, agent,
    }, (answer) => {
      const chunks: Buffer[] = []
      answer.on('data', (chunk: Buffer) => chunks.push(chunk))
      answer.on('error', () => response.destroy())
      answer.on('end', () => {
        entry.upstreamStatus = answer.statusCode ?? 502
        count()
        const body = Buffer.concat(chunks)
        const headers = {...answer.headers, 'content-length': String(body.length)}
        delete headers['transfer-encoding']
        const send = () => {
          if (response.destroyed || response.writableEnded) return
          response.writeHead(entry.upstreamStatus, headers)
          response.end(body)
        }
        switch (fault) {
          case 'lost-timeout':
            // No answer: the client's timeout ends it (a minute at most here).
            later(60_000, () => response.destroy())
            return
          case 'lost-reset':
            request.socket.destroy()
            return
          case 'lost-502':
          case 'lost-504': {
            const status = fault === 'lost-502' ? 502 : 504
            response.writeHead(status, {'content-type': 'text/html'})
            response.end(`<html><body><h1>${status} ${status === 502 ? 'Bad Gateway' : 'Gateway Time-out'}</h1></body></html>`)
            return
          }
          case 'slow':
            later(clientTimeoutMs + 1000, send)
            return
          case 'reset-mid-body':
            response.writeHead(entry.upstreamStatus, headers)
            response.write(body.subarray(0, Math.floor(body.length / 2)), () => request.socket.destroy())
            return
          default:
            send()
        }
      })
    })
    forward.on('error', () => {
      if (!response.headersSent) {
        response.writeHead(502, {'content-type': 'text/plain'})
        response.end('upstream unreachable (API fault proxy)')
      } else {
        response.destroy()
      }
    })
    request.pipe(forward)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    if (options.processOf && socket.remotePort) tags.set(socket, options.processOf(socket.remotePort))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return proxy
}
