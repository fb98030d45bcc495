/**
 * A kubeconfig reader without @kubernetes/client-node (whose import alone costs a short-lived command ~0.4 s of CPU),
 * for the CLI's fast path. It reads what a kubeconfig file says the way `loadKubeConfig` (kubeconfig.ts, through
 * client-node) reads it — same sources in the same order, same merge of a $KUBECONFIG list, same messages — and
 * gives a `KubeClient` what it needs: the server, TLS options and the bearer token.
 *
 * The in-cluster service account is read as client-node's `loadFromCluster` reads it: the server from
 * KUBERNETES_SERVICE_HOST/PORT, the mounted CA, and the mounted token read again once it is a minute old (projected
 * tokens are rotated by the kubelet). `polycrate operator run` uses this reader too, so that the operator does not
 * load client-node (about 75 MiB of memory) unless a kubeconfig needs it.
 *
 * What it does not read the same way is "unsupported" (never guessed): then the caller uses `loadKubeConfig`. That is
 * exec and auth-provider plugins, basic auth, impersonation, proxy-url, a context without a user, plain http without
 * insecure-skip-tls-verify, entries client-node would reject, and names that occur in two files of $KUBECONFIG.
 */
import {existsSync, readFileSync} from 'node:fs'
import {isIPv6} from 'node:net'
import type https from 'node:https'
import {homedir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {systemClock} from '../lib/clock.js'

/** A kubeconfig problem the user can fix; the message says how. */
export class KubeConfigError extends Error {
  override name = 'KubeConfigError'
}

export interface KubeConfigOptions {
  /** `--kubeconfig`: wins over everything. */
  kubeconfig?: string
  /** `--context`: a context of the kubeconfig. */
  context?: string
  env?: NodeJS.ProcessEnv
  home?: string
  /** Prefix of the in-cluster service-account mount (tests point it elsewhere). */
  rootPrefix?: string
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

export interface Cluster {
  name: string
  server: string
  caFile?: string
  caData?: string
  skipTLSVerify: boolean
  tlsServerName?: string
}

export interface User {
  name: string
  token?: string
  /** Read when first needed and again once it is older than TOKEN_FILE_MAX_AGE_MS (the in-cluster token). */
  tokenFile?: string
  certFile?: string
  certData?: string
  keyFile?: string
  keyData?: string
}

interface Context {
  name: string
  cluster: string
  user?: string
  namespace?: string
}

interface Parsed {
  clusters: Cluster[]
  users: User[]
  contexts: Context[]
  currentContext?: string
}

/** How long a token read from a token file is used before the file is read again (client-node's FileAuth: 60 s). */
export const TOKEN_FILE_MAX_AGE_MS = 60_000

/** The request options of one kubeconfig identity, for `KubeClient`; what client-node's KubeConfig sets, too. */
export class LightKubeConfig {
  private readonly files = new Map<string, Buffer>()
  private fileToken?: {token: string; readAt: number}

  constructor(
    private readonly cluster: Cluster,
    private readonly user: User,
    private readonly now: () => number = systemClock.now,
  ) {}

  getCurrentCluster(): {server: string} {
    return this.cluster
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    if (this.cluster.skipTLSVerify) options.rejectUnauthorized = false
    if (this.cluster.tlsServerName) options.servername = this.cluster.tlsServerName
    const ca = this.bytes(this.cluster.caFile, this.cluster.caData)
    if (ca) options.ca = ca
    const cert = this.bytes(this.user.certFile, this.user.certData)
    if (cert) options.cert = cert
    const key = this.bytes(this.user.keyFile, this.user.keyData)
    if (key) options.key = key
    const token = this.user.token ?? this.tokenFromFile()
    if (token) options.headers = {...options.headers, Authorization: `Bearer ${token}`}
  }

  private tokenFromFile(): string | undefined {
    const file = this.user.tokenFile
    if (!file) return undefined
    if (!this.fileToken || this.now() - this.fileToken.readAt > TOKEN_FILE_MAX_AGE_MS) {
      this.fileToken = {token: readFileSync(file, 'utf8').trim(), readAt: this.now()}
    }
    return this.fileToken.token
  }

  /** A file (read when first needed, as client-node reads it per request) or base64 data. */
  private bytes(file: string | undefined, data: string | undefined): Buffer | undefined {
    if (file) {
      let bytes = this.files.get(file)
      if (!bytes) this.files.set(file, (bytes = readFileSync(file)))
      return bytes
    }
    return data ? Buffer.from(data, 'base64') : undefined
  }
}

export interface LightLoadedKubeConfig {
  kubeConfig: LightKubeConfig
  /** Where it came from, for messages: a file path or `$KUBECONFIG (…)`. */
  source: string
  server: string
  /** The namespace of the context, if it names one. */
  namespace?: string
}

/** Why this reader cannot stand in for client-node's here. */
export interface Unsupported {
  unsupported: string
}

/** Where the kubeconfig comes from: files (merged in order) and how messages name them, or the service account. */
export type KubeConfigSource = {inCluster: true; source: string} | {inCluster?: false; files: string[]; source: string}

/**
 * Whether this process runs in a Pod with the in-cluster service account: KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT are set (the kubelet sets them in every container) and the token is mounted, which is what
 * client-go's `rest.InClusterConfig` needs. `rootPrefix` moves the mount (tests use a fake one).
 */
export function inClusterServiceAccount(options: Pick<KubeConfigOptions, 'env' | 'rootPrefix'> = {}): boolean {
  const env = options.env ?? process.env
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) && existsSync(`${options.rootPrefix ?? ''}${SERVICE_ACCOUNT_DIR}/token`)
}

/**
 * The order of client-go and controller-runtime (both readers follow it): `--kubeconfig`; then `$KUBECONFIG` (a
 * list; missing files are skipped); then, in a Pod, the in-cluster service account; then `~/.kube/config`. A
 * `$KUBECONFIG` set in a Pod wins over its service account (a CI job or toolbox Pod acting on another cluster).
 * Throws KubeConfigError naming what to fix when none of them exists.
 */
export function kubeConfigSource(options: KubeConfigOptions = {}): KubeConfigSource {
  const env = options.env ?? process.env
  if (options.kubeconfig) {
    const file = path.resolve(options.kubeconfig)
    if (!existsSync(file)) throw new KubeConfigError(`Kubeconfig ${file} does not exist: check the --kubeconfig path.`)
    return {files: [file], source: file}
  }
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(path.delimiter).filter((file) => file.length > 0)
    const present = files.filter((file) => existsSync(file))
    if (present.length === 0) {
      throw new KubeConfigError(
        `No kubeconfig found: $KUBECONFIG names ${files.join(', ')}, which do(es) not exist. Fix $KUBECONFIG or pass --kubeconfig.`,
      )
    }
    return {files: present, source: `$KUBECONFIG (${present.join(path.delimiter)})`}
  }
  if (inClusterServiceAccount(options)) return {inCluster: true, source: 'in-cluster service account'}
  const file = path.join(options.home ?? homedir(), '.kube', 'config')
  if (!existsSync(file)) throw new KubeConfigError(`No kubeconfig found: pass --kubeconfig <file>, set $KUBECONFIG, or create ${file}.`)
  return {files: [file], source: file}
}

