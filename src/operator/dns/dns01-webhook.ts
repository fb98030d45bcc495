/**
 * The cert-manager DNS01 webhook solver, served as an aggregated API (no separate binary): cert-manager calls
 * `POST /apis/<group_name>/v1alpha1/<solver_name>` on kube-apiserver, which proxies it here over TLS.
 *
 * - `GET /apis/<group>/v1alpha1`: the APIResourceList (the APIService availability check).
 * - `POST /apis/<group>/v1alpha1/<solver>`: a ChallengePayload. `Present` creates the TXT record
 *   `_acme-challenge.<name>` (cert-manager's resolvedFQDN) with the key, in the zone the API resolves for it; a
 *   repeated Present keeps one value. `CleanUp` deletes only the record holding that key, so the apex and the
 *   wildcard challenge of one name (same record name, two keys) each keep theirs. Calls for the same name run one
 *   after the other. Failures answer `success: false` with `status.message`, which cert-manager shows.
 * - `/healthz` (for probes; the only route without authentication).
 *
 * Who may call: only kube-apiserver, by its front-proxy client certificate. The CA and the allowed names come from
 * the ConfigMap kube-system/extension-apiserver-authentication (`requestheader-client-ca-file`,
 * `requestheader-allowed-names`), read at start and again while it cannot be read. Without a certificate, or with
 * one that CA did not sign → 401; a certificate of a name that is not allowed → 403. Authorization of the user is
 * kube-apiserver's (RBAC on `<solver>.<group>`, checked before it proxies).
 *
 * Serving certificate: `tls.crt`/`tls.key` of the Secret `polycrate-operator-dns01-webhook-tls` in the operator
 * namespace, read at start and watched: when cert-manager renews it (a new key, a new CA that cainjector puts into
 * the APIService), the running server serves the new pair from its next TLS handshake on, on every replica, without
 * a restart (serving-certificate.ts; a pair that does not check out is logged and the one in use stays; a deleted
 * Secret leaves the certificate in use). Without the Secret, a self-signed one for `polycrate-operator.<namespace>.svc`
 * is made at start (the APIService then needs `insecureSkipTLSVerify: true`) until a Secret appears.
 */
import {X509Certificate} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'
import type {TLSSocket} from 'node:tls'
import type {Registry} from 'prom-client'
import {z} from 'zod'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {allowMethods, sendJson, sendText, startHttpServer, type RunningHttpServer} from '../../lib/http-server.js'
import type {Logger} from '../../lib/logger.js'
import {CertificateReloader, type CertificateTarget, type KeyPair} from '../../lib/serving-certificate.js'
import {createCertificateOffThread} from '../../lib/x509.js'
import type {ApiSession} from '../agent/api-session.js'
import {DNS01_SERVING_SECRET, EXTENSION_APISERVER_AUTHENTICATION, OPERATOR_NAME} from '../conventions.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {apiClient, DnsApi, dnsWebhookMetrics, KeyedLock, WebhookFailure} from './dns-api.js'
import {normalizeName, txtContent, txtValue, zodReason} from './records.js'
import {mediaType, readJsonBody, serverFeature, webhookHandler} from './serve.js'
import {systemClock, type Clock} from '../../lib/clock.js'

export const DNS01_BODY_LIMIT = 64 * 1024
/** TTL of the challenge records: short, they live for minutes. */
const CHALLENGE_TTL = 60
/** How long a front-proxy configuration that could not be read waits before the next try. */
const AUTH_RETRY_MS = 10_000

// ---------------------------------------------------------------------------------------------------------------------
// pure parts

const challengeRequest = z.object({
  uid: z.string().max(128).optional(),
  action: z.string(),
  type: z.string().optional(),
  dnsName: z.string().min(1).max(254),
  key: z.string().min(1).max(512).regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces or quotes').refine((key) => !key.includes('"'), 'must not contain quotes'),
  resourceNamespace: z.string().max(253).optional(),
  resolvedFQDN: z.string().max(254).optional(),
  resolvedZone: z.string().max(254).optional(),
  allowAmbientCredentials: z.boolean().optional(),
  config: z.unknown().optional(),
})
const challengePayload = z.object({apiVersion: z.string().optional(), kind: z.string().optional(), request: challengeRequest})
export type ChallengeRequest = z.infer<typeof challengeRequest>

