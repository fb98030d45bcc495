/**
 * K8sVolume sync (`K8sVolumeController`): every K8sVolume CR → a volume in the Polycrate API
 * (`/api/v1/kubernetes/volumes/`) with the cluster's id, as a declaration on the generic sync feature.
 * `k8s_app` (matched through the claim's namespace) is left to the K8sApp sync: `volumePayload` takes the id once
 * a `links` lookup provides it.
 */
import type {K8sVolume, K8sVolumeRequest} from '../../api/index.js'
import {k8sVolumeCrd, type K8sVolumeSpec} from '../../crds/k8s-volume.js'
import type {ApiSession} from '../agent/api-session.js'
import {finalizers} from '../conventions.js'
import type {Feature} from '../features.js'
import {defineSync} from './sync-feature.js'
import {volumePayload} from './volume-payload.js'

export function K8sVolumeController(session: ApiSession): Feature {
  return defineSync<K8sVolumeSpec, K8sVolumeRequest, K8sVolume>(session, {
    name: 'volume-sync',
    crd: k8sVolumeCrd,
    finalizer: finalizers.k8sVolumeSync,
    noun: 'volume',
    api: (client) => client.k8sVolumes,
    requiresCluster: true,
    payload: (object, {identity}) => volumePayload(object.spec, identity.clusterId!),
    lookup: (body, identity) => ({name_exact: body.name ?? '', k8s_cluster: identity.clusterId}),
    inventory: (identity) => ({k8s_cluster: identity.clusterId}),
  })
}
