/**
 * The API side of endpoint monitoring ("endpoints statically assigned to this agent, filled by a Celery task;
 * respects capacity and monitoring modes"; "results are stored per endpoint assignment").
 *
 * Decisions where the contract is silent:
 * - The assignment task runs whenever an agent fetches its endpoints. An endpoint wants `max_agents_per_endpoint`
 *   agents (null = 1). Candidates follow the endpoint workspace's `endpoint_monitoring_mode`: `workspace_only` the
 *   workspace's agents, `organization_only` the organization's, `pop_only` agents whose `source_pop` is the
 *   workspace's `pop`, `auto` (default) the workspace's agents, else the organization's. CRITICAL agents get none.
 * - An agent's `capacity` (simulator field, null = unlimited) bounds its endpoints. Assignments are sticky: an
 *   agent keeps an endpoint while it stays a candidate within capacity; new ones go to the least loaded candidate.
 * - An endpoint with an explicit `agents` list is pinned to those agents.
 * - Per assignment the simulator keeps the last result, counts, and consecutive failures; a result repeated with the
 *   same (agent, endpoint, checked_at) is counted in `duplicateResults`. The agent's `check_status` is derived:
 *   `OK` (every assigned endpoint's last result succeeded), `WARNING` (some failed), `CRITICAL` (all failed),
 *   `PENDING` (assigned endpoints without any result yet), `NONE` (nothing assigned).
 */
type Obj = Record<string, unknown>

export interface AssignmentInput {
  endpoints: readonly Obj[]
  agents: readonly Obj[]
  workspaces: ReadonlyMap<string, Obj>
  /** endpoint id → agent ids, from the last run. */
  current: ReadonlyMap<string, readonly string[]>
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)

/** The assignment task (pure): endpoint id → agent ids. */
export function planAssignment(input: AssignmentInput): Map<string, string[]> {
  const agents = input.agents.filter((agent) => agent.is_deleted !== true && agent.state !== 'CRITICAL')
  const load = new Map<string, number>(agents.map((agent) => [String(agent.id), 0]))
  const capacity = (agent: Obj) => (typeof agent.capacity === 'number' ? agent.capacity : Number.POSITIVE_INFINITY)
  const candidatesOf = (endpoint: Obj): Obj[] => {
    const workspace = str(endpoint.workspace) ? input.workspaces.get(String(endpoint.workspace)) : undefined
    const mode = str(workspace?.endpoint_monitoring_mode) ?? 'auto'
    const sameWorkspace = agents.filter((agent) => str(agent.workspace) && agent.workspace === endpoint.workspace)
    const sameOrganization = agents.filter((agent) => str(agent.organization) && agent.organization === endpoint.organization)
    switch (mode) {
      case 'workspace_only': return sameWorkspace
      case 'organization_only': return sameOrganization
      case 'pop_only': return str(workspace?.pop) ? agents.filter((agent) => agent.source_pop === workspace!.pop) : []
      default: return sameWorkspace.length > 0 ? sameWorkspace : sameOrganization
    }
  }
  const endpoints = input.endpoints
    .filter((endpoint) => endpoint.is_deleted !== true && endpoint.archived !== true && endpoint.do_not_monitor !== true)
    .toSorted((a, b) => String(a.id).localeCompare(String(b.id)))
  const result = new Map<string, string[]>()
  const wanted = new Map<string, {endpoint: Obj; candidates: Obj[]; want: number}>()
  // Pinned and sticky assignments first, so that new endpoints fill the capacity that is left.
  for (const endpoint of endpoints) {
    const id = String(endpoint.id)
    const pinned = Array.isArray(endpoint.agents) ? endpoint.agents.map(String) : []
    if (pinned.length > 0) {
      result.set(id, pinned)
      for (const agent of pinned) load.set(agent, (load.get(agent) ?? 0) + 1)
      continue
    }
    const candidates = candidatesOf(endpoint)
    const want = typeof endpoint.max_agents_per_endpoint === 'number' && endpoint.max_agents_per_endpoint > 0 ? endpoint.max_agents_per_endpoint : 1
    const kept = (input.current.get(id) ?? []).filter((agentId) => {
      const agent = candidates.find((candidate) => candidate.id === agentId)
      return agent !== undefined && (load.get(agentId) ?? 0) < capacity(agent)
    }).slice(0, want)
    for (const agent of kept) load.set(agent, (load.get(agent) ?? 0) + 1)
    result.set(id, kept)
    wanted.set(id, {endpoint, candidates, want})
  }
  for (const [id, {candidates, want}] of wanted) {
    const chosen = result.get(id)!
    while (chosen.length < want) {
      const next = candidates
        .filter((agent) => !chosen.includes(String(agent.id)) && (load.get(String(agent.id)) ?? 0) < capacity(agent))
        .toSorted((a, b) => (load.get(String(a.id)) ?? 0) - (load.get(String(b.id)) ?? 0) || String(a.id).localeCompare(String(b.id)))[0]
      if (!next) break
      chosen.push(String(next.id))
      load.set(String(next.id), (load.get(String(next.id)) ?? 0) + 1)
    }
  }
  return result
}

