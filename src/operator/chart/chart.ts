/**
 * The Helm chart `polycrate-operator` (pure: files by path, written by scripts/chart.ts): its values are the operator
 * block's `config:`, its templates are compiled (compile.ts) from the function `manifests --values` runs
 * (`valuesManifests`), so what the chart renders follows the TypeScript, and the chart test compares the two.
 *
 * - values.yaml: every setting with its default, from the zod schema of the values (`blockValuesSchema`);
 *   `operator_config` is `{}` (the OperatorConfig carries what is written, the operator applies the defaults, as
 *   with `install`), its defaults listed as comments.
 * - values.schema.json: the same schema as JSON Schema (z.toJSONSchema), unknown keys refused.
 * - crds/: the polycrate.io CRDs (`polycrate operator crds`): Helm installs them before the templates, and never
 *   upgrades or deletes them.
 * - templates/: one file per object; the VMServiceScrape, VMRule and PrometheusRule only where the cluster serves
 *   their API (`.Capabilities`, as `install` checks the CRDs; `helm template --api-versions` names them).
 * - the pre-delete hook (release-hook.ts).
 */
import yaml from 'js-yaml'
import {z} from 'zod'
import {allCrds} from '../../crds/index.js'
import {toCustomResourceDefinition} from '../../crds/generate.js'
import {crdFileName, toYaml} from '../../crds/render.js'
import type {KubeObject} from '../../kube/client.js'
import {operatorConfigSpec} from '../../crds/operatorconfig.js'
import {OPERATOR_NAME} from '../conventions.js'
import {DEFAULT_RUNBOOK_BASE_URL} from '../install/alerts.js'
import {blockValuesSchema, OPERATOR_BLOCK, parseBlockValues, ValuesError, type BlockValues} from '../install/values.js'
import {valuesManifests} from '../install/values-manifests.js'
import {ABSENT, OPAQUE, type TemplateNode} from './template-tree.js'
import {compileObjects, type Assignment, type Case, type CompiledObject, type Dimension} from './compile.js'
import {emitDocument, goLiteral} from './emit-yaml.js'

export {goLiteral} from './emit-yaml.js'
import {releaseHookObjects} from './release-hook.js'
import {schemaLeaves, unwrapSchema, type SchemaLeaf} from './schema-leaves.js'

export const CHART_NAME = OPERATOR_NAME

/** APIs whose objects the chart renders only where the cluster serves them (install checks the same CRDs). */
export const GATED_APIS = {
  vmServiceScrape: 'operator.victoriametrics.com/v1beta1/VMServiceScrape',
  vmRule: 'operator.victoriametrics.com/v1beta1/VMRule',
  prometheusRule: 'monitoring.coreos.com/v1/PrometheusRule',
} as const
export type Capabilities = Record<keyof typeof GATED_APIS, boolean>

/**
 * Settings that get no dimension: `operator_config.name` has one valid value; `api_sync.credentials.secret_name`
 * and `token_key` are the block's spelling of `credentials_ref` (the spec helper folds them in, like values.ts).
 */
const NOT_VARIED = new Set(['operator_config.name', 'operator_config.api_sync.credentials.secret_name', 'operator_config.api_sync.credentials.token_key'])

/** What the chart renders for parsed values on a cluster with `capabilities`: `manifests --values`' objects and the hook. */
export function chartObjects(values: BlockValues, capabilities: Capabilities): KubeObject[] {
  const {plan, objects} = valuesManifests(values, {
    vmServiceScrape: values.metrics.enabled && capabilities.vmServiceScrape,
    vmRule: values.metrics.alerts && capabilities.vmRule,
    prometheusRule: values.metrics.alerts && capabilities.prometheusRule,
  })
  const deployment = plan.workload.find((object) => object.kind === 'Deployment')!
  return [...objects.map(helmOwn), ...releaseHookObjects(deployment)]
}

