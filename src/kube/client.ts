/**
 * A small Kubernetes REST client: kubeconfig auth from @kubernetes/client-node (or, on the CLI's fast path, from
 * light-kubeconfig.ts), requests over one shared keep-alive agent per client (client-node 1.x makes a new agent per
 * request and leaks sockets), JSON in and out, and typed errors. The list/watch machinery of the operator builds on `stream()`.
 */
import http from 'node:http'
import https from 'node:https'
import {sleep, systemClock, type Clock} from '../lib/clock.js'
import {readBody} from '../lib/http-body.js'
import {userAgentFor} from '../lib/request-origin.js'
import {checkFence, WriteFencedError, type WriteFence} from '../lib/write-fence.js'
import {operatorVersion} from '../version.js'

export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata?: {
    name?: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    generation?: number
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [key: string]: unknown
  }
}

export interface ResourceRef {
  /** '' for the core group. */
  group: string
  version: string
  plural: string
  namespace?: string
  name?: string
  subresource?: string
}

export function resourcePath(ref: ResourceRef): string {
  const base = ref.group === '' ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`
  const ns = ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : ''
  const name = ref.name ? `/${encodeURIComponent(ref.name)}` : ''
  const sub = ref.name && ref.subresource ? `/${ref.subresource}` : ''
  return `${base}${ns}/${ref.plural}${name}${sub}`
}

/** The API server answered with an error status (a `metav1.Status` body when it could). */
export class KubeApiError extends Error {
  override name = 'KubeApiError'
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message)
  }
}

/** The API server could not be reached at all. */
export class KubeConnectionError extends Error {
  override name = 'KubeConnectionError'
  constructor(
    readonly server: string,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** A reused keep-alive connection reset before any answer: the server had closed it as idle (sent again once). */
class StaleConnectionError extends KubeConnectionError {}

export interface RequestOptions {
  method?: string
  path: string
  query?: Record<string, string | number | boolean | undefined>
  body?: unknown
  contentType?: string
  /** Accept header (e.g. for PartialObjectMetadata); JSON by default. */
  accept?: string
  /** Socket idle timeout; 30 s by default. */
  timeoutMs?: number
  signal?: AbortSignal
  /**
   * Sent whatever the write fence says: the leader election's own Lease writes and the replica's Pod label (a
   * standby says so on its own Pod). Every other write asks the fence (`KubeClient.writeFence`).
   */
  unfenced?: boolean
}

/**
 * Review requests: POSTs that create nothing (TokenReview, SubjectAccessReview, SelfSubjectAccessReview,
 * LocalSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview) — the apiserver answers a question and stores
 * nothing. Pure.
 */
export function isReview(method: string, path: string): boolean {
  return method.toUpperCase() === 'POST' && /^\/apis\/(authentication|authorization)\.k8s\.io\/[^/]+\/(namespaces\/[^/]+\/)?[a-z]+reviews\/?(\?|$)/.test(path)
}

/** Whether a request changes what the apiserver stores: POST, PUT, PATCH, DELETE, but reviews (pure). */
export function isKubeWrite(method: string, path: string): boolean {
  return /^(POST|PUT|PATCH|DELETE)$/i.test(method) && !isReview(method, path)
}


/**
 * Where a client's TLS options and credentials come from: client-node's KubeConfig (kubeconfig.ts) or, on the CLI's
 * fast path, the LightKubeConfig of light-kubeconfig.ts.
 */
export interface KubeAuth {
  applyToHTTPSOptions(options: https.RequestOptions): Promise<void>
  getCurrentCluster(): {server: string; proxyUrl?: string} | null
}

export interface KubeClientOptions {
  /** Server URL instead of the kubeconfig's (e.g. a second apiserver in tests). */
  server?: string
  /** The field manager of server-side applies that name none (e.g. `polycrate-operator`). */
  fieldManager?: string
  /** The User-Agent (default `polycrate-operator/<version>`); a reconcile's requests add their controller's name. */
  userAgent?: string
}

export class KubeClient {
  readonly server: string
  readonly fieldManager?: string
  /** Called once per request with the method and the HTTP status (or `<error>`), e.g. for rest_client metrics. */
  onResponse?: (method: string, code: string) => void
  /**
   * Asked right before each write goes out (unless the request is `unfenced`): a closed fence fails the write with
   * WriteFencedError and sends nothing. The manager sets it under leader election (lib/write-fence.ts).
   */
  writeFence?: WriteFence
  /** The clock of the Retry-After waits (the manager sets its own, as it sets writeFence). */
  clock: Clock = systemClock
  private readonly agent: http.Agent
  private readonly userAgent: string

  constructor(
    private readonly kubeConfig: KubeAuth,
    options: KubeClientOptions = {},
  ) {
    this.server = (options.server ?? kubeConfig.getCurrentCluster()?.server ?? '').replace(/\/+$/, '')
    this.fieldManager = options.fieldManager
    this.userAgent = options.userAgent ?? `polycrate-operator/${operatorVersion()}`
    const isHttps = this.server.startsWith('https:')
    // Keep-alive: requests reuse connections. Each watch holds one for its lifetime, hence the generous limit.
    this.agent = isHttps
      ? new https.Agent({keepAlive: true, maxSockets: 256})
      : new http.Agent({keepAlive: true, maxSockets: 256})
  }

  static from(loaded: {kubeConfig: KubeAuth; server: string}, options: Omit<KubeClientOptions, 'server'> = {}): KubeClient {
    return new KubeClient(loaded.kubeConfig, {...options, server: loaded.server})
  }

  /** Frees the keep-alive sockets; call when done so the process can exit. */
  close(): void {
    this.agent.destroy()
  }

  async request<T = unknown>(options: RequestOptions): Promise<T> {
    const response = await this.open(options)
    const text = await readBody(response)
    const status = response.statusCode ?? 0
    if (status >= 400) throw apiErrorFrom(status, text)
    return (text.length > 0 ? JSON.parse(text) : undefined) as T
  }

  /** Opens a streaming response (for watches); the caller reads and destroys it. */
  async stream(options: RequestOptions): Promise<http.IncomingMessage> {
    const response = await this.open(options)
    const status = response.statusCode ?? 0
    if (status >= 400) throw apiErrorFrom(status, await readBody(response))
    return response
  }

  get<T extends KubeObject>(ref: ResourceRef): Promise<T> {
    return this.request<T>({path: resourcePath(ref)})
  }

  async getOrUndefined<T extends KubeObject>(ref: ResourceRef): Promise<T | undefined> {
    try {
      return await this.get<T>(ref)
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined
      throw error
    }
  }

  create<T extends KubeObject>(ref: ResourceRef, body: object, query?: RequestOptions['query'], options: {signal?: AbortSignal} = {}): Promise<T> {
    return this.request<T>({method: 'POST', path: resourcePath({...ref, name: undefined}), body, query, signal: options.signal})
  }

  /** Server-side apply of a whole object we own (as `options.fieldManager`, else the client's field manager). */
  apply<T extends KubeObject>(
    ref: ResourceRef,
    body: object,
    options: {fieldManager?: string; force?: boolean; dryRun?: boolean; signal?: AbortSignal} = {},
  ): Promise<T> {
    const fieldManager = options.fieldManager ?? this.fieldManager
    if (!fieldManager) throw new Error('server-side apply needs a field manager: pass one to the KubeClient or to apply()')
    return this.request<T>({
      signal: options.signal,
      method: 'PATCH',
      path: resourcePath(ref),
      body,
      contentType: 'application/apply-patch+yaml',
      query: {
        fieldManager,
        force: options.force ?? true,
        dryRun: options.dryRun ? 'All' : undefined,
      },
    })
  }

  mergePatch<T extends KubeObject>(ref: ResourceRef, patch: unknown, options: {signal?: AbortSignal; unfenced?: boolean} = {}): Promise<T> {
    return this.request<T>({method: 'PATCH', path: resourcePath(ref), body: patch, contentType: 'application/merge-patch+json', signal: options.signal, unfenced: options.unfenced})
  }

  replace<T extends KubeObject>(ref: ResourceRef, body: object, options: {signal?: AbortSignal} = {}): Promise<T> {
    return this.request<T>({method: 'PUT', path: resourcePath(ref), body, signal: options.signal})
  }

  delete(ref: ResourceRef, options: {signal?: AbortSignal} = {}): Promise<unknown> {
    return this.request({method: 'DELETE', path: resourcePath(ref), signal: options.signal})
  }

  /**
   * Sends the request; an answer that asks to come back later (429, or a 5xx, with Retry-After: an apiserver under
   * its max-inflight limit, or a watch cache that is still initializing after a restart or a new CRD) is retried after
   * the time it names, as client-go does (up to 10 times, at most 10 s a wait).
   */
  private async open(options: RequestOptions): Promise<http.IncomingMessage> {
    for (let attempt = 1; ; attempt++) {
      const response = await this.send(options)
      const waitMs = retryAfterMs(response.statusCode ?? 0, response.headers['retry-after'], attempt)
      if (waitMs === undefined) return response
      response.resume()
      await sleep(this.clock, waitMs, options.signal)
    }
  }

  /**
   * Sends once, and once more on a new connection when a pooled keep-alive connection was reset before any answer:
   * the server closed it as idle while the request was being sent on it (Node's documented keep-alive race), so the
   * request never reached the server and sending it again is safe for any method.
   */
  private async send(options: RequestOptions): Promise<http.IncomingMessage> {
    try {
      return await this.sendOnce(options)
    } catch (error) {
      if (!(error instanceof StaleConnectionError) || options.signal?.aborted) throw error
      return this.sendOnce(options, {fresh: true})
    }
  }

  private async sendOnce(options: RequestOptions, {fresh = false} = {}): Promise<http.IncomingMessage> {
    const url = new URL(this.server + options.path)
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value))
    }
    const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body))
    const requestOptions: https.RequestOptions = {
      method: options.method ?? 'GET',
      agent: this.agent,
      headers: {
        Accept: options.accept ?? 'application/json',
        'User-Agent': userAgentFor(this.userAgent, options.signal),
        ...(body ? {'Content-Type': options.contentType ?? 'application/json', 'Content-Length': body.length} : {}),
      },
      signal: options.signal,
      timeout: options.timeoutMs ?? 30_000,
    }
    await this.kubeConfig.applyToHTTPSOptions(requestOptions)
    const method = requestOptions.method!
    const fence = options.unfenced || !isKubeWrite(method, options.path) ? undefined : this.writeFence
    // Asked here, after the last await, and again once the socket is ready, right before the request is written.
    checkFence(fence, method, options.path)
    // client-node puts a new Agent on every call (no keep-alive: a TCP and TLS handshake per request, which costs the
    // apiserver more CPU than the request itself). Its TLS options stay on the request, so the pooled agent uses
    // them; only a proxy needs the agent client-node made.
    if (!this.kubeConfig.getCurrentCluster()?.proxyUrl) requestOptions.agent = this.agent
    // A retry after a stale pooled connection: a new connection of its own (the pool may hold more stale ones).
    if (fresh && requestOptions.agent === this.agent) requestOptions.agent = false
    const transport = url.protocol === 'https:' ? https : http
    return new Promise((resolve, reject) => {
      const request = transport.request(url, requestOptions, (response) => {
        this.onResponse?.(method, String(response.statusCode ?? 0))
        resolve(response)
      })
      request.on('timeout', () => request.destroy(Object.assign(new Error('request timed out'), {code: 'ETIMEDOUT'})))
      request.on('error', (error: NodeJS.ErrnoException) => {
        this.onResponse?.(method, '<error>')
        if (error.name === 'AbortError' || error instanceof WriteFencedError) return reject(error)
        const code = error.code ?? 'EUNKNOWN'
        const stale = request.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE')
        reject(new (stale ? StaleConnectionError : KubeConnectionError)(this.server, code, `${code}: ${error.message}`))
      })
      if (!fence) return void request.end(body)
      // A new connection may take a while (and a frozen process may wake in between): the fence again at the last
      // moment before the request's bytes are written.
      request.once('socket', (socket) => {
        const write = () => {
          const reason = fence()
          if (reason === undefined) request.end(body)
          else request.destroy(new WriteFencedError(method, options.path, reason))
        }
        if (socket.connecting) socket.once('connect', write)
        else write()
      })
    })
  }
}

const MAX_RETRIES = 10

/** How long to wait before sending again, for an answer that asks for it (else undefined). */
export function retryAfterMs(status: number, retryAfter: string | string[] | undefined, attempt: number): number | undefined {
  if (attempt > MAX_RETRIES || (status !== 429 && (status < 500 || status > 599))) return undefined
  const value = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  return Math.min(Number(value), 10) * 1000
}

function apiErrorFrom(status: number, text: string): KubeApiError {
  try {
    const body = JSON.parse(text) as {kind?: string; reason?: string; message?: string; details?: unknown}
    if (body.kind === 'Status') {
      return new KubeApiError(status, body.reason ?? '', body.message ?? `HTTP ${status}`, body.details)
    }
  } catch {
    // not JSON: fall through
  }
  return new KubeApiError(status, '', text.trim().slice(0, 500) || `HTTP ${status}`)
}
