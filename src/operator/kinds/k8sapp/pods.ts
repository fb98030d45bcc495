/**
 * Pods as K8sApp discovery, the K8sApp pod status and Artifact discovery see them (pure).
 *
 * One pod informer serves all three: `podsRequest` is one object, and informers are shared by resource, selectors
 * and transform identity. `slimPod` keeps only what they read — name, namespace, uid, labels, the
 * `polycrate_k8sapp_name` annotation, the controller owner's kind, container names and images, phase, the Ready and
 * Available facts, and per container image, imageID, ready, restartCount and the last termination time — so 10,000
 * pods cost a few MB, not the hundreds a full PodSpec (env, volumes, managedFields) would.
 */
import type {KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import {annotations, deprecatedLabels} from '../../conventions.js'

export interface SlimContainerStatus {
  name: string
  image?: string
  imageID?: string
  ready?: boolean
  restartCount?: number
  /** When the container last terminated (lastState.terminated.finishedAt), for restarts within the last hour. */
  lastTerminatedAt?: string
}

export interface SlimPod extends KubeObject {
  metadata: {
    name: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    /** Only the controller owner's kind and name. */
    ownerReferences?: Array<{kind: string; name: string; controller?: boolean; apiVersion?: string; uid?: string}>
    deletionTimestamp?: string
  }
  spec: {containers: Array<{name: string; image?: string}>; initContainers?: Array<{name: string; image?: string}>}
  status: {phase?: string; ready?: boolean; containerStatuses?: SlimContainerStatus[]; initContainerStatuses?: SlimContainerStatus[]}
}

interface FullPod {
  metadata?: {
    name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>
    annotations?: Record<string, string>; deletionTimestamp?: string
    ownerReferences?: Array<{kind?: string; name?: string; controller?: boolean; apiVersion?: string; uid?: string}>
  }
  spec?: {containers?: Array<{name?: string; image?: string}>; initContainers?: Array<{name?: string; image?: string}>}
  status?: {
    phase?: string
    conditions?: Array<{type?: string; status?: string}>
    containerStatuses?: FullContainerStatus[]
    initContainerStatuses?: FullContainerStatus[]
  }
}
interface FullContainerStatus {
  name?: string; image?: string; imageID?: string; ready?: boolean; restartCount?: number
  lastState?: {terminated?: {finishedAt?: string}}
}

const slimStatus = (status: FullContainerStatus): SlimContainerStatus => ({
  name: status.name ?? '',
  ...(status.image ? {image: status.image} : {}),
  ...(status.imageID ? {imageID: status.imageID} : {}),
  ...(status.ready !== undefined ? {ready: status.ready} : {}),
  ...(status.restartCount ? {restartCount: status.restartCount} : {}),
  ...(status.lastState?.terminated?.finishedAt ? {lastTerminatedAt: status.lastState.terminated.finishedAt} : {}),
})

/** The informer transform: what discovery needs of a pod, nothing more. */
export function slimPod(object: KubeObject): SlimPod {
  const pod = object as FullPod
  const metadata = pod.metadata ?? {}
  const appName = metadata.annotations?.[annotations.k8sAppName]
  const controller = metadata.ownerReferences?.find((owner) => owner.controller)
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: metadata.name ?? '',
      ...(metadata.namespace ? {namespace: metadata.namespace} : {}),
      ...(metadata.uid ? {uid: metadata.uid} : {}),
      ...(metadata.resourceVersion ? {resourceVersion: metadata.resourceVersion} : {}),
      ...(metadata.labels ? {labels: metadata.labels} : {}),
      ...(appName !== undefined ? {annotations: {[annotations.k8sAppName]: appName}} : {}),
      ...(controller ? {ownerReferences: [{kind: controller.kind ?? '', name: controller.name ?? '', controller: true}]} : {}),
      ...(metadata.deletionTimestamp ? {deletionTimestamp: metadata.deletionTimestamp} : {}),
    },
    spec: {
      containers: (pod.spec?.containers ?? []).map((c) => ({name: c.name ?? '', ...(c.image !== undefined ? {image: c.image} : {})})),
      ...(pod.spec?.initContainers?.length
        ? {initContainers: pod.spec.initContainers.map((c) => ({name: c.name ?? '', ...(c.image !== undefined ? {image: c.image} : {})}))}
        : {}),
    },
    status: {
      ...(pod.status?.phase ? {phase: pod.status.phase} : {}),
      ...(pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? {ready: true} : {}),
      ...(pod.status?.containerStatuses ? {containerStatuses: pod.status.containerStatuses.map(slimStatus)} : {}),
      ...(pod.status?.initContainerStatuses ? {initContainerStatuses: pod.status.initContainerStatuses.map(slimStatus)} : {}),
    },
  }
}

