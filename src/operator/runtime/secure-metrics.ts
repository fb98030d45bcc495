/**
 * `/metrics` served securely (`operator run --metrics-secure`), as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` serves it (kubebuilder's default since v4.1):
 *
 * - HTTPS, with the certificate of `--metrics-cert-dir` (tls.crt/tls.key, reloaded when the files change:
 *   serving-certificate.ts) or a self-signed one made at start: without the flag, or while the directory has no
 *   files (the manifests mount the Secret optional; the files are taken once they appear). The self-signed one is made in a worker thread
 *   while the server already listens (handshakes fail for the moment it takes), so neither the event loop nor the
 *   way to ready waits for it.
 * - Each caller's bearer token is checked by a TokenReview (no token, or one the apiserver does not accept → 401
 *   `Unauthorized`), then its right to `get` the non-resource URL `/metrics` by a SubjectAccessReview (not allowed →
 *   403 `Authorization denied for user <name>`); a review that fails → 500, not cached. The scraper needs a
 *   ClusterRole with `nonResourceURLs: ["/metrics"], verbs: ["get"]` (METRICS_READER_RULE), the operator
 *   `create` on tokenreviews and subjectaccessreviews (METRICS_AUTH_PERMISSIONS).
 * - Results are cached as controller-runtime caches them: a token's review for 1 minute (accepted or not), an
 *   allowed decision for 5 minutes, a denied one for 30 seconds; requests in flight with the same token share one
 *   review. Tokens are kept only as SHA-256 digests.
 */
import {createHash} from 'node:crypto'
import type {IncomingMessage} from 'node:http'
import {timeoutSignal, type Clock} from '../../lib/clock.js'
import type {RunningHttpServer} from '../../lib/http-server.js'
import {silentLogger, type Logger} from '../../lib/logger.js'
import {CertificateReloader, checkKeyPair, readCertificateDir, watchCertificateDir, type KeyPair} from '../../lib/serving-certificate.js'
import {createCertificateOffThread} from '../../lib/x509.js'
import {OPERATOR_NAME} from '../conventions.js'
import type {Permission} from '../permissions.js'
import {parseBindAddress, startMetricsServer, type MetricsAccess} from './http-servers.js'
import type {OperatorMetrics} from './metrics.js'

export const METRICS_PATH = '/metrics'

/** What the operator needs to check its scrapers (for its ClusterRole when --metrics-secure is on). */
export const METRICS_AUTH_PERMISSIONS: readonly Permission[] = [
  {group: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create']},
  {group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verbs: ['create']},
]

/** The rule a scraper's ClusterRole needs (kubebuilder's `metrics-reader`). */
export const METRICS_READER_RULE = {nonResourceURLs: [METRICS_PATH], verbs: ['get']} as const

/** How long review results are used again: controller-runtime's filter (CacheTTL, AllowCacheTTL, DenyCacheTTL). */
export interface MetricsAuthCacheTtls {
  tokenMs: number
  allowMs: number
  denyMs: number
}
export const METRICS_AUTH_CACHE_TTLS: MetricsAuthCacheTtls = {tokenMs: 60_000, allowMs: 5 * 60_000, denyMs: 30_000}
/** controller-runtime's TokenAccessReviewTimeout; the same for a SubjectAccessReview here. */
export const METRICS_REVIEW_TIMEOUT_MS = 10_000
/** Entries per cache; the oldest go first (a scraper fleet is small; a flood of random tokens must not grow memory). */
const MAX_CACHE_ENTRIES = 1024

interface UserInfo {
  username: string
  uid?: string
  groups?: string[]
  extra?: Record<string, string[]>
}

interface TokenReview {
  status?: {authenticated?: boolean; user?: UserInfo; error?: string}
}

interface SubjectAccessReview {
  status?: {allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string}
}

/** The token of an `Authorization: Bearer <token>` header, as Kubernetes' bearer-token authenticator reads it. */
export function bearerToken(header: string | undefined): string | undefined {
  const parts = (header ?? '').trim().split(' ')
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer' || parts[1] === '') return undefined
  return parts[1]
}

/** A map whose entries expire, holding at most `max` (the oldest inserted go first). */
class ExpiringCache<V> {
  private readonly entries = new Map<string, {value: V; expires: number}>()
  constructor(private readonly max: number) {}

  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.expires > now) return entry.value
    this.entries.delete(key)
    return undefined
  }

  set(key: string, value: V, expires: number): void {
    this.entries.delete(key)
    this.entries.set(key, {value, expires})
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
  }
}

/** What the authorizer needs of a KubeClient: creating the two reviews. */
export interface ReviewClient {
  create(ref: {group: string; version: string; plural: string}, body: object, query?: undefined, options?: {signal?: AbortSignal}): Promise<unknown>
}

