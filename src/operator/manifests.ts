/**
 * What an admin applies to run the operator in a cluster (pure): Namespace (with its Pod Security labels),
 * ServiceAccount, the RBAC roles generated from what the features declare they read and write, the Deployment, the
 * webhook Service and the metrics Service (both select every replica), the NetworkPolicy of the operator reference
 * (narrowed by `allowed_from`), with 2 or more replicas a PodDisruptionBudget; with secure metrics the metrics-reader
 * ClusterRole, its binding and the scraper's ServiceAccount and token; on request the cert-manager DNS01 webhook's
 * APIService and a VictoriaMetrics VMServiceScrape.
 */
import type {KubeObject} from '../kube/client.js'
import {
  DNS01_SERVING_SECRET, featureRoleName, METRICS_CERT_DIR, METRICS_READER_ROLE, METRICS_READERS_BINDING, METRICS_SCRAPER, METRICS_SCRAPER_TOKEN_SECRET, METRICS_SERVICE, METRICS_TLS_SECRET, OPERATOR_NAME,
} from './conventions.js'
import {permissionsByFeature, roleRules, type Permission} from './permissions.js'
import {namespacePodSecurityLabels, PING_GROUP_RANGE_SYSCTL, podSecurityLevel} from './pod-security.js'
import {METRICS_AUTH_PERMISSIONS, METRICS_PATH, METRICS_READER_RULE} from './runtime/secure-metrics.js'

/** A label selector (`matchLabels` and/or `matchExpressions`), as Kubernetes writes one. */
export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: Array<{key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[]}>
}

/** A NetworkPolicy peer: Pods of the namespaces selected and/or the Pods selected, or an address block. */
export interface NetworkPolicyPeer {
  namespaceSelector?: LabelSelector
  podSelector?: LabelSelector
  ipBlock?: {cidr: string; except?: string[]}
}

/** Every Pod in every namespace: the operator reference's rule for the webhook, and the default for metrics. */
export const EVERY_NAMESPACE: readonly NetworkPolicyPeer[] = [{namespaceSelector: {}}]

/** An RBAC subject as a RoleBinding writes it: a ServiceAccount (with its namespace), a User or a Group. */
export interface RbacSubject {
  kind: 'ServiceAccount' | 'User' | 'Group'
  name: string
  namespace?: string
}

export interface ManifestOptions {
  namespace: string
  image: string
  replicas: number
  /** Port of the external-dns webhook provider (`external_dns_webhook.port`). */
  externalDnsWebhookPort: number
  metricsPort: number
  healthPort: number
  /** The cert-manager DNS01 webhook's APIService and what it needs (serving certificate by cert-manager). */
  dns01?: {groupName: string; solverName: string; port: number; certManagerServiceAccount: {namespace: string; name: string}}
  vmServiceScrape: boolean
  /** Requests and limits of the operator container; the block's defaults (100m/256Mi, 1000m/1Gi) when absent. */
  resources?: {requests: {cpu: string; memory: string}; limits: {cpu: string; memory: string}}
  /** Secrets (kubernetes.io/dockerconfigjson, in the operator namespace) the kubelet pulls the image with. */
  imagePullSecrets?: string[]
  /** Linux capabilities added to the container (after dropping ALL), e.g. NET_RAW; anything but NET_BIND_SERVICE leaves the restricted profile. */
  addCapabilities?: string[]
  /**
   * /metrics over HTTPS for callers TokenReview and SubjectAccessReview let in (`secure`, the default), `readers` bound
   * to the metrics-reader ClusterRole beside the scraper ServiceAccount; `allowedFrom` the NetworkPolicy peers that
   * reach the metrics port (default every namespace; an empty list: none).
   */
  metrics?: {secure: boolean; readers?: readonly RbacSubject[]; allowedFrom?: readonly NetworkPolicyPeer[]}
  /** Peers that reach the external-dns webhook's port (default: every namespace, as the operator reference has it; an empty list: none). */
  externalDnsWebhookAllowedFrom?: readonly NetworkPolicyPeer[]
}

