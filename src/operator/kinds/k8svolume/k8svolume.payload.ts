/**
 * What a K8sVolume CR becomes in the Polycrate API (pure): the K8sVolumeRequest body.
 *
 * Decisions:
 * - Every spec field the API knows is copied when set (name, provider_object_name/id, cloud_provider_volume_id,
 *   csi_driver, storage_class, capacity_bytes/string, phase, access_modes, volume_mode, reclaim_policy,
 *   pvc_name/namespace, node_affinity). `source` is never sent.
 * - A field the spec does not have is sent as null where the K8sVolumeRequest type allows null — access_modes and
 *   node_affinity (typed `any`) — and as "" for the free-text fields a PV can lose or never have (csi_driver,
 *   cloud_provider_volume_id, storage_class, pvc_name, pvc_namespace: blank, not null, in the contract), so an
 *   update (PATCH) clears what the PV lost (e.g. the claim after the claimRef is removed). capacity, phase,
 *   volume_mode, reclaim_policy and provider_object_name/id always have a value for a discovered PV.
 * - `name`: the spec's name when the API accepts it as a slug (`^[-a-zA-Z0-9_]+$`, ≤ 63 characters), else its
 *   `apiSlug`; a hand-written CR without `name` gets the slug of `provider_object_name` (else `source.pv_name`), as
 *   the CRD documents ("the PersistentVolume name when absent"); with neither, `name` is left out (it is optional).
 * - `k8s_cluster` = the cluster's API id; `k8s_app` only when the caller resolved one (via pvc_namespace) — an
 *   unknown app is left out rather than sent as null, so it never unlinks an app another controller set;
 *   `created_by_component: 'operator'`.
 * - Arrays and node_affinity are copied, so the body shares no objects with the CR.
 */
import type {K8sVolumeRequest} from '../../../api/requests.js'
import type {K8sVolumeSpec} from '../../../crds/k8svolume.js'
import {apiSlug, isApiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'

export function volumePayload(spec: K8sVolumeSpec, clusterId: string, k8sAppId?: string): K8sVolumeRequest {
  return withoutUndefined<K8sVolumeRequest>({
    name: volumeName(spec),
    provider_object_name: spec.provider_object_name,
    provider_object_id: spec.provider_object_id,
    cloud_provider_volume_id: spec.cloud_provider_volume_id ?? '',
    csi_driver: spec.csi_driver ?? '',
    storage_class: spec.storage_class ?? '',
    capacity_bytes: spec.capacity_bytes,
    capacity_string: spec.capacity_string,
    phase: spec.phase,
    access_modes: spec.access_modes ? [...spec.access_modes] : null,
    volume_mode: spec.volume_mode,
    reclaim_policy: spec.reclaim_policy,
    pvc_name: spec.pvc_name ?? '',
    pvc_namespace: spec.pvc_namespace ?? '',
    node_affinity: spec.node_affinity ? structuredClone(spec.node_affinity) : null,
    k8s_cluster: clusterId,
    k8s_app: k8sAppId || undefined,
    created_by_component: 'operator',
  })
}

function volumeName(spec: K8sVolumeSpec): string | undefined {
  if (spec.name) return isApiSlug(spec.name) ? spec.name : apiSlug(spec.name)
  const pvName = spec.provider_object_name || spec.source?.pv_name
  return pvName ? apiSlug(pvName) : undefined
}
