/**
 * The operator block's `config:` (cargo.ayedo.cloud/ayedo/k8s/polycrate-operator, its README's spelling), parsed
 * strictly and filled with the block's defaults. Pure: `parseBlockValues` takes what a YAML file held (after
 * `selectBlockConfig` picked the block's `config:` out of it) and returns typed values or every problem at once.
 *
 * The `operator_config` section is the OperatorConfig spec (the same zod schema as the CRD), plus `name` (the CR's
 * name) and `api_sync.credentials.api_token` (the agent token: it goes into a Secret, never into the CR).
 */
import {z} from 'zod'
import {operatorConfigSpec} from '../../crds/operatorconfig.js'
import {parseQuantity} from '../../lib/quantity.js'
import {nearest} from '../../lib/suggest.js'
import {operatorVersion} from '../../version.js'
import {DEFAULT_NAMESPACE, OPERATOR_CONFIG_NAME} from '../conventions.js'
import {validateOperatorConfig} from '../config/operator-config.js'
import {DEFAULT_OPERATOR_RESOURCES, type NetworkPolicyPeer, type RbacSubject} from '../manifests.js'
import {imageNameProblem, imageReferenceProblem, imageTagProblem, namespaceProblem, registryProblem, replicasProblem} from './inputs.js'

/** The block's name in workspaces (`name:` or `from:` of a block entry ends with it). */
export const OPERATOR_BLOCK = 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator'
export const DEFAULT_IMAGE_REGISTRY = 'cargo.ayedo.cloud'
export const DEFAULT_IMAGE_NAME = 'library/polycrate'

/** The operator's image as the block names it: `<registry>/<name>:<tag>`, the tag being the app version by default. */
export function defaultImage(version = operatorVersion()): string {
  return `${DEFAULT_IMAGE_REGISTRY}/${DEFAULT_IMAGE_NAME}:${version}`
}

/** A parsed, defaulted `config:`. */
export interface BlockValues {
  namespace: string
  /** `<image_registry>/<image_name>:<image_tag>`. */
  image: string
  imageCredentials: {enabled: boolean; name: string; registry: string; username: string; password: string}
  deployment: {
    replicas: number
    resources: {requests: {cpu: string; memory: string}; limits: {cpu: string; memory: string}}
  }
  operatorConfig: {
    name: string
    /** The OperatorConfig spec as written (no api_token; `credentials` written as `credentials_ref`). */
    spec: Record<string, unknown>
  }
  /** Where the agent token lives, and the token itself when the values carry one. */
  apiSync: {enabled: boolean; secretName: string; tokenKey: string; apiToken?: string}
  /**
   * `alerts`: VMRule/PrometheusRule; `dashboard`: the Grafana dashboard ConfigMap (alerts.ts, dashboard.ts);
   * `secure`: HTTPS with TokenReview + SubjectAccessReview; `readers`: subjects (ServiceAccount, User, Group) bound to the metrics-reader
   * ClusterRole; `allowedFrom`: the NetworkPolicy peers that reach the metrics port (absent: every namespace).
   */
  metrics: {enabled: boolean; alerts: boolean; dashboard: boolean; runbookBaseUrl?: string; secure: boolean; readers: RbacSubject[]; allowedFrom?: NetworkPolicyPeer[]}
  /** The NetworkPolicy peers that reach the external-dns webhook (absent: every namespace, the operator reference's rule). */
  externalDnsWebhook: {allowedFrom?: NetworkPolicyPeer[]}
  security: {addCapabilities: string[]}
  /** The parsed OperatorConfig spec with every default (ports of the webhooks, …). */
  effectiveSpec: z.infer<typeof operatorConfigSpec>
  /** The `config:` as the files wrote it (merged), to tell a setting given from a default (`info`); holds secrets. */
  given: Record<string, unknown>
}

