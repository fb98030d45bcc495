/**
 * What the simulator knows about each collection under /api/v1/: required fields, allowed values, uniqueness
 * rules, foreign keys it checks, list filters, who may see it and what an agent token may do with it. All of it
 * comes from the Polycrate API's contract (its models and endpoints); the comments say where the contract was
 * silent and the simulator decided.
 */

export type JsonObject = Record<string, unknown>

/** Names the contract gives the slug pattern `^[a-z0-9]+(?:-[a-z0-9]+)*$` (Backup, BackupSchedule, Certificate). */
export const DNS_LABEL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
/** Django's SlugField (Endpoint and Host names are "slug"). */
export const SLUG = /^[-a-zA-Z0-9_]+$/

/**
 * Whose objects a scoped token sees:
 * - `workspace`: objects whose `scopeField` (default `workspace`) is the token's workspace;
 * - `organization`: objects of the token's organization (DNS, downtimes: the contract says "org scope");
 * - `global`: everyone sees everything (artifacts);
 * - `self`: the workspaces collection, where a workspace token sees only its own workspace.
 */
export type Scope = 'workspace' | 'organization' | 'global' | 'self'

export interface Permissions {
  read: boolean
  create: boolean
  update: boolean
  delete: boolean
}

const FULL: Permissions = {read: true, create: true, update: true, delete: true}
const NO_DELETE: Permissions = {read: true, create: true, update: true, delete: false}
const READ_ONLY: Permissions = {read: true, create: false, update: false, delete: false}

export interface UniqueRule {
  /** The constraint name, sent as the error `code` of the 409. */
  code: string
  fields: readonly string[]
}

export interface FieldFilter {
  field: string
  /** `exact`: string equality, several values (repeated or comma-separated) are OR-ed; `bool`: true/false. */
  kind: 'exact' | 'bool'
}

export interface ResourceModel {
  /** The collection path under /api/v1/, e.g. `kubernetes/apps`. */
  resource: string
  /** Human name for messages. */
  label: string
  /** DELETE answers 202 and only marks the object (`is_deleted`), instead of 204. */
  softDelete: boolean
  scope: Scope
  scopeField: string
  /** Required on create (and PUT). `workspace`/`organization` count as given when the token supplies them. */
  required: readonly string[]
  patterns: Readonly<Record<string, RegExp>>
  choices: Readonly<Record<string, readonly string[]>>
  unique: readonly UniqueRule[]
  /** Foreign keys checked on write: field → collection. A missing (or invisible) target is a 400 `does_not_exist`. */
  references: Readonly<Record<string, string>>
  /** Resource-specific list filters (the common set is in store.ts). Unknown query parameters are ignored, as django-filter does. */
  filters: Readonly<Record<string, FieldFilter>>
  searchFields: readonly string[]
  /** What an agent token may do (the contract's agent-token permission table; the rest decided here). */
  agent: Permissions
}

const exact = (field: string): FieldFilter => ({field, kind: 'exact'})
const bool = (field: string): FieldFilter => ({field, kind: 'bool'})

function model(spec: Partial<ResourceModel> & Pick<ResourceModel, 'resource' | 'label'>): ResourceModel {
  return {
    softDelete: false,
    scope: 'workspace',
    scopeField: 'workspace',
    required: [],
    patterns: {},
    choices: {},
    unique: [],
    references: {},
    filters: {},
    searchFields: ['name', 'display_name'],
    agent: FULL,
    ...spec,
  }
}

const BACKUP_PROVIDERS = ['velero', 'cloudnativepg', 'custom'] as const
const BACKUP_KINDS = ['cluster', 'app', 'database'] as const
const backupFilters = {
  backup_provider_app: exact('backup_provider_app'),
  k8s_cluster: exact('k8s_cluster'),
  provider: exact('provider'),
  s3_bucket: exact('s3_bucket'),
  schedule: exact('schedule'),
  source_namespace: exact('source_namespace'),
  status: exact('status'),
}

