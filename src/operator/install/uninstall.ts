/**
 * `polycrate operator uninstall`: the operator block's uninstall action. First it makes sure there is an install to
 * remove in the namespace (its Deployment, ServiceAccount, OperatorConfig or a lease): with none there it changes
 * nothing, says where the operator does run, and fails (a mistyped `-n` must never strip a running operator). Then
 * the operator stops (Deployment scaled to 0, its Pods gone) so nothing adds a finalizer again; then — only when no
 * other operator instance runs anywhere (a fresh leader or heartbeat lease, a Deployment of ours with replicas), since
 * the finalizers are shared by every operator in the cluster — every finalizer it put on users' objects is released
 * (so no later delete, and no namespace deletion, waits for an operator that is gone); then what install made is
 * deleted in reverse order. CRs and CRDs stay unless `crds` is set: then the finalizers on the polycrate.io CRs are
 * released too (nothing is deleted in the Polycrate API: a CRD going away is not a user deleting objects) and the
 * CRDs are deleted.
 */
import {allCrds} from '../../crds/index.js'
import {GROUP} from '../../crds/define.js'
import {poll, systemClock, type Clock} from '../../lib/clock.js'
import {resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {deprecatedFinalizers, finalizers, installedBy, LEADER_LEASE_NAME, OPERATOR_NAME, OPERATOR_SELECTOR} from '../conventions.js'
import {serviceManagement, type LbService} from '../cloud/load-balancer.js'
import {crdExists, deleteObject, listAll, releaseFinalizers, resultOf, type ObjectResult, type ObjectsReport, collector} from './cluster-objects.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import type {Permission} from '../permissions.js'
import {deleteMonitoringObjects} from './monitoring-objects.js'
import {deleteSuperseded} from './superseded.js'
import {collectPresence, formatAgo, holderText, instanceText, operatorPresence, type LeaseView, type OperatorInstance, type Presence} from './presence.js'

export interface UninstallOperatorOptions {
  /** What install made (from the same values): names of the namespace, Secrets, objects. */
  plan: InstallPlan
  /** Also release the finalizers on polycrate.io CRs and delete the CRDs (and with them every CR). */
  crds?: boolean
  /**
   * Only stop the operator and release its finalizers (on users' objects and on the polycrate.io objects); delete
   * nothing. What the Helm chart's pre-delete hook runs before helm deletes the objects itself (and what to run
   * before a GitOps tool prunes them).
   */
  releaseOnly?: boolean
  /** How long to wait for the operator's Pods to go, and for the CRDs to go (each); 5 minutes by default. */
  timeoutMs?: number
  onResult?: (result: ObjectResult) => void
  onWarning?: (message: string) => void
  /** Called before each step that may wait (a spinner's text). */
  onStep?: (message: string) => void
  /**
   * Nothing of the operator is installed in the namespace nor runs anywhere, but objects still carry its finalizers
   * (an operator removed without uninstall): release them. Refused while any operator instance runs.
   */
  orphaned?: boolean
  /** The clock of lease ages and waits (the system clock by default). */
  clock?: Clock
}

export interface UninstallReport extends ObjectsReport {
  /** released: no other operator runs, the shared finalizers were released; kept: another instance runs (keptBecause). */
  finalizers: 'released' | 'kept'
  keptBecause?: string
}

/** Uninstall refused before changing anything; the message says why and what to run instead. */
export class UninstallRefusedError extends Error {
  override name = 'UninstallRefusedError'
}

/** What of an install lives in a namespace: `Deployment polycrate-operator`, `Lease polycrate-operator-leader`, … */
export interface InstallFound {
  namespaceExists: boolean
  objects: string[]
}

/**
 * The operator instances other than the one being removed that would put the shared finalizers back, or still
 * need them (pure): every other namespace where something runs or a Deployment of ours wants replicas, and in the
 * namespace itself a fresh lease held by anything but `ownPods` (a laptop's `operator run`).
 */
export function otherOperators(presence: Presence, namespace: string, ownPods: ReadonlySet<string> = new Set()): Array<{instance: OperatorInstance; leases: LeaseView[]}> {
  const others: Array<{instance: OperatorInstance; leases: LeaseView[]}> = []
  for (const instance of presence.instances) {
    const fresh = [...(instance.leader ? [instance.leader] : []), ...instance.heartbeats].filter((lease) => lease.fresh)
    if (instance.namespace === namespace) {
      const foreign = fresh.filter((lease) => !(lease.host && ownPods.has(lease.host)))
      if (foreign.length > 0) others.push({instance, leases: foreign})
    } else if (instance.running || (instance.deployment?.desired ?? 0) > 0) {
      others.push({instance, leases: fresh})
    }
  }
  return others
}

/** In words, each instance and where it runs (pure). */
export function othersText(others: ReadonlyArray<{instance: OperatorInstance; leases: LeaseView[]}>, namespace: string): string {
  return others.map(({instance, leases}) => (instance.namespace === namespace
    ? `in namespace ${namespace} itself: ${leases.map((lease) => `${holderText(lease)} (its ${lease.role === 'leader' ? 'leader Lease' : 'heartbeat'} renewed ${formatAgo(lease.renewedAgoMs ?? 0)} ago)`).join('; ')}`
    : `in ${instanceText(instance)}`)).join('; ')
}

/** The message of an uninstall that finds nothing to remove in `namespace` (pure). */
export function notInstalledMessage(namespace: string, found: InstallFound, presence: Presence, options: {orphaned?: boolean} = {}): string {
  const where = found.namespaceExists ? `(namespace ${namespace} holds no Deployment, ServiceAccount, OperatorConfig or lease of it)` : `(namespace ${namespace} does not exist)`
  const head = `No operator installed in namespace ${namespace} ${where}; nothing was changed.`
  const alive = presence.instances.filter((instance) => instance.running || (instance.deployment?.desired ?? 0) > 0)
  if (alive.length === 1) {
    const [instance] = alive
    return `${head} The operator runs in ${instanceText(instance!)}: run \`polycrate operator uninstall -n ${instance!.namespace}\`.`
  }
  if (alive.length > 1) {
    return `${head} Operators run in ${alive.map(instanceText).join('; ')}: name one with \`polycrate operator uninstall -n <namespace>\`.`
  }
  const installed = presence.instances.filter((instance) => instance.deployment)
  if (installed.length > 0) {
    return `${head} The operator is installed in ${installed.map(instanceText).join('; ')}: run \`polycrate operator uninstall -n ${installed[0]!.namespace}\`.`
  }
  return `${head} No operator runs anywhere in this cluster${options.orphaned ? '' : '; if one was removed without uninstall and objects still wait on its finalizers, `polycrate operator uninstall --orphaned` releases them'}.`
}

/** What of the operator's install is in the namespace (the namespace, Deployment, ServiceAccount, OperatorConfig, leases). */
export async function installFound(client: KubeClient, namespace: string, configName: string, presence: Presence): Promise<InstallFound> {
  const namespaceObject = await client.getOrUndefined<KubeObject>({...resources.namespaces, name: namespace})
  if (!namespaceObject) return {namespaceExists: false, objects: []}
  const objects: string[] = []
  const get = async (kind: string, ref: ResourceRef) => {
    if (await client.getOrUndefined<KubeObject>(ref).catch(() => undefined)) objects.push(`${kind} ${ref.name}`)
  }
  await get('Deployment', {...resources.deployments, namespace, name: OPERATOR_NAME})
  await get('ServiceAccount', {...resources.serviceAccounts, namespace, name: OPERATOR_NAME})
  await get('OperatorConfig', {group: GROUP, version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: configName})
  const here = presence.instances.find((instance) => instance.namespace === namespace)
  for (const lease of [...(here?.leader ? [here.leader] : []), ...(here?.heartbeats ?? [])]) objects.push(`Lease ${lease.name}`)
  return {namespaceExists: true, objects}
}

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
  const clock = options.clock ?? systemClock
  const wait = {clock, timeoutMs}
  const {collected, report, warn} = collector({namespace, onResult: options.onResult, onWarning: options.onWarning})
  const ours = operatorFinalizers()
  const configName = plan.operatorConfig.metadata!.name!
  const configRef = {group: GROUP, version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: configName}

  // 0. Is there an install to remove here? Is anything else running? Nothing changes before both are answered.
  options.onStep?.('looking for the operator…')
  const before = operatorPresence(await collectPresence(client, {namespace}), clock.now())
  const found = await installFound(client, namespace, configName, before)
  const orphaned = found.objects.length === 0
  if (orphaned && (!options.orphaned || before.instances.some((instance) => instance.running || instance.deployment))) {
    throw new UninstallRefusedError(notInstalledMessage(namespace, found, before, options))
  }
  const ownPods = new Set(before.instances.find((instance) => instance.namespace === namespace)?.pods.map((pod) => pod.name) ?? [])
  const othersBefore = otherOperators(before, namespace, ownPods).filter(({instance}) => instance.namespace !== namespace)
  if (options.crds && othersBefore.length > 0) {
    throw new UninstallRefusedError(`--crds would delete every polycrate.io object in the cluster, also under the operator that runs ${othersText(othersBefore, namespace)}; nothing was changed. `
      + `Uninstall that one first (\`polycrate operator uninstall -n ${othersBefore[0]!.instance.namespace}\`), or leave out --crds.`)
  }
  const config = await client.getOrUndefined<OperatorConfigObject>(configRef).catch(() => undefined)

  // 1. Stop the operator, so that no replica adds a finalizer again.
  if (!orphaned) await stopOperator(client, namespace, wait, ownPods, report, options.onStep)

  // 2. The finalizers are shared by every operator in the cluster: released only when no other instance runs.
  const after = operatorPresence(await collectPresence(client, {namespace}), clock.now())
  const others = otherOperators(after, namespace, ownPods)
  const keptBecause = others.length > 0
    ? `another operator instance runs ${othersText(others, namespace)}. It still needs them (and would put them back): `
      + 'stop it (or uninstall it), then run uninstall again to release them.'
    : undefined
  if (keptBecause) {
    warn(`The operator's finalizers on users' objects and on polycrate.io objects stay: ${keptBecause}`)
  } else {
    await releaseSourceFinalizers(client, config, ours, report, warn, options.onStep)
  }

  // --release-only (the chart's pre-delete hook): stopped and released; helm or the GitOps tool deletes the objects.
  if (options.releaseOnly) {
    if (!keptBecause) await releaseCrFinalizers(client, ours, report, options.onStep)
    return {...collected, finalizers: keptBecause ? 'kept' : 'released', ...(keptBecause ? {keptBecause} : {})}
  }

  // 3. Delete what install made, in reverse order.
  if (!orphaned) await deleteInstalled(client, plan, after, ownPods, report, options.onStep)

  // 4. The CRs stay (and their API objects), but without the operator's sync finalizers: nobody would release them,
  // so deleting one, or its namespace, would wait forever. Released, never deleted in the Polycrate API; a reinstalled
  // operator puts them back. With --crds the CRDs go too.
  if (!keptBecause) await releaseCrFinalizers(client, ours, report, options.onStep)
  if (options.crds && !keptBecause) await deleteCrds(client, wait, report, options.onStep)
  else if (options.crds) warn('The CRDs stay: deleting them would delete every polycrate.io object under the operator that still runs.')

  // 5. The namespace: only if install created it and nothing else lives there.
  if (!orphaned) await deleteNamespaceIfInstalled(client, namespace, report)
  return {...collected, finalizers: keptBecause ? 'kept' : 'released', ...(keptBecause ? {keptBecause} : {})}
}

