/** What the API sync writes into OperatorConfig.status (pure; the feature applies it server-side). */
import type {OperatorConfigStatus} from '../../crds/operatorconfig.js'
import {setStatusCondition} from '../../kube/conditions.js'
import {conditionTypes} from '../conventions.js'

export type ApiSyncOutcome =
  | {kind: 'no-token' | 'rejected' | 'unreachable' | 'failed'; message: string}
  | {
    kind: 'connected'
    workspace: {id: string; name: string}
    organization?: {id: string; name: string}
    agent: {agentId: string; reportedAgentId: string; version: string; popName?: string; popId?: string | null; monitoringMode?: string}
    localCluster?: {clusterId?: string; clusterName?: string; created?: boolean; message?: string}
  }

export type ApiSyncStatus = Pick<OperatorConfigStatus, 'api_sync' | 'local_cluster' | 'agent' | 'conditions'>

const reasons = {'no-token': 'NoAgentToken', rejected: 'TokenRejected', unreachable: 'APIUnreachable', failed: 'APIError'} as const

/**
 * The status fields API sync owns. Timestamps (`resolved_at`) only move when what they stamp changes, so a
 * heartbeat that changes nothing writes nothing.
 */
export function apiSyncStatus(previous: OperatorConfigStatus | undefined, outcome: ApiSyncOutcome, now: string): ApiSyncStatus {
  const previousCondition = (previous?.conditions ?? []).filter((c) => c.type === conditionTypes.apiConnected)
  if (outcome.kind !== 'connected') {
    return {
      api_sync: previous?.api_sync,
      local_cluster: previous?.local_cluster,
      agent: previous?.agent,
      conditions: setStatusCondition(previousCondition, {type: conditionTypes.apiConnected, status: 'False', reason: reasons[outcome.kind], message: outcome.message}, now),
    }
  }
  const apiSync = {
    workspace_id: outcome.workspace.id,
    workspace_name: outcome.workspace.name,
    organization_id: outcome.organization?.id,
    organization_name: outcome.organization?.name,
  }
  const sameWorkspace = previous?.api_sync?.workspace_id === apiSync.workspace_id &&
    previous.api_sync.workspace_name === apiSync.workspace_name &&
    previous.api_sync.organization_id === apiSync.organization_id &&
    previous.api_sync.organization_name === apiSync.organization_name
  const local = outcome.localCluster
  const localCluster = local
    ? {
      cluster_id: local.clusterId,
      cluster_name: local.clusterName,
      registered: local.created ?? previous?.local_cluster?.registered ?? false,
      resolved_at: previous?.local_cluster?.cluster_id === local.clusterId ? (previous?.local_cluster?.resolved_at ?? now) : now,
    }
    : undefined
  const message = `Connected to the Polycrate API as agent ${outcome.agent.reportedAgentId} of workspace ${outcome.workspace.name}` +
    (outcome.organization ? ` (${outcome.organization.name})` : '') + '.' + (local?.message ? ` ${local.message}` : '')
  return {
    api_sync: {...apiSync, resolved_at: sameWorkspace && previous?.api_sync?.resolved_at ? previous.api_sync.resolved_at : now},
    local_cluster: localCluster,
    agent: {
      agent_id: outcome.agent.agentId,
      reported_agent_id: outcome.agent.reportedAgentId,
      version: outcome.agent.version,
      pop_name: outcome.agent.popName || undefined,
      pop_id: outcome.agent.popId ?? undefined,
      endpoint_monitoring_mode: outcome.agent.monitoringMode,
    },
    conditions: setStatusCondition(previousCondition, {type: conditionTypes.apiConnected, status: 'True', reason: 'Connected', message}, now),
  }
}
