/**
 * What an admin applies to run the operator in a cluster (pure): Namespace, ServiceAccount, the RBAC roles
 * generated from what the features declare they read and write, the Deployment, the webhook Service and the metrics
 * Service (both select every replica), the NetworkPolicy of the operator reference, and on request the cert-manager DNS01 webhook's APIService and a VictoriaMetrics VMServiceScrape.
 */
import type {KubeObject} from '../kube/client.js'
import {DNS01_SERVING_SECRET, OPERATOR_NAME} from './conventions.js'
import {roleRules, type Permission} from './permissions.js'

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
  /** Linux capabilities added to the container (after dropping ALL), e.g. NET_RAW for ICMP checks. */
  addCapabilities?: string[]
}

/** The block's default requests and limits (raised for CNPG backup discovery on large clusters). */
export const DEFAULT_OPERATOR_RESOURCES = {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '1000m', memory: '1Gi'}} as const
/** How long a terminating replica keeps serving (preStop sleep) so that kube-proxy drops it from the Services first. */
export const PRE_STOP_SLEEP_SECONDS = 5
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
  const labels = {...selector, 'app.kubernetes.io/part-of': 'polycrate', 'app.kubernetes.io/managed-by': 'polycrate-operator-manifests'}
  const meta = (objectName: string, objectNamespace?: string) => ({name: objectName, ...(objectNamespace ? {namespace: objectNamespace} : {}), labels})
  const metricsLabels = {...labels, 'app.kubernetes.io/component': 'metrics'}
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'Namespace', metadata: meta(namespace)},
    ...rbacObjects(namespace, meta, permissions),
    operatorDeployment(options, selector, labels, meta),
    ...serviceObjects(options, selector, metricsLabels, meta),
  ]
  if (options.dns01) objects.push(...dns01Objects(options, options.dns01, meta))
  if (options.vmServiceScrape) {
    objects.push({
      apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMServiceScrape', metadata: meta(name, namespace),
      spec: {selector: {matchLabels: metricsLabels}, endpoints: [{port: 'metrics', path: '/metrics'}]},
    } as KubeObject)
  }
  return objects
}

/** The ServiceAccount and its rights: a ClusterRole and a Role per namespace, each with its binding. */
function rbacObjects(namespace: string, meta: Meta, permissions: readonly Permission[]): KubeObject[] {
  const name = OPERATOR_NAME
  const subject = {kind: 'ServiceAccount', name, namespace}
  const roles = roleRules(permissions)
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name, namespace), automountServiceAccountToken: true} as KubeObject,
    {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(name), rules: roles.cluster} as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(name),
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name}, subjects: [subject],
    } as KubeObject,
  ]
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
          securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: {type: 'RuntimeDefault'}},
          containers: [{
            name: 'operator',
            image: options.image,
            command: ['polycrate'],
            args: [
              'operator', 'run', '--leader-elect', '--log-format', 'json',
              '--metrics-bind-address', `:${options.metricsPort}`, '--health-probe-bind-address', `:${options.healthPort}`,
            ],
            env: [
              {name: 'POD_NAMESPACE', valueFrom: {fieldRef: {fieldPath: 'metadata.namespace'}}},
              {name: 'POD_NAME', valueFrom: {fieldRef: {fieldPath: 'metadata.name'}}},
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
            volumeMounts: [{name: 'tmp', mountPath: '/tmp'}],
          }],
          volumes: [{name: 'tmp', emptyDir: {}}],
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
    apiVersion: 'v1', kind: 'Service', metadata: {...meta(`${name}-metrics`, namespace), labels: metricsLabels},
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{name: 'metrics', port: options.metricsPort, targetPort: 'metrics', protocol: 'TCP'}],
    },
  } as KubeObject)
  objects.push({
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta(name, namespace),
    spec: {
      podSelector: {matchLabels: selector},
      policyTypes: ['Ingress'],
      ingress: [
        // The operator reference: the external-dns webhook is open to the whole cluster (no coupling to external-dns' labels).
        {from: [{namespaceSelector: {}}], ports: [{port: options.externalDnsWebhookPort, protocol: 'TCP'}]},
        // Metrics scrapers and probes from inside the cluster.
        {from: [{namespaceSelector: {}}], ports: [{port: options.metricsPort, protocol: 'TCP'}, {port: options.healthPort, protocol: 'TCP'}]},
        // The kube-apiserver's aggregator calls the DNS01 webhook; it may run outside every pod network.
        ...(options.dns01 ? [{ports: [{port: options.dns01.port, protocol: 'TCP'}]}] : []),
      ],
    },
  } as KubeObject)
  return objects
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
