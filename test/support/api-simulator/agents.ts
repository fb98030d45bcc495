/** The agent side of the API simulator: heartbeats (agent/health), silence and downtimes, assigned endpoints, errors. */
import {fieldError, notFound, ok, validationError, type Reply} from './http.js'
import {modelFor, type FieldError, type JsonObject} from './models.js'
import {OPERATOR_APP_NAME} from './rollout.js'
import {type StoredObject} from './store.js'
import {SimulatorCore, isObject, text, STATE_OF_HEALTH_STATUS, type Call} from './core.js'

export abstract class AgentRoutes extends SimulatorCore {
  // ---------------------------------------------------------------------------------------------------------------
  // Agents going silent

  /**
   * Computed on every request and store read: an agent whose last heartbeat is older than
   * `heartbeatCriticalAfterMs` becomes CRITICAL and gets a Downtime; when it reports again (or its last_seen is
   * moved forward), the downtime ends.
   */
  protected sweepAgents(): void {
    const now = this.now()
    this.cloud.assignDueAddresses((id) => this.store.find('loadbalancers/instances', id), now)
    for (const agent of this.store.all('agents')) {
      if (agent.is_deleted === true) continue
      const lastSeen = typeof agent.last_seen === 'string' ? Date.parse(agent.last_seen) : Number.NaN
      if (Number.isNaN(lastSeen)) continue
      const silent = now - lastSeen > this.heartbeatCriticalAfterMs
      const downtimeId = this.silenceDowntimes.get(agent.id)
      if (silent && downtimeId === undefined) {
        const minutes = Math.round(this.heartbeatCriticalAfterMs / 60_000)
        agent.last_state = agent.state
        agent.state = 'CRITICAL'
        agent.state_reason = `No heartbeat for more than ${minutes} minute${minutes === 1 ? '' : 's'}`
        agent.last_state_change = new Date(now).toISOString()
        const downtime = this.commit(
          'downtimes',
          this.build('downtimes', {
            name: `agent-${String(agent.name)}-silent`,
            kind: 'generic',
            severity: 'major',
            started_at: new Date(lastSeen + this.heartbeatCriticalAfterMs).toISOString(),
            affected_objects: [agent.id],
            affected_objects_count: 1,
            affected_workspaces: agent.workspace ? [agent.workspace] : [],
            workspace: agent.workspace ?? null,
            organization: agent.organization ?? null,
            counts_towards_sla: true,
            excluded_reason: '',
          }),
        )
        this.silenceDowntimes.set(agent.id, downtime.id)
      } else if (!silent && downtimeId !== undefined) {
        this.endSilence(agent, 'OK')
      }
    }
  }

