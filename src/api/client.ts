/**
 * The Polycrate API client: one `request()` that does auth, timeouts, retries, metrics and response validation,
 * and a typed member per resource the operator uses.
 *
 * Retries: network errors (refused, reset, dropped, DNS, timeout), 5xx and 429 are retried with jittered
 * exponential backoff (`baseDelayMs` × 2^n, ±25 %, capped at `maxDelayMs`); a 429/5xx `Retry-After` (seconds or
 * an HTTP date) replaces the backoff, also capped at `maxDelayMs`. Other 4xx are final at once. A create (a
 * collection POST, `notRepeatable`) is retried only after an answer that says nothing was applied (429, 503, a refused
 * connection, an unknown host): after a 500, 502, 504, a reset or a timeout the API may have made the object, and not
 * every collection keeps a unique key that would answer a second POST with 409 — so the call fails, and the
 * operator's next attempt goes through `adoptOrCreate` (look up by natural key, create, treat 409 as "exists"),
 * which finds it: never a duplicate. The other POSTs (health report, error report, certificate sync, rollout
 * actions) are safe to repeat and retried like every other method. `retry.maxAttempts` is exact: at most that many
 * requests per call, the first included (the operator uses 2, so its work queue's backoff is the only long retry
 * layer).
 *
 * Cancellation: each attempt runs under one signal combining the per-attempt timeout (`timeoutMs`), the
 * client-wide `options.signal` (operator shutdown) and the call's own `ApiRequest.signal` (e.g. a reconcile's
 * AbortSignal; every typed resource method takes it as `{signal}` in its last, optional `CallOptions` argument,
 * and `list()` passes it into every page request). When the client or the call signal aborts, whether before an
 * attempt, while the request is in flight or during the pause before a retry, the call rejects at once with an
 * ApiNetworkError whose cause is `aborted`, and nothing is retried. A timeout, by contrast, is an ordinary network
 * failure (cause `timeout`) and is retried.
 *
 * Secrets: the token is only ever put into the Authorization header. Errors carry method, path, status and the
 * API's error items (with any echo of the token scrubbed), never headers, never the underlying fetch error
 * object; the logger gets method, path, status and timings only.
 */
import {operatorVersion} from '../version.js'
import {userAgentFor} from '../lib/request-origin.js'
import {performance} from 'node:perf_hooks'
import {Counter, Histogram, type Registry} from 'prom-client'
import type {Logger} from '../lib/logger.js'
import {silentLogger} from '../lib/logger.js'
import {backoffDelay} from '../lib/backoff.js'
import {checkFence, type WriteFence} from '../lib/write-fence.js'
import {anySignal} from '../lib/signals.js'
import {pause, systemClock, timeoutSignal, type Clock} from '../lib/clock.js'
import {
  ApiContractError,
  ApiNetworkError,
  type ApiError,
  type ApiErrorItem,
  describeIssues,
  errorForStatus,
  parseErrorBody,
} from './errors.js'
import {
  agent,
  artifact,
  backup,
  backupSchedule,
  block,
  certificate,
  dnsRecord,
  endpoint,
  host,
  k8sApp,
  k8sCluster,
  k8sVolume,
  loadbalancerInstance,
  maintenance,
  s3Cluster,
  s3Region,
  type Agent,
  type Artifact,
  type Backup,
  type BackupSchedule,
  type Block,
  type DNSRecord,
  type Endpoint,
  type Host,
  type K8sApp,
  type K8sCluster,
  type K8sVolume,
  type LoadbalancerInstance,
  type Maintenance,
  type S3Cluster,
  type S3Region,
} from './schemas.js'
import type {
  AgentRequest,
  BackupRequest,
  BackupScheduleRequest,
  BlockRequest,
  DNSRecordRequest,
  EndpointRequest,
  HostRequest,
  K8sAppRequest,
  K8sClusterRequest,
  K8sVolumeRequest,
  LoadbalancerInstanceCreateRequest,
  MaintenanceRequest,
} from './requests.js'
import type {ApiRequest, ApiResponse, Query, QueryScalar} from './transport.js'
import {httpTransport, type Transport} from './http-transport.js'
import {
  AgentApi,
  CertificatesResource,
  DnsZonesResource,
  OperatorRolloutApi,
  ReadOnlyResource,
  Resource,
  S3BucketsResource,
  SystemConfigApi,
  SystemStatusApi,
  WorkspacesResource,
} from './resources.js'

