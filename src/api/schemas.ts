/**
 * zod schemas of the Polycrate API responses the operator reads.
 *
 * Lenient where the contract allows it: every object is a `z.looseObject`, so unknown keys pass and are kept
 * ("Unknown response keys are allowed"), and fields the contract marks optional or does not describe may be left
 * out. Strict about what the operator relies on: ids and names are non-empty strings, and the typed endpoint spec
 * has exact types (its defaults are filled in, as the API's serializer does). UUIDs are checked as strings only:
 * DNS records have composite ids (`<zone>::<provider_id>`) and a typo-free string is all the operator needs.
 */
import {z} from 'zod'

const id = z.string().min(1)
const name = z.string().min(1)
const optionalString = z.string().nullable().optional()
const optionalBool = z.boolean().nullable().optional()
const optionalInt = z.number().int().nullable().optional()
const optionalNumber = z.number().nullable().optional()
const dateTime = z.string().nullable().optional()

/** A foreign key as the API serializes it: a uuid string, or a nested simple object with an `id`. */
export const objectRef = z.union([z.string(), z.looseObject({id, name: z.string().optional()})])
export type ObjectRef = z.infer<typeof objectRef>
const optionalRef = objectRef.nullable().optional()

/** The id of a foreign key however it was serialized (uuid string or `{id, …}`); undefined for null/absent. */
export function refId(ref: ObjectRef | null | undefined): string | undefined {
  if (ref === null || ref === undefined) return undefined
  return typeof ref === 'string' ? ref : ref.id
}

export const lastState = z.enum(['OK', 'WARNING', 'CRITICAL', 'READY', 'DEGRADED', 'DOWN'])

/** Fields every ManagedObject detail may carry; all optional on reads. */
const managedObjectFields = {
  id,
  name,
  display_name: optionalString,
  organization: optionalRef,
  workspace: optionalRef,
  url: optionalString,
  labels: z.unknown().optional(),
  annotations: z.unknown().optional(),
  provider: optionalString,
  provider_id: optionalString,
  provider_reference: optionalString,
  state: z.string().nullable().optional(),
  state_reason: optionalString,
  last_state: z.string().nullable().optional(),
  created_by_component: optionalString,
  archived: optionalBool,
  is_deleted: optionalBool,
  deleted_at: dateTime,
  created_at: dateTime,
  updated_at: dateTime,
  conditions: z.unknown().optional(),
}

// ---------------------------------------------------------------------------------------------------------------
// Pagination

/** The page-number pagination envelope: `{count, next, previous, results}`; `next`/`previous` are absolute URLs. */
export function paginated<T extends z.ZodType>(item: T) {
  return z.looseObject({
    count: z.number().int().nonnegative(),
    next: z.string().nullable().optional(),
    previous: z.string().nullable().optional(),
    results: z.array(item),
  })
}

export interface Page<T> {
  count: number
  next?: string | null
  previous?: string | null
  results: T[]
}

// ---------------------------------------------------------------------------------------------------------------
// Agent side

/** The 201 answer of `POST /api/v1/agent/health/`, with the token's workspace and organization. */
export const agentHealthSubmissionResponse = z.looseObject({
  status: z.string(),
  agent_id: id,
  reported_agent_id: z.string().nullable().optional(),
  health_data_id: optionalString,
  pop_name: optionalString,
  pop_id: optionalString,
  endpoint_monitoring_mode: optionalString,
  operator_global_endpoint_monitor: optionalBool,
  workspace_id: id,
  workspace_name: z.string(),
  organization_id: z.string().nullable(),
  organization_name: z.string().nullable(),
})
export type AgentHealthSubmissionResponse = z.infer<typeof agentHealthSubmissionResponse>

/** The 201 answer of `POST /api/v1/agent/errors/`. */
export const agentErrorReportResponse = z.looseObject({
  status: z.string(),
  agent_id: z.string().nullable().optional(),
  error_id: z.union([z.string(), z.number()]).nullable().optional(),
})
export type AgentErrorReportResponse = z.infer<typeof agentErrorReportResponse>

