/**
 * Typed access to the API's collections: a generic CRUD `Resource` over `/api/v1/<collection>/` and the
 * non-CRUD endpoints the operator uses (agent reports, certificate sync, S3 credentials, DNS zone resolution,
 * maintenance-window status, SystemConfig, operator rollout).
 */
import {z} from 'zod'
import {rolloutCluster, rolloutDashboard, type RolloutCluster, type RolloutDashboard} from './rollout-types.js'
import type {ApiRequester, Query, QueryScalar} from './transport.js'
import {ApiNotFoundError} from './errors.js'
import type {
  AgentErrorReportRequest,
  AgentHealthDataRequest,
  CertificateRequest,
  CertificateSyncRequest,
  S3BucketRegionRequest,
  SystemConfigPatch,
  WorkspaceRequest,
} from './requests.js'
import {
  agentEndpoint,
  agentErrorReportResponse,
  agentHealthSubmissionResponse,
  certificateSync,
  dnsZoneSimple,
  maintenanceWindowStatus,
  paginated,
  s3Bucket,
  s3BucketAvailability,
  s3CredentialListResponse,
  systemConfig,
  systemStatus,
  workspace,
  type AgentEndpoint,
  type AgentErrorReportResponse,
  type AgentHealthSubmissionResponse,
  type Certificate,
  type CertificateSync,
  type DNSZoneSimple,
  type MaintenanceWindowStatus,
  type Page,
  type S3Bucket,
  type S3CredentialListResponse,
  type SystemConfig,
  type SystemStatus,
  type Workspace,
} from './schemas.js'

/**
 * List filters (the contract's common set and each list's own); an array is sent as a repeated parameter
 * (`workspaces=a&workspaces=b`), null/undefined are left out.
 */
export type Filters = Record<string, QueryScalar | readonly QueryScalar[] | null | undefined>

export interface PageParams {
  page?: number
  page_size?: number
}

/**
 * Per-call options, the optional last argument of every method that makes requests. `signal` (e.g. a reconcile's
 * AbortSignal) goes into every request the method makes (each page of a `list()`); aborting it stops the in-flight
 * request and any pending retry at once with an ApiNetworkError whose cause is `aborted`.
 */
export interface CallOptions {
  signal?: AbortSignal
}

/** Result of a delete: 204 → `deleted`, 202 → `soft-deleted` (gone once `is_deleted`), 404 → `not-found`. */
export type DeleteOutcome = 'deleted' | 'soft-deleted' | 'not-found'

/** Pages followed by one `list()` at most; a guard against a server whose `next` never ends. */
const maxPages = 10_000

const apiPath = (collection: string) => `/api/v1/${collection}/`

/** Read access to `/api/v1/<collection>/`: page iteration, detail and lookup. */
export class ReadOnlyResource<T> {
  protected readonly pageSchema: z.ZodType<Page<T>>

  constructor(
    protected readonly client: ApiRequester,
    /** The collection path under `/api/v1/`, e.g. `kubernetes/apps`; also the `resource` metric label. */
    readonly collection: string,
    protected readonly schema: z.ZodType<T>,
  ) {
    this.pageSchema = paginated(schema) as unknown as z.ZodType<Page<T>>
  }

  /** `/api/v1/<collection>/<id>/` (the id URL-encoded: DNS record ids contain `::`). */
  itemPath(id: string, action?: string): string {
    return `${apiPath(this.collection)}${encodeURIComponent(id)}/${action ? `${action}/` : ''}`
  }

  /** One page as the API sends it: `{count, next, previous, results}`. */
  async listPage(filters: Filters & PageParams = {}, options: CallOptions = {}): Promise<Page<T>> {
    const {data} = await this.client.request({method: 'GET', path: apiPath(this.collection), query: filters as Query, schema: this.pageSchema, resource: this.collection, signal: options.signal})
    return data
  }

  /**
   * Every matching object, page by page: follows `next` links (kept on the client's origin); when the API leaves
   * `next` out entirely, counts pages up with `page=` until `count` objects were seen. `options.signal` goes into
   * every page request, so aborting it between pages ends the iteration with the aborted ApiNetworkError.
   */
  async *list(filters: Filters & PageParams = {}, options: CallOptions = {}): AsyncGenerator<T, void, undefined> {
    let page = await this.listPage(filters, options)
    let pageNumber = typeof filters.page === 'number' ? filters.page : 1
    let seen = 0
    const visited = new Set<string>()
    for (let pages = 1; ; pages++) {
      for (const item of page.results) yield item
      seen += page.results.length
      if (page.results.length === 0 || pages >= maxPages) return
      if (typeof page.next === 'string' && page.next !== '') {
        if (visited.has(page.next)) return
        visited.add(page.next)
        const {data} = await this.client.request({method: 'GET', path: page.next, schema: this.pageSchema, resource: this.collection, signal: options.signal})
        page = data
      } else if (page.next === undefined && seen < page.count) {
        pageNumber++
        page = await this.listPage({...filters, page: pageNumber}, options)
      } else {
        return
      }
    }
  }