export interface Challenge {
  action: 'Present' | 'CleanUp'
  fqdn: string
  key: string
  request: ChallengeRequest
}

/** A ChallengePayload checked: the action, the TXT record's name (resolvedFQDN, else `_acme-challenge.<dnsName>`). */
export function parseChallenge(body: unknown): {ok: true; value: Challenge} | {ok: false; reason: string} {
  const parsed = challengePayload.safeParse(body)
  if (!parsed.success) return {ok: false, reason: zodReason(parsed.error)}
  const request = parsed.data.request
  if (request.action !== 'Present' && request.action !== 'CleanUp') return {ok: false, reason: `request.action "${request.action}" is unknown (Present or CleanUp)`}
  if (request.type !== undefined && request.type !== 'dns-01') return {ok: false, reason: `request.type "${request.type}" is not dns-01`}
  const dnsName = normalizeName(request.dnsName)
  if (!dnsName) return {ok: false, reason: `request.dnsName "${request.dnsName}" is not a DNS name`}
  const fqdn = request.resolvedFQDN ? normalizeName(request.resolvedFQDN) : `_acme-challenge.${dnsName.replace(/^\*\./, '')}`
  if (!fqdn || fqdn.includes('*')) return {ok: false, reason: `request.resolvedFQDN "${request.resolvedFQDN}" is not a DNS name`}
  return {ok: true, value: {action: request.action, fqdn, key: request.key, request}}
}

export interface FrontProxyAuth {
  cas: X509Certificate[]
  /** Empty: every certificate the CA signed. */
  allowedNames: string[]
}

export type AuthResult = {ok: true; name: string} | {ok: false; status: 401 | 403; reason: string}

/** Whether the client certificate is kube-apiserver's front-proxy certificate. */
export function authenticate(peer: X509Certificate | undefined, auth: FrontProxyAuth | undefined, now: Date): AuthResult {
  const only = 'only kube-apiserver (with its front-proxy client certificate) may call this webhook'
  if (!auth) return {ok: false, status: 401, reason: `the front-proxy CA is not known (ConfigMap ${EXTENSION_APISERVER_AUTHENTICATION.namespace}/${EXTENSION_APISERVER_AUTHENTICATION.name} could not be read; the operator needs the Role extension-apiserver-authentication-reader there)`}
  if (!peer) return {ok: false, status: 401, reason: `no client certificate: ${only}`}
  if (now < new Date(peer.validFrom) || now > new Date(peer.validTo)) return {ok: false, status: 401, reason: 'the client certificate is not valid now'}
  if (!auth.cas.some((ca) => peer.checkIssued(ca) && peer.verify(ca.publicKey))) return {ok: false, status: 401, reason: `the client certificate is not signed by the front-proxy CA: ${only}`}
  const name = commonName(peer.subject)
  if (auth.allowedNames.length > 0 && !auth.allowedNames.includes(name)) {
    return {ok: false, status: 403, reason: `the client certificate's name "${name}" is not one of the allowed front-proxy names (${auth.allowedNames.join(', ')})`}
  }
  return {ok: true, name}
}

function commonName(subject: string): string {
  return subject.split('\n').map((line) => line.trim()).find((line) => line.startsWith('CN='))?.slice(3) ?? ''
}

