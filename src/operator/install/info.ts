/**
 * `polycrate operator info`: the operator block's `info` action ("Show Operator configuration") — the configuration in
 * force, with where each value comes from. From the cluster: the install as the Deployment holds it (image,
 * replicas, resources, leader election, …) and every OperatorConfig setting, `set` in the spec or the `default`; from
 * --values: what install would apply. Then the features, on or off and which settings decide it (and what the
 * operator last reported about them), and the endpoints the operator serves with who may call them. Secrets are never
 * shown. Pure: the objects (or values) in, the report out.
 */
import type {OperatorConfigSpec} from '../../crds/operatorconfig.js'
import type {KubeObject} from '../../kube/client.js'
import {parseQuantity} from '../../lib/quantity.js'
import {validateOperatorConfig, type OperatorConfig} from '../config/operator-config.js'
import {DEFAULT_NAMESPACE, OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../conventions.js'
import {DEFAULT_OPERATOR_RESOURCES} from '../manifests.js'
import {imageVersion} from './presence.js'
import {defaultImage, type BlockValues} from './values.js'

export interface Setting {
  /** `api_sync.enabled`, `deployment.replicas`, … (the block values' path). */
  path: string
  /** As text: numbers and booleans as written, lists joined with ", ", `(redacted)` for a secret. */
  value: string
  /** set: given (in the values, the spec, the Deployment); default: the block's or the CRD's default. */
  from: 'set' | 'default'
}

export interface FeatureInfo {
  name: string
  on: boolean
  /** The settings that decide it, as `path: value (from)`. */
  why: string
  /** What the operator last reported (status.controllers), when it did. */
  reported?: {running: boolean; reason: string | null}
}

export interface EndpointInfo {
  name: string
  port: number
  paths: string
  /** Who may call it, and what checks that. */
  callers: string
}

export interface OperatorInfo {
  /** Where the values come from. */
  source: string
  namespace: string
  install: Setting[]
  operatorConfig: {name: string; found: boolean; settings: Setting[]; problems: string[]}
  features: FeatureInfo[]
  endpoints: EndpointInfo[]
}

export type FeatureSwitch = {name: string; enabled: (config: OperatorConfig) => boolean}

type Plain = Record<string, unknown>
const isPlain = (value: unknown): value is Plain => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Settings whose values are never shown (their names are: secret_name, token_key). */
const SECRET = /^(password|api_token|token|secret_access_key|access_key_secret|secret_key)$/

/** A leaf value as text (pure). */
export function settingText(value: unknown, path: string): string {
  if (SECRET.test(path.split('.').at(-1) ?? '') && value !== '' && value !== undefined && value !== null) return '(redacted)'
  if (Array.isArray(value)) return value.length === 0 ? '[]' : value.map((item) => (isPlain(item) ? JSON.stringify(item) : String(item))).join(', ')
  if (value === undefined || value === null) return '-'
  if (value === '') return '""'
  return isPlain(value) ? JSON.stringify(value) : String(value)
}

/** Whether `given` holds the path (a `true` on the way — a field set owning a whole subtree — counts for all below). */
const hasPath = (given: unknown, path: readonly string[]): boolean => {
  let current = given
  for (const key of path) {
    if (current === true) return true
    if (!isPlain(current) || !(key in current)) return false
    current = current[key]
  }
  return true
}

/**
 * Every leaf of `effective` (lists are leaves) with its value and whether `given` holds it (pure), in the order of
 * `effective`; paths under `prefix`. Keys only `given` has (deprecated aliases) are listed too.
 */
export function leafSettings(effective: unknown, given: unknown, prefix = ''): Setting[] {
  const settings: Setting[] = []
  const walk = (value: unknown, path: string[]) => {
    if (isPlain(value) && Object.keys(value).length > 0) {
      for (const [key, child] of Object.entries(value)) walk(child, [...path, key])
      return
    }
    const name = [prefix, ...path].filter(Boolean).join('.')
    settings.push({path: name, value: settingText(value, name), from: hasPath(given, path) ? 'set' : 'default'})
  }
  walk(effective, [])
  return settings
}

/** Every boolean setting of a configuration, as paths (pure). */
function booleanPaths(config: unknown, path: string[] = []): string[][] {
  if (!isPlain(config)) return typeof config === 'boolean' ? [path] : []
  return Object.entries(config).flatMap(([key, child]) => booleanPaths(child, [...path, key]))
}

function flipped(config: OperatorConfig, path: readonly string[]): OperatorConfig {
  const copy = structuredClone(config) as Plain
  let at = copy
  for (const key of path.slice(0, -1)) at = at[key] as Plain
  at[path.at(-1)!] = !(at[path.at(-1)!] as boolean)
  return copy as OperatorConfig
}

/**
 * Which settings decide a feature (pure): the boolean settings whose flip alone would switch it — for a feature that
 * is on, every switch it needs; for one that is off, the one(s) that keep it off.
 */
export function featureWhy(feature: FeatureSwitch, config: OperatorConfig, given: unknown): {on: boolean; why: string} {
  const on = feature.enabled(config)
  const deciding = booleanPaths(config).filter((path) => feature.enabled(flipped(config, path)) !== on)
  if (deciding.length === 0) return {on, why: on ? 'always on' : 'off'}
  const text = deciding.map((path) => `${path.join('.')}: ${String(readPath(config, path))} (${hasPath(given, path) ? 'set' : 'default'})`)
  return {on, why: text.join(', ')}
}

function readPath(object: unknown, path: readonly string[]): unknown {
  let current = object
  for (const key of path) current = isPlain(current) ? current[key] : undefined
  return current
}

/** The endpoints the operator serves (pure), from the effective spec and how it runs (secure metrics or not). */
export function servedEndpoints(spec: OperatorConfigSpec, options: {metricsSecure: boolean; metricsPort?: number; healthPort?: number}): EndpointInfo[] {
  const endpoints: EndpointInfo[] = [
    {
      name: 'metrics',
      port: options.metricsPort ?? 8080,
      paths: '/metrics',
      callers: options.metricsSecure
        ? 'HTTPS; callers whose bearer token TokenReview accepts and whom SubjectAccessReview allows get on /metrics (401/403 otherwise); VictoriaMetrics through the scraper ServiceAccount'
        : 'plain HTTP, no authentication: anyone who reaches the Pod (NetworkPolicy: every namespace of the cluster)',
    },
    {name: 'health', port: options.healthPort ?? 8081, paths: '/healthz, /readyz', callers: 'the kubelet\'s probes and `polycrate operator health`; no authentication, every namespace (NetworkPolicy)'},
  ]
  if (spec.external_dns_webhook.enabled) {
    endpoints.push({
      name: 'external-dns webhook',
      port: spec.external_dns_webhook.port,
      paths: '/, /records, /adjustendpoints, /healthz',
      callers: 'external-dns (--webhook-provider-url http://polycrate-operator.<namespace>:<port>); no authentication: every namespace may call it (NetworkPolicy), so it changes DNS records for anyone in the cluster',
    })
  }
  if (spec.dns01_webhook.enabled) {
    endpoints.push({
      name: 'DNS01 webhook',
      port: spec.dns01_webhook.port,
      paths: `APIService v1alpha1.${spec.dns01_webhook.group_name} (solver ${spec.dns01_webhook.solver_name})`,
      callers: 'kube-apiserver\'s aggregation layer only (its front-proxy client certificate is checked); through it, cert-manager\'s ServiceAccount (RBAC)',
    })
  }
  return endpoints
}

/**
 * Which spec fields a person (or install) wrote (pure). The apiserver fills in the CRD's defaults, so the stored spec
 * alone cannot tell a given value from a default. What can: the field sets of server-side apply (install's; defaults
 * belong to no manager) and kubectl's last-applied-configuration. Without either (created with `kubectl create`), a
 * value counts as given where it differs from the default. A tree of the given fields (lists are leaves).
 */
export function givenSpec(object: {spec?: unknown; metadata?: Record<string, unknown>} | undefined, defaults: unknown): unknown {
  const entries = (object?.metadata?.managedFields as Array<{operation?: string; subresource?: string; fieldsV1?: Plain}> | undefined) ?? []
  const trees = entries.filter((entry) => entry.operation === 'Apply' && !entry.subresource && isPlain(entry.fieldsV1?.['f:spec']))
    .map((entry) => fieldsTree(entry.fieldsV1!['f:spec']))
  const annotations = object?.metadata?.annotations as Record<string, string> | undefined
  const lastApplied = annotations?.['kubectl.kubernetes.io/last-applied-configuration']
  if (lastApplied) {
    try {
      const applied = JSON.parse(lastApplied) as {spec?: unknown}
      if (isPlain(applied.spec)) trees.push(applied.spec)
    } catch {
      // not JSON: ignored
    }
  }
  if (trees.length > 0) return trees.reduce((merged, tree) => mergeTrees(merged, tree), {} as Plain)
  return diff(object?.spec ?? {}, defaults) ?? {}
}

/** A managedFields fieldsV1 set as a tree of field names (`f:` keys; list items are not descended into). */
function fieldsTree(fields: unknown): Plain {
  const out: Plain = {}
  if (!isPlain(fields)) return out
  for (const [key, child] of Object.entries(fields)) {
    if (!key.startsWith('f:')) continue
    const inner = fieldsTree(child)
    out[key.slice(2)] = Object.keys(inner).length > 0 ? inner : true
  }
  return out
}

function mergeTrees(a: Plain, b: Plain): Plain {
  const out: Plain = {...a}
  for (const [key, value] of Object.entries(b)) out[key] = isPlain(out[key]) && isPlain(value) ? mergeTrees(out[key] as Plain, value) : value
  return out
}

/** The operator's Deployment, as far as info reads it. */
export interface InfoDeployment extends KubeObject {
  spec?: {
    replicas?: number
    template?: {spec?: {
      containers?: Array<{name: string; image?: string; args?: string[]; resources?: unknown; securityContext?: {capabilities?: {add?: string[]}}}>
      imagePullSecrets?: Array<{name: string}>
    }}
  }
}

interface ClusterInput {
  namespace: string
  deployment?: InfoDeployment
  operatorConfig?: KubeObject & {spec?: unknown; status?: {controllers?: Array<{name: string; running?: boolean; reason?: string}>}}
  features: readonly FeatureSwitch[]
}

/** The configuration in force in a cluster (pure): the Deployment's install settings and the OperatorConfig's. */
export function clusterInfo(input: ClusterInput): OperatorInfo {
  const {namespace, deployment} = input
  const container = deployment?.spec?.template?.spec?.containers?.find((c) => c.name === 'operator') ?? deployment?.spec?.template?.spec?.containers?.[0]
  const args = container?.args ?? []
  const install: Setting[] = []
  if (deployment) {
    const image = container?.image ?? ''
    install.push(
      {path: 'namespace', value: namespace, from: namespace === DEFAULT_NAMESPACE ? 'default' : 'set'},
      {path: 'image', value: image, from: image === defaultImage() ? 'default' : 'set'},
      {path: 'image version', value: imageVersion(image) ?? '-', from: image === defaultImage() ? 'default' : 'set'},
      {path: 'deployment.replicas', value: String(deployment.spec?.replicas ?? 1), from: (deployment.spec?.replicas ?? 1) === 1 ? 'default' : 'set'},
      ...leafSettings(container?.resources ?? {}, diff(container?.resources, DEFAULT_OPERATOR_RESOURCES), 'deployment.resources'),
      {path: 'leader election', value: args.includes('--leader-elect') ? 'on (--leader-elect)' : 'off', from: args.includes('--leader-elect') ? 'default' : 'set'},
      {path: 'metrics', value: args.includes('--metrics-secure') ? 'HTTPS (--metrics-secure)' : 'HTTP', from: 'default'},
      {path: 'image_credentials', value: settingText((deployment.spec?.template?.spec?.imagePullSecrets ?? []).map((secret) => secret.name), 'image_credentials'), from: deployment.spec?.template?.spec?.imagePullSecrets?.length ? 'set' : 'default'},
      {path: 'security.add_capabilities', value: settingText(container?.securityContext?.capabilities?.add ?? [], 'add_capabilities'), from: container?.securityContext?.capabilities?.add?.length ? 'set' : 'default'},
    )
  }
  const spec = input.operatorConfig?.spec ?? {}
  const given = givenSpec(input.operatorConfig, validateOperatorConfigDefaults())
  const validation = validateOperatorConfig(spec)
  const effective = validation.ok ? validation.config : undefined
  const reported = new Map((input.operatorConfig?.status?.controllers ?? []).map((c) => [c.name, {running: c.running === true, reason: c.reason ?? null}]))
  return {
    source: [deployment ? `Deployment ${namespace}/${deployment.metadata?.name ?? OPERATOR_NAME}` : `no Deployment in namespace ${namespace}`,
      input.operatorConfig ? `OperatorConfig ${namespace}/${OPERATOR_CONFIG_NAME}` : `no OperatorConfig in namespace ${namespace} (the defaults)`].join(', '),
    namespace,
    install,
    operatorConfig: {
      name: `${namespace}/${OPERATOR_CONFIG_NAME}`,
      found: input.operatorConfig !== undefined,
      settings: effective ? leafSettings(effective, given) : leafSettings(spec, given),
      problems: validation.ok ? [] : validation.problems,
    },
    features: effective
      ? input.features.map((feature) => ({name: feature.name, ...featureWhy(feature, effective, given), ...(reported.has(feature.name) ? {reported: reported.get(feature.name)!} : {})}))
      : input.features.map((feature) => ({name: feature.name, on: false, why: 'paused: the OperatorConfig is invalid (see its problems)', ...(reported.has(feature.name) ? {reported: reported.get(feature.name)!} : {})})),
    endpoints: servedEndpoints(effective ?? validateOperatorConfigDefaults(), {metricsSecure: args.includes('--metrics-secure'), ...ports(args)}),
  }
}

/** What install would apply with these values (pure): the block's settings and the OperatorConfig's, with their source. */
export function valuesInfo(values: BlockValues, features: readonly FeatureSwitch[], source: string): OperatorInfo {
  const given = values.given
  const operatorGiven = isPlain(given.operator_config) ? given.operator_config : {}
  const {operator_config: _operatorConfig, ...block} = given
  const effectiveBlock = {
    namespace: values.namespace,
    image: values.image,
    image_credentials: values.imageCredentials,
    deployment: values.deployment,
    metrics: {enabled: values.metrics.enabled, alerts: values.metrics.alerts, dashboard: values.metrics.dashboard, ...(values.metrics.runbookBaseUrl ? {runbook_base_url: values.metrics.runbookBaseUrl} : {})},
    security: {add_capabilities: values.security.addCapabilities},
  }
  const imageGiven = ['image_registry', 'image_name', 'image_tag'].some((key) => key in block)
  const install = leafSettings(effectiveBlock, {...block, ...(imageGiven ? {image: true} : {})})
  const spec = values.effectiveSpec
  const credentials = isPlain(operatorGiven.api_sync) && isPlain(operatorGiven.api_sync.credentials) ? operatorGiven.api_sync.credentials : undefined
  const specGiven = {...operatorGiven, ...(credentials ? {api_sync: {...(operatorGiven.api_sync as Plain), credentials_ref: credentials}} : {})}
  const settings = leafSettings(spec, specGiven)
  if (values.apiSync.apiToken) settings.push({path: 'api_sync.credentials.api_token', value: '(redacted)', from: 'set'})
  return {
    source,
    namespace: values.namespace,
    install,
    operatorConfig: {name: `${values.namespace}/${values.operatorConfig.name}`, found: true, settings, problems: []},
    features: features.map((feature) => ({name: feature.name, ...featureWhy(feature, spec, specGiven)})),
    endpoints: servedEndpoints(spec, {metricsSecure: false}),
  }
}

/** The parts of `value` that differ from `defaults` (to mark resources as set), as a tree of `true`. */
function diff(value: unknown, defaults: unknown): unknown {
  if (!isPlain(value)) {
    const quantities = typeof value === 'string' && typeof defaults === 'string' && parseQuantity(value) !== undefined && parseQuantity(value) === parseQuantity(defaults)
    const same = JSON.stringify(value) === JSON.stringify(defaults) || quantities
    return same ? undefined : true
  }
  const out: Plain = {}
  for (const [key, child] of Object.entries(value)) {
    const inner = diff(child, isPlain(defaults) ? defaults[key] : undefined)
    if (inner !== undefined && !(isPlain(inner) && Object.keys(inner).length === 0)) out[key] = inner
  }
  return out
}

function ports(args: readonly string[]): {metricsPort?: number; healthPort?: number} {
  const port = (flag: string) => {
    const value = args[args.indexOf(flag) + 1]
    const match = args.includes(flag) && value ? /:(\d+)$/.exec(value) : null
    return match ? Number(match[1]) : undefined
  }
  return {metricsPort: port('--metrics-bind-address'), healthPort: port('--health-probe-bind-address')}
}

function validateOperatorConfigDefaults(): OperatorConfigSpec {
  const defaults = validateOperatorConfig({})
  if (!defaults.ok) throw new Error('the default OperatorConfig does not validate')
  return defaults.config
}
