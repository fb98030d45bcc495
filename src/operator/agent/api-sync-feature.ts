/**
 * API sync identity: reads the agent token from the Secret named by `api_sync.credentials_ref`, sends the health
 * report (`kind: operator`) at start and every `sync_interval_seconds` as heartbeat, stores the workspace and
 * organization it resolves in `OperatorConfig.status.api_sync`, registers the local cluster by the seeds'
 * idempotency rules, and keeps the operator's own K8sApp `polycrate-operator` with its installed version.
 * No token, a rejected token and an unreachable API each get an `APIConnected=False` condition that says what
 * to do; the operator keeps running and retries.
 */
import {isDeepStrictEqual} from 'node:util'
import {
  adoptOrCreate,
  ApiAuthError,
  ApiError,
  ApiNetworkError,
  type PolycrateApiClient,
} from '../../api/index.js'
import {operatorConfigCrd} from '../../crds/operator-config.js'
import {API_VERSION, crdResource} from '../../crds/define.js'
import type {Condition} from '../../crds/schema.js'
import type {KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {operatorVersion} from '../../version.js'
import {credentialsSecret, setCondition, type OperatorConfig} from '../config/operator-config.js'
import {operatorConfigResource, type OperatorConfigObject} from '../config/operator-config-controller.js'
import {conditionTypes, OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../conventions.js'
import type {Feature, StopReason} from '../runtime/feature.js'
import {READ} from '../permissions.js'
import type {ReconcileContext} from '../runtime/controller.js'
import type {Manager} from '../runtime/manager.js'
import {operatorAgentId} from './agent-id.js'
import type {ApiSession} from './api-session.js'
import {apiSyncStatus, type ApiSyncOutcome, type ApiSyncStatus} from './api-sync-status.js'

const STATUS_MANAGER = 'polycrate-operator-api-sync'

interface SecretObject extends KubeObject {
  data?: Record<string, string>
}

/** Lower-case DNS-1123 slug for API names (`Production Cluster` → `production-cluster`). */
export function slug(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || 'cluster'
}

export function createApiSyncFeature(session: ApiSession): Feature {
  return {
    name: 'api-sync',
    enabled: (config) => config.api_sync.enabled,
    permissions: [
      // The agent token Secret (watched by name through a field selector, so list and watch are needed).
      {group: '', resource: 'secrets', verbs: READ, scope: 'namespace'},
      // The cluster's stable identity: the uid of kube-system.
      {group: '', resource: 'namespaces', verbs: ['get'], names: ['kube-system']},
      {group: crdResource(operatorConfigCrd).group, resource: `${operatorConfigCrd.plural}/status`, verbs: ['get', 'patch'], scope: 'namespace'},
    ],
    settings: (config) => ({api: config.api_sync, local: config.local_cluster, secret: credentialsSecret(config), prefix: config.agent.agent_id_prefix}),
    // A standby keeps the session current too (token, and the identity the leader resolved), for the webhooks.
    everyReplica: true,
    start: (manager, config) => startApiSync(manager, config, session),
  }
}

function startApiSync(manager: Manager, config: OperatorConfig, session: ApiSession) {
  const namespace = manager.namespace
  const key = `${namespace}/${OPERATOR_CONFIG_NAME}`
  const secretRef = credentialsSecret(config)
  const apiUrl = config.api_sync.api_url
  const startedAt = new Date()
  /** How often a failed heartbeat is tried again: its interval, at most 30 s. */
  const retrySeconds = Math.min(config.api_sync.sync_interval_seconds, 30)
  const builder = manager.controller('api-sync')
  // Only the token Secret, and the OperatorConfig's spec changes: both come to the one key.
  const secrets = builder.watches<SecretObject>({
    resource: {...resources.secrets, namespace},
    kind: 'Secret',
    fieldSelector: `metadata.name=${secretRef.secret_name}`,
  }, () => [key])
  // A standby also follows the status: the identity it serves with is the one the leader resolved and wrote there.
  const configs = builder.watches<OperatorConfigObject>({resource: operatorConfigResource(namespace), kind: operatorConfigCrd.kind}, () => [key], {
    onUpdate: (old, next) => old.metadata?.generation !== next.metadata?.generation || !manager.isLeader,
  })
  let reportedAgentId: string | undefined
  let ownAppSynced: string | undefined

  const agentIdentity = async () => {
    reportedAgentId ??= await operatorAgentId(manager.client, config.agent.agent_id_prefix, () => configs.cache.get(key)?.metadata.uid ?? namespace)
    return reportedAgentId
  }

  const readToken = (): {token: string} | {problem: string} => {
    const secret = secrets.cache.get(`${namespace}/${secretRef.secret_name}`)
    const create = `kubectl create secret generic ${secretRef.secret_name} -n ${namespace} --from-literal=${secretRef.token_key}=<agent token>`
    if (!secret) return {problem: `No agent token: Secret ${namespace}/${secretRef.secret_name} does not exist. Create it: ${create}`}
    const encoded = secret.data?.[secretRef.token_key]
    if (!encoded) {
      const keys = Object.keys(secret.data ?? {})
      return {problem: `No agent token: Secret ${namespace}/${secretRef.secret_name} has no key "${secretRef.token_key}" (it has: ${keys.length > 0 ? keys.join(', ') : 'no keys'}). Add it, or set api_sync.credentials_ref.token_key.`}
    }
    const token = Buffer.from(encoded, 'base64').toString('utf8').trim()
    if (!token) return {problem: `No agent token: key "${secretRef.token_key}" of Secret ${namespace}/${secretRef.secret_name} is empty.`}
    return {token}
  }

  /** The seeds' rules: the API's cluster for the workspace wins; else create `cluster_name`; else none. */
  const resolveLocalCluster = async (api: PolycrateApiClient, workspaceId: string, previousId: string | undefined, signal: AbortSignal) => {
    if (!config.local_cluster.enabled) return undefined
    if (previousId) {
      const known = await api.k8sClusters.get(previousId, {signal}).catch((error) => {
        if (error instanceof ApiError && error.status === 404) return undefined
        throw error
      })
      if (known && !known.is_deleted) return {clusterId: known.id, clusterName: known.name ?? undefined}
    }
    const existing = await api.k8sClusters.findOne({workspaces: workspaceId}, {signal})
    if (existing) return {clusterId: existing.id, clusterName: existing.name ?? undefined, created: false}
    const name = config.local_cluster.cluster_name
    if (!name) return {message: 'No cluster exists in the API for this workspace and local_cluster.cluster_name is not set: nothing was registered.'}
    const {object, created} = await adoptOrCreate(api.k8sClusters, {
      lookup: {workspaces: workspaceId},
      body: {name: slug(name), display_name: name, kind: 'generic'},
      signal,
    })
    return {clusterId: object.id, clusterName: object.name ?? name, created}
  }

  /** The operator's own K8sApp `polycrate-operator` in the API, with the running version. */
  const syncOwnApp = async (api: PolycrateApiClient, clusterId: string, signal: AbortSignal) => {
    const version = operatorVersion()
    if (ownAppSynced === `${clusterId}/${version}`) return
    const {object, created} = await adoptOrCreate(api.k8sApps, {
      lookup: {name_exact: OPERATOR_NAME, k8s_cluster: clusterId},
      body: {name: OPERATOR_NAME, namespace, kind: 'polycrate', k8s_cluster: clusterId, installed_version: version, installed: true},
      signal,
    })
    if (!created && object.installed_version !== version) await api.k8sApps.update(object.id, {installed_version: version, installed: true}, {signal})
    ownAppSynced = `${clusterId}/${version}`
  }

  const connect = async (token: string, previousClusterId: string | undefined, signal: AbortSignal): Promise<ApiSyncOutcome> => {
    const api = session.clientFor(apiUrl, token)
    const agentId = await agentIdentity()
    const version = operatorVersion()
    try {
      const health = await api.agent.health({
        reported_agent_id: agentId,
        kind: 'operator',
        version,
        status: 'healthy',
        uptime_seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
        start_time: startedAt.toISOString(),
        reported_at: new Date().toISOString(),
        api_connected: true,
      }, {signal})
      const local = await resolveLocalCluster(api, health.workspace_id, previousClusterId, signal)
      if (local?.clusterId) await syncOwnApp(api, local.clusterId, signal)
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
      if (error instanceof ApiAuthError) {
        return {kind: 'rejected', message: `The Polycrate API at ${apiUrl} rejected the agent token from Secret ${namespace}/${secretRef.secret_name} (${error.status}${error.forbidden ? ' Forbidden' : ' Unauthorized'}): create a new API token for the cluster's workspace and update the Secret.`}
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
      throw error
    }
  }

  /**
   * A standby sends no heartbeat (one agent, one reporter) and writes nothing: it takes the token from the Secret and
   * the workspace, organization and cluster from the status the leader wrote, so its webhooks can call the API.
   */
  const followLeader = () => {
    const read = readToken()
    if ('problem' in read) return session.disconnected(read.problem)
    session.clientFor(apiUrl, read.token)
    const status = configs.cache.get(key)?.status
    const apiSync = status?.api_sync
    if (!apiSync?.workspace_id || !apiSync.workspace_name) return session.disconnected('the leader has not connected to the Polycrate API yet')
    session.connected({
      workspaceId: apiSync.workspace_id,
      workspaceName: apiSync.workspace_name,
      organizationId: apiSync.organization_id ?? undefined,
      organizationName: apiSync.organization_name ?? undefined,
      clusterId: status?.local_cluster?.cluster_id ?? undefined,
    })
  }

  const reconcile = async ({key: requested, logger, signal}: ReconcileContext) => {
    if (requested !== key) return
    if (!manager.isLeader) return followLeader()
    const object = configs.cache.get(key)
    const read = readToken()
    const outcome: ApiSyncOutcome = 'problem' in read
      ? {kind: 'no-token', message: read.problem}
      : await connect(read.token, object?.status?.local_cluster?.cluster_id, signal)
    // A brown-out is not a lost identity: with a workspace resolved, the sync controllers go on (each of their calls
    // fails and backs off on its own) instead of all stopping and restarting with every failed heartbeat. No token
    // or a rejected one does disconnect. APIConnected says what happened either way.
    const transient = outcome.kind === 'unreachable' || outcome.kind === 'failed'
    if (outcome.kind !== 'connected' && !(transient && session.identity)) session.disconnected(outcome.message)
    if (object) {
      const next = apiSyncStatus(object.status, outcome, new Date().toISOString())
      await writeStatus(manager, object, next, signal)
      await announceTransition(object, next, logger)
    }
    if (outcome.kind === 'connected') {
      logger.debug('heartbeat sent', {workspace: outcome.workspace.name})
      return {requeueAfterMs: config.api_sync.sync_interval_seconds * 1000}
    }
    logger.warn('Polycrate API not connected', {reason: outcome.kind, message: outcome.message})
    // The heartbeat is one request per interval: it goes on at its interval through an outage (at most every
    // 30 s) rather than backing off to a minute, so a brown-out that lets half the requests through is over for
    // the operator within a few intervals.
    return {requeueAfterMs: retrySeconds * 1000}
  }

  /**
   * APIConnected flips become Events on the OperatorConfig (Normal on connect, Warning on loss) and log lines, so
   * `kubectl describe` and the log tell when the connection went and came back.
   */
  const recorder = manager.recorder('api-sync')
  const announceTransition = async (object: OperatorConfigObject, next: ApiSyncStatus, logger: {info(message: string, fields?: object): void}) => {
    const before = apiConnectedOf(object.status?.conditions)
    const after = apiConnectedOf(next.conditions)
    if (!after || (before?.status === after.status && before.reason === after.reason)) return
    if (after.status === 'True') {
      if (before?.status === 'False') logger.info('Polycrate API connection restored', {after: before.reason})
      await recorder.record(object, 'Normal', 'APIConnected', after.message ?? 'Connected to the Polycrate API.')
    } else {
      await recorder.record(object, 'Warning', after.reason ?? 'APINotConnected', after.message ?? 'Not connected to the Polycrate API.')
    }
  }

  const running = builder.complete(reconcile, {maxConcurrentReconciles: 1, needLeaderElection: false})
  running.enqueue(key)
  // Promoted: the first heartbeat goes out at once.
  const unsubscribe = manager.onLeadershipChange(() => running.enqueue(key))
  return {
    async stop(why?: StopReason) {
      const object = configs.cache.get(key)
      unsubscribe()
      await running.stop()
      const message = why?.kind === 'disabled'
        ? 'API sync is disabled (api_sync.enabled is false).'
        : why?.kind === 'restart' ? 'API sync is restarting with new settings.' : why ? `API sync is stopped: ${why.message}.` : 'API sync is stopped.'
      // The identity goes with the settings (another token may mean another workspace) until the restart reconnects.
      session.disconnected(message)
      // The condition must not go on claiming a connection nobody keeps (after a restart the new run reports at
      // once; at shutdown the next leader takes over).
      if (!object || !manager.isLeader || why?.kind === 'restart' || why?.kind === 'shutdown') return
      const reason = why?.kind === 'disabled' ? 'APISyncDisabled' : 'APISyncStopped'
      const conditions = setCondition(object.status?.conditions?.filter((c) => c.type === conditionTypes.apiConnected), {type: conditionTypes.apiConnected, status: 'False', reason, message}, new Date().toISOString())
      const next = {api_sync: object.status?.api_sync, local_cluster: object.status?.local_cluster, agent: object.status?.agent, conditions}
      try {
        await writeStatus(manager, object, next, AbortSignal.timeout(10_000))
        await announceTransition(object, next, manager.logger)
      } catch (error) {
        manager.logger.warn('could not mark APIConnected False after stopping API sync', {error: (error as Error).message})
      }
    },
  }
}

function apiConnectedOf(conditions: readonly Condition[] | undefined): Condition | undefined {
  return conditions?.find((c) => c.type === conditionTypes.apiConnected)
}

async function writeStatus(manager: Manager, object: OperatorConfigObject, status: ApiSyncStatus, signal: AbortSignal): Promise<void> {
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
