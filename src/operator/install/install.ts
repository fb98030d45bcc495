/**
 * `polycrate operator install`: the operator block's install action. Server-side applies, in this order: the CRDs
 * (waiting until each is Established), the Namespace, the token Secret, the image pull Secret, the generated
 * manifests, the OperatorConfig, and the VMServiceScrape when its CRD exists (removed when metrics are disabled),
 * then the alerting rules and the dashboard (monitoring-objects.ts).
 */
import {allCrds} from '../../crds/index.js'
import {customResourceDefinitions} from '../../crds/render.js'
import {resourcePath, type KubeClient, type KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {installCrds} from '../../kube/crd-install.js'
import {installedBy, OPERATOR_NAME} from '../conventions.js'
import {applyObject, crdExists, deleteObject, resultOf, type ObjectResult, type ObjectsReport, collector} from './cluster-objects.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import {applyMonitoringObjects} from './monitoring-objects.js'
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
}

export type InstallReport = ObjectsReport

/** A values setting the cluster cannot serve (e.g. the DNS01 webhook without cert-manager). */
export class InstallPreconditionError extends Error {
  override name = 'InstallPreconditionError'
}

const CERT_MANAGER_CRDS = ['issuers.cert-manager.io', 'certificates.cert-manager.io']

/** Applies everything `plan` holds; the Deployment's rollout is not waited for (see waitForRollout). */
export async function installOperator(client: KubeClient, options: InstallOperatorOptions): Promise<InstallReport> {
  const {plan, values} = options
  const {namespace} = plan
  const {collected, report, warn} = collector({namespace, onResult: options.onResult, onWarning: options.onWarning})
  const mark = {[installedBy.label]: installedBy.value}

  if (plan.workload.some((object) => object.kind === 'Issuer')) {
    for (const name of CERT_MANAGER_CRDS) {
      if (!(await crdExists(client, name))) {
        throw new InstallPreconditionError(`operator_config.dns01_webhook.enabled needs cert-manager, but the CRD ${name} is missing: install cert-manager first, or disable the DNS01 webhook.`)
      }
    }
  }

  for (const crd of await installCrds(client, customResourceDefinitions(allCrds), {timeoutMs: options.crdTimeoutMs})) {
    report({kind: 'CustomResourceDefinition', name: crd.name, outcome: crd.outcome})
  }
  report(await applyObject(client, plan.namespaceObject, {mark}))

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
  for (const object of plan.workload) report(await applyObject(client, object))
  report(await applyObject(client, plan.operatorConfig))

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

interface DeploymentObject extends KubeObject {
  spec?: {replicas?: number}
  status?: {
    observedGeneration?: number
    replicas?: number
    updatedReplicas?: number
    readyReplicas?: number
    availableReplicas?: number
    conditions?: Array<{type: string; status: string; reason?: string; message?: string}>
  }
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

/**
 * Polls the operator Deployment until its rollout is complete (observedGeneration, updated == replicas, all
 * available). On timeout or ProgressDeadlineExceeded: a RolloutError naming the Pods' problems and the commands to check.
 */
export async function waitForRollout(
  client: KubeClient,
  namespace: string,
  options: {timeoutMs?: number; intervalMs?: number; onProgress?: (message: string) => void} = {},
): Promise<RolloutState> {
  const timeoutMs = options.timeoutMs ?? 300_000
  const deadline = Date.now() + timeoutMs
  const ref = {...resources.deployments, namespace, name: OPERATOR_NAME}
  let last = ''
  for (;;) {
    const state = rolloutState(await client.getOrUndefined<DeploymentObject>(ref))
    if (state.done) return state
    if (state.message !== last) options.onProgress?.(state.message)
    last = state.message
    if (state.failed || Date.now() > deadline) {
      const why = state.failed ? state.message : `not finished after ${formatSeconds(timeoutMs)} (${state.message})`
      throw new RolloutError(`The rollout of Deployment ${namespace}/${OPERATOR_NAME} is ${why}.${await podProblems(client, namespace)} `
        + `Check \`kubectl -n ${namespace} describe deployment ${OPERATOR_NAME}\` and the Pods' events: \`kubectl -n ${namespace} get events --field-selector involvedObject.kind=Pod\`.`)
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 1000))
  }
}

interface PodObject extends KubeObject {
  status?: {
    phase?: string
    containerStatuses?: Array<{name: string; ready?: boolean; state?: {waiting?: {reason?: string; message?: string}; terminated?: {reason?: string; exitCode?: number}}}>
    conditions?: Array<{type: string; status: string; reason?: string; message?: string}>
  }
}

/** " Pod x: ImagePullBackOff (…)." for each operator Pod that is not ready, from its container states. */
async function podProblems(client: KubeClient, namespace: string): Promise<string> {
  try {
    const pods = await client.request<{items: PodObject[]}>({
      path: resourcePath({...resources.pods, namespace}),
      query: {labelSelector: `app.kubernetes.io/name=${OPERATOR_NAME}`},
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

