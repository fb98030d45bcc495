import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import type {HostSpec, HostStatus} from '../../src/crds/host.js'
import type {K8sVolumeSpec, K8sVolumeStatus} from '../../src/crds/k8svolume.js'
import {KubeApiError, type KubeObject} from '../../src/kube/client.js'
import {eventually, sha8} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type HostObject = KubeObject & {spec: HostSpec; status?: HostStatus; metadata: {finalizers?: string[]; ownerReferences?: Array<{kind: string; name: string; uid: string}>}}
type VolumeObject = KubeObject & {spec: K8sVolumeSpec; status?: K8sVolumeStatus; metadata: {finalizers?: string[]; ownerReferences?: Array<{kind: string; name: string; uid: string}>}}
type ApiObject = Record<string, unknown> & {id: string; name: string; is_deleted?: boolean}
interface EventObject {
  type: string
  reason: string
  message: string
  involvedObject: {kind?: string; name?: string; namespace?: string; uid?: string}
}

const nodes = {group: '', version: 'v1', plural: 'nodes'}
const pvs = {group: '', version: 'v1', plural: 'persistentvolumes'}
const hostsIn = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'hosts', namespace})
const volumesIn = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8svolumes', namespace})

/** A unique prefix per test: Nodes and PVs are cluster-scoped and the control plane is shared with other files. */
const uniquePrefix = () => `hv-${randomBytes(3).toString('hex')}`

/** The slug rule as documented in src/lib/api-names.ts (written out here, not imported). */
function documentedSlug(name: string): string {
  if (name.length <= 63 && /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name)) return name
  const readable = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '')
  return `${readable.slice(0, 63 - 9).replace(/-+$/, '')}-${sha8(name)}`
}

