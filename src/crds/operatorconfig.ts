import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {conditions, timestamp} from './schema.js'

/**
 * A section of the OperatorConfig spec that is filled with its documented defaults when it is left out, so that
 * `operatorConfigSpec.parse({})` yields a complete configuration (and the API server defaults it the same way).
 */
function section<T extends z.ZodObject>(schema: T, description: string) {
  return schema.default(() => schema.parse({}) as z.core.util.NoUndefined<z.output<T>>).describe(description)
}

const namespaces = (defaults: string[], description: string) =>
  z.array(z.string()).default(() => [...defaults]).describe(description)

const watchNamespaces = () => namespaces([], 'Namespaces to watch; empty = all namespaces.')
const ignoreNamespaces = (defaults: string[]) =>
  namespaces(defaults, 'Namespaces that are always ignored; subtracted from watch_namespaces.')
const staleCleanupMinutes = (minutes: number) =>
  z.number().int().min(1).default(minutes)
    .describe('Interval of the stale sweep in minutes: discovered CRs whose source is gone are deleted.')

const credentialsRef = z.object({
  secret_name: z.string().min(1).default('polycrate-api-token')
    .describe('Name of the Secret (in the operator namespace) that holds the agent token.'),
  token_key: z.string().min(1).default('token').describe('Key inside the Secret that holds the token.'),
})

const apiSync = z.object({
  enabled: z.boolean().default(false).describe('Synchronize discovered resources with the Polycrate API.'),
  api_url: z.string().default('').describe('Base URL of the Polycrate API, e.g. https://api.polycrate.io.'),
  sync_interval_seconds: z.number().int().min(1).default(60).describe('Seconds between two periodic syncs.'),
  credentials_ref: section(credentialsRef, 'Secret with the agent token used for every API call.'),
  credentials: z.object({
    secret_name: z.string().optional().describe('Name of the Secret that holds the agent token.'),
    token_key: z.string().optional().describe('Key inside the Secret that holds the token.'),
  }).optional().describe(
    'Deprecated alias of credentials_ref (the block config spelling); credentials_ref is read first.',
  ),
  workspace_id: z.string().optional()
    .describe('Deprecated and ignored since 0.29.0: the workspace is resolved from the agent token (status.api_sync).'),
  organization_id: z.string().optional()
    .describe('Deprecated and ignored since 0.29.0: the organization is resolved from the agent token (status.api_sync).'),
})

const localCluster = z.object({
  enabled: z.boolean().default(false).describe('Register the cluster the operator runs in with the API.'),
  cluster_name: z.string().optional()
    .describe('Name of the cluster to create; ignored if the API already has a cluster for this workspace.'),
})

const endpointDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create Endpoint CRs from Ingress and HTTPRoute hosts.'),
  mode: z.enum(['annotation', 'auto']).default('annotation').describe(
    'annotation: only sources with polycrate_endpoint_monitor=true; auto: all except polycrate_endpoint_monitor=false.',
  ),
  watch_namespaces: watchNamespaces(),
  ignore_namespaces: ignoreNamespaces(['kube-system', 'kube-public']),
  ingress_classes: z.array(z.string()).default(() => []).describe('Ingress classes to watch; empty = all.'),
  gateway_classes: z.array(z.string()).default(() => [])
    .describe('GatewayClasses whose HTTPRoutes are watched (via the parent Gateway); empty = all.'),
  default_check_interval: z.number().int().min(1).default(60).describe('Default check interval in seconds.'),
  stale_cleanup_minutes: staleCleanupMinutes(10),
})

const appDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create K8sApp CRs from Polycrate meta secrets (*.poly).'),
  watch_namespaces: watchNamespaces(),
  ignore_namespaces: ignoreNamespaces(['kube-system', 'kube-public']),
  label_discovery_enabled: z.boolean().default(true)
    .describe('Also create K8sApps from pods annotated with polycrate_k8sapp_name.'),
  stale_cleanup_minutes: staleCleanupMinutes(10),
})

const nodeDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create Host CRs from Kubernetes nodes.'),
  label_selector: z.string().default('').describe('Label selector for the nodes to sync; empty = all nodes.'),
})

const backupDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create Backup/BackupSchedule CRs from Velero and CloudNativePG.'),
  velero_namespace: z.string().default('velero').describe('Namespace Velero is installed in.'),
  ignore_namespaces: ignoreNamespaces([]),
  cnpg_enabled: z.boolean().default(true).describe('Also discover CloudNativePG Backups and ScheduledBackups.'),
  stale_cleanup_minutes: staleCleanupMinutes(10),
})

const issuerFilter = z.object({
  include_issuers: z.array(z.string()).default(() => []).describe('Only these issuers; empty = all.'),
  exclude_issuers: z.array(z.string()).default(() => []).describe('Ignore certificates of these issuers.'),
})

const certificateDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create Certificate CRs from cert-manager Certificates.'),
  watch_namespaces: watchNamespaces(),
  ignore_namespaces: ignoreNamespaces(['kube-system', 'cert-manager']),
  issuer_filter: section(issuerFilter, 'Filter by issuer name.'),
  stale_cleanup_minutes: staleCleanupMinutes(10),
})