/** The block's default requests and limits (raised for CNPG backup discovery on large clusters). */
export const DEFAULT_OPERATOR_RESOURCES = {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '1000m', memory: '1Gi'}} as const
/**
 * V8 settings of the operator's container (env NODE_OPTIONS): young-generation semi-spaces of 4 MiB. Node derives them
 * from the container's memory limit (docs/memory.md): 4 MiB under the default 1Gi, but 16 MiB from a 4Gi limit up and
 * outside a container. A burst of watch events grows the young generation to its maximum and V8 keeps it committed:
 * with 16 MiB, RSS after 1,000 Ingresses was 130 MiB, with 4 MiB 108 MiB, operator CPU per endpoint no worse
 * (`npm run bench`, issue 36). The old generation's limit stays Node's, from the container's limit. The benches run the
 * operator with these settings (bench/setup.ts), so they measure what the Deployment runs.
 */
export const OPERATOR_NODE_OPTIONS = '--max-semi-space-size=4'

/** How long a terminating replica keeps serving (preStop sleep) so that kube-proxy drops it from the Services first. */
export const PRE_STOP_SLEEP_SECONDS = 10
/** The operator's own graceful shutdown budget (drain the queues, release the lease) after SIGTERM. */
export const GRACEFUL_SHUTDOWN_SECONDS = 30
/** preStop sleep + graceful shutdown + a margin for the kubelet. */
export const TERMINATION_GRACE_PERIOD_SECONDS = PRE_STOP_SLEEP_SECONDS + GRACEFUL_SHUTDOWN_SECONDS + 10

/**
 * `permissions`: everything the operator may do (`operatorPermissions()` of operator.ts, which knows the features);
 * a parameter, so that the manifests do not depend on the feature registry.
 */
export function operatorManifests(options: ManifestOptions, permissions: readonly Permission[]): KubeObject[] {
  const {namespace} = options
  const name = OPERATOR_NAME
  const selector = {'app.kubernetes.io/name': name}
  const labels = {...selector, 'app.kubernetes.io/part-of': 'polycrate', 'app.kubernetes.io/managed-by': MANAGED_BY}
  const meta = (objectName: string, objectNamespace?: string) => ({name: objectName, ...(objectNamespace ? {namespace: objectNamespace} : {}), labels})
  const metricsLabels = {...labels, 'app.kubernetes.io/component': 'metrics'}
  const secure = metricsSecure(options)
  const podSecurity = namespacePodSecurityLabels(podSecurityLevel(options.addCapabilities ?? []))
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'Namespace', metadata: {...meta(namespace), labels: {...labels, ...podSecurity}}},
    ...rbacObjects(namespace, meta, secure ? [...permissions, ...METRICS_AUTH_PERMISSIONS] : permissions),
    ...(secure ? metricsReaderObjects(namespace, meta, options.metrics?.readers ?? []) : []),
    operatorDeployment(options, selector, labels, meta),
    ...(options.replicas >= 2 ? [podDisruptionBudget(namespace, selector, meta)] : []),
    ...serviceObjects(options, selector, metricsLabels, meta),
  ]
  if (options.dns01) objects.push(...dns01Objects(options, options.dns01, meta))
  if (options.vmServiceScrape) {
    const endpoint = secure
      ? {
        port: 'metrics', path: METRICS_PATH, scheme: 'https',
        bearerTokenSecret: {name: METRICS_SCRAPER_TOKEN_SECRET, key: 'token'},
        // The CA install made the serving certificate with; the certificate names the Service, the scrape goes to Pod IPs.
        tlsConfig: {ca: {secret: {name: METRICS_TLS_SECRET, key: 'ca.crt'}}, serverName: metricsServerName(namespace)},
      }
      : {port: 'metrics', path: METRICS_PATH}
    objects.push({
      apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMServiceScrape', metadata: meta(name, namespace),
      spec: {selector: {matchLabels: metricsLabels}, endpoints: [endpoint]},
    } as KubeObject)
  }
  return objects
}

/** `app.kubernetes.io/managed-by` of every object the manifests make (install finds what an earlier install left by it). */
export const MANAGED_BY = 'polycrate-operator-manifests'

/** Whether /metrics is served securely (the default). */
export const metricsSecure = (options: Pick<ManifestOptions, 'metrics'>) => options.metrics?.secure ?? true

/** The name the VMServiceScrape verifies the metrics certificate by (one of its DNS names). */
export const metricsServerName = (namespace: string) => `${METRICS_SERVICE}.${namespace}.svc`