/** The one pod informer request of every pod consumer (shared: same resource, no selector, same transform). */
export const podsRequest = {resource: resources.pods, kind: 'Pod', transform: slimPod as (object: KubeObject) => KubeObject}

/** Pods whose controller is a Job (and so CronJob pods too) are transient: never counted. */
export function isJobPod(pod: KubeObject): boolean {
  return (pod as SlimPod).metadata.ownerReferences?.some((owner) => owner.controller && owner.kind === 'Job') ?? false
}

/**
 * The pod's `polycrate_k8sapp_name` annotation (or the deprecated label `k8sapps.polycrate.io/name`; the annotation
 * wins), trimmed ("" when set but blank); undefined when it has neither.
 */
export function appNameOfPod(pod: KubeObject): string | undefined {
  const metadata = (pod as SlimPod).metadata
  const value = metadata.annotations?.[annotations.k8sAppName] ?? metadata.labels?.[deprecatedLabels.k8sAppName]
  return value === undefined ? undefined : String(value).trim()
}

export interface PodStatusSummary {
  pods_total: number
  pods_ready: number
  pods_available: number
  pods_unavailable: number
  pods_restart_count_total: number
  pods_restart_count_last_hour: number
  pods_details: Array<{name: string; phase: string; ready: boolean; restarts: number}>
  pods_status_hash: string
}

/**
 * The K8sApp pod status of these pods (pure; Job pods must be filtered out before). Decisions:
 * - total: pods not being deleted; ready: Ready condition True; available: Running and ready; unavailable: the rest;
 * - restarts: the sum of restartCount of all containers; last hour: containers whose last termination finished
 *   within the hour before `now` (Kubernetes keeps only the last one, so a container that restarted several times
 *   in the hour counts once);
 * - details: name, phase, ready, restarts per pod, sorted by name;
 * - hash: of everything above (the writer compares it with the last one it reported).
 */
export function podStatus(pods: readonly KubeObject[], now: number, hash: (value: unknown) => string): PodStatusSummary {
  const live = (pods as readonly SlimPod[]).filter((pod) => !pod.metadata.deletionTimestamp)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
  let ready = 0
  let available = 0
  let restarts = 0
  let lastHour = 0
  const details = live.map((pod) => {
    const podRestarts = (pod.status.containerStatuses ?? []).reduce((sum, c) => sum + (c.restartCount ?? 0), 0)
    for (const container of pod.status.containerStatuses ?? []) {
      const at = Date.parse(container.lastTerminatedAt ?? '')
      if (!Number.isNaN(at) && now - at <= 3_600_000 && now >= at) lastHour++
    }
    const isReady = pod.status.ready === true
    if (isReady) ready++
    if (isReady && pod.status.phase === 'Running') available++
    restarts += podRestarts
    return {name: pod.metadata.name, phase: pod.status.phase ?? 'Pending', ready: isReady, restarts: podRestarts}
  })
  const summary = {
    pods_total: live.length,
    pods_ready: ready,
    pods_available: available,
    pods_unavailable: live.length - available,
    pods_restart_count_total: restarts,
    pods_restart_count_last_hour: lastHour,
    pods_details: details,
  }
  return {...summary, pods_status_hash: hash(summary)}
}
