/**
 * The operator-rollout dashboard and its gating rule, as a pure function of the facts the simulator gathers
 * (seed 000 "Rollout gating" and the contract page). The output is exactly `rolloutDashboard` of
 * src/api/rollout-types.ts.
 *
 * The rule, with the decisions where the sources are silent:
 * 1. A cluster *diverges* when it has an operator (its K8sApp `polycrate-operator` exists) and that app's
 *    `installed_version` differs from the desired version (`OPERATOR_BLOCK_VERSION`; a leading "v" is ignored).
 *    A cluster without the operator app is not part of the rollout (the rollout updates operators, it does not
 *    install them): it shows the `operator_config_missing` blocker instead. Without a desired version nothing
 *    diverges.
 * 2. Batch size = max(1, ceil(percentage × diverging / 100)) — computed over *all* diverging clusters, paused
 *    and CRITICAL ones included; 0 when nothing diverges. A missing or non-numeric percentage counts as 100.
 * 3. Paused clusters are never in the batch (pause wins over force).
 * 4. Forced clusters are always in the batch, ahead of everything else, even when that makes the batch larger
 *    than the percentage allows, and even when they are CRITICAL: force is the admin's explicit override of the
 *    gate ("force puts a cluster in the next batch regardless of the canary gate").
 * 5. The remaining slots go to diverging, unpaused, not-CRITICAL clusters: those in an active maintenance first,
 *    then the rest; within each group by name (then id). CRITICAL clusters are deferred.
 * 6. `batch.size` is the number of clusters actually in the batch.
 * 7. Blockers: `no_agent_token` (no operator agent ever reported for the workspace), `operator_config_missing`
 *    (no operator app), `canary_gate` (diverging but not in the batch — whatever the reason). They are shown,
 *    not used to gate (only pause, force and CRITICAL gate).
 */
import type {RolloutCluster, RolloutDashboard} from '../../../src/api/rollout-types.js'
import {compareVersions} from '../../../src/api/versions.js'

export const OPERATOR_APP_NAME = 'polycrate-operator'

export interface RolloutClusterFacts {
  id: string
  name: string
  workspace: {id: string; name: string}
  organization: {id: string; name: string} | null
  /** The cluster's K8sApp `polycrate-operator`, or null when there is none. */
  operatorApp: {installedVersion: string | null} | null
  /** The operator agent of the cluster's workspace, or null when none ever reported. */
  agent: {id: string; state: string | null; lastSeen: string | null} | null
  inMaintenance: boolean
  paused: boolean
  forced: boolean
}

export interface RolloutInput {
  desiredVersion: string | null
  /** OPERATOR_ROLLOUT_PERCENTAGE as stored (number or numeric string). */
  rolloutPercentage: unknown
  clusters: readonly RolloutClusterFacts[]
}

/** OPERATOR_ROLLOUT_PERCENTAGE as a number in 0..100; missing or not a number → 100. */
export function parsePercentage(value: unknown): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN
  if (!Number.isFinite(number)) return 100
  return Math.min(100, Math.max(0, number))
}

/** Integer arithmetic on purpose: 30 % of 10 is 3, not ceil(3.0000000000000004) = 4. */
export function batchQuota(divergingCount: number, percentage: number): number {
  if (divergingCount === 0) return 0
  return Math.max(1, Math.ceil((percentage * divergingCount) / 100))
}

function normaliseVersion(version: string): string {
  return version.trim().replace(/^v/i, '')
}

export function sameVersion(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b
  return normaliseVersion(a) === normaliseVersion(b)
}


const byName = (a: RolloutClusterFacts, b: RolloutClusterFacts) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

export function isCritical(cluster: RolloutClusterFacts): boolean {
  return cluster.agent?.state === 'CRITICAL'
}

export function isDiverging(cluster: RolloutClusterFacts, desiredVersion: string | null): boolean {
  if (desiredVersion === null || cluster.operatorApp === null) return false
  return !sameVersion(cluster.operatorApp.installedVersion, desiredVersion)
}

/** The ids of the current batch, in batch order (forced, then maintenance, then by name). */
export function selectBatch(clusters: readonly RolloutClusterFacts[], desiredVersion: string | null, percentage: number): string[] {
  const diverging = clusters.filter((cluster) => isDiverging(cluster, desiredVersion)).sort(byName)
  const forced = diverging.filter((cluster) => cluster.forced && !cluster.paused)
  const eligible = diverging.filter((cluster) => !cluster.forced && !cluster.paused && !isCritical(cluster))
  const ordered = [...eligible.filter((cluster) => cluster.inMaintenance), ...eligible.filter((cluster) => !cluster.inMaintenance)]
  const freeSlots = Math.max(0, batchQuota(diverging.length, percentage) - forced.length)
  return [...forced, ...ordered.slice(0, freeSlots)].map((cluster) => cluster.id)
}

function row(cluster: RolloutClusterFacts, desiredVersion: string | null, inBatch: ReadonlySet<string>): RolloutCluster {
  const diverging = isDiverging(cluster, desiredVersion)
  const inCurrentBatch = inBatch.has(cluster.id)
  const blockers: string[] = []
  if (cluster.agent === null) blockers.push('no_agent_token')
  if (cluster.operatorApp === null) blockers.push('operator_config_missing')
  if (diverging && !inCurrentBatch) blockers.push('canary_gate')
  return {
    id: cluster.id,
    name: cluster.name,
    workspace: {id: cluster.workspace.id, name: cluster.workspace.name},
    organization: cluster.organization ? {id: cluster.organization.id, name: cluster.organization.name} : null,
    installed_version: cluster.operatorApp?.installedVersion ?? null,
    desired_version: desiredVersion,
    up_to_date: cluster.operatorApp !== null && !diverging,
    agent: {id: cluster.agent?.id ?? null, state: cluster.agent?.state ?? null, last_seen: cluster.agent?.lastSeen ?? null},
    critical: isCritical(cluster),
    in_maintenance: cluster.inMaintenance,
    paused: cluster.paused,
    forced: cluster.forced,
    in_current_batch: inCurrentBatch,
    blockers,
  }
}

export function computeRollout(input: RolloutInput): RolloutDashboard {
  const desiredVersion = input.desiredVersion === null || input.desiredVersion.trim() === '' ? null : input.desiredVersion
  const percentage = parsePercentage(input.rolloutPercentage)
  const clusters = [...input.clusters].sort(byName)
  const batch = selectBatch(clusters, desiredVersion, percentage)
  const inBatch = new Set(batch)

  const counts = new Map<string | null, number>()
  for (const cluster of clusters) {
    const version = cluster.operatorApp?.installedVersion ?? null
    counts.set(version, (counts.get(version) ?? 0) + 1)
  }
  const fleet = [...counts.entries()]
    .map(([version, count]) => ({version, count}))
    .sort((a, b) => compareVersions(a.version, b.version))

  return {
    desired_version: desiredVersion,
    rollout_percentage: percentage,
    fleet,
    batch: {size: batch.length, cluster_ids: batch},
    clusters: clusters.map((cluster) => row(cluster, desiredVersion, inBatch)),
  }
}