/** The DNS names of the metrics serving certificate: the metrics Service's, short and long. */
export function metricsDnsNames(namespace: string): string[] {
  return [METRICS_SERVICE, `${METRICS_SERVICE}.${namespace}`, metricsServerName(namespace), `${metricsServerName(namespace)}.cluster.local`]
}

/**
 * Who may read /metrics: kubebuilder's `metrics-reader` ClusterRole (`get` on the non-resource URL /metrics), bound
 * to the scraper ServiceAccount the VMServiceScrape uses (its token in a service-account-token Secret the token
 * controller fills), and by a second binding (METRICS_READERS_BINDING, when there are any) to the `metrics.readers`
 * of the values (another Prometheus, vmagent in its own namespace, a User or Group): each item a subject as written,
 * so the binding's subjects are the setting itself (the Helm chart renders it as is).
 */
function metricsReaderObjects(namespace: string, meta: Meta, readers: readonly RbacSubject[]): KubeObject[] {
  const binding = (name: string, subjects: readonly object[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(name),
    roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: METRICS_READER_ROLE},
    subjects,
  }) as KubeObject
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(METRICS_READER_ROLE),
      rules: [{nonResourceURLs: [...METRICS_READER_RULE.nonResourceURLs], verbs: [...METRICS_READER_RULE.verbs]}],
    } as KubeObject,
    binding(METRICS_READER_ROLE, [{kind: 'ServiceAccount', name: METRICS_SCRAPER, namespace}]),
    // The apiserver defaults apiGroup of a User or Group subject.
    ...(readers.length > 0 ? [binding(METRICS_READERS_BINDING, structuredClone([...readers]))] : []),
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(METRICS_SCRAPER, namespace), automountServiceAccountToken: false} as KubeObject,
    {
      apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token',
      metadata: {...meta(METRICS_SCRAPER_TOKEN_SECRET, namespace), annotations: {'kubernetes.io/service-account.name': METRICS_SCRAPER}},
    } as KubeObject,
  ]
}

/** With 2 or more replicas: one may be evicted at a time (a drain never takes both); unhealthy ones always may. */
function podDisruptionBudget(namespace: string, selector: Record<string, string>, meta: Meta): KubeObject {
  return {
    apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: meta(OPERATOR_NAME, namespace),
    spec: {maxUnavailable: 1, selector: {matchLabels: selector}, unhealthyPodEvictionPolicy: 'AlwaysAllow'},
  } as KubeObject
}

/**
 * The ServiceAccount and its rights: the base role (OPERATOR_NAME: what the operator always needs) and a role per
 * enabled feature (`featureRoleName`), each a ClusterRole and a Role per namespace, each with its binding. One role
 * per feature, not one merging them: each object depends on one feature's switch (the Helm chart renders it under
 * that switch), and what a feature holds stays readable by its name.
 */
function rbacObjects(namespace: string, meta: Meta, permissions: readonly Permission[]): KubeObject[] {
  const subject = {kind: 'ServiceAccount', name: OPERATOR_NAME, namespace}
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(OPERATOR_NAME, namespace), automountServiceAccountToken: true} as KubeObject,
  ]
  for (const [feature, featurePermissions] of permissionsByFeature(permissions)) {
    const name = feature ? featureRoleName(feature) : OPERATOR_NAME
    const roles = roleRules(featurePermissions)
    if (roles.cluster.length > 0 || !feature) {
      objects.push(
        {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(name), rules: roles.cluster} as KubeObject,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(name),
          roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name}, subjects: [subject],
        } as KubeObject,
      )
    }
    for (const [roleNamespace, rules] of roles.namespaced) {
      const where = roleNamespace || namespace
      objects.push(
        {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(name, where), rules} as KubeObject,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta(name, where),
          roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name}, subjects: [subject],
        } as KubeObject,
      )
    }
  }
  return objects
}

