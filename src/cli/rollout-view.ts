/**
 * What `polycrate operator rollout …` prints, as pure functions of the dashboard the Polycrate API sends
 * (src/api/rollout-types.ts): the summary lines (desired version, rollout percentage, fleet histogram, batch),
 * the per-cluster table, relative times (with the clock passed in), cluster lookup by id or name, the one-line
 * description of a force/pause/resume, and the messages for API errors. No I/O here; the commands print.
 */
import {Chalk} from 'chalk'
import {
  ApiAuthError,
  ApiContractError,
  ApiError,
  ApiNetworkError,
  ApiNotFoundError,
  type RolloutCluster,
  type RolloutDashboard,
} from '../api/index.js'
import {renderTable} from './table.js'

export type RolloutSort = 'name' | 'version'
export type RolloutAction = 'force' | 'pause' | 'resume'

import {compareVersions} from '../api/versions.js'


export const STATUS_COMMAND = 'polycrate operator rollout status'

// -- versions -----------------------------------------------------------------------------------------------------


// -- summary ------------------------------------------------------------------------------------------------------

/** `30 × 0.34.0, 12 × 0.35.0, 2 × 0.36.0, 1 × none` (by version; clusters without an operator last, as "none"). */
export function fleetHistogram(fleet: RolloutDashboard['fleet']): string {
  const entries = fleet.filter((entry) => entry.count > 0)
  if (entries.length === 0) return 'no clusters'
  return [...entries]
    .sort((a, b) => compareVersions(a.version, b.version))
    .map((entry) => `${entry.count} × ${entry.version ?? 'none'}`)
    .join(', ')
}

/** Clusters that have an operator and do not run the desired version (what the batch is taken from). */
export function clustersBehind(dashboard: RolloutDashboard): RolloutCluster[] {
  if (dashboard.desired_version === null) return []
  return dashboard.clusters.filter((row) => !row.up_to_date && !hasNoOperator(row))
}

function hasNoOperator(row: RolloutCluster): boolean {
  return row.blockers.includes('operator_config_missing') && row.installed_version === null
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`

/** The lines above the table: desired version, percentage, fleet, batch. */
export function summaryLines(dashboard: RolloutDashboard): string[] {
  const desired = dashboard.desired_version
  const behind = clustersBehind(dashboard).length
  let batch: string
  if (desired === null) batch = 'none: no desired version is set'
  else if (behind === 0) batch = `none: every cluster with an operator runs ${desired}`
  else batch = `${dashboard.batch.size} of ${plural(behind, 'cluster')} behind ${desired}`
  const rows: Array<[string, string]> = [
    ['Desired version', desired ?? 'not set (OPERATOR_BLOCK_VERSION is empty): nothing is rolled out'],
    ['Rollout', `${dashboard.rollout_percentage} % of the clusters behind per batch (OPERATOR_ROLLOUT_PERCENTAGE)`],
    ['Fleet', fleetHistogram(dashboard.fleet)],
    ['Current batch', batch],
  ]
  const width = Math.max(...rows.map(([label]) => label.length)) + 3
  return rows.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`)
}

// -- table --------------------------------------------------------------------------------------------------------

/**
 * `just now`, `42s ago`, `3m ago`, `5h ago`, `3d ago` (whole units, rounded down); `never` for null; a time more
 * than a minute ahead of `now` (clock skew) is `in 2m`.
 */
export function relativeTime(iso: string | null, now: number): string {
  if (iso === null) return 'never'
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return 'at an unknown time'
  const difference = now - at
  if (difference < -60_000) return `in ${duration(-difference)}`
  if (difference < 10_000) return 'just now'
  return `${duration(difference)} ago`
}