/** Scales the Deployment to 0 and waits until its Pods are gone (their names go into `ownPods`). */
async function stopOperator(client: KubeClient, namespace: string, wait: Wait, ownPods: Set<string>, report: (result: ObjectResult) => void, onStep?: (message: string) => void): Promise<void> {
  onStep?.('stopping the operator…')
  const deploymentRef = {...resources.deployments, namespace, name: OPERATOR_NAME}
  const deployment = await client.getOrUndefined<KubeObject & {spec?: {replicas?: number}}>(deploymentRef)
  if (deployment && deployment.spec?.replicas !== 0) {
    await client.mergePatch(deploymentRef, {spec: {replicas: 0}})
    report(resultOf({kind: 'Deployment', metadata: {name: OPERATOR_NAME, namespace}}, 'scaled', 'to 0 replicas'))
  }
  await waitUntil(async () => {
    const pods = await operatorPods(client, namespace)
    for (const pod of pods) ownPods.add(pod.metadata?.name ?? '')
    return pods.length === 0
  }, wait,
  () => `the operator's Pods in ${namespace} are still there after ${Math.round(wait.timeoutMs / 1000)}s: check \`kubectl -n ${namespace} get pods -l app.kubernetes.io/name=${OPERATOR_NAME}\`, then run uninstall again.`)
}

