/**
 * `polycrate operator uninstall`: the operator block's uninstall action. First the operator stops (Deployment scaled
 * to 0, its Pods gone) so nothing adds a finalizer again; then every finalizer it put on users' objects is released
 * (so no later delete, and no namespace deletion, waits for an operator that is gone); then what install made is
 * deleted in reverse order. CRs and CRDs stay unless `crds` is set: then the finalizers on the polycrate.io CRs are
 * released too (nothing is deleted in the Polycrate API: a CRD going away is not a user deleting objects) and the
 * CRDs are deleted.
 */
import {allCrds} from '../../crds/index.js'
import {GROUP} from '../../crds/define.js'
import {resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {deprecatedFinalizers, finalizers, installedBy, LEADER_LEASE_NAME, OPERATOR_NAME} from '../conventions.js'
import {serviceManagement, type LbService} from '../cloud/load-balancer.js'
import {crdExists, deleteObject, listAll, releaseFinalizers, resultOf, type ObjectResult, type ObjectsReport, collector} from './cluster-objects.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import {deleteMonitoringObjects} from './monitoring-objects.js'

export interface UninstallOperatorOptions {
  /** What install made (from the same values): names of the namespace, Secrets, objects. */
  plan: InstallPlan
  /** Also release the finalizers on polycrate.io CRs and delete the CRDs (and with them every CR). */
  crds?: boolean
  /** How long to wait for the operator's Pods to go, and for the CRDs to go (each); 5 minutes by default. */
  timeoutMs?: number
  onResult?: (result: ObjectResult) => void
  onWarning?: (message: string) => void
  /** Called before each step that may wait (a spinner's text). */
  onStep?: (message: string) => void
}

export type UninstallReport = ObjectsReport

/** Every finalizer name the operator writes (and its earlier spellings) except the upstream load-balancer one. */
export function operatorFinalizers(): Set<string> {
  return new Set([...Object.values(finalizers), ...Object.values(deprecatedFinalizers)].filter((name) => name !== finalizers.loadBalancerCleanup))
}

/** The users' objects the operator puts finalizers on (discovery sources with a cleanup finalizer). */
export const FINALIZED_SOURCES: ReadonlyArray<{kind: string; group: string; version: string; plural: string}> = [
  {kind: 'Ingress', ...resources.ingresses},
  {kind: 'HTTPRoute', ...resources.httpRoutes},
]

interface OperatorConfigObject extends KubeObject {
  spec?: {cloud_controller?: {enabled?: boolean; load_balancer?: {enabled?: boolean; service_scope?: 'all' | 'opt-in'}}}
}

/**
 * Whether the operator's cloud controller owns the `service.kubernetes.io/load-balancer-cleanup` finalizer of this
 * Service (pure). That finalizer is the upstream cloud-provider's: only where the OperatorConfig made the operator
 * the cloud controller, and only on Services it manages (no loadBalancerClass of another controller, not opted out).
 */
export function ownsLoadBalancerFinalizer(config: OperatorConfigObject | undefined, service: LbService & KubeObject): boolean {
  const cloud = config?.spec?.cloud_controller
  if (!cloud?.enabled || cloud.load_balancer?.enabled === false) return false
  if (service.spec?.loadBalancerClass) return false
  // A Service no longer of type LoadBalancer keeps the finalizer until the controller has deleted its load balancer.
  if (service.spec?.type !== 'LoadBalancer') return true
  return serviceManagement(service, cloud.load_balancer?.service_scope ?? 'all').managed
}

export async function uninstallOperator(client: KubeClient, options: UninstallOperatorOptions): Promise<UninstallReport> {
  const {plan} = options
  const {namespace} = plan
  const timeoutMs = options.timeoutMs ?? 300_000
  const {collected, report, warn} = collector({namespace, onResult: options.onResult, onWarning: options.onWarning})
  const ours = operatorFinalizers()
  const configRef = {group: GROUP, version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: plan.operatorConfig.metadata!.name}
  const config = await client.getOrUndefined<OperatorConfigObject>(configRef).catch(() => undefined)

  // 1. Stop the operator, so that no replica adds a finalizer again.
  options.onStep?.('stopping the operator…')
  const deploymentRef = {...resources.deployments, namespace, name: OPERATOR_NAME}
  const deployment = await client.getOrUndefined<KubeObject & {spec?: {replicas?: number}}>(deploymentRef)
  if (deployment && deployment.spec?.replicas !== 0) {
    await client.mergePatch(deploymentRef, {spec: {replicas: 0}})
    report(resultOf({kind: 'Deployment', metadata: {name: OPERATOR_NAME, namespace}}, 'scaled', 'to 0 replicas'))
  }
  await waitUntil(async () => (await operatorPods(client, namespace)).length === 0, timeoutMs,
    () => `the operator's Pods in ${namespace} are still there after ${Math.round(timeoutMs / 1000)}s: check \`kubectl -n ${namespace} get pods -l app.kubernetes.io/name=${OPERATOR_NAME}\`, then run uninstall again.`)

  // 2. Release its finalizers on users' objects in every namespace.
  options.onStep?.('releasing finalizers…')
  for (const source of FINALIZED_SOURCES) {
    const items = await listAll(client, `/apis/${source.group}/${source.version}/${source.plural}`)
    for (const object of items ?? []) {
      await release(client, {...source, namespace: object.metadata?.namespace, name: object.metadata?.name}, {...object, kind: source.kind}, ours, report)
    }
  }
  const lbFinalizer = new Set<string>([finalizers.loadBalancerCleanup])
  const others: string[] = []
  for (const service of await listAll(client, resourcePath(resources.services)) ?? []) {
    if (!(service.metadata?.finalizers as string[] | undefined)?.includes(finalizers.loadBalancerCleanup)) continue
    if (!ownsLoadBalancerFinalizer(config, service as LbService & KubeObject)) {
      others.push(`${service.metadata?.namespace}/${service.metadata?.name}`)
      continue
    }
    const ref = {...resources.services, namespace: service.metadata?.namespace, name: service.metadata?.name}
    await release(client, ref, {...service, kind: 'Service'}, lbFinalizer, report, ' (their load balancers stay in the Polycrate API)')
  }
  if (others.length > 0 && config?.spec?.cloud_controller?.enabled) {
    warn(`Left ${finalizers.loadBalancerCleanup} on ${others.length} Service(s) the operator does not manage (another load balancer controller's): ${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}.`)
  }

  // 3. Delete what install made, in reverse order.
  options.onStep?.('deleting…')
  await deleteMonitoringObjects(client, plan.monitoring, report)
  if (await crdExists(client, VM_SERVICE_SCRAPE_CRD)) reportDeleted(report, await deleteObject(client, plan.vmServiceScrape))
  for (const object of [...plan.workload].reverse()) reportDeleted(report, await deleteObject(client, object))
  reportDeleted(report, await deleteObject(client, {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: LEADER_LEASE_NAME, namespace}}))
  for (const name of new Set([plan.pullSecretName, plan.tokenSecretName])) {
    await deleteIfInstalled(client, {apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace}}, report)
  }

  // 4. The CRs stay (and their API objects), but without the operator's sync finalizers: nobody would release them,
  // so deleting one, or its namespace, would wait forever. Released, never deleted in the Polycrate API; a reinstalled
  // operator puts them back. With --crds the CRDs go too.
  options.onStep?.('releasing the finalizers of polycrate.io objects…')
  for (const def of allCrds) {
    const items = await listAll(client, `/apis/${GROUP}/v1alpha1/${def.plural}`)
    for (const object of items ?? []) {
      const ref = {group: GROUP, version: 'v1alpha1', plural: def.plural, namespace: object.metadata?.namespace, name: object.metadata?.name}
      await release(client, ref, {...object, kind: def.kind}, ours, report)
    }
  }
  if (options.crds) {
    const crdNames = allCrds.map((def) => `${def.plural}.${GROUP}`)
    options.onStep?.('deleting the CRDs…')
    for (const name of crdNames) reportDeleted(report, await deleteObject(client, {apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: {name}}))
    for (const name of crdNames) {
      await waitUntil(async () => !(await crdExists(client, name)), timeoutMs,
        () => `CustomResourceDefinition ${name} is still there after ${Math.round(timeoutMs / 1000)}s: check \`kubectl get crd ${name} -o yaml\` (status.conditions) and run uninstall --crds again.`)
    }
  }

  // 5. The namespace: only if install created it and nothing else lives there.
  const namespaceObject = await client.getOrUndefined<KubeObject>({...resources.namespaces, name: namespace})
  if (namespaceObject && !namespaceObject.metadata?.deletionTimestamp) {
    if (namespaceObject.metadata?.labels?.[installedBy.label] !== installedBy.value) {
      report(resultOf(namespaceObject, 'kept', 'not created by install'))
    } else {
      const leftovers = await namespaceLeftovers(client, namespace)
      if (leftovers.length > 0) {
        report(resultOf({kind: 'Namespace', metadata: {name: namespace}}, 'kept',
          `it holds ${leftovers.length} other object${leftovers.length > 1 ? 's' : ''}: ${leftovers.slice(0, 5).join(', ')}${leftovers.length > 5 ? ', …' : ''}`))
      } else {
        reportDeleted(report, await deleteObject(client, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace}}))
      }
    }
  }
  return collected
}

