/**
 * Volume discovery (pure): a PersistentVolume → the K8sVolume CR the operator keeps for it (the API's
 * K8SVolumeRequest). No I/O, no clock: the same PV always gives the same result.
 *
 * Mapping and the decisions where the operator reference is silent:
 * - CR name = the PV name (a DNS subdomain, so a valid CR name; the CR lives in the operator's namespace). A PV
 *   without a name gives no volume and a `MissingName` problem.
 * - `name` = `apiSlug(PV name)` (the same slug rule as hosts, lib/api-names.ts); `provider_object_name` = the PV name;
 *   `provider_object_id` = its uid.
 * - `csi_driver` = `spec.csi.driver`; `cloud_provider_volume_id` = `spec.csi.volumeHandle`, or for the in-tree
 *   sources `awsElasticBlockStore.volumeID`, `gcePersistentDisk.pdName`, `azureDisk.diskURI`, `cinder.volumeID`.
 *   In-tree sources get no `csi_driver` (the PV names none, and the operator does not guess the migration driver).
 *   hostPath, local, nfs and every other source have no backend volume id: both fields absent, no problem.
 * - `storage_class` = `spec.storageClassName`; "" (explicitly no class) → absent.
 * - `capacity_string` = `spec.capacity.storage` as written ("" → absent); `capacity_bytes` = its value rounded
 *   down. A capacity that does not parse, is negative or is beyond a safe integer → `capacity_bytes` absent and an
 *   `InvalidVolumeCapacity` problem (`capacity_string` is kept: it is what the PV says). No capacity → both absent,
 *   no problem.
 * - `phase` = `status.phase` when it is Bound, Released, Available, Failed or Pending. No status / no phase →
 *   `Pending` (a PV the API server has just created has no status yet). Any other value → `Unknown` and an
 *   `UnknownVolumePhase` problem (Kubernetes defines no other phase, so somebody should look).
 * - `access_modes` = a copy of `spec.accessModes` (absent when absent).
 * - `volume_mode` = `spec.volumeMode`, absent → `Filesystem` (Kubernetes' default); an unknown value → `Filesystem`
 *   and an `InvalidVolumeMode` problem.
 * - `reclaim_policy` = `spec.persistentVolumeReclaimPolicy`, absent → `Retain` (Kubernetes' default for manually
 *   created PVs; dynamically provisioned PVs always carry their StorageClass' policy); an unknown value → absent and
 *   an `InvalidReclaimPolicy` problem.
 * - `pvc_name` / `pvc_namespace` from `spec.claimRef` (each only when set: a claimRef may pre-bind by name only).
 * - `node_affinity` = `spec.nodeAffinity` as is, copied as plain JSON (undefined keys dropped, so a typed
 *   @kubernetes/client-node object and the API server's read-back compare equal).
 * - `source` = {pv_name, pv_uid} (pv_uid only when the PV has one).
 * - Keys whose value would be undefined are left out of the spec.
 */
import type {K8sVolumeSpec} from '../../../crds/k8svolume.js'
import {parseQuantity} from '../../../lib/quantity.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'
import {commonProblemReasons, type DiscoveryProblem} from '../../discovery/types.js'

export const volumeProblemReasons = {
  missingName: commonProblemReasons.missingName,
  invalidVolumeCapacity: 'InvalidVolumeCapacity',
  unknownVolumePhase: 'UnknownVolumePhase',
  invalidVolumeMode: 'InvalidVolumeMode',
  invalidReclaimPolicy: 'InvalidReclaimPolicy',
} as const

/** Only the fields volume discovery reads; plain API JSON and @kubernetes/client-node's V1PersistentVolume both fit. */
export interface PersistentVolumeLike {
  metadata?: {
    name?: string
    uid?: string
  }
  spec?: {
    capacity?: Readonly<Record<string, string>>
    accessModes?: readonly string[]
    volumeMode?: string
    persistentVolumeReclaimPolicy?: string
    storageClassName?: string
    claimRef?: {name?: string; namespace?: string}
    nodeAffinity?: object
    csi?: {driver?: string; volumeHandle?: string}
    awsElasticBlockStore?: {volumeID?: string}
    gcePersistentDisk?: {pdName?: string}
    azureDisk?: {diskURI?: string}
    cinder?: {volumeID?: string}
  }
  status?: {
    phase?: string
  }
}

export interface DesiredVolume {
  /** CR name: the PV name. */
  name: string
  spec: K8sVolumeSpec
}

export interface VolumeDiscoveryResult {
  volume?: DesiredVolume
  problems: DiscoveryProblem[]
}

type Phase = NonNullable<K8sVolumeSpec['phase']>
type VolumeMode = NonNullable<K8sVolumeSpec['volume_mode']>
type ReclaimPolicy = NonNullable<K8sVolumeSpec['reclaim_policy']>