/** The values are not what the block accepts; `problems` are `config.<path>: <what is wrong>`, one per line. */
export class ValuesError extends Error {
  override name = 'ValuesError'
  constructor(readonly problems: string[], readonly source?: string, message?: string) {
    super(message ?? `${source ? `${source}: ` : ''}invalid operator block values:\n  ${problems.join('\n  ')}`)
  }
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

const quantity = z.union([z.string(), z.number()])
  .transform((value) => String(value))
  .refine((value) => parseQuantity(value) !== undefined && parseQuantity(value)! >= 0, {message: 'not a Kubernetes quantity (e.g. 100m, 1, 256Mi, 1Gi)'})
/** Requests or limits, each defaulted separately to the block's (DEFAULT_OPERATOR_RESOURCES). */
const cpuMemory = (defaults: {cpu: string; memory: string}) => z.object({cpu: quantity.default(defaults.cpu), memory: quantity.default(defaults.memory)})

const labelSelector = z.object({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(z.object({
    key: z.string().min(1),
    operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
    values: z.array(z.string()).optional(),
  })).optional(),
})
/** A NetworkPolicy peer as Kubernetes writes one; `{namespaceSelector: {}}` is every Pod of every namespace. */
const networkPolicyPeer = z.object({
  namespaceSelector: labelSelector.optional(),
  podSelector: labelSelector.optional(),
  ipBlock: z.object({cidr: z.string().min(1), except: z.array(z.string()).optional()}).optional(),
}).refine((peer) => Object.keys(peer).length > 0, {message: 'a peer needs namespaceSelector, podSelector or ipBlock (`{namespaceSelector: {}}` is every namespace)'})
  .refine((peer) => !(peer.ipBlock && (peer.namespaceSelector || peer.podSelector)), {message: 'ipBlock cannot be combined with namespaceSelector or podSelector'})
const allowedFrom = z.array(networkPolicyPeer)
/** A subject of the metrics-reader binding, as a RoleBinding writes it. */
const rbacSubject = z.object({
  kind: z.enum(['ServiceAccount', 'User', 'Group']),
  name: z.string().min(1),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name').optional(),
}).refine((subject) => (subject.kind === 'ServiceAccount') === (subject.namespace !== undefined), {message: 'a ServiceAccount needs its namespace, a User or Group has none (e.g. {kind: ServiceAccount, namespace: monitoring, name: vmagent})'})

// The spec sections of the CRD schema, with the block's additions to api_sync.credentials.
const specSections = operatorConfigSpec.shape
const apiSyncSection = specSections.api_sync.unwrap()
const blockCredentials = apiSyncSection.shape.credentials.unwrap().extend({
  api_token: z.string().optional().describe('The agent token; written to the Secret credentials.secret_name, never into the OperatorConfig.'),
})
const blockOperatorConfig = operatorConfigSpec.extend({
  name: z.string().refine((name) => name === OPERATOR_CONFIG_NAME, {
    message: `the operator reads the OperatorConfig named "${OPERATOR_CONFIG_NAME}" only (one per operator namespace); leave name out or set it to "${OPERATOR_CONFIG_NAME}"`,
  }).default(OPERATOR_CONFIG_NAME),
  api_sync: apiSyncSection.extend({credentials: blockCredentials.optional()}).optional(),
})

/** A value checked by one of the rules of inputs.ts (the same rules as the flags). */
function rule<T>(problem: (value: T) => string | undefined) {
  return (value: T, context: z.RefinementCtx) => {
    const found = problem(value)
    if (found) context.addIssue({code: 'custom', message: found})
  }
}

export const blockValuesSchema = z.object({
  namespace: z.string().superRefine(rule(namespaceProblem)).default(DEFAULT_NAMESPACE),
  image_registry: z.string().superRefine(rule(registryProblem)).default(DEFAULT_IMAGE_REGISTRY),
  image_name: z.string().superRefine(rule(imageNameProblem)).default(DEFAULT_IMAGE_NAME),
  image_tag: z.union([z.string(), z.number()]).transform((value) => String(value)).superRefine(rule(imageTagProblem)).optional(),
  image_credentials: z.object({
    enabled: z.boolean().default(false),
    name: z.string().regex(dns1123Subdomain, 'must be a Secret name (a DNS subdomain)').default('polycrate-registry'),
    registry: z.string().min(1).default(DEFAULT_IMAGE_REGISTRY),
    username: z.string().default(''),
    password: z.string().default(''),
  }).optional(),
  deployment: z.object({
    replicas: z.number().int().min(1, {error: (issue) => replicasProblem(Number(issue.input))}).default(1),
    resources: z.object({
      requests: cpuMemory(DEFAULT_OPERATOR_RESOURCES.requests).optional(),
      limits: cpuMemory(DEFAULT_OPERATOR_RESOURCES.limits).optional(),
    }).optional(),
  }).optional(),
  operator_config: blockOperatorConfig.optional(),
  metrics: z.object({
    enabled: z.boolean().default(true),
    alerts: z.boolean().default(false),
    dashboard: z.boolean().default(false),
    runbook_base_url: z.string().min(1).optional(),
    secure: z.boolean().default(true),
    readers: z.array(rbacSubject).default(() => []),
    allowed_from: allowedFrom.optional(),
  }).optional(),
  external_dns_webhook: z.object({
    allowed_from: allowedFrom.optional(),
  }).optional(),
  security: z.object({
    add_capabilities: z.array(z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be a Linux capability name without CAP_, e.g. NET_RAW')).default(() => []),
  }).optional(),
})

/** Parses a block `config:` (a plain object; null/undefined = all defaults). Throws ValuesError with every problem. */
export function parseBlockValues(input: unknown, options: {version?: string; source?: string} = {}): BlockValues {
  const raw = input ?? {}
  if (!isPlainObject(raw)) throw new ValuesError([`config: expected a map of settings, got ${describeValue(raw)}`], options.source)
  const problems = unknownKeyProblems(blockValuesSchema, raw, ['config'])
  const parsed = blockValuesSchema.safeParse(raw)
  if (!parsed.success) problems.push(...parsed.error.issues.map((issue) => describeIssue(issue, raw)))
  if (problems.length > 0 || !parsed.success) throw new ValuesError(problems, options.source)
  const values = parsed.data

  const credentials = {enabled: false, name: 'polycrate-registry', registry: DEFAULT_IMAGE_REGISTRY, username: '', password: '', ...values.image_credentials}
  if (credentials.enabled && (!credentials.username || !credentials.password)) {
    problems.push('config.image_credentials: enabled is true, so username and password must be set')
  }

  const image = `${values.image_registry}/${values.image_name}:${values.image_tag ?? options.version ?? operatorVersion()}`
  const imageProblem = imageReferenceProblem(image)
  if (imageProblem) problems.push(`config.image_registry/image_name/image_tag: ${imageProblem}`)

  const {name, spec: crSpec, apiSync} = operatorConfigSpecOf(raw.operator_config)
  const checked = validateOperatorConfig(crSpec)
  if (!checked.ok) problems.push(...checked.problems.map((problem) => problem.replace(/^spec\b/, 'config.operator_config')))
  if (problems.length > 0 || !checked.ok) throw new ValuesError(problems, options.source)

  const resources = values.deployment?.resources
  return {
    namespace: values.namespace,
    image,
    imageCredentials: credentials,
    deployment: {
      replicas: values.deployment?.replicas ?? 1,
      resources: {
        requests: {cpu: resources?.requests?.cpu ?? DEFAULT_OPERATOR_RESOURCES.requests.cpu, memory: resources?.requests?.memory ?? DEFAULT_OPERATOR_RESOURCES.requests.memory},
        limits: {cpu: resources?.limits?.cpu ?? DEFAULT_OPERATOR_RESOURCES.limits.cpu, memory: resources?.limits?.memory ?? DEFAULT_OPERATOR_RESOURCES.limits.memory},
      },
    },
    operatorConfig: {name, spec: crSpec},
    apiSync: {
      enabled: checked.config.api_sync.enabled,
      secretName: checked.config.api_sync.credentials_ref.secret_name,
      tokenKey: checked.config.api_sync.credentials_ref.token_key,
      ...(apiSync.apiToken ? {apiToken: apiSync.apiToken} : {}),
    },
    metrics: {
      enabled: values.metrics?.enabled ?? true,
      alerts: values.metrics?.alerts ?? false,
      dashboard: values.metrics?.dashboard ?? false,
      ...(values.metrics?.runbook_base_url ? {runbookBaseUrl: values.metrics.runbook_base_url} : {}),
      secure: values.metrics?.secure ?? true,
      readers: (values.metrics?.readers ?? []) as RbacSubject[],
      ...(values.metrics?.allowed_from ? {allowedFrom: values.metrics.allowed_from as NetworkPolicyPeer[]} : {}),
    },
    externalDnsWebhook: values.external_dns_webhook?.allowed_from ? {allowedFrom: values.external_dns_webhook.allowed_from as NetworkPolicyPeer[]} : {},
    security: {addCapabilities: [...new Set(values.security?.add_capabilities ?? [])]},
    effectiveSpec: checked.config,
    given: structuredClone(raw),
  }
}

/**
 * The OperatorConfig spec from `operator_config` as written: without `name`, without the token, the block's
 * `credentials` (the deprecated alias) written as `credentials_ref` (which wins where both are set).
 */
function operatorConfigSpecOf(section: unknown): {name: string; spec: Record<string, unknown>; apiSync: {apiToken?: string}} {
  const {name, ...spec} = structuredClone(isPlainObject(section) ? section : {}) as Record<string, unknown>
  const apiSync = spec.api_sync
  let apiToken: string | undefined
  if (isPlainObject(apiSync) && isPlainObject(apiSync.credentials)) {
    const {api_token: token, ...reference} = apiSync.credentials as Record<string, unknown>
    apiToken = typeof token === 'string' && token.length > 0 ? token : undefined
    delete apiSync.credentials
    const ref = {...reference, ...(isPlainObject(apiSync.credentials_ref) ? apiSync.credentials_ref : {})}
    if (Object.keys(ref).length > 0) apiSync.credentials_ref = ref
    if (Object.keys(apiSync).length === 0) delete spec.api_sync
  }
  return {name: typeof name === 'string' ? name : OPERATOR_CONFIG_NAME, spec, apiSync: {apiToken}}
}

/**
 * Picks the operator block's `config:` out of what a values file holds:
 * - `blocks: [...]` (a workspace.poly / secrets.poly): the `config:` of every entry whose `name` or `from` is the
 *   operator block (`…/polycrate-operator`, any version tag), merged in order;
 * - else a top-level `config:` (a block entry or block.poly);
 * - else the map itself is the `config:`.
 */
export function selectBlockConfig(document: unknown, source = 'values'): Record<string, unknown> {
  if (document === null || document === undefined) return {}
  if (!isPlainObject(document)) throw new ValuesError([`expected a map (the block's config:, a block entry or a workspace file with blocks:), got ${describeValue(document)}`], source)
  if ('blocks' in document) {
    const blocks = document.blocks
    if (!Array.isArray(blocks)) throw new ValuesError([`blocks: expected a list of block entries, got ${describeValue(blocks)}`], source)
    const ours = blocks.filter((entry) => isPlainObject(entry) && [entry.name, entry.from].some(isOperatorBlock))
    if (ours.length === 0) {
      const names = blocks.map((entry) => (isPlainObject(entry) ? String(entry.from ?? entry.name ?? '?') : '?'))
      throw new ValuesError([`blocks: no entry whose name or from is the operator block (${OPERATOR_BLOCK}); found: ${names.join(', ') || 'none'}`], source)
    }
    return ours.reduce<Record<string, unknown>>((merged, entry) => {
      const config = (entry as Record<string, unknown>).config ?? {}
      if (!isPlainObject(config)) throw new ValuesError([`blocks[${blocks.indexOf(entry)}].config: expected a map, got ${describeValue(config)}`], source)
      return deepMerge(merged, config)
    }, {})
  }
  if ('config' in document) {
    const config = document.config ?? {}
    if (!isPlainObject(config)) throw new ValuesError([`config: expected a map, got ${describeValue(config)}`], source)
    return config
  }
  return document
}

function isOperatorBlock(name: unknown): boolean {
  return typeof name === 'string' && /(^|\/)polycrate-operator(:[^/]*)?$/.test(name)
}

/** Maps merged key by key (the later wins); lists and scalars replaced. */
export function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = {...base}
  for (const [key, value] of Object.entries(over)) {
    const current = merged[key]
    merged[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value
  }
  return merged
}

/** Keys the schema does not know, with the nearest known key of the same map. */
export function unknownKeyProblems(schema: z.ZodType, value: unknown, path: Array<string | number>): string[] {
  const inner = unwrap(schema)
  const def = (inner as {def: {type: string}}).def
  if (def.type === 'object' && isPlainObject(value)) {
    const shape = (inner as z.ZodObject).shape as Record<string, z.ZodType>
    const known = Object.keys(shape)
    const problems: string[] = []
    for (const [key, child] of Object.entries(value)) {
      if (!(key in shape)) {
        const suggestion = nearest(key, known)
        problems.push(`${formatPath([...path, key])}: unknown setting${suggestion ? ` (did you mean "${suggestion}"?)` : `; known here: ${known.join(', ')}`}`)
      } else {
        problems.push(...unknownKeyProblems(shape[key]!, child, [...path, key]))
      }
    }
    return problems
  }
  if (def.type === 'array' && Array.isArray(value)) {
    const element = (inner as z.ZodArray).element as z.ZodType
    return value.flatMap((item, index) => unknownKeyProblems(element, item, [...path, index]))
  }
  return []
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema as {def: {type: string; innerType?: z.ZodType; in?: z.ZodType}}
  for (;;) {
    const {type} = current.def
    if (['default', 'optional', 'nullable', 'prefault', 'readonly', 'catch', 'nonoptional'].includes(type) && current.def.innerType) current = current.def.innerType as never
    else if (type === 'pipe' && current.def.in) current = current.def.in as never
    else return current as unknown as z.ZodType
  }
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const path = formatPath(['config', ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))])
  if (issue.code === 'invalid_type') {
    const expected = issue.expected === 'int' ? 'an integer' : issue.expected === 'array' ? 'a list' : issue.expected === 'object' ? 'a map' : `a ${issue.expected}`
    return `${path}: expected ${expected}, got ${describeValue(valueAt(input, issue.path), secretPath(issue.path))}`
  }
  if (issue.code === 'invalid_union') return `${path}: expected a string or a number, got ${describeValue(valueAt(input, issue.path), secretPath(issue.path))}`
  return `${path}: ${issue.message}`
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

/** Settings whose values are never repeated in a message. */
function secretPath(path: readonly PropertyKey[]): boolean {
  return /password|token/i.test(String(path.at(-1) ?? ''))
}

function describeValue(value: unknown, secret = false): string {
  if (value === undefined) return 'nothing'
  if (secret && value !== null && typeof value !== 'object') return `a ${typeof value}`
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'a map'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
  return `the ${typeof value} ${String(value)}`
}

function formatPath(path: ReadonlyArray<string | number>): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('')
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
