/**
 * The Polycrate API simulator: a small node:http server that follows the Polycrate API's contract, with an
 * in-memory store, token → workspace/organization mapping, a request log, fault injection, and the operator
 * rollout dashboard. Tests start one on an ephemeral port; `npm run api-sim` runs one for local development.
 *
 *   const api = await ApiSimulator.start()
 *   const org = api.createOrganization('acme')
 *   const ws = api.createWorkspace({name: 'prod', organizationId: org.id})
 *   const token = api.issueToken({kind: 'agent', workspaceId: ws.id})
 *   await fetch(`${api.url}/api/v1/endpoints/`, {headers: {authorization: `Bearer ${token}`}})
 *   await api.close()
 *
 * Layout: models.ts (per-collection rules), store.ts (collections, filters, pagination), rollout.ts (dashboard
 * and gating, pure), faults.ts, auth.ts (tokens, visibility), http.ts (replies and error bodies). The class is a
 * chain of one file per part: core.ts (state, server, test set-up API, request helpers, the generic collection
 * handlers) ← agents.ts (agent/health, silence downtimes, agent endpoints and errors) ← platform.ts (certificate
 * sync, S3 bucket credentials, DNS zone resolution, SystemConfig) ← rollout-routes.ts (operator rollout) ← this
 * file: ApiSimulator, its start() and the routing.
 */
import {methodNotAllowed, notFound, ok, type Reply} from './http.js'
import {modelFor, type ResourceModel} from './models.js'
import {RolloutRoutes} from './rollout-routes.js'
import {APPS_ALIAS, includes, LABEL_KEYS, maintenanceActive, type Call, type SimulatorOptions} from './core.js'

export type {FaultConfig} from './faults.js'
export type {TokenKind} from './auth.js'
export {S3_KEY_PATTERN, type S3Region} from './s3.js'
export {computeRollout, OPERATOR_APP_NAME} from './rollout.js'
export type {RequestLogEntry, SimulatorOptions} from './core.js'

export class ApiSimulator extends RolloutRoutes {
  static async start(options: SimulatorOptions = {}): Promise<ApiSimulator> {
    const simulator = new ApiSimulator(options)
    await simulator.listen(options.port ?? 0, options.host ?? '127.0.0.1')
    return simulator
  }

  private constructor(options: SimulatorOptions) {
    super(options)
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Routing

  protected only(call: Call, handlers: Partial<Record<string, () => Reply>>): Reply {
    const handler = handlers[call.method]
    return handler ? handler() : methodNotAllowed(call.method)
  }

  protected route(call: Call): Reply {
    const segments = call.segments
    const path = segments.join('/')
    const s3 = this.s3.route(path, call.method, call.url.searchParams, () => this.liveObjects('s3/buckets'))
    if (s3) {
      call.resource = path.startsWith('s3/clusters') ? 's3/clusters' : path
      return s3
    }
    const fixed: Record<string, Partial<Record<string, () => Reply>>> = {
      'agent/health': {POST: () => this.agentHealth(call)},
      'agent/endpoints': {GET: () => this.agentEndpoints(call)},
      'agent/errors': {POST: () => this.agentErrors(call)},
      'certificates/sync': {POST: () => this.certificateSync(call)},
      'domains/dnszones/resolve': {GET: () => this.resolveZone(call)},
      'system/config': {GET: () => ok({...this.systemConfig}), PATCH: () => this.patchSystemConfig(call)},
      'system/health': {GET: () => ok({status: 'ok'})},
      'system/status': {GET: () => ok({...this.systemStatus})},
      'label-keys': {GET: () => ok({label_keys: LABEL_KEYS})},
      k8sapps: {GET: () => this.listObjects(call, APPS_ALIAS)},
      'operator-rollout': {GET: () => this.rolloutDashboard(call)},
    }
    const fixedHandlers = fixed[path]
    if (fixedHandlers) {
      call.resource = path
      return this.only(call, fixedHandlers)
    }
    if (segments[0] === 'agents' && segments.length === 3 && segments[2] === 'assignments') {
      call.resource = 'agents'
      return this.only(call, {GET: () => this.agentAssignments(call, segments[1] ?? '')})
    }
    if (segments[0] === 'operator-rollout' && segments.length === 3) {
      call.resource = 'operator-rollout'
      const [, clusterId = '', action = ''] = segments
      return this.only(call, {POST: () => this.rolloutAction(call, clusterId, action)})
    }

    const match = this.matchCollection(segments)
    if (!match) return notFound()
    const {target, rest} = match
    call.resource = target.resource
    const [id, action] = rest
    if (id === undefined) return this.only(call, {GET: () => this.listObjects(call, target), POST: () => this.createObject(call, target)})
    if (action === undefined) {
      return this.only(call, {
        GET: () => this.retrieveObject(call, target, id),
        PUT: () => this.updateObject(call, target, id, false),
        PATCH: () => this.updateObject(call, target, id, true),
        DELETE: () => this.deleteObject(call, target, id),
      })
    }
    if (rest.length === 2) {
      if (action === 'archive') return this.only(call, {POST: () => this.archiveObject(call, target, id)})
      if (target.resource === 'kubernetes/apps' && (action === 'install' || action === 'uninstall')) {
        return this.only(call, {POST: () => this.installApp(call, id, action === 'install')})
      }
      if (target.resource === 's3/buckets' && action === 'credentials') return this.only(call, {GET: () => this.bucketCredentials(call, id)})
      if (target.resource === 'workspaces' && action === 'maintenance-window-status') {
        return this.only(call, {GET: () => this.maintenanceWindowStatus(call, target, id)})
      }
    }
    return notFound()
  }

  /** `MaintenanceWindowStatus` of a workspace: in a window while an active maintenance affects it. */
  protected maintenanceWindowStatus(call: Call, target: ResourceModel, id: string): Reply {
    if (!this.findVisible(call, target, id)) return notFound()
    const now = this.now()
    const active = this.liveObjects('maintenances').find((maintenance) =>
      maintenanceActive(maintenance, now) && (includes(maintenance.affected_workspace, id) || includes(maintenance.affected_workspaces, id)))
    return ok({
      in_maintenance_window: active !== undefined,
      window_id: active ? String(active.id) : null,
      window_name: active ? String(active.name ?? '') : '',
      window_display_name: active ? String(active.display_name ?? active.name ?? '') : '',
    })
  }

  protected matchCollection(segments: string[]): {target: ResourceModel; rest: string[]} | undefined {
    for (const length of [2, 1]) {
      const target = modelFor(segments.slice(0, length).join('/'))
      if (target && segments.length >= length) return {target, rest: segments.slice(length)}
    }
    return undefined
  }

}