export const agent = z.looseObject({
  ...managedObjectFields,
  kind: z.string().nullable().optional(),
  version: optionalString,
  is_active: optionalBool,
  last_seen: dateTime,
  reported_agent_id: optionalString,
  source_pop: z.unknown().optional(),
  k8s_app: optionalRef,
})
export type Agent = z.infer<typeof agent>

// ---------------------------------------------------------------------------------------------------------------
// Endpoints

export const endpointKind = z.enum(['icmp', 'http', 'tcp', 'dns'])
export type EndpointKind = z.infer<typeof endpointKind>

const intList = z.array(z.number().int())

/** The typed check settings. Each sub-object is optional and nullable; defaults are the contract's. */
export const endpointSpec = z.looseObject({
  retry: z.looseObject({
    enabled: z.boolean().default(false),
    count: z.number().int().default(5),
    sleep: z.number().default(1.0),
  }).nullable().optional(),
  http: z.looseObject({
    path: z.string().default('/'),
    tls: z.boolean().default(false),
    alert_tls_expiry: z.boolean().default(true),
    ignore_tls_errors: z.boolean().default(false),
    timeout: z.number().default(5),
    interval: z.number().default(60),
    method: z.string().default('GET'),
    user_agent: z.string().nullable().optional(),
    referer: z.string().nullable().optional(),
    follow_redirect: z.boolean().default(true),
    max_redirects: z.number().int().default(10),
    expected_status_code: z.number().int().default(200),
    accepted_status_codes: intList.nullable().optional(),
    bad_status_codes: intList.nullable().optional(),
  }).nullable().optional(),
  tcp: z.looseObject({
    tls: z.boolean().default(false),
    ignore_tls_errors: z.boolean().default(false),
    alert_expiry_days: z.number().int().default(30),
    timeout: z.number().default(10),
    interval: z.number().default(60),
    send_string: z.string().default(''),
    expected_response: z.string().default(''),
  }).nullable().optional(),
  icmp: z.looseObject({
    ttl: z.number().int().default(255),
    timeout: z.number().default(1.0),
    interval: z.number().default(1.0),
  }).nullable().optional(),
  dns: z.looseObject({
    timeout: z.number().default(10),
    interval: z.number().default(60),
    record_name: z.string().default(''),
    record_type: z.string().default('A'),
    protocol: z.enum(['udp', 'tcp']).default('udp'),
    expected_results: z.array(z.string()).nullable().optional(),
    expected_rcode: z.string().default(''),
    tls_enabled: z.boolean().default(false),
    tls_ignore_errors: z.boolean().default(false),
    dnssec: z.boolean().default(false),
  }).nullable().optional(),
})
/** The spec as read (defaults filled in). */
export type EndpointSpec = z.output<typeof endpointSpec>
/** The spec as written (every field optional; the API fills in defaults). */
export type EndpointSpecInput = z.input<typeof endpointSpec>

/** An item of `GET /api/v1/agent/endpoints/` (a plain array, not paginated). */
export const agentEndpoint = z.looseObject({
  id,
  name,
  kind: endpointKind,
  remote_address: z.string(),
  remote_port: z.number().int().nullable(),
  workspace: z.looseObject({}).nullable(),
  organization: z.looseObject({}).nullable(),
  spec: endpointSpec.nullable().optional(),
})
export type AgentEndpoint = z.infer<typeof agentEndpoint>

export const endpoint = z.looseObject({
  ...managedObjectFields,
  remote_address: z.string(),
  kind: endpointKind.optional(),
  remote_port: optionalInt,
  spec: endpointSpec.nullable().optional(),
  k8s_cluster: optionalRef,
  k8s_app: optionalRef,
  s3_cluster: optionalRef,
  region: optionalRef,
  loadbalancer_instance: optionalRef,
  do_not_monitor: optionalBool,
  pop_endpoint: optionalBool,
  max_agents_per_endpoint: optionalInt,
  resolved_ip: optionalString,
  agents: z.array(z.string()).nullable().optional(),
})
export type Endpoint = z.infer<typeof endpoint>

