/**
 * Every label, annotation, finalizer and well-known name the operator reads or writes, in one place.
 * Deprecated spellings stand next to their canonical replacement; the canonical key wins when both are set.
 */
import {createHash} from 'node:crypto'

export const OPERATOR_NAME = 'polycrate-operator'
/** The ClusterRole, Roles and their bindings of one feature's RBAC (the base role, of every feature set, is OPERATOR_NAME). */
export const featureRoleName = (feature: string) => `${OPERATOR_NAME}:${feature}`
export const FIELD_MANAGER = 'polycrate-operator'
export const DEFAULT_NAMESPACE = 'polycrate'
export const OPERATOR_CONFIG_NAME = 'default'
/** The API sync feature (and its controller): the OperatorConfig controller and /readyz refer to it by name. */
export const API_SYNC_FEATURE = 'api-sync'
export const LEADER_LEASE_NAME = 'polycrate-operator-leader'
/**
 * An operator process without leader election (a laptop's `operator run`, the sandbox, a test) still says that it
 * runs: it renews a Lease of its own in its namespace (runtime/heartbeat.ts), named after its host, so that `status`
 * and `uninstall` can tell whether anything runs. Cleared (holder emptied) on a graceful shutdown.
 */
export const heartbeatLease = {
  /** `<prefix><host, cut and sanitized>-<hash of the host>`. */
  namePrefix: 'polycrate-operator-run-',
  /** The label that sets heartbeat Leases apart (value `heartbeat`); `uninstall` deletes them by it. */
  roleLabel: 'polycrate.io/lease-role',
  roleValue: 'heartbeat',
  /** Annotations: the process's host name, pid and version (what `status` shows for a process outside the cluster). */
  hostAnnotation: 'polycrate.io/host',
  pidAnnotation: 'polycrate.io/pid',
  versionAnnotation: 'polycrate.io/version',
} as const

/** The label selector of everything the operator's install makes (its Deployment, Pods, ServiceAccount, …). */
export const OPERATOR_SELECTOR = `app.kubernetes.io/name=${OPERATOR_NAME}`

/** On the operator's own Pod (with --pod-name): "true" while it holds the leader lease, else "false". */
export const LEADER_POD_LABEL = 'polycrate.io/leader'
/** DNS01 webhook: Secret (in the operator namespace) with its serving certificate, `tls.crt` + `tls.key`. */
export const DNS01_SERVING_SECRET = 'polycrate-operator-dns01-webhook-tls'
/** The metrics Service (every replica's /metrics); its DNS names are in the metrics serving certificate. */
export const METRICS_SERVICE = 'polycrate-operator-metrics'
/** kubernetes.io/tls Secret install makes for /metrics with --metrics-secure: tls.crt, tls.key and ca.crt (the CA that signed them, for scrapers). */
export const METRICS_TLS_SECRET = 'polycrate-operator-metrics-tls'
/** Where the Deployment mounts METRICS_TLS_SECRET (`--metrics-cert-dir`). */
export const METRICS_CERT_DIR = '/etc/polycrate/metrics-tls'
/** The ClusterRole that lets its subjects `get /metrics` (kubebuilder's `metrics-reader`), and its ClusterRoleBinding. */
export const METRICS_READER_ROLE = 'polycrate-operator-metrics-reader'
/** The ClusterRoleBinding of METRICS_READER_ROLE to `metrics.readers` of the values (the subjects as written). */
export const METRICS_READERS_BINDING = 'polycrate-operator-metrics-readers'
/** The ServiceAccount the VMServiceScrape scrapes as, and the Secret with its token (filled by the token controller). */
export const METRICS_SCRAPER = 'polycrate-operator-metrics-scraper'
export const METRICS_SCRAPER_TOKEN_SECRET = 'polycrate-operator-metrics-scraper-token'
/** Where kube-apiserver publishes its front-proxy client CA and allowed names (aggregated APIs). */
export const EXTENSION_APISERVER_AUTHENTICATION = {namespace: 'kube-system', name: 'extension-apiserver-authentication'} as const

