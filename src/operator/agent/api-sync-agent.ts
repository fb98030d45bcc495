/**
 * The parts of the API sync (api-sync-feature.ts wires them to a controller): the token read from its Secret, the
 * health report and what it resolves (workspace, local cluster, the operator's own K8sApp), the standby that follows
 * the leader's status, the status write and the APIConnected Events. Pure decisions are functions; the state that
 * lives for a run (the reported agent id, the K8sApp last synced) is in `ApiSyncAgent`.
 */
import {isDeepStrictEqual} from 'node:util'
import {adoptOrCreate, ApiAuthError, ApiError, ApiNetworkError, type PolycrateApiClient} from '../../api/index.js'
import {API_VERSION} from '../../crds/define.js'
import {operatorConfigCrd} from '../../crds/operatorconfig.js'
import type {Condition} from '../../crds/schema.js'
import type {KubeObject} from '../../kube/client.js'
import {isoNow, timeoutSignal, type Clock} from '../../lib/clock.js'
import type {Logger} from '../../lib/logger.js'
import {operatorVersion} from '../../version.js'
import {findStatusCondition, setStatusCondition} from '../../kube/conditions.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {operatorConfigResource, type OperatorConfigObject} from '../config/operator-config-controller.js'
import {conditionTypes, OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../conventions.js'
import type {EventRecorder} from '../../kube/events.js'
import type {ObjectCache} from '../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../runtime/controller.js'
import type {StopReason} from '../runtime/feature.js'
import type {Manager} from '../runtime/manager.js'
import {operatorAgentId} from './agent-id.js'
import type {ApiIdentity, ApiSession} from './api-session.js'
import {apiSyncStatus, type ApiSyncOutcome, type ApiSyncStatus} from './api-sync-status.js'

const STATUS_MANAGER = 'polycrate-operator-api-sync'

export interface SecretObject extends KubeObject {
  data?: Record<string, string>
}

/** Where the agent token is: the Secret's namespace, name and key. */
export interface TokenRef {
  namespace: string
  secret_name: string
  token_key: string
}

/** Lower-case DNS-1123 slug for API names (`Production Cluster` → `production-cluster`). */
export function slug(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || 'cluster'
}

/** The agent token from its Secret, or what is wrong with it and how to fix it (pure). */
export function readToken(secret: SecretObject | undefined, ref: TokenRef): {token: string} | {problem: string} {
  const where = `Secret ${ref.namespace}/${ref.secret_name}`
  const create = `kubectl create secret generic ${ref.secret_name} -n ${ref.namespace} --from-literal=${ref.token_key}=<agent token>`
  if (!secret) return {problem: `No agent token: ${where} does not exist. Create it: ${create}`}
  const encoded = secret.data?.[ref.token_key]
  if (!encoded) {
    const keys = Object.keys(secret.data ?? {})
    return {problem: `No agent token: ${where} has no key "${ref.token_key}" (it has: ${keys.length > 0 ? keys.join(', ') : 'no keys'}). Add it, or set api_sync.credentials_ref.token_key.`}
  }
  const token = Buffer.from(encoded, 'base64').toString('utf8').trim()
  if (!token) return {problem: `No agent token: key "${ref.token_key}" of ${where} is empty.`}
  return {token}
}

/** A failed health report → the outcome APIConnected shows; undefined for an error that is not the API's (pure). */
export function connectFailure(error: unknown, apiUrl: string, ref: TokenRef, retrySeconds: number): ApiSyncOutcome | undefined {
  if (error instanceof ApiAuthError) {
    return {kind: 'rejected', message: `The Polycrate API at ${apiUrl} rejected the agent token from Secret ${ref.namespace}/${ref.secret_name} (${error.status}${error.forbidden ? ' Forbidden' : ' Unauthorized'}): create a new API token for the cluster's workspace and update the Secret.`}
  }
  if (error instanceof ApiNetworkError) {
    // Its message already says "Cannot reach the Polycrate API at … Check the API URL and the network."
    return {kind: 'unreachable', message: `${error.message} Retrying every ${retrySeconds} s.`}
  }
  if (error instanceof ApiError && (error.status >= 500 || error.status === 429)) {
    return {kind: 'unreachable', message: `${error.message.replace(/\.$/, '')} (API at ${apiUrl}). Retrying every ${retrySeconds} s.`}
  }
  if (error instanceof ApiError) {
    return {kind: 'failed', message: `The Polycrate API at ${apiUrl} refused a request of the operator: ${error.message}. Retrying every ${retrySeconds} s.`}
  }
  return undefined
}

/** A standby's identity: the one the leader wrote into the OperatorConfig status, if it did (pure). */
export function leaderIdentity(status: OperatorConfigObject['status']): ApiIdentity | undefined {
  const apiSync = status?.api_sync
  if (!apiSync?.workspace_id || !apiSync.workspace_name) return undefined
  return {
    workspaceId: apiSync.workspace_id,
    workspaceName: apiSync.workspace_name,
    organizationId: apiSync.organization_id ?? undefined,
    organizationName: apiSync.organization_name ?? undefined,
    clusterId: status?.local_cluster?.cluster_id ?? undefined,
  }
}

/** What the APIConnected condition says once API sync stopped (pure). */
export function stoppedMessage(why: StopReason | undefined): string {
  return why?.kind === 'disabled'
    ? 'API sync is disabled (api_sync.enabled is false).'
    : why?.kind === 'restart' ? 'API sync is restarting with new settings.' : why ? `API sync is stopped: ${why.message}.` : 'API sync is stopped.'
}

/** Whether a stopped API sync marks APIConnected False: only the leader, and not for a restart or a shutdown (pure). */
export function marksStopped(why: StopReason | undefined, isLeader: boolean): boolean {
  return isLeader && why?.kind !== 'restart' && why?.kind !== 'shutdown'
}

/** The APIConnected condition among `conditions`. */
export function apiConnectedOf(conditions: readonly Condition[] | undefined): Condition | undefined {
  return findStatusCondition(conditions, conditionTypes.apiConnected)
}

export interface ApiSyncAgentOptions {
  /** Its timers are the clock of the heartbeat (the controller's requeues), its uptime and its timestamps. */
  manager: Pick<Manager, 'client' | 'namespace' | 'isLeader' | 'logger' | 'clock'> & Partial<Pick<Manager, 'metrics'>>
  config: OperatorConfig
  session: ApiSession
  token: TokenRef
  /** The token Secret (by its field selector, the only one). */
  secrets: ObjectCache<SecretObject>
  configs: ObjectCache<OperatorConfigObject>
  events: Pick<EventRecorder, 'record'>
}

/** The API sync's reconcile of the OperatorConfig key, and what it keeps for the run. */
export class ApiSyncAgent {
  readonly key: string
  private readonly clock: Clock
  /** When this run started (ms on the clock). */
  private readonly startedAt: number
  /** How often a failed heartbeat is tried again: its interval, at most 30 s. */
  readonly retrySeconds: number
  private reportedAgentId: string | undefined
  private ownAppSynced: string | undefined

  constructor(private readonly options: ApiSyncAgentOptions) {
    this.key = `${options.manager.namespace}/${OPERATOR_CONFIG_NAME}`
    this.clock = options.manager.clock
    this.startedAt = this.clock.now()
    this.retrySeconds = Math.min(options.config.api_sync.sync_interval_seconds, 30)
  }

  async reconcile({key: requested, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    if (requested !== this.key) return
    if (!this.options.manager.isLeader) return this.followLeader()
    const {session, config} = this.options
    const object = this.options.configs.get(this.key)
    const read = this.readToken()
    const outcome: ApiSyncOutcome = 'problem' in read
      ? {kind: 'no-token', message: read.problem}
      : await this.connect(read.token, object?.status?.local_cluster?.cluster_id, signal)
    // A brown-out is not a lost identity: with a workspace resolved, the sync controllers go on (each of their calls
    // fails and backs off on its own) instead of all stopping and restarting with every failed heartbeat. No token
    // or a rejected one does disconnect. APIConnected says what happened either way.
    const transient = outcome.kind === 'unreachable' || outcome.kind === 'failed'
    if (outcome.kind !== 'connected' && !(transient && session.identity)) session.disconnected(outcome.message)
    this.recordOutcome(outcome)
    if (object) {
      const next = apiSyncStatus(object.status, outcome, isoNow(this.clock))
      await this.writeStatus(object, next, signal)
      await this.announceTransition(object, next, logger)
    }
    if (outcome.kind === 'connected') {
      logger.debug('heartbeat sent', {workspace: outcome.workspace.name})
      return {requeueAfterMs: config.api_sync.sync_interval_seconds * 1000}
    }
    logger.warn('Polycrate API not connected', {reason: outcome.kind, message: outcome.message})
    // The heartbeat is one request per interval: it goes on at its interval through an outage (at most every
    // 30 s) rather than backing off to a minute, so a brown-out that lets half the requests through is over for
    // the operator within a few intervals.
    return {requeueAfterMs: this.retrySeconds * 1000}
  }

  /** After the controller stopped: the session disconnects; the leader marks APIConnected False (see marksStopped). */
  async stopped(why: StopReason | undefined, object: OperatorConfigObject | undefined): Promise<void> {
    const {manager, session} = this.options
    this.forgetOutcome()
    const message = stoppedMessage(why)
    // The identity goes with the settings (another token may mean another workspace) until the restart reconnects.
    session.disconnected(message)
    // The condition must not go on claiming a connection nobody keeps (after a restart the new run reports at
    // once; at shutdown the next leader takes over).
    if (!object || !marksStopped(why, manager.isLeader)) return
    const reason = why?.kind === 'disabled' ? 'APISyncDisabled' : 'APISyncStopped'
    const conditions = setStatusCondition(object.status?.conditions?.filter((c) => c.type === conditionTypes.apiConnected), {type: conditionTypes.apiConnected, status: 'False', reason, message}, isoNow(this.clock))
    const next = {api_sync: object.status?.api_sync, local_cluster: object.status?.local_cluster, agent: object.status?.agent, conditions}
    const timeout = timeoutSignal(this.clock, 10_000)
    try {
      await this.writeStatus(object, next, timeout.signal)
      await this.announceTransition(object, next, manager.logger)
    } catch (error) {
      manager.logger.warn('could not mark APIConnected False after stopping API sync', {error: (error as Error).message})
    } finally {
      timeout.clear()
    }
  }


  /** The heartbeat's gauges (the leader's): connected or not, when it last got through, its interval. */
  private recordOutcome(outcome: ApiSyncOutcome): void {
    const metrics = this.options.manager.metrics
    if (!metrics) return
    const labels = {api_url: this.options.config.api_sync.api_url}
    metrics.apiConnected.set(labels, outcome.kind === 'connected' ? 1 : 0)
    metrics.apiSyncInterval.set(labels, this.options.config.api_sync.sync_interval_seconds)
    if (outcome.kind === 'connected') metrics.apiLastHeartbeat.set(labels, this.clock.now() / 1000)
  }

  /** API sync stopped: its series go (a disabled API sync is not a disconnected one). */
  private forgetOutcome(): void {
    const metrics = this.options.manager.metrics
    if (!metrics) return
    const labels = {api_url: this.options.config.api_sync.api_url}
    for (const gauge of [metrics.apiConnected, metrics.apiSyncInterval, metrics.apiLastHeartbeat]) gauge.remove(labels)
  }

  private readToken(): {token: string} | {problem: string} {
    const {token} = this.options
    return readToken(this.options.secrets.get(`${token.namespace}/${token.secret_name}`), token)
  }

  private async agentIdentity(): Promise<string> {
    const {manager, config, configs} = this.options
    this.reportedAgentId ??= await operatorAgentId(manager.client, config.agent.agent_id_prefix, () => configs.get(this.key)?.metadata.uid ?? manager.namespace)
    return this.reportedAgentId
  }

  /** The health report, then the local cluster and the own K8sApp; the session learns the identity. */
  private async connect(token: string, previousClusterId: string | undefined, signal: AbortSignal): Promise<ApiSyncOutcome> {
    const {session, config} = this.options
    const apiUrl = config.api_sync.api_url
    const api = session.clientFor(apiUrl, token)
    const agentId = await this.agentIdentity()
    const version = operatorVersion()
    try {
      const health = await api.agent.health({
        reported_agent_id: agentId,
        kind: 'operator',
        version,
        status: 'healthy',
        uptime_seconds: Math.round((this.clock.now() - this.startedAt) / 1000),
        start_time: new Date(this.startedAt).toISOString(),
        reported_at: isoNow(this.clock),
        api_connected: true,
      }, {signal})
      const local = await this.resolveLocalCluster(api, health.workspace_id, previousClusterId, signal)
      if (local?.clusterId) await this.syncOwnApp(api, local.clusterId, signal)
      session.connected({
        workspaceId: health.workspace_id,
        workspaceName: health.workspace_name,
        organizationId: health.organization_id ?? undefined,
        organizationName: health.organization_name ?? undefined,
        clusterId: local?.clusterId,
      })
      return {
        kind: 'connected',
        workspace: {id: health.workspace_id, name: health.workspace_name},
        organization: health.organization_id ? {id: health.organization_id, name: health.organization_name ?? ''} : undefined,
        agent: {agentId: health.agent_id, reportedAgentId: agentId, version, popName: health.pop_name ?? undefined, popId: health.pop_id, monitoringMode: health.endpoint_monitoring_mode ?? undefined},
        localCluster: local,
      }
    } catch (error) {
      const failure = connectFailure(error, apiUrl, this.options.token, this.retrySeconds)
      if (failure) return failure
      throw error
    }
  }

  /** The operator reference's rules: the API's cluster for the workspace wins; else create `cluster_name`; else none. */
  private async resolveLocalCluster(api: PolycrateApiClient, workspaceId: string, previousId: string | undefined, signal: AbortSignal) {
    const local = this.options.config.local_cluster
    if (!local.enabled) return undefined
    if (previousId) {
      const known = await api.k8sClusters.get(previousId, {signal}).catch((error) => {
        if (error instanceof ApiError && error.status === 404) return undefined
        throw error
      })
      if (known && !known.is_deleted) return {clusterId: known.id, clusterName: known.name ?? undefined}
    }
    const name = local.cluster_name
    if (!name) {
      const existing = await api.k8sClusters.findOne({workspaces: workspaceId}, {signal})
      if (existing) return {clusterId: existing.id, clusterName: existing.name ?? undefined, created: false}
      return {message: 'No cluster exists in the API for this workspace and local_cluster.cluster_name is not set: nothing was registered.'}
    }
    // The workspace's cluster if it has one (adopt's lookup), else one named cluster_name: one lookup, not two.
    const {object, created} = await adoptOrCreate(api.k8sClusters, {
      lookup: {workspaces: workspaceId},
      body: {name: slug(name), display_name: name, kind: 'generic'},
      signal,
      clock: this.clock,
    })
    return {clusterId: object.id, clusterName: object.name ?? name, created}
  }

  /** The operator's own K8sApp `polycrate-operator` in the API, with the running version. */
  private async syncOwnApp(api: PolycrateApiClient, clusterId: string, signal: AbortSignal): Promise<void> {
    const version = operatorVersion()
    if (this.ownAppSynced === `${clusterId}/${version}`) return
    const {object, created} = await adoptOrCreate(api.k8sApps, {
      lookup: {name_exact: OPERATOR_NAME, k8s_cluster: clusterId},
      body: {name: OPERATOR_NAME, namespace: this.options.manager.namespace, kind: 'polycrate', k8s_cluster: clusterId, installed_version: version, installed: true},
      signal,
      clock: this.clock,
    })
    if (!created && object.installed_version !== version) await api.k8sApps.update(object.id, {installed_version: version, installed: true}, {signal})
    this.ownAppSynced = `${clusterId}/${version}`
  }

  /**
   * A standby sends no heartbeat (one agent, one reporter) and writes nothing: it takes the token from the Secret and
   * the workspace, organization and cluster from the status the leader wrote, so its webhooks can call the API.
   */
  private followLeader(): undefined {
    const {session, config} = this.options
    const read = this.readToken()
    if ('problem' in read) {
      session.disconnected(read.problem)
      return
    }
    session.clientFor(config.api_sync.api_url, read.token)
    const identity = leaderIdentity(this.options.configs.get(this.key)?.status)
    if (!identity) session.disconnected('the leader has not connected to the Polycrate API yet')
    else session.connected(identity)
  }

  /**
   * APIConnected flips become Events on the OperatorConfig (Normal on connect, Warning on loss) and log lines, so
   * `kubectl describe` and the log tell when the connection went and came back.
   */
  private async announceTransition(object: OperatorConfigObject, next: ApiSyncStatus, logger: Pick<Logger, 'info'>): Promise<void> {
    const before = apiConnectedOf(object.status?.conditions)
    const after = apiConnectedOf(next.conditions)
    if (!after || (before?.status === after.status && before.reason === after.reason)) return
    if (after.status === 'True') {
      if (before?.status === 'False') logger.info('Polycrate API connection restored', {after: before.reason})
      await this.options.events.record(object, 'Normal', 'APIConnected', after.message ?? 'Connected to the Polycrate API.')
    } else {
      await this.options.events.record(object, 'Warning', after.reason ?? 'APINotConnected', after.message ?? 'Not connected to the Polycrate API.')
    }
  }

  private async writeStatus(object: OperatorConfigObject, status: ApiSyncStatus, signal: AbortSignal): Promise<void> {
    const {manager} = this.options
    const current = object.status
    const unchanged = isDeepStrictEqual(
      JSON.parse(JSON.stringify({api_sync: current?.api_sync, local_cluster: current?.local_cluster, agent: current?.agent, conditions: (current?.conditions ?? []).filter((c) => c.type === 'APIConnected')})),
      JSON.parse(JSON.stringify(status)),
    )
    if (unchanged) return
    await manager.client.apply(
      {...operatorConfigResource(manager.namespace), name: OPERATOR_CONFIG_NAME, subresource: 'status'},
      {apiVersion: API_VERSION, kind: operatorConfigCrd.kind, metadata: {name: OPERATOR_CONFIG_NAME, namespace: manager.namespace}, status},
      {fieldManager: STATUS_MANAGER, signal},
    )
  }
}
