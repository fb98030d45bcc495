/**
 * Objects whose deletion waits on a finalizer of the operator: users' Ingresses and HTTPRoutes (discovery), Services
 * (the load balancer's cleanup finalizer, where the operator is the cloud controller) and polycrate.io CRs (API
 * sync). While the operator runs it releases them; while it does not (stopped, scaled to 0, a feature switched off
 * in an old version), `polycrate operator status` lists them and says how to let them go.
 */
import {allCrds} from '../crds/index.js'
import {crdResource} from '../crds/define.js'
import {KubeApiError, resourcePath, type KubeObject} from '../kube/client.js'
import {listAllPages, mapBounded, type ListingClient} from '../kube/resources-inventory.js'
import {resources} from '../kube/resources.js'
import {finalizers} from './conventions.js'
import {FINALIZED_SOURCES, operatorFinalizers} from './install/uninstall.js'

export interface HeldObject {
  kind: string
  namespace?: string
  name: string
  /** The operator's finalizers still on it. */
  finalizers: string[]
  /** When its deletion was asked for (metadata.deletionTimestamp). */
  deletingSince: string
}

/** The operator's finalizers on an object being deleted (pure); empty when it is not being deleted. */
export function heldBy(object: KubeObject, ours: ReadonlySet<string>): string[] {
  if (!object.metadata?.deletionTimestamp) return []
  const list = object.metadata.finalizers
  return Array.isArray(list) ? (list as string[]).filter((name) => ours.has(name)) : []
}

/** Every object (in `namespace`, or all) whose deletion waits on a finalizer of the operator. */
export async function heldObjects(client: ListingClient, options: {namespace?: string} = {}): Promise<HeldObject[]> {
  const ours = new Set([...operatorFinalizers(), finalizers.loadBalancerCleanup])
  const kinds = [
    ...FINALIZED_SOURCES,
    {kind: 'Service', ...resources.services},
    ...allCrds.map((def) => ({kind: def.kind, ...crdResource(def)})),
  ]
  // Listed a few kinds at a time (a status from a laptop over a slow link waits for the slowest list, not the sum).
  const listed = await mapBounded(kinds, 6, async ({kind, ...resource}) => {
    try {
      return {kind, items: await listAllPages<KubeObject>(client, resourcePath({...resource, namespace: options.namespace}))}
    } catch (error) {
      // A kind whose CRD is not installed (HTTPRoute without the Gateway API), or one this identity may not list.
      if (error instanceof KubeApiError && (error.status === 404 || error.status === 403)) return {kind, items: []}
      throw error
    }
  })
  const held: HeldObject[] = []
  for (const outcome of listed) {
    if (!outcome.ok) throw outcome.error
    for (const item of outcome.value.items) {
      const names = heldBy(item, ours)
      if (names.length === 0) continue
      held.push({kind: outcome.value.kind, namespace: item.metadata?.namespace, name: item.metadata?.name ?? '', finalizers: names, deletingSince: String(item.metadata?.deletionTimestamp)})
    }
  }
  return held
}