// ---------------------------------------------------------------------------------------------------------------
// Kubernetes

export const k8sApp = z.looseObject({
  ...managedObjectFields,
  namespace: optionalString,
  description: optionalString,
  source: optionalString,
  kind: optionalString,
  byoa: optionalBool,
  block: optionalRef,
  k8s_cluster: optionalRef,
  catalogue_app: optionalRef,
  helm_chart: optionalRef,
  artifact_package: optionalRef,
  artifact: optionalRef,
  installed_version: optionalString,
  installed: optionalBool,
  active: optionalBool,
  pods_total: optionalInt,
  pods_ready: optionalInt,
  pods_status_updated_at: dateTime,
})
export type K8sApp = z.infer<typeof k8sApp>

export const k8sCluster = z.looseObject({
  ...managedObjectFields,
  kind: optionalString,
  slug: optionalString,
  alias: optionalString,
  description: optionalString,
  block: z.unknown().optional(),
  kubernetes_apps: z.array(z.unknown()).nullable().optional(),
  kubernetes_version: optionalString,
  installed: optionalBool,
  active: optionalBool,
  is_host_cluster: optionalBool,
  cluster_domain: optionalString,
  operator_loglevel: optionalInt,
  operator_ignore_namespaces: z.unknown().optional(),
})
export type K8sCluster = z.infer<typeof k8sCluster>

export const k8sVolume = z.looseObject({
  ...managedObjectFields,
  // `name` is optional in K8SVolumeRequest: the operator identifies volumes by cluster + provider_object_name.
  name: optionalString,
  k8s_cluster: optionalRef,
  k8s_app: optionalRef,
  provider_object_name: optionalString,
  provider_object_id: optionalString,
  cloud_provider_volume_id: optionalString,
  csi_driver: optionalString,
  storage_class: optionalString,
  capacity_bytes: optionalInt,
  capacity_string: optionalString,
  phase: optionalString,
  volume_mode: optionalString,
  reclaim_policy: optionalString,
  pvc_name: optionalString,
  pvc_namespace: optionalString,
})
export type K8sVolume = z.infer<typeof k8sVolume>

// ---------------------------------------------------------------------------------------------------------------
// Hosts, backups, certificates, artifacts

export const host = z.looseObject({
  ...managedObjectFields,
  hostname: optionalString,
  kind: optionalString,
  role: optionalString,
  alias: optionalString,
  default_ipv4: optionalString,
  default_ipv6: optionalString,
  resource_cpu_cores: optionalInt,
  resource_memory: optionalInt,
  resource_disk: optionalInt,
  k8s_cluster: optionalRef,
})
export type Host = z.infer<typeof host>

export const backup = z.looseObject({
  ...managedObjectFields,
  k8s_cluster: optionalRef,
  kind: optionalString,
  source_namespace: optionalString,
  status: optionalString,
  schedule: optionalRef,
  started_at: dateTime,
  completed_at: dateTime,
  expiration: dateTime,
  size_bytes: optionalInt,
  items_backed_up: optionalInt,
  retention_policy: optionalString,
  metadata: z.unknown().optional(),
})
export type Backup = z.infer<typeof backup>

export const backupSchedule = z.looseObject({
  ...managedObjectFields,
  k8s_cluster: optionalRef,
  kind: optionalString,
  source_namespace: optionalString,
  status: optionalString,
  schedule_cron: optionalString,
  paused: optionalBool,
  retention_policy: optionalString,
  last_backup_at: dateTime,
  total_backups: optionalInt,
  metadata: z.unknown().optional(),
})
export type BackupSchedule = z.infer<typeof backupSchedule>

