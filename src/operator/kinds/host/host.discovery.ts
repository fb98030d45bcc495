/**
 * Host discovery (`HostDiscoveryReconciler`): every Node → a Host CR of the
 * node's name in the operator's namespace, as a declaration on the generic discovery feature. The mapping is the
 * pure `hostForNode` (host.mapping.ts). `node_discovery.label_selector` selects the nodes; `status.node_ready` is the
 * node's Ready condition. Nodes carry no finalizer (the operator must never hold up a node's deletion): a node
 * deleted while the operator runs takes its Host at once, one deleted while it was down is an orphan for the stale
 * sweep (`cleanup.*`); the Host's owner reference to its Node also lets the garbage collector remove it.
 */
import {hostCrd, type HostSpec} from '../../../crds/host.js'
import type {KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import {finalizers} from '../../conventions.js'
import {contentChanged} from '../../runtime/predicates.js'
import {DEFAULT_SWEEP_MINUTES, defineDiscovery} from '../../discovery/engine.js'
import {hostForNode, type NodeLike} from './host.mapping.js'
import {desiredOfOneSource, type DesiredState} from '../../discovery/plan.js'

/** Only what host discovery reads: a node's heartbeats do not reach the cache, so they cause no reconcile. */
export function slimNode(node: KubeObject): KubeObject {
  const n = node as KubeObject & NodeLike & {metadata: {deletionTimestamp?: string; creationTimestamp?: string}}
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.metadata?.name,
      uid: n.metadata?.uid,
      resourceVersion: n.metadata?.resourceVersion,
      labels: n.metadata?.labels,
      ...(n.metadata?.deletionTimestamp ? {deletionTimestamp: n.metadata.deletionTimestamp} : {}),
    },
    spec: {providerID: n.spec?.providerID},
    status: {
      addresses: n.status?.addresses,
      capacity: {cpu: n.status?.capacity?.cpu, memory: n.status?.capacity?.memory},
      nodeInfo: {architecture: n.status?.nodeInfo?.architecture, osImage: n.status?.nodeInfo?.osImage},
      conditions: n.status?.conditions?.filter((c) => c.type === 'Ready').map(({type, status}) => ({type, status})),
    },
  } as KubeObject
}

/** The Host CR of one node (pure). */
export function desiredHost(nodeName: string, node: KubeObject | undefined, namespace: string): DesiredState {
  return desiredOfOneSource({kind: 'Node', apiVersion: 'v1', name: nodeName, object: node}, namespace, (object) => {
    const {host, problems} = hostForNode(object as NodeLike)
    return {cr: host, problems}
  })
}

export const HostDiscoveryReconciler = defineDiscovery<{labelSelector: string}>({
  name: 'host-discovery',
  target: hostCrd,
  targetNamespace: (namespace) => namespace,
  enabled: (config) => config.node_discovery.enabled,
  settings: (config) => ({labelSelector: config.node_discovery.label_selector}),
  staleCleanupMinutes: () => DEFAULT_SWEEP_MINUTES,
  sources: (settings) => [{
    id: 'node',
    kind: 'Node',
    apiVersion: 'v1',
    request: {resource: resources.nodes, kind: 'Node', labelSelector: settings.labelSelector || undefined, transform: slimNode},
    groupsOf: (node) => [node.metadata?.name ?? ''],
    onUpdate: contentChanged,
  }],
  targetGroup: (host) => (host.spec as HostSpec | undefined)?.source?.node_name ?? host.metadata.name,
  targetSource: (host) => ({kind: 'Node', apiVersion: 'v1', name: (host.spec as HostSpec | undefined)?.source?.node_name ?? host.metadata.name}),
  desired: (nodeName, caches, _settings, {namespace}) => desiredHost(nodeName, caches.get('node', nodeName), namespace),
  syncFinalizer: finalizers.hostSync,
})