describe('Host and K8sVolume discovery and sync (in-process operator, real apiserver, simulator)', function () {
  this.timeout(120_000)
  const harness = inProcessOperator({
    // Delete our nodes and PVs while the operator still runs, so their CRs can let go of the sync finalizers.
    cleanup: async () => {
      for (const name of createdNodes) await harness.client.delete({...nodes, name}).catch(() => {})
      for (const name of createdPvs) {
        await harness.client.delete({...pvs, name}).catch(() => {})
        await releasePvProtection(name).catch(() => {})
      }
      await eventually(async () => {
        const hosts = (await harness.client.request<{items: KubeObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${harness.namespace}/hosts`})).items
        const volumes = (await harness.client.request<{items: KubeObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${harness.namespace}/k8svolumes`})).items
        return hosts.length === 0 && volumes.length === 0
      }, 30_000, 'our Host and K8sVolume CRs gone').catch((error) => process.stderr.write(`[host-volume after] ${(error as Error).message}\n`))
    },
  })
  const createdNodes = new Set<string>()
  const createdPvs = new Set<string>()

  // -- helpers ---------------------------------------------------------------------------------------------------

  /** Registers a node the way a kubelet does: one POST with the status (the API server keeps a Node's status on create). */
  const createNode = async (name: string, input: {labels?: Record<string, string>; providerID?: string; status?: Record<string, unknown>}) => {
    createdNodes.add(name)
    return harness.client.create<KubeObject>(nodes, {
      apiVersion: 'v1', kind: 'Node',
      metadata: {name, ...(input.labels ? {labels: input.labels} : {})},
      spec: input.providerID ? {providerID: input.providerID} : {},
      ...(input.status ? {status: input.status} : {}),
    })
  }
  const ready = (status: 'True' | 'False') => ({
    type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady', message: 'set by the test',
    lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString(),
  })
  const getHost = (name: string) => harness.client.getOrUndefined<HostObject>({...hostsIn(harness.namespace), name})
  const getVolume = (name: string) => harness.client.getOrUndefined<VolumeObject>({...volumesIn(harness.namespace), name})
  const syncedHost = (name: string, what = `Host ${name} synced`, timeoutMs = 30_000) =>
    eventually(async () => {
      const host = await getHost(name)
      // Synced for the spec it has now: an earlier sync's status says Synced too, and its last write may still come.
      return host?.status?.phase === 'Synced' && host.status.api_id && host.status.observed_generation === host.metadata?.generation ? host : undefined
    }, timeoutMs, what)
  /** Synced, and (a PV is created Pending; its phase is written afterwards) the spec shows `pvPhase` when given. */
  const syncedVolume = (name: string, pvPhase?: string, timeoutMs = 30_000) =>
    eventually(async () => {
      const volume = await getVolume(name)
      if (pvPhase !== undefined && volume?.spec.phase !== pvPhase) return undefined
      return volume?.status?.phase === 'Synced' && volume.status.api_id && apiVolume(volume.status.api_id)?.phase === volume.spec.phase ? volume : undefined
    }, timeoutMs, `K8sVolume ${name} synced${pvPhase ? ` with phase ${pvPhase}` : ''}`)
  const apiHost = (id: string) => harness.sim.get('hosts', id) as ApiObject | undefined
  const apiVolume = (id: string) => harness.sim.get('kubernetes/volumes', id) as ApiObject | undefined
  const liveApiHostsNamed = (name: string) => (harness.sim.list('hosts') as ApiObject[]).filter((h) => h.name === name)
  const liveApiVolumesNamed = (name: string) => (harness.sim.list('kubernetes/volumes') as ApiObject[]).filter((v) => v.name === name)
  const clusterId = () => {
    const clusters = harness.sim.list('kubernetes/clusters')
    assert.equal(clusters.length, 1, 'one K8sCluster in the simulator')
    return clusters[0]!.id as string
  }
  const eventsAbout = async (eventNamespace: string, name: string) =>
    (await harness.client.request<{items: EventObject[]}>({
      path: `/api/v1/namespaces/${eventNamespace}/events`,
      query: {fieldSelector: `involvedObject.name=${name}`},
    })).items
  const createPv = async (name: string, spec: Record<string, unknown>, phase?: string) => {
    createdPvs.add(name)
    const pv = await harness.client.create<KubeObject>(pvs, {apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name}, spec})
    if (phase) await harness.client.mergePatch({...pvs, name, subresource: 'status'}, {status: {phase}})
    return pv
  }
  /** What kube-controller-manager's pv-protection controller would do (it does not run here). */
  const releasePvProtection = async (name: string) => {
    try {
      await harness.client.mergePatch({...pvs, name}, {metadata: {finalizers: null}})
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error
    }
  }

  // -- set-up ----------------------------------------------------------------------------------------------------


  // -- hosts -----------------------------------------------------------------------------------------------------

  it('a control-plane node → Host CR with the mapped spec, node_ready and Synced status → API host with k8s_cluster; Ready and capacity changes follow', async () => {
    const name = `${uniquePrefix()}-cp-1`
    const node = await createNode(name, {
      labels: {'node-role.kubernetes.io/control-plane': ''},
      providerID: 'hcloud://4242',
      status: {
        addresses: [{type: 'InternalIP', address: '10.0.0.10'}, {type: 'ExternalIP', address: '203.0.113.10'}, {type: 'Hostname', address: name}],
        capacity: {cpu: '4', memory: '16Gi', pods: '110'},
        nodeInfo: {
          architecture: 'amd64', osImage: 'Ubuntu 22.04.4 LTS', operatingSystem: 'linux', kernelVersion: '5.15.0-105-generic',
          machineID: 'm', systemUUID: 's', bootID: 'b', containerRuntimeVersion: 'containerd://1.7.0', kubeletVersion: 'v1.30.0', kubeProxyVersion: 'v1.30.0',
        },
        conditions: [ready('True')],
      },
    })

    const host = await eventually(async () => {
      const current = await syncedHost(name)
      return current.status?.node_ready === true ? current : undefined
    }, 30_000, 'Host synced and node_ready')
    assert.deepEqual(host.spec, {
      name,
      hostname: name,
      role: 'k8s-controlplane',
      default_ipv4: '203.0.113.10',
      resource_cpu_cores: 4,
      resource_cpu_architecture: 'amd64',
      resource_memory: 16384,
      provider_id: 'hcloud://4242',
      provider_image_os_flavor: 'ubuntu',
      provider_image_os_version: '22.04.4',
      provider_image_os_architecture: 'amd64',
      source: {node_name: name, node_uid: node.metadata!.uid},
    })
    assert.equal(host.metadata?.namespace, harness.namespace)
    assert.equal(host.metadata?.labels?.polycrate_discovered, 'true')
    assert.deepEqual(host.metadata.finalizers, ['polycrate.io/host-cleanup'])
    assert.deepEqual(host.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Node', name, node.metadata!.uid]])
    assert.equal(host.status?.sync_status, 'synced')
    assert.ok(host.status?.config_hash, 'config_hash')
    assert.ok(host.status?.last_synced_at, 'last_synced_at')

    const api = apiHost(host.status!.api_id!)!
    assert.ok(api, 'API host exists')
    assert.equal(api.name, name)
    assert.equal(api.hostname, name)
    assert.equal(api.default_ipv4, '203.0.113.10')
    assert.equal(api.resource_cpu_cores, 4)
    assert.equal(api.resource_memory, 16384)
    assert.equal(api.resource_cpu_architecture, 'amd64')
    assert.equal(api.provider_id, 'hcloud://4242')
    assert.equal(api.role, 'k8s-controlplane')
    assert.equal(api.provider_image_os_flavor, 'ubuntu')
    assert.equal(api.provider_image_os_version, '22.04.4')
    assert.equal(api.k8s_cluster, clusterId())
    assert.equal(api.workspace, harness.workspaceId)
    assert.equal(api.created_by_component, 'operator')
    assert.equal(api.source, undefined, 'operator bookkeeping is not sent')
    assert.equal(liveApiHostsNamed(name).length, 1)

    // Ready → False through the node status.
    await harness.client.mergePatch({...nodes, name, subresource: 'status'}, {status: {conditions: [ready('False')]}})
    await eventually(async () => (await getHost(name))?.status?.node_ready === false, 20_000, 'node_ready false')
    assert.equal((await getHost(name))?.status?.phase, 'Synced', 'still Synced after the readiness flip')

    // More memory → spec and API host follow.
    await harness.client.mergePatch({...nodes, name, subresource: 'status'}, {status: {capacity: {memory: '32Gi'}}})
    await eventually(async () => (await getHost(name))?.spec.resource_memory === 32768, 20_000, 'Host spec resource_memory 32768')
    await eventually(async () => apiHost(host.status!.api_id!)?.resource_memory === 32768, 20_000, 'API host resource_memory 32768')
    const after = await syncedHost(name)
    assert.equal(after.status?.api_id, host.status!.api_id, 'same API host updated in place')
    assert.equal(after.spec.resource_cpu_cores, 4, 'cpu kept')
    assert.equal(liveApiHostsNamed(name).length, 1)

    // Kubelet heartbeats (only lastHeartbeatTime moves) write nothing: no API write, no CR write.
    harness.sim.clearRequests()
    const version = after.metadata?.resourceVersion
    for (let i = 0; i < 2; i++) {
      await harness.client.mergePatch({...nodes, name, subresource: 'status'}, {status: {conditions: [{...ready('False'), lastHeartbeatTime: new Date(Date.now() + (i + 1) * 1000).toISOString()}]}})
    }
    // Positive signal: two inventory listings of hosts have run since the heartbeats.
    await eventually(async () => harness.sim.requests.filter((r) => r.method === 'GET' && r.resource === 'hosts' && r.status === 200).length >= 2 || undefined, 20_000, 'two inventory checks')
    const writes = harness.sim.requests.filter((r) => r.method !== 'GET' && r.path.includes(host.status!.api_id!))
    assert.deepEqual(writes.map((r) => `${r.method} ${r.path}`), [], 'API writes for heartbeats')
    assert.equal((await getHost(name))?.metadata?.resourceVersion, version, 'Host CR written for heartbeats')
  })

  it('a node that loses its IPv6 address → default_ipv6 is cleared in the API host too', async () => {
    const name = `${uniquePrefix()}-dual-1`
    await createNode(name, {
      status: {
        addresses: [{type: 'InternalIP', address: '10.0.0.51'}, {type: 'InternalIP', address: 'fd00::51'}],
        capacity: {cpu: '2', memory: '4Gi'}, conditions: [ready('True')],
      },
    })
    const host = await syncedHost(name)
    assert.equal(host.spec.default_ipv6, 'fd00::51')
    assert.equal(apiHost(host.status!.api_id!)?.default_ipv6, 'fd00::51')

    await harness.client.mergePatch({...nodes, name, subresource: 'status'}, {status: {addresses: [{type: 'InternalIP', address: '10.0.0.51'}]}})
    await eventually(async () => {
      const current = await getHost(name)
      // A new hash recorded (the sync clears the old one just before the API update, and writes the new one after it).
      const hash = current?.status?.config_hash
      return current && !('default_ipv6' in current.spec) && hash !== undefined && hash !== host.status?.config_hash && current.status?.phase === 'Synced'
    }, 20_000, 'Host spec without default_ipv6, re-synced')
    const api = apiHost(host.status!.api_id!)!
    assert.equal(api.default_ipv4, '10.0.0.51')
    assert.equal(api.default_ipv6 ?? null, null, `API host still has default_ipv6 ${JSON.stringify(api.default_ipv6)}`)
  })

  it('two nodes whose names read alike ("a.b" and "a-b") → two distinct API names and hosts', async () => {
    const p = uniquePrefix()
    const dotted = `${p}-node.zone1`
    const dashed = `${p}-node-zone1`
    await createNode(dotted, {status: {addresses: [{type: 'InternalIP', address: '10.0.0.61'}], capacity: {cpu: '2', memory: '4Gi'}, conditions: [ready('True')]}})
    const first = await syncedHost(dotted)
    await createNode(dashed, {status: {addresses: [{type: 'InternalIP', address: '10.0.0.62'}], capacity: {cpu: '2', memory: '4Gi'}, conditions: [ready('True')]}})
    const second = await syncedHost(dashed)
    assert.equal(second.spec.name, dashed, 'a name that is a slug already is kept')
    assert.equal(first.spec.name, documentedSlug(dotted), 'the other gets the hash of its name')
    assert.notEqual(first.spec.name, second.spec.name)
    assert.notEqual(second.status?.api_id, first.status?.api_id, 'each node has its own API host')
  })

  it('a host deleted on the API side is recreated with a new id by the inventory check, without a duplicate', async () => {
    const name = `${uniquePrefix()}-worker-1`
    await createNode(name, {
      status: {addresses: [{type: 'InternalIP', address: '10.0.0.21'}], capacity: {cpu: '2', memory: '8Gi'}, conditions: [ready('True')]},
    })
    const host = await syncedHost(name)
    const oldId = host.status!.api_id!
    assert.equal(host.spec.role, 'k8s-worker')
    assert.equal(apiHost(oldId)?.default_ipv4, '10.0.0.21')

    harness.sim.deleteBehindBack('hosts', oldId)
    const recreated = await eventually(async () => {
      const current = await getHost(name)
      const id = current?.status?.api_id
      return id && id !== oldId && current.status?.phase === 'Synced' && apiHost(id) ? current : undefined
    }, 30_000, 'host recreated with a new id')
    const api = apiHost(recreated.status!.api_id!)!
    assert.equal(api.hostname, name)
    assert.equal(api.default_ipv4, '10.0.0.21')
    assert.equal(api.k8s_cluster, clusterId())
    assert.equal(liveApiHostsNamed(name).length, 1, 'exactly one API host of that name')
    await eventually(async () => (await eventsAbout(harness.namespace, name)).find((e) => e.reason === 'Recreated' && e.involvedObject.kind === 'Host'), 20_000, 'Recreated Event on the Host')
  })

  it('adopts an API host of the same name in the workspace instead of creating a second one', async () => {
    const name = `${uniquePrefix()}-adopt-1`
    const existing = harness.sim.insert('hosts', {name, hostname: 'old-hostname', workspace: harness.workspaceId, role: 'generic', description: 'made by hand'}) as ApiObject
    await createNode(name, {
      status: {addresses: [{type: 'InternalIP', address: '10.0.0.31'}], capacity: {cpu: '8', memory: '64Gi'}, conditions: [ready('True')]},
    })
    const host = await syncedHost(name)
    assert.equal(host.status?.api_id, existing.id, 'the existing API host is adopted')
    assert.equal(liveApiHostsNamed(name).length, 1, 'exactly one API host of that name')
    const api = apiHost(existing.id)!
    assert.equal(api.hostname, name, 'the adopted host is updated with the node data')
    assert.equal(api.role, 'k8s-worker')
    assert.equal(api.default_ipv4, '10.0.0.31')
    assert.equal(api.resource_memory, 65536)
    assert.equal(api.k8s_cluster, clusterId())
  })

  it('deleting the node deletes its Host CR and (soft-)deletes the API host', async () => {
    const name = `${uniquePrefix()}-gone-1`
    await createNode(name, {
      status: {addresses: [{type: 'InternalIP', address: '10.0.0.41'}], capacity: {cpu: '1', memory: '1Gi'}, conditions: [ready('True')]},
    })
    const host = await syncedHost(name)
    const id = host.status!.api_id!
    await harness.client.delete({...nodes, name})
    await eventually(async () => (await getHost(name)) === undefined, 30_000, 'Host CR gone')
    const api = apiHost(id)
    assert.ok(api === undefined || api.is_deleted === true, `API host ${id} deleted (got ${JSON.stringify(api)})`)
    assert.equal(liveApiHostsNamed(name).length, 0, 'no live API host of that name')
  })

  it('ten odd nodes → Host CRs with the documented defaults, Warning Events on the nodes where hostForNode reports a problem', async () => {
    const p = uniquePrefix()
    const longName = `${p}-${'x'.repeat(70 - p.length - 1 - 4)}-end`
    assert.equal(longName.length, 70)
    const ok = {conditions: [ready('True')]}
    interface Case {
      name: string
      status: Record<string, unknown>
      expect: Partial<HostSpec>
      absent?: Array<keyof HostSpec>
      ready?: boolean
      problem?: {reason: string; includes: string}
    }
    const cases: Case[] = [
      {name: `${p}-no-addresses`, status: {capacity: {cpu: '2', memory: '4Gi'}, ...ok}, expect: {resource_cpu_cores: 2, resource_memory: 4096}, absent: ['default_ipv4', 'default_ipv6']},
      {
        name: `${p}-ipv6-only`,
        status: {addresses: [{type: 'InternalIP', address: 'fd00::5'}, {type: 'ExternalIP', address: '2001:db8::1'}], capacity: {cpu: '2', memory: '4Gi'}, ...ok},
        expect: {default_ipv6: '2001:db8::1'}, absent: ['default_ipv4'],
      },
      {name: `${p}-mem-ki`, status: {capacity: {cpu: '2', memory: '8388608Ki'}, ...ok}, expect: {resource_memory: 8192}},
      {name: `${p}-mem-mi`, status: {capacity: {cpu: '2', memory: '2048Mi'}, ...ok}, expect: {resource_memory: 2048}},
      {name: `${p}-mem-bytes`, status: {capacity: {cpu: '2', memory: '17179869184'}, ...ok}, expect: {resource_memory: 16384}},
      {name: `${p}-milli-cpu`, status: {capacity: {cpu: '3500m', memory: '4Gi'}, ...ok}, expect: {resource_cpu_cores: 3, resource_memory: 4096}},
      {
        name: `${p}-mem-huge`,
        // The API server does not let "lots" into a Node (see the report); a quantity beyond 2^53 MiB is the
        // unparsable case that reaches the operator.
        status: {capacity: {cpu: '2', memory: '1e30'}, ...ok},
        expect: {resource_cpu_cores: 2}, absent: ['resource_memory'],
        problem: {reason: 'InvalidNodeCapacity', includes: 'status.capacity.memory'},
      },
      {
        name: `${p}-bad-ip`,
        status: {addresses: [{type: 'ExternalIP', address: 'not-an-ip'}, {type: 'InternalIP', address: '10.0.0.8'}], capacity: {cpu: '2', memory: '4Gi'}, ...ok},
        expect: {default_ipv4: '10.0.0.8'}, absent: ['default_ipv6'],
        problem: {reason: 'InvalidNodeAddress', includes: '"not-an-ip"'},
      },
      {name: longName, status: {addresses: [{type: 'InternalIP', address: '10.0.0.9'}], capacity: {cpu: '2', memory: '4Gi'}, ...ok}, expect: {default_ipv4: '10.0.0.9'}},
      {name: `${p}-no-ready`, status: {addresses: [{type: 'InternalIP', address: '10.0.0.7'}], capacity: {cpu: '2', memory: '4Gi'}}, expect: {default_ipv4: '10.0.0.7'}, ready: false},
    ]
    const created = new Map<string, KubeObject>()
    for (const c of cases) created.set(c.name, await createNode(c.name, {status: c.status}))

    for (const c of cases) {
      const host = await syncedHost(c.name, `Host ${c.name} synced`)
      const slug = documentedSlug(c.name)
      assert.equal(host.spec.name, slug, `${c.name}: spec.name`)
      assert.ok(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(slug) && slug.length <= 63)
      assert.equal(host.spec.hostname, c.name)
      assert.equal(host.spec.role, 'k8s-worker')
      assert.deepEqual(host.spec.source, {node_name: c.name, node_uid: created.get(c.name)!.metadata!.uid})
      for (const [key, value] of Object.entries(c.expect)) assert.deepEqual(host.spec[key as keyof HostSpec], value, `${c.name}: spec.${key}`)
      for (const key of c.absent ?? []) assert.ok(!(key in host.spec), `${c.name}: spec.${key} absent (got ${JSON.stringify(host.spec[key])})`)
      // node_ready is discovery's status write, independent of the sync's phase: wait for it on its own.
      await eventually(async () => (await getHost(c.name))?.status?.node_ready === (c.ready ?? true), 20_000, `${c.name}: node_ready ${c.ready ?? true}`)
      const api = apiHost(host.status!.api_id!)!
      assert.equal(api.name, slug, `${c.name}: API name`)
      assert.equal(api.hostname, c.name)
      for (const [key, value] of Object.entries(c.expect)) assert.deepEqual(api[key], value, `${c.name}: API ${key}`)
    }
    assert.equal(documentedSlug(longName).length, 63)
    assert.ok(documentedSlug(longName).endsWith(`-${sha8(longName)}`))

    // Problems: one Warning Event on the Node (cluster-scoped → Events land in `default`).
    for (const c of cases.filter((candidate) => candidate.problem)) {
      const event = await eventually(async () => (await eventsAbout('default', c.name)).find((e) => e.reason === c.problem!.reason), 20_000, `${c.problem!.reason} Event on ${c.name}`)
      assert.equal(event.type, 'Warning')
      assert.equal(event.involvedObject.kind, 'Node')
      assert.equal(event.involvedObject.uid, created.get(c.name)!.metadata!.uid)
      assert.ok(event.message.includes(c.problem!.includes), `${c.name}: message ${event.message}`)
    }
    // No other Warning Events on any of the nodes (all synced above, so discovery has looked at each of them):
    // the nodes without a problem have none at all, those with one have only that one.
    const unexpected: string[] = []
    for (const c of cases) {
      for (const e of await eventsAbout('default', c.name)) {
        if (e.type === 'Warning' && e.reason !== c.problem?.reason) unexpected.push(`${c.name}: ${e.reason}: ${e.message}`)
      }
    }
    assert.deepEqual(unexpected, [], 'unexpected Warning Events on the nodes')
  })

  // -- volumes ---------------------------------------------------------------------------------------------------

  it('PersistentVolumes → K8sVolume CRs → API volumes; phase changes, API-side deletes and PV deletion follow', async () => {
    const p = uniquePrefix()
    const csiName = `${p}-pvc-0a1b2c`
    const hostPathName = `${p}-local-data`
    const csiPv = await createPv(csiName, {
      capacity: {storage: '10Gi'},
      accessModes: ['ReadWriteOnce'],
      csi: {driver: 'csi.hetzner.cloud', volumeHandle: '100042'},
      storageClassName: 'hcloud-volumes',
      claimRef: {name: 'data-postgres-0', namespace: 'db'},
      persistentVolumeReclaimPolicy: 'Delete',
    }, 'Bound')
    const hostPathPv = await createPv(hostPathName, {
      capacity: {storage: '1Gi'},
      accessModes: ['ReadWriteOnce'],
      hostPath: {path: '/data/local'},
      persistentVolumeReclaimPolicy: 'Retain',
    }, 'Available')

    const csi = await syncedVolume(csiName, 'Bound')
    assert.deepEqual(csi.spec, {
      name: csiName,
      provider_object_name: csiName,
      provider_object_id: csiPv.metadata!.uid,
      cloud_provider_volume_id: '100042',
      csi_driver: 'csi.hetzner.cloud',
      storage_class: 'hcloud-volumes',
      capacity_bytes: 10737418240,
      capacity_string: '10Gi',
      phase: 'Bound',
      access_modes: ['ReadWriteOnce'],
      volume_mode: 'Filesystem',
      reclaim_policy: 'Delete',
      pvc_name: 'data-postgres-0',
      pvc_namespace: 'db',
      source: {pv_name: csiName, pv_uid: csiPv.metadata!.uid},
    })
    assert.equal(csi.metadata?.namespace, harness.namespace)
    assert.deepEqual(csi.metadata.finalizers, ['polycrate.io/k8svolume-cleanup'])
    assert.deepEqual(csi.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['PersistentVolume', csiName, csiPv.metadata!.uid]])
    assert.equal(csi.status?.sync_status, 'synced')
    const csiId = csi.status!.api_id!
    const api = apiVolume(csiId)!
    assert.ok(api, 'API volume exists')
    assert.equal(api.name, csiName)
    assert.equal(api.k8s_cluster, clusterId())
    assert.equal(api.workspace, harness.workspaceId)
    assert.equal(api.csi_driver, 'csi.hetzner.cloud')
    assert.equal(api.cloud_provider_volume_id, '100042')
    assert.equal(api.capacity_bytes, 10737418240)
    assert.equal(api.capacity_string, '10Gi')
    assert.equal(api.phase, 'Bound')
    assert.equal(api.pvc_name, 'data-postgres-0')
    assert.equal(api.pvc_namespace, 'db')
    assert.equal(api.reclaim_policy, 'Delete')
    assert.equal(api.storage_class, 'hcloud-volumes')
    assert.deepEqual(api.access_modes, ['ReadWriteOnce'])
    assert.equal(api.created_by_component, 'operator')

    const local = await syncedVolume(hostPathName, 'Available')
    assert.deepEqual(local.spec, {
      name: hostPathName,
      provider_object_name: hostPathName,
      provider_object_id: hostPathPv.metadata!.uid,
      capacity_bytes: 1073741824,
      capacity_string: '1Gi',
      phase: 'Available',
      access_modes: ['ReadWriteOnce'],
      volume_mode: 'Filesystem',
      reclaim_policy: 'Retain',
      source: {pv_name: hostPathName, pv_uid: hostPathPv.metadata!.uid},
    })
    const localApi = apiVolume(local.status!.api_id!)!
    assert.equal(localApi.csi_driver || null, null, 'no csi_driver for hostPath')
    assert.equal(localApi.cloud_provider_volume_id || null, null, 'no volume id for hostPath')
    assert.equal(localApi.k8s_cluster, clusterId())

    // PV phase change → CR and API follow.
    await harness.client.mergePatch({...pvs, name: csiName, subresource: 'status'}, {status: {phase: 'Released'}})
    await eventually(async () => (await getVolume(csiName))?.spec.phase === 'Released', 20_000, 'K8sVolume phase Released')
    await eventually(async () => apiVolume(csiId)?.phase === 'Released', 20_000, 'API volume phase Released')
    assert.equal((await syncedVolume(csiName)).status?.api_id, csiId, 'updated in place')

    // Deleted behind the operator's back → recreated by the inventory check, no duplicate.
    harness.sim.deleteBehindBack('kubernetes/volumes', csiId)
    const recreated = await eventually(async () => {
      const current = await getVolume(csiName)
      const id = current?.status?.api_id
      return id && id !== csiId && current.status?.phase === 'Synced' && apiVolume(id) ? current : undefined
    }, 30_000, 'volume recreated with a new id')
    const recreatedApi = apiVolume(recreated.status!.api_id!)!
    assert.equal(recreatedApi.phase, 'Released')
    assert.equal(recreatedApi.k8s_cluster, clusterId())
    assert.equal(liveApiVolumesNamed(csiName).length, 1, 'exactly one API volume of that name')

    // PV deleted → K8sVolume and API volume go. The PV itself waits for kubernetes.io/pv-protection (no
    // pv-protection controller runs here), so the operator must act on the deletionTimestamp.
    const localId = local.status!.api_id!
    await harness.client.delete({...pvs, name: hostPathName})
    await eventually(async () => (await getVolume(hostPathName)) === undefined, 30_000, 'K8sVolume of the deleted PV gone')
    assert.equal(apiVolume(localId), undefined, 'API volume deleted')
    assert.equal(liveApiVolumesNamed(hostPathName).length, 0)
    await releasePvProtection(hostPathName)
    await eventually(async () => (await harness.client.getOrUndefined({...pvs, name: hostPathName})) === undefined, 20_000, 'PV gone')
    // The other volume is untouched.
    assert.equal((await syncedVolume(csiName)).status?.api_id, recreated.status!.api_id)
  })

  it('a PV whose claimRef is removed (claim released, PV Available again) → pvc_name/pvc_namespace are cleared in the API volume too', async () => {
    const name = `${uniquePrefix()}-pvc-reuse`
    await createPv(name, {
      capacity: {storage: '5Gi'},
      accessModes: ['ReadWriteOnce'],
      csi: {driver: 'csi.hetzner.cloud', volumeHandle: '100077'},
      storageClassName: 'hcloud-volumes',
      claimRef: {name: 'data-redis-0', namespace: 'cache'},
      persistentVolumeReclaimPolicy: 'Retain',
    }, 'Bound')
    const bound = await syncedVolume(name, 'Bound')
    const id = bound.status!.api_id!
    assert.equal(apiVolume(id)?.pvc_name, 'data-redis-0')

    await harness.client.mergePatch({...pvs, name}, {spec: {claimRef: null}})
    await harness.client.mergePatch({...pvs, name, subresource: 'status'}, {status: {phase: 'Available'}})
    const released = await eventually(async () => {
      const current = await getVolume(name)
      return current && !('pvc_name' in current.spec) && !('pvc_namespace' in current.spec) ? current : undefined
    }, 20_000, 'K8sVolume spec without the claim')
    await syncedVolume(name, 'Available')
    assert.equal(released.status?.api_id ?? id, id)
    const api = apiVolume(id)!
    assert.equal(api.phase, 'Available')
    // Cleared: blank (the contract's free-text fields are blank, not null, when unset).
    assert.deepEqual([api.pvc_name || null, api.pvc_namespace || null], [null, null], 'API volume still names the released claim')
  })
})