const registryFilter = z.object({
  include_registries: z.array(z.string()).default(() => []).describe('Only images of these registries; empty = all.'),
  exclude_registries: z.array(z.string()).default(() => ['registry.k8s.io', 'k8s.gcr.io'])
    .describe('Ignore images of these registries.'),
})

const artifactDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create Artifact CRs from the container images of running pods.'),
  watch_namespaces: watchNamespaces(),
  ignore_namespaces: ignoreNamespaces(['kube-system']),
  registry_filter: section(registryFilter, 'Filter by image registry.'),
  pod_label_selector: z.string().default('').describe('Label selector for the pods to inspect; empty = all pods.'),
  stale_cleanup_minutes: staleCleanupMinutes(60),
  cache_ttl_minutes: z.number().int().min(1).default(5).describe('TTL of the K8sApp cache in minutes.'),
})

const volumeDiscovery = z.object({
  enabled: z.boolean().default(true).describe('Create K8sVolume CRs from PersistentVolumes.'),
})

const httpCheckDefaults = z.object({
  timeout_seconds: z.number().int().min(1).default(10).describe('HTTP request timeout in seconds.'),
  follow_redirects: z.boolean().default(true).describe('Follow HTTP redirects.'),
  max_redirects: z.number().int().min(0).default(5).describe('Maximum number of redirects to follow.'),
  user_agent: z.string().default('Polycrate-Operator-Agent/1.0').describe('User-Agent header of the checks.'),
})

const agent = z.object({
  enabled: z.boolean().default(false).describe('Run the built-in endpoint monitoring agent.'),
  agent_id_prefix: z.string().default('polycrate').describe('Prefix of the reported agent id.'),
  check_interval_seconds: z.number().int().min(1).default(60).describe('Default check interval in seconds.'),
  icmp_enabled: z.boolean().default(true).describe('Run ICMP ping checks (unprivileged ICMP sockets through the Pod\'s net.ipv4.ping_group_range sysctl, which the manifests set; or NET_RAW).'),
  http_check_defaults: section(httpCheckDefaults, 'Defaults of HTTP checks.'),
  max_concurrent_checks: z.number().int().min(1).default(100)
    .describe('Checks that may run at the same time; further due checks wait for a free slot.'),
  result_buffer_size: z.number().int().min(1).default(20000)
    .describe('Check results kept while the API cannot be reached; when full the oldest are dropped (counted).'),
})

const cleanup = z.object({
  enabled: z.boolean().default(true).describe('Delete stale discovered resources.'),
  stale_threshold_minutes: z.number().int().min(1).default(30)
    .describe('Resources not seen for this many minutes are stale.'),
})

const s3BucketProvisioning = z.object({
  enabled: z.boolean().default(true).describe('Provision S3Bucket CRs in the API and write their credential Secrets.'),
})

const loadBalancer = z.object({
  enabled: z.boolean().default(true).describe('Manage Services of type LoadBalancer.'),
  service_scope: z.enum(['all', 'opt-in']).default('all').describe(
    'all: every LoadBalancer Service except polycrate.io/loadbalancer=ignore; '
      + 'opt-in: only Services with polycrate.io/loadbalancer=managed.',
  ),
})

const cloudController = z.object({
  enabled: z.boolean().default(false)
    .describe('Act as the cloud controller of the cluster (node init, LoadBalancer Services); needs kubelet --cloud-provider=external.'),
  load_balancer: section(loadBalancer, 'LoadBalancer Services → Polycrate LoadbalancerInstances.'),
})

const dns01Webhook = z.object({
  enabled: z.boolean().default(false).describe('Serve the cert-manager DNS01 challenge webhook.'),
  group_name: z.string().min(1).default('webhook.dns.polycrate.io').describe('groupName of the webhook solver.'),
  solver_name: z.string().min(1).default('polycrate').describe('solverName of the webhook solver.'),
  port: z.number().int().min(1).max(65535).default(10250).describe('HTTPS port of the webhook.'),
})

const externalDnsWebhook = z.object({
  enabled: z.boolean().default(true).describe('Serve the external-dns webhook provider.'),
  port: z.number().int().min(1).max(65535).default(8888).describe('HTTP port of the webhook provider.'),
})

const metrics = z.object({
  enabled: z.boolean().default(true).describe('Create a VMServiceScrape for the operator metrics (if the CRD exists).'),
})