  /** Every matching object in one array (all pages). */
  async listAll(filters: Filters & PageParams = {}, options: CallOptions = {}): Promise<T[]> {
    const all: T[] = []
    for await (const item of this.list(filters, options)) all.push(item)
    return all
  }

  /** The first match (e.g. `{name_exact: 'web', k8s_cluster: id}`), or undefined. */
  async findOne(filters: Filters, options: CallOptions = {}): Promise<T | undefined> {
    const page = await this.listPage(filters, options)
    return page.results[0]
  }

  /** The detail object; ApiNotFoundError when it does not exist. */
  async get(id: string, options: CallOptions = {}): Promise<T> {
    const {data} = await this.client.request({method: 'GET', path: this.itemPath(id), schema: this.schema, resource: this.collection, signal: options.signal})
    return data
  }
}

/** Full CRUD on `/api/v1/<collection>/`. */
export class Resource<T, CreateBody, UpdateBody = Partial<CreateBody>> extends ReadOnlyResource<T> {
  /** POST; a unique-constraint clash is an ApiConflictError (409): use adoptOrCreate to make creates idempotent. */
  async create(body: CreateBody, options: CallOptions = {}): Promise<T> {
    const {data} = await this.client.request({method: 'POST', path: apiPath(this.collection), body, schema: this.schema, resource: this.collection, signal: options.signal, notRepeatable: true})
    return data
  }

  /** PATCH: only the given fields change. */
  async update(id: string, partial: UpdateBody, options: CallOptions = {}): Promise<T> {
    const {data} = await this.client.request({method: 'PATCH', path: this.itemPath(id), body: partial, schema: this.schema, resource: this.collection, signal: options.signal})
    return data
  }

  /** PUT: the whole writable object. */
  async replace(id: string, body: CreateBody, options: CallOptions = {}): Promise<T> {
    const {data} = await this.client.request({method: 'PUT', path: this.itemPath(id), body, schema: this.schema, resource: this.collection, signal: options.signal})
    return data
  }

  /** Idempotent delete: 204 → `deleted`, 202 → `soft-deleted`, 404 → `not-found`. */
  async delete(id: string, options: CallOptions = {}): Promise<DeleteOutcome> {
    try {
      const {status} = await this.client.request({method: 'DELETE', path: this.itemPath(id), resource: this.collection, signal: options.signal})
      return status === 202 ? 'soft-deleted' : 'deleted'
    } catch (error) {
      if (error instanceof ApiNotFoundError) return 'not-found'
      throw error
    }
  }
}

/** Certificates: CRUD plus the operator's sync of a raw cert-manager Certificate. */
export class CertificatesResource extends Resource<Certificate, CertificateRequest> {
  /** `POST /api/v1/certificates/sync/`: creates or updates the Certificate from the raw CR. */
  async sync(body: CertificateSyncRequest, options: CallOptions = {}): Promise<CertificateSync> {
    const {data} = await this.client.request({method: 'POST', path: `${apiPath(this.collection)}sync/`, body, schema: certificateSync, resource: `${this.collection}/sync`, signal: options.signal})
    return data
  }
}

/** S3 buckets: CRUD plus the bucket's credentials (with secrets: never log the answer). */
export class S3BucketsResource extends Resource<S3Bucket, S3BucketRegionRequest> {
  constructor(client: ApiRequester) {
    super(client, 's3/buckets', s3Bucket)
  }

  /** `GET /api/v1/s3/buckets/{id}/credentials/`: access and secret keys. 403 without access, 404 if no bucket. */
  async credentials(id: string, options: CallOptions = {}): Promise<S3CredentialListResponse> {
    const {data} = await this.client.request({method: 'GET', path: this.itemPath(id, 'credentials'), schema: s3CredentialListResponse, resource: `${this.collection}/credentials`, signal: options.signal})
    return data
  }

  /** `GET /api/v1/s3/buckets/available/?bucket=&region=`: whether the name is free in the region (any workspace). */
  async available(bucket: string, region: string, options: CallOptions = {}): Promise<boolean> {
    const {data} = await this.client.request({method: 'GET', path: `${apiPath(this.collection)}available/`, query: {bucket, region}, schema: s3BucketAvailability, resource: `${this.collection}/available`, signal: options.signal})
    return data.available
  }
}

/** DNS zones: CRUD plus resolving the zone for a name. */
export class DnsZonesResource extends Resource<DNSZoneSimple, Record<string, unknown>> {
  constructor(client: ApiRequester) {
    super(client, 'domains/dnszones', dnsZoneSimple)
  }

  /** The longest matching zone in the caller's scope (internal first, then primary external); undefined on 404. */
  async resolve(fqdn: string, options: CallOptions = {}): Promise<DNSZoneSimple | undefined> {
    try {
      const {data} = await this.client.request({method: 'GET', path: `${apiPath(this.collection)}resolve/`, query: {fqdn}, schema: dnsZoneSimple, resource: `${this.collection}/resolve`, signal: options.signal})
      return data
    } catch (error) {
      if (error instanceof ApiNotFoundError) return undefined
      throw error
    }
  }
}

