/**
 * The HTTP(S) check: one request per hop on a fresh connection (no keep-alive, so every check measures DNS,
 * connect and TLS like the blackbox exporter), redirects followed by hand up to `max_redirects`, the whole check
 * bounded by the endpoint's timeout. TLS is always completed without rejecting so that the certificate can be
 * reported; an invalid one fails the check unless `ignore_tls_errors`.
 */
import {lookup} from 'node:dns/promises'
import * as http from 'node:http'
import * as https from 'node:https'
import {isIP} from 'node:net'
import type {TLSSocket, PeerCertificate, DetailedPeerCertificate} from 'node:tls'
import type {CheckResultInput} from '../../api/index.js'
import {statusAccepted, type HttpPlan} from './plan.js'
import {CheckFailure, checkResult, classify, commonResult, round, type CheckOutcome, type Failure} from './result.js'
import {systemClock, type Clock} from '../../lib/clock.js'

export interface ProbeOptions {
  /** Extra trusted CA certificates (PEM); the system's are always trusted. */
  ca?: string[]
  /** The clock of checked_at and the check's timeout (the agent's; the system clock by default). */
  clock?: Clock
}

/** Body bytes kept for the expected-body match (none without one); the size counts every byte. */
const BODY_LIMIT = 1024 * 1024
const DAY_MS = 24 * 60 * 60 * 1000

interface TlsInfo {
  version: string | null
  valid: boolean
  error?: string
  issuer: string
  subject: string
  notAfter: number
}

interface Hop {
  status: number
  location?: string
  size: number
  body: Buffer
  ip: string
  dnsMs: number
  connectMs: number
  tlsMs: number
  ttfbMs: number
  transferMs: number
  tls?: TlsInfo
}

function distinguishedName(name: Record<string, string | string[]> | undefined): string {
  return Object.entries(name ?? {}).map(([key, value]) => `${key}=${Array.isArray(value) ? value.join('+') : value}`).join(', ')
}

/** The earliest `valid_to` of the chain the server sent (blackbox: `probe_ssl_earliest_cert_expiry`). */
function earliestExpiry(cert: DetailedPeerCertificate): number {
  let earliest = Date.parse(cert.valid_to)
  const seen = new Set<string>([cert.fingerprint256])
  let next = cert.issuerCertificate
  while (next && !seen.has(next.fingerprint256)) {
    seen.add(next.fingerprint256)
    const at = Date.parse(next.valid_to)
    if (at < earliest) earliest = at
    next = next.issuerCertificate
  }
  return earliest
}

function tlsInfo(socket: TLSSocket): TlsInfo {
  const cert = socket.getPeerCertificate(true) as DetailedPeerCertificate | PeerCertificate
  const hasCert = cert && Object.keys(cert).length > 0
  return {
    version: socket.getProtocol(),
    valid: socket.authorized,
    ...(socket.authorizationError ? {error: String(socket.authorizationError)} : {}),
    issuer: hasCert ? distinguishedName(cert.issuer as unknown as Record<string, string>) : '',
    subject: hasCert ? distinguishedName(cert.subject as unknown as Record<string, string>) : '',
    notAfter: hasCert ? earliestExpiry(cert as DetailedPeerCertificate) : Number.NaN,
  }
}

async function resolve(host: string, signal: AbortSignal): Promise<{ip: string; ms: number}> {
  const bare = host.replace(/^\[|\]$/g, '')
  if (isIP(bare)) return {ip: bare, ms: 0}
  const started = performance.now()
  const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), {once: true}))
  const {address} = await Promise.race([lookup(bare), aborted])
  return {ip: address, ms: performance.now() - started}
}

/** The options of one hop's request (pure): to the resolved `ip`, with the URL's host, SNI and the plan's headers. */
export function hopRequestOptions(url: URL, plan: HttpPlan, method: string, ip: string, signal: AbortSignal, options: ProbeOptions): https.RequestOptions {
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  const tls = url.protocol === 'https:'
  const headers: Record<string, string> = {
    host: url.host,
    'user-agent': plan.userAgent,
    accept: '*/*',
    ...(plan.referer ? {referer: plan.referer} : {}),
  }
  return {
    host: ip,
    port: Number(url.port || (tls ? 443 : 80)),
    path: `${url.pathname}${url.search}`,
    method,
    headers,
    agent: false,
    signal,
    ...(tls ? {
      rejectUnauthorized: false,
      ...(isIP(hostname) ? {} : {servername: hostname}),
      ...(options.ca ? {ca: options.ca} : {}),
    } : {}),
  }
}