/** Deletes what install made, in reverse order; a lease a live process outside the install holds stays. */
async function deleteInstalled(client: KubeClient, plan: InstallPlan, presence: Presence, ownPods: ReadonlySet<string>, report: (result: ObjectResult) => void, onStep?: (message: string) => void): Promise<void> {
  const {namespace} = plan
  onStep?.('deleting…')
  await deleteMonitoringObjects(client, plan.monitoring, report)
  if (await crdExists(client, VM_SERVICE_SCRAPE_CRD)) reportDeleted(report, await deleteObject(client, plan.vmServiceScrape))
  for (const object of [...plan.workload].reverse()) reportDeleted(report, await deleteObject(client, object))
  // What earlier installs made with other values (another feature set's Roles, the metrics certificate, …).
  await deleteSuperseded(client, namespace, [], report, 'made by an install')
  const here = presence.instances.find((instance) => instance.namespace === namespace)
  for (const lease of [...(here?.leader ? [here.leader] : []), ...(here?.heartbeats ?? [])]) {
    const leaseObject = {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: lease.name, namespace}}
    if (lease.fresh && !(lease.host && ownPods.has(lease.host))) report(resultOf(leaseObject, 'kept', `held by ${holderText(lease)}, renewed ${formatAgo(lease.renewedAgoMs ?? 0)} ago`))
    else reportDeleted(report, await deleteObject(client, leaseObject))
  }
  if (!here?.leader) reportDeleted(report, await deleteObject(client, {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: LEADER_LEASE_NAME, namespace}}))
  for (const name of new Set([plan.pullSecretName, plan.tokenSecretName])) {
    await deleteIfInstalled(client, {apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace}}, report)
  }
}