export interface RetryOptions {
  /** Requests per call, the first one included. Default 5. */
  maxAttempts?: number
  /** First backoff delay. Default 500 ms. */
  baseDelayMs?: number
  /** Upper bound of any delay, Retry-After included. Default 10 000 ms. */
  maxDelayMs?: number
}

export interface PolycrateApiClientOptions {
  /** Instance root, e.g. `https://app.ayedo.cloud` (a path prefix is kept). */
  baseUrl: string
  /** API token (agent, user, organization or system key); sent as `Authorization: Bearer <token>`. */
  token: string
  /** Per request (each attempt), body included. Default 15 000 ms. */
  timeoutMs?: number
  retry?: RetryOptions
  /** Registers `polycrate_api_requests_total` and `polycrate_api_request_duration_seconds` here. */
  registry?: Registry
  logger?: Logger
  /** Default `polycrate-operator/<package version>`. */
  userAgent?: string
  /** What requests go out with: fetch's shape (tests inject one); default node:http(s) with keep-alive (http-transport.ts). */
  fetch?: Transport
  /** Aborting it stops in-flight requests and pending retries (ApiNetworkError with cause `aborted`). */
  signal?: AbortSignal
  /**
   * Asked right before each attempt of a write (every method but GET): a closed fence fails the call with
   * WriteFencedError, nothing sent and nothing retried (the operator's leader fence, lib/write-fence.ts).
   */
  writeFence?: WriteFence
  /** The clock of the per-attempt timeout, the retry pauses and Retry-After dates (the system clock by default). */
  clock?: Clock
}

export type {ApiRequest, ApiRequester, ApiResponse, HttpMethod, Query, QueryScalar} from './transport.js'

const defaults = {timeoutMs: 15_000, maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 10_000}
/** Network failures that prove the request never reached the API (a create may be sent again after them). */
const NOTHING_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'])
const durationBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30]

/** The client's metrics, shared by every client on the same registry. */
class ApiClientMetrics {
  readonly requests: Counter<'method' | 'resource' | 'code'>
  readonly duration: Histogram<'method' | 'resource'>

  constructor(registry?: Registry) {
    const registers = registry ? [registry] : []
    this.requests = (registry?.getSingleMetric('polycrate_api_requests_total') as Counter<'method' | 'resource' | 'code'> | undefined) ??
      new Counter({
        name: 'polycrate_api_requests_total',
        help: 'Requests to the Polycrate API (each attempt), by method, resource and HTTP status code (or "network")',
        labelNames: ['method', 'resource', 'code'] as const,
        registers,
      })
    this.duration = (registry?.getSingleMetric('polycrate_api_request_duration_seconds') as Histogram<'method' | 'resource'> | undefined) ??
      new Histogram({
        name: 'polycrate_api_request_duration_seconds',
        help: 'Duration of Polycrate API requests (each attempt), by method and resource',
        labelNames: ['method', 'resource'] as const,
        buckets: durationBuckets,
        registers,
      })
  }
}

export class PolycrateApiClient {
  readonly baseUrl: string
  private readonly origin: string
  private readonly basePath: string
  readonly #token: string
  private readonly timeoutMs: number
  private readonly clock: Clock
  private readonly maxAttempts: number
  private readonly baseDelayMs: number
  private readonly maxDelayMs: number
  private readonly logger: Logger
  private readonly userAgent: string
  private readonly fetchImpl: Transport
  private readonly signal: AbortSignal | undefined
  private readonly writeFence: WriteFence | undefined
  private readonly metrics: ApiClientMetrics

