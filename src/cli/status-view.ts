/**
 * What `polycrate operator status` prints, as pure functions of what was listed (src/kube/resources-inventory.ts):
 * one row per object (phase, sync state and API ID, read in both the camelCase and the snake_case spelling, and the
 * kind's own `kubectl get` columns), ages like kubectl's, the OperatorConfig summary, one table per kind, the
 * JSON/YAML document and the messages. The clock and colours are passed in; no I/O here.
 */
import {Chalk, type ChalkInstance} from 'chalk'
import {allCrds, findCrd} from '../crds/index.js'
import type {CrdDefinition, PrinterColumn} from '../crds/define.js'
import type {Inventory, InventoryObject} from '../kube/resources-inventory.js'
import {renderTable} from './table.js'
import type {HeldObject} from '../operator/held.js'

// -- messages -----------------------------------------------------------------------------------------------------

export const TITLE = 'Polycrate Operator Status'
export const NO_RESOURCES = 'No polycrate.io resources found.'
export const NO_OPERATOR_CONFIG =
  'No OperatorConfig found: the operator runs with the defaults (create polycrate/default to configure it).'
export const CRDS_MISSING =
  'The polycrate.io CRDs are not installed in this cluster: run `polycrate operator install-crds` ' +
  '(or `polycrate operator crds | kubectl apply --server-side -f -`).'

export function noOperatorConfigIn(namespace: string): string {
  return `No OperatorConfig in namespace ${namespace}.`
}

/** The stderr warning when only some CRDs are installed. */
export function missingKindsWarning(missing: readonly CrdDefinition[]): string {
  const kinds = missing.map((def) => def.kind).join(', ')
  return `The CRDs of ${kinds} are not installed in this cluster, so they are left out: run \`polycrate operator install-crds\`.`
}

export function validKindsText(): string {
  return allCrds.map((def) => `${def.kind} (${[def.plural, ...def.shortNames].join(', ')})`).join('; ')
}

export function unknownKindMessage(name: string): string {
  return `Unknown kind "${name}". Valid kinds: ${validKindsText()}.`
}

/**
 * The kinds to list: the `--kind` names (kind, plural, singular or short name, any case) in the order of `allCrds`,
 * or every kind; with a namespace and no `--kind`, the cluster-scoped kinds (Artifact) are left out, since they
 * belong to no namespace.
 */
export function selectKinds(
  names: readonly string[] | undefined,
  namespace?: string,
): {kinds: CrdDefinition[]; unknown?: undefined} | {kinds?: undefined; unknown: string} {
  if (!names || names.length === 0) {
    return {kinds: allCrds.filter((def) => namespace === undefined || def.scope === 'Namespaced')}
  }
  const wanted = new Set<CrdDefinition>()
  for (const name of names) {
    const def = findCrd(name)
    if (!def) return {unknown: name}
    wanted.add(def)
  }
  return {kinds: allCrds.filter((def) => wanted.has(def))}
}

// -- ages ---------------------------------------------------------------------------------------------------------

/**
 * kubectl's AGE (`ShortHumanDuration`): `45s`, `3m`, `5h`, `7d`, `2y`, whole units rounded down; `0s` for a time up
 * to a second ahead (clock skew), `<invalid>` further ahead, `<unknown>` without a timestamp.
 */
