import assert from 'node:assert/strict'
import type {V1PersistentVolume} from '@kubernetes/client-node'
import {k8sVolumeSpec, type K8sVolumeSpec} from '../../../../src/crds/k8svolume.js'
import type {DiscoveryProblem} from '../../../../src/operator/discovery/types.js'
import {
  volumeForPersistentVolume,
  type PersistentVolumeLike,
  type VolumeDiscoveryResult,
} from '../../../../src/operator/kinds/k8svolume/k8svolume.mapping.js'
import {volumePayload} from '../../../../src/operator/kinds/k8svolume/k8svolume.payload.js'
import {sha8, checkedSpec, checkedProblems, checkedDnsLabel} from '../../../support/helpers.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

const PV = 'pvc-0a1b2c3d-4e5f-6789-abcd-ef0123456789'

const affinity = {
  required: {nodeSelectorTerms: [{matchExpressions: [{key: 'csi.hetzner.cloud/location', operator: 'In', values: ['fsn1']}]}]},
}

/** A dynamically provisioned, bound CSI volume (as the API server returns it). */
const baseSpec: Record<string, unknown> = {
  capacity: {storage: '10Gi'},
  accessModes: ['ReadWriteOnce'],
  persistentVolumeReclaimPolicy: 'Delete',
  storageClassName: 'hcloud-volumes',
  volumeMode: 'Filesystem',
  claimRef: {kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'shop', name: 'data-postgres-0', uid: 'uid-pvc'},
  csi: {driver: 'csi.hetzner.cloud', volumeHandle: '100234567', fsType: 'ext4'},
  nodeAffinity: affinity,
}

/**
 * The base PV with `spec` keys replaced (a key set to undefined is removed); `status` null drops the status,
 * `metadata` replaces the metadata.
 */
function pv(
  spec: Record<string, unknown> = {},
  status: {phase?: string} | null = {phase: 'Bound'},
  metadata: {name?: string; uid?: string} = {name: PV, uid: 'uid-pv'},
): PersistentVolumeLike {
  const merged = Object.fromEntries(Object.entries({...structuredClone(baseSpec), ...spec}).filter(([, v]) => v !== undefined))
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata,
    spec: merged,
    ...(status ? {status} : {}),
  } as PersistentVolumeLike
}

/** The spec of the base PV, with changes; `remove` drops fields. */
function spec(overrides: Partial<K8sVolumeSpec> = {}, remove: Array<keyof K8sVolumeSpec> = []): K8sVolumeSpec {
  const full: K8sVolumeSpec = {
    name: PV,
    provider_object_name: PV,
    provider_object_id: 'uid-pv',
    cloud_provider_volume_id: '100234567',
    csi_driver: 'csi.hetzner.cloud',
    storage_class: 'hcloud-volumes',
    capacity_bytes: 10737418240,
    capacity_string: '10Gi',
    phase: 'Bound',
    access_modes: ['ReadWriteOnce'],
    volume_mode: 'Filesystem',
    reclaim_policy: 'Delete',
    pvc_name: 'data-postgres-0',
    pvc_namespace: 'shop',
    node_affinity: affinity,
    source: {pv_name: PV, pv_uid: 'uid-pv'},
    ...overrides,
  }
  for (const key of remove) delete full[key]
  return full
}

const inTree = {csi: undefined, nodeAffinity: undefined}
const noBackend: Array<keyof K8sVolumeSpec> = ['csi_driver', 'cloud_provider_volume_id', 'node_affinity']

const capacityProblem = (value: string, name = PV): DiscoveryProblem => ({
  reason: 'InvalidVolumeCapacity',
  message: `PersistentVolume "${name}": spec.capacity.storage "${value}" is not a non-negative Kubernetes quantity such as "10Gi" or "500M" (within 2^53 bytes); capacity_bytes is left out.`,
})


function checked(result: VolumeDiscoveryResult): VolumeDiscoveryResult {
  if (result.volume) {
    checkedSpec(k8sVolumeSpec, result.volume.spec)
    checkedDnsLabel(result.volume.spec.name)
  }
  checkedProblems(result.problems)
  return result
}

const longName = `local-pv-${'0123456789abcdef'.repeat(4)}-node-worker-1`

// ---------------------------------------------------------------------------------------------------------------