export const certificate = z.looseObject({
  ...managedObjectFields,
  k8s_cluster: optionalRef,
  k8s_app: optionalRef,
  secret_name: optionalString,
  namespace: optionalString,
  kind: optionalString,
  dns_names: z.unknown().optional(),
  ip_addresses: z.unknown().optional(),
  issuer_name: optionalString,
  issuer_kind: optionalString,
  not_before: dateTime,
  not_after: dateTime,
  renewal_time: dateTime,
  certificate_status: optionalString,
  is_ready: optionalBool,
  metadata: z.unknown().optional(),
})
export type Certificate = z.infer<typeof certificate>

/**
 * Body and answer of `POST /api/v1/certificates/sync/`. The SDK types the ids as int although objects
 * use UUIDs elsewhere; both are accepted.
 */
const intOrUuid = z.union([z.number().int(), z.string()])
export const certificateSync = z.looseObject({
  cert_data: z.unknown(),
  k8s_cluster_id: intOrUuid,
  organization_id: intOrUuid,
  workspace_id: intOrUuid.nullable().optional(),
})
export type CertificateSync = z.infer<typeof certificateSync>

/** Global catalogue entries; the SDK's field set was not read, so only `id` is required. */
export const artifact = z.looseObject({
  id,
  name: optionalString,
  kind: optionalString,
  version: optionalString,
  app_version: optionalString,
  content_url: optionalString,
  artifact_package: optionalRef,
  artifact_package_name: optionalString,
  deprecated: optionalBool,
  mirrored: optionalBool,
})
export type Artifact = z.infer<typeof artifact>

// ---------------------------------------------------------------------------------------------------------------
// S3

export const s3Bucket = z.looseObject({
  ...managedObjectFields,
  region: z.unknown().optional(),
  s3_endpoint: optionalString,
  s3_region: optionalString,
  user_id: optionalString,
  credential: z.unknown().optional(),
  access_keys: z.array(z.unknown()).nullable().optional(),
  current_usage: optionalNumber,
  current_usage_bytes: optionalNumber,
  current_object_count: optionalNumber,
  versioning_status: optionalString,
  encryption_enabled: optionalBool,
})
export type S3Bucket = z.infer<typeof s3Bucket>

export const s3CredentialWithSecrets = z.looseObject({
  id: z.union([z.string(), z.number()]),
  name: optionalString,
  description: optionalString,
  api_user: optionalString,
  active: optionalBool,
  type: optionalString,
  access_key: z.string().nullable(),
  secret_key: z.string().nullable(),
})
export type S3CredentialWithSecrets = z.infer<typeof s3CredentialWithSecrets>

export const s3CredentialListResponse = z.looseObject({
  success: z.boolean().default(true),
  data: z.looseObject({
    bucket_id: z.string(),
    bucket_name: z.string(),
    credentials: z.array(s3CredentialWithSecrets),
  }),
  meta: z.unknown().optional(),
})
export type S3CredentialListResponse = z.infer<typeof s3CredentialListResponse>

/** `GET /api/v1/s3/regions/` item: a workspaces.Region (the id a bucket request names). */
export const s3Region = z.looseObject({
  id: z.string(),
  name: z.string(),
  legacy_s3_cluster: optionalString,
})
export type S3Region = z.infer<typeof s3Region>

/** `GET /api/v1/s3/clusters/{id}/`: an S3 cluster (SystemConfig `default_s3_bucket_cluster` names one). */
export const s3Cluster = z.looseObject({
  id: z.string(),
  name: optionalString,
  endpoint: optionalString,
  region: z.union([z.string(), z.looseObject({id: z.string(), name: optionalString})]).nullable().optional(),
})
export type S3Cluster = z.infer<typeof s3Cluster>

/** `GET /api/v1/s3/buckets/available/?bucket=&region=`. */
export const s3BucketAvailability = z.looseObject({available: z.boolean()})
export type S3BucketAvailability = z.infer<typeof s3BucketAvailability>

// ---------------------------------------------------------------------------------------------------------------
// DNS

export const dnsZoneSimple = z.looseObject({
  id,
  name,
  kind: z.enum(['internal', 'external']),
  provider: optionalString,
  primary_zone: z.boolean().default(true),
  url: optionalString,
})
export type DNSZoneSimple = z.infer<typeof dnsZoneSimple>