export interface AssignmentState {
  agent: string
  endpoint: string
  endpoint_name: string
  last_check_at: string | null
  last_success: boolean | null
  last_result: Obj | null
  total_checks: number
  failed_checks: number
  consecutive_failures: number
}

export type CheckState = 'NONE' | 'PENDING' | 'OK' | 'WARNING' | 'CRITICAL'

export class MonitoringSide {
  private assignment = new Map<string, string[]>()
  private readonly states = new Map<string, AssignmentState>()
  private readonly seen = new Set<string>()
  /** Results sent twice (same agent, endpoint and checked_at). */
  duplicateResults = 0
  /** Results for endpoints not assigned to the reporting agent (stored, not counted in an assignment). */
  unassignedResults = 0

  /** Runs the assignment task over the store's current contents. */
  assign(input: Omit<AssignmentInput, 'current'>): void {
    this.assignment = planAssignment({...input, current: this.assignment})
  }

  endpointsOf(agentId: string): Set<string> {
    const ids = new Set<string>()
    for (const [endpoint, agents] of this.assignment) if (agents.includes(agentId)) ids.add(endpoint)
    return ids
  }

  /** Stores one result of a health report against its assignment. */
  record(agentId: string, result: Obj, endpointName: (id: string) => string): void {
    const endpoint = String(result.endpoint_id)
    const key = `${agentId}/${endpoint}/${String(result.checked_at ?? '')}`
    if (this.seen.has(key)) this.duplicateResults++
    this.seen.add(key)
    if (!(this.assignment.get(endpoint) ?? []).includes(agentId)) {
      this.unassignedResults++
      return
    }
    const state = this.stateOf(agentId, endpoint, endpointName)
    const checkedAt = typeof result.checked_at === 'string' ? result.checked_at : null
    // A late result (older than the last one) counts but does not replace the last result.
    if (state.last_check_at === null || (checkedAt !== null && checkedAt >= state.last_check_at)) {
      state.last_check_at = checkedAt
      state.last_success = result.success === true
      state.last_result = result
      state.consecutive_failures = result.success === true ? 0 : state.consecutive_failures + 1
    }
    state.total_checks++
    if (result.success !== true) state.failed_checks++
  }

  /** The assignments of an agent with their check status (`GET /agents/{id}/assignments/`). */
  assignmentsOf(agentId: string, endpointName: (id: string) => string): AssignmentState[] {
    return [...this.endpointsOf(agentId)].sort().map((endpoint) => this.stateOf(agentId, endpoint, endpointName))
  }

  /** The agent's state derived from its assignments' last results. */
  checkStatus(agentId: string, endpointName: (id: string) => string): {check_state: CheckState; assigned: number; reporting: number; failing: number} {
    const states = this.assignmentsOf(agentId, endpointName)
    const reporting = states.filter((s) => s.last_success !== null)
    const failing = reporting.filter((s) => s.last_success === false).length
    const check_state: CheckState = states.length === 0 ? 'NONE'
      : reporting.length < states.length ? 'PENDING'
        : failing === 0 ? 'OK' : failing === states.length ? 'CRITICAL' : 'WARNING'
    return {check_state, assigned: states.length, reporting: reporting.length, failing}
  }

  private stateOf(agent: string, endpoint: string, endpointName: (id: string) => string): AssignmentState {
    const key = `${agent}/${endpoint}`
    let state = this.states.get(key)
    if (!state) {
      state = {agent, endpoint, endpoint_name: endpointName(endpoint), last_check_at: null, last_success: null, last_result: null, total_checks: 0, failed_checks: 0, consecutive_failures: 0}
      this.states.set(key, state)
    }
    return state
  }
}
