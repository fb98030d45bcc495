/** The API simulator's core: state, server, test set-up API, request helpers and the generic collection handlers. */
import {randomBytes, randomUUID} from 'node:crypto'
import {createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {setTimeout as sleep} from 'node:timers/promises'
import {bearerToken, canSee, Tokens, type Principal, type TokenKind} from './auth.js'
import {CloudSimulation} from './cloud.js'
import {Faults} from './faults.js'
import {authenticationFailed, conflict, fieldError, forbidden, noContent, notFound, ok, parseError, serverError, throttled, unauthenticated, validationError, type Reply} from './http.js'
import {findConflict, modelFor, READ_ONLY_FIELDS, validateFields, type FieldError, type JsonObject, type Permissions, type ResourceModel} from './models.js'
import {S3Side} from './s3.js'
import {MonitoringSide} from './monitoring.js'
import {applyFilters, applyOrdering, paginate, Store, type StoredObject} from './store.js'

export interface RequestLogEntry {
  method: string
  /** The URL path, without the query string. */
  path: string
  /** Query parameters; repeated ones joined with ",". */
  query: Record<string, string>
  /** The answer's status; 0 when a fault dropped the connection without an answer. */
  status: number
  /** Simulated time (ms since the epoch) when the request arrived. */
  at: number
  /** The collection path under /api/v1/ without ids and actions (`kubernetes/apps`, `agent/health`, `operator-rollout`). */
  resource: string
  /** The parsed JSON body (the raw text when it is not JSON), when there was one. Issued tokens are scrubbed. */
  body?: unknown
  /** The caller's address (which replica of an operator in a cluster sent it). */
  remoteAddress?: string
  /** The caller's port (with the address, which connection, so which process, sent it). */
  remotePort?: number
  /** The caller's User-Agent (the operator's names the controller a request was made for). */
  userAgent?: string
}

export interface SimulatorOptions {
  /** 0 (default) = an ephemeral port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Silence after which an agent is CRITICAL and a downtime is opened. Default 15 minutes. */
  heartbeatCriticalAfterMs?: number
  /** The clock (ms since the epoch); `advanceTime` adds to it. Default Date.now. */
  now?: () => number
  /** Default page size of lists. Default 100. */
  pageSizeDefault?: number
  /** How many GETs of a soft-deleted object still answer 200 with `is_deleted: true` before it is 404. Default 1. */
  softDeleteVisibleGets?: number
  /** Called with every log entry as it is written (the `api-sim` script prints them). Replaceable later: `sim.onRequest`. */
  onRequest?: (entry: RequestLogEntry) => void
}

export type Parsed<T> = {ok: true; value: T} | {ok: false; reply: Reply}

export interface Call {
  method: string
  url: URL
  /** `http://<Host header>`: base of absolute URLs in answers. */
  base: string
  segments: string[]
  headers: IncomingHttpHeaders
  rawBody: string
  principal: Principal
  /** The collection for the request log; the router refines it. */
  resource: string
}


export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const FIFTEEN_MINUTES = 15 * 60 * 1000

/** SystemConfig foreign keys: a blank string clears them. */
export const SYSTEM_CONFIG_FOREIGN_KEYS = new Set([
  'system_owner_organization',
  'system_host_cluster',
  'system_apm_cluster',
  'default_support_product',
  'default_s3_product',
  'default_assistant_product',
  'default_loadbalancer_product',
  'default_k8s_volume_product',
  'default_internal_dns_zone_product',
  'default_external_dns_zone_product',
  'system_domain_registrar',
  'default_s3_bucket_cluster',
  'system_default_pop',
  'k8s_cluster_backup_s3_cluster',
  'default_k8s_cluster_dns_zone',
])

/** The label keys the API expands for a K8sApp. */
export const LABEL_KEYS = [
  'polycrate_actionrun_id',
  ...['flavor', 'id', 'implementation', 'kind', 'name', 'type', 'version'].map((key) => `polycrate_block_${key}`),
  'polycrate_worker_block_purpose',
  ...['id', 'kind', 'name', 'remote_address', 'remote_port'].map((key) => `polycrate_endpoint_${key}`),
  'polycrate_host_id',
  'polycrate_host_name',
  ...['byoa', 'id', 'name'].map((key) => `polycrate_k8sapp_${key}`),
  'polycrate_k8scluster_id',
  'polycrate_k8scluster_name',
  ...['deployment_checksum', 'id', 'ip_address', 'name'].map((key) => `polycrate_k8scontrolplane_${key}`),
  'polycrate_k8sworkerpool_id',
  'polycrate_k8sworkerpool_name',
  ...['deployment_checksum', 'id', 'ip_address', 'name'].map((key) => `polycrate_loadbalancerinstance_${key}`),
  'polycrate_loadbalancerregion_id',
  'polycrate_loadbalancerregion_name',
  'polycrate_controlled_by',
  'polycrate_managed_by',
  ...['id', 'name', 'type'].map((key) => `polycrate_object_${key}`),
  'polycrate_criticality',
  'polycrate_priority',
  ...['id', 'name', 'slug'].map((key) => `polycrate_organization_${key}`),
  'polycrate_workspace_id',
  'polycrate_workspace_name',
  'polycrate_workspace_git_bootstrap',
  'polycrate_log_source',
  'polycrate_system_name',
  'polycrate_transport',
]

/** Health-report `status` → Agent `state` (decided here: unhealthy and critical both defer the rollout). */
export const STATE_OF_HEALTH_STATUS: Record<string, string> = {healthy: 'OK', degraded: 'WARNING', unhealthy: 'CRITICAL', critical: 'CRITICAL'}

export const APPS_ALIAS: ResourceModel = (() => {
  const apps = modelFor('kubernetes/apps')
  if (!apps) throw new Error('kubernetes/apps model missing')
  return {...apps, filters: {...apps.filters, name: {field: 'name', kind: 'exact'}}}
})()

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

export function includes(value: unknown, id: string): boolean {
  return Array.isArray(value) ? value.includes(id) : value === id
}

export function slugify(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'x'
  )
}