export const MODELS: readonly ResourceModel[] = [
  model({
    resource: 'endpoints',
    label: 'Endpoint',
    softDelete: true,
    required: ['name', 'remote_address'],
    patterns: {name: SLUG},
    choices: {kind: ['icmp', 'http', 'tcp', 'dns']},
    unique: [{code: 'unique_endpoint_name_per_workspace', fields: ['name', 'workspace']}],
    references: {k8s_cluster: 'kubernetes/clusters', k8s_app: 'kubernetes/apps'},
    filters: {
      k8s_app: exact('k8s_app'),
      k8s_cluster: exact('k8s_cluster'),
      loadbalancer_instance: exact('loadbalancer_instance'),
      region: exact('region'),
      remote_address: exact('remote_address'),
      remote_port: exact('remote_port'),
      resolved_ip: exact('resolved_ip'),
      s3_cluster: exact('s3_cluster'),
    },
    searchFields: ['name', 'display_name', 'remote_address'],
  }),
  model({
    resource: 'kubernetes/clusters',
    label: 'K8sCluster',
    softDelete: true,
    required: ['kind'],
    choices: {kind: ['polycrate', 'generic', 'loopback']},
    unique: [{code: 'unique_k8s_cluster_per_workspace', fields: ['workspace']}],
    filters: {is_host_cluster: bool('is_host_cluster'), kubernetes_version: exact('kubernetes_version')},
    searchFields: ['name', 'display_name', 'alias'],
    agent: NO_DELETE,
  }),
  model({
    resource: 'kubernetes/apps',
    label: 'K8sApp',
    softDelete: true,
    // "In the request body every field is optional, including name."
    choices: {kind: ['helm', 'polycrate', 'external']},
    unique: [{code: 'unique_k8s_app_name_per_cluster', fields: ['name', 'k8s_cluster']}],
    references: {k8s_cluster: 'kubernetes/clusters'},
    filters: {catalogue_app: exact('catalogue_app'), helm_chart: exact('helm_chart'), k8s_cluster: exact('k8s_cluster')},
    searchFields: ['name', 'display_name', 'namespace'],
    agent: NO_DELETE,
  }),
  model({
    resource: 'kubernetes/volumes',
    label: 'K8sVolume',
    required: ['k8s_cluster'],
    choices: {
      phase: ['Bound', 'Released', 'Available', 'Failed', 'Pending', 'Unknown'],
      volume_mode: ['Filesystem', 'Block'],
      reclaim_policy: ['Retain', 'Delete', 'Recycle'],
    },
    references: {k8s_cluster: 'kubernetes/clusters', k8s_app: 'kubernetes/apps'},
    filters: {
      cloud_provider_volume_id: exact('cloud_provider_volume_id'),
      csi_driver: exact('csi_driver'),
      k8s_app: exact('k8s_app'),
      k8s_cluster: exact('k8s_cluster'),
      phase: exact('phase'),
      storage_class: exact('storage_class'),
    },
    searchFields: ['name', 'display_name', 'pvc_name', 'pvc_namespace'],
  }),
  model({
    resource: 'agents',
    label: 'Agent',
    // Agents register through POST /agent/health/; the contract calls every Agent field read-only.
    choices: {kind: ['agent', 'operator']},
    filters: {version: exact('version')},
    searchFields: ['name', 'reported_agent_id'],
    agent: READ_ONLY,
  }),
  model({
    resource: 'hosts',
    label: 'Host',
    softDelete: true,
    required: ['name', 'hostname'],
    patterns: {name: SLUG},
    choices: {kind: ['vm', 'bare_metal'], role: ['k8s-worker', 'k8s-controlplane', 'generic', '']},
    references: {k8s_cluster: 'kubernetes/clusters'},
    filters: {
      bootstrap_status: exact('bootstrap_status'),
      hostname: exact('hostname'),
      provider: exact('provider'),
      role: exact('role'),
    },
    searchFields: ['name', 'display_name', 'hostname'],
  }),
  model({
    resource: 'backups/backups',
    label: 'Backup',
    required: ['name', 'k8s_cluster'],
    patterns: {name: DNS_LABEL_NAME},
    choices: {
      provider: BACKUP_PROVIDERS,
      kind: BACKUP_KINDS,
      status: ['pending', 'running', 'completed', 'failed', 'partial', 'expired', 'unknown'],
    },
    unique: [{code: 'unique_backup_identity', fields: ['name', 'provider', 'source_namespace', 'k8s_cluster']}],
    references: {k8s_cluster: 'kubernetes/clusters', schedule: 'backups/backup-schedules'},
    filters: backupFilters,
  }),
  model({
    resource: 'backups/backup-schedules',
    label: 'BackupSchedule',
    required: ['name', 'k8s_cluster'],
    patterns: {name: DNS_LABEL_NAME},
    choices: {provider: BACKUP_PROVIDERS, kind: BACKUP_KINDS, status: ['active', 'paused', 'failed', 'unknown']},
    // The contract names the identity for Backups only; a schedule has the same natural key (decided here).
    unique: [{code: 'unique_backup_schedule_identity', fields: ['name', 'provider', 'source_namespace', 'k8s_cluster']}],
    references: {k8s_cluster: 'kubernetes/clusters'},
    filters: {...backupFilters, overdue: bool('overdue'), paused: bool('paused')},
  }),
  model({
    resource: 'certificates',
    label: 'Certificate',
    required: ['name', 'secret_name', 'namespace', 'k8s_cluster'],
    patterns: {name: DNS_LABEL_NAME},
    choices: {
      kind: ['tls', 'mtls'],
      issuer_kind: ['issuer', 'clusterissuer'],
      certificate_status: ['ready', 'pending', 'failed', 'expired', 'expiring_soon'],
    },
    unique: [{code: 'unique_certificate_per_cluster_namespace', fields: ['name', 'namespace', 'k8s_cluster']}],
    references: {k8s_cluster: 'kubernetes/clusters', k8s_app: 'kubernetes/apps'},
    // k8s_cluster is not in the contract's list for certificates; the brief asks for it.
    filters: {
      certificate_status: exact('certificate_status'),
      is_ready: bool('is_ready'),
      k8s_app: exact('k8s_app'),
      k8s_cluster: exact('k8s_cluster'),
    },
    searchFields: ['name', 'display_name', 'namespace', 'secret_name'],
  }),
  model({
    resource: 'artifacts',
    label: 'Artifact',
    scope: 'global',
    required: ['name'],
    choices: {kind: ['helm', 'docker', 'polycrate', 'oci', 'source']},
    filters: {
      app_version: exact('app_version'),
      artifact_package: exact('artifact_package'),
      artifact_package_name: exact('artifact_package_name'),
      content_url: exact('content_url'),
      deprecated: bool('deprecated'),
      mirrored: bool('mirrored'),
      version: exact('version'),
    },
    agent: READ_ONLY,
  }),
  model({
    resource: 's3/buckets',
    label: 'S3Bucket',
    // `workspace` is "needed for non-agent callers"; an agent token supplies it.
    required: ['name', 'workspace'],
    unique: [{code: 'unique_s3_bucket_name_per_region', fields: ['name', 'region']}],
    filters: {
      include_in_cost_statement: bool('include_in_cost_statement'),
      region: exact('region'),
      s3_cluster: exact('s3_cluster'),
      storage_class: exact('storage_class'),
    },
  }),
  model({
    resource: 'domains/dnszones',
    label: 'DNSZone',
    scope: 'organization',
    required: ['name', 'kind'],
    choices: {kind: ['internal', 'external']},
    // Zones are managed by people; the operator only resolves them and writes records (decided here).
    agent: READ_ONLY,
  }),
  model({
    resource: 'domains/dnsrecords',
    label: 'DNSRecord',
    scope: 'organization',
    // The record request model is not in the SDK; the contract says to expect these.
    required: ['dns_zone', 'name', 'type', 'content'],
    choices: {type: ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'CAA', 'NS', 'PTR', 'TLSA', 'SSHFP', 'HTTPS', 'SVCB', 'ALIAS', 'NAPTR']},
    references: {dns_zone: 'domains/dnszones'},
    filters: {dns_zone: exact('dns_zone'), type: exact('type')},
    searchFields: ['name', 'content'],
  }),
  model({
    resource: 'loadbalancers/instances',
    label: 'LoadbalancerInstance',
    required: ['workspace', 'organization'],
    filters: {
      enable_ssl: bool('enable_ssl'),
      loadbalancer_region: exact('loadbalancer_region'),
      prefix: exact('prefix'),
      region: exact('region'),
      session_affinity: exact('session_affinity'),
    },
  }),
  model({
    resource: 'workspaces',
    label: 'Workspace',
    scope: 'self',
    required: ['name', 'organization'],
    choices: {endpoint_monitoring_mode: ['auto', 'organization_only', 'pop_only', 'workspace_only']},
    filters: {name: exact('name'), endpoint_monitoring_mode: exact('endpoint_monitoring_mode'), pop: exact('pop')},
    agent: READ_ONLY,
  }),
  model({
    resource: 'blocks',
    label: 'Block',
    required: ['name'],
    // "No `name` filter; use name_exact + workspaces": a `?name=` is ignored like any unknown parameter.
    filters: {
      checksum: exact('checksum'),
      registry_url: exact('registry_url'),
      template: exact('template'),
      template_block: exact('template_block'),
      version: exact('version'),
    },
    agent: READ_ONLY,
  }),
  model({
    resource: 'maintenances',
    label: 'Maintenance',
    scopeField: 'affected_workspace',
    required: ['name'],
    filters: {affected_workspace: exact('affected_workspace'), draft: bool('draft'), pop: exact('pop')},
    agent: READ_ONLY,
  }),
  model({
    resource: 'downtimes',
    label: 'Downtime',
    scope: 'organization',
    choices: {
      kind: ['generic', 'planned-maintenance', 'emergency-maintenance', 'customer-caused', 'upstream-provider', 'force-majeure', 'false-positive'],
      severity: ['minor', 'major', 'critical'],
    },
    agent: READ_ONLY,
  }),
]

