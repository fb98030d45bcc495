/**
 * The posture warnings of what runs in the cluster (`status`): the operator's Deployment, NetworkPolicy, Namespace and
 * OperatorConfig in each namespace it may run in, read and judged by posture.ts.
 */
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../conventions.js'
import {installedPostureInput, postureWarnings} from './posture.js'

const networkPolicies = {group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies'}
const operatorConfigs = {group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs'}

/** The warnings for the operator installed in each of `namespaces` (none where no Deployment of it runs). */
export async function installedPostureWarnings(client: KubeClient, namespaces: readonly string[]): Promise<string[]> {
  const warnings: string[] = []
  for (const namespace of new Set(namespaces)) {
    const get = <T extends KubeObject>(ref: {group: string; version: string; plural: string}, name: string) => client.getOrUndefined<T>({...ref, namespace, name})
    const deployment = await get(resources.deployments, OPERATOR_NAME)
    if (!deployment) continue
    const input = installedPostureInput({
      namespace,
      deployment,
      networkPolicy: await get(networkPolicies, OPERATOR_NAME),
      namespaceObject: await client.getOrUndefined<KubeObject>({...resources.namespaces, name: namespace}),
      operatorConfig: await get(operatorConfigs, OPERATOR_CONFIG_NAME),
    })
    if (input) warnings.push(...postureWarnings(input))
  }
  return warnings
}
