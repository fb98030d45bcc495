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
import {formatAgo, holderText, type LeaseView, type OperatorStatus} from '../operator/install/presence.js'
import {shortAge} from '../lib/age.js'

// -- messages -----------------------------------------------------------------------------------------------------

export const TITLE = 'Polycrate Operator Status'
export const NO_RESOURCES = 'No polycrate.io resources found.'
/** No OperatorConfig anywhere: what that means depends on whether an operator runs. */
export function noOperatorConfig(namespace: string, running: boolean): string {
  return running
    ? `No OperatorConfig found: the operator in namespace ${namespace} runs with the defaults (create ${namespace}/default to configure it).`
    : `No OperatorConfig found (and no operator runs: see above). An operator started in namespace ${namespace} would read ${namespace}/default, and run with the defaults without it.`
}
export const CRDS_MISSING =
  'The polycrate.io CRDs are not installed in this cluster: run `polycrate operator install-crds` ' +
  '(or `polycrate operator crds | kubectl apply --server-side -f -`).'


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

/** kubectl's AGE (`ShortHumanDuration`): lib/age.ts. */
export const formatAge = shortAge

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
  /**
   * When the operator last wrote the status (the latest managedFields entry of the status subresource), and whether
   * that is stale: no live operator renews its lease, so the status is history, not what runs. Absent when it was not
   * known whether an operator runs.
   */
  reported?: {at: string | null; stale: boolean; by: string | null}
}

/** What `-o json`, `-o yaml` and `--json` print; the table is rendered from it too. */
export interface StatusReport {
  cluster: string
  /** What runs: the operator's Deployment, Pods, leases and processes (absent where it was not looked at). */
  operator?: OperatorStatus
  operatorConfigs: OperatorConfigDocument[]
  resources: ResourceRow[]
  /** Objects whose deletion waits on a finalizer of the operator (users' sources, Services, CRs). */
  held: HeldObject[]
}

/** When the status of an object was last written: its newest managedFields entry for the status subresource (pure). */
export function statusWrittenAt(object: InventoryObject): string | null {
  const entries = (object.metadata?.managedFields as Array<{subresource?: string; time?: string}> | undefined) ?? []
  const times = entries.filter((entry) => entry.subresource === 'status' && entry.time).map((entry) => entry.time!)
  return times.sort().at(-1) ?? null
}

export function operatorConfigDocument(object: InventoryObject, operator?: OperatorStatus): OperatorConfigDocument {
  const {managedFields: _managedFields, ...metadata} = object.metadata ?? {}
  const at = statusWrittenAt(object)
  const live = operator?.running ? operator.instance : null
  const holder = live ? [live.leader, ...live.heartbeats].find((lease): lease is LeaseView => Boolean(lease?.fresh)) : undefined
  return {
    apiVersion: object.apiVersion ?? 'polycrate.io/v1alpha1',
    kind: object.kind ?? 'OperatorConfig',
    metadata,
    spec: object.spec ?? {},
    status: object.status ?? {},
    ...(operator
      ? {reported: {at, stale: !operator.running, by: live ? (holder ? `${holder.role === 'leader' ? 'the leader, ' : ''}${holderText(holder)}` : `the operator in namespace ${live.namespace}`) : null}}
      : {}),
  }
}

/**
 * The OperatorConfigs status shows (pure): every one without --namespace; with it, those of the operator's namespace
 * and of that namespace — `-n` limits the objects shown, it never hides the operator's configuration.
 */
export function operatorConfigsInScope<T extends InventoryObject>(configs: readonly T[], operatorNamespace: string, namespace?: string): T[] {
  if (namespace === undefined) return [...configs]
  return configs.filter((config) => [operatorNamespace, namespace].includes(config.metadata?.namespace ?? ''))
}

