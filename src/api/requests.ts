/**
 * Request bodies (the write side) of the Polycrate API as TypeScript types. Where the SDK's request model was not
 * read (DNS records, workspaces, blocks, maintenances, agents), the type lists the likely fields and allows more.
 */
import type {EndpointKind, EndpointSpecInput} from './schemas.js'

type Uuid = string
type DateTime = string

/** Writable fields of every ManagedObject; all optional. */
export interface ManagedObjectWrite {
  name?: string
  display_name?: string | null
  labels?: Record<string, unknown> | null
  annotations?: Record<string, unknown> | null
  debug_mode?: boolean
  provider?: string | null
  provider_reference?: string | null
  provider_id?: string | null
  reconciliation_enabled?: boolean
  discovery_enabled?: boolean
  platform_service?: boolean
  scope?: 'system' | 'user'
  archived?: boolean
  archived_at?: DateTime | null
  archived_reason?: string | null
  created_by_component?: 'cli' | 'operator' | 'api'
  criticality?: 'high' | 'medium' | 'low' | '' | null
  target_availability?: number | null
  slo_target?: number | null
  slo_window_days?: number | null
  sla_target?: number | null
  sla_window_days?: number | null
  managed_by_object_id?: Uuid | null
}

// -- agent side ------------------------------------------------------------------------------------------

export interface CheckResultInput {
  endpoint_id: Uuid
  success: boolean
  checked_at?: DateTime | null
  status_code?: number | null
  error_code?: number | null
  error_name?: string | null
  duration_ms?: number | null
  ssl_cert_not_after?: DateTime | null
  resolved_ip?: string | null
  [field: `http_${string}` | `icmp_${string}` | `tcp_${string}` | `dns_${string}`]: unknown
}

export interface AgentHealthDataRequest {
  reported_agent_id?: string
  version?: string
  kind?: 'agent' | 'operator'
  status?: 'healthy' | 'degraded' | 'unhealthy' | 'critical'
  uptime_seconds?: number
  start_time?: DateTime
  last_config_update?: DateTime
  reported_at?: DateTime
  config_version?: string
  storage_healthy?: boolean
  api_connected?: boolean
  resource_metrics?: unknown
  network_metrics?: unknown
  check_metrics?: unknown
  error_counts?: unknown
  system_info?: unknown
  storage_stats?: unknown
  agent_configuration?: unknown
  warnings?: string[]
  critical_errors?: string[]
  check_summary?: {
    monitored_endpoints?: number
    checks_per_minute?: number
    checks_in_queue?: number
    failed_checks?: number
    successful_checks?: number
    checks_since_last_report?: number
    total_checks?: number
  }
  check_results?: CheckResultInput[]
}

/** Every field required. */
export interface AgentErrorReportRequest {
  agent_id: string
  timestamp: DateTime
  total_errors: number
  error_counts: Record<string, unknown>
  critical_errors: string[]
  recent_errors: Array<Record<string, unknown>>
  system_info: Record<string, unknown>
}

export interface AgentRequest extends ManagedObjectWrite {
  kind?: 'agent' | 'operator'
  version?: string | null
  is_active?: boolean
  reported_agent_id?: string | null
  k8s_app?: Uuid | null
}

// -- endpoints -------------------------------------------------------------------------------------------

export interface EndpointRequest extends ManagedObjectWrite {
  name: string
  remote_address: string
  organization_id?: Uuid
  workspace_id?: Uuid | null
  kind?: EndpointKind
  remote_port?: number | null
  spec?: EndpointSpecInput | null
  k8s_cluster?: Uuid | null
  k8s_app?: Uuid | null
  s3_cluster?: Uuid | null
  region?: Uuid | null
  loadbalancer_instance?: Uuid | null
  do_not_monitor?: boolean
  pop_endpoint?: boolean
  platform_dns_record_created?: boolean
  max_agents_per_endpoint?: number | null
  check_result_retention_days?: number | null
  resolved_ip?: string | null
}

// -- Kubernetes -------------------------------------------------------------------------------