/**
 * The CRs stay (and their API objects), but without the operator's sync finalizers: nobody would release them, so
 * deleting one, or its namespace, would wait forever. Released, never deleted in the Polycrate API; a reinstalled
 * operator puts them back.
 */
async function releaseCrFinalizers(client: KubeClient, ours: ReadonlySet<string>, report: (result: ObjectResult) => void, onStep?: (message: string) => void): Promise<void> {
  onStep?.('releasing the finalizers of polycrate.io objects…')
  for (const def of allCrds) {
    const items = await listAll(client, `/apis/${GROUP}/v1alpha1/${def.plural}`)
    for (const object of items ?? []) {
      const ref = {group: GROUP, version: 'v1alpha1', plural: def.plural, namespace: object.metadata?.namespace, name: object.metadata?.name}
      await release(client, ref, {...object, kind: def.kind}, ours, report)
    }
  }
}

/** --crds: deletes the polycrate.io CRDs and waits until they are gone. */
async function deleteCrds(client: KubeClient, wait: Wait, report: (result: ObjectResult) => void, onStep?: (message: string) => void): Promise<void> {
  const crdNames = allCrds.map((def) => `${def.plural}.${GROUP}`)
  onStep?.('deleting the CRDs…')
  for (const name of crdNames) reportDeleted(report, await deleteObject(client, {apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: {name}}))
  for (const name of crdNames) {
    await waitUntil(async () => !(await crdExists(client, name)), wait,
      () => `CustomResourceDefinition ${name} is still there after ${Math.round(wait.timeoutMs / 1000)}s: check \`kubectl get crd ${name} -o yaml\` (status.conditions) and run uninstall --crds again.`)
  }
}