/** The front-proxy CA(s) and allowed names from the extension-apiserver-authentication ConfigMap's data. */
export function frontProxyAuthFrom(data: Record<string, string> | undefined): FrontProxyAuth | undefined {
  const bundle = data?.['requestheader-client-ca-file']
  if (!bundle) return undefined
  const cas = (bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((pem) => new X509Certificate(pem))
  if (cas.length === 0) return undefined
  let allowedNames: string[] = []
  try {
    const names = JSON.parse(data?.['requestheader-allowed-names'] ?? '[]') as unknown
    if (Array.isArray(names)) allowedNames = names.filter((n): n is string => typeof n === 'string')
  } catch {
    allowedNames = []
  }
  return {cas, allowedNames}
}

// ---------------------------------------------------------------------------------------------------------------------
// the feature and the server

export function Dns01Webhook(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'dns01-webhook',
    enabled: (config) => config.dns01_webhook.enabled,
    permissions: [
      // The front-proxy CA that authenticates callers, and the serving certificate (if an admin provides one).
      {group: '', resource: 'configmaps', verbs: ['get'], namespace: EXTENSION_APISERVER_AUTHENTICATION.namespace, names: [EXTENSION_APISERVER_AUTHENTICATION.name]},
      // Watched by name (fieldSelector metadata.name=…), so the Role still names this one Secret.
      {group: '', resource: 'secrets', verbs: ['get', 'list', 'watch'], scope: 'namespace', names: [DNS01_SERVING_SECRET], watchesByName: true},
    ],
    settings: (config) => config.dns01_webhook,
    // What a challenge needs (the DNS API, the front-proxy CA) does not depend on the lease: every replica serves.
    everyReplica: true,
    start(manager, config, _isEstablished, context) {
      const logger = manager.logger.child({component: 'dns01-webhook'})
      const {group_name: groupName, solver_name: solverName, port} = config.dns01_webhook
      const secrets = manager.informer<TlsSecret>({resource: {...resources.secrets, namespace: manager.namespace}, fieldSelector: `metadata.name=${DNS01_SERVING_SECRET}`})
      const running = serverFeature(async () => {
        const tls = await servingCertificate(manager.client, manager.namespace, logger)
        const server = await startDns01Webhook({port, groupName, solverName, session, registry: manager.metrics.registry, logger, tls, loadAuth: () => readFrontProxyAuth(manager.client), clock: manager.clock})
        const reloader = new CertificateReloader(server, logger, 'DNS01 webhook')
        reloader.offer(tls, tls.source)
        const where = `Secret ${manager.namespace}/${DNS01_SERVING_SECRET}`
        const offer = (secret: TlsSecret) => {
          const pair = keyPairOf(secret)
          if (pair) reloader.offer(pair, where)
          else logger.warn('serving certificate Secret has no tls.crt and tls.key: the certificate in use stays', {secret: where})
        }
        const stopWatching = secrets.addHandler({
          onAdd: offer,
          onUpdate: (_old, secret) => offer(secret),
          onDelete: () => logger.warn('serving certificate Secret deleted: the certificate in use stays until the Secret is back', {secret: where}),
        })
        return {
          async close() {
            stopWatching()
            await server.close()
          },
        }
      }, {what: 'DNS01 webhook', hint: 'OperatorConfig dns01_webhook.port', logger, context})
      return {
        problem: running.problem,
        async stop(why) {
          await running.stop(why)
          await manager.releaseInformer(secrets)
        },
      }
    },
  }
}

type TlsSecret = KubeObject & {data?: Record<string, string>}

/** The Secret's tls.crt and tls.key, decoded (undefined if either is missing). */
function keyPairOf(secret: TlsSecret | undefined): KeyPair | undefined {
  const cert = secret?.data?.['tls.crt']
  const key = secret?.data?.['tls.key']
  if (!cert || !key) return undefined
  return {cert: Buffer.from(cert, 'base64').toString('utf8'), key: Buffer.from(key, 'base64').toString('utf8')}
}

async function readFrontProxyAuth(client: KubeClient): Promise<FrontProxyAuth | undefined> {
  const configMap = await client.getOrUndefined<KubeObject & {data?: Record<string, string>}>({...resources.configMaps, ...EXTENSION_APISERVER_AUTHENTICATION})
  return frontProxyAuthFrom(configMap?.data)
}