export interface K8sAppRequest extends ManagedObjectWrite {
  namespace?: string | null
  description?: string
  source?: string
  kind?: 'helm' | 'polycrate' | 'external'
  byoa?: boolean
  block?: Uuid | null
  k8s_cluster?: Uuid | null
  catalogue_app?: Uuid | null
  helm_chart?: Uuid | null
  artifact_package?: Uuid | null
  artifact?: Uuid | null
  installed_version?: string | null
  installed?: boolean
  uninstalled?: boolean
  installation_running?: boolean
  uninstallation_running?: boolean
  installation_failed?: boolean
  uninstallation_failed?: boolean
  active?: boolean
  last_installation?: DateTime | null
  last_metrics_check?: DateTime | null
  ha_enabled?: boolean | null
  pods_total?: number
  pods_ready?: number
  pods_available?: number
  pods_unavailable?: number
  pods_restart_count_total?: number
  pods_restart_count_last_hour?: number
  pods_details?: unknown
  pods_status_hash?: string | null
  pods_status_updated_at?: DateTime | null
  excluded_from_downtime_until?: DateTime | null
}

export interface K8sClusterRequest extends ManagedObjectWrite {
  /** Required on create. */
  kind: 'polycrate' | 'generic' | 'loopback'
  kubernetes_version?: string | null
  installed?: boolean
  is_host_cluster?: boolean
  is_infrastructure_cluster?: boolean
  kubeconfig_ca_cert_expiry_date?: DateTime | null
  kubeconfig_client_cert_expiry_date?: DateTime | null
  api_server_cert_expiry_date?: DateTime | null
  credential?: Uuid | null
  discovery_ignored_namespaces?: unknown
  operator_loglevel?: 1 | 2 | 3 | null
  operator_ignore_namespaces?: unknown
  alias?: string
  description?: string
  addons?: unknown
  active?: boolean
  backup_schedules?: unknown
  last_backup_import?: DateTime | null
  slug?: string
}

export interface K8sVolumeRequest extends ManagedObjectWrite {
  k8s_cluster: Uuid
  k8s_app?: Uuid | null
  provider_object_name?: string
  provider_object_id?: string
  cloud_provider_volume_id?: string
  csi_driver?: string
  storage_class?: string
  capacity_bytes?: number
  capacity_string?: string
  phase?: 'Bound' | 'Released' | 'Available' | 'Failed' | 'Pending' | 'Unknown'
  access_modes?: unknown
  volume_mode?: 'Filesystem' | 'Block'
  reclaim_policy?: 'Retain' | 'Delete' | 'Recycle'
  pvc_name?: string
  pvc_namespace?: string
  node_affinity?: unknown
}

// -- hosts, backups, certificates ------------------------------------------------------------------

export interface HostRequest extends ManagedObjectWrite {
  name: string
  hostname: string
  kind?: 'vm' | 'bare_metal'
  role?: 'k8s-worker' | 'k8s-controlplane' | 'generic' | ''
  alias?: string
  active?: boolean
  default_ipv4?: string | null
  default_ipv6?: string | null
  resource_cpu_type?: string
  resource_cpu_cores?: number
  resource_cpu_architecture?: string
  resource_memory?: number
  resource_disk?: number
  provider_location?: string
  provider_image?: string
  provider_image_os_flavor?: string
  provider_image_os_version?: string
  provider_image_os_architecture?: string
  provider_type?: string
  provider_account_id?: Uuid | null
  description?: string
  credential?: Uuid | null
  ssh_keys_id?: Uuid[]
  k8s_cluster?: Uuid | null
  product_id?: Uuid | null
}

export type BackupProvider = 'velero' | 'cloudnativepg' | 'custom'
export type BackupKind = 'cluster' | 'app' | 'database'

/** `name` must match `^[a-z0-9]+(?:-[a-z0-9]+)*$`; identity = name + provider + source_namespace. */
export interface BackupRequest extends ManagedObjectWrite {
  name: string
  k8s_cluster: Uuid
  provider?: BackupProvider
  kind?: BackupKind
  source_namespace?: string
  status?: 'pending' | 'running' | 'completed' | 'failed' | 'partial' | 'expired' | 'unknown'
  schedule?: Uuid | null
  started_at?: DateTime | null
  completed_at?: DateTime | null
  expiration?: DateTime | null
  size_bytes?: number | null
  items_backed_up?: number | null
  retention_policy?: string
  metadata?: unknown
}