export const operatorConfigSpec = z.object({
  api_sync: section(apiSync, 'Synchronization with the Polycrate API.'),
  local_cluster: section(localCluster, 'Registration of the local cluster with the API.'),
  endpoint_discovery: section(endpointDiscovery, 'Ingress + HTTPRoute → Endpoint.'),
  app_discovery: section(appDiscovery, 'Meta secrets + annotated pods → K8sApp.'),
  node_discovery: section(nodeDiscovery, 'Nodes → Host.'),
  backup_discovery: section(backupDiscovery, 'Velero + CloudNativePG → Backup/BackupSchedule.'),
  certificate_discovery: section(certificateDiscovery, 'cert-manager Certificates → Certificate.'),
  artifact_discovery: section(artifactDiscovery, 'Container images of pods → Artifact.'),
  volume_discovery: section(volumeDiscovery, 'PersistentVolumes → K8sVolume.'),
  agent: section(agent, 'Built-in endpoint monitoring agent.'),
  cleanup: section(cleanup, 'Cleanup of stale discovered resources.'),
  s3_bucket_provisioning: section(s3BucketProvisioning, 'S3Bucket CR → API bucket + credential Secret.'),
  cloud_controller: section(cloudController, 'Cloud controller (CCM-lite).'),
  dns01_webhook: section(dns01Webhook, 'cert-manager DNS01 webhook.'),
  external_dns_webhook: section(externalDnsWebhook, 'external-dns webhook provider.'),
  metrics: section(metrics, 'Metrics scraping.'),
})

export const operatorConfigStatus = z.object({
  phase: z.string().optional().describe('Lifecycle phase, e.g. Pending, Ready, Error.'),
  message: z.string().optional(),
  observed_generation: z.number().int().optional(),
  conditions: conditions(),
  api_sync: z.object({
    workspace_id: z.string().optional(),
    workspace_name: z.string().optional(),
    organization_id: z.string().optional(),
    organization_name: z.string().optional(),
    resolved_at: timestamp().optional(),
  }).optional().describe('Workspace and organization resolved from the agent token.'),
  local_cluster: z.object({
    cluster_id: z.string().optional().describe('API ID of the local K8sCluster.'),
    cluster_name: z.string().optional(),
    registered: z.boolean().optional().describe('True if the operator created the cluster in the API.'),
    resolved_at: timestamp().optional(),
  }).optional().describe('The K8sCluster of the API this cluster is linked with.'),
  agent: z.object({
    agent_id: z.string().optional().describe('Platform id of the operator agent.'),
    reported_agent_id: z.string().optional().describe('The id the operator reports (X-Agent-ID).'),
    version: z.string().optional().describe('Version the operator reports.'),
    pop_name: z.string().optional().describe('PoP of the agent; the cloud controller uses it as region label.'),
    pop_id: z.string().optional(),
    endpoint_monitoring_mode: z.string().optional(),
    last_heartbeat_at: timestamp().optional().describe('Last successful health report.'),
  }).optional().describe('The operator as agent of the API (from the health report response).'),
  monitoring: z.object({
    reported_agent_id: z.string().optional().describe('The id the monitoring agent reports (X-Agent-ID).'),
    assigned_endpoints: z.number().int().optional().describe('Endpoints the API assigned to this agent.'),
    succeeding: z.number().int().optional().describe('Assigned endpoints whose last check succeeded.'),
    failing: z.number().int().optional().describe('Assigned endpoints whose last check failed.'),
    buffered_results: z.number().int().optional().describe('Check results not yet reported to the API.'),
    dropped_results: z.number().int().optional().describe('Check results dropped because the buffer was full.'),
    last_fetch_at: timestamp().optional().describe('Last successful fetch of the assigned endpoints.'),
    last_report_at: timestamp().optional().describe('Last health report with check results the API accepted.'),
    message: z.string().optional().describe('Why the agent cannot fetch or report, when it cannot.'),
    endpoints: z.array(z.object({
      id: z.string(),
      name: z.string(),
      kind: z.string().optional(),
      success: z.boolean().optional().describe('Result of the last check; absent before the first check.'),
      checked_at: timestamp().optional(),
      duration_ms: z.number().optional(),
      status_code: z.number().int().optional(),
      error: z.string().optional().describe('error_name and message of a failed check.'),
      consecutive_failures: z.number().int().optional(),
    })).optional().describe('Last result per assigned endpoint, failing ones first (at most 100 entries).'),
  }).optional().describe('The endpoint monitoring agent (agent.enabled): its assignment and last results.'),
  controllers: z.array(z.object({
    name: z.string().describe('Name of the controller.'),
    enabled: z.boolean().optional().describe('Enabled in the spec.'),
    running: z.boolean().optional().describe('Currently running.'),
    reason: z.string().optional().describe('Why it is not running, e.g. CRDMissing or Disabled.'),
  })).optional().describe('The operator controllers and whether they run.'),
})

export type OperatorConfigSpec = z.infer<typeof operatorConfigSpec>
export type OperatorConfigStatus = z.infer<typeof operatorConfigStatus>

export const operatorConfigCrd = defineCrd({
  ...crdNames.OperatorConfig,
  description: 'Operator-wide configuration (API sync, local cluster, discovery); a singleton named default.',
  spec: operatorConfigSpec,
  status: operatorConfigStatus,
  printerColumns: [
    {name: 'API Sync', type: 'boolean', jsonPath: '.spec.api_sync.enabled'},
    {name: 'Workspace', type: 'string', jsonPath: '.status.api_sync.workspace_name'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
  ],
})