/** The operator's Deployment: one container, its ports and probes, locked down. */
function operatorDeployment(options: ManifestOptions, selector: Record<string, string>, labels: Record<string, string>, meta: Meta): KubeObject {
  const {namespace} = options
  const name = OPERATOR_NAME
  const ports = [
    {name: 'metrics', containerPort: options.metricsPort, protocol: 'TCP'},
    {name: 'health', containerPort: options.healthPort, protocol: 'TCP'},
    {name: 'dns-webhook', containerPort: options.externalDnsWebhookPort, protocol: 'TCP'},
    ...(options.dns01 ? [{name: 'dns01-webhook', containerPort: options.dns01.port, protocol: 'TCP'}] : []),
  ]
  const probe = (path: string, periodSeconds: number) => ({httpGet: {path, port: 'health'}, periodSeconds, timeoutSeconds: 5, failureThreshold: 3})
  const secure = metricsSecure(options)
  // With 2 or more replicas: spread over nodes, as far as they allow (one Node still runs them all).
  const spread = options.replicas >= 2
    ? {topologySpreadConstraints: [{maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: {matchLabels: selector}, matchLabelKeys: ['pod-template-hash']}]}
    : {}
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta(name, namespace),
    spec: {
      replicas: options.replicas,
      selector: {matchLabels: selector},
      template: {
        metadata: {labels},
        spec: {
          serviceAccountName: name,
          terminationGracePeriodSeconds: TERMINATION_GRACE_PERIOD_SECONDS,
          ...(options.imagePullSecrets?.length ? {imagePullSecrets: options.imagePullSecrets.map((secret) => ({name: secret}))} : {}),
          ...spread,
          securityContext: {
            runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: {type: 'RuntimeDefault'},
            // ICMP checks with unprivileged ICMP sockets instead of NET_RAW (allowed by the restricted profile).
            sysctls: [{...PING_GROUP_RANGE_SYSCTL}],
          },
          containers: [{
            name: 'operator',
            image: options.image,
            command: ['polycrate'],
            args: [
              'operator', 'run', '--leader-elect', '--log-format', 'json',
              '--metrics-bind-address', `:${options.metricsPort}`, '--health-probe-bind-address', `:${options.healthPort}`,
              ...(secure ? ['--metrics-secure', '--metrics-cert-dir', METRICS_CERT_DIR] : []),
            ],
            env: [
              {name: 'POD_NAMESPACE', valueFrom: {fieldRef: {fieldPath: 'metadata.namespace'}}},
              {name: 'POD_NAME', valueFrom: {fieldRef: {fieldPath: 'metadata.name'}}},
              {name: 'NODE_OPTIONS', value: OPERATOR_NODE_OPTIONS},
            ],
            ports,
            livenessProbe: probe('/healthz', 20),
            readinessProbe: probe('/readyz', 10),
            // Kubernetes ≥ 1.30: the kubelet sleeps before SIGTERM, so kube-proxy drops the terminating replica from
            // the Services' endpoints while it still serves.
            lifecycle: {preStop: {sleep: {seconds: PRE_STOP_SLEEP_SECONDS}}},
            resources: structuredClone(options.resources ?? DEFAULT_OPERATOR_RESOURCES),
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: {drop: ['ALL'], ...(options.addCapabilities?.length ? {add: [...options.addCapabilities]} : {})},
            },
            volumeMounts: [{name: 'tmp', mountPath: '/tmp'}, ...(secure ? [{name: 'metrics-tls', mountPath: METRICS_CERT_DIR, readOnly: true}] : [])],
          }],
          volumes: [
            {name: 'tmp', emptyDir: {}},
            // The process (group 65532 by fsGroup) reads the key; the kubelet swaps renewed files in place (reloaded).
            // Optional: install makes the Secret, with helm or GitOps cert-manager may (README); until it exists the
            // operator serves a self-signed certificate it makes at start, and takes the files once they appear.
            ...(secure ? [{name: 'metrics-tls', secret: {secretName: METRICS_TLS_SECRET, defaultMode: 0o440, optional: true}}] : []),
          ],
        },
      },
    },
  } as KubeObject
}

