/**
 * Cloud node controller (`CloudNodeController`, `cloud_controller.enabled`): initializes nodes the kubelet
 * registered with `--cloud-provider=external` once their Host is synced (the plan is the pure `planNodeInit`).
 * Watches Nodes (slimmed to what it reads), the Host CRs in the operator's namespace (a Host becoming Synced
 * requeues its node) and the OperatorConfig (the agent's PoP in `status.agent.pop_name`). One merge patch per node
 * with its resourceVersion (a concurrent change is a 409 and a requeue, so the taint list is never clobbered);
 * the Host's status then shows `cloud_initialized` and `pop_name`. Nodes are never deleted.
 */
import {API_VERSION, crdResource, type CustomObject} from '../../crds/define.js'
import {hostCrd, type HostSpec, type HostStatus} from '../../crds/host.js'
import {operatorConfigCrd} from '../../crds/operatorconfig.js'
import type {KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import type {ApiSession} from '../agent/api-session.js'
import {operatorConfigResource, type OperatorConfigObject} from '../config/operator-config-controller.js'
import {OPERATOR_CONFIG_NAME} from '../conventions.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {READ} from '../permissions.js'
import {contentChanged} from '../runtime/predicates.js'
import {planNodeInit, type CloudNode} from './node-init.js'

type HostObject = CustomObject<HostSpec, HostStatus>

/** How often a node waiting for a PoP is retried (besides every OperatorConfig status change). */
export const NO_POP_REQUEUE_MS = 30_000

/** Only what node initialization reads: heartbeats and status churn cause no reconcile. */
export function slimCloudNode(node: KubeObject): KubeObject {
  const n = node as KubeObject & CloudNode
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {name: n.metadata?.name, uid: n.metadata?.uid, resourceVersion: n.metadata?.resourceVersion, labels: n.metadata?.labels},
    spec: {providerID: n.spec?.providerID, taints: n.spec?.taints},
  } as KubeObject
}

export function CloudNodeController(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'cloud-node',
    enabled: (config) => config.cloud_controller.enabled,
    permissions: [
      // providerID, region labels and the uninitialized taint; never create or delete.
      {group: '', resource: 'nodes', verbs: [...READ, 'patch']},
      {group: 'polycrate.io', resource: hostCrd.plural, verbs: READ},
      {group: 'polycrate.io', resource: `${hostCrd.plural}/status`, verbs: ['patch']},
    ],
    settings: () => ({}),
    start(manager) {
      const namespace = manager.namespace
      const builder = manager.controller('cloud-node')
      const nodes = builder.for({resource: resources.nodes, kind: 'Node', transform: slimCloudNode}, {onUpdate: contentChanged})
      const hostResource = {...crdResource(hostCrd), namespace}
      const hosts = builder.watches<HostObject>({resource: hostResource, kind: hostCrd.kind}, (host) => [host.spec?.source?.node_name ?? host.metadata.name])
      const allNodes = () => nodes.cache.list().map((node) => node.metadata?.name ?? '')
      const configs = builder.watches<OperatorConfigObject>({resource: operatorConfigResource(namespace), kind: operatorConfigCrd.kind}, allNodes, {
        onUpdate: (old, next) => old.status?.agent?.pop_name !== next.status?.agent?.pop_name,
      })

      const hostOf = (nodeName: string): HostObject | undefined =>
        hosts.cache.get(`${namespace}/${nodeName}`) ?? hosts.cache.list().find((host) => host.spec?.source?.node_name === nodeName)

      const running = builder.complete(async ({key, logger, signal}) => {
        const node = nodes.cache.get(key) as (KubeObject & CloudNode) | undefined
        if (!node) return
        const host = hostOf(node.metadata.name)
        const popName = configs.cache.get(`${namespace}/${OPERATOR_CONFIG_NAME}`)?.status?.agent?.pop_name
        const plan = planNodeInit({
          node,
          host: host && {synced: host.status?.phase === 'Synced' && Boolean(host.status.api_id), message: host.status?.message ?? undefined},
          clusterId: session.identity?.clusterId,
          popName,
        })
        if (plan.action === 'done') return
        if (plan.action === 'wait') {
          logger.info('node not initialized yet', {node: node.metadata.name, reason: plan.reason})
          await running.recorder.record(node, plan.reason === 'HostNotSynced' ? 'Normal' : 'Warning', plan.reason, plan.message)
          return plan.requeue ? {requeueAfterMs: NO_POP_REQUEUE_MS} : undefined
        }
        for (const warning of plan.warnings) await running.recorder.record(node, 'Warning', warning.reason, warning.message)
        const {providerID, labels, taints} = plan.patch
        await manager.client.mergePatch({...resources.nodes, name: node.metadata.name}, {
          metadata: {labels, resourceVersion: node.metadata.resourceVersion},
          spec: {...(providerID ? {providerID} : {}), taints},
        }, {signal})
        logger.info('node initialized', {node: node.metadata.name, providerID, region: popName})
        await running.recorder.record(node, 'Normal', 'NodeInitialized',
          `Node ${node.metadata.name} initialized by the Polycrate cloud controller: ${providerID ? `providerID ${providerID}, ` : ''}region ${popName}, taint removed.`)
        if (host) {
          await manager.client.mergePatch({...hostResource, name: host.metadata.name, subresource: 'status'},
            {apiVersion: API_VERSION, kind: hostCrd.kind, status: {cloud_initialized: true, pop_name: popName}}, {signal})
        }
      })
      return session.resyncing(running)
    },
  }
}