export const dnsRecordType = z.enum(['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'CAA', 'NS', 'PTR', 'TLSA', 'SSHFP', 'HTTPS', 'SVCB', 'ALIAS', 'NAPTR'])

export const dnsRecord = z.looseObject({
  id,
  name: optionalString,
  dns_zone: z.union([dnsZoneSimple, z.string()]),
  content: z.string(),
  type: dnsRecordType,
  ttl: optionalInt,
  priority: optionalInt,
})
export type DNSRecord = z.infer<typeof dnsRecord>

// ---------------------------------------------------------------------------------------------------------------
// Load balancers, workspaces, blocks, maintenance, config

export const loadbalancerInstance = z.looseObject({
  ...managedObjectFields,
  name: optionalString,
  config: optionalString,
  ports: z.array(z.looseObject({
    port: z.number().int(),
    name: optionalString,
    protocol: optionalString,
    target_port: optionalInt,
  })).nullable().optional(),
  consumer_meta: z.unknown().optional(),
  /** The public IP; null while the instance is still being provisioned (label key `polycrate_loadbalancerinstance_ip_address`). */
  ip_address: optionalString,
})
export type LoadbalancerInstance = z.infer<typeof loadbalancerInstance>

export const workspace = z.looseObject({
  ...managedObjectFields,
  endpoint_monitoring_mode: optionalString,
  pop: optionalRef,
  backup_enabled: optionalBool,
  maintenance: z.unknown().optional(),
})
export type Workspace = z.infer<typeof workspace>

export const block = z.looseObject({
  ...managedObjectFields,
  version: optionalString,
  checksum: optionalString,
  registry_url: optionalString,
  from_block: optionalRef,
  template: optionalBool,
  is_behind_stable: optionalBool,
})
export type Block = z.infer<typeof block>

export const maintenance = z.looseObject({
  ...managedObjectFields,
  name: optionalString,
  start: dateTime,
  end: dateTime,
  draft: optionalBool,
  affected_workspaces: z.unknown().optional(),
  affected_pops: z.unknown().optional(),
})
export type Maintenance = z.infer<typeof maintenance>

export const maintenanceWindowStatus = z.looseObject({
  in_maintenance_window: z.boolean(),
  window_id: optionalString,
  window_name: optionalString,
  window_display_name: optionalString,
})
export type MaintenanceWindowStatus = z.infer<typeof maintenanceWindowStatus>

/**
 * Every field optional, extra keys kept (`OPERATOR_BLOCK_VERSION`, `OPERATOR_ROLLOUT_PERCENTAGE` are not
 * in the SDK but live here). The percentage is accepted as a number or a numeric string.
 */
export const systemConfig = z.looseObject({
  SYSTEM_NAME: optionalString,
  SYSTEM_FRONTEND_BASE_URL: optionalString,
  platform_dns_zone: optionalString,
  global_debug_mode: optionalBool,
  SYSTEM_RECONCILIATION_INTERVAL_SECONDS: optionalNumber,
  SYSTEM_DISCOVERY_INTERVAL_SECONDS: optionalNumber,
  DISCOVERY_ENABLED: optionalBool,
  RECONCILIATION_ENABLED: optionalBool,
  system_owner_organization: optionalString,
  system_host_cluster: optionalString,
  default_s3_bucket_cluster: optionalString,
  OPERATOR_BLOCK_VERSION: optionalString,
  OPERATOR_ROLLOUT_PERCENTAGE: z.union([z.number(), z.string().regex(/^\d+(\.\d+)?$/)]).nullable().optional(),
})
export type SystemConfig = z.infer<typeof systemConfig>

/**
 * `GET /api/v1/system/status/`: the contract lists the path without its fields; the API's version is read from
 * `version` (or `api_version`) when it sends one, everything else is kept as it is.
 */
export const systemStatus = z.looseObject({
  status: optionalString,
  version: optionalString,
  api_version: optionalString,
})
export type SystemStatus = z.infer<typeof systemStatus>