function duration(ms: number): string {
  const seconds = Math.floor(ms / 1000)
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours}h`
  return `${Math.floor(hours / 24)}d`
}

/** `OK, last seen 3m ago`; `never` when no operator agent ever reported. */
export function agentText(agent: RolloutCluster['agent'], now: number): string {
  if (agent.id === null && agent.last_seen === null) return 'never'
  const state = agent.state ?? 'unknown'
  return agent.last_seen === null ? `${state}, never seen` : `${state}, last seen ${relativeTime(agent.last_seen, now)}`
}

const BLOCKER_WORDS: Record<string, string> = {
  no_agent_token: 'no agent token',
  operator_config_missing: 'OperatorConfig missing',
  canary_gate: 'canary gate',
}

/** `no agent token, OperatorConfig missing`; unknown codes with their underscores as spaces; `-` for none. */
export function blockersText(blockers: readonly string[]): string {
  if (blockers.length === 0) return '-'
  return blockers.map((code) => BLOCKER_WORDS[code] ?? code.replace(/_/g, ' ')).join(', ')
}

/** `paused`, `forced` or `-`. */
export function flagsText(row: Pick<RolloutCluster, 'paused' | 'forced'>): string {
  const flags = [row.paused ? 'paused' : '', row.forced ? 'forced' : ''].filter((flag) => flag !== '')
  return flags.length === 0 ? '-' : flags.join(', ')
}

/** Whether the row is in the current batch (its own flag, or listed in `batch.cluster_ids`). */
export function inBatch(dashboard: RolloutDashboard, row: RolloutCluster): boolean {
  return row.in_current_batch || dashboard.batch.cluster_ids.includes(row.id)
}

/** By name (then id), or by installed version (oldest first, clusters without an operator last; then by name). */
export function sortClusters(rows: readonly RolloutCluster[], sort: RolloutSort): RolloutCluster[] {
  const byName = (a: RolloutCluster, b: RolloutCluster) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
  return [...rows].sort(sort === 'version' ? (a, b) => compareVersions(a.installed_version, b.installed_version) || byName(a, b) : byName)
}

export const TABLE_HEADERS = ['CLUSTER', 'WORKSPACE', 'INSTALLED', 'DESIRED', 'AGENT', 'MAINTENANCE', 'FLAGS', 'BATCH', 'BLOCKERS']

/** One table row per cluster, in the given order. */
export function tableRows(dashboard: RolloutDashboard, rows: readonly RolloutCluster[], options: {now: number; colour?: boolean}): string[][] {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  return rows.map((row) => {
    const installed = row.installed_version ?? 'none'
    const batch = inBatch(dashboard, row)
    return [
      row.name,
      row.workspace.name || row.workspace.id || '-',
      row.up_to_date ? paint.green(installed) : installed,
      row.desired_version ?? '-',
      row.critical ? paint.red(agentText(row.agent, options.now)) : agentText(row.agent, options.now),
      row.in_maintenance ? 'yes' : '-',
      flagsText(row),
      batch ? paint.green('yes') : '-',
      row.blockers.length > 0 ? paint.yellow(blockersText(row.blockers)) : '-',
    ]
  })
}

export interface StatusViewOptions {
  now: number
  sort?: RolloutSort
  colour?: boolean
}

/** The whole `rollout status` text: summary lines, a blank line, the table (of `rows`, default all clusters). */
export function renderStatus(dashboard: RolloutDashboard, options: StatusViewOptions, rows: readonly RolloutCluster[] = dashboard.clusters): string {
  const lines = summaryLines(dashboard)
  const sorted = sortClusters(rows, options.sort ?? 'name')
  const table = sorted.length === 0 ? 'No clusters.' : renderTable(TABLE_HEADERS, tableRows(dashboard, sorted, options))
  return [...lines, '', table].join('\n')
}

// -- finding clusters ---------------------------------------------------------------------------------------------

export type ClusterLookup =
  | {kind: 'found'; row: RolloutCluster}
  | {kind: 'ambiguous'; matches: RolloutCluster[]}
  | {kind: 'unknown'}

/**
 * A cluster by id, else by exact name, else by name ignoring case. Several clusters with that name (in different
 * workspaces) are ambiguous: the caller asks for the id.
 */
export function findCluster(rows: readonly RolloutCluster[], reference: string): ClusterLookup {
  const wanted = reference.trim()
  if (wanted === '') return {kind: 'unknown'}
  const candidates = [
    rows.filter((row) => row.id.toLowerCase() === wanted.toLowerCase()),
    rows.filter((row) => row.name === wanted),
    rows.filter((row) => row.name.toLowerCase() === wanted.toLowerCase()),
  ]
  for (const matches of candidates) {
    const [first] = matches
    if (first === undefined) continue
    return matches.length === 1 ? {kind: 'found', row: first} : {kind: 'ambiguous', matches}
  }
  return {kind: 'unknown'}
}

export function unknownClusterMessage(reference: string): string {
  return `No cluster named or with id ${reference}; \`${STATUS_COMMAND}\` lists them.`
}

export function ambiguousClusterMessage(reference: string, matches: readonly RolloutCluster[]): string {
  const listed = matches.map((row) => `${row.id} (workspace ${row.workspace.name || row.workspace.id})`).join(', ')
  return `${matches.length} clusters are named ${reference}: ${listed}; pass the id instead.`
}

