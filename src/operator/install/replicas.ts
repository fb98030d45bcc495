/**
 * What of the operator runs in a cluster: its Deployment, a line per Pod (image, the version its tag names, ready,
 * restarts), which one leads (the holder of the leader Lease) and the version the leader reported to the Polycrate
 * API (OperatorConfig status.agent.version). Read-only; `polycrate version` prints it.
 *
 * The Pods are found by the label every install gives them (app.kubernetes.io/name=polycrate-operator), in one
 * namespace or in all; a lease holder that is no Pod of the cluster (an `operator run` on a laptop) is named as such.
 */
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {LEADER_LEASE_NAME, LEADER_POD_LABEL, OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../conventions.js'

export const OPERATOR_POD_SELECTOR = `app.kubernetes.io/name=${OPERATOR_NAME}`

export interface OperatorReplica {
  pod: string
  node: string | null
  phase: string
  ready: boolean
  restarts: number
  image: string
  /** The tag of the image (`0.1.0`), null for an image named only by digest. */
  version: string | null
  /** The image the container runs as the kubelet resolved it (`…@sha256:…`), once it runs. */
  imageID: string | null
  leader: boolean
  /** RFC 3339, when the Pod was created. */
  createdAt: string | null
}

export interface OperatorLeader {
  /** The Lease's holderIdentity (`<hostname>_<uuid>`: in a Pod, the hostname is the Pod's name). */
  holder: string
  /** The Pod that holds it, or null: a process outside the cluster (or a Pod that is gone). */
  pod: string | null
  renewTime: string | null
  /** Renewed within its lease duration, as of `now`. */
  fresh: boolean
}

export interface OperatorInstance {
  namespace: string
  deployment: {name: string; desired: number; ready: number; updated: number; image: string | null} | null
  replicas: OperatorReplica[]
  leader: OperatorLeader | null
  /** What the leader reported to the Polycrate API as its version (OperatorConfig status.agent.version). */
  reportedVersion: string | null
}

interface PodObject extends KubeObject {
  spec?: {nodeName?: string; containers?: Array<{name?: string; image?: string}>}
  status?: {
    phase?: string
    conditions?: Array<{type?: string; status?: string}>
    containerStatuses?: Array<{name?: string; image?: string; imageID?: string; ready?: boolean; restartCount?: number}>
  }
}

interface LeaseObject extends KubeObject {
  spec?: {holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number}
}

interface DeploymentObject extends KubeObject {
  spec?: {replicas?: number; template?: {spec?: {containers?: Array<{name?: string; image?: string}>}}}
  status?: {readyReplicas?: number; updatedReplicas?: number}
}

/** The raw objects of one namespace, as read from the cluster. */
export interface NamespaceObjects {
  namespace: string
  pods: PodObject[]
  lease?: LeaseObject
  deployment?: DeploymentObject
  operatorConfig?: KubeObject & {status?: {agent?: {version?: string}}}
}

/**
 * The tag of an image reference: `registry:5000/library/polycrate:0.1.0@sha256:…` → `0.1.0`; null without a tag
 * (a digest alone, or nothing after the last slash but a name: `latest` is only the registry's default, not a version).
 */
export function imageVersion(image: string): string | null {
  const withoutDigest = image.split('@')[0]!
  const lastPart = withoutDigest.slice(withoutDigest.lastIndexOf('/') + 1)
  const colon = lastPart.lastIndexOf(':')
  return colon === -1 || colon === lastPart.length - 1 ? null : lastPart.slice(colon + 1)
}

/**
 * The Pod a lease holder identity names: the manager's identity is `<hostname>_<uuid>` and a Pod's hostname is its
 * name; else undefined.
 */
export function holderPod(holder: string, pods: readonly string[]): string | undefined {
  const hostname = holder.includes('_') ? holder.slice(0, holder.lastIndexOf('_')) : holder
  return pods.find((pod) => pod === hostname)
}

/** Renewed within leaseDurationSeconds (default 15, client-go's) before `now`. */
export function leaseFresh(lease: LeaseObject, now: number): boolean {
  const renewed = Date.parse(lease.spec?.renewTime ?? '')
  if (Number.isNaN(renewed)) return false
  return now - renewed <= (lease.spec?.leaseDurationSeconds ?? 15) * 1000
}

const operatorContainer = <T extends {name?: string}>(containers: readonly T[] | undefined): T | undefined =>
  containers?.find((container) => container.name === 'operator') ?? containers?.[0]

/** One namespace's objects → what runs there (undefined when nothing of the operator is there). */
export function operatorInstance(objects: NamespaceObjects, now: number): OperatorInstance | undefined {
  const {namespace, pods, lease, deployment} = objects
  const holder = lease?.spec?.holderIdentity ?? ''
  if (pods.length === 0 && !deployment && holder === '') return undefined
  const names = pods.map((pod) => pod.metadata?.name ?? '')
  const leaderPod = holder === '' ? undefined : holderPod(holder, names)
  const replicas = pods.map((pod): OperatorReplica => {
    const name = pod.metadata?.name ?? ''
    const container = operatorContainer(pod.spec?.containers)
    const status = pod.status?.containerStatuses?.find((entry) => entry.name === container?.name)
    const image = container?.image ?? status?.image ?? ''
    return {
      pod: name,
      node: pod.spec?.nodeName ?? null,
      phase: pod.status?.phase ?? 'Unknown',
      ready: pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ?? false,
      restarts: status?.restartCount ?? 0,
      image,
      version: imageVersion(image),
      imageID: status?.imageID || null,
      // The lease says who leads; without a lease holder, the Pod label the leader keeps (polycrate.io/leader).
      leader: leaderPod !== undefined ? name === leaderPod : holder === '' && pod.metadata?.labels?.[LEADER_POD_LABEL] === 'true',
      createdAt: (pod.metadata?.creationTimestamp as string | undefined) ?? null,
    }
  }).sort((a, b) => a.pod.localeCompare(b.pod))
  const template = operatorContainer(deployment?.spec?.template?.spec?.containers)
  return {
    namespace,
    deployment: deployment
      ? {
        name: deployment.metadata?.name ?? OPERATOR_NAME,
        desired: deployment.spec?.replicas ?? 1,
        ready: deployment.status?.readyReplicas ?? 0,
        updated: deployment.status?.updatedReplicas ?? 0,
        image: template?.image ?? null,
      }
      : null,
    replicas,
    leader: holder === '' ? null : {holder, pod: leaderPod ?? null, renewTime: lease?.spec?.renewTime ?? null, fresh: leaseFresh(lease!, now)},
    reportedVersion: objects.operatorConfig?.status?.agent?.version ?? null,
  }
}

/**
 * Reads what of the operator runs: the Pods labelled as the operator's in `namespace` (in every namespace when
 * undefined), and in each of their namespaces and in `defaultNamespace` the Deployment, the leader Lease and the
 * OperatorConfig. One entry per namespace where something of the operator is, in name order.
 */
export async function readOperatorInstances(client: KubeClient, options: {namespace?: string; defaultNamespace: string; now: number}): Promise<OperatorInstance[]> {
  const podsPath = options.namespace ? `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods` : '/api/v1/pods'
  const list = await client.request<{items?: PodObject[]}>({path: podsPath, query: {labelSelector: OPERATOR_POD_SELECTOR}})
  const byNamespace = new Map<string, PodObject[]>([[options.namespace ?? options.defaultNamespace, []]])
  for (const pod of list.items ?? []) {
    const namespace = pod.metadata?.namespace ?? ''
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), pod])
  }
  const instances = await Promise.all([...byNamespace].map(async ([namespace, pods]) => {
    const [lease, deployment, operatorConfig] = await Promise.all([
      client.getOrUndefined<LeaseObject>({group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace, name: LEADER_LEASE_NAME}),
      client.getOrUndefined<DeploymentObject>({group: 'apps', version: 'v1', plural: 'deployments', namespace, name: OPERATOR_NAME}),
      // 404 also when the CRD is not installed.
      client.getOrUndefined<NonNullable<NamespaceObjects['operatorConfig']>>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: OPERATOR_CONFIG_NAME}),
    ])
    return operatorInstance({namespace, pods, lease, deployment, operatorConfig}, options.now)
  }))
  return instances.filter((instance) => instance !== undefined).sort((a, b) => a.namespace.localeCompare(b.namespace))
}