const phases: readonly Phase[] = ['Bound', 'Released', 'Available', 'Failed', 'Pending']
const volumeModes: readonly VolumeMode[] = ['Filesystem', 'Block']
const reclaimPolicies: readonly ReclaimPolicy[] = ['Retain', 'Delete', 'Recycle']

const isOneOf = <T extends string>(values: readonly T[], value: string): value is T => (values as readonly string[]).includes(value)

/** The K8sVolume CR for a PersistentVolume, with the problems found on the way. */
export function volumeForPersistentVolume(pv: PersistentVolumeLike): VolumeDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const pvName = pv.metadata?.name
  if (!pvName) {
    problems.push({
      reason: volumeProblemReasons.missingName,
      message: 'The PersistentVolume has no metadata.name: there is nothing to name the K8sVolume after, so none is created for it.',
    })
    return {problems}
  }
  const spec = pv.spec ?? {}
  const uid = pv.metadata?.uid
  const capacity = spec.capacity?.storage

  const volume: K8sVolumeSpec = withoutUndefined({
    name: apiSlug(pvName),
    provider_object_name: pvName,
    provider_object_id: uid || undefined,
    cloud_provider_volume_id: backendVolumeId(spec) || undefined,
    csi_driver: spec.csi?.driver || undefined,
    storage_class: spec.storageClassName || undefined,
    capacity_bytes: capacityBytes(pvName, capacity, problems),
    capacity_string: capacity || undefined,
    phase: phase(pvName, pv.status?.phase, problems),
    access_modes: spec.accessModes ? [...spec.accessModes] : undefined,
    volume_mode: volumeMode(pvName, spec.volumeMode, problems),
    reclaim_policy: reclaimPolicy(pvName, spec.persistentVolumeReclaimPolicy, problems),
    pvc_name: spec.claimRef?.name || undefined,
    pvc_namespace: spec.claimRef?.namespace || undefined,
    node_affinity: spec.nodeAffinity ? plainJson(spec.nodeAffinity) as Record<string, unknown> : undefined,
    source: uid ? {pv_name: pvName, pv_uid: uid} : {pv_name: pvName},
  })
  return {volume: {name: pvName, spec: volume}, problems}
}

function backendVolumeId(spec: NonNullable<PersistentVolumeLike['spec']>): string | undefined {
  return spec.csi?.volumeHandle
    ?? spec.awsElasticBlockStore?.volumeID
    ?? spec.gcePersistentDisk?.pdName
    ?? spec.azureDisk?.diskURI
    ?? spec.cinder?.volumeID
}

function capacityBytes(pvName: string, capacity: string | undefined, problems: DiscoveryProblem[]): number | undefined {
  if (capacity === undefined || capacity === null) return undefined
  const value = parseQuantity(String(capacity))
  const bytes = value === undefined ? undefined : Math.floor(value)
  if (bytes !== undefined && bytes >= 0 && Number.isSafeInteger(bytes)) return bytes
  problems.push({
    reason: volumeProblemReasons.invalidVolumeCapacity,
    message: `PersistentVolume "${pvName}": spec.capacity.storage "${String(capacity)}" is not a non-negative Kubernetes quantity `
      + 'such as "10Gi" or "500M" (within 2^53 bytes); capacity_bytes is left out.',
  })
  return undefined
}

function phase(pvName: string, value: string | undefined, problems: DiscoveryProblem[]): Phase {
  if (!value) return 'Pending'
  if (isOneOf(phases, value)) return value
  problems.push({
    reason: volumeProblemReasons.unknownVolumePhase,
    message: `PersistentVolume "${pvName}": status.phase "${value}" is not one of ${phases.join(', ')}; it is reported as Unknown.`,
  })
  return 'Unknown'
}

function volumeMode(pvName: string, value: string | undefined, problems: DiscoveryProblem[]): VolumeMode {
  if (!value) return 'Filesystem'
  if (isOneOf(volumeModes, value)) return value
  problems.push({
    reason: volumeProblemReasons.invalidVolumeMode,
    message: `PersistentVolume "${pvName}": spec.volumeMode "${value}" is not Filesystem or Block; it is reported as Filesystem.`,
  })
  return 'Filesystem'
}

function reclaimPolicy(pvName: string, value: string | undefined, problems: DiscoveryProblem[]): ReclaimPolicy | undefined {
  if (!value) return 'Retain'
  if (isOneOf(reclaimPolicies, value)) return value
  problems.push({
    reason: volumeProblemReasons.invalidReclaimPolicy,
    message: `PersistentVolume "${pvName}": spec.persistentVolumeReclaimPolicy "${value}" is not one of ${reclaimPolicies.join(', ')}; `
      + 'reclaim_policy is left out.',
  })
  return undefined
}

/** A deep copy as plain JSON data: class instances become plain objects, undefined keys are dropped, Dates → ISO. */
function plainJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : plainJson(item)))
  if (value instanceof Date) return value.toISOString()
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, plainJson(v)]))
  }
  return value
}