  protected endSilence(agent: StoredObject, state: string): void {
    const downtimeId = this.silenceDowntimes.get(agent.id)
    if (downtimeId === undefined) return
    this.silenceDowntimes.delete(agent.id)
    const downtime = this.store.find('downtimes', downtimeId)
    if (downtime) {
      downtime.ended_at = this.isoNow()
      downtime.is_active = false
      downtime.updated_at = this.isoNow()
    }
    agent.last_state = agent.state
    agent.state = state
    agent.state_reason = ''
    agent.last_state_change = this.isoNow()
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Agent side

  protected agentHealth(call: Call): Reply {
    const body = this.objectBody(call, true)
    if (!body.ok) return body.reply
    const report = body.value
    const {workspaceId, organizationId} = call.principal
    if (workspaceId === null) {
      return fieldError('non_field_errors', 'invalid', 'A health report needs a token scoped to a workspace (an agent token).')
    }
    const errors: FieldError[] = []
    const reportedId = report.reported_agent_id
    if (typeof reportedId !== 'string' || reportedId === '') errors.push({attr: 'reported_agent_id', code: 'required', detail: 'This field is required.'})
    if (report.kind !== undefined && report.kind !== 'agent' && report.kind !== 'operator') {
      errors.push({attr: 'kind', code: 'invalid_choice', detail: `"${String(report.kind)}" is not a valid choice.`})
    }
    if (report.status !== undefined && (typeof report.status !== 'string' || !(report.status in STATE_OF_HEALTH_STATUS))) {
      errors.push({attr: 'status', code: 'invalid_choice', detail: `"${String(report.status)}" is not a valid choice.`})
    }
    const results = report.check_results ?? []
    if (!Array.isArray(results)) {
      errors.push({attr: 'check_results', code: 'not_a_list', detail: 'Expected a list of items.'})
    } else {
      results.forEach((result: unknown, index) => {
        if (!isObject(result) || typeof result.endpoint_id !== 'string') {
          errors.push({attr: `check_results.${index}.endpoint_id`, code: 'required', detail: 'This field is required.'})
        }
        if (!isObject(result) || typeof result.success !== 'boolean') {
          errors.push({attr: `check_results.${index}.success`, code: 'required', detail: 'This field is required.'})
        }
      })
    }
    if (errors.length > 0 || typeof reportedId !== 'string') return validationError(errors)

    const kind = typeof report.kind === 'string' ? report.kind : undefined
    let agent = this.liveObjects('agents').find((candidate) => candidate.workspace === workspaceId && candidate.reported_agent_id === reportedId)
    agent ??= this.commit(
      'agents',
      this.build('agents', {name: reportedId, reported_agent_id: reportedId, kind: kind ?? 'agent', workspace: workspaceId, organization: organizationId}),
    )
    const now = this.isoNow()
    const state = STATE_OF_HEALTH_STATUS[typeof report.status === 'string' ? report.status : 'healthy'] ?? 'OK'
    this.endSilence(agent, state)
    if (agent.state !== state) {
      agent.last_state = agent.state
      agent.last_state_change = now
    }
    Object.assign(agent, {
      state,
      state_reason: state === 'OK' ? '' : `Agent reports status ${String(report.status)}`,
      last_seen: now,
      updated_at: now,
      is_active: true,
      ...(kind ? {kind} : {}),
      ...(typeof report.version === 'string' ? {version: report.version} : {}),
    })
    if (agent.kind === 'operator' && !agent.k8s_app) {
      const cluster = this.liveObjects('kubernetes/clusters').find((candidate) => candidate.workspace === workspaceId)
      const app = cluster && this.liveObjects('kubernetes/apps').find((candidate) => candidate.k8s_cluster === cluster.id && candidate.name === OPERATOR_APP_NAME)
      if (app) agent.k8s_app = app.id
    }

    const healthData = this.commit('agent/health', this.build('agent/health', {...report, agent: agent.id, workspace: workspaceId, received_at: now}))
    for (const result of results as JsonObject[]) {
      this.commit('check-results', this.build('check-results', {...result, agent: agent.id, health_data: healthData.id}))
      this.monitoring.record(agent.id, result, this.endpointName)
    }
    if ((results as JsonObject[]).length > 0) agent.check_status = this.monitoring.checkStatus(agent.id, this.endpointName)
    const workspace = this.store.find('workspaces', workspaceId)
    const organization = organizationId ? this.store.find('organizations', organizationId) : undefined
    return ok(
      {
        status: 'success',
        agent_id: agent.id,
        reported_agent_id: reportedId,
        health_data_id: healthData.id,
        pop_name: this.cloud.popName,
        pop_id: this.cloud.popId,
        endpoint_monitoring_mode: text(workspace?.endpoint_monitoring_mode) ?? 'auto',
        operator_global_endpoint_monitor: false,
        workspace_id: workspaceId,
        workspace_name: String(workspace?.name ?? ''),
        organization_id: organization?.id ?? null,
        organization_name: organization ? String(organization.name) : null,
      },
      201,
    )
  }

  /**
   * The endpoints assigned to the agent named by X-Agent-ID: those whose `agents` list holds it, and (standing
   * in for the assignment task) every monitored endpoint of its workspace that has no agents assigned.
   */
  protected agentEndpoints(call: Call): Reply {
    const header = call.headers['x-agent-id']
    const reportedId = Array.isArray(header) ? header[0] : header
    if (!reportedId) return fieldError('X-Agent-ID', 'required', 'The X-Agent-ID header is required.')
    const agentModel = modelFor('agents')
    const agent =
      agentModel && this.liveObjects('agents').find((candidate) => candidate.reported_agent_id === reportedId && this.visible(call, agentModel, candidate))
    if (!agent) return notFound(`No agent with reported id "${reportedId}": send a health report first.`)
    const names = (resource: string, id: unknown) => {
      const object = text(id) ? this.store.find(resource, String(id)) : undefined
      return object ? {id: object.id, name: object.name ?? null} : null
    }
    const endpoints = this.liveObjects('endpoints')
    this.monitoring.assign({endpoints, agents: this.liveObjects('agents'), workspaces: new Map(this.liveObjects('workspaces').map((w) => [w.id, w]))})
    const ids = this.monitoring.endpointsOf(agent.id)
    const assigned = endpoints.filter((endpoint) => ids.has(endpoint.id))
    return ok(
      assigned.map((endpoint) => ({
        id: endpoint.id,
        name: endpoint.name,
        kind: endpoint.kind,
        remote_address: endpoint.remote_address,
        remote_port: endpoint.remote_port ?? null,
        workspace: names('workspaces', endpoint.workspace),
        organization: names('organizations', endpoint.organization),
        spec: endpoint.spec ?? null,
        // Not in the contract's agent view: the expected body travels in the endpoint's annotations, so the agent sees it.
        ...(isObject(endpoint.annotations) && Object.keys(endpoint.annotations).length > 0 ? {annotations: endpoint.annotations} : {}),
      })),
    )
  }

  protected readonly endpointName = (id: string): string => String(this.store.find('endpoints', id)?.name ?? id)

  /** `GET /agents/{id}/assignments/`: the agent's endpoint assignments with their check status. */
  protected agentAssignments(call: Call, id: string): Reply {
    const target = modelFor('agents')
    if (!target || !this.findVisible(call, target, id)) return notFound()
    return ok(this.monitoring.assignmentsOf(id, this.endpointName))
  }

  protected agentErrors(call: Call): Reply {
    const body = this.objectBody(call)
    if (!body.ok) return body.reply
    const required = ['agent_id', 'timestamp', 'total_errors', 'error_counts', 'critical_errors', 'recent_errors', 'system_info']
    const missing = required.filter((field) => body.value[field] === undefined || body.value[field] === null)
    if (missing.length > 0) return validationError(missing.map((attr) => ({attr, code: 'required', detail: 'This field is required.'})))
    const stored = this.commit('agent/errors', this.build('agent/errors', {...body.value, workspace: call.principal.workspaceId}))
    return ok({status: 'success', agent_id: body.value.agent_id, error_id: stored.id}, 201)
  }

}
