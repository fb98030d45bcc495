/**
 * The end of a case: its namespace emptied while its operator still runs, so that the next case's operator, which
 * discovers cluster-wide, finds nothing of it.
 *
 * Waiting for the namespace to be gone took about 10 s a case on 2 cores (the namespace controller's first pass over
 * every resource type alone took 5 s, its second came after its own requeue delay), 40 % of a perturbed case. What the
 * next operator can see of a case's namespace are the objects of the kinds the operators watch; so the campaign
 * deletes the namespace (the namespace controller removes the rest in the background, and nothing can be created in
 * it any more), deletes those objects itself and waits until none is left (finalizers released by the operator). An
 * operator that listed or watched a namespaced kind this list does not know makes the case wait for the namespace
 * to be gone, as before.
 */
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {KubeApiError} from '../../../src/kube/client.js'
import {allCrds} from '../../../src/crds/index.js'
import {crdResource} from '../../../src/crds/define.js'
import {eventually} from '../helpers.js'

const kind = (group: string, version: string, plural: string): ResourceRef => ({group, version, plural})

/** The namespaced kinds a case's namespace holds that operators watch: every workload's sources and the polycrate.io CRs. */
export const CASE_KINDS: ResourceRef[] = [
  kind('networking.k8s.io', 'v1', 'ingresses'),
  kind('', 'v1', 'pods'),
  kind('', 'v1', 'secrets'),
  kind('', 'v1', 'services'),
  kind('velero.io', 'v1', 'backups'),
  kind('velero.io', 'v1', 'schedules'),
  kind('postgresql.cnpg.io', 'v1', 'backups'),
  kind('postgresql.cnpg.io', 'v1', 'scheduledbackups'),
  kind('cert-manager.io', 'v1', 'certificates'),
  kind('gateway.networking.k8s.io', 'v1', 'httproutes'),
  kind('gateway.networking.k8s.io', 'v1', 'gateways'),
  // Every namespaced polycrate.io kind but the OperatorConfig (the operator's own, in its own namespace).
  ...allCrds.filter((crd) => crd.scope === 'Namespaced' && crd.kind !== 'OperatorConfig').map(crdResource),
]

/**
 * Kinds an operator lists or watches of which a case's namespace holds nothing it acts on: cluster-scoped ones
 * (a workload's `cleanup` removes its nodes and volumes) and the operator's own objects in its own namespace.
 */
const ELSEWHERE = new Set(['core/nodes', 'core/persistentvolumes', 'core/namespaces', 'apiextensions.k8s.io/customresourcedefinitions',
  'polycrate.io/operatorconfigs', 'coordination.k8s.io/leases', 'core/events', 'events.k8s.io/events',
  ...allCrds.filter((crd) => crd.scope === 'Cluster').map((crd) => `polycrate.io/${crd.plural}`)])

/** How the proxy names a kind (`group/plural`, `core/plural` for the core group). */
export const kindName = (ref: ResourceRef): string => `${ref.group || 'core'}/${ref.plural}`

/**
 * The kinds among `watched` (as the kube proxy names them; subresources ignored) that `CASE_KINDS` does not cover and
 * that are not known to live elsewhere (pure). With any, emptying the case's namespace is not enough.
 */
export function uncoveredKinds(watched: Iterable<string>): string[] {
  const covered = new Set(CASE_KINDS.map(kindName))
  const kinds = new Set([...watched].filter(Boolean).map((resource) => resource.split('/').slice(0, 2).join('/')))
  return [...kinds].filter((resource) => !covered.has(resource) && !ELSEWHERE.has(resource)).sort()
}

/** The objects of a kind in a namespace; undefined when the list failed (tried again on the next pass). */
async function objectsOf(client: KubeClient, ref: ResourceRef, namespace: string): Promise<KubeObject[] | undefined> {
  const base = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`
  try {
    return (await client.request<{items?: KubeObject[]}>({path: `${base}/namespaces/${namespace}/${ref.plural}`})).items ?? []
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return [] // a kind this control plane does not serve
    return undefined
  }
}

/**
 * Deletes the case's namespace and waits (at most until `deadline`) until nothing of it is left that an operator
 * watches: the objects of `CASE_KINDS` in it are deleted and must be gone; with `uncovered` kinds, the namespace
 * itself must be gone. Returns what is left at the deadline (`kind namespace/name`), empty when done.
 */
export async function emptyCaseNamespace(client: KubeClient, namespace: string, uncovered: string[], deadline: number): Promise<string[]> {
  const namespaces: ResourceRef = {group: '', version: 'v1', plural: 'namespaces', name: namespace}
  await client.delete(namespaces).catch(() => {})
  const until = (check: () => Promise<boolean>) => eventually(async () => await check() || undefined, Math.max(0, deadline - Date.now()), 'an empty case namespace').then(() => true, () => false)
  if (uncovered.length) return await until(async () => !await client.getOrUndefined(namespaces)) ? [] : [`namespace ${namespace}`]
  const deleted = new Set<string>()
  let left: string[] = []
  await until(async () => {
    left = []
    for (const ref of CASE_KINDS) {
      const items = await objectsOf(client, ref, namespace)
      if (!items) left.push(`${kindName(ref)} ${namespace}/* (the list failed)`)
      for (const item of items ?? []) {
        const name = item.metadata!.name!
        left.push(`${kindName(ref)} ${namespace}/${name}`)
        const id = `${kindName(ref)}/${item.metadata?.uid}`
        if (item.metadata?.deletionTimestamp || deleted.has(id)) continue
        try {
          await client.delete({...ref, namespace, name})
          deleted.add(id)
        } catch (error) {
          if (error instanceof KubeApiError && error.status === 404) deleted.add(id)
          // anything else (a 429, a conflict): tried again on the next pass
        }
      }
    }
    return left.length === 0
  })
  return left
}