/** The namespace goes only if install created it and nothing else lives there. */
async function deleteNamespaceIfInstalled(client: KubeClient, namespace: string, report: (result: ObjectResult) => void): Promise<void> {
  const namespaceObject = await client.getOrUndefined<KubeObject>({...resources.namespaces, name: namespace})
  if (!namespaceObject || namespaceObject.metadata?.deletionTimestamp) return
  if (namespaceObject.metadata?.labels?.[installedBy.label] !== installedBy.value) {
    report(resultOf(namespaceObject, 'kept', 'not created by install'))
    return
  }
  const leftovers = await namespaceLeftovers(client, namespace)
  if (leftovers.length > 0) {
    report(resultOf({kind: 'Namespace', metadata: {name: namespace}}, 'kept',
      `it holds ${leftovers.length} other object${leftovers.length > 1 ? 's' : ''}: ${leftovers.slice(0, 5).join(', ')}${leftovers.length > 5 ? ', …' : ''}`))
  } else {
    reportDeleted(report, await deleteObject(client, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace}}))
  }
}

/** Releases the operator's finalizers on Ingresses and HTTPRoutes, and the load-balancer one where it owns it. */
async function releaseSourceFinalizers(
  client: KubeClient,
  config: OperatorConfigObject | undefined,
  ours: ReadonlySet<string>,
  report: (result: ObjectResult) => void,
  warn: (message: string) => void,
  onStep?: (message: string) => void,
): Promise<void> {
  onStep?.('releasing finalizers…')
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
}

/**
 * What `releaseOnly` needs (the chart's pre-delete hook runs with exactly these): scale the Deployment and see its
 * Pods go, read the OperatorConfig, list and patch the objects that carry the operator's finalizers.
 */
export function releasePermissions(): Permission[] {
  const patchEverywhere = (group: string, resource: string): Permission => ({group, resource, verbs: ['get', 'list', 'patch']})
  return [
    {...pick(resources.deployments), verbs: ['get', 'patch'], scope: 'namespace'},
    // Where else an operator runs (presence.ts): finalizers are released only when no other instance runs.
    {...pick(resources.deployments), verbs: ['list']},
    {...pick(resources.pods), verbs: ['list']},
    {group: 'coordination.k8s.io', resource: 'leases', verbs: ['list']},
    {...pick(resources.namespaces), verbs: ['get']},
    {...pick(resources.serviceAccounts), verbs: ['get'], scope: 'namespace'},
    {group: GROUP, resource: 'operatorconfigs', verbs: ['get'], scope: 'namespace'},
    ...FINALIZED_SOURCES.map((source) => patchEverywhere(source.group, source.plural)),
    patchEverywhere(resources.services.group, resources.services.plural),
    ...allCrds.map((def) => patchEverywhere(GROUP, def.plural)),
  ]
}

function pick(resource: {group: string; plural: string}): {group: string; resource: string} {
  return {group: resource.group, resource: resource.plural}
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
    query: {labelSelector: OPERATOR_SELECTOR},
  })
  return pods.items
}

/** How long a step of uninstall waits, on which clock. */
interface Wait {
  clock: Clock
  timeoutMs: number
}

/** Polls `check` every 500 ms until it holds; fails with `message()` after the wait's timeout. */
async function waitUntil(check: () => Promise<boolean>, wait: Wait, message: () => string): Promise<void> {
  await poll(wait.clock, {intervalMs: 500, timeoutMs: wait.timeoutMs}, async (expired) => {
    if (await check()) return true
    if (expired) throw new Error(message())
    return undefined
  })
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
