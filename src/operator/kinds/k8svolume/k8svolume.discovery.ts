/**
 * K8sVolume discovery (`K8sVolumeDiscoveryReconciler`): every PersistentVolume → a K8sVolume CR of the PV's name in
 * the operator's namespace, as a declaration on the generic discovery feature. The mapping is the pure
 * `volumeForPersistentVolume` (k8svolume.mapping.ts). Like Nodes, PVs carry no finalizer of ours; the K8sVolume's owner
 * reference to its PV lets the garbage collector remove it too.
 */
import {k8sVolumeCrd, type K8sVolumeSpec} from '../../../crds/k8svolume.js'
import type {KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import {finalizers} from '../../conventions.js'
import {DEFAULT_SWEEP_MINUTES, defineDiscovery} from '../../discovery/engine.js'
import {desiredOfOneSource, type DesiredState} from '../../discovery/plan.js'
import {volumeForPersistentVolume, type PersistentVolumeLike} from './k8svolume.mapping.js'


/** Only what volume discovery reads (no managedFields, annotations or status timestamps). */
export function slimPersistentVolume(pv: KubeObject): KubeObject {
  const p = pv as KubeObject & PersistentVolumeLike & {metadata: {deletionTimestamp?: string}}
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: p.metadata?.name,
      uid: p.metadata?.uid,
      resourceVersion: p.metadata?.resourceVersion,
      ...(p.metadata?.deletionTimestamp ? {deletionTimestamp: p.metadata.deletionTimestamp} : {}),
    },
    spec: p.spec,
    status: {phase: p.status?.phase},
  } as KubeObject
}

/** The K8sVolume CR of one PersistentVolume (pure). */
export function desiredVolume(pvName: string, pv: KubeObject | undefined, namespace: string): DesiredState {
  return desiredOfOneSource({kind: 'PersistentVolume', apiVersion: 'v1', name: pvName, object: pv}, namespace, (object) => {
    const {volume, problems} = volumeForPersistentVolume(object as PersistentVolumeLike)
    return {cr: volume, problems}
  })
}

const pvNameOf = (volume: {metadata: {name: string}; spec?: unknown}) => (volume.spec as K8sVolumeSpec | undefined)?.source?.pv_name ?? volume.metadata.name

export const K8sVolumeDiscoveryReconciler = defineDiscovery<Record<string, never>>({
  name: 'volume-discovery',
  target: k8sVolumeCrd,
  targetNamespace: (namespace) => namespace,
  enabled: (config) => config.volume_discovery.enabled,
  settings: () => ({}),
  staleCleanupMinutes: () => DEFAULT_SWEEP_MINUTES,
  sources: () => [{
    id: 'pv',
    kind: 'PersistentVolume',
    apiVersion: 'v1',
    request: {resource: resources.persistentVolumes, kind: 'PersistentVolume', transform: slimPersistentVolume},
    groupsOf: (pv) => [pv.metadata?.name ?? ''],
  }],
  targetGroup: pvNameOf,
  targetSource: (volume) => ({kind: 'PersistentVolume', apiVersion: 'v1', name: pvNameOf(volume)}),
  desired: (pvName, caches, _settings, {namespace}) => desiredVolume(pvName, caches.get('pv', pvName), namespace),
  syncFinalizer: finalizers.k8sVolumeSync,
})