export function formatAge(timestamp: string | undefined | null, now: number): string {
  if (!timestamp) return '<unknown>'
  const at = Date.parse(timestamp)
  if (Number.isNaN(at)) return '<unknown>'
  const seconds = Math.trunc((now - at) / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h`
  if (hours < 24 * 365) return `${Math.floor(hours / 24)}d`
  return `${Math.floor(hours / 24 / 365)}y`
}

// -- rows ---------------------------------------------------------------------------------------------------------

/** One object as `status` shows it (and as `resources[]` of the JSON/YAML document). */
export interface ResourceRow {
  kind: string
  /** null for cluster-scoped kinds. */
  namespace: string | null
  name: string
  /**
   * The kind's own `kubectl get` columns (statusColumns), by printer column name: the raw value as text (numbers and
   * booleans as `8080`, `true`; arrays joined with ","; a date column's timestamp as it is), null when absent.
   */
  columns: Record<string, string | null>
  phase: string | null
  syncStatus: string | null
  apiID: string | null
  age: string
  creationTimestamp: string | null
}

type Fields = Record<string, unknown>

function fields(value: unknown): Fields {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Fields) : {}
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value.length > 0 ? value : undefined
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return undefined
}

/** True if the kind spells its sync status fields in camelCase (Endpoint, K8sCluster): its `statusStyle`. */
export function usesCamelCaseStatus(def: CrdDefinition): boolean {
  return def.statusStyle === 'camel'
}

/**
 * phase, sync state and API ID of a status. Both spellings are read (`syncStatus`/`sync_status`, `apiID`/`api_id`),
 * the kind's own one first, so an object written with the other spelling still shows.
 */
export function syncFields(def: CrdDefinition, status: unknown): {phase: string | null; syncStatus: string | null; apiID: string | null} {
  const s = fields(status)
  const camel = usesCamelCaseStatus(def)
  const pick = (camelKey: string, snakeKey: string) =>
    (camel ? text(s[camelKey]) ?? text(s[snakeKey]) : text(s[snakeKey]) ?? text(s[camelKey])) ?? null
  return {
    phase: text(s.phase) ?? null,
    syncStatus: pick('syncStatus', 'sync_status'),
    apiID: pick('apiID', 'api_id'),
  }
}

// -- the kind's own columns ----------------------------------------------------------------------------------------

/** The printer columns status already shows as PHASE, SYNC and API ID (read in both spellings by syncFields). */
const GENERIC_COLUMNS = new Set(['Phase', 'Sync', 'API ID'])

/**
 * The kind's own columns, as the operator reference's `kubectl get` shows them: its printer columns of priority 0 (`-o wide` ones
 * left out), in their order, without Phase, Sync and API ID (status's generic columns).
 */
export function statusColumns(def: CrdDefinition): PrinterColumn[] {
  return def.printerColumns.filter((column) => (column.priority ?? 0) === 0 && !GENERIC_COLUMNS.has(column.name))
}

/** `NOT AFTER` for Not After: a column's table header. */
export function columnHeader(column: PrinterColumn): string {
  return column.name.toUpperCase()
}

const SIMPLE_JSON_PATH = /^(\.[A-Za-z0-9_-]+)+$/

/**
 * The value at a simple JSONPath of the printer-column kind (`.spec.x`, `.status.a.b`): each step a field of an
 * object. Anything else (`.items[0]`, `..x`, `{.x}`, filters, escaped dots, a field of a non-object) → undefined.
 */
export function readJsonPath(object: unknown, path: string): unknown {
  if (!SIMPLE_JSON_PATH.test(path)) return undefined
  let value: unknown = object
  for (const key of path.slice(1).split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined
    value = (value as Fields)[key]
  }
  return value
}

/**
 * A column value as text: strings as they are, numbers and booleans as `8080` / `true`, arrays joined with "," (their
 * objects as JSON), objects as JSON; null for absent, null, "" and [].
 */
export function columnValue(value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (Array.isArray(value)) {
    const parts = value.map((element) => columnValue(element) ?? '')
    return parts.length > 0 ? parts.join(',') : null
  }
  if (typeof value === 'object') return JSON.stringify(value)
  if (typeof value === 'string') return value.length > 0 ? value : null
  return String(value)
}

/** A kind's own columns of one object (see ResourceRow.columns). */
export function columnValues(def: CrdDefinition, object: InventoryObject): Record<string, string | null> {
  return Object.fromEntries(statusColumns(def).map((column) => [column.name, columnValue(readJsonPath(object, column.jsonPath))]))
}

/** A column value as the table shows it: a date column as its age (`3d`; the text itself if it is no timestamp). */
export function columnCell(column: PrinterColumn, value: string | null | undefined, now: number): string {
  if (value === null || value === undefined || value === '') return '-'
  if (column.type === 'date' && !Number.isNaN(Date.parse(value))) return formatAge(value, now)
  return value
}

export function resourceRow(def: CrdDefinition, object: InventoryObject, now: number): ResourceRow {
  const metadata = object.metadata ?? {}
  const creationTimestamp = text(metadata.creationTimestamp) ?? null
  return {
    kind: def.kind,
    namespace: def.scope === 'Namespaced' ? metadata.namespace ?? null : null,
    name: metadata.name ?? '',
    columns: columnValues(def, object),
    ...syncFields(def, object.status),
    age: formatAge(creationTimestamp, now),
    creationTimestamp,
  }
}

const byNamespaceAndName = (a: ResourceRow, b: ResourceRow) =>
  (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.name.localeCompare(b.name)

// -- the document -------------------------------------------------------------------------------------------------

/** An OperatorConfig as the document shows it: apiVersion, kind, metadata (without managedFields), spec, status. */
export interface OperatorConfigDocument {
  apiVersion: string
  kind: string
  metadata: Record<string, unknown>
  spec: unknown
  status: unknown
}

/** What `-o json`, `-o yaml` and `--json` print; the table is rendered from it too. */
export interface StatusReport {
  cluster: string
  operatorConfigs: OperatorConfigDocument[]
  resources: ResourceRow[]
  /** Objects whose deletion waits on a finalizer of the operator (users' sources, Services, CRs). */
  held: HeldObject[]
}

export function operatorConfigDocument(object: InventoryObject): OperatorConfigDocument {
  const {managedFields: _managedFields, ...metadata} = object.metadata ?? {}
  return {
    apiVersion: object.apiVersion ?? 'polycrate.io/v1alpha1',
    kind: object.kind ?? 'OperatorConfig',
    metadata,
    spec: object.spec ?? {},
    status: object.status ?? {},
  }
}

/** The report of an inventory: OperatorConfigs by namespace/name, resources by kind (allCrds order), namespace, name. */
export function statusReport(cluster: string, inventory: Pick<Inventory, 'operatorConfigs' | 'listings'>, now: number, held: HeldObject[] = []): StatusReport {
  const order = (kind: string) => allCrds.findIndex((def) => def.kind === kind)
  const resources = inventory.listings
    .flatMap(({def, items}) => items.map((item) => resourceRow(def, item, now)))
    .sort((a, b) => order(a.kind) - order(b.kind) || byNamespaceAndName(a, b))
  const operatorConfigs = [...inventory.operatorConfigs]
    .sort((a, b) =>
      (a.metadata?.namespace ?? '').localeCompare(b.metadata?.namespace ?? '') ||
      (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map(operatorConfigDocument)
  const sortedHeld = [...held].sort((a, b) => a.kind.localeCompare(b.kind) || (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.name.localeCompare(b.name))
  return {cluster, operatorConfigs, resources, held: sortedHeld}
}

export const HELD_HEADING = 'Deleting, held by a finalizer of the operator'
export const HELD_HINT =
  'They go once the operator runs again (its Deployment, or `polycrate operator run`), which finishes their cleanup ' +
  '(API objects, load balancers); `polycrate operator uninstall` releases its finalizers without it.'

/** The objects whose deletion waits on the operator, with what to do about it. */
export function renderHeld(held: readonly HeldObject[], now: number): string {
  const rows = held.map((object) => [object.kind, dash(object.namespace), object.name, formatAge(object.deletingSince, now), object.finalizers.join(', ')])
  return `${underline(HELD_HEADING, '-')}\n${indent(renderTable(['KIND', 'NAMESPACE', 'NAME', 'DELETING FOR', 'FINALIZER'], rows))}\n${HELD_HINT}`
}

// -- colours ------------------------------------------------------------------------------------------------------

export interface RenderOptions {
  now: number
  /** ANSI colours (only on a TTY). */
  colour?: boolean
  /** The `--namespace` the report is limited to, for the "no OperatorConfig" line. */
  namespace?: string
}

const GOOD = new Set(['ready', 'synced', 'true'])
const BAD = new Set(['error', 'failed', 'false'])

/** Ready/Synced green, Error/Failed red, anything else (Pending, …) yellow; `-` stays plain. */
function paintState(paint: ChalkInstance, value: string): string {
  if (value === '-') return value
  const key = value.toLowerCase()
  if (GOOD.has(key)) return paint.green(value)
  if (BAD.has(key)) return paint.red(value)
  return paint.yellow(value)
}

/** Condition status: True green, False red, Unknown yellow. */
function paintCondition(paint: ChalkInstance, value: string): string {
  if (value === 'True') return paint.green(value)
  if (value === 'False') return paint.red(value)
  return paint.yellow(value)
}

// -- rendering ----------------------------------------------------------------------------------------------------

const dash = (value: string | null | undefined) => (value === null || value === undefined || value === '' ? '-' : value)
const indent = (block: string, by = '  ') => block.split('\n').map((line) => (line.length > 0 ? by + line : line)).join('\n')
const underline = (heading: string, char: string) => `${heading}\n${char.repeat(heading.length)}`

/** `Endpoints` for Endpoint: the heading of a kind's section. */
export function sectionHeading(def: CrdDefinition): string {
  return `${def.kind}s`
}

/**
 * One kind's section: heading, underline, table (NAMESPACE left out for cluster-scoped kinds) with the kind's own
 * columns (statusColumns) between NAME and PHASE; `now` turns their dates into ages.
 */
export function renderKindSection(def: CrdDefinition, rows: readonly ResourceRow[], options: {now: number; colour?: boolean}): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const namespaced = def.scope === 'Namespaced'
  const own = statusColumns(def)
  const headers = [...(namespaced ? ['NAMESPACE'] : []), 'NAME', ...own.map(columnHeader), 'PHASE', 'SYNC', 'API ID', 'AGE']
  const cells = rows.map((row) => [
    ...(namespaced ? [dash(row.namespace)] : []),
    row.name,
    ...own.map((column) => columnCell(column, row.columns[column.name], options.now)),
    paintState(paint, dash(row.phase)),
    paintState(paint, dash(row.syncStatus)),
    dash(row.apiID),
    row.age,
  ])
  return `${underline(sectionHeading(def), '-')}\n${indent(renderTable(headers, cells))}`
}

function workspaceLine(spec: Fields, status: Fields, now: number): string {
  const apiSync = fields(status.api_sync)
  const workspace = text(apiSync.workspace_name) ?? text(apiSync.workspace_id)
  const organization = text(apiSync.organization_name) ?? text(apiSync.organization_id)
  if (!workspace && !organization) {
    if (status.phase === 'Ignored') return 'not resolved: this OperatorConfig is ignored (see Message)'
    return fields(spec.api_sync).enabled === true ? 'not resolved yet' : 'not resolved: api_sync is disabled'
  }
  const resolvedAt = text(apiSync.resolved_at)
  return [
    dash(workspace),
    organization ? ` (organization ${organization})` : '',
    resolvedAt ? `, resolved ${formatAge(resolvedAt, now)} ago` : '',
  ].join('')
}

function localClusterLine(spec: Fields, status: Fields): string {
  const local = fields(status.local_cluster)
  const name = text(local.cluster_name)
  const id = text(local.cluster_id)
  if (!name && !id) {
    return fields(spec.local_cluster).enabled === true ? 'not registered yet' : 'not registered: local_cluster is disabled'
  }
  return `${name ?? id}${name && id ? ` (id ${id})` : ''}${local.registered === true ? ', registered by the operator' : ''}`
}

/** The monitoring agent's line (status.monitoring, written by the agent): assignment, results, reporting. */
function monitoringLine(monitoring: Fields, now: number): string {
  if (Object.keys(monitoring).length === 0) return 'enabled, no summary yet'
  const count = (value: unknown) => (typeof value === 'number' ? value : 0)
  const lastReport = text(monitoring.last_report_at)
  return [
    `${count(monitoring.assigned_endpoints)} endpoints assigned, ${count(monitoring.succeeding)} up, ${count(monitoring.failing)} failing`,
    `${count(monitoring.buffered_results)} results buffered, ${count(monitoring.dropped_results)} dropped`,
    lastReport ? `last report ${formatAge(lastReport, now)} ago` : 'no report yet',
    ...(text(monitoring.message) ? [text(monitoring.message)!] : []),
  ].join('; ')
}

/** The last result per endpoint (failing first, as the agent wrote them). */
function monitoringTable(monitoring: Fields, paint: ChalkInstance, now: number): string | undefined {
  const endpoints = Array.isArray(monitoring.endpoints) ? monitoring.endpoints.map(fields) : []
  if (endpoints.length === 0) return undefined
  return renderTable(
    ['ENDPOINT', 'KIND', 'RESULT', 'CHECKED', 'DURATION', 'STATUS', 'FAILURES', 'ERROR'],
    endpoints.map((e) => [
      dash(text(e.name)),
      dash(text(e.kind)),
      e.success === true ? paintState(paint, 'ok') : e.success === false ? paint.red('failed') : 'pending',
      text(e.checked_at) ? `${formatAge(text(e.checked_at), now)} ago` : '-',
      typeof e.duration_ms === 'number' ? `${Math.round(e.duration_ms)}ms` : '-',
      typeof e.status_code === 'number' ? String(e.status_code) : '-',
      typeof e.consecutive_failures === 'number' ? String(e.consecutive_failures) : '0',
      dash(text(e.error)),
    ]),
  )
}

/** The summary of one OperatorConfig: phase, workspace, local cluster, monitoring agent, conditions, controllers. */
export function renderOperatorConfig(config: OperatorConfigDocument, options: RenderOptions): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const metadata = fields(config.metadata)
  const spec = fields(config.spec)
  const status = fields(config.status)
  const name = [text(metadata.namespace), text(metadata.name) ?? ''].filter(Boolean).join('/')
  const phase = text(status.phase)
  const facts: Array<[string, string]> = [
    ['Phase', phase ? paintState(paint, phase) : '-'],
    ...(text(status.message) ? [['Message', text(status.message)!] as [string, string]] : []),
    ['Workspace', workspaceLine(spec, status, options.now)],
    ['Local cluster', localClusterLine(spec, status)],
    // Only where the agent is on or has left a summary (most clusters do not run it).
    ...(status.monitoring !== undefined || fields(spec.agent).enabled === true
      ? [['Monitoring agent', monitoringLine(fields(status.monitoring), options.now)] as [string, string]]
      : []),
  ]
  const conditions = Array.isArray(status.conditions) ? status.conditions.map(fields) : []
  const controllers = Array.isArray(status.controllers) ? status.controllers.map(fields) : []
  const width = Math.max(...[...facts.map(([label]) => label), 'Conditions', 'Controllers'].map((label) => label.length)) + 3
  const line = (label: string, value: string) => `${`${label}:`.padEnd(width)}${value}`.trimEnd()
  const lines = facts.map(([label, value]) => line(label, value))
  const monitoringResults = monitoringTable(fields(status.monitoring), paint, options.now)
  if (monitoringResults) lines.push(indent(monitoringResults))

  lines.push(line('Conditions', conditions.length === 0 ? 'none' : ''))
  if (conditions.length > 0) {
    lines.push(indent(renderTable(
      ['TYPE', 'STATUS', 'REASON', 'MESSAGE'],
      conditions.map((c) => [dash(text(c.type)), paintCondition(paint, dash(text(c.status))), dash(text(c.reason)), dash(text(c.message))]),
    )))
  }
  lines.push(line('Controllers', controllers.length === 0 ? 'none reported' : ''))
  if (controllers.length > 0) {
    lines.push(indent(renderTable(
      ['NAME', 'RUNNING', 'REASON'],
      controllers.map((c) => [
        dash(text(c.name)),
        c.running === true ? 'yes' : c.running === false ? 'no' : '-',
        dash(text(c.reason)),
      ]),
    )))
  }
  return `${underline(`OperatorConfig ${name}`, '-')}\n${indent(lines.join('\n'))}`
}

/** Every OperatorConfig's summary, or the line saying there is none. */
export function renderOperatorConfigs(configs: readonly OperatorConfigDocument[], options: RenderOptions): string {
  if (configs.length === 0) return options.namespace ? noOperatorConfigIn(options.namespace) : NO_OPERATOR_CONFIG
  return configs.map((config) => renderOperatorConfig(config, options)).join('\n\n')
}

/** The whole table output: title, cluster, OperatorConfig summary, then one section per kind with objects. */
export function renderStatus(report: StatusReport, options: RenderOptions): string {
  const blocks = [`${underline(TITLE, '=')}\nCluster: ${report.cluster}`, renderOperatorConfigs(report.operatorConfigs, options)]
  const sections = allCrds
    .map((def) => ({def, rows: report.resources.filter((row) => row.kind === def.kind)}))
    .filter(({rows}) => rows.length > 0)
  if (sections.length === 0) blocks.push(NO_RESOURCES)
  for (const {def, rows} of sections) blocks.push(renderKindSection(def, rows, options))
  if (report.held.length > 0) blocks.push(renderHeld(report.held, options.now))
  return blocks.join('\n\n')
}