export function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/** Collection path of an /api/v1/ path: everything before the first id-looking segment. */
export function resourceOfPath(pathname: string): string {
  if (!pathname.startsWith('/api/v1/')) return pathname
  const segments = pathname.slice('/api/v1/'.length).split('/').filter((segment) => segment !== '')
  const idAt = segments.findIndex((segment) => UUID.test(segment) || segment.includes('::') || segment.includes('%3A'))
  return (idAt === -1 ? segments : segments.slice(0, idAt)).join('/')
}

export function flattenQuery(query: URLSearchParams): Record<string, string> {
  const flat: Record<string, string> = {}
  for (const key of new Set(query.keys())) flat[key] = query.getAll(key).join(',')
  return flat
}

export function maintenanceActive(maintenance: JsonObject, now: number): boolean {
  if (maintenance.draft === true) return false
  if (maintenance.is_active === true) return true
  const start = typeof maintenance.start === 'string' ? Date.parse(maintenance.start) : Number.NaN
  const end = typeof maintenance.end === 'string' ? Date.parse(maintenance.end) : Number.NaN
  if (Number.isNaN(start)) return false
  return start <= now && (Number.isNaN(end) || now <= end)
}

/** The simulator's state, the server, the test API and the generic collection handlers; the routes of each resource extend it. */
export abstract class SimulatorCore {
  /** Every answered request (and every dropped one, status 0), oldest first. Never holds a token. */
  readonly requests: RequestLogEntry[] = []
  /** Fault injection: `set(config)` replaces the configuration, `clear()` removes it. */
  readonly faults = new Faults()
  /** The agent's PoP and the delay before a load balancer instance gets its IP (cloud.ts). */
  readonly cloud = new CloudSimulation()
  /** S3 regions and clusters, quotas, pending credentials (s3.ts). */
  readonly s3 = new S3Side()
  /** `GET /api/v1/system/status/`'s body (the contract names no fields; `version` is what `polycrate version` reads). */
  systemStatus: Record<string, unknown> = {status: 'ok', version: '0.0.0-simulator'}
  /** SystemConfig as `GET/PATCH /api/v1/system/config/` serve it; tests may change it directly. */
  systemConfig: Record<string, unknown> = {
    SYSTEM_NAME: 'Polycrate API simulator',
    OPERATOR_BLOCK_VERSION: null,
    OPERATOR_ROLLOUT_PERCENTAGE: 100,
    default_s3_bucket_cluster: this.s3.regions[0]!.clusterId,
    global_debug_mode: false,
    DISCOVERY_ENABLED: true,
    RECONCILIATION_ENABLED: true,
    SYSTEM_RECONCILIATION_INTERVAL_SECONDS: 300,
    SYSTEM_DISCOVERY_INTERVAL_SECONDS: 300,
  }

  protected readonly store = new Store()
  protected readonly tokens = new Tokens()
  protected readonly server: Server
  protected readonly clock: () => number
  protected readonly heartbeatCriticalAfterMs: number
  protected readonly pageSizeDefault: number
  protected readonly softDeleteVisibleGets: number
  /** Called synchronously with every log entry as it is written, after the request took effect; a test may replace it. */
  onRequest: ((entry: RequestLogEntry) => void) | undefined
  protected offsetMs = 0
  protected address = ''
  /** `resource/id` of soft-deleted objects → GETs that still answer 200. */
  protected readonly softDeletedGets = new Map<string, number>()
  /** bucket id → its primary credential (secrets live here, never on the bucket object). */
  protected readonly s3Credentials = new Map<string, JsonObject>()
  /** agent id → the id of the downtime opened because it went silent. */
  protected readonly silenceDowntimes = new Map<string, string>()
  protected readonly rolloutFlags = new Map<string, {paused: boolean; forced: boolean}>()
  /** Endpoint assignments and the check results stored per assignment (monitoring.ts). */
  readonly monitoring = new MonitoringSide()