const byResource = new Map(MODELS.map((entry) => [entry.resource, entry]))

export function modelFor(resource: string): ResourceModel | undefined {
  return byResource.get(resource)
}

/** Server-owned fields a request body cannot set (silently dropped, like DRF's read-only fields). */
export const READ_ONLY_FIELDS: readonly string[] = [
  'id',
  'url',
  'created_at',
  'updated_at',
  'deleted_at',
  'is_deleted',
  'state',
  'state_reason',
  'last_state',
  'last_state_change',
  'created',
  'deleted_by_user',
]

export interface FieldError {
  code: string
  detail: string
  attr: string
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || value === ''
}

/**
 * Checks `candidate` (the object as it would be stored) for required fields, patterns and choices. With
 * `onlyFields`, only those fields are checked (PATCH).
 */
export function validateFields(target: ResourceModel, candidate: JsonObject, onlyFields?: ReadonlySet<string>): FieldError[] {
  const errors: FieldError[] = []
  const checks = (field: string) => !onlyFields || onlyFields.has(field)
  for (const field of target.required) {
    if (!checks(field)) continue
    const value = candidate[field]
    if (value === undefined || value === null) errors.push({code: 'required', detail: 'This field is required.', attr: field})
    else if (value === '') errors.push({code: 'blank', detail: 'This field may not be blank.', attr: field})
  }
  for (const [field, pattern] of Object.entries(target.patterns)) {
    const value = candidate[field]
    if (!checks(field) || isBlank(value)) continue
    if (typeof value !== 'string' || !pattern.test(value)) {
      errors.push({code: 'invalid', detail: `Enter a valid value matching ${pattern.source}.`, attr: field})
    }
  }
  for (const [field, allowed] of Object.entries(target.choices)) {
    const value = candidate[field]
    if (!checks(field) || value === undefined || value === null) continue
    if (typeof value !== 'string' || !allowed.includes(value)) {
      errors.push({code: 'invalid_choice', detail: `"${String(value)}" is not a valid choice.`, attr: field})
    }
  }
  return errors
}

/**
 * The first unique rule `candidate` breaks against `others` (objects of the same collection, soft-deleted ones
 * left out by the caller), and the object it collides with. Like SQL, a rule does not apply while one of its
 * fields is null.
 */
export function findConflict(
  target: ResourceModel,
  candidate: JsonObject,
  others: Iterable<JsonObject>,
): {rule: UniqueRule; existing: JsonObject} | undefined {
  const rules = target.unique
    .map((rule) => ({rule, values: rule.fields.map((field) => candidate[field])}))
    .filter(({values}) => values.every((value) => value !== undefined && value !== null))
  if (rules.length === 0) return undefined
  // One pass over the others (an iterator over the store, not a copy: thousands of creates each check them all).
  const found = new Map<UniqueRule, JsonObject>()
  for (const other of others) {
    if (other.id === candidate.id) continue
    for (const {rule, values} of rules) {
      if (!found.has(rule) && rule.fields.every((field, index) => other[field] === values[index])) found.set(rule, other)
    }
  }
  for (const {rule} of rules) {
    const existing = found.get(rule)
    if (existing) return {rule, existing}
  }
  return undefined
}