function requestHop(url: URL, plan: HttpPlan, method: string, signal: AbortSignal, options: ProbeOptions, onTls: (tls: TlsInfo) => void): Promise<Hop> {
  return (async () => {
    const hostname = url.hostname.replace(/^\[|\]$/g, '')
    const {ip, ms: dnsMs} = await resolve(hostname, signal)
    const tls = url.protocol === 'https:'
    return new Promise<Hop>((resolvePromise, reject) => {
      const started = performance.now()
      let connectedAt = started
      let tlsAt = started
      let firstByteAt = started
      let tlsSeen: TlsInfo | undefined
      const requestOptions = hopRequestOptions(url, plan, method, ip, signal, options)
      const req = (tls ? https : http).request(requestOptions)
      req.on('socket', (socket) => {
        socket.once('connect', () => { connectedAt = performance.now() })
        socket.once('secureConnect', () => {
          tlsAt = performance.now()
          tlsSeen = tlsInfo(socket as TLSSocket)
          onTls(tlsSeen)
          if (!tlsSeen.valid && !plan.ignoreTlsErrors) {
            const code = tlsSeen.error ?? 'TLS_INVALID'
            req.destroy(new CheckFailure('connection', code, `TLS certificate is not valid: ${code}`))
          }
        })
      })
      req.on('response', (res) => {
        firstByteAt = performance.now()
        let size = 0
        const chunks: Buffer[] = []
        let kept = 0
        // Without an expected body nothing is matched: the chunks are only counted, not held until the end.
        const keep = plan.expectedBody !== undefined
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (keep && kept < BODY_LIMIT) {
            chunks.push(chunk)
            kept += chunk.length
          }
        })
        res.on('error', reject)
        res.on('aborted', () => reject(Object.assign(new Error('response aborted'), {code: 'ECONNRESET'})))
        res.on('end', () => {
          const end = performance.now()
          const connectDone = connectedAt
          resolvePromise({
            status: res.statusCode ?? 0,
            ...(typeof res.headers.location === 'string' ? {location: res.headers.location} : {}),
            size,
            body: Buffer.concat(chunks),
            ip,
            dnsMs,
            connectMs: connectDone - started,
            tlsMs: tls ? tlsAt - connectDone : 0,
            ttfbMs: firstByteAt - started,
            transferMs: end - firstByteAt,
            ...(tlsSeen ? {tls: tlsSeen} : {}),
          })
        })
      })
      req.on('error', reject)
      req.end()
    })
  })()
}

/** Runs one HTTP check; never throws (every failure is a result). */
export async function httpCheck(endpointId: string, plan: HttpPlan, options: ProbeOptions = {}): Promise<CheckOutcome> {
  const clock = options.clock ?? systemClock
  const checkedAt = clock.now()
  const started = performance.now()
  const controller = new AbortController()
  const timer = clock.setTimeout(() => controller.abort(new CheckFailure('timeout', 'TIMEOUT', `no complete answer within ${plan.timeoutMs / 1000} s`)), plan.timeoutMs)
  const totals = {dns: 0, connect: 0, tls: 0, processing: 0, transfer: 0, ttfb: 0}
  let tls: TlsInfo | undefined
  let last: Hop | undefined
  let ip: string | undefined
  let failure: Failure | undefined
  try {
    let url = new URL(`${plan.scheme}://${plan.host.includes(':') && !plan.host.startsWith('[') ? `[${plan.host}]` : plan.host}:${plan.port}${plan.path}`)
    let method = plan.method
    for (let redirects = 0; ; redirects++) {
      const hop = await requestHop(url, plan, method, controller.signal, options, (info) => { tls = info })
      last = hop
      ip = hop.ip
      totals.dns += hop.dnsMs
      totals.connect += hop.connectMs
      totals.tls += hop.tlsMs
      totals.processing += hop.ttfbMs - hop.connectMs - hop.tlsMs
      totals.transfer += hop.transferMs
      const redirect = hop.status >= 300 && hop.status < 400 && hop.location !== undefined
      if (!redirect || !plan.followRedirects) break
      if (redirects >= plan.maxRedirects) {
        throw new CheckFailure('response', 'TOO_MANY_REDIRECTS', `more than ${plan.maxRedirects} redirects (max_redirects)`)
      }
      url = new URL(hop.location!, url)
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CheckFailure('response', 'BAD_REDIRECT', `redirect to ${url.protocol} URL`)
      if (hop.status === 303 || ((hop.status === 301 || hop.status === 302) && method === 'POST')) method = 'GET'
    }
    totals.ttfb = performance.now() - started - (last?.transferMs ?? 0)
    if (!statusAccepted(plan, last!.status)) {
      throw new CheckFailure('response', 'UNEXPECTED_STATUS', `status ${last!.status} is not accepted`)
    }
    if (plan.expectedBody !== undefined && !last!.body.includes(plan.expectedBody)) {
      throw new CheckFailure('response', 'BODY_MISMATCH', 'the response body does not contain the expected text')
    }
  } catch (error) {
    const cause = controller.signal.aborted && !(error instanceof CheckFailure && error.category !== 'timeout') ? controller.signal.reason : error
    const {category, errorName} = classify(cause)
    failure = {category, errorName, message: (cause as Error)?.message ?? String(cause)}
  } finally {
    clock.clearTimeout(timer)
  }
  const durationMs = performance.now() - started
  const result: CheckResultInput = checkResult(commonResult(endpointId, checkedAt, failure, durationMs, ip ?? null, last?.status), {
    status_code: last?.status ?? null,
    http_dns_lookup_ms: round(totals.dns),
    http_tcp_connect_ms: last ? round(totals.connect) : null,
    http_tls_handshake_ms: tls ? round(totals.tls) : null,
    http_time_to_first_byte_ms: last ? round(totals.ttfb) : null,
    http_response_size_bytes: last?.size ?? null,
    http_resolved_ip: ip ?? null,
    http_tls_version: tls?.version ?? null,
    http_tls_valid: tls ? tls.valid : null,
    http_tls_days_until_expiry: tls && Number.isFinite(tls.notAfter) ? Math.floor((tls.notAfter - checkedAt) / DAY_MS) : null,
    http_tls_issuer: tls?.issuer ?? null,
    http_tls_subject: tls?.subject ?? null,
    ssl_cert_not_after: tls && Number.isFinite(tls.notAfter) ? new Date(tls.notAfter).toISOString() : null,

  })
  const phases = {resolve: totals.dns / 1000, connect: totals.connect / 1000, tls: totals.tls / 1000, processing: Math.max(0, totals.processing) / 1000, transfer: totals.transfer / 1000}
  return {result, phases, ...(failure ? {message: failure.message} : {})}
}
