/**
 * The operator's id as an agent of the API: `<agent.agent_id_prefix>-operator-<stable id>`. Stable across restarts,
 * so that a restarted operator reports as the same agent: the stable id is the uid of kube-system (what most tools
 * use as the cluster's identity); a fallback (the OperatorConfig's uid) when that cannot be read.
 */
import type {KubeClient} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'

export async function operatorAgentId(client: Pick<KubeClient, 'getOrUndefined'>, prefix: string, fallback: () => string | Promise<string>): Promise<string> {
  const kubeSystem = await client.getOrUndefined({...resources.namespaces, name: 'kube-system'}).catch(() => undefined)
  return `${prefix}-operator-${kubeSystem?.metadata?.uid ?? await fallback()}`
}