/**
 * Helm's own annotation on the Namespace: `helm uninstall` keeps it. Helm stores the release in its namespace, often
 * the operator's (`helm install -n polycrate --create-namespace`); deleting it would take the release's record along
 * before Helm purges it. `uninstall` keeps a namespace it did not create, too.
 */
function helmOwn(object: KubeObject): KubeObject {
  if (object.kind !== 'Namespace') return object
  return {...object, metadata: {...object.metadata, annotations: {...object.metadata?.annotations as Record<string, string> | undefined, ...HELM_KEEP}}}
}

export const HELM_KEEP = {'helm.sh/resource-policy': 'keep'} as const

export interface ChartFiles {
  version: string
  /** Path inside the chart directory → content. */
  files: Map<string, string>
  objects: CompiledObject[]
}

export function buildChart(options: {version: string}): ChartFiles {
  const {version} = options
  const {dimensions, render} = chartModel(version)
  const objects = compileObjects({dimensions, render, opaque: new Map([['spec', '$spec']])})
  const files = new Map<string, string>()
  files.set('Chart.yaml', chartYaml(version))
  files.set('values.yaml', valuesYaml(version))
  files.set('values.schema.json', `${JSON.stringify(valuesJsonSchema(), null, 2)}\n`)
  files.set('templates/_helpers.tpl', HELPERS)
  files.set('templates/NOTES.txt', NOTES)
  for (const def of allCrds) files.set(`crds/${crdFileName(def)}`, toYaml(toCustomResourceDefinition(def)))
  const used = new Set<string>()
  for (const object of objects) {
    let name = templateFileName(object, dimensions)
    for (let n = 2; used.has(name); n++) name = `${templateFileName(object, dimensions).replace(/\.yaml$/, '')}-${n}.yaml`
    used.add(name)
    files.set(`templates/${name}`, templateFile(object))
  }
  return {version, files, objects}
}

/** The dimensions of the chart's settings and the render function the compiler runs. */
export function chartModel(version: string): {dimensions: Dimension[]; render: (assignment: Assignment) => KubeObject[] | undefined} {
  const leaves = schemaLeaves(blockValuesSchema).filter((leaf) => !NOT_VARIED.has(leaf.path.join('.')))
  const effective = operatorConfigSpec.parse({}) as Record<string, unknown>
  const dimensions: Dimension[] = []
  const config: Record<string, unknown> = {}
  const valid = (candidate: Record<string, unknown>) => {
    try {
      parseBlockValues(candidate, {version})
      return true
    } catch (error) {
      if (error instanceof ValuesError) return false
      throw error
    }
  }
  let counter = 0
  for (const leaf of leaves) {
    // A placeholder valid also with the section's switch on (api_sync.api_url must be a URL once api_sync.enabled):
    // otherwise the objects that switch adds could never be rendered beside it.
    const switchPath = [...leaf.path.slice(0, -1), 'enabled']
    const hasSwitch = leaf.path.at(-1) !== 'enabled' && leaves.some((other) => other.kind === 'boolean' && other.path.join('.') === switchPath.join('.'))
    const switchOn = withValue(config, switchPath, true)
    const accepts = (value: unknown) => valid(withValue(config, leaf.path, value))
    const acceptsSwitchedOn = (value: unknown) => !hasSwitch || valid(withValue(switchOn, leaf.path, value))
    const dimension = leafDimension(leaf, effective, () => ++counter, accepts, acceptsSwitchedOn)
    if (!dimension) continue
    dimensions.push(dimension)
    const base = dimension.cases[dimension.base]!.value
    if (base !== ABSENT) Object.assign(config, withValue(config, leaf.path, base))
  }
  for (const [name, api] of Object.entries(GATED_APIS)) {
    dimensions.push({
      name: `capabilities.${name}`,
      go: `($.Capabilities.APIVersions.Has ${JSON.stringify(api)})`,
      cases: [
        {label: 'served', value: true, cond: `$.Capabilities.APIVersions.Has ${JSON.stringify(api)}`},
        {label: 'not served', value: false, cond: `not ($.Capabilities.APIVersions.Has ${JSON.stringify(api)})`},
      ],
      base: 0,
    })
  }
  const byName = new Map(dimensions.map((dimension) => [dimension.name, dimension]))
  const render = (assignment: Assignment): KubeObject[] | undefined => {
    let raw: Record<string, unknown> = {}
    const capabilities = {} as Capabilities
    for (const [name, index] of assignment) {
      const value = byName.get(name)!.cases[index]!.value
      if (name.startsWith('capabilities.')) capabilities[name.slice('capabilities.'.length) as keyof Capabilities] = value as boolean
      else if (value !== ABSENT) raw = withValue(raw, name.split('.'), value)
    }
    let values: BlockValues
    try {
      values = parseBlockValues(raw, {version})
    } catch (error) {
      if (error instanceof ValuesError) return undefined
      throw error
    }
    return chartObjects(values, capabilities).map((object) => (object.kind === 'OperatorConfig' ? {...object, spec: {[OPAQUE]: 'spec'}} as KubeObject : object))
  }
  return {dimensions, render}
}

