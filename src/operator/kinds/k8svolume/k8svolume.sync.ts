/**
 * K8sVolume sync (`K8sVolumeController`): every K8sVolume CR → a volume in the Polycrate API
 * (`/api/v1/kubernetes/volumes/`) with the cluster's id, as a declaration on the generic sync feature.
 * `k8s_app` is matched through the claim's namespace: the API K8sApp of this cluster whose namespace is the PVC's
 * (a block app before an external one, then by name); none found → left out (never unlinked).
 */
import type {K8sApp, K8sVolume, K8sVolumeRequest, PolycrateApiClient} from '../../../api/index.js'
import {k8sVolumeCrd, type K8sVolumeSpec} from '../../../crds/k8svolume.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {defineSync} from '../../sync/engine.js'
import {volumePayload} from './k8svolume.payload.js'

export function K8sVolumeController(session: ApiSession): Feature<OperatorConfig> {
  return defineSync<K8sVolumeSpec, K8sVolumeRequest, K8sVolume, {appId?: string}>(session, {
    name: 'volume-sync',
    crd: k8sVolumeCrd,
    finalizer: finalizers.k8sVolumeSync,
    noun: 'volume',
    api: (client) => client.k8sVolumes,
    requiresCluster: true,
    links: async (object, api, identity, signal) => ({appId: object.spec.pvc_namespace ? await appOfNamespace(api, identity.clusterId!, object.spec.pvc_namespace, signal) : undefined}),
    payload: (object, {identity, links}) => volumePayload(object.spec, identity.clusterId!, links.appId),
    lookup: (body, identity) => ({name_exact: body.name ?? '', k8s_cluster: identity.clusterId}),
    inventory: (identity) => ({k8s_cluster: identity.clusterId}),
  })
}

/** The API K8sApp running in `namespace` of this cluster (block apps before external ones, then by name). */
async function appOfNamespace(api: PolycrateApiClient, clusterId: string, namespace: string, signal: AbortSignal): Promise<string | undefined> {
  const candidates: K8sApp[] = []
  for await (const app of api.k8sApps.list({k8s_cluster: clusterId, search: namespace}, {signal})) {
    if (app.namespace === namespace && !app.is_deleted) candidates.push(app)
  }
  candidates.sort((a, b) => Number(a.kind === 'external') - Number(b.kind === 'external') || (a.name ?? '').localeCompare(b.name ?? ''))
  return candidates[0]?.id
}
