/**
 * Pods, slim (pure): what the operator reads of a pod — name, namespace, uid, labels, the annotations a caller names,
 * the controller owner's kind, container names and images, phase, the Ready fact, and per container image, imageID,
 * ready, restartCount and the last termination time — so 10,000 pods cost a few MB, not the hundreds a full PodSpec
 * (env, volumes, managedFields) would.
 */
import type {KubeObject} from './client.js'
import {isStatusConditionTrue} from './conditions.js'

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
    conditions?: Array<{type: string; status?: string}>
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

/** An informer transform: what the operator reads of a pod, nothing more; of its annotations only `keptAnnotations`. */
export function slimPod(object: KubeObject, keptAnnotations: readonly string[] = []): SlimPod {
  const pod = object as FullPod
  const metadata = pod.metadata ?? {}
  const kept = keptAnnotations.filter((key) => metadata.annotations?.[key] !== undefined)
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
      ...(kept.length > 0 ? {annotations: Object.fromEntries(kept.map((key) => [key, metadata.annotations![key]!]))} : {}),
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
      ...(isStatusConditionTrue(pod.status?.conditions, 'Ready') ? {ready: true} : {}),
      ...(pod.status?.containerStatuses ? {containerStatuses: pod.status.containerStatuses.map(slimStatus)} : {}),
      ...(pod.status?.initContainerStatuses ? {initContainerStatuses: pod.status.initContainerStatuses.map(slimStatus)} : {}),
    },
  }
}

/** Pods whose controller is a Job (and so CronJob pods too) are transient. */
export function isJobPod(pod: KubeObject): boolean {
  return (pod as SlimPod).metadata.ownerReferences?.some((owner) => owner.controller && owner.kind === 'Job') ?? false
}

/** A pod's containers with their images: init containers first, then the others. */
export function podContainers(pod: SlimPod): Array<{name: string; image?: string}> {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers]
}