  // -- typed members ------------------------------------------------------------------------------------------
  /** `POST agent/health/`, `GET agent/endpoints/` (X-Agent-ID), `POST agent/errors/`. */
  readonly agent: AgentApi
  readonly agents: Resource<Agent, AgentRequest>
  readonly endpoints: Resource<Endpoint, EndpointRequest>
  readonly k8sApps: Resource<K8sApp, K8sAppRequest>
  readonly k8sClusters: Resource<K8sCluster, K8sClusterRequest>
  readonly k8sVolumes: Resource<K8sVolume, K8sVolumeRequest>
  readonly hosts: Resource<Host, HostRequest>
  readonly backups: Resource<Backup, BackupRequest>
  readonly backupSchedules: Resource<BackupSchedule, BackupScheduleRequest>
  /** CRUD plus `sync(body)` (`POST certificates/sync/`). */
  readonly certificates: CertificatesResource
  /** Read-only (global catalogue; agents may not write). */
  readonly artifacts: ReadOnlyResource<Artifact>
  /** CRUD plus `credentials(id)` and `available(bucket, region)`. */
  readonly s3Buckets: S3BucketsResource
  /** `GET /api/v1/s3/regions/`: the regions buckets can be created in. */
  readonly s3Regions: ReadOnlyResource<S3Region>
  /** `/api/v1/s3/clusters/`: S3 clusters (read here). */
  readonly s3Clusters: ReadOnlyResource<S3Cluster>
  /** CRUD plus `resolve(fqdn)` (undefined when no zone matches). */
  readonly dnsZones: DnsZonesResource
  /** Ids are `<zone_uuid>::<provider_id>` for external zones (URL-encoded in paths). */
  readonly dnsRecords: Resource<DNSRecord, DNSRecordRequest>
  readonly loadBalancers: Resource<LoadbalancerInstance, LoadbalancerInstanceCreateRequest>
  /** CRUD plus `maintenanceWindowStatus(id)`. */
  readonly workspaces: WorkspacesResource
  readonly blocks: Resource<Block, BlockRequest>
  readonly maintenances: Resource<Maintenance, MaintenanceRequest>
  readonly systemConfig: SystemConfigApi
  readonly systemStatus: SystemStatusApi
  /** Platform-admin only: `status()`, `force(id)`, `pause(id)`, `resume(id)`. */
  readonly operatorRollout: OperatorRolloutApi

  constructor(options: PolycrateApiClientOptions) {
    let base: URL
    try {
      base = new URL(options.baseUrl)
    } catch {
      throw new TypeError(`Polycrate API base URL is not a URL: ${JSON.stringify(options.baseUrl)}`)
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`Polycrate API base URL must be http(s): ${base.origin}`)
    if (base.username !== '' || base.password !== '') throw new TypeError('Polycrate API base URL must not contain credentials; pass the token separately')
    if (typeof options.token !== 'string' || options.token.trim() === '') throw new TypeError('Polycrate API token is empty')
    if (!/^[\x21-\x7e]+$/.test(options.token)) throw new TypeError('Polycrate API token contains characters not allowed in an HTTP header (whitespace or non-ASCII)')
    this.origin = base.origin
    this.basePath = base.pathname.replace(/\/+$/, '')
    this.baseUrl = `${this.origin}${this.basePath}`
    this.#token = options.token
    this.timeoutMs = options.timeoutMs ?? defaults.timeoutMs
    this.clock = options.clock ?? systemClock
    this.maxAttempts = Math.max(1, Math.floor(options.retry?.maxAttempts ?? defaults.maxAttempts))
    this.baseDelayMs = Math.max(0, options.retry?.baseDelayMs ?? defaults.baseDelayMs)
    this.maxDelayMs = Math.max(0, options.retry?.maxDelayMs ?? defaults.maxDelayMs)
    this.logger = options.logger ?? silentLogger
    this.userAgent = options.userAgent ?? `polycrate-operator/${operatorVersion()}`
    this.fetchImpl = options.fetch ?? httpTransport
    this.signal = options.signal
    this.writeFence = options.writeFence
    this.metrics = new ApiClientMetrics(options.registry)

    this.agent = new AgentApi(this)
    this.agents = new Resource(this, 'agents', agent)
    this.endpoints = new Resource(this, 'endpoints', endpoint)
    this.k8sApps = new Resource(this, 'kubernetes/apps', k8sApp)
    this.k8sClusters = new Resource(this, 'kubernetes/clusters', k8sCluster)
    this.k8sVolumes = new Resource(this, 'kubernetes/volumes', k8sVolume)
    this.hosts = new Resource(this, 'hosts', host)
    this.backups = new Resource(this, 'backups/backups', backup)
    this.backupSchedules = new Resource(this, 'backups/backup-schedules', backupSchedule)
    this.certificates = new CertificatesResource(this, 'certificates', certificate)
    this.artifacts = new ReadOnlyResource(this, 'artifacts', artifact)
    this.s3Buckets = new S3BucketsResource(this)
    this.s3Regions = new ReadOnlyResource(this, 's3/regions', s3Region)
    this.s3Clusters = new ReadOnlyResource(this, 's3/clusters', s3Cluster)
    this.dnsZones = new DnsZonesResource(this)
    this.dnsRecords = new Resource(this, 'domains/dnsrecords', dnsRecord)
    this.loadBalancers = new Resource(this, 'loadbalancers/instances', loadbalancerInstance)
    this.workspaces = new WorkspacesResource(this)
    this.blocks = new Resource(this, 'blocks', block)
    this.maintenances = new Resource(this, 'maintenances', maintenance)
    this.systemConfig = new SystemConfigApi(this)
    this.systemStatus = new SystemStatusApi(this)
    this.operatorRollout = new OperatorRolloutApi(this)
  }

