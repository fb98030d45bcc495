/**
 * API sync identity: reads the agent token from the Secret named by `api_sync.credentials_ref`, sends the health
 * report (`kind: operator`) at start and every `sync_interval_seconds` as heartbeat, stores the workspace and
 * organization it resolves in `OperatorConfig.status.api_sync`, registers the local cluster by the operator reference's
 * idempotency rules, and keeps the operator's own K8sApp `polycrate-operator` with its installed version.
 * No token, a rejected token and an unreachable API each get an `APIConnected=False` condition that says what
 * to do; the operator keeps running and retries.
 */
import {operatorConfigCrd} from '../../crds/operatorconfig.js'
import {crdResource} from '../../crds/define.js'
import {resources} from '../../kube/resources.js'
import {credentialsSecret, type OperatorConfig} from '../config/operator-config.js'
import {operatorConfigResource, type OperatorConfigObject} from '../config/operator-config-controller.js'
import type {Feature, StopReason} from '../runtime/feature.js'
import {READ} from '../permissions.js'
import type {Manager} from '../runtime/manager.js'
import type {ApiSession} from './api-session.js'
import {API_SYNC_FEATURE, OPERATOR_CONFIG_NAME} from '../conventions.js'
import {ApiSyncAgent, type SecretObject} from './api-sync-agent.js'


export function createApiSyncFeature(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: API_SYNC_FEATURE,
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
  const secretRef = credentialsSecret(config)
  const builder = manager.controller(API_SYNC_FEATURE)
  const agentKey = `${namespace}/${OPERATOR_CONFIG_NAME}`
  // Only the token Secret, and the OperatorConfig's spec changes: both come to the one key.
  const secrets = builder.watches<SecretObject>({
    resource: {...resources.secrets, namespace},
    kind: 'Secret',
    fieldSelector: `metadata.name=${secretRef.secret_name}`,
  }, () => [agentKey])
  // A standby also follows the status: the identity it serves with is the one the leader resolved and wrote there.
  const configs = builder.watches<OperatorConfigObject>({resource: operatorConfigResource(namespace), kind: operatorConfigCrd.kind}, () => [agentKey], {
    onUpdate: (old, next) => old.metadata?.generation !== next.metadata?.generation || !manager.isLeader,
  })
  const agent = new ApiSyncAgent({
    manager, config, session, token: {namespace, ...secretRef}, secrets: secrets.cache, configs: configs.cache, events: manager.recorder(API_SYNC_FEATURE),
  })
  const running = builder.complete((context) => agent.reconcile(context), {maxConcurrentReconciles: 1, needLeaderElection: false})
  running.enqueue(agent.key)
  // Promoted: the first heartbeat goes out at once.
  const unsubscribe = manager.onLeadershipChange(() => running.enqueue(agent.key))
  return {
    async stop(why?: StopReason) {
      const object = configs.cache.get(agent.key)
      unsubscribe()
      await running.stop()
      await agent.stopped(why, object)
    },
  }
}