/**
 * `--kubeconfig`; then `$KUBECONFIG` (a list, merged as client-node merges it: a later file's current-context wins);
 * then, in a Pod, the in-cluster service account; then `~/.kube/config` (kubeConfigSource).
 * Throws KubeConfigError with `loadKubeConfig`'s messages.
 */
export function loadLightKubeConfig(options: KubeConfigOptions = {}, now: () => number = systemClock.now): LightLoadedKubeConfig | Unsupported {
  const where = kubeConfigSource(options)
  if (where.inCluster) return inCluster(options, where.source, now)
  let parsed = readFile(where.files[0]!)
  for (const file of where.files.slice(1)) {
    if ('unsupported' in parsed) break
    parsed = merge(parsed, readFile(file))
  }
  const {source} = where
  if ('unsupported' in parsed) return parsed

  let current = parsed.currentContext
  if (options.context) {
    if (!parsed.contexts.some((c) => c.name === options.context)) {
      const known = parsed.contexts.map((c) => c.name)
      throw new KubeConfigError(
        `Context "${options.context}" is not in ${source}; available: ${known.length > 0 ? known.join(', ') : 'none'}.`,
      )
    }
    current = options.context
  }
  const context = parsed.contexts.find((c) => c.name === current)
  const cluster = context && parsed.clusters.find((c) => c.name === context.cluster)
  if (!context || !cluster) {
    throw new KubeConfigError(
      `The kubeconfig ${source} has no current context with a cluster: set one with --context or \`kubectl config use-context\`.`,
    )
  }
  // client-node applies no TLS options at all for a context without a user; not worth imitating.
  const user = context.user === undefined ? undefined : parsed.users.find((u) => u.name === context.user)
  if (!user) return {unsupported: `context "${context.name}" has no user`}
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) return {unsupported: 'http without insecure-skip-tls-verify'}
  return {kubeConfig: new LightKubeConfig(cluster, user), source, server: cluster.server, namespace: context.namespace}
}