describe('volume discovery (pure)', () => {
  describe('volumeForPersistentVolume', () => {
    const cases: Array<{name: string; pv: PersistentVolumeLike; expected: VolumeDiscoveryResult}> = [
      {
        name: 'a bound CSI volume: every field',
        pv: pv(),
        expected: {volume: {name: PV, spec: spec()}, problems: []},
      },
      {
        name: 'hostPath without CSI: no driver, no backend id (documented), Retain by default',
        pv: pv({...inTree, hostPath: {path: '/mnt/data', type: 'DirectoryOrCreate'}, persistentVolumeReclaimPolicy: undefined, storageClassName: 'manual'}),
        expected: {volume: {name: PV, spec: spec({storage_class: 'manual', reclaim_policy: 'Retain'}, noBackend)}, problems: []},
      },
      {
        name: 'local volume with node affinity: affinity kept, no backend id',
        pv: pv({csi: undefined, local: {path: '/mnt/disks/ssd1'}, storageClassName: 'local-storage'}),
        expected: {volume: {name: PV, spec: spec({storage_class: 'local-storage'}, ['csi_driver', 'cloud_provider_volume_id'])}, problems: []},
      },
      {
        name: 'nfs: no backend id',
        pv: pv({...inTree, nfs: {server: 'nfs.example.com', path: '/exports/a'}, accessModes: ['ReadWriteMany', 'ReadOnlyMany']}),
        expected: {volume: {name: PV, spec: spec({access_modes: ['ReadWriteMany', 'ReadOnlyMany']}, noBackend)}, problems: []},
      },
      {
        name: 'in-tree AWS EBS: the volumeID, no CSI driver',
        pv: pv({...inTree, awsElasticBlockStore: {volumeID: 'aws://eu-central-1a/vol-0abc123', fsType: 'ext4'}, storageClassName: 'gp2'}),
        expected: {
          volume: {name: PV, spec: spec({cloud_provider_volume_id: 'aws://eu-central-1a/vol-0abc123', storage_class: 'gp2'}, ['csi_driver', 'node_affinity'])},
          problems: [],
        },
      },
      {
        name: 'in-tree GCE PD: the pdName',
        pv: pv({...inTree, gcePersistentDisk: {pdName: 'gke-disk-1'}, storageClassName: 'standard'}),
        expected: {
          volume: {name: PV, spec: spec({cloud_provider_volume_id: 'gke-disk-1', storage_class: 'standard'}, ['csi_driver', 'node_affinity'])},
          problems: [],
        },
      },
      {
        name: 'in-tree Azure disk: the diskURI',
        pv: pv({...inTree, azureDisk: {diskName: 'd1', diskURI: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d1'}}),
        expected: {
          volume: {name: PV, spec: spec({cloud_provider_volume_id: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d1'}, ['csi_driver', 'node_affinity'])},
          problems: [],
        },
      },
      {
        name: 'in-tree Cinder: the volumeID',
        pv: pv({...inTree, cinder: {volumeID: 'c0ffee'}}),
        expected: {volume: {name: PV, spec: spec({cloud_provider_volume_id: 'c0ffee'}, ['csi_driver', 'node_affinity'])}, problems: []},
      },
      {
        name: 'no claimRef (Available): no pvc fields',
        pv: pv({claimRef: undefined}, {phase: 'Available'}),
        expected: {volume: {name: PV, spec: spec({phase: 'Available'}, ['pvc_name', 'pvc_namespace'])}, problems: []},
      },
      {
        name: 'a claimRef that pre-binds by name only: pvc_name without namespace',
        pv: pv({claimRef: {name: 'data'}}, {phase: 'Available'}),
        expected: {volume: {name: PV, spec: spec({phase: 'Available', pvc_name: 'data'}, ['pvc_namespace'])}, problems: []},
      },
      {
        name: 'Released is kept',
        pv: pv({}, {phase: 'Released'}),
        expected: {volume: {name: PV, spec: spec({phase: 'Released'})}, problems: []},
      },
      {
        name: 'Failed is kept',
        pv: pv({}, {phase: 'Failed'}),
        expected: {volume: {name: PV, spec: spec({phase: 'Failed'})}, problems: []},
      },
      {
        name: 'an unknown phase → Unknown, with a problem',
        pv: pv({}, {phase: 'Lost'}),
        expected: {
          volume: {name: PV, spec: spec({phase: 'Unknown'})},
          problems: [{
            reason: 'UnknownVolumePhase',
            message: `PersistentVolume "${PV}": status.phase "Lost" is not one of Bound, Released, Available, Failed, Pending; it is reported as Unknown.`,
          }],
        },
      },
      {
        name: 'no status (just created) → Pending',
        pv: pv({}, null),
        expected: {volume: {name: PV, spec: spec({phase: 'Pending'})}, problems: []},
      },
      {
        name: 'a status without phase → Pending',
        pv: pv({}, {}),
        expected: {volume: {name: PV, spec: spec({phase: 'Pending'})}, problems: []},
      },
      {
        name: 'a capacity with a space: string kept, bytes absent, a problem',
        pv: pv({capacity: {storage: '10 Gi'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '10 Gi'}, ['capacity_bytes'])}, problems: [capacityProblem('10 Gi')]},
      },
      {
        name: 'a capacity with a wrong unit (Gb)',
        pv: pv({capacity: {storage: '10Gb'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '10Gb'}, ['capacity_bytes'])}, problems: [capacityProblem('10Gb')]},
      },
      {
        name: 'a negative capacity',
        pv: pv({capacity: {storage: '-1Gi'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '-1Gi'}, ['capacity_bytes'])}, problems: [capacityProblem('-1Gi')]},
      },
      {
        name: 'a capacity beyond 2^53 bytes (8Ei)',
        pv: pv({capacity: {storage: '8Ei'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '8Ei'}, ['capacity_bytes'])}, problems: [capacityProblem('8Ei')]},
      },
      {
        name: 'an empty capacity string: both absent, a problem',
        pv: pv({capacity: {storage: ''}}),
        expected: {volume: {name: PV, spec: spec({}, ['capacity_string', 'capacity_bytes'])}, problems: [capacityProblem('')]},
      },
      {
        name: 'no capacity at all: both absent, no problem',
        pv: pv({capacity: undefined}),
        expected: {volume: {name: PV, spec: spec({}, ['capacity_string', 'capacity_bytes'])}, problems: []},
      },
      {
        name: 'decimal and fractional capacities, rounded down',
        pv: pv({capacity: {storage: '1.5G'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '1.5G', capacity_bytes: 1500000000})}, problems: []},
      },
      {
        name: 'a fractional byte count is rounded down',
        pv: pv({capacity: {storage: '1500m'}}),
        expected: {volume: {name: PV, spec: spec({capacity_string: '1500m', capacity_bytes: 1})}, problems: []},
      },
      {
        name: 'Block mode',
        pv: pv({volumeMode: 'Block'}),
        expected: {volume: {name: PV, spec: spec({volume_mode: 'Block'})}, problems: []},
      },
      {
        name: 'an unknown volume mode → Filesystem, with a problem',
        pv: pv({volumeMode: 'Raw'}),
        expected: {
          volume: {name: PV, spec: spec()},
          problems: [{
            reason: 'InvalidVolumeMode',
            message: `PersistentVolume "${PV}": spec.volumeMode "Raw" is not Filesystem or Block; it is reported as Filesystem.`,
          }],
        },
      },
      {
        name: 'no volume mode, no reclaim policy: Filesystem and Retain',
        pv: pv({volumeMode: undefined, persistentVolumeReclaimPolicy: undefined}),
        expected: {volume: {name: PV, spec: spec({reclaim_policy: 'Retain'})}, problems: []},
      },
      {
        name: 'Recycle is kept',
        pv: pv({persistentVolumeReclaimPolicy: 'Recycle'}),
        expected: {volume: {name: PV, spec: spec({reclaim_policy: 'Recycle'})}, problems: []},
      },
      {
        name: 'an unknown reclaim policy → absent, with a problem',
        pv: pv({persistentVolumeReclaimPolicy: 'Archive'}),
        expected: {
          volume: {name: PV, spec: spec({}, ['reclaim_policy'])},
          problems: [{
            reason: 'InvalidReclaimPolicy',
            message: `PersistentVolume "${PV}": spec.persistentVolumeReclaimPolicy "Archive" is not one of Retain, Delete, Recycle; reclaim_policy is left out.`,
          }],
        },
      },
      {
        name: 'storageClassName "" (explicitly no class) → absent',
        pv: pv({storageClassName: ''}),
        expected: {volume: {name: PV, spec: spec({}, ['storage_class'])}, problems: []},
      },
      {
        name: 'no access modes → absent',
        pv: pv({accessModes: undefined}),
        expected: {volume: {name: PV, spec: spec({}, ['access_modes'])}, problems: []},
      },
      {
        name: 'node affinity with undefined keys is copied as plain JSON',
        pv: pv({nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: 'k', operator: 'Exists', values: undefined}], matchFields: undefined}]}}}),
        expected: {
          volume: {name: PV, spec: spec({node_affinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: 'k', operator: 'Exists'}]}]}}})},
          problems: [],
        },
      },
      {
        name: 'very long PV name: CR name as is, API name cut with a hash',
        pv: pv({}, {phase: 'Bound'}, {name: longName, uid: 'uid-pv'}),
        expected: {
          volume: {
            name: longName,
            spec: spec({
              name: `${longName.slice(0, 54)}-${sha8(longName)}`,
              provider_object_name: longName,
              source: {pv_name: longName, pv_uid: 'uid-pv'},
            }),
          },
          problems: [],
        },
      },
      {
        name: 'a PV name with dots: slug with dashes and a hash of the name',
        pv: pv({}, {phase: 'Bound'}, {name: 'nfs.share.1', uid: 'uid-pv'}),
        expected: {
          volume: {name: 'nfs.share.1', spec: spec({name: `nfs-share-1-${sha8('nfs.share.1')}`, provider_object_name: 'nfs.share.1', source: {pv_name: 'nfs.share.1', pv_uid: 'uid-pv'}})},
          problems: [],
        },
      },
      {
        name: 'no uid: no provider_object_id, source has only pv_name',
        pv: pv({}, {phase: 'Bound'}, {name: PV}),
        expected: {volume: {name: PV, spec: spec({source: {pv_name: PV}}, ['provider_object_id'])}, problems: []},
      },
      {
        name: 'several problems at once keep their order: capacity, phase, mode, policy',
        pv: pv({capacity: {storage: 'big'}, volumeMode: 'Raw', persistentVolumeReclaimPolicy: 'Keep'}, {phase: 'Lost'}),
        expected: {
          volume: {name: PV, spec: spec({capacity_string: 'big', phase: 'Unknown'}, ['capacity_bytes', 'reclaim_policy'])},
          problems: [
            capacityProblem('big'),
            {reason: 'UnknownVolumePhase', message: `PersistentVolume "${PV}": status.phase "Lost" is not one of Bound, Released, Available, Failed, Pending; it is reported as Unknown.`},
            {reason: 'InvalidVolumeMode', message: `PersistentVolume "${PV}": spec.volumeMode "Raw" is not Filesystem or Block; it is reported as Filesystem.`},
            {reason: 'InvalidReclaimPolicy', message: `PersistentVolume "${PV}": spec.persistentVolumeReclaimPolicy "Keep" is not one of Retain, Delete, Recycle; reclaim_policy is left out.`},
          ],
        },
      },
      {
        name: 'a PV with only a name: the defaults',
        pv: {metadata: {name: 'bare'}},
        expected: {
          volume: {
            name: 'bare',
            spec: {name: 'bare', provider_object_name: 'bare', phase: 'Pending', volume_mode: 'Filesystem', reclaim_policy: 'Retain', source: {pv_name: 'bare'}},
          },
          problems: [],
        },
      },
      {
        name: 'no name: no volume, a problem',
        pv: pv({}, null, {uid: 'uid-pv'}),
        expected: {
          problems: [{
            reason: 'MissingName',
            message: 'The PersistentVolume has no metadata.name: there is nothing to name the K8sVolume after, so none is created for it.',
          }],
        },
      },
    ]
    for (const {name, pv: input, expected} of cases) {
      it(name, () => assert.deepEqual(checked(volumeForPersistentVolume(input)), expected))
    }

    it('is deterministic, does not touch its input and shares no arrays or objects with it', () => {
      const input = pv()
      const before = structuredClone(input)
      const result = volumeForPersistentVolume(input)
      assert.deepEqual(result, volumeForPersistentVolume(input))
      assert.deepEqual(input, before)
      result.volume!.spec.access_modes!.push('ReadWriteMany')
      ;(result.volume!.spec.node_affinity as {required: unknown}).required = null
      assert.deepEqual(input, before)
    })

    it('accepts a typed V1PersistentVolume of @kubernetes/client-node', () => {
      const typed: V1PersistentVolume = {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: {name: 'pv-typed', uid: 'u1'},
        spec: {
          capacity: {storage: '5Gi'},
          accessModes: ['ReadWriteOncePod'],
          csi: {driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1'},
          claimRef: {name: 'c', namespace: 'n'},
        },
        status: {phase: 'Bound'},
      }
      assert.deepEqual(checked(volumeForPersistentVolume(typed)), {
        volume: {
          name: 'pv-typed',
          spec: {
            name: 'pv-typed',
            provider_object_name: 'pv-typed',
            provider_object_id: 'u1',
            cloud_provider_volume_id: 'vol-1',
            csi_driver: 'ebs.csi.aws.com',
            capacity_bytes: 5368709120,
            capacity_string: '5Gi',
            phase: 'Bound',
            access_modes: ['ReadWriteOncePod'],
            volume_mode: 'Filesystem',
            reclaim_policy: 'Retain',
            pvc_name: 'c',
            pvc_namespace: 'n',
            source: {pv_name: 'pv-typed', pv_uid: 'u1'},
          },
        },
        problems: [],
      })
    })
  })

  describe('volumePayload', () => {
    const full = {
      name: PV,
      provider_object_name: PV,
      provider_object_id: 'uid-pv',
      cloud_provider_volume_id: '100234567',
      csi_driver: 'csi.hetzner.cloud',
      storage_class: 'hcloud-volumes',
      capacity_bytes: 10737418240,
      capacity_string: '10Gi',
      phase: 'Bound',
      access_modes: ['ReadWriteOnce'],
      volume_mode: 'Filesystem',
      reclaim_policy: 'Delete',
      pvc_name: 'data-postgres-0',
      pvc_namespace: 'shop',
      node_affinity: affinity,
    }

    /** Free-text fields a PV may lack go out blank, so an update clears them. */
    const blanks = {cloud_provider_volume_id: '', csi_driver: '', storage_class: '', pvc_name: '', pvc_namespace: ''}
    const cases: Array<{name: string; spec: K8sVolumeSpec; app?: string; expected: object}> = [
      {
        name: 'a discovered spec with a K8sApp: every API field, no source',
        spec: spec(),
        app: 'app-uuid',
        expected: {...full, k8s_cluster: 'c1', k8s_app: 'app-uuid', created_by_component: 'operator'},
      },
      {
        name: 'no K8sApp known: k8s_app left out (not null)',
        spec: spec(),
        expected: {...full, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'an empty K8sApp id counts as unknown',
        spec: spec(),
        app: '',
        expected: {...full, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'a hand-written spec without name: the slug of provider_object_name',
        spec: {provider_object_name: 'My.Volume', capacity_string: '1Gi'},
        expected: {
          name: `my-volume-${sha8('My.Volume')}`, provider_object_name: 'My.Volume', capacity_string: '1Gi', access_modes: null, node_affinity: null, ...blanks,
          k8s_cluster: 'c1', created_by_component: 'operator',
        },
      },
      {
        name: 'no name and no provider_object_name: the slug of source.pv_name',
        spec: {source: {pv_name: 'pv.1'}},
        expected: {name: `pv-1-${sha8('pv.1')}`, access_modes: null, node_affinity: null, ...blanks, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'nothing to name it after: name left out',
        spec: {},
        expected: {access_modes: null, node_affinity: null, ...blanks, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'a name that is no API slug is slugged (with the hash of the name)',
        spec: {name: 'data volume #1'},
        expected: {name: `data-volume-1-${sha8('data volume #1')}`, access_modes: null, node_affinity: null, ...blanks, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'a valid API slug is kept as is',
        spec: {name: 'Data_Volume-1'},
        expected: {name: 'Data_Volume-1', access_modes: null, node_affinity: null, ...blanks, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
    ]
    for (const {name, spec: input, app, expected} of cases) {
      it(name, () => {
        const payload = volumePayload(input, 'c1', app)
        assert.deepEqual(payload, expected)
        assert.ok(Object.values(payload).every((v) => v !== undefined), 'no undefined keys')
      })
    }

    it('a PV that lost its access modes and node affinity: both sent as null, so the PATCH clears them', () => {
      const payload = volumePayload(spec({}, ['access_modes', 'node_affinity']), 'c1')
      assert.ok('access_modes' in payload && payload.access_modes === null)
      assert.ok('node_affinity' in payload && payload.node_affinity === null)
      assert.deepEqual(JSON.parse(JSON.stringify(payload)), payload, 'the nulls survive JSON')
    })

    it('a PV whose claimRef was removed: pvc_name / pvc_namespace sent blank, so the PATCH clears them', () => {
      const payload = volumePayload(spec({phase: 'Available'}, ['pvc_name', 'pvc_namespace']), 'c1')
      assert.deepEqual([payload.pvc_name, payload.pvc_namespace], ['', ''])
    })

    it('two PVs whose names slug alike get different API names', () => {
      const a = volumePayload({provider_object_name: 'X-node.zone1'}, 'c1').name
      const b = volumePayload({provider_object_name: 'X-node-zone1'}, 'c1').name
      assert.notEqual(a, b)
    })

    it('the body shares no arrays or objects with the spec', () => {
      const input = spec()
      const payload = volumePayload(input, 'c1')
      ;(payload.access_modes as string[]).push('ReadWriteMany')
      ;(payload.node_affinity as {required: unknown}).required = null
      assert.deepEqual(input, spec())
    })
  })
})