/**
 * The cases of one setting, with placeholders that the values accept (`accepts`): a token string, a sentinel
 * number, or for quantities a sentinel with a unit.
 */
function leafDimension(leaf: SchemaLeaf, effective: Record<string, unknown>, next: () => number, accepts: (value: unknown) => boolean, preferred: (value: unknown) => boolean = () => true): Dimension | undefined {
  const name = leaf.path.join('.')
  const inSpec = leaf.path[0] === 'operator_config'
  const keys = inSpec ? leaf.path.slice(1) : leaf.path
  const fallback = inSpec ? valueIn(effective, keys) : leaf.default
  const go = `(dig ${keys.map((key) => JSON.stringify(key)).join(' ')} ${goLiteral(fallback)} ${inSpec ? '$spec' : '$v'})`
  // api_token is not in the spec (the helper drops it, as values.ts does): read it from the values.
  const read = name === 'operator_config.api_sync.credentials.api_token' ? `(dig ${leaf.path.map((key) => JSON.stringify(key)).join(' ')} nil $v)` : go
  const absent: Case = {label: 'absent', value: ABSENT, cond: `kindIs "invalid" ${read}`}
  const cases: Case[] = []
  let base = 0
  const placeholder = (candidates: unknown[]): Case | undefined => {
    const value = candidates.find((candidate) => accepts(candidate) && preferred(candidate)) ?? candidates.find(accepts)
    return value === undefined ? undefined : {label: 'placeholder', value, cond: 'true', placeholder: true}
  }
  const tokens = () => {
    const n = next()
    return [`zq${n}qz`, `ZQ${n}QZ`, `https://zq${n}qz.example`, `zq${n}qz.example`]
  }
  const sentinel = () => 40_000 + next() * 7
  switch (leaf.kind) {
    case 'boolean': {
      cases.push({label: 'false', value: false, cond: `not ${read}`}, {label: 'true', value: true, cond: read})
      base = leaf.default === true ? 1 : 0
      break
    }
    case 'enum': {
      for (const value of leaf.values!) cases.push({label: value, value, cond: `eq ${read} ${JSON.stringify(value)}`})
      base = Math.max(0, leaf.values!.indexOf(String(leaf.default)))
      if (leaf.optional) {
        cases.push(absent)
        base = cases.length - 1
      }
      break
    }
    case 'string':
    case 'string-or-number':
    case 'number': {
      const sentinelValue = sentinel()
      const candidates = leaf.kind === 'number' ? [sentinelValue] : [...tokens(), `${sentinelValue}m`, ...(leaf.kind === 'string-or-number' ? [sentinelValue] : [])]
      const ph = placeholder(candidates)
      if (!ph) return undefined
      if (leaf.optional) cases.push(absent)
      if (leaf.kind !== 'number') {
        // (toString of a missing value is "<nil>")
        const empty = {label: 'empty', value: '', cond: `eq (toString ${read}) ""`}
        if (accepts('')) cases.push(empty)
      }
      if (leaf.kind === 'number' && leaf.integer && typeof leaf.default === 'number' && leaf.default < 10) {
        for (const count of [0, 1, 2, 3]) if (accepts(count)) cases.push({label: String(count), value: count, cond: `eq (int ${read}) ${count}`})
      }
      cases.push(ph)
      base = leaf.optional ? 0 : cases.length - 1
      break
    }
    case 'array': {
      const element = leaf.element!
      const itemTokens = () => sampleOf(element, tokens, sentinel)
      const first = itemTokens()
      const second = itemTokens()
      if (first === undefined || second === undefined || !accepts([first, second])) return undefined
      const defaults = Array.isArray(fallback) ? fallback : []
      // An optional list without a default: left out is not the same as empty (allowed_from: every namespace / none).
      const canBeAbsent = leaf.optional && fallback === undefined
      if (canBeAbsent) cases.push(absent)
      cases.push({label: 'empty', value: [], cond: canBeAbsent ? `and (kindIs "slice" ${read}) (empty ${read})` : `empty ${read}`})
      if (defaults.length > 0) cases.push({label: 'default', value: defaults, cond: `eq (toJson ${read}) ${JSON.stringify(JSON.stringify(defaults))}`})
      cases.push({label: 'sample', value: [first, second], cond: 'true', placeholder: true})
      cases.push({label: 'duplicate', value: [first, first, second], cond: 'false', probe: true})
      // The sample as the base: the other cases are found from it by putting their items in its place.
      base = cases.findIndex((candidate) => candidate.placeholder)
      return {name, go: read, cases, base, sampleItems: [first, second]}
    }
    default:
      return undefined
  }
  return {name, go: read, cases, base}
}