export interface MetricsAuthorizerOptions {
  client: ReviewClient
  clock: Clock
  ttls?: MetricsAuthCacheTtls
  logger?: Logger
}

/**
 * Decides who may read /metrics: TokenReview, then SubjectAccessReview, each result cached (see the module
 * comment). Counts the reviews it sends (for tests and the log).
 */
export class MetricsAuthorizer {
  readonly reviews = {tokenReviews: 0, subjectAccessReviews: 0}
  private readonly ttls: MetricsAuthCacheTtls
  private readonly logger: Logger
  private readonly users = new ExpiringCache<{user?: UserInfo}>(MAX_CACHE_ENTRIES)
  private readonly decisions = new ExpiringCache<{allowed: boolean; reason: string}>(MAX_CACHE_ENTRIES)
  private readonly pending = new Map<string, Promise<unknown>>()

  constructor(private readonly options: MetricsAuthorizerOptions) {
    this.ttls = options.ttls ?? METRICS_AUTH_CACHE_TTLS
    this.logger = options.logger ?? silentLogger
  }

  /** Whether the request may read `path`: its Authorization header and method decide. */
  async check(request: {authorization?: string; method: string; path: string}): Promise<MetricsAccess> {
    const token = bearerToken(request.authorization)
    if (!token) return {allowed: false, status: 401, message: 'Unauthorized'}
    let user: UserInfo | undefined
    try {
      user = await this.authenticate(token)
    } catch (error) {
      this.logger.warn('metrics: authentication failed (TokenReview)', {error: (error as Error).message})
      return {allowed: false, status: 500, message: 'Authentication failed'}
    }
    if (!user) return {allowed: false, status: 401, message: 'Unauthorized'}
    const verb = request.method.toLowerCase()
    let decision: {allowed: boolean; reason: string}
    try {
      decision = await this.authorize(user, verb, request.path)
    } catch (error) {
      this.logger.warn('metrics: authorization failed (SubjectAccessReview)', {user: user.username, error: (error as Error).message})
      return {allowed: false, status: 500, message: `Authorization for user ${user.username} failed`}
    }
    if (!decision.allowed) {
      this.logger.debug('metrics: access denied', {user: user.username, verb, path: request.path, reason: decision.reason})
      return {allowed: false, status: 403, message: `Authorization denied for user ${user.username}`}
    }
    return {allowed: true, user: user.username}
  }

  /** The token's user (undefined: not authenticated); cached either way, an error is not. */
  private authenticate(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('hex')
    const now = this.options.clock.now()
    const cached = this.users.get(key, now)
    if (cached) return Promise.resolve(cached.user)
    return this.once(`token:${key}`, async () => {
      this.reviews.tokenReviews++
      const review = await this.create<TokenReview>({group: 'authentication.k8s.io', version: 'v1', plural: 'tokenreviews'}, {
        apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: {token},
      })
      const user = review.status?.authenticated && review.status.user?.username ? review.status.user : undefined
      this.users.set(key, {user}, this.options.clock.now() + this.ttls.tokenMs)
      if (!user) this.logger.debug('metrics: token not accepted', {reason: review.status?.error ?? 'not authenticated'})
      return user
    })
  }

  private authorize(user: UserInfo, verb: string, path: string): Promise<{allowed: boolean; reason: string}> {
    // As Kubernetes' authenticator: every authenticated user is in system:authenticated.
    const groups = [...new Set([...(user.groups ?? []), 'system:authenticated'])]
    const key = JSON.stringify([user.username, user.uid ?? '', [...groups].sort(), user.extra ?? {}, verb, path])
    const cached = this.decisions.get(key, this.options.clock.now())
    if (cached) return Promise.resolve(cached)
    return this.once(`access:${key}`, async () => {
      this.reviews.subjectAccessReviews++
      const review = await this.create<SubjectAccessReview>({group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews'}, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {user: user.username, ...(user.uid ? {uid: user.uid} : {}), groups, ...(user.extra ? {extra: user.extra} : {}), nonResourceAttributes: {path, verb}},
      })
      if (!review.status?.allowed && review.status?.evaluationError && !review.status.denied) {
        // No decision but an error (e.g. a webhook authorizer failed): like a failed review, not cached.
        throw new Error(`SubjectAccessReview evaluation error: ${review.status.evaluationError}`)
      }
      const decision = {allowed: review.status?.allowed === true, reason: review.status?.reason ?? ''}
      this.decisions.set(key, decision, this.options.clock.now() + (decision.allowed ? this.ttls.allowMs : this.ttls.denyMs))
      return decision
    })
  }

  private async create<T>(ref: {group: string; version: string; plural: string}, body: object): Promise<T> {
    const timeout = timeoutSignal(this.options.clock, METRICS_REVIEW_TIMEOUT_MS)
    try {
      return (await this.options.client.create(ref, body, undefined, {signal: timeout.signal})) as T
    } finally {
      timeout.clear()
    }
  }

