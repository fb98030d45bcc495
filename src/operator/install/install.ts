/**
 * `polycrate operator install`: the operator block's install action. Server-side applies, in this order: the CRDs
 * (waiting until each is Established), the Namespace, the token Secret, the image pull Secret, the generated
 * manifests, the OperatorConfig, and the VMServiceScrape when its CRD exists (removed when metrics are disabled),
 * then the alerting rules and the dashboard (monitoring-objects.ts).
 */
import {allCrds} from '../../crds/index.js'
import {customResourceDefinitions} from '../../crds/render.js'
import {poll, systemClock, type Clock} from '../../lib/clock.js'
import {resourcePath, type KubeClient, type KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {installCrds} from '../../kube/crd-install.js'
import {installedBy, OPERATOR_NAME, OPERATOR_SELECTOR} from '../conventions.js'
import {applyObject, crdExists, deleteObject, resultOf, type ObjectResult, type ObjectsReport, collector} from './cluster-objects.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import {applyMonitoringObjects} from './monitoring-objects.js'
import {ensureMetricsTls} from './metrics-tls.js'
import {postureOfPlan, postureWarnings} from './posture.js'
import {deleteSuperseded} from './superseded.js'
import {isPodSecurityLabel} from '../pod-security.js'
import {collectPresence, instanceText, operatorPresence, type DeploymentObject, type Presence} from './presence.js'
import type {BlockValues} from './values.js'

export interface InstallOperatorOptions {
  values: BlockValues
  plan: InstallPlan
  /** Seconds to wait for each CRD to be Established (60 by default). */
  crdTimeoutMs?: number
  /** Called once per object as soon as it is applied (or deleted, kept, skipped). */
  onResult?: (result: ObjectResult) => void
  /** Called once per warning (what the user should do), as soon as it is known. */
  onWarning?: (message: string) => void
  /** The clock of lease ages and waits (the system clock by default). */
  clock?: Clock
}

export type InstallReport = ObjectsReport

/** A values setting the cluster cannot serve (e.g. the DNS01 webhook without cert-manager). */
export class InstallPreconditionError extends Error {
  override name = 'InstallPreconditionError'
}

const CERT_MANAGER_CRDS = ['issuers.cert-manager.io', 'certificates.cert-manager.io']

/**
 * One operator per cluster: why installing into `namespace` is refused (pure) — an operator runs, or is installed with
 * replicas, in another namespace — or undefined. The message says where, and both ways on.
 */
export function otherOperatorProblem(presence: Presence, namespace: string): string | undefined {
  const elsewhere = presence.instances.filter((instance) => instance.namespace !== namespace && (instance.running || (instance.deployment?.desired ?? 0) > 0))
  if (elsewhere.length === 0) return undefined
  const [first] = elsewhere
  const where = elsewhere.map(instanceText).join('; ')
  return `${first!.running ? 'An operator already runs' : 'An operator is already installed'} in ${where}. One operator per cluster (they share the finalizers and the `
    + `cluster's registration): install there instead (\`polycrate operator install -n ${first!.namespace}\`, which updates it), or move it: `
    + `\`polycrate operator uninstall -n ${first!.namespace}\`, then \`polycrate operator install -n ${namespace}\`. Nothing was applied.`
}

/** Refuses an install next to an operator in another namespace (otherOperatorProblem), before anything is applied. */
export async function assertNoOtherOperator(client: KubeClient, namespace: string, clock: Clock = systemClock): Promise<void> {
  const problem = otherOperatorProblem(operatorPresence(await collectPresence(client, {namespace}), clock.now()), namespace)
  if (problem) throw new InstallPreconditionError(problem)
}

/** Applies everything `plan` holds; the Deployment's rollout is not waited for (see waitForRollout). */
export async function installOperator(client: KubeClient, options: InstallOperatorOptions): Promise<InstallReport> {
  const {plan, values} = options
  const {namespace} = plan
  const {collected, report, warn} = collector({namespace, onResult: options.onResult, onWarning: options.onWarning})
  const mark = {[installedBy.label]: installedBy.value}

  await assertNoOtherOperator(client, namespace, options.clock)
  if (plan.workload.some((object) => object.kind === 'Issuer')) {
    for (const name of CERT_MANAGER_CRDS) {
      if (!(await crdExists(client, name))) {
        throw new InstallPreconditionError(`operator_config.dns01_webhook.enabled needs cert-manager, but the CRD ${name} is missing: install cert-manager first, or disable the DNS01 webhook.`)
      }
    }
  }

  for (const crd of await installCrds(client, customResourceDefinitions(allCrds), {timeoutMs: options.crdTimeoutMs, clock: options.clock})) {
    report({kind: 'CustomResourceDefinition', name: crd.name, outcome: crd.outcome})
  }
  // A namespace install did not create keeps its Pod Security labels (other workloads may run there): said, not changed.
  const existingNamespace = await client.getOrUndefined<KubeObject>({...resources.namespaces, name: namespace})
  const ownNamespace = !existingNamespace || existingNamespace.metadata?.labels?.[installedBy.label] === installedBy.value
  const namespaceObject = ownNamespace ? plan.namespaceObject : withoutPodSecurityLabels(plan.namespaceObject)
  report(await applyObject(client, namespaceObject, {mark}))
  for (const message of postureWarnings(postureOfPlan(plan, ownNamespace ? undefined : existingNamespace))) warn(message)

  const tokenRef = {...resources.secrets, namespace, name: values.apiSync.secretName}
  if (plan.tokenSecret) {
    report(await applyObject(client, plan.tokenSecret, {mark}))
  } else {
    const existing = await client.getOrUndefined<KubeObject & {data?: Record<string, string>}>(tokenRef)
    const secretText = `Secret ${namespace}/${values.apiSync.secretName}`
    if (existing) {
      report(resultOf({kind: 'Secret', metadata: {name: values.apiSync.secretName, namespace}}, 'kept', 'no api_token in the values: the existing Secret is used'))
      if (existing.data?.[values.apiSync.tokenKey] === undefined) {
        warn(`${secretText} has no key "${values.apiSync.tokenKey}" (api_sync.credentials.token_key): the operator cannot read its agent token; add the key or set token_key.`)
      }
    } else if (values.apiSync.enabled) {
      warn(`api_sync is enabled but ${secretText} does not exist and the values hold no api_token: create it with \`kubectl -n ${namespace} create secret generic ${values.apiSync.secretName} --from-literal=${values.apiSync.tokenKey}=<agent token>\` (or set api_sync.credentials.api_token in secrets.poly and install again).`)
    }
  }
  if (plan.pullSecret) report(await applyObject(client, plan.pullSecret, {mark}))
  if (plan.metricsTls) report(await ensureMetricsTls(client, plan.metricsTls, options.clock))
  for (const object of plan.workload) report(await applyObject(client, object))
  report(await applyObject(client, plan.operatorConfig))
  // What an earlier install made and these values no longer render (a disabled feature's Role, a PodDisruptionBudget
  // of more replicas, the metrics reader with metrics.secure false), once what replaces it is in place.
  const planned = [...plan.workload, ...(plan.metricsTls ? [{apiVersion: 'v1', kind: 'Secret', metadata: {name: plan.metricsTls.secretName, namespace}}] : [])]
  await deleteSuperseded(client, namespace, planned, report)

  // VMServiceScrape: only where VictoriaMetrics' CRD is installed; a stale one goes when metrics are disabled.
  if (await crdExists(client, VM_SERVICE_SCRAPE_CRD)) {
    if (values.metrics.enabled) report(await applyObject(client, plan.vmServiceScrape))
    else {
      const removed = await deleteObject(client, plan.vmServiceScrape, 'metrics.enabled is false')
      if (removed.outcome === 'deleted') report(removed)
    }
  } else if (values.metrics.enabled) {
    report(resultOf(plan.vmServiceScrape, 'skipped', `the CRD ${VM_SERVICE_SCRAPE_CRD} is not installed`))
  }
  await applyMonitoringObjects(client, plan.monitoring, values.metrics, report)
  return collected
}

/** The namespace object without Pod Security Admission's labels. */
function withoutPodSecurityLabels(object: KubeObject): KubeObject {
  const labels = Object.fromEntries(Object.entries(object.metadata?.labels ?? {}).filter(([key]) => !isPodSecurityLabel(key)))
  return {...object, metadata: {...object.metadata, labels}}
}


export interface RolloutState {
  done: boolean
  /** What is being waited for, e.g. "1 of 2 updated replicas available". */
  message: string
  /** The rollout cannot finish by waiting (ProgressDeadlineExceeded). */
  failed?: boolean
}

/** Whether a Deployment's rollout is complete, the way `kubectl rollout status` decides (pure). */
export function rolloutState(deployment: DeploymentObject | undefined): RolloutState {
  if (!deployment) return {done: false, message: 'the Deployment does not exist'}
  const wanted = deployment.spec?.replicas ?? 1
  const status = deployment.status ?? {}
  const generation = deployment.metadata?.generation ?? 0
  if ((status.observedGeneration ?? 0) < generation) return {done: false, message: 'waiting for the Deployment controller to observe the change'}
  const progressing = status.conditions?.find((condition) => condition.type === 'Progressing')
  if (progressing?.reason === 'ProgressDeadlineExceeded') return {done: false, failed: true, message: progressing.message ?? 'progress deadline exceeded'}
  const updated = status.updatedReplicas ?? 0
  if (updated < wanted) return {done: false, message: `${updated} of ${wanted} replicas updated`}
  if ((status.replicas ?? 0) > updated) return {done: false, message: `${(status.replicas ?? 0) - updated} old replicas pending termination`}
  const available = status.availableReplicas ?? 0
  if (available < updated) return {done: false, message: `${available} of ${updated} updated replicas available`}
  return {done: true, message: `${available} of ${wanted} replicas available`}
}

/** The rollout did not finish; the message says what was reached and what to look at. */
export class RolloutError extends Error {
  override name = 'RolloutError'
}

/** The rollout's Pods hit a problem that waiting does not fix (a bad image, a crash loop, no Node fits). */
export class RolloutFailedFastError extends RolloutError {
  override name = 'RolloutFailedFastError'
}

/** Container states that do not go away by waiting (kubectl rollout status would wait them out to the deadline). */
export const FATAL_WAITING_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CrashLoopBackOff', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError',
])

