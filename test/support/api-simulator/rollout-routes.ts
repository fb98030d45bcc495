/** The operator rollout dashboard and its actions (the pure computation is rollout.ts). */
import type {RolloutCluster, RolloutDashboard} from '../../../src/api/rollout-types.js'
import {forbidden, notFound, ok, type Reply} from './http.js'
import {computeRollout, OPERATOR_APP_NAME, type RolloutClusterFacts} from './rollout.js'
import {text, includes, maintenanceActive, type Call} from './core.js'
import {PlatformRoutes} from './platform.js'

export abstract class RolloutRoutes extends PlatformRoutes {
  // ---------------------------------------------------------------------------------------------------------------
  // Operator rollout

  protected rolloutFacts(): RolloutClusterFacts[] {
    const now = this.now()
    const operatorApps = this.liveObjects('kubernetes/apps').filter((app) => app.name === OPERATOR_APP_NAME)
    const operatorAgents = this.liveObjects('agents')
      .filter((agent) => agent.kind === 'operator')
      .sort((a, b) => String(b.last_seen ?? '').localeCompare(String(a.last_seen ?? '')))
    const maintenances = this.liveObjects('maintenances').filter((maintenance) => maintenanceActive(maintenance, now))
    return this.liveObjects('kubernetes/clusters').map((cluster) => {
      const workspaceId = text(cluster.workspace) ?? ''
      const workspace = this.store.find('workspaces', workspaceId)
      const organization = text(cluster.organization) ? this.store.find('organizations', String(cluster.organization)) : undefined
      const app = operatorApps.filter((candidate) => candidate.k8s_cluster === cluster.id).at(-1)
      const agent = operatorAgents.find((candidate) => candidate.workspace === workspaceId && workspaceId !== '')
      const flags = this.rolloutFlags.get(cluster.id) ?? {paused: false, forced: false}
      const inMaintenance = maintenances.some(
        (maintenance) =>
          (workspaceId !== '' && (includes(maintenance.affected_workspace, workspaceId) || includes(maintenance.affected_workspaces, workspaceId))) ||
          includes(maintenance.affected_objects, cluster.id) ||
          includes(maintenance.k8s_cluster, cluster.id) ||
          includes(maintenance.k8s_clusters, cluster.id),
      )
      return {
        id: cluster.id,
        name: String(cluster.name ?? cluster.id),
        workspace: {id: workspaceId, name: String(workspace?.name ?? '')},
        organization: organization ? {id: organization.id, name: String(organization.name ?? '')} : null,
        operatorApp: app ? {installedVersion: text(app.installed_version) ?? null} : null,
        agent: agent ? {id: agent.id, state: text(agent.state) ?? null, lastSeen: text(agent.last_seen) ?? null} : null,
        inMaintenance,
        paused: flags.paused,
        forced: flags.forced,
      }
    })
  }

  protected dashboard(): RolloutDashboard {
    const desired = this.systemConfig.OPERATOR_BLOCK_VERSION
    return computeRollout({
      desiredVersion: typeof desired === 'string' ? desired : null,
      rolloutPercentage: this.systemConfig.OPERATOR_ROLLOUT_PERCENTAGE,
      clusters: this.rolloutFacts(),
    })
  }

  protected rolloutDashboard(call: Call): Reply {
    if (call.principal.kind !== 'platform-admin') return forbidden('The operator rollout is for platform admins only.')
    return ok(this.dashboard())
  }

  /** force-update (clears pause), pause (clears force), resume (clears both). Answers the cluster's row. */
  protected rolloutAction(call: Call, clusterId: string, action: string): Reply {
    const flagsAfter: Record<string, {paused: boolean; forced: boolean}> = {
      'force-update': {paused: false, forced: true},
      pause: {paused: true, forced: false},
      resume: {paused: false, forced: false},
    }
    const flags = flagsAfter[action]
    if (!flags) return notFound()
    if (call.principal.kind !== 'platform-admin') return forbidden('The operator rollout is for platform admins only.')
    const cluster = this.store.find('kubernetes/clusters', clusterId)
    if (!cluster || cluster.is_deleted === true) return notFound(`No K8sCluster ${clusterId}.`)
    this.rolloutFlags.set(clusterId, flags)
    const row: RolloutCluster | undefined = this.dashboard().clusters.find((candidate) => candidate.id === clusterId)
    return row ? ok(row) : notFound()
  }
}