/** client-node's `loadFromCluster`: https, an IPv6 host in brackets, the mounted CA, token and namespace. */
function inCluster(options: KubeConfigOptions, source: string, now: () => number): LightLoadedKubeConfig | Unsupported {
  const env = options.env ?? process.env
  const host = env.KUBERNETES_SERVICE_HOST ?? ''
  const port = env.KUBERNETES_SERVICE_PORT ?? ''
  // client-node then refuses every request (http without insecure-skip-tls-verify): its error, not a guess of ours.
  if (['80', '8080', '8001'].includes(port)) return {unsupported: 'in-cluster service account on an http port'}
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`
  const dir = `${options.rootPrefix ?? ''}${SERVICE_ACCOUNT_DIR}`
  const cluster: Cluster = {name: 'inCluster', server, caFile: `${dir}/ca.crt`, skipTLSVerify: false}
  const namespaceFile = `${dir}/namespace`
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8') : undefined
  return {kubeConfig: new LightKubeConfig(cluster, {name: 'inClusterUser', tokenFile: `${dir}/token`}, now), source, server, namespace}
}

/** client-node's `mergeConfig`: the later current-context wins; a name in both it rejects (unsupported here). */
function merge(into: Parsed, other: Parsed | Unsupported): Parsed | Unsupported {
  if ('unsupported' in other) return other
  for (const key of ['clusters', 'users', 'contexts'] as const) {
    const names = new Set(into[key].map((entry) => entry.name))
    if (other[key].some((entry) => names.has(entry.name))) return {unsupported: `the same ${key.slice(0, -1)} name in two files of $KUBECONFIG`}
  }
  return {
    clusters: [...into.clusters, ...other.clusters],
    users: [...into.users, ...other.users],
    contexts: [...into.contexts, ...other.contexts],
    currentContext: other.currentContext || into.currentContext,
  }
}

type Doc = Record<string, unknown>
const isDoc = (value: unknown): value is Doc => typeof value === 'object' && value !== null && !Array.isArray(value)
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)

/** The message for a kubeconfig file without a document (empty, or only comments). */
export function emptyKubeconfigMessage(file: string): string {
  return `The kubeconfig ${file} is empty (no clusters, users or contexts): point --kubeconfig or $KUBECONFIG at one that names a cluster `
    + '(`kubectl config view --raw` shows the one kubectl uses), or fill it with `kubectl config set-cluster`, `set-credentials` and `set-context`.'
}

/** One file, read as client-node reads it (relative file paths are relative to the file's directory). */
function readFile(file: string): Parsed | Unsupported {
  let doc: unknown
  try {
    doc = yaml.load(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new KubeConfigError(`Cannot read kubeconfig ${file}: ${(error as Error).message}`)
  }
  if (doc === null || doc === undefined) throw new KubeConfigError(emptyKubeconfigMessage(file))
  return parse(doc, file)
}

/**
 * The cluster and user of the current context of a kubeconfig given as text (e.g. from a Secret): no files are read,
 * so only embedded data counts. Throws KubeConfigError when it is no YAML.
 */
export function currentIdentity(text: string, source: string): {cluster: Cluster; user: User} | Unsupported {
  let doc: unknown
  try {
    doc = yaml.load(text)
  } catch (error) {
    throw new KubeConfigError(`Cannot read kubeconfig ${source}: ${(error as Error).message}`)
  }
  const parsed = parse(doc, source, false)
  if ('unsupported' in parsed) return parsed
  const context = parsed.contexts.find((c) => c.name === parsed.currentContext)
  const cluster = context && parsed.clusters.find((c) => c.name === context.cluster)
  const user = context?.user === undefined ? undefined : parsed.users.find((u) => u.name === context.user)
  if (!cluster || !user) return {unsupported: 'its current context names no cluster or no user'}
  return {cluster, user}
}

function parse(doc: unknown, file: string, filesAllowed = true): Parsed | Unsupported {
  const unsupported = (why: string): Unsupported => ({unsupported: `${file}: ${why}`})
  if (!isDoc(doc)) return unsupported('not a mapping')
  const list = (key: string): Doc[] | undefined => {
    const value = doc[key]
    if (!Array.isArray(value)) return [] // client-node: no list, no entries
    return value.every(isDoc) ? value : undefined
  }
  const [clusterList, userList, contextList] = [list('clusters'), list('users'), list('contexts')]
  if (!clusterList || !userList || !contextList) return unsupported('an entry that is not a mapping')
  const dir = path.dirname(file)
  const absolute = (value: unknown) => {
    const name = text(value)
    return name === undefined || path.isAbsolute(name) ? name : path.join(dir, name)
  }

  const clusters: Cluster[] = []
  for (const entry of clusterList) {
    const cluster = entry.cluster
    const server = isDoc(cluster) ? text(cluster.server) : undefined
    if (!text(entry.name) || !isDoc(cluster) || !server) return unsupported('a cluster client-node rejects')
    if (cluster['proxy-url']) return unsupported('proxy-url')
    clusters.push({
      name: entry.name as string,
      server: server.replace(/\/$/, ''),
      caFile: absolute(cluster['certificate-authority']),
      caData: text(cluster['certificate-authority-data']),
      skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
      tlsServerName: text(cluster['tls-server-name']),
    })
  }

  const users: User[] = []
  for (const entry of userList) {
    if (!text(entry.name)) return unsupported('a user client-node rejects')
    const user = isDoc(entry.user) ? entry.user : {}
    for (const key of ['exec', 'auth-provider', 'username', 'password', 'as']) {
      if (user[key]) return unsupported(`user "${String(entry.name)}" uses ${key}`)
    }
    let token = text(user.token)
    // client-node reads `token-file` (relative to the working directory) as it is, when it loads the file.
    if (!token && text(user['token-file']) && filesAllowed) {
      try {
        token = readFileSync(user['token-file'] as string).toString()
      } catch {
        return unsupported('an unreadable token-file')
      }
    }
    users.push({
      name: entry.name as string,
      token,
      certFile: absolute(user['client-certificate']),
      certData: text(user['client-certificate-data']),
      keyFile: absolute(user['client-key']),
      keyData: text(user['client-key-data']),
    })
  }

  const contexts: Context[] = []
  for (const entry of contextList) {
    const context = entry.context
    if (!text(entry.name) || !isDoc(context) || !text(context.cluster)) return unsupported('a context client-node rejects')
    contexts.push({
      name: entry.name as string,
      cluster: context.cluster as string,
      user: text(context.user),
      namespace: text(context.namespace),
    })
  }
  return {clusters, users, contexts, currentContext: text(doc['current-context'])}
}