/** The row for `reference`, or the message to exit 1 with (unknown or ambiguous). */
export function resolveCluster(rows: readonly RolloutCluster[], reference: string): {row: RolloutCluster} | {message: string} {
  const lookup = findCluster(rows, reference)
  if (lookup.kind === 'found') return {row: lookup.row}
  if (lookup.kind === 'ambiguous') return {message: ambiguousClusterMessage(reference, lookup.matches)}
  return {message: unknownClusterMessage(reference)}
}

/**
 * The `--cluster` filter of `rollout status`: every row whose id or name (ignoring case) is one of `references`,
 * in dashboard order; `unknown` lists the references that matched nothing.
 */
export function filterClusters(rows: readonly RolloutCluster[], references: readonly string[]): {rows: RolloutCluster[]; unknown: string[]} {
  const wanted = references.map((reference) => reference.trim().toLowerCase())
  const matches = (row: RolloutCluster, reference: string) => row.id.toLowerCase() === reference || row.name.toLowerCase() === reference
  return {
    rows: rows.filter((row) => wanted.some((reference) => matches(row, reference))),
    unknown: references.filter((_, index) => !rows.some((row) => matches(row, wanted[index] ?? ''))),
  }
}

// -- force / pause / resume ---------------------------------------------------------------------------------------

function where(row: RolloutCluster): string {
  if (row.desired_version === null) return 'no desired version is set (OPERATOR_BLOCK_VERSION), so nothing is rolled out'
  if (hasNoOperator(row)) return 'it has no operator installed (OperatorConfig missing), and the rollout only updates existing operators'
  if (row.up_to_date) return `it already runs ${row.desired_version}`
  if (row.in_current_batch) return 'it is in the next rollout batch'
  if (row.paused) return 'it stays out of rollout batches'
  if (row.critical) return 'its operator agent is CRITICAL, so it is deferred'
  return 'it waits behind the canary gate'
}

/** One line saying what a force, pause or resume changed, from the row before and the row the API answered. */
export function describeAction(action: RolloutAction, before: RolloutCluster, after: RolloutCluster): string {
  const cluster = `cluster ${after.name} (id ${after.id})`
  const Cluster = `Cluster ${after.name} (id ${after.id})`
  switch (action) {
    case 'force': {
      if (before.forced && !before.paused) return `${Cluster} was already forced into the next rollout batch; nothing changed.`
      const lifted = before.paused ? ' (its pause is lifted)' : ''
      if (after.in_current_batch) return `Forced ${cluster} into the next rollout batch${lifted}.`
      return `Forced ${cluster}${lifted}, but ${where(after)}.`
    }
    case 'pause': {
      if (before.paused) return `The rollout of ${cluster} was already paused; nothing changed.`
      const withdrawn = before.forced ? ' (its force-update is withdrawn)' : ''
      return `Paused the rollout of ${cluster}${withdrawn}: it stays out of rollout batches until \`polycrate operator rollout resume\`.`
    }
    case 'resume': {
      if (!before.paused && !before.forced) return `${Cluster} was neither paused nor forced; nothing changed.`
      const verb = before.paused ? 'Resumed the rollout of' : 'Withdrew the force-update of'
      return `${verb} ${cluster}: ${where(after)}.`
    }
  }
}

// -- errors -------------------------------------------------------------------------------------------------------

/**
 * The one-line message for an error of the API client (undefined for anything else): 401, 403 (platform-admin
 * only), unreachable, a 404 on a cluster action (the cluster is gone), a contract mismatch or any other API
 * error (the client's message). Never contains the token: the client's errors do not carry it.
 */
export function rolloutErrorMessage(error: unknown, context: {apiUrl: string; clusterReference?: string}): string | undefined {
  if (error instanceof ApiAuthError) {
    return error.forbidden
      ? 'The operator rollout is platform-admin only (403): use a platform-admin API token.'
      : 'The Polycrate API rejected the token (401): check --token / POLYCRATE_API_TOKEN.'
  }
  if (error instanceof ApiNetworkError) {
    return `Cannot reach the Polycrate API at ${context.apiUrl} (${error.detail || error.cause}): check --api-url / POLYCRATE_API_URL.`
  }
  if (error instanceof ApiNotFoundError && context.clusterReference !== undefined && /\/operator-rollout\/[^/]+\/[^/]+\/$/.test(error.path)) {
    return unknownClusterMessage(context.clusterReference)
  }
  if (error instanceof ApiContractError) return error.message
  if (error instanceof ApiError) return error.message
  return undefined
}
