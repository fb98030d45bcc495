/**
 * What `uninstall` would remove, read without changing anything: the confirmation on a terminal lists it. The same
 * objects, in the same order, as uninstallOperator (uninstall.ts) deletes: the Deployment scaled to 0 first, the
 * finalizers it releases (counted per kind), the alerting rules and dashboard, the VMServiceScrape, the generated
 * manifests in reverse, the leader Lease, the Secrets and the Namespace install created, and with --crds the CRDs.
 */
import {allCrds} from '../../crds/index.js'
import {GROUP} from '../../crds/define.js'
import {resourcePath, type KubeClient, type KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {finalizers, installedBy, LEADER_LEASE_NAME, OPERATOR_NAME} from '../conventions.js'
import type {LbService} from '../cloud/load-balancer.js'
import {PROMETHEUS_RULE_CRD, VM_RULE_CRD} from './alerts.js'
import {crdExists, listAll, refOf} from './cluster-objects.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import {FINALIZED_SOURCES, operatorFinalizers, ownsLoadBalancerFinalizer} from './uninstall.js'

export interface ListedObject {
  kind: string
  name: string
  namespace?: string
  /** e.g. "only if nothing else lives in it". */
  note?: string
}

export interface UninstallListing {
  namespace: string
  /** The running Deployment uninstall scales to 0 first (absent when there is none, or it is at 0). */
  scale?: ListedObject & {replicas: number}
  /** Objects whose operator finalizers it releases, counted per kind (only kinds with any). */
  release: Array<{kind: string; count: number}>
  /** What exists of what it deletes, in its order. */
  delete: ListedObject[]
  /** With --crds: the polycrate.io CRDs there (every polycrate.io object goes with them). */
  crds: string[]
}

const listed = (object: KubeObject, note?: string): ListedObject => ({
  kind: object.kind ?? '?',
  name: object.metadata?.name ?? '?',
  ...(object.metadata?.namespace ? {namespace: object.metadata.namespace} : {}),
  ...(note ? {note} : {}),
})

/** Reads what uninstall with this plan would remove. */
export async function uninstallListing(client: KubeClient, plan: InstallPlan, options: {crds?: boolean} = {}): Promise<UninstallListing> {
  const {namespace} = plan
  const ours = operatorFinalizers()
  const exists = async (object: KubeObject) => (await client.getOrUndefined<KubeObject>(refOf(object))) !== undefined
  const listing: UninstallListing = {namespace, release: [], delete: [], crds: []}

  const deployment = await client.getOrUndefined<KubeObject & {spec?: {replicas?: number}}>({...resources.deployments, namespace, name: OPERATOR_NAME})
  if (deployment && deployment.spec?.replicas !== 0) listing.scale = {...listed({kind: 'Deployment', metadata: {name: OPERATOR_NAME, namespace}}), replicas: deployment.spec?.replicas ?? 1}

  const holding = (object: KubeObject, names: ReadonlySet<string>) => ((object.metadata?.finalizers as string[] | undefined) ?? []).some((name) => names.has(name))
  const count = (kind: string, objects: readonly KubeObject[] | undefined, names: ReadonlySet<string>) => {
    const held = (objects ?? []).filter((object) => holding(object, names)).length
    if (held > 0) listing.release.push({kind, count: held})
  }
  for (const source of FINALIZED_SOURCES) count(source.kind, await listAll(client, `/apis/${source.group}/${source.version}/${source.plural}`), ours)
  const config = await client.getOrUndefined<KubeObject>({group: GROUP, version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: plan.operatorConfig.metadata!.name}).catch(() => undefined)
  const lbServices = ((await listAll(client, resourcePath(resources.services))) ?? [])
    .filter((service) => ownsLoadBalancerFinalizer(config, service as LbService & KubeObject))
  count('Service', lbServices, new Set([finalizers.loadBalancerCleanup]))
  for (const def of allCrds) count(def.kind, await listAll(client, `/apis/${GROUP}/v1alpha1/${def.plural}`), ours)

  const candidates: Array<[KubeObject, boolean]> = [
    [plan.monitoring.vmRule, await crdExists(client, VM_RULE_CRD)],
    [plan.monitoring.prometheusRule, await crdExists(client, PROMETHEUS_RULE_CRD)],
    [plan.monitoring.dashboard, true],
    [plan.vmServiceScrape, await crdExists(client, VM_SERVICE_SCRAPE_CRD)],
    ...[...plan.workload].reverse().map((object): [KubeObject, boolean] => [object, true]),
    [{apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: LEADER_LEASE_NAME, namespace}}, true],
  ]
  for (const [object, served] of candidates) if (served && (await exists(object))) listing.delete.push(listed(object))
  const installedByUs = async (object: KubeObject) => (await client.getOrUndefined<KubeObject>(refOf(object)))?.metadata?.labels?.[installedBy.label] === installedBy.value
  for (const name of new Set([plan.pullSecretName, plan.tokenSecretName])) {
    const secret = {apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace}}
    if (await installedByUs(secret)) listing.delete.push(listed(secret, 'install created it'))
  }
  if (await installedByUs(plan.namespaceObject)) listing.delete.push(listed(plan.namespaceObject, 'install created it; only if nothing else lives in it'))

  if (options.crds) {
    for (const def of allCrds) {
      const name = `${def.plural}.${GROUP}`
      if (await crdExists(client, name)) listing.crds.push(name)
    }
  }
  return listing
}