export const labels = {
  discovered: 'polycrate_discovered',
  managedBy: 'polycrate_managed_by',
  objectType: 'polycrate_object_type',
  k8sAppName: 'polycrate_k8sapp_name',
  endpointSourceIngress: 'endpoints.polycrate.io/source-ingress',
  endpointSourceHTTPRoute: 'endpoints.polycrate.io/source-httproute',
  /** On Backup/BackupSchedule CRs: velero or cloudnativepg (sets the two discoveries' CRs apart). */
  backupProvider: 'polycrate_backup_provider',
  s3BucketName: 'polycrate_s3_bucket_name',
  s3BucketRegion: 'polycrate_s3_bucket_region',
  /** On K8sApp CRs (the operator reference's K8sApp example): the block, its kind and type. */
  k8sAppBlock: 'k8sapps.polycrate.io/block',
  k8sAppKind: 'k8sapps.polycrate.io/kind',
  k8sAppType: 'k8sapps.polycrate.io/type',
  /** On K8sApp CRs: what the app was discovered from (secret, pod, ingress, httproute). */
  k8sAppDiscoverySource: 'k8sapps.polycrate.io/discovery-source',
} as const

export const deprecatedLabels = {
  /** Replaced by the annotation polycrate_k8sapp_name; removed from sources on reconcile. */
  k8sAppName: 'k8sapps.polycrate.io/name',
  /** The operator reference's K8sApp/Certificate examples still show it; read, never written. */
  discovered: 'operator.polycrate.io/discovered',
} as const

export const annotations = {
  endpointMonitor: 'polycrate_endpoint_monitor',
  endpointPath: 'polycrate_endpoint_path',
  endpointTimeout: 'polycrate_endpoint_timeout',
  endpointInterval: 'polycrate_endpoint_interval',
  endpointExpectedStatus: 'polycrate_endpoint_expected_status',
  endpointTls: 'polycrate_endpoint_tls',
  endpointPort: 'polycrate_endpoint_port',
  endpointHostConfig: 'polycrate_endpoint_host_config',
  endpointExpectedBody: 'endpoints.polycrate.io/expected-body',
  k8sAppName: 'polycrate_k8sapp_name',
  k8sAppByoa: 'polycrate_k8sapp_byoa',
  /** On Endpoint CRs: the API id of their K8sApp once it is known (its change makes the Endpoint sync link it). */
  k8sAppId: 'polycrate_k8sapp_id',
  loadBalancer: 'polycrate.io/loadbalancer',
  /** The Ingress class before spec.ingressClassName existed. */
  ingressClass: 'kubernetes.io/ingress.class',
  /** On a discovered CR whose source is gone: when the stale sweep first saw it orphaned (RFC 3339). */
  orphanedSince: 'polycrate.io/orphaned-since',
  /**
   * On an API cluster a K8sCluster CR created (in the API object's annotations): the CR's uid. The create and the
   * mark are one request, so a CR whose status write was lost (a crash, a lost answer) still knows the cluster is its.
   */
  k8sClusterCreatedBy: 'polycrate.io/created-by-k8scluster',
} as const

/** Deprecated annotation → the canonical annotation it is an alias of. */
export const deprecatedAnnotations: Readonly<Record<string, string>> = {
  'endpoints.polycrate.io/path': annotations.endpointPath,
  'endpoints.polycrate.io/timeout': annotations.endpointTimeout,
  'endpoints.polycrate.io/interval': annotations.endpointInterval,
  'endpoints.polycrate.io/expected-status': annotations.endpointExpectedStatus,
  'endpoints.polycrate.io/tls': annotations.endpointTls,
  'endpoints.polycrate.io/port': annotations.endpointPort,
}

/**
 * The endpoint monitor switch before `polycrate_endpoint_monitor` replaced both. Not value-compatible aliases
 * (`enabled: "true"` = opt-in, `ignore: "true"` = opt-out), so they are read by endpoint discovery itself and only
 * when `polycrate_endpoint_monitor` is absent.
 */