  /** Runs `work` once for concurrent callers with the same key. */
  private once<T>(key: string, work: () => Promise<T>): Promise<T> {
    const running = this.pending.get(key) as Promise<T> | undefined
    if (running) return running
    const promise = work().finally(() => this.pending.delete(key))
    this.pending.set(key, promise)
    return promise
  }
}

export interface SecureMetricsOptions {
  /** tls.crt and tls.key to serve, reloaded when they change; without it a self-signed certificate made at start. */
  certDir?: string
  /** How often the certificate directory is read anyway (default 10 s; file-system events come first). */
  certDirPollMs?: number
  ttls?: MetricsAuthCacheTtls
}

export interface SecureMetricsServerOptions extends SecureMetricsOptions {
  /** The raw flag value (`:8080`, `127.0.0.1:8080`, `0` to disable). */
  bindAddress: string
  metrics: OperatorMetrics
  client: ReviewClient
  clock: Clock
  /** The operator's namespace: the self-signed certificate names its metrics Service there. */
  namespace: string
  logger?: Logger
}

export interface SecureMetricsServer extends RunningHttpServer {
  authorizer: MetricsAuthorizer
  reloader: CertificateReloader
}

/**
 * Serves /metrics over HTTPS to authorized callers until closed; undefined when the bind address disables it.
 * Rejects (the operator does not start) when the certificate directory has no usable pair.
 */
export async function startSecureMetricsServer(options: SecureMetricsServerOptions): Promise<SecureMetricsServer | undefined> {
  if (!parseBindAddress(options.bindAddress, '--metrics-bind-address')) return undefined
  const logger = (options.logger ?? silentLogger).child({component: 'metrics'})
  const {certDir} = options
  let initial: KeyPair | undefined
  if (certDir !== undefined) {
    try {
      initial = await readCertificateDir(certDir)
      checkKeyPair(initial)
    } catch (error) {
      // No files (the Deployment mounts the Secret optional: it is not there yet): self-signed until they appear.
      // Files that are there but do not make a pair are a mistake to stop at.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`--metrics-cert-dir ${certDir}: no usable tls.crt and tls.key (${(error as Error).message}); give a directory with a PEM certificate and its key, or leave the flag out for a self-signed certificate`)
      }
      initial = undefined
      logger.info('metrics: no tls.crt and tls.key in the certificate directory; a self-signed certificate until they appear', {dir: certDir})
    }
  }
  const authorizer = new MetricsAuthorizer({client: options.client, clock: options.clock, ttls: options.ttls, logger})
  const server = await startMetricsServer({
    bindAddress: options.bindAddress,
    metrics: options.metrics,
    logger: options.logger,
    tls: initial ?? {},
    authorize: (req: IncomingMessage) => authorizer.check({authorization: req.headers.authorization, method: req.method ?? 'GET', path: (req.url ?? '/').replace(/[?#].*$/, '')}),
  })
  if (!server) return undefined
  const reloader = new CertificateReloader({setCertificate: (pair) => server.setCertificate!(pair)}, logger, 'metrics')
  let watcher: {stop(): void} | undefined
  // Once the directory gave a pair, the self-signed one (made off thread) never replaces it.
  let fromDir = false
  if (certDir !== undefined) {
    if (initial) {
      fromDir = true
      reloader.offer(initial, certDir)
    }
    let lastError = ''
    watcher = watchCertificateDir(certDir, {
      clock: options.clock,
      pollMs: options.certDirPollMs,
      onPair: (pair) => {
        lastError = ''
        fromDir = true
        reloader.offer(pair, certDir)
      },
      onError: (error) => {
        if (error.message === lastError) return
        lastError = error.message
        // Files still absent while the self-signed certificate serves: expected, not a warning.
        if (!fromDir && (error as NodeJS.ErrnoException).code === 'ENOENT') return
        logger.warn('metrics: certificate directory not readable; the certificate in use stays', {dir: certDir, error: error.message})
      },
    })
  }
  if (!initial) {
    const service = `${OPERATOR_NAME}-metrics`
    const names = [service, `${service}.${options.namespace}`, `${service}.${options.namespace}.svc`, `${service}.${options.namespace}.svc.cluster.local`, 'localhost']
    createCertificateOffThread({commonName: `${service}.${options.namespace}.svc`, dnsNames: names, ipAddresses: ['127.0.0.1', '::1']}).then(
      (pair) => !fromDir && reloader.offer(pair, 'self-signed, made at start'),
      (error: Error) => logger.error('metrics: the self-signed certificate could not be made; /metrics answers no TLS handshake', {error: error.message}),
    )
  }
  return {
    address: server.address,
    setCertificate: server.setCertificate,
    authorizer,
    reloader,
    async close() {
      watcher?.stop()
      await server.close()
    },
  }
}