function reportDeleted(report: (result: ObjectResult) => void, result: ObjectResult): void {
  if (result.outcome !== 'absent') report(result)
}

async function release(
  client: KubeClient,
  ref: ResourceRef,
  object: KubeObject,
  names: ReadonlySet<string>,
  report: (result: ObjectResult) => void,
  note = '',
): Promise<void> {
  const removed = await releaseFinalizers(client, ref, object, names)
  if (removed.length > 0) report(resultOf(object, 'released', `${removed.join(', ')}${note}`))
}

/** Deletes a Secret install made (our label); one a person made stays. */
async function deleteIfInstalled(client: KubeClient, secret: KubeObject, report: (result: ObjectResult) => void): Promise<void> {
  const ref = {...resources.secrets, namespace: secret.metadata?.namespace, name: secret.metadata?.name}
  const existing = await client.getOrUndefined<KubeObject>(ref)
  if (!existing) return
  if (existing.metadata?.labels?.[installedBy.label] === installedBy.value) reportDeleted(report, await deleteObject(client, secret))
  else report(resultOf(secret, 'kept', 'not created by install'))
}

async function operatorPods(client: KubeClient, namespace: string): Promise<KubeObject[]> {
  const pods = await client.request<{items: KubeObject[]}>({
    path: resourcePath({...resources.pods, namespace}),
    query: {labelSelector: `app.kubernetes.io/name=${OPERATOR_NAME}`},
  })
  return pods.items
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, message: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(message())
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

interface ApiResourceList {
  groupVersion?: string
  resources?: Array<{name: string; kind: string; namespaced: boolean; verbs?: string[]}>
}

/** Kinds that never count as someone's: events, and what controllers derive from other objects. */
const DERIVED = new Set(['events', 'events.k8s.io/events', 'endpoints', 'discovery.k8s.io/endpointslices'])

/**
 * What else lives in the namespace (`Kind/name`), through API discovery over every namespaced kind: everything but
 * events, objects owned by another (their owner counts; the operator's ReplicaSets and Pods), objects being deleted,
 * and what Kubernetes puts in every namespace (ServiceAccount default, ConfigMap kube-root-ca.crt).
 */
export async function namespaceLeftovers(client: KubeClient, namespace: string): Promise<string[]> {
  const lists: ApiResourceList[] = [await client.request<ApiResourceList>({path: '/api/v1'})]
  const groups = await client.request<{groups: Array<{preferredVersion: {groupVersion: string}}>}>({path: '/apis'})
  for (const group of groups.groups) {
    try {
      lists.push(await client.request<ApiResourceList>({path: `/apis/${group.preferredVersion.groupVersion}`}))
    } catch {
      // An aggregated API that does not answer (its server down) cannot hold anything we could delete anyway.
    }
  }
  const leftovers: string[] = []
  for (const list of lists) {
    const groupVersion = list.groupVersion ?? 'v1'
    const group = groupVersion.includes('/') ? groupVersion.split('/')[0] : ''
    for (const resource of list.resources ?? []) {
      if (!resource.namespaced || resource.name.includes('/') || !resource.verbs?.includes('list')) continue
      if (DERIVED.has(group ? `${group}/${resource.name}` : resource.name)) continue
      const base = group ? `/apis/${groupVersion}` : '/api/v1'
      let items: KubeObject[]
      try {
        items = (await client.request<{items: KubeObject[]}>({path: `${base}/namespaces/${encodeURIComponent(namespace)}/${resource.name}`})).items ?? []
      } catch {
        continue
      }
      for (const item of items) {
        const metadata = item.metadata ?? {}
        if ((metadata.ownerReferences as unknown[] | undefined)?.length) continue
        if (resource.kind === 'ServiceAccount' && metadata.name === 'default') continue
        if (resource.kind === 'ConfigMap' && metadata.name === 'kube-root-ca.crt') continue
        if (metadata.deletionTimestamp) continue
        leftovers.push(`${resource.kind}/${metadata.name}`)
      }
    }
  }
  return leftovers
}
