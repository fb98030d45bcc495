/**
 * Objects an earlier install made that this one no longer renders: the Role of a feature now disabled, the
 * PodDisruptionBudget of 2 replicas now 1, the metrics reader objects with `metrics.secure: false`, the DNS01
 * webhook's objects once it is off. Found by the labels every manifest carries (`app.kubernetes.io/name` +
 * `app.kubernetes.io/managed-by`), deleted after the new objects are applied (a narrower Role replaces a wider one,
 * never the other way round). `uninstall` deletes every one of them the same way.
 */
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {OPERATOR_NAME} from '../conventions.js'
import {MANAGED_BY} from '../manifests.js'
import {deleteObject, listAll, type ObjectResult} from './cluster-objects.js'

interface Kind {
  kind: string
  apiVersion: string
  /** The list path without a namespace (every namespace for a namespaced kind). */
  path: string
  namespaced: boolean
}

/** The kinds of the manifests that vary with the values (the Deployment, Namespace and OperatorConfig always stay). */
export const PRUNABLE_KINDS: readonly Kind[] = [
  {kind: 'ClusterRole', apiVersion: 'rbac.authorization.k8s.io/v1', path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', namespaced: false},
  {kind: 'ClusterRoleBinding', apiVersion: 'rbac.authorization.k8s.io/v1', path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', namespaced: false},
  {kind: 'Role', apiVersion: 'rbac.authorization.k8s.io/v1', path: '/apis/rbac.authorization.k8s.io/v1/roles', namespaced: true},
  {kind: 'RoleBinding', apiVersion: 'rbac.authorization.k8s.io/v1', path: '/apis/rbac.authorization.k8s.io/v1/rolebindings', namespaced: true},
  // A ServiceAccount's token Secret before it (the token controller deletes the tokens of a ServiceAccount that goes).
  {kind: 'Secret', apiVersion: 'v1', path: '/api/v1/secrets', namespaced: true},
  {kind: 'ServiceAccount', apiVersion: 'v1', path: '/api/v1/serviceaccounts', namespaced: true},
  {kind: 'Service', apiVersion: 'v1', path: '/api/v1/services', namespaced: true},
  {kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', path: '/apis/networking.k8s.io/v1/networkpolicies', namespaced: true},
  {kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', path: '/apis/policy/v1/poddisruptionbudgets', namespaced: true},
  {kind: 'APIService', apiVersion: 'apiregistration.k8s.io/v1', path: '/apis/apiregistration.k8s.io/v1/apiservices', namespaced: false},
  {kind: 'Issuer', apiVersion: 'cert-manager.io/v1', path: '/apis/cert-manager.io/v1/issuers', namespaced: true},
  {kind: 'Certificate', apiVersion: 'cert-manager.io/v1', path: '/apis/cert-manager.io/v1/certificates', namespaced: true},
]

export const MANIFEST_SELECTOR = `app.kubernetes.io/name=${OPERATOR_NAME},app.kubernetes.io/managed-by=${MANAGED_BY}`

type Binding = KubeObject & {subjects?: Array<{kind: string; name: string; namespace?: string}>}

const key = (object: KubeObject) => `${object.kind}/${object.metadata?.namespace ?? ''}/${object.metadata?.name}`

/**
 * What of `found` (objects with the manifests' labels) the install into `namespace` made and `planned` no longer
 * holds (pure). Namespaced objects count when they are in the operator's namespace, or are a Role/RoleBinding pair
 * elsewhere (kube-system) whose binding names the operator's ServiceAccount in it.
 */
export function supersededObjects(found: readonly KubeObject[], planned: readonly KubeObject[], namespace: string): KubeObject[] {
  const keep = new Set(planned.map(key))
  const ourBindings = new Set(found
    .filter((object) => object.kind === 'RoleBinding' && (object as Binding).subjects?.some((subject) => subject.kind === 'ServiceAccount' && subject.name === OPERATOR_NAME && subject.namespace === namespace))
    .map((binding) => `${binding.metadata?.namespace}/${binding.metadata?.name}`))
  const ours = (object: KubeObject) => {
    const where = object.metadata?.namespace
    if (where === undefined || where === namespace) return true
    return (object.kind === 'Role' || object.kind === 'RoleBinding') && ourBindings.has(`${where}/${object.metadata?.name}`)
  }
  return found.filter((object) => ours(object) && !keep.has(key(object)))
}

/** Every object of PRUNABLE_KINDS with the manifests' labels (kinds the cluster does not serve are skipped). */
export async function findManifestObjects(client: KubeClient): Promise<KubeObject[]> {
  const found: KubeObject[] = []
  for (const kind of PRUNABLE_KINDS) {
    const items = await listAll(client, kind.path, MANIFEST_SELECTOR)
    for (const item of items ?? []) found.push({...item, apiVersion: kind.apiVersion, kind: kind.kind})
  }
  return found
}

/** Deletes what an earlier install made and `planned` no longer holds; reports each `deleted` with why. */
export async function deleteSuperseded(client: KubeClient, namespace: string, planned: readonly KubeObject[], report: (result: ObjectResult) => void, note = 'superseded: these values no longer render it'): Promise<void> {
  for (const object of supersededObjects(await findManifestObjects(client), planned, namespace)) {
    const result = await deleteObject(client, object, note)
    if (result.outcome === 'deleted') report(result)
  }
}