/** Workspaces: CRUD plus the effective maintenance-window status. */
export class WorkspacesResource extends Resource<Workspace, WorkspaceRequest> {
  constructor(client: ApiRequester) {
    super(client, 'workspaces', workspace)
  }

  /** `GET /api/v1/workspaces/{id}/maintenance-window-status/` (workspace → org → system default). */
  async maintenanceWindowStatus(id: string, options: CallOptions = {}): Promise<MaintenanceWindowStatus> {
    const {data} = await this.client.request({method: 'GET', path: this.itemPath(id, 'maintenance-window-status'), schema: maintenanceWindowStatus, resource: `${this.collection}/maintenance-window-status`, signal: options.signal})
    return data
  }
}

/** The agent/operator side: health report (heartbeat), assigned endpoints, error report. */
export class AgentApi {
  constructor(private readonly client: ApiRequester) {}

  /** `POST /api/v1/agent/health/` (201): registers the agent, updates `last_seen`, returns workspace/org. */
  async health(body: AgentHealthDataRequest, options: CallOptions = {}): Promise<AgentHealthSubmissionResponse> {
    const {data} = await this.client.request({method: 'POST', path: '/api/v1/agent/health/', body, schema: agentHealthSubmissionResponse, resource: 'agent/health', signal: options.signal})
    return data
  }

  /** `GET /api/v1/agent/endpoints/` with `X-Agent-ID`: a plain array, not paginated. */
  async endpoints(agentId: string, options: CallOptions = {}): Promise<AgentEndpoint[]> {
    const {data} = await this.client.request({method: 'GET', path: '/api/v1/agent/endpoints/', headers: {'x-agent-id': agentId}, schema: z.array(agentEndpoint), resource: 'agent/endpoints', signal: options.signal})
    return data
  }

  /** `POST /api/v1/agent/errors/` (201). */
  async errors(report: AgentErrorReportRequest, options: CallOptions = {}): Promise<AgentErrorReportResponse> {
    const {data} = await this.client.request({method: 'POST', path: '/api/v1/agent/errors/', body: report, schema: agentErrorReportResponse, resource: 'agent/errors', signal: options.signal})
    return data
  }
}

/** `/api/v1/system/config/`: unknown keys (OPERATOR_BLOCK_VERSION, OPERATOR_ROLLOUT_PERCENTAGE, …) are kept. */
export class SystemConfigApi {
  constructor(private readonly client: ApiRequester) {}

  async get(options: CallOptions = {}): Promise<SystemConfig> {
    const {data} = await this.client.request({method: 'GET', path: '/api/v1/system/config/', schema: systemConfig, resource: 'system/config', signal: options.signal})
    return data
  }

  async patch(partial: SystemConfigPatch, options: CallOptions = {}): Promise<SystemConfig> {
    const {data} = await this.client.request({method: 'PATCH', path: '/api/v1/system/config/', body: partial, schema: systemConfig, resource: 'system/config', signal: options.signal})
    return data
  }
}

/** `GET /api/v1/system/status/`: the API's own status, its version among it (when it says). */
export class SystemStatusApi {
  constructor(private readonly client: ApiRequester) {}

  async get(options: CallOptions = {}): Promise<SystemStatus> {
    const {data} = await this.client.request({method: 'GET', path: '/api/v1/system/status/', schema: systemStatus, resource: 'system/status', signal: options.signal})
    return data
  }
}

/** The operator rollout (platform-admin only; 403 → ApiAuthError with `forbidden`). */
export class OperatorRolloutApi {
  constructor(private readonly client: ApiRequester) {}

  /** `GET /api/v1/operator-rollout/`: the fleet dashboard. */
  async status(options: CallOptions = {}): Promise<RolloutDashboard> {
    const {data} = await this.client.request({method: 'GET', path: '/api/v1/operator-rollout/', schema: rolloutDashboard, resource: 'operator-rollout', signal: options.signal})
    return data
  }

  /** Puts the cluster into the next batch regardless of the canary gate. */
  force(clusterId: string, options: CallOptions = {}): Promise<RolloutCluster> {
    return this.action(clusterId, 'force-update', options)
  }

  /** Keeps the cluster out of rollouts until resumed. */
  pause(clusterId: string, options: CallOptions = {}): Promise<RolloutCluster> {
    return this.action(clusterId, 'pause', options)
  }

  /** Undoes pause. */
  resume(clusterId: string, options: CallOptions = {}): Promise<RolloutCluster> {
    return this.action(clusterId, 'resume', options)
  }

  private async action(clusterId: string, action: 'force-update' | 'pause' | 'resume', options: CallOptions): Promise<RolloutCluster> {
    const {data} = await this.client.request({
      method: 'POST',
      path: `/api/v1/operator-rollout/${encodeURIComponent(clusterId)}/${action}/`,
      schema: rolloutCluster,
      resource: `operator-rollout/${action}`,
      signal: options.signal,
    })
    return data
  }
}