interface ReplicaSetObject extends KubeObject {
  metadata?: KubeObject['metadata'] & {annotations?: Record<string, string>; ownerReferences?: Array<{uid?: string; kind?: string}>}
}

/**
 * The first problem of the new ReplicaSet's Pods that waiting does not fix (pure): a container waiting with one of
 * FATAL_WAITING_REASONS (with the kubelet's message, and the last exit for a crash loop), or a Pod the scheduler
 * cannot place (Unschedulable, with its message). Undefined while everything may still come up.
 */
export function rolloutPodFailure(pods: readonly PodObject[]): string | undefined {
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue
    const name = pod.metadata?.name
    for (const container of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      const waiting = container.state?.waiting
      if (!waiting?.reason || !FATAL_WAITING_REASONS.has(waiting.reason)) continue
      const message = waiting.message ? `: ${waiting.message}` : ''
      if (waiting.reason === 'CrashLoopBackOff') {
        const last = container.lastState?.terminated
        const exit = last ? ` (last exit: ${last.reason ?? 'terminated'}, code ${last.exitCode ?? '?'}${last.message ? `: ${last.message.trim().split('\n').at(-1)}` : ''})` : ''
        return `Pod ${name}: container ${container.name} is in CrashLoopBackOff after ${container.restartCount ?? 0} restart(s)${exit}. Its log: \`kubectl -n ${pod.metadata?.namespace} logs ${name} -c ${container.name} --previous\``
      }
      return `Pod ${name}: container ${container.name} is in ${waiting.reason}${message}`
    }
    const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable')
    if (unscheduled) return `Pod ${name} cannot be scheduled (Unschedulable): ${unscheduled.message ?? 'no Node fits'}`
  }
  return undefined
}

