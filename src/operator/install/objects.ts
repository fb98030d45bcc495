/**
 * What `polycrate operator install` applies and `manifests --values` prints, from the block values (pure): the
 * generated manifests (manifests.ts) with the values' image, replicas, resources, pull Secret and capabilities, the
 * token Secret, the image pull Secret and the OperatorConfig.
 */
import {API_VERSION} from '../../crds/define.js'
import type {KubeObject} from '../../kube/client.js'
import {OPERATOR_NAME} from '../conventions.js'
import {metricsSecure, operatorManifests, type ManifestOptions} from '../manifests.js'
import type {Permission} from '../permissions.js'
import type {BlockValues} from './values.js'
import {monitoringObjects, type MonitoringObjects} from './monitoring-objects.js'
import {metricsTlsPlan, type MetricsTlsPlan} from './metrics-tls.js'

export const VM_SERVICE_SCRAPE_CRD = 'vmservicescrapes.operator.victoriametrics.com'

export interface InstallPlanOptions {
  /** Instead of the values' image (`--image`). */
  image?: string
  /** Instead of the values' namespace (`--namespace`). */
  namespace?: string
  /** cert-manager's ServiceAccount, which calls the DNS01 solver (only with dns01_webhook.enabled). */
  certManagerServiceAccount?: {namespace: string; name: string}
  /** Settings of the generated manifests that flags override (replicas, ports, …). */
  overrides?: Partial<Omit<ManifestOptions, 'namespace' | 'image' | 'vmServiceScrape'>>
}

export interface InstallPlan {
  namespace: string
  namespaceObject: KubeObject
  /** The agent token from api_sync.credentials.api_token (absent without a token in the values). */
  tokenSecret?: KubeObject
  /** kubernetes.io/dockerconfigjson from image_credentials (absent unless enabled). */
  pullSecret?: KubeObject
  /** Names of the two Secrets, also when the plan does not write them (uninstall deletes them if install made them). */
  tokenSecretName: string
  pullSecretName: string
  /** ServiceAccount, RBAC, Deployment, Services, NetworkPolicy (and the DNS01 objects): manifests.ts without Namespace and VMServiceScrape. */
  workload: KubeObject[]
  operatorConfig: KubeObject
  vmServiceScrape: KubeObject
  /** VMRule, PrometheusRule and the dashboard ConfigMap (metrics.alerts, metrics.dashboard). */
  monitoring: MonitoringObjects
  /** The metrics serving certificate's Secret install provides (metrics.secure); made by install, not part of `workload`. */
  metricsTls?: MetricsTlsPlan
}

const labels = {'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/part-of': 'polycrate'}

/** The options of operatorManifests for these values. */
export function manifestOptions(values: BlockValues, options: InstallPlanOptions = {}): ManifestOptions {
  const spec = values.effectiveSpec
  return {
    namespace: options.namespace ?? values.namespace,
    image: options.image ?? values.image,
    replicas: values.deployment.replicas,
    externalDnsWebhookPort: spec.external_dns_webhook.port,
    metricsPort: 8080,
    healthPort: 8081,
    dns01: spec.dns01_webhook.enabled
      ? {
        groupName: spec.dns01_webhook.group_name,
        solverName: spec.dns01_webhook.solver_name,
        port: spec.dns01_webhook.port,
        certManagerServiceAccount: options.certManagerServiceAccount ?? {namespace: 'cert-manager', name: 'cert-manager'},
      }
      : undefined,
    vmServiceScrape: true,
    resources: values.deployment.resources,
    imagePullSecrets: values.imageCredentials.enabled ? [values.imageCredentials.name] : [],
    addCapabilities: values.security.addCapabilities,
    metrics: {secure: values.metrics.secure, readers: values.metrics.readers, ...(values.metrics.allowedFrom ? {allowedFrom: values.metrics.allowedFrom} : {})},
    ...(values.externalDnsWebhook.allowedFrom ? {externalDnsWebhookAllowedFrom: values.externalDnsWebhook.allowedFrom} : {}),
    ...options.overrides,
  }
}

/** `permissions`: what the operator's RBAC roles grant (`operatorPermissions()`). */
export function installPlan(values: BlockValues, permissions: readonly Permission[], options: InstallPlanOptions = {}): InstallPlan {
  const manifestSettings = manifestOptions(values, options)
  const {namespace} = manifestSettings
  const all = operatorManifests(manifestSettings, permissions)
  const namespaceObject = all.find((object) => object.kind === 'Namespace')!
  const vmServiceScrape = all.find((object) => object.kind === 'VMServiceScrape')!
  const workload = all.filter((object) => object !== namespaceObject && object !== vmServiceScrape)
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')

  const {apiToken, secretName, tokenKey} = values.apiSync
  const tokenSecret: KubeObject | undefined = apiToken
    ? {apiVersion: 'v1', kind: 'Secret', metadata: {name: secretName, namespace, labels}, type: 'Opaque', data: {[tokenKey]: base64(apiToken)}} as KubeObject
    : undefined

  const credentials = values.imageCredentials
  const pullSecret: KubeObject | undefined = credentials.enabled
    ? {
      apiVersion: 'v1', kind: 'Secret', metadata: {name: credentials.name, namespace, labels}, type: 'kubernetes.io/dockerconfigjson',
      data: {'.dockerconfigjson': base64(dockerConfigJson(credentials.registry, credentials.username, credentials.password))},
    } as KubeObject
    : undefined

  const operatorConfig = {
    apiVersion: API_VERSION, kind: 'OperatorConfig',
    metadata: {name: values.operatorConfig.name, namespace, labels},
    spec: values.operatorConfig.spec,
  } as KubeObject
  const monitoring = monitoringObjects(namespace, values.metrics)
  return {
    namespace, namespaceObject, tokenSecret, pullSecret, tokenSecretName: secretName, pullSecretName: credentials.name, workload, operatorConfig, vmServiceScrape, monitoring,
    ...(metricsSecure(manifestSettings) ? {metricsTls: metricsTlsPlan(namespace)} : {}),
  }
}

/**
 * Everything in the order install applies it (the VMServiceScrape, rules and dashboard only when asked); not the
 * metrics certificate's Secret (plan.metricsTls), which install makes or keeps imperatively and nothing prints.
 */
export function planObjects(plan: InstallPlan, options: {vmServiceScrape: boolean; vmRule?: boolean; prometheusRule?: boolean; dashboard?: boolean}): KubeObject[] {
  return [
    plan.namespaceObject,
    ...(plan.tokenSecret ? [plan.tokenSecret] : []),
    ...(plan.pullSecret ? [plan.pullSecret] : []),
    ...plan.workload,
    plan.operatorConfig,
    ...(options.vmServiceScrape ? [plan.vmServiceScrape] : []),
    ...(options.vmRule ? [plan.monitoring.vmRule] : []),
    ...(options.prometheusRule ? [plan.monitoring.prometheusRule] : []),
    ...(options.dashboard ? [plan.monitoring.dashboard] : []),
  ]
}

/** The `.dockerconfigjson` of a kubernetes.io/dockerconfigjson Secret (what `kubectl create secret docker-registry` writes). */
export function dockerConfigJson(registry: string, username: string, password: string): string {
  const auth = Buffer.from(`${username}:${password}`, 'utf8').toString('base64')
  return JSON.stringify({auths: {[registry]: {username, password, auth}}})
}