  /**
   * One API call with retries. Resolves with the (validated) body of a 2xx answer; rejects with an ApiError
   * subclass otherwise (see errors.ts). Aborting `req.signal` or the client's signal rejects it at once with an
   * ApiNetworkError (cause `aborted`), in flight or between attempts.
   */
  async request<T = unknown>(req: ApiRequest<T>): Promise<ApiResponse<T>> {
    const url = this.urlFor(req.path, req.query)
    const method = req.method
    const path = url.pathname
    const resource = req.resource ?? resourceLabel(path)
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': userAgentFor(this.userAgent, req.signal),
      ...req.headers,
      authorization: `Bearer ${this.#token}`,
    }
    let body: string | undefined
    if (req.body !== undefined) {
      body = JSON.stringify(req.body)
      headers['content-type'] = 'application/json'
    }

    // The signals that cancel the whole call (not just one attempt): the client's and this call's own.
    const cancel = [this.signal, req.signal].filter((s): s is AbortSignal => s !== undefined)
    for (let attempt = 1; ; attempt++) {
      if (cancel.some((s) => s.aborted)) throw this.networkError(method, path, 'aborted', attempt - 1)
      // After every await of this call (the pause before a retry included): the last moment before it goes out.
      if (method !== 'GET') checkFence(this.writeFence, method, path)
      const started = performance.now()
      let outcome: {status: number; text: string; headers: Headers} | {cause: string}
      // Not AbortSignal.any: the client-wide signal lives as long as the process and would keep every attempt's (signals.ts).
      const timeout = timeoutSignal(this.clock, this.timeoutMs)
      const combined = cancel.length > 0 ? anySignal([timeout.signal, ...cancel]) : undefined
      try {
        const signal = combined?.signal ?? timeout.signal
        // Raced against the signal as well, so a fetch (or body read) that ignores its signal cannot hold the call.
        const response = await untilAborted(this.fetchImpl(url, {method, headers, body, signal}), signal)
        const text = await untilAborted(response.text(), signal)
        outcome = {status: response.status, text, headers: response.headers}
      } catch (error) {
        outcome = {cause: networkCause(error, cancel)}
      } finally {
        combined?.dispose()
        timeout.clear()
      }
      const seconds = (performance.now() - started) / 1000
      this.metrics.requests.inc({method, resource, code: 'cause' in outcome ? 'network' : String(outcome.status)})
      this.metrics.duration.observe({method, resource}, seconds)

      if ('cause' in outcome) {
        const repeatable = !req.notRepeatable || NOTHING_SENT.has(outcome.cause)
        if (outcome.cause !== 'aborted' && repeatable && attempt < this.maxAttempts) {
          await this.pause(this.backoff(attempt), cancel, {method, path, attempt, cause: outcome.cause})
          continue
        }
        throw this.networkError(method, path, outcome.cause, attempt)
      }

      const {status, text} = outcome
      if (status >= 200 && status < 300) {
        this.logger.debug('polycrate api request', {method, path, status, attempt, durationMs: Math.round(seconds * 1000)})
        return {status, data: this.parseBody(req, method, path, text, attempt), headers: outcome.headers}
      }

      const retryAfterMs = parseRetryAfter(outcome.headers.get('retry-after'), this.clock.now())
      const repeatable = !req.notRepeatable || status === 429 || status === 503
      if ((status === 429 || status >= 500) && repeatable && attempt < this.maxAttempts) {
        const delay = Math.min(this.maxDelayMs, retryAfterMs ?? this.backoff(attempt))
        await this.pause(delay, cancel, {method, path, attempt, status})
        continue
      }
      throw this.httpError(method, path, status, text, attempt, retryAfterMs)
    }
  }

  // -- internals ----------------------------------------------------------------------------------------------

  private urlFor(path: string, query?: Query): URL {
    let url: URL
    if (/^https?:\/\//i.test(path)) {
      // A `next` link: keep its path and query but stay on our origin, so the token never goes anywhere else
      // (and a proxy that reports http:// for an https:// API does not break pagination).
      const link = new URL(path)
      url = new URL(`${link.pathname}${link.search}`, this.origin)
    } else {
      url = new URL(`${this.basePath}${path.startsWith('/') ? path : `/${path}`}`, this.origin)
    }
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue
      const values: readonly QueryScalar[] = Array.isArray(value) ? value : [value as QueryScalar]
      for (const v of values) url.searchParams.append(key, String(v))
    }
    return url
  }

  private parseBody<T>(req: ApiRequest<T>, method: string, path: string, text: string, attempts: number): T {
    let data: unknown
    if (text.trim() !== '') {
      try {
        data = JSON.parse(text)
      } catch {
        throw new ApiContractError({status: 200, method, path, attempts, issues: ['the response body is not JSON']})
      }
    }
    if (!req.schema) return data as T
    const result = req.schema.safeParse(data)
    if (result.success) return result.data
    throw new ApiContractError({status: 200, method, path, attempts, issues: describeIssues(result.error.issues).map((issue) => this.scrub(issue))})
  }

  private httpError(method: string, path: string, status: number, text: string, attempts: number, retryAfterMs?: number): ApiError {
    let parsed: unknown
    try {
      parsed = text.trim() === '' ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    const {type, errors} = parseErrorBody(parsed, text)
    const clean: ApiErrorItem[] = errors.map((e) => ({code: this.scrub(e.code), detail: this.scrub(e.detail), attr: e.attr === null ? null : this.scrub(e.attr)}))
    this.logger.debug('polycrate api request failed', {method, path, status, attempts, code: clean[0]?.code})
    return errorForStatus({status, method, path, type, errors: clean, attempts, retryAfterMs})
  }

  private networkError(method: string, path: string, cause: string, attempts: number): ApiNetworkError {
    this.logger.debug('polycrate api unreachable', {method, path, cause, attempts})
    return new ApiNetworkError({method, path, cause, origin: this.origin, attempts, timeoutMs: this.timeoutMs})
  }

  private backoff(attempt: number): number {
    return Math.min(this.maxDelayMs, backoffDelay(attempt - 1, {initialMs: this.baseDelayMs, maxMs: this.maxDelayMs, factor: 2, jitter: 0.25}))
  }

  /**
   * The delay before a retry. Resolves early when one of `cancel` aborts (the loop then throws the aborted
   * ApiNetworkError before the next attempt); its timer and listeners are always removed.
   */
  private async pause(ms: number, cancel: readonly AbortSignal[], fields: Record<string, unknown>): Promise<void> {
    if (cancel.some((s) => s.aborted)) return
    this.logger.warn('polycrate api request failed; retrying', {...fields, maxAttempts: this.maxAttempts, delayMs: Math.round(ms)})
    if (ms <= 0) return
    const any = anySignal(cancel)
    try {
      await pause(this.clock, ms, any.signal)
    } finally {
      any.dispose()
    }
  }

  /** What JSON output of the client shows (the token is a private field and never serialized). */
  toJSON(): {baseUrl: string} {
    return {baseUrl: this.baseUrl}
  }

  /** Removes any echo of the token from text the API sent back. */
  private scrub(text: string): string {
    return text.includes(this.#token) ? text.split(this.#token).join('[redacted]') : text
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined
  const trimmed = value.trim()
  if (trimmed === '') return undefined
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000
  if (!/[a-z]/i.test(trimmed)) return undefined
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** `/api/v1/kubernetes/apps/<uuid>/install/` → `kubernetes/apps/install`: the path without prefix and ids. */
export function resourceLabel(path: string): string {
  const segments = path.replace(/^.*?\/api\/v1\//, '').split('/').filter((s) => s !== '')
  return segments.filter((s) => !isIdSegment(s)).join('/') || '/'
}

function isIdSegment(segment: string): boolean {
  const decoded = safeDecode(segment)
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(decoded) || /^\d+$/.test(decoded) || decoded.includes('::')
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Settles like `promise`, or rejects with the signal's reason as soon as the signal aborts (the late outcome of
 * `promise` is then ignored). The listener is removed either way.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, {once: true})
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

/**
 * A short code for a failed fetch: the system error code, `timeout` or `aborted`; never the error's message.
 * `aborted` whenever one of the call's cancel signals (client-wide or per call) has aborted, whatever the error.
 */
function networkCause(error: unknown, cancel: readonly AbortSignal[]): string {
  if (cancel.some((s) => s.aborted)) return 'aborted'
  const name = (error as {name?: unknown} | null)?.name
  if (name === 'TimeoutError') return 'timeout'
  if (name === 'AbortError') return 'aborted'
  let current: unknown = error
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as {code?: unknown}).code
    if (typeof code === 'string' && code !== '') {
      if (code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'ECONNRESET'
      if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout'
      return code
    }
    current = (current as {cause?: unknown}).cause
  }
  return 'network_error'
}