/** The Secret's certificate, or a self-signed one made now (logged, with what the APIService then needs). */
async function servingCertificate(client: KubeClient, namespace: string, logger: Logger): Promise<KeyPair & {source: string}> {
  const secret = await client.getOrUndefined<TlsSecret>({...resources.secrets, namespace, name: DNS01_SERVING_SECRET}).catch((error: unknown) => {
    logger.warn('serving certificate Secret could not be read', {secret: `${namespace}/${DNS01_SERVING_SECRET}`, error: (error as Error).message})
    return undefined
  })
  const pair = keyPairOf(secret)
  if (pair) return {...pair, source: `Secret ${namespace}/${DNS01_SERVING_SECRET}`}
  const service = OPERATOR_NAME
  const generated = await createCertificateOffThread({
    commonName: `${service}.${namespace}.svc`,
    dnsNames: [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`, 'localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
  })
  logger.info('no serving certificate Secret: using a self-signed certificate made at start (until the Secret appears); the APIService needs insecureSkipTLSVerify: true', {secret: `${namespace}/${DNS01_SERVING_SECRET}`})
  return {cert: generated.cert, key: generated.key, source: 'self-signed, made at start'}
}

export interface Dns01WebhookOptions {
  port: number
  host?: string
  groupName: string
  solverName: string
  session: ApiSession
  registry: Registry
  logger: Logger
  tls: {cert: string; key: string}
  /** The front-proxy CA and names; undefined (or a throw) when they cannot be read. */
  loadAuth(): Promise<FrontProxyAuth | undefined>
  /** The manager's clock (certificate validity, the retries of loadAuth); the system clock by default. */
  clock?: Clock
}

export async function startDns01Webhook(options: Dns01WebhookOptions): Promise<RunningHttpServer & CertificateTarget> {
  const {groupName, solverName, logger} = options
  const metrics = dnsWebhookMetrics(options.registry)
  const clock = options.clock ?? systemClock
  const stopping = new AbortController()
  const locks = new KeyedLock()
  const discoveryPath = `/apis/${groupName}/v1alpha1`
  const solverPath = `${discoveryPath}/${solverName}`

  const authLoader = new FrontProxyAuthLoader(options.loadAuth, logger, clock)
  const frontProxyAuth = () => authLoader.get()
  const auth = await frontProxyAuth()

  const handle = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    if (path === '/healthz') {
      if (!allowMethods(req, res, ['GET'])) return
      return sendText(res, 200, 'ok\n')
    }
    const who = authenticate((req.socket as TLSSocket).getPeerX509Certificate?.(), await frontProxyAuth(), new Date(clock.now()))
    if (!who.ok) throw new WebhookFailure(who.status, who.reason)
    if (path === discoveryPath) {
      if (!allowMethods(req, res, ['GET'])) return
      return sendJson(res, 200, solverResourceList(groupName, solverName))
    }
    if (path !== solverPath) throw new WebhookFailure(404, `no such resource: ${path} (the solver is POST ${solverPath})`)
    if (!allowMethods(req, res, ['POST'])) return
    const type = mediaType(req.headers['content-type']).split(';')[0]
    if (type !== 'application/json') throw new WebhookFailure(415, `Content-Type must be application/json (got "${req.headers['content-type'] ?? ''}")`)
    const parsed = parseChallenge(await readJsonBody(req, DNS01_BODY_LIMIT))
    if (!parsed.ok) throw new WebhookFailure(400, `invalid ChallengePayload: ${parsed.reason}`)
    const challenge = parsed.value
    const result = await locks.run(challenge.fqdn, () => solve(challenge))
    logger.info(`DNS01 ${challenge.action}`, {fqdn: challenge.fqdn, dnsName: challenge.request.dnsName, user: who.name, remoteUser: req.headers['x-remote-user'], success: result.success, ...(result.message ? {message: result.message} : {}), ms: result.ms})
    sendJson(res, 201, challengeAnswer(groupName, challenge, result))
  }

  const solve = (challenge: Challenge) => solveChallenge(() => new DnsApi(apiClient(options.session), 'dns01', metrics), challenge, stopping.signal)

  const server = await startHttpServer({
    name: 'DNS01 webhook',
    address: {host: options.host ?? '::', port: options.port},
    logger,
    tls: {cert: options.tls.cert, key: options.tls.key, requestCert: true, rejectUnauthorized: false, ...(auth ? {ca: auth.cas.map((ca) => ca.toString())} : {})},
    handler: webhookHandler({
      webhook: 'dns01',
      metrics,
      logger,
      route: (path) => (path === '/healthz' ? '/healthz' : path === discoveryPath ? 'discovery' : path === solverPath ? 'challenge' : 'other'),
      handle,
      fail: (res, failure) => sendJson(res, failure.status, {kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: failure.message, reason: statusReason(failure.status), code: failure.status}),
    }),
  })
  return {
    address: server.address,
    setCertificate: server.setCertificate!,
    async close() {
      stopping.abort()
      await server.close()
    },
  }
}

/** The front-proxy CA and names, read once it can be (a failed read is tried again after AUTH_RETRY_MS). */
export class FrontProxyAuthLoader {
  private auth: FrontProxyAuth | undefined
  private triedAt = 0

  constructor(private readonly load: () => Promise<FrontProxyAuth | undefined>, private readonly logger: Pick<Logger, 'warn'>, private readonly clock: Clock = systemClock) {}

  async get(): Promise<FrontProxyAuth | undefined> {
    if (!this.auth && this.clock.now() - this.triedAt >= AUTH_RETRY_MS) {
      this.triedAt = this.clock.now()
      this.auth = await this.load().catch((error: unknown) => {
        this.logger.warn('front-proxy CA could not be read', {error: (error as Error).message})
        return undefined
      })
      if (!this.auth) this.logger.warn(`front-proxy CA not found in ConfigMap ${EXTENSION_APISERVER_AUTHENTICATION.namespace}/${EXTENSION_APISERVER_AUTHENTICATION.name}: every call is refused until it can be read`)
    }
    return this.auth
  }
}

/** The solver's API discovery document (pure). */
export function solverResourceList(groupName: string, solverName: string): Record<string, unknown> {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: `${groupName}/v1alpha1`,
    resources: [{name: solverName, singularName: solverName, namespaced: false, kind: 'ChallengePayload', verbs: ['create']}],
  }
}

/** The ChallengePayload answer to cert-manager (pure). */
export function challengeAnswer(groupName: string, challenge: Challenge, result: {success: boolean; message?: string}): Record<string, unknown> {
  return {
    apiVersion: `${groupName}/v1alpha1`,
    kind: 'ChallengePayload',
    request: challenge.request,
    response: {uid: challenge.request.uid ?? '', success: result.success, ...(result.message ? {status: {metadata: {}, status: 'Failure', message: result.message}} : {})},
  }
}

/** Presents or cleans up one challenge's TXT record; never throws (a failure is `success: false` with a message). */
export async function solveChallenge(dnsApi: () => DnsApi, challenge: Challenge, signal: AbortSignal): Promise<{success: boolean; message?: string; ms: number}> {
  const started = performance.now()
  const ms = () => Math.round((performance.now() - started) * 100) / 100
  try {
    const dns = dnsApi()
    const zone = await dns.resolve(challenge.fqdn, signal)
    if (!zone) {
      if (challenge.action === 'CleanUp') return {success: true, ms: ms()}
      return {success: false, message: `no DNS zone for "${challenge.fqdn}" in the scope of the agent token: the Polycrate API resolves an internal zone first, else the primary external zone; add the zone in Polycrate or use a token of its organization`, ms: ms()}
    }
    const mine = (await dns.records(zone, 'TXT', signal)).filter((record) => record.fqdn === challenge.fqdn && txtValue(record.target) === challenge.key)
    if (challenge.action === 'Present') {
      if (mine.length === 0) await dns.create(zone, challenge.fqdn, 'TXT', txtContent(challenge.key), CHALLENGE_TTL, signal)
    } else {
      for (const record of mine) await dns.delete(record, signal)
    }
    return {success: true, ms: ms()}
  } catch (error) {
    const failure = error instanceof WebhookFailure ? error : new WebhookFailure(500, (error as Error).message)
    return {success: false, message: `${challenge.action} of the TXT record ${challenge.fqdn} failed: ${failure.message}`, ms: ms()}
  }
}

function statusReason(status: number): string {
  const reasons: Record<number, string> = {400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 406: 'NotAcceptable', 413: 'RequestEntityTooLarge', 415: 'UnsupportedMediaType', 503: 'ServiceUnavailable'}
  return reasons[status] ?? (status >= 500 ? 'InternalError' : 'BadRequest')
}