/**
 * A value of `schema` made of placeholders (a list setting's sample item): a token or sentinel for a scalar, every
 * field of an object (or only the required ones), a token key for a map; undefined when none is valid.
 */
function sampleOf(schema: z.ZodType, tokens: () => string[], sentinel: () => number): unknown {
  const candidates = (optionalFields: boolean): unknown[] => {
    const {inner} = unwrapSchema(schema)
    const def = (inner as unknown as {def: {type: string; shape?: Record<string, z.ZodType>; valueType?: z.ZodType; entries?: Record<string, string>; element?: z.ZodType}}).def
    switch (def.type) {
      case 'string': return tokens()
      case 'number': return [sentinel()]
      case 'boolean': return [true]
      case 'enum': return Object.values(def.entries!).slice(0, 1)
      case 'array': return [[]]
      case 'record': {
        const key = tokens()[0]!
        const value = sampleOf(def.valueType!, tokens, sentinel)
        return value === undefined ? [{}] : [{[key]: value}]
      }
      case 'object': {
        const fields: Record<string, unknown> = {}
        for (const [key, field] of Object.entries(def.shape!)) {
          if (!optionalFields && unwrapSchema(field).optional) continue
          const value = sampleOf(field, tokens, sentinel)
          if (value !== undefined) fields[key] = value
        }
        return [fields]
      }
      default: return []
    }
  }
  // An object whose fields exclude each other (a NetworkPolicy peer: namespaceSelector, podSelector or ipBlock): one field.
  const single = (): unknown[] => {
    const {inner} = unwrapSchema(schema)
    const def = (inner as unknown as {def: {type: string; shape?: Record<string, z.ZodType>}}).def
    if (def.type !== 'object') return []
    return Object.entries(def.shape!).flatMap(([key, field]) => {
      const value = sampleOf(field, tokens, sentinel)
      return value === undefined ? [] : [{[key]: value}]
    })
  }
  return [...candidates(true), ...candidates(false), ...single()].find((candidate) => schema.safeParse(candidate).success)
}

