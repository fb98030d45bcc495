import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {freeForm, snakeSyncStatus} from './schema.js'

export const k8sVolumeSpec = z.object({
  name: z.string().optional().describe('Name of the volume in the API; the PersistentVolume name when absent.'),
  provider_object_name: z.string().optional().describe('Name of the PersistentVolume.'),
  provider_object_id: z.string().optional().describe('UID of the PersistentVolume.'),
  cloud_provider_volume_id: z.string().optional().describe('Volume ID of the storage backend (CSI volumeHandle).'),
  csi_driver: z.string().optional().describe('CSI driver of the volume.'),
  storage_class: z.string().optional().describe('StorageClass of the volume.'),
  capacity_bytes: z.number().int().optional().describe('Capacity in bytes.'),
  capacity_string: z.string().optional().describe('Capacity as Kubernetes quantity, e.g. 10Gi.'),
  phase: z.enum(['Bound', 'Released', 'Available', 'Failed', 'Pending', 'Unknown']).optional()
    .describe('Phase of the PersistentVolume.'),
  access_modes: z.array(z.string()).optional().describe('Access modes, e.g. ReadWriteOnce.'),
  volume_mode: z.enum(['Filesystem', 'Block']).optional().describe('Volume mode.'),
  reclaim_policy: z.enum(['Retain', 'Delete', 'Recycle']).optional().describe('Reclaim policy.'),
  pvc_name: z.string().optional().describe('Name of the bound PersistentVolumeClaim.'),
  pvc_namespace: z.string().optional().describe('Namespace of the bound claim; links the volume to a K8sApp.'),
  node_affinity: freeForm().optional().describe('Node affinity of the PersistentVolume, as is.'),
  source: z.object({
    pv_name: z.string().describe('Name of the PersistentVolume.'),
    pv_uid: z.string().optional().describe('UID of the PersistentVolume.'),
  }).optional().describe('The PersistentVolume this volume was discovered from.'),
})

export const k8sVolumeStatus = z.object({
  ...snakeSyncStatus,
  k8s_app_id: z.string().optional().describe('API ID of the K8sApp the volume belongs to (via pvc_namespace).'),
})

export type K8sVolumeSpec = z.infer<typeof k8sVolumeSpec>
export type K8sVolumeStatus = z.infer<typeof k8sVolumeStatus>

export const k8sVolumeCrd = defineCrd({
  ...crdNames.K8sVolume,
  statusStyle: 'snake',
  description: 'A PersistentVolume of the cluster; created automatically from PersistentVolumes.',
  spec: k8sVolumeSpec,
  status: k8sVolumeStatus,
  printerColumns: [
    {name: 'Capacity', type: 'string', jsonPath: '.spec.capacity_string'},
    {name: 'Storage Class', type: 'string', jsonPath: '.spec.storage_class'},
    {name: 'Claim', type: 'string', jsonPath: '.spec.pvc_name'},
    {name: 'PV Phase', type: 'string', jsonPath: '.spec.phase'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
