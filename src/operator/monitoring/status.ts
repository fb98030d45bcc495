/** What the monitoring agent writes into `OperatorConfig.status.monitoring` (pure; kept small: at most 100 endpoints). */
import type {OperatorConfigStatus} from '../../crds/operatorconfig.js'
import type {AgentSnapshot} from './agent.js'

export type MonitoringStatus = NonNullable<OperatorConfigStatus['monitoring']>

export const STATUS_ENDPOINT_LIMIT = 100

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString())

export function monitoringStatus(snapshot: AgentSnapshot): MonitoringStatus {
  const entries = [...snapshot.endpoints].map(([id, state]) => {
    const last = state.lastResult
    const error = last && !last.success ? [last.error_name, state.message].filter(Boolean).join(': ') : undefined
    return {
      id,
      name: state.name,
      kind: state.kind,
      ...(last ? {success: last.success, checked_at: last.checked_at ?? undefined, duration_ms: last.duration_ms ?? undefined} : {}),
      ...(typeof last?.status_code === 'number' ? {status_code: last.status_code} : {}),
      ...(error ? {error: error.slice(0, 300)} : {}),
      ...(state.consecutiveFailures > 0 ? {consecutive_failures: state.consecutiveFailures} : {}),
    }
  })
  // Failing first (longest failing first), then not yet checked, then the rest; by name within each group.
  const rank = (e: (typeof entries)[number]) => (e.success === false ? 0 : e.success === undefined ? 1 : 2)
  entries.sort((a, b) => rank(a) - rank(b) || (b.consecutive_failures ?? 0) - (a.consecutive_failures ?? 0) || a.name.localeCompare(b.name))
  const failing = entries.filter((e) => e.success === false).length
  const succeeding = entries.filter((e) => e.success === true).length
  const message = snapshot.fetchError ? `Cannot fetch the assigned endpoints: ${snapshot.fetchError}` : snapshot.reportError ? `Cannot report check results: ${snapshot.reportError}` : undefined
  return {
    ...(snapshot.reportedAgentId ? {reported_agent_id: snapshot.reportedAgentId} : {}),
    assigned_endpoints: snapshot.assigned,
    succeeding,
    failing,
    buffered_results: snapshot.buffered,
    dropped_results: snapshot.dropped,
    ...(snapshot.lastFetchAt !== undefined ? {last_fetch_at: iso(snapshot.lastFetchAt)} : {}),
    ...(snapshot.lastReportAt !== undefined ? {last_report_at: iso(snapshot.lastReportAt)} : {}),
    ...(message ? {message: message.slice(0, 500)} : {}),
    endpoints: entries.slice(0, STATUS_ENDPOINT_LIMIT),
  }
}