function withValue(config: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const [key, ...rest] = path
  const copy = {...config}
  copy[key!] = rest.length === 0 ? value : withValue((typeof config[key!] === 'object' && config[key!] !== null ? config[key!] : {}) as Record<string, unknown>, rest, value)
  return copy
}

function valueIn(value: unknown, path: readonly string[]): unknown {
  let current = value
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined
    current = (current as Record<string, unknown>)[key]
  }
  return current
}

function templateFileName(object: CompiledObject, dimensions: readonly Dimension[]): string {
  const tokens = dimensions.flatMap((dimension) => {
    const placeholder = dimension.cases.find((candidate) => candidate.placeholder)
    return placeholder && typeof placeholder.value === 'string' ? [[placeholder.value, dimension.name.split('.').at(-1)!] as const] : []
  })
  const readable = (text: string) => tokens.reduce((result, [token, name]) => result.split(token).join(name), text)
  const namespace = String(object.object.metadata?.namespace ?? '')
  // A namespace other than the operator's (a Role in kube-system) is part of the name.
  const where = namespace && readable(namespace) === namespace ? `${namespace}-` : ''
  const name = readable(String(object.object.metadata?.name ?? 'object'))
  return `${String(object.object.kind).toLowerCase()}-${where}${name}`.replace(/[^a-zA-Z0-9.-]+/g, '-').toLowerCase() + '.yaml'
}

const GENERATED = '{{- /* Generated by `npm run chart` from the code of `polycrate operator manifests --values` (src/operator/chart/); do not edit. */ -}}'

function templateFile(object: CompiledObject): string {
  return [
    GENERATED,
    '{{- $v := include "polycrate-operator.values" . | fromJson }}',
    '{{- $spec := include "polycrate-operator.spec" . | fromJson }}',
    ...emitDocument(object.template as TemplateNode),
    '',
  ].join('\n')
}

/**
 * `polycrate-operator.values`: the values as plain maps (dig needs them). `polycrate-operator.spec`: the
 * OperatorConfig's spec from `operator_config` as values.ts writes it — without `name`, without the token, the
 * block's `credentials` folded into `credentials_ref` (whose keys win).
 */
const HELPERS = `${GENERATED}
{{- define "polycrate-operator.values" -}}
{{- toJson .Values -}}
{{- end -}}

{{- define "polycrate-operator.spec" -}}
{{- $spec := omit (deepCopy (.Values.operator_config | default dict)) "name" -}}
{{- if and (kindIs "map" $spec.api_sync) (kindIs "map" (get $spec.api_sync "credentials")) -}}
{{- $sync := $spec.api_sync -}}
{{- $ref := omit $sync.credentials "api_token" -}}
{{- if kindIs "map" (get $sync "credentials_ref") -}}
{{- $ref = merge (deepCopy $sync.credentials_ref) $ref -}}
{{- end -}}
{{- $_ := unset $sync "credentials" -}}
{{- if $ref -}}
{{- $_ := set $sync "credentials_ref" $ref -}}
{{- end -}}
{{- if not $sync -}}
{{- $_ := unset $spec "api_sync" -}}
{{- end -}}
{{- end -}}
{{- toJson $spec -}}
{{- end -}}
`

const NOTES = `The Polycrate operator {{ .Chart.AppVersion }} is installed in namespace {{ .Values.namespace }}.

  kubectl -n {{ .Values.namespace }} rollout status deployment/polycrate-operator
  polycrate operator status -n {{ .Values.namespace }}

helm uninstall runs a pre-delete hook first (\`polycrate operator uninstall --release-only\`: the operator stopped,
its finalizers released), so nothing is left waiting for an operator that is gone. The CRDs stay (Helm never deletes
them); \`polycrate operator uninstall --crds\` removes them and every polycrate.io object.
`