/** `new Pod x: ContainerCreating` for the new ReplicaSet's Pods that are not ready yet (pure), for the progress line. */
export function rolloutPodsProgress(pods: readonly PodObject[]): string {
  const waiting = pods.filter((pod) => !pod.metadata?.deletionTimestamp && pod.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True')
  return waiting.slice(0, 3).map((pod) => {
    const container = pod.status?.containerStatuses?.find((c) => !c.ready)
    const state = container?.state?.waiting?.reason ?? (container?.state?.running ? 'running, not ready yet' : undefined) ?? pod.status?.phase ?? 'Pending'
    return `new Pod ${pod.metadata?.name}: ${state}`
  }).join(', ')
}

/**
 * The Pods of the Deployment's newest ReplicaSet (the one of its current revision); none while that ReplicaSet is
 * not known yet.
 */
export async function newReplicaSetPods(client: KubeClient, namespace: string, deployment: DeploymentObject | undefined): Promise<PodObject[]> {
  const revision = deployment?.metadata?.annotations?.['deployment.kubernetes.io/revision']
  if (!revision || !deployment?.metadata?.uid) return []
  const pods = (await client.request<{items: PodObject[]}>({path: resourcePath({...resources.pods, namespace}), query: {labelSelector: OPERATOR_SELECTOR}})).items
  const sets = (await client.request<{items: ReplicaSetObject[]}>({path: resourcePath({...resources.replicaSets, namespace}), query: {labelSelector: OPERATOR_SELECTOR}})).items
  const current = sets.find((set) => set.metadata?.annotations?.['deployment.kubernetes.io/revision'] === revision
    && set.metadata?.ownerReferences?.some((owner) => owner.uid === deployment.metadata?.uid))
  if (!current?.metadata?.uid) return []
  return pods.filter((pod) => (pod.metadata?.ownerReferences as Array<{uid?: string}> | undefined)?.some((owner) => owner.uid === current.metadata?.uid))
}

/**
 * Polls the operator Deployment until its rollout is complete (observedGeneration, updated == replicas, all
 * available), and the new ReplicaSet's Pods with it: a Pod in ImagePullBackOff, ErrImagePull, CrashLoopBackOff,
 * CreateContainerConfigError, InvalidImageName or Unschedulable ends the wait at once with the reason
 * (RolloutFailedFastError). On timeout or ProgressDeadlineExceeded: a RolloutError naming the Pods' problems and the
 * commands to check.
 */
export async function waitForRollout(
  client: KubeClient,
  namespace: string,
  options: {timeoutMs?: number; intervalMs?: number; onProgress?: (message: string) => void; clock?: Clock} = {},
): Promise<RolloutState> {
  const timeoutMs = options.timeoutMs ?? 300_000
  const ref = {...resources.deployments, namespace, name: OPERATOR_NAME}
  const check = `Check \`kubectl -n ${namespace} describe deployment ${OPERATOR_NAME}\` and the Pods' events: \`kubectl -n ${namespace} get events --field-selector involvedObject.kind=Pod\`.`
  let last = ''
  return poll(options.clock ?? systemClock, {intervalMs: options.intervalMs ?? 1000, timeoutMs}, async (expired) => {
    const deployment = await client.getOrUndefined<DeploymentObject>(ref)
    const state = rolloutState(deployment)
    if (state.done) return state
    const pods = await newReplicaSetPods(client, namespace, deployment).catch(() => [])
    const failure = rolloutPodFailure(pods)
    if (failure) throw new RolloutFailedFastError(`The rollout of Deployment ${namespace}/${OPERATOR_NAME} cannot finish: ${failure}. ${check}`)
    const podsText = rolloutPodsProgress(pods)
    const message = podsText ? `${state.message}; ${podsText}` : state.message
    if (message !== last) options.onProgress?.(message)
    last = message
    if (state.failed || expired) {
      const why = state.failed ? state.message : `not finished after ${formatSeconds(timeoutMs)} (${state.message})`
      throw new RolloutError(`The rollout of Deployment ${namespace}/${OPERATOR_NAME} is ${why}.${await podProblems(client, namespace)} ${check}`)
    }
    return undefined
  })
}

interface PodObject extends KubeObject {
  status?: {
    phase?: string
    containerStatuses?: ContainerStatus[]
    initContainerStatuses?: ContainerStatus[]
    conditions?: Array<{type: string; status: string; reason?: string; message?: string}>
  }
}

interface ContainerStatus {
  name: string
  ready?: boolean
  restartCount?: number
  state?: {waiting?: {reason?: string; message?: string}; running?: {startedAt?: string}; terminated?: {reason?: string; exitCode?: number}}
  lastState?: {terminated?: {reason?: string; exitCode?: number; message?: string}}
}

/** " Pod x: ImagePullBackOff (…)." for each operator Pod that is not ready, from its container states. */
async function podProblems(client: KubeClient, namespace: string): Promise<string> {
  try {
    const pods = await client.request<{items: PodObject[]}>({
      path: resourcePath({...resources.pods, namespace}),
      query: {labelSelector: OPERATOR_SELECTOR},
    })
    const lines: string[] = []
    for (const pod of pods.items) {
      const containers = pod.status?.containerStatuses ?? []
      const reasons = containers.filter((c) => !c.ready).map((c) => c.state?.waiting?.reason ?? c.state?.terminated?.reason).filter(Boolean)
      const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')
      if (unscheduled) reasons.push(`not scheduled: ${unscheduled.message ?? unscheduled.reason}`)
      if (reasons.length > 0 || pod.status?.phase !== 'Running') lines.push(`Pod ${pod.metadata?.name}: ${reasons.join(', ') || pod.status?.phase || 'no status'}`)
    }
    if (pods.items.length === 0) lines.push('No operator Pod exists (check the ReplicaSet events: quota, admission, missing ServiceAccount)')
    return lines.length > 0 ? ` ${lines.join('; ')}.` : ''
  } catch {
    return ''
  }
}

function formatSeconds(ms: number): string {
  const seconds = Math.round(ms / 1000)
  return seconds >= 60 && seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`
}