  protected constructor(options: SimulatorOptions) {
    this.clock = options.now ?? Date.now
    this.heartbeatCriticalAfterMs = options.heartbeatCriticalAfterMs ?? FIFTEEN_MINUTES
    this.pageSizeDefault = options.pageSizeDefault ?? 100
    this.softDeleteVisibleGets = options.softDeleteVisibleGets ?? 1
    this.onRequest = options.onRequest
    this.server = createServer((request, response) => void this.handle(request, response))
  }

  /** `http://127.0.0.1:<port>`, no trailing slash. */
  get url(): string {
    return this.address
  }

  protected listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, host, () => {
        this.server.off('error', reject)
        const {port: actual} = this.server.address() as AddressInfo
        this.address = `http://${host.includes(':') ? `[${host}]` : host}:${actual}`
        resolve()
      })
    })
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.close((error) => (error ? reject(error) : resolve()))
      this.server.closeAllConnections()
    })
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Set-up and assertions for tests

  createOrganization(name: string): {id: string; name: string; slug: string} {
    const organization = this.commit('organizations', this.build('organizations', {name, slug: slugify(name)}))
    return {id: organization.id, name, slug: String(organization.slug)}
  }

  createWorkspace(input: {name: string; organizationId: string}): {id: string; name: string} {
    if (!this.store.find('organizations', input.organizationId)) throw new Error(`createWorkspace: no organization ${input.organizationId}`)
    const workspace = this.commit('workspaces', this.build('workspaces', {name: input.name, organization: input.organizationId}))
    return {id: workspace.id, name: input.name}
  }

  /** A token; 'agent' tokens are scoped to one workspace (workspace/org filled in on create), 'platform-admin' may use the operator-rollout endpoints and see everything. */
  issueToken(input: {kind: TokenKind; workspaceId?: string; organizationId?: string}): string {
    if (input.kind === 'platform-admin') return this.tokens.issue({kind: input.kind, workspaceId: null, organizationId: null})
    let organizationId = input.organizationId ?? null
    if (input.workspaceId !== undefined) {
      const workspace = this.store.find('workspaces', input.workspaceId)
      if (!workspace) throw new Error(`issueToken: no workspace ${input.workspaceId}`)
      const owner = text(workspace.organization) ?? null
      if (organizationId !== null && organizationId !== owner) {
        throw new Error(`issueToken: workspace ${input.workspaceId} does not belong to organization ${organizationId}`)
      }
      organizationId = owner
    } else if (input.kind === 'agent') {
      throw new Error('issueToken: an agent token needs a workspaceId')
    }
    if (organizationId !== null && !this.store.find('organizations', organizationId)) {
      throw new Error(`issueToken: no organization ${organizationId}`)
    }
    return this.tokens.issue({kind: input.kind, workspaceId: input.workspaceId ?? null, organizationId})
  }

  revokeToken(token: string): void {
    this.tokens.revoke(token)
  }

  clearRequests(): void {
    this.requests.length = 0
  }

  /**
   * The stored objects of a collection (copies), without soft-deleted ones unless `includeDeleted`. Besides the
   * API collections, the simulator keeps `organizations`, `downtimes`, `agent/health` (health reports),
   * `agent/errors` (error reports) and `check-results` (the check results of health reports).
   */
  list(resource: string, options: {includeDeleted?: boolean} = {}): Array<Record<string, unknown>> {
    this.sweepAgents()
    return this.store
      .all(resource)
      .filter((object) => options.includeDeleted || object.is_deleted !== true)
      .map((object) => structuredClone(object))
  }

  /** One stored object (a copy), soft-deleted ones included (they carry `is_deleted: true`). */
  get(resource: string, id: string): Record<string, unknown> | undefined {
    this.sweepAgents()
    const object = this.store.find(resource, id)
    return object ? structuredClone(object) : undefined
  }

  /** Stores an object as the API would on create: fills id (unless given), timestamps, state, workspace/organization from its cluster, etc. Throws on a unique-constraint conflict. Required fields are not checked. */
  insert(resource: string, object: Record<string, unknown>): Record<string, unknown> {
    const candidate = this.build(resource, object)
    const target = modelFor(resource)
    if (target) {
      const clash = findConflict(target, candidate, this.live(resource))
      if (clash) throw new Error(`insert ${resource}: ${clash.rule.code} (conflicts with ${clash.existing.id})`)
    }
    const stored = this.commit(resource, candidate)
    this.sweepAgents()
    return structuredClone(stored)
  }

  /** Merges `patch` into a stored object (id and created_at stay) and bumps `updated_at`. Throws when it does not exist or on a conflict. */
  update(resource: string, id: string, patch: Record<string, unknown>): Record<string, unknown> {
    const existing = this.store.find(resource, id)
    if (!existing) throw new Error(`update: no ${resource} ${id}`)
    const candidate: StoredObject = {...existing, ...patch, id, created_at: existing.created_at, updated_at: this.isoNow()}
    const target = modelFor(resource)
    if (target) {
      const clash = findConflict(target, candidate, this.live(resource))
      if (clash) throw new Error(`update ${resource}: ${clash.rule.code} (conflicts with ${clash.existing.id})`)
    }
    this.store.save(resource, candidate)
    this.sweepAgents()
    return structuredClone(candidate)
  }

  /** Hard-deletes behind the operator's back (no soft delete), like a manual delete in the UI. Throws when it does not exist. */
  deleteBehindBack(resource: string, id: string): void {
    if (!this.store.remove(resource, id)) throw new Error(`deleteBehindBack: no ${resource} ${id}`)
    this.forget(resource, id)
  }

  /** Advance simulated time (works with options.now or an internal offset), e.g. to make silent agents CRITICAL. */
  advanceTime(ms: number): void {
    this.offsetMs += ms
    this.sweepAgents()
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Time, building and storing objects

  protected now(): number {
    return this.clock() + this.offsetMs
  }

  protected isoNow(): string {
    return new Date(this.now()).toISOString()
  }

  protected liveObjects(resource: string): StoredObject[] {
    return this.store.all(resource).filter((object) => object.is_deleted !== true)
  }

  /** The live objects of a collection, one by one (unique checks: no copy of the whole collection per create). */
  protected *live(resource: string): Generator<StoredObject> {
    for (const object of this.store.values(resource)) if (object.is_deleted !== true) yield object
  }

  /** A new object as it would be stored: id, timestamps, the model's defaults, workspace/organization derived. No side effects. */
  protected build(resource: string, input: JsonObject): StoredObject {
    const now = this.isoNow()
    const {id, ...fields} = input
    const explicitId = typeof id === 'string' && id !== ''
    const target = modelFor(resource)
    const object: StoredObject = {
      id: explicitId ? id : randomUUID(),
      ...(target ? this.commonDefaults(target) : {}),
      ...fields,
      created_at: fields.created_at ?? now,
      updated_at: fields.updated_at ?? now,
    }
    this.deriveScope(object)
    this.applyDefaults(resource, object, explicitId)
    return object
  }

  protected commonDefaults(target: ResourceModel): JsonObject {
    const scope: JsonObject =
      target.scope === 'global' ? {} : target.scope === 'self' ? {organization: null} : {workspace: null, organization: null}
    return {
      ...scope,
      is_deleted: false,
      deleted_at: null,
      archived: false,
      archived_at: null,
      archived_reason: '',
      state: 'OK',
      labels: {},
      annotations: {},
    }
  }

  /** workspace from the object's cluster, organization from its workspace, when they are not set. */
  protected deriveScope(object: JsonObject): void {
    if ('workspace' in object && (object.workspace === null || object.workspace === undefined)) {
      const cluster = text(object.k8s_cluster) ? this.store.find('kubernetes/clusters', String(object.k8s_cluster)) : undefined
      if (cluster && text(cluster.workspace)) object.workspace = cluster.workspace
    }
    if ('organization' in object && (object.organization === null || object.organization === undefined) && text(object.workspace)) {
      object.organization = this.store.find('workspaces', String(object.workspace))?.organization ?? null
    }
  }

  protected applyDefaults(resource: string, object: StoredObject, explicitId: boolean): void {
    const setDefault = (field: string, value: unknown) => {
      if (object[field] === undefined) object[field] = value
    }
    switch (resource) {
      case 'endpoints':
        setDefault('kind', 'http')
        setDefault('remote_port', null)
        setDefault('spec', null)
        setDefault('agents', [])
        setDefault('do_not_monitor', false)
        break
      case 'kubernetes/apps':
        setDefault('installed_version', null)
        setDefault('namespace', null)
        break
      case 'agents':
        setDefault('kind', 'agent')
        setDefault('version', null)
        setDefault('is_active', true)
        setDefault('last_seen', null)
        setDefault('reported_agent_id', null)
        setDefault('source_pop', null)
        setDefault('k8s_app', null)
        setDefault('name', object.reported_agent_id ?? object.id)
        break
      case 'workspaces':
        setDefault('slug', slugify(String(object.name ?? object.id)))
        setDefault('endpoint_monitoring_mode', 'auto')
        setDefault('pop', null)
        break
      case 'backups/backups': {
        const scheduleName = isObject(object.metadata) ? text(object.metadata.schedule_name) : undefined
        if (object.schedule === undefined && scheduleName) {
          const schedule = this.liveObjects('backups/backup-schedules').find(
            (candidate) => candidate.name === scheduleName && candidate.k8s_cluster === object.k8s_cluster,
          )
          object.schedule = schedule?.id ?? null
        }
        break
      }
      case 's3/buckets':
        this.s3.bucketDefaults(object, this.systemConfig.default_s3_bucket_cluster)
        setDefault('versioning_status', 'Disabled')
        setDefault('encryption_enabled', false)
        setDefault('current_usage', 0)
        setDefault('current_usage_bytes', 0)
        setDefault('current_object_count', 0)
        break
      case 'domains/dnszones':
        if (typeof object.name === 'string') object.name = object.name.toLowerCase().replace(/\.$/, '')
        setDefault('primary_zone', true)
        setDefault('provider', null)
        break
      case 'domains/dnsrecords': {
        const zone = text(object.dns_zone) ? this.store.find('domains/dnszones', String(object.dns_zone)) : undefined
        if (zone) {
          object.organization = zone.organization ?? null
          object.workspace = zone.workspace ?? null
          // External zones' records have the composite id <zone_uuid>::<provider_id>.
          if (!explicitId && zone.kind === 'external') object.id = `${zone.id}::${randomBytes(6).toString('hex')}`
        }
        setDefault('ttl', 3600)
        setDefault('priority', null)
        break
      }
      case 'loadbalancers/instances':
        setDefault('name', `lb-${object.id.slice(0, 8)}`)
        setDefault('ports', [])
        break
      case 'downtimes':
        setDefault('started_at', object.created_at)
        setDefault('ended_at', null)
        setDefault('is_active', true)
        break
    }
  }

  /** Stores a built object, with the side effects of creation (S3 keys, load balancer address). */
  protected commit(resource: string, object: StoredObject): StoredObject {
    if (resource === 's3/buckets' && !this.s3Credentials.has(object.id)) {
      const credential = this.s3.newCredential(object, String(object.created_at))
      const accessKey = String(credential.access_key)
      this.s3Credentials.set(object.id, credential)
      object.user_id ??= `sim-${object.id.slice(0, 8)}`
      object.credential ??= {id: credential.id, name: credential.name, api_user: accessKey}
      object.access_keys ??= [{id: credential.id, access_key: accessKey, primary: true}]
    }
    if (resource === 'loadbalancers/instances') this.cloud.created(object, this.now())
    this.store.save(resource, object)
    return object
  }

  /** Forgets what the simulator keeps beside a removed object. */
  protected forget(resource: string, id: string): void {
    this.softDeletedGets.delete(`${resource}/${id}`)
    if (resource === 's3/buckets') this.s3Credentials.delete(id)
    if (resource === 'kubernetes/clusters') this.rolloutFlags.delete(id)
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The server

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const at = this.now()
    const method = (request.method ?? 'GET').toUpperCase()
    const base = `http://${request.headers.host ?? this.address.replace(/^http:\/\//, '')}`
    let url: URL
    try {
      url = new URL(request.url ?? '/', base)
    } catch {
      url = new URL('/', base)
    }
    let rawBody = ''
    try {
      rawBody = await readBody(request)
    } catch {
      return // the client went away
    }
    const entry: RequestLogEntry = {
      method, path: url.pathname, query: flattenQuery(url.searchParams), status: 0, at, resource: resourceOfPath(url.pathname),
      remoteAddress: request.socket.remoteAddress?.replace(/^::ffff:/, ''),
      remotePort: request.socket.remotePort,
      userAgent: request.headers['user-agent'],
    }
    if (rawBody.trim() !== '') entry.body = this.scrub(this.parseForLog(rawBody))
    for (const [key, value] of Object.entries(entry.query)) entry.query[key] = String(this.scrub(value))

    const plan = this.faults.plan(method, url.pathname)
    if (plan.latencyMs > 0) await sleep(plan.latencyMs)
    if (plan.outcome.kind === 'drop') {
      this.log(entry)
      request.socket.destroy()
      return
    }
    if (plan.outcome.kind === 'rate-limit') return this.respond(response, entry, throttled(plan.outcome.retryAfterSeconds))
    if (plan.outcome.kind === 'error') {
      return this.respond(response, entry, serverError(plan.outcome.status, 'Simulated fault (FaultConfig.errorRate).'))
    }

    let reply: Reply
    try {
      reply = this.dispatch(method, url, base, request.headers, rawBody, entry)
    } catch (error) {
      reply = serverError(500, `Simulator error: ${error instanceof Error ? error.message : String(error)}`)
    }
    this.respond(response, entry, reply)
  }

  protected respond(response: ServerResponse, entry: RequestLogEntry, reply: Reply): void {
    entry.status = reply.status
    this.log(entry)
    if (response.destroyed || response.writableEnded) return
    const headers: Record<string, string> = {...reply.headers}
    if (reply.body === undefined) {
      response.writeHead(reply.status, {...headers, 'content-length': '0'})
      response.end()
      return
    }
    const payload = JSON.stringify(reply.body)
    response.writeHead(reply.status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(payload)),
    })
    response.end(payload)
  }

  protected log(entry: RequestLogEntry): void {
    this.requests.push(entry)
    this.onRequest?.(entry)
  }

  protected parseForLog(rawBody: string): unknown {
    try {
      return JSON.parse(rawBody) as unknown
    } catch {
      return rawBody
    }
  }

  /** Replaces every issued token found in a value by "[REDACTED]" (tokens belong nowhere in the log). */
  protected scrub(value: unknown): unknown {
    if (typeof value === 'string') {
      let scrubbed = value
      for (const token of this.tokens.everIssued()) scrubbed = scrubbed.split(token).join('[REDACTED]')
      return scrubbed
    }
    if (Array.isArray(value)) return value.map((item) => this.scrub(item))
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.scrub(item)]))
    return value
  }

  protected dispatch(method: string, url: URL, base: string, headers: IncomingHttpHeaders, rawBody: string, entry: RequestLogEntry): Reply {
    if (!url.pathname.startsWith('/api/v1/')) return notFound()
    if (!url.pathname.endsWith('/')) return notFound(`Not found. API paths end with "/" (try ${url.pathname}/).`)

    const authorization = headers.authorization
    if (authorization === undefined || authorization.trim() === '') return unauthenticated()
    const token = bearerToken(authorization)
    if (token === undefined) return authenticationFailed('Invalid authorization header. Use "Authorization: Bearer <token>".')
    const principal = this.tokens.lookup(token)
    if (!principal) return authenticationFailed()

    let segments: string[]
    try {
      segments = url.pathname
        .slice('/api/v1/'.length, -1)
        .split('/')
        .map((segment) => decodeURIComponent(segment))
    } catch {
      return notFound()
    }
    this.sweepAgents()
    const call: Call = {method, url, base, segments, headers, rawBody, principal, resource: entry.resource}
    const reply = this.route(call)
    entry.resource = call.resource
    return reply
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Request helpers

  protected jsonBody(call: Call): Parsed<unknown> {
    if (call.rawBody.trim() === '') return {ok: true, value: undefined}
    try {
      return {ok: true, value: JSON.parse(call.rawBody) as unknown}
    } catch (error) {
      return {ok: false, reply: parseError(`JSON parse error - ${error instanceof Error ? error.message : String(error)}`)}
    }
  }

  /** The body as an object; an empty body is `{}` when `emptyAllowed`, otherwise a 400. */
  protected objectBody(call: Call, emptyAllowed = false): Parsed<JsonObject> {
    const parsed = this.jsonBody(call)
    if (!parsed.ok) return parsed
    if (parsed.value === undefined) {
      return emptyAllowed ? {ok: true, value: {}} : {ok: false, reply: fieldError('non_field_errors', 'required', 'No data provided.')}
    }
    if (!isObject(parsed.value)) {
      const got = Array.isArray(parsed.value) ? 'list' : typeof parsed.value
      return {ok: false, reply: fieldError('non_field_errors', 'invalid', `Invalid data. Expected a dictionary, but got ${got}.`)}
    }
    return {ok: true, value: parsed.value}
  }

  protected allowed(principal: Principal, target: ResourceModel, action: keyof Permissions): boolean {
    return principal.kind !== 'agent' || target.agent[action]
  }

  protected visible(call: Call, target: ResourceModel, object: JsonObject): boolean {
    return canSee(call.principal, target, object)
  }

  /** A visible object of `target` by id; soft-deleted ones only with `includeDeleted`. */
  protected findVisible(call: Call, target: ResourceModel, id: string, includeDeleted = false): StoredObject | undefined {
    const object = this.store.find(target.resource, id)
    if (!object || !this.visible(call, target, object)) return undefined
    if (object.is_deleted === true && !includeDeleted) return undefined
    return object
  }

  /** What an answer shows of a stored object: `url`, DNS records' zone expanded, a cluster's apps. */
  protected render(target: ResourceModel, object: StoredObject, base: string): JsonObject {
    const shown: JsonObject = {...object, url: `${base}/api/v1/${target.resource}/${encodeURIComponent(object.id)}/`}
    if (target.resource === 'domains/dnsrecords') {
      const zone = text(object.dns_zone) ? this.store.find('domains/dnszones', String(object.dns_zone)) : undefined
      if (zone) shown.dns_zone = this.zoneSimple(zone, base)
    }
    if (target.resource === 'kubernetes/clusters') {
      shown.kubernetes_apps = this.liveObjects('kubernetes/apps')
        .filter((app) => app.k8s_cluster === object.id)
        .map((app) => ({
          id: app.id,
          name: app.name ?? null,
          namespace: app.namespace ?? null,
          installed_version: app.installed_version ?? null,
          state: app.state ?? null,
          url: `${base}/api/v1/kubernetes/apps/${app.id}/`,
        }))
    }
    return structuredClone(shown)
  }

  protected zoneSimple(zone: StoredObject, base: string): JsonObject {
    return {
      id: zone.id,
      name: zone.name,
      kind: zone.kind,
      provider: zone.provider ?? null,
      primary_zone: zone.primary_zone !== false,
      url: `${base}/api/v1/domains/dnszones/${zone.id}/`,
    }
  }

  /** Foreign keys in `fields` must name visible, live objects (400 `does_not_exist` otherwise). */
  protected checkReferences(call: Call, target: ResourceModel, candidate: JsonObject, fields?: ReadonlySet<string>): FieldError[] {
    const errors: FieldError[] = []
    for (const [field, resource] of Object.entries(target.references)) {
      if (fields && !fields.has(field)) continue
      const value = candidate[field]
      if (value === undefined || value === null) continue
      const referenced = modelFor(resource)
      if (typeof value !== 'string') {
        errors.push({attr: field, code: 'incorrect_type', detail: `Incorrect type. Expected pk value, received ${typeof value}.`})
      } else if (!referenced || !this.findVisible(call, referenced, value)) {
        errors.push({attr: field, code: 'does_not_exist', detail: `Invalid pk "${value}" - object does not exist.`})
      }
    }
    return errors
  }

  /** Model-specific checks beyond required/patterns/choices. */
  protected extraErrors(target: ResourceModel, candidate: JsonObject): FieldError[] {
    if (target.resource === 'domains/dnszones' && candidate.kind === 'external' && !text(candidate.provider)) {
      return [{attr: 'provider', code: 'required', detail: 'External zones need a provider.'}]
    }
    if (target.resource === 's3/buckets' && !text(candidate.region)) {
      return [{attr: 'region', code: 'required', detail: 'No region given and SystemConfig.default_s3_bucket_cluster is not set.'}]
    }
    return []
  }

  protected conflictReply(target: ResourceModel, candidate: JsonObject): Reply | undefined {
    const clash = findConflict(target, candidate, this.live(target.resource))
    if (!clash) return undefined
    return conflict(clash.rule.code, `${target.label} with this ${clash.rule.fields.join(', ')} already exists (${clash.existing.id}).`)
  }

  /**
   * workspace/organization of a new object. A workspace-scoped token supplies both (the body cannot override
   * them); other tokens name the workspace (`workspace_id` or `workspace`) and/or organization
   * (`organization_id` or `organization`) in the body, or leave them to be derived from the object's cluster.
   */
  protected createScope(call: Call, target: ResourceModel, input: JsonObject): Parsed<JsonObject> {
    const {principal} = call
    if (target.scope === 'global') return {ok: true, value: {}}
    const doesNotExist = (attr: string, value: string): Parsed<JsonObject> => ({
      ok: false,
      reply: fieldError(attr, 'does_not_exist', `Invalid pk "${value}" - object does not exist.`),
    })
    const organizationAttr = input.organization_id !== undefined ? 'organization_id' : 'organization'
    let organization = text(input.organization_id) ?? text(input.organization) ?? null

    if (target.scope === 'self') {
      organization = principal.organizationId ?? organization
      if (organization === null) return {ok: false, reply: fieldError('organization', 'required', 'This field is required.')}
      if (!this.store.find('organizations', organization)) return doesNotExist(organizationAttr, organization)
      return {ok: true, value: {organization}}
    }
    if (principal.workspaceId !== null) return {ok: true, value: {workspace: principal.workspaceId, organization: principal.organizationId}}

    const workspaceAttr = input.workspace_id !== undefined ? 'workspace_id' : 'workspace'
    const workspaceId = text(input.workspace_id) ?? text(input.workspace) ?? null
    if (workspaceId !== null) {
      const workspaceModel = modelFor('workspaces')
      const workspace = workspaceModel ? this.findVisible(call, workspaceModel, workspaceId) : undefined
      if (!workspace) return doesNotExist(workspaceAttr, workspaceId)
      organization = text(workspace.organization) ?? null
    } else if (organization !== null) {
      const known = this.store.find('organizations', organization)
      if (!known || (principal.organizationId !== null && principal.organizationId !== organization)) return doesNotExist(organizationAttr, organization)
    }
    return {ok: true, value: {workspace: workspaceId, organization: organization ?? principal.organizationId}}
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Generic collection handlers

  protected listObjects(call: Call, target: ResourceModel): Reply {
    if (!this.allowed(call.principal, target, 'read')) return forbidden()
    let objects = this.liveObjects(target.resource).filter((object) => this.visible(call, target, object))
    if (target.resource === 'domains/dnsrecords' && !call.url.searchParams.has('dns_zone')) {
      // "For external zones ?dns_zone= is required on list": without it, only internal zones' records are listed.
      objects = objects.filter((record) => this.store.find('domains/dnszones', String(record.dns_zone))?.kind !== 'external')
    }
    const filtered = applyOrdering(applyFilters(objects, call.url.searchParams, target), call.url.searchParams.get('ordering'))
    const page = paginate(filtered, call.url, this.pageSizeDefault)
    if (!page) return notFound('Invalid page.')
    return ok({...page, results: page.results.map((object) => this.render(target, object as StoredObject, call.base))})
  }

  protected createObject(call: Call, target: ResourceModel): Reply {
    if (!this.allowed(call.principal, target, 'create')) return forbidden()
    const body = this.objectBody(call)
    if (!body.ok) return body.reply
    const input: JsonObject = {...body.value}
    for (const field of READ_ONLY_FIELDS) delete input[field]
    const scope = this.createScope(call, target, input)
    if (!scope.ok) return scope.reply
    delete input.workspace_id
    delete input.organization_id
    const candidate = this.build(target.resource, {...input, ...scope.value})

    if (target.resource === 'endpoints' && candidate.organization === null) {
      return fieldError('organization_id', 'required', 'organization_id (or workspace_id) is required with a token that is not scoped to a workspace.')
    }
    const errors = [...validateFields(target, candidate), ...this.extraErrors(target, candidate), ...this.checkReferences(call, target, candidate)]
    const quota = target.resource === 's3/buckets' ? this.s3.quotaError(candidate.workspace, this.liveObjects('s3/buckets')) : undefined
    if (quota) errors.push(quota)
    if (errors.length > 0) return validationError(errors)
    const clash = this.conflictReply(target, candidate)
    if (clash) return clash
    return ok(this.render(target, this.commit(target.resource, candidate), call.base), 201)
  }

  protected retrieveObject(call: Call, target: ResourceModel, id: string): Reply {
    if (!this.allowed(call.principal, target, 'read')) return forbidden()
    const object = this.findVisible(call, target, id, true)
    if (!object) return notFound()
    if (object.is_deleted === true) {
      // Soft-deleted: still answers with is_deleted=true for a few GETs ("poll until is_deleted=true and then 404").
      const key = `${target.resource}/${id}`
      const remaining = this.softDeletedGets.get(key) ?? 0
      if (remaining <= 0) return notFound()
      this.softDeletedGets.set(key, remaining - 1)
    }
    return ok(this.render(target, object, call.base))
  }

  /** PUT and PATCH. As in DRF, fields a PUT leaves out keep their values; PUT checks every required field. Scope fields cannot move. */
  protected updateObject(call: Call, target: ResourceModel, id: string, partial: boolean): Reply {
    if (!this.allowed(call.principal, target, 'update')) return forbidden()
    const existing = this.findVisible(call, target, id)
    if (!existing) return notFound()
    const body = this.objectBody(call, partial)
    if (!body.ok) return body.reply
    const input: JsonObject = {...body.value}
    for (const field of [...READ_ONLY_FIELDS, 'workspace', 'organization', 'workspace_id', 'organization_id']) delete input[field]
    const candidate: StoredObject = {...existing, ...input, id, updated_at: this.isoNow()}
    const changed = partial ? new Set(Object.keys(input)) : undefined
    // PATCH checks the fields it sends; PUT checks its body as a whole (every required field must be in it).
    const checked = partial ? candidate : {...input, workspace: existing.workspace, organization: existing.organization}
    const errors = [
      ...validateFields(target, checked, changed),
      ...this.extraErrors(target, candidate),
      ...this.checkReferences(call, target, candidate, changed),
    ]
    if (errors.length > 0) return validationError(errors)
    const clash = this.conflictReply(target, candidate)
    if (clash) return clash
    this.store.save(target.resource, candidate)
    return ok(this.render(target, candidate, call.base))
  }

  protected deleteObject(call: Call, target: ResourceModel, id: string): Reply {
    if (!this.allowed(call.principal, target, 'delete')) return forbidden()
    const existing = this.findVisible(call, target, id, true)
    if (!existing) return notFound()
    if (!target.softDelete) {
      this.store.remove(target.resource, id)
      this.forget(target.resource, id)
      return noContent(204)
    }
    if (existing.is_deleted !== true) {
      existing.is_deleted = true
      existing.deleted_at = this.isoNow()
      existing.updated_at = this.isoNow()
      this.softDeletedGets.set(`${target.resource}/${id}`, this.softDeleteVisibleGets)
    }
    return noContent(202)
  }

  /** `{"archive_reason": "…"}` archives; no body unarchives. */
  protected archiveObject(call: Call, target: ResourceModel, id: string): Reply {
    if (!this.allowed(call.principal, target, 'update')) return forbidden()
    const object = this.findVisible(call, target, id)
    if (!object) return notFound()
    const body = this.objectBody(call, true)
    if (!body.ok) return body.reply
    const archive = Object.keys(body.value).length > 0
    object.archived = archive
    object.archived_at = archive ? this.isoNow() : null
    object.archived_reason = archive ? String(body.value.archive_reason ?? '') : ''
    object.updated_at = this.isoNow()
    return ok({id: object.id, archived: object.archived, archived_at: object.archived_at, archived_reason: object.archived_reason})
  }

  protected installApp(call: Call, id: string, install: boolean): Reply {
    const target = APPS_ALIAS
    if (!this.allowed(call.principal, target, 'update')) return forbidden()
    const app = this.findVisible(call, target, id)
    if (!app) return notFound()
    Object.assign(app, {
      installed: install,
      uninstalled: !install,
      installation_running: false,
      uninstallation_running: false,
      installation_failed: false,
      uninstallation_failed: false,
      updated_at: this.isoNow(),
      ...(install ? {last_installation: this.isoNow()} : {}),
    })
    return ok(this.render(target, app, call.base))
  }


  /** Agents going silent (agents.ts). */
  protected abstract sweepAgents(): void
  /** Every request's route (index.ts). */
  protected abstract route(call: Call): Reply
}