function chartYaml(version: string): string {
  return yaml.dump({
    apiVersion: 'v2',
    name: CHART_NAME,
    description: 'The Polycrate operator: discovery of endpoints, apps, hosts, backups, certificates, artifacts and volumes, synced to the Polycrate API; DNS webhooks for external-dns and cert-manager; endpoint monitoring. Values: the operator block\'s config.',
    type: 'application',
    version,
    appVersion: version,
    // The Deployment's preStop sleep needs Kubernetes 1.30.
    kubeVersion: '>=1.30.0-0',
    keywords: ['polycrate', 'operator'],
    annotations: {'polycrate.io/block': OPERATOR_BLOCK},
  }, {lineWidth: -1})
}

/** The schema of the values, as Helm checks them: unknown keys refused at every level. */
export function valuesJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(blockValuesSchema, {io: 'input', unrepresentable: 'any'}) as Record<string, unknown>
  const close = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(close)
      return
    }
    if (node === null || typeof node !== 'object') return
    const record = node as Record<string, unknown>
    if (record.type === 'object' && record.properties && record.additionalProperties === undefined) record.additionalProperties = false
    Object.values(record).forEach(close)
  }
  close(schema)
  return {...schema, title: 'Values of the polycrate-operator chart: the operator block\'s config'}
}

/** values.yaml: the defaults of every setting (as `manifests --values` applies them), comments from the schema. */
export function valuesYaml(version: string): string {
  const leaves = schemaLeaves(blockValuesSchema)
  const lines: string[] = [
    '# The operator block\'s config: (cargo.ayedo.cloud/ayedo/k8s/polycrate-operator), the same keys and defaults.',
    '# `polycrate operator manifests --values FILE` renders the same objects from the same file (a workspace.poly with',
    '# blocks:, a block entry with config:, or this map) as `helm template` with `-f FILE` (a plain map only).',
    '# An unknown key or a wrong type is refused (values.schema.json).',
  ]
  const written = new Set<string>()
  for (const leaf of leaves) {
    const [top] = leaf.path
    if (top === 'operator_config') {
      if (!written.has(top)) {
        written.add(top)
        lines.push('', '# The OperatorConfig `default`\'s spec, written as given (the operator applies its defaults, as with `install`);',
          '# `api_sync.credentials.api_token` goes into the token Secret, never into the OperatorConfig. The defaults:',
          'operator_config: {}',
          ...yaml.dump({operator_config: operatorConfigSpec.parse({})}, {lineWidth: -1}).trimEnd().split('\n').map((line) => `# ${line}`))
      }
      continue
    }
    // A section without a default below it is written `{}` (a key with only comments under it would be null).
    const hasDefaults = (prefix: readonly string[]) => leaves.some((other) => other.hasDefault && prefix.every((key, index) => other.path[index] === key))
    leaf.path.slice(0, -1).forEach((section, depth) => {
      const id = leaf.path.slice(0, depth + 1).join('.')
      if (written.has(id)) return
      written.add(id)
      if (depth === 0) lines.push('')
      const enclosingEmpty = depth > 0 && !hasDefaults(leaf.path.slice(0, depth))
      if (enclosingEmpty) lines.push(`${'  '.repeat(depth)}# ${section}:`)
      else lines.push(`${'  '.repeat(depth)}${section}:${hasDefaults(leaf.path.slice(0, depth + 1)) ? '' : ' {}'}`)
    })
    const indent = '  '.repeat(leaf.path.length - 1)
    const key = leaf.path.at(-1)!
    if (leaf.description) lines.push(`${indent}# ${leaf.description}`)
    if (leaf.hasDefault) {
      lines.push(`${indent}${yaml.dump({[key]: leaf.default}, {lineWidth: -1, flowLevel: 1}).trimEnd()}`)
    } else if (key === 'image_tag') {
      lines.push(`${indent}# ${key}: ${version}   # the chart's appVersion when left out`)
    } else if (key === 'runbook_base_url') {
      lines.push(`${indent}# ${key}: ${DEFAULT_RUNBOOK_BASE_URL}   # where the alerts' runbook_url links point (<base>#<alert>)`)
    } else {
      lines.push(`${indent}# ${key}:`)
    }
  }
  return `${lines.join('\n')}\n`
}