/** The webhooks' Service, the metrics Service and the NetworkPolicy that opens their ports. */
function serviceObjects(options: ManifestOptions, selector: Record<string, string>, metricsLabels: Record<string, string>, meta: Meta): KubeObject[] {
  const {namespace} = options
  const name = OPERATOR_NAME
  const objects: KubeObject[] = []
  // The webhooks serve on every replica, so their Service selects every replica (the Pod label LEADER_POD_LABEL
  // only informs); its name is what external-dns' --webhook-provider-url and the DNS01 serving certificate name.
  objects.push({
    apiVersion: 'v1', kind: 'Service', metadata: meta(name, namespace),
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [
        {name: 'dns-webhook', port: options.externalDnsWebhookPort, targetPort: 'dns-webhook', protocol: 'TCP'},
        ...(options.dns01 ? [{name: 'dns01-webhook', port: 443, targetPort: 'dns01-webhook', protocol: 'TCP'}] : []),
      ],
    },
  } as KubeObject)
  // Metrics from every replica (a standby's leader-election gauge and informers count too).
  objects.push({
    apiVersion: 'v1', kind: 'Service', metadata: {...meta(METRICS_SERVICE, namespace), labels: metricsLabels},
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{name: 'metrics', port: options.metricsPort, targetPort: 'metrics', protocol: 'TCP', appProtocol: metricsSecure(options) ? 'https' : 'http'}],
    },
  } as KubeObject)
  objects.push(networkPolicy(options, selector, meta))
  return objects
}

/**
 * The ingress the operator's Pods accept: the external-dns webhook from `externalDnsWebhookAllowedFrom` (the operator
 * reference: the whole cluster, no coupling to external-dns' labels), /metrics from `metrics.allowedFrom` (every
 * namespace by default), the probe port from the cluster (the kubelet's probes come from the node, which a
 * NetworkPolicy never blocks), and the DNS01 webhook from anywhere (kube-apiserver's aggregator may run outside every
 * Pod network). A port whose list is empty gets no rule: nothing reaches it (`from: []` would let everything in).
 */
function networkPolicy(options: ManifestOptions, selector: Record<string, string>, meta: Meta): KubeObject {
  const rule = (peers: readonly NetworkPolicyPeer[], port: number) =>
    (peers.length > 0 ? [{from: structuredClone([...peers]), ports: [{port, protocol: 'TCP'}]}] : [])
  return {
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta(OPERATOR_NAME, options.namespace),
    spec: {
      podSelector: {matchLabels: selector},
      policyTypes: ['Ingress'],
      ingress: [
        ...rule(options.externalDnsWebhookAllowedFrom ?? EVERY_NAMESPACE, options.externalDnsWebhookPort),
        ...rule(options.metrics?.allowedFrom ?? EVERY_NAMESPACE, options.metricsPort),
        ...rule(EVERY_NAMESPACE, options.healthPort),
        ...(options.dns01 ? [{ports: [{port: options.dns01.port, protocol: 'TCP'}]}] : []),
      ],
    },
  } as KubeObject
}

type Meta = (name: string, namespace?: string) => {name: string; namespace?: string; labels: Record<string, string>}

/**
 * The DNS01 webhook as cert-manager's webhook examples deploy one: a self-signed Issuer and a Certificate for the
 * serving certificate (the Secret the webhook serves with), the APIService with its CA injected by cert-manager's cainjector,
 * and the right for cert-manager's ServiceAccount to call the solver.
 */
function dns01Objects(options: ManifestOptions, dns01: NonNullable<ManifestOptions['dns01']>, meta: Meta): KubeObject[] {
  const {namespace} = options
  const name = OPERATOR_NAME
  const issuer = `${name}-dns01-selfsigned`
  const certificate = `${name}-dns01-webhook`
  const solverRole = `${name}:dns01-solver`
  return [
    {apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: meta(issuer, namespace), spec: {selfSigned: {}}} as KubeObject,
    {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: meta(certificate, namespace),
      spec: {
        secretName: DNS01_SERVING_SECRET,
        duration: '8760h',
        issuerRef: {name: issuer, kind: 'Issuer'},
        dnsNames: [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`],
      },
    } as KubeObject,
    {
      apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService',
      metadata: {...meta(`v1alpha1.${dns01.groupName}`), annotations: {'cert-manager.io/inject-ca-from': `${namespace}/${certificate}`}},
      spec: {
        group: dns01.groupName, version: 'v1alpha1', groupPriorityMinimum: 1000, versionPriority: 15,
        service: {name, namespace, port: 443},
      },
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(solverRole),
      rules: [{apiGroups: [dns01.groupName], resources: [dns01.solverName], verbs: ['create']}],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(solverRole),
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: solverRole},
      subjects: [{kind: 'ServiceAccount', ...dns01.certManagerServiceAccount}],
    } as KubeObject,
  ]
}