export const deprecatedEndpointMonitorAnnotations = {
  enabled: 'endpoints.polycrate.io/enabled',
  ignore: 'endpoints.polycrate.io/ignore',
} as const

export const finalizers = {
  ingressDiscovery: 'endpoints.polycrate.io/discovery-cleanup',
  httpRouteDiscovery: 'endpoints.polycrate.io/httproute-discovery-cleanup',
  endpointSync: 'polycrate.io/endpoint-cleanup',
  hostSync: 'polycrate.io/host-cleanup',
  k8sVolumeSync: 'polycrate.io/k8svolume-cleanup',
  backupSync: 'polycrate.io/backup-cleanup',
  backupScheduleSync: 'polycrate.io/backupschedule-cleanup',
  certificateSync: 'polycrate.io/certificate-cleanup',
  k8sAppSync: 'polycrate.io/k8sapp-cleanup',
  s3Bucket: 'polycrate.io/s3bucket-cleanup',
  /** On Services of type LoadBalancer: the upstream service controller's finalizer (k8s.io/cloud-provider). */
  loadBalancerCleanup: 'service.kubernetes.io/load-balancer-cleanup',
  k8sCluster: 'polycrate.io/k8scluster-cleanup',
} as const

/** Earlier spellings of finalizers, released wherever they are found (never written). */
export const deprecatedFinalizers = {
  /** Not a valid finalizer name (no FQDN); replaced by polycrate.io/s3bucket-cleanup. */
  s3Bucket: 'polycrate.io/s3bucket-finalizer',
} as const

/**
 * `polycrate operator install` marks what it created itself (the Namespace, the token Secret from api_token, the
 * image pull Secret) with this label; `uninstall` deletes such objects only.
 */
export const installedBy = {label: 'polycrate.io/installed-by', value: 'polycrate-operator-install'} as const

/** The cloud-provider conventions the cloud controller (CCM-lite) follows (those of k8s.io/cloud-provider). */
export const cloudProvider = {
  /** `spec.providerID` = `polycrate://<clusterID>/<node>`. */
  providerName: 'polycrate',
  /** Added by the kubelet under --cloud-provider=external; removed once the node is initialized. */
  uninitializedTaint: 'node.cloudprovider.kubernetes.io/uninitialized',
  regionLabel: 'topology.kubernetes.io/region',
  /** The deprecated region label; the upstream cloud node controller writes both. */
  deprecatedRegionLabel: 'failure-domain.beta.kubernetes.io/region',
  /** Nodes with this label are left out of load balancers (upstream service controller). */
  excludeFromLoadBalancersLabel: 'node.kubernetes.io/exclude-from-external-load-balancers',
} as const

/** Condition types written on polycrate.io objects. */
export const conditionTypes = {
  valid: 'Valid',
  ready: 'Ready',
  synced: 'Synced',
  apiConnected: 'APIConnected',
  /** K8sCluster: the CR holds the workspace's API cluster; reason Created or Adopted. */
  registered: 'Registered',
} as const

/** The longest label value Kubernetes accepts. */
export const MAX_LABEL_VALUE = 63

/**
 * A label value for a name that may be longer than a label allows (63 characters; names go up to 253): the name
 * itself when it fits, else its first characters and a hash of the whole, so that it stays unique and valid. Where the
 * full name matters it is kept elsewhere (spec.source, an annotation).
 */
export function labelValue(name: string): string {
  if (name.length <= MAX_LABEL_VALUE && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(name)) return name
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10)
  const head = name.slice(0, MAX_LABEL_VALUE - hash.length - 1).replace(/[^-A-Za-z0-9_.]/g, '-').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
  return head ? `${head}-${hash}` : hash
}

/** Reads an annotation, preferring the canonical key over its deprecated aliases. */
export function annotationValue(all: Record<string, string> | undefined, canonical: string): string | undefined {
  if (!all) return undefined
  if (all[canonical] !== undefined) return all[canonical]
  for (const [deprecated, target] of Object.entries(deprecatedAnnotations)) {
    if (target === canonical && all[deprecated] !== undefined) return all[deprecated]
  }
  return undefined
}