export interface BackupScheduleRequest extends ManagedObjectWrite {
  name: string
  k8s_cluster: Uuid
  provider?: BackupProvider
  kind?: BackupKind
  source_namespace?: string
  status?: 'active' | 'paused' | 'failed' | 'unknown'
  schedule_cron?: string
  paused?: boolean
  retention_policy?: string
  last_backup_at?: DateTime | null
  total_backups?: number
  metadata?: unknown
}

export interface CertificateRequest extends ManagedObjectWrite {
  name: string
  secret_name: string
  namespace: string
  k8s_cluster: Uuid
  kind?: 'tls' | 'mtls'
  dns_names?: string[]
  ip_addresses?: string[]
  issuer_name?: string
  issuer_kind?: 'issuer' | 'clusterissuer'
  issuer_group?: string
  not_before?: DateTime | null
  not_after?: DateTime | null
  renewal_time?: DateTime | null
  certificate_status?: 'ready' | 'pending' | 'failed' | 'expired' | 'expiring_soon'
  is_ready?: boolean
  current_challenge_type?: string
  current_challenge_status?: string
  challenge_reason?: string
  last_failure_time?: DateTime | null
  failure_reason?: string
  last_synced_from_cluster?: DateTime | null
  cert_manager_status?: unknown
  metadata?: unknown
}

/** The SDK types these ids as int; UUID strings are accepted too (verify against the live schema). */
export interface CertificateSyncRequest {
  cert_data: unknown
  k8s_cluster_id: number | string
  organization_id: number | string
  workspace_id?: number | string | null
}

// -- S3 -------------------------------------------------------------------------------------------------

export interface S3BucketRegionRequest {
  name: string
  region?: Uuid | null
  organization?: Uuid | null
  workspace?: Uuid | null
  labels?: Record<string, unknown>
  annotations?: Record<string, unknown>
  cors_allow_all?: boolean
}

// -- DNS ------------------------------------------------------------------------------------------------

/** The SDK's record request model was not read; these are the fields the contract expects. */
export interface DNSRecordRequest {
  name: string
  dns_zone: Uuid
  type: 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'SRV' | 'CAA' | 'NS' | 'PTR' | 'TLSA' | 'SSHFP' | 'HTTPS' | 'SVCB' | 'ALIAS' | 'NAPTR'
  content: string
  ttl?: number
  priority?: number | null
}

// -- load balancers, workspaces, blocks, maintenances, config -------------------------------------

export interface LoadbalancerPort {
  port: number
  name?: string
  protocol?: string
  target_port?: number
}

export interface LoadbalancerInstanceCreateRequest {
  workspace: Uuid
  organization: Uuid
  /** ManagedObject `name` (writable on every model): the operator's natural key for adopt-or-create. */
  name?: string
  display_name?: string
  config?: string
  ports?: LoadbalancerPort[]
  wizard_ports?: unknown
  consumer_meta?: unknown
  labels?: Record<string, unknown>
  annotations?: Record<string, unknown>
}

export interface WorkspaceRequest extends ManagedObjectWrite {
  organization?: Uuid
  endpoint_monitoring_mode?: 'auto' | 'organization_only' | 'pop_only' | 'workspace_only'
  [field: string]: unknown
}

export interface BlockRequest extends ManagedObjectWrite {
  version?: string
  [field: string]: unknown
}

export interface MaintenanceRequest extends ManagedObjectWrite {
  start?: DateTime
  end?: DateTime
  draft?: boolean
  [field: string]: unknown
}

/** Any subset of SystemConfig, extra keys (OPERATOR_BLOCK_VERSION, OPERATOR_ROLLOUT_PERCENTAGE, …) included. */
export interface SystemConfigPatch {
  OPERATOR_BLOCK_VERSION?: string | null
  OPERATOR_ROLLOUT_PERCENTAGE?: number | null
  [key: string]: unknown
}
