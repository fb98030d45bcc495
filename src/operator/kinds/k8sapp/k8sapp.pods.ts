/** The K8sApp pod status: what K8sApp sync and the pod status controller report of an app's pods (pure). */
import type {KubeObject} from '../../../kube/client.js'
import type {SlimPod} from '../../../kube/pods.js'

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
