/**
 * The CRD gate: watches CustomResourceDefinitions and says which are Established, so controllers of optional
 * sources (Gateway API, cert-manager, Velero, CNPG) start when their CRDs appear and stop when they go.
 * Only names and conditions are kept: the schemas of some upstream CRDs are hundreds of kilobytes.
 */
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import type {Informer} from './informer.js'
import type {Manager} from './manager.js'

interface CrdSummary extends KubeObject {
  status?: {conditions?: Array<{type: string; status: string}>}
}

export class CrdGate {
  readonly informer: Informer<CrdSummary>
  private readonly listeners = new Set<() => void>()
  private established = new Set<string>()

  constructor(manager: Manager) {
    this.informer = manager.informer<CrdSummary>({
      resource: resources.customResourceDefinitions,
      kind: 'CustomResourceDefinition',
      transform: (crd) => ({
        apiVersion: crd.apiVersion,
        kind: crd.kind,
        metadata: {name: crd.metadata?.name, resourceVersion: crd.metadata?.resourceVersion},
        status: {conditions: crd.status?.conditions?.map(({type, status}) => ({type, status}))},
      }),
    })
    const update = () => this.update()
    this.informer.addHandler({onAdd: update, onUpdate: update, onDelete: update})
  }

  /** True when the CRD (e.g. `httproutes.gateway.networking.k8s.io`) exists and is Established. */
  isEstablished(name: string): boolean {
    return this.established.has(name)
  }

  /** Called whenever the set of Established CRDs changes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private update(): void {
    const next = new Set(
      this.informer.cache
        .list((crd) => crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false)
        .map((crd) => crd.metadata!.name!),
    )
    const changed = next.size !== this.established.size || [...next].some((name) => !this.established.has(name))
    this.established = next
    if (changed) for (const listener of this.listeners) listener()
  }
}

/**
 * Whether the CRD `name` (e.g. `endpoints.polycrate.io`) is being deleted (it has a deletionTimestamp) or is gone:
 * a CR deleted then goes with its CRD — not a user deleting it — and a sync finalizer is released without deleting
 * anything in the API. Read live, not from the gate's cache: the CR's
 * deletion event may arrive before the CRD's update, and the mistake would be irreversible. CR deletions are rare,
 * one GET each is cheap.
 */
export async function crdGoing(client: KubeClient, name: string): Promise<boolean> {
  const crd = await client.getOrUndefined<KubeObject>({...resources.customResourceDefinitions, name})
  return !crd || Boolean(crd.metadata?.deletionTimestamp)
}
