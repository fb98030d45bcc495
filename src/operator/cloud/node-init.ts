/**
 * Node initialization of the cloud controller (pure): what to do with one Node, given its Host CR, the cluster's
 * API id and the agent's PoP, following the conventions of k8s.io/cloud-provider's node controller. No I/O.
 *
 * Decisions, in this order:
 * - Only a node carrying the taint `node.cloudprovider.kubernetes.io/uninitialized` is initialized (as the
 *   upstream cloud node controller does); any other node is left alone (`done`). Nodes are never deleted.
 * - Its Host must be synced first (phase Synced with an API id) → otherwise `wait` (the Host's change requeues).
 * - The cluster must be known in the API (`local_cluster`) → otherwise `wait` with a message naming the setting.
 * - Without a PoP (`OperatorConfig.status.agent.pop_name` empty) → `wait` and requeue: the taint stays. A PoP that
 *   is no valid label value (say "Falkenstein 1") → `wait` (`InvalidPoP`) as well: the apiserver would refuse it.
 * - Otherwise `initialize`: `spec.providerID = polycrate://<clusterID>/<node>` when it is empty; the labels
 *   `topology.kubernetes.io/region` and `failure-domain.beta.kubernetes.io/region` = the PoP; the taint removed
 *   (other taints kept in order). A providerID that is already set and differs is never overwritten (the
 *   apiserver refuses it anyway): the rest of the initialization goes on, with a `ProviderIDConflict` warning.
 */
import {cloudProvider} from '../conventions.js'

export interface Taint {
  key: string
  value?: string
  effect: string
  timeAdded?: string
}

/** Only what node initialization reads of a Node. */
export interface CloudNode {
  metadata: {name: string; labels?: Readonly<Record<string, string>>; resourceVersion?: string}
  spec?: {providerID?: string; taints?: readonly Taint[]}
}

export interface NodeInitInput {
  node: CloudNode
  /** The node's Host CR: whether it is synced to the API (undefined = no Host CR). */
  host?: {synced: boolean; message?: string}
  clusterId?: string
  popName?: string
}

export interface NodePatch {
  /** Set only when the node has none. */
  providerID?: string
  labels: Record<string, string>
  /** The node's taints without the uninitialized one (the whole list: a merge patch replaces it). */
  taints: Taint[]
}

export type NodeInitPlan =
  | {action: 'done'}
  | {action: 'wait'; reason: 'HostNotSynced' | 'NoLocalCluster' | 'NoPoP' | 'InvalidPoP'; message: string; requeue: boolean}
  | {action: 'initialize'; patch: NodePatch; warnings: Array<{reason: 'ProviderIDConflict'; message: string}>}

export function providerIdFor(clusterId: string, nodeName: string): string {
  return `${cloudProvider.providerName}://${clusterId}/${nodeName}`
}

/** A Kubernetes label value (the PoP becomes one). */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value)
}

export function isUninitialized(node: CloudNode): boolean {
  return (node.spec?.taints ?? []).some((taint) => taint.key === cloudProvider.uninitializedTaint)
}

export function planNodeInit(input: NodeInitInput): NodeInitPlan {
  const {node} = input
  const name = node.metadata.name
  if (!isUninitialized(node)) return {action: 'done'}
  if (!input.host?.synced) {
    const why = input.host ? (input.host.message ? `: ${input.host.message}` : ' yet') : ': there is no Host CR for it (is node_discovery enabled and does its label_selector select the node?)'
    return {
      action: 'wait', reason: 'HostNotSynced', requeue: false,
      message: `Node ${name} is initialized once its Host is synced to the Polycrate API; it is not synced${why}. The taint ${cloudProvider.uninitializedTaint} stays.`,
    }
  }
  if (!input.clusterId) {
    return {
      action: 'wait', reason: 'NoLocalCluster', requeue: false,
      message: `Node ${name} needs the cluster's id in the Polycrate API for its providerID, and the cluster is not registered: set local_cluster.enabled (and cluster_name) in the OperatorConfig. The taint ${cloudProvider.uninitializedTaint} stays.`,
    }
  }
  if (!input.popName) {
    return {
      action: 'wait', reason: 'NoPoP', requeue: true,
      message: `Node ${name} is not initialized: the operator's agent has no PoP in the Polycrate API (OperatorConfig status.agent.pop_name is empty), `
        + `and the PoP is the node's ${cloudProvider.regionLabel}. Assign a PoP to the workspace's agent; the node is retried and keeps the taint ${cloudProvider.uninitializedTaint} until then.`,
    }
  }
  if (!isLabelValue(input.popName)) {
    return {
      action: 'wait', reason: 'InvalidPoP', requeue: true,
      message: `Node ${name} is not initialized: the agent's PoP "${input.popName}" is not a valid label value for ${cloudProvider.regionLabel} `
        + `(at most 63 characters: letters, digits, "-", "_", ".", starting and ending with a letter or digit). Rename the PoP in the Polycrate API; the taint stays until then.`,
    }
  }
  const wanted = providerIdFor(input.clusterId, name)
  const current = node.spec?.providerID ?? ''
  const warnings: Array<{reason: 'ProviderIDConflict'; message: string}> = []
  if (current !== '' && current !== wanted) {
    warnings.push({
      reason: 'ProviderIDConflict',
      message: `Node ${name} already has spec.providerID "${current}", set by someone else (kubelet --provider-id or another cloud controller); `
        + `the operator never overwrites it (it would be ${wanted}). Region label and taint removal are applied anyway; run no other cloud controller beside the operator.`,
    })
  }
  return {
    action: 'initialize',
    patch: {
      ...(current === '' ? {providerID: wanted} : {}),
      labels: {[cloudProvider.regionLabel]: input.popName, [cloudProvider.deprecatedRegionLabel]: input.popName},
      taints: (node.spec?.taints ?? []).filter((taint) => taint.key !== cloudProvider.uninitializedTaint).map((taint) => ({...taint})),
    },
    warnings,
  }
}
