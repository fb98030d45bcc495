/**
 * The K8sApp pod status (Job and CronJob pods excluded): the pods of each synced K8sApp →
 * `pods_total`, `pods_ready`, `pods_available`, `pods_unavailable`, `pods_restart_count_total`,
 * `pods_restart_count_last_hour`, `pods_details`, `pods_status_hash`, `pods_status_updated_at` of its API K8sApp,
 * and the same figures (without the details) in the CR's status.
 *
 * Which pods: a secret-based (or hand-made) app counts every pod of its namespace; an annotation-based one
 * (external: pod, ingress or httproute sourced) only the pods whose `polycrate_k8sapp_name` is its name. Pods
 * controlled by a Job (so CronJob pods too) never count.
 *
 * A pod churn storm is no API write storm: the API is written only when the status hash differs from the one last
 * reported (`status.pods_status_hash`), and at most once per app per `api_sync.sync_interval_seconds` window
 * (measured from `status.pods_status_updated_at`, so a restart keeps the window); a change inside the window is
 * written when it ends, with the state of then. The pod cache is the shared slim-pod informer.
 */
import {API_VERSION, crdResource, type CustomObject} from '../../../crds/define.js'
import {k8sAppCrd, type K8sAppSpec, type K8sAppStatus} from '../../../crds/k8sapp.js'
import {KubeApiError, type KubeClient, type KubeObject, type ResourceRef} from '../../../kube/client.js'
import type {ApiSession} from '../../agent/api-session.js'
import {isJobPod} from '../../../kube/pods.js'
import {appNameOfPod, podsRequest} from '../../app-pods.js'
import {podStatus} from './k8sapp.pods.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {READ} from '../../permissions.js'
import type {ReconcileContext} from '../../runtime/controller.js'
import {configHash} from '../../sync/hash.js'
import {objectRef} from '../../../kube/resources.js'

type AppObject = CustomObject<K8sAppSpec, K8sAppStatus>

/** Whether `pod` counts for `app` (pure). */
export function podCountsFor(app: AppObject, pod: KubeObject): boolean {
  if (isJobPod(pod) || pod.metadata?.namespace !== app.metadata.namespace) return false
  const external = app.spec?.kind === 'external' || (app.spec?.source !== undefined && app.spec.source.kind !== 'Secret')
  return !external || appNameOfPod(pod) === (app.spec?.name ?? app.metadata.name)
}

/**
 * The pod figures into the K8sApp's status. A K8sApp gone meanwhile (deleted while its API report was in flight: the
 * app's last pods went with it) has nothing left to record: done, not a failure.
 */
export async function writePodStatus(client: Pick<KubeClient, 'mergePatch'>, ref: ResourceRef, status: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
  try {
    await client.mergePatch(ref, {apiVersion: API_VERSION, kind: k8sAppCrd.kind, status}, {signal})
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error
  }
}

export function K8sAppPodStatusController(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'k8sapp-pod-status',
    enabled: (config) => config.api_sync.enabled && config.app_discovery.enabled,
    permissions: [
      {group: 'polycrate.io', resource: k8sAppCrd.plural, verbs: READ},
      {group: 'polycrate.io', resource: `${k8sAppCrd.plural}/status`, verbs: ['patch']},
      {group: '', resource: 'pods', verbs: READ},
    ],
    settings: (config) => ({windowSeconds: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const windowMs = config.api_sync.sync_interval_seconds * 1000
      const resource = crdResource(k8sAppCrd)
      const builder = manager.controller('k8sapp-pod-status')
      const apps = builder.for<AppObject>({resource, kind: k8sAppCrd.kind})
      const pods = builder.watches(podsRequest, (pod) => {
        const namespace = pod.metadata?.namespace
        return namespace ? apps.cache.listNamespace(namespace).filter((app) => podCountsFor(app, pod)).map((app) => `${namespace}/${app.metadata.name}`) : []
      })

      /** What this process reported last per app (a failed write still counts for the window, not for the hash). */
      const reportedByKey = new Map<string, {at: number; hash?: string}>()
      const reconcile = async ({key, signal, logger}: ReconcileContext) => {
        const app = apps.cache.get(key)
        const api = session.client
        const id = app?.status?.api_id
        if (!app || app.metadata.deletionTimestamp || !id || !api) {
          if (!app) reportedByKey.delete(key)
          return // the api_id arriving (a status update) requeues it
        }
        const now = manager.clock.now()
        const mine = pods.cache.listNamespace(app.metadata.namespace ?? '').filter((pod) => podCountsFor(app, pod))
        const summary = podStatus(mine, now, configHash)
        // The last report: this process' own (the cache may not show its status write yet), else the CR's.
        const fromStatus = {at: Date.parse(app.status?.pods_status_updated_at ?? ''), hash: app.status?.pods_status_hash}
        const memo = reportedByKey.get(key)
        const last = memo && !(memo.at < fromStatus.at) ? memo : fromStatus
        if (summary.pods_status_hash === last.hash) return
        if (!Number.isNaN(last.at) && now - last.at < windowMs) return {requeueAfterMs: last.at + windowMs - now}
        const at = new Date(now).toISOString()
        reportedByKey.set(key, {at: now, hash: summary.pods_status_hash})
        try {
          await api.k8sApps.update(id, {...summary, pods_status_updated_at: at}, {signal})
        } catch (error) {
          reportedByKey.set(key, {at: now}) // the window stays open, the state is written again after it
          throw error
        }
        const {pods_details: _details, ...figures} = summary
        await writePodStatus(manager.client, objectRef(resource, app, 'status'), {...figures, pods_status_updated_at: at}, signal)
        logger.debug('pod status reported', {app: key, pods: summary.pods_total, ready: summary.pods_ready})
        return undefined
      }
      const running = builder.complete(reconcile)
      return session.resyncing(running)
    },
  }
}