/** The report of an inventory: OperatorConfigs by namespace/name, resources by kind (allCrds order), namespace, name. */
export function statusReport(cluster: string, inventory: Pick<Inventory, 'operatorConfigs' | 'listings'>, now: number, held: HeldObject[] = [], operator?: OperatorStatus): StatusReport {
  const order = (kind: string) => allCrds.findIndex((def) => def.kind === kind)
  const resources = inventory.listings
    .flatMap(({def, items}) => items.map((item) => resourceRow(def, item, now)))
    .sort((a, b) => order(a.kind) - order(b.kind) || byNamespaceAndName(a, b))
  const operatorConfigs = [...inventory.operatorConfigs]
    .sort((a, b) =>
      (a.metadata?.namespace ?? '').localeCompare(b.metadata?.namespace ?? '') ||
      (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((object) => operatorConfigDocument(object, operator))
  const sortedHeld = [...held].sort((a, b) => a.kind.localeCompare(b.kind) || (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.name.localeCompare(b.name))
  return {cluster, ...(operator ? {operator} : {}), operatorConfigs, resources, held: sortedHeld}
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

/** What the agent wrote before API sync connected: not true any more once APIConnected is True. */
const NOT_CONNECTED_YET = /not connected to the Polycrate API yet/

/**
 * The monitoring agent's line (status.monitoring, written by the agent): assignment, results, reporting. Its message
 * from before API sync connected is not repeated once APIConnected is True (the agent fetches again within seconds).
 */
function monitoringLine(monitoring: Fields, now: number, apiConnected?: Fields): string {
  if (Object.keys(monitoring).length === 0) return 'enabled, no summary yet'
  if (text(monitoring.message) && NOT_CONNECTED_YET.test(text(monitoring.message)!) && apiConnected?.status === 'True') {
    const since = text(apiConnected.lastTransitionTime)
    monitoring = {...monitoring, message: `the Polycrate API connected${since ? ` ${formatAge(since, now)} ago` : ''}; the agent fetches its assigned endpoints next`}
  }
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

const conditionsOf = (status: Fields): Fields[] => (Array.isArray(status.conditions) ? status.conditions.map(fields) : [])

/** `12s ago by the leader, Pod x` / `STALE — last written 5m ago; …` (pure). */
export function reportedLine(config: OperatorConfigDocument, now: number): string | undefined {
  const reported = config.reported
  if (!reported) return undefined
  const at = reported.at ? `${formatAgo(Math.max(0, now - Date.parse(reported.at)))} ago (${reported.at})` : 'at an unknown time'
  if (!reported.stale) return `last reported ${at} by ${reported.by ?? 'the operator'}; it keeps it current`
  return `STALE — last reported ${at}; no operator runs to keep it current: the phase, conditions and controllers below are history, not what runs`
}

/** The summary of one OperatorConfig: when it was reported, phase, workspace, local cluster, monitoring agent, conditions, controllers. */
export function renderOperatorConfig(config: OperatorConfigDocument, options: RenderOptions): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const metadata = fields(config.metadata)
  const spec = fields(config.spec)
  const status = fields(config.status)
  const name = [text(metadata.namespace), text(metadata.name) ?? ''].filter(Boolean).join('/')
  const phase = text(status.phase)
  const stale = config.reported?.stale === true
  const reported = reportedLine(config, options.now)
  const facts: Array<[string, string]> = [
    ...(reported && Object.keys(status).length > 0 ? [['Reported', stale ? paint.yellow(reported) : reported] as [string, string]] : []),
    ['Phase', phase ? `${stale ? `${phase} (as last reported)` : paintState(paint, phase)}` : Object.keys(status).length === 0 ? 'no status yet: no operator has read it' : '-'],
    ...(text(status.message) ? [['Message', text(status.message)!] as [string, string]] : []),
    ['Workspace', workspaceLine(spec, status, options.now)],
    ['Local cluster', localClusterLine(spec, status)],
    // Only where the agent is on or has left a summary (most clusters do not run it).
    ...(status.monitoring !== undefined || fields(spec.agent).enabled === true
      ? [['Monitoring agent', monitoringLine(fields(status.monitoring), options.now, conditionsOf(status).find((c) => c.type === 'APIConnected'))] as [string, string]]
      : []),
  ]
  const conditions = conditionsOf(status)
  const controllers = Array.isArray(status.controllers) ? status.controllers.map(fields) : []
  const width = Math.max(...[...facts.map(([label]) => label), stale ? 'Controllers (as last reported)' : 'Controllers'].map((label) => label.length)) + 3
  const line = (label: string, value: string) => `${`${label}:`.padEnd(width)}${value}`.trimEnd()
  const lines = facts.map(([label, value]) => line(label, value))
  const monitoringResults = monitoringTable(fields(status.monitoring), paint, options.now)
  if (monitoringResults) lines.push(indent(monitoringResults))

  lines.push(line(stale ? 'Conditions (as last reported)' : 'Conditions', conditions.length === 0 ? 'none' : ''))
  if (conditions.length > 0) {
    lines.push(indent(renderTable(
      ['TYPE', 'STATUS', 'REASON', 'MESSAGE'],
      conditions.map((c) => [dash(text(c.type)), paintCondition(paint, dash(text(c.status))), dash(text(c.reason)), dash(text(c.message))]),
    )))
  }
  lines.push(line(stale ? 'Controllers (as last reported)' : 'Controllers', controllers.length === 0 ? 'none reported' : ''))
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
export function renderOperatorConfigs(configs: readonly OperatorConfigDocument[], options: RenderOptions & {operator?: OperatorStatus}): string {
  if (configs.length === 0) return noOperatorConfig(options.operator?.namespace ?? 'polycrate', options.operator?.running ?? true)
  return configs.map((config) => renderOperatorConfig(config, options)).join('\n\n')
}

/** NOTHING RUNS, in words a person cannot miss, and how to start it. */
export const NOTHING_RUNS_HINT = 'Start it with `polycrate operator install` (a Deployment in the cluster) or `polycrate operator run` (a process here).'

/** The operator: where it runs, its Deployment, Pods, leader, processes outside the cluster; or that nothing runs. */
export function renderOperator(operator: OperatorStatus, options: RenderOptions): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const chosen = {flag: '(--operator-namespace)', install: '(installed into)', found: '', default: '(the default: no operator found in any namespace)'}[operator.chosenBy]
  const lines = [
    `Namespace:  ${operator.namespace}${chosen ? ` ${chosen}` : ''}`,
    `State:      ${operator.running ? paint.green(operator.summary) : paint.red(operator.summary.replace(/^nothing runs/, 'NOTHING RUNS'))}`,
  ]
  if (!operator.running) lines.push(`            ${NOTHING_RUNS_HINT}`)
  const instance = operator.instance
  if (instance?.deployment) {
    const images = [...new Set(instance.deployment.images)].join(', ')
    lines.push(`Deployment: ${instance.deployment.name} ${instance.deployment.ready}/${instance.deployment.desired} ready, ${instance.deployment.updated} up to date (${images || 'no image'})`)
  }
  if (instance && instance.pods.length > 0) {
    const leaderHost = instance.leader?.fresh ? instance.leader.host : null
    lines.push('Pods:')
    lines.push(indent(renderTable(['NAME', 'NODE', 'READY', 'ROLE', 'RESTARTS', 'IMAGE', 'VERSION', 'AGE'], instance.pods.map((pod) => [
      pod.name,
      dash(pod.node),
      pod.ready ? 'true' : `false${pod.reason ? ` (${pod.reason})` : pod.terminating ? ' (terminating)' : ''}`,
      pod.name === leaderHost || pod.leaderLabel === true ? 'leader' : pod.leaderLabel === false ? 'standby' : '-',
      String(pod.restarts),
      dash(pod.image),
      dash(pod.version),
      formatAge(pod.creationTimestamp, options.now),
    ]))))
  }
  const processes = instance ? [...(instance.leader && !instance.leader.pod && instance.leader.host ? [instance.leader] : []), ...instance.heartbeats.filter((h) => !h.pod)] : []
  if (processes.length > 0) {
    lines.push('Processes outside the cluster (`operator run`):')
    lines.push(indent(renderTable(['HOST', 'PID', 'VERSION', 'LEASE', 'STATE'], processes.map((lease) => [
      dash(lease.host),
      dash(lease.pid),
      dash(lease.version),
      lease.role === 'leader' ? `${lease.name} (leader)` : lease.name,
      lease.fresh
        ? `running, renewed ${formatAgo(lease.renewedAgoMs ?? 0)} ago`
        : lease.holder === null
          ? `stopped ${lease.renewedAgoMs === null ? '' : `${formatAgo(lease.renewedAgoMs)} ago`}`.trim()
          : `gone without stopping (killed?): last renewed ${formatAgo(lease.renewedAgoMs ?? 0)} ago`,
    ]))))
  }
  if (instance?.leader && !instance.leader.fresh && !processes.includes(instance.leader)) {
    lines.push(`Leader:     none — Lease ${instance.leader.name} ${instance.leader.holder === null ? 'released' : `of ${holderText(instance.leader)} expired`}${instance.leader.renewedAgoMs === null ? '' : ` ${formatAgo(instance.leader.renewedAgoMs)} ago`}`)
  }
  for (const other of operator.elsewhere) {
    lines.push(paint.yellow(`Also:       ${other.running ? 'an operator runs' : 'an operator is installed'} in namespace ${other.namespace} (--operator-namespace ${other.namespace} shows it): one per cluster is what works.`))
  }
  for (const problem of operator.problems) lines.push(paint.yellow(`Note:       ${problem}`))
  return `${underline('Operator', '-')}\n${indent(lines.join('\n'))}`
}

/** The whole table output: title, cluster, what runs, the OperatorConfig summary, then one section per kind with objects. */
export function renderStatus(report: StatusReport, options: RenderOptions): string {
  const blocks = [`${underline(TITLE, '=')}\nCluster: ${report.cluster}`]
  if (report.operator) blocks.push(renderOperator(report.operator, options))
  blocks.push(renderOperatorConfigs(report.operatorConfigs, {...options, operator: report.operator}))
  const sections = allCrds
    .map((def) => ({def, rows: report.resources.filter((row) => row.kind === def.kind)}))
    .filter(({rows}) => rows.length > 0)
  if (sections.length === 0) blocks.push(NO_RESOURCES)
  for (const {def, rows} of sections) blocks.push(renderKindSection(def, rows, options))
  if (report.held.length > 0) blocks.push(renderHeld(report.held, options.now))
  return blocks.join('\n\n')
}
