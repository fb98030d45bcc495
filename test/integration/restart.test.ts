/**
 * A restart must change nothing (every feature gets a restart test): with Endpoints, Hosts and
 * K8sVolumes synced, restarting the operator and toggling discovery settings deletes no CR, deletes or creates no
 * API object and keeps every API id. And a reconcile stalled on the API ends with the grace period on SIGTERM.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {controlPlane, freshNamespace} from '../support/cluster.js'
import {configRef, eventually, ingressRef} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {startOperator} from '../support/operator-process.js'
import {upstreamCrd} from '../support/upstream-crds.js'

type Synced = KubeObject & {metadata: {uid: string; name: string; namespace: string}; status?: {phase?: string; apiID?: string; api_id?: string}}

describe('restarts and setting toggles change nothing (in-process operator, simulator)', function () {
  this.timeout(300_000)
  const prefix = `rs-${randomBytes(3).toString('hex')}`
  const namespaces: string[] = []
  let extrasNamespace: string
  const nodes = [0, 1, 2].map((i) => `${prefix}-node-${i}`)
  const volumes = [0, 1, 2].map((i) => `${prefix}-pv-${i}`)

  const harness = inProcessOperator({
    spec: () => ({backup_discovery: {velero_namespace: extrasNamespace}}),
    // The tests start and stop operators themselves.
    start: false,
    setup: async ({client}) => {
      extrasNamespace = await freshNamespace(client, 'rsx')
    },
    cleanup: async ({client}) => {
      for (const name of nodes) await client.delete({group: '', version: 'v1', plural: 'nodes', name}).catch(() => {})
      for (const name of volumes) await client.delete({group: '', version: 'v1', plural: 'persistentvolumes', name}).catch(() => {})
    },
  })
  let client: KubeClient
  let sim: ApiSimulator
  let operatorNamespace: string

  before(async () => {
    ;({client, sim, namespace: operatorNamespace} = harness)
    // Velero, CloudNativePG and cert-manager CRDs, and one object of each kind the backup and certificate
    // discovery read.
    for (const file of ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml', 'cert-manager.io_certificates.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    }
    await client.create({group: 'velero.io', version: 'v1', plural: 'backups', namespace: extrasNamespace}, {
      apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: 'daily-1', namespace: extrasNamespace}, spec: {ttl: '24h0m0s'}, status: {phase: 'Completed'},
    })
    await client.create({group: 'postgresql.cnpg.io', version: 'v1', plural: 'scheduledbackups', namespace: extrasNamespace}, {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name: 'pg-daily', namespace: extrasNamespace}, spec: {schedule: '0 0 2 * * *', cluster: {name: 'pg'}},
    })
    await client.create({group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace: extrasNamespace}, {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'web-tls', namespace: extrasNamespace},
      spec: {secretName: 'web-tls', dnsNames: ['web.example.com'], issuerRef: {name: 'le', kind: 'ClusterIssuer'}},
    })
    for (let n = 0; n < 10; n++) {
      const namespace = await freshNamespace(client, `rs${n}`)
      namespaces.push(namespace)
      for (let i = 0; i < 3; i++) {
        await client.create(ingressRef(namespace), {
          apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
          metadata: {name: `web-${i}`, namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
          spec: {rules: [{host: `app-${i}.${namespace}.example.com`}]},
        })
      }
    }
    for (const name of nodes) {
      await client.create({group: '', version: 'v1', plural: 'nodes'}, {apiVersion: 'v1', kind: 'Node', metadata: {name}})
      await client.mergePatch({group: '', version: 'v1', plural: 'nodes', name, subresource: 'status'}, {status: {
        addresses: [{type: 'InternalIP', address: '10.0.0.1'}], capacity: {cpu: '2', memory: '4Gi'},
        nodeInfo: {architecture: 'amd64', osImage: 'Ubuntu 22.04.4 LTS'}, conditions: [{type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ok'}],
      }})
    }
    for (const name of volumes) {
      await client.create({group: '', version: 'v1', plural: 'persistentvolumes'}, {
        apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name},
        spec: {capacity: {storage: '1Gi'}, accessModes: ['ReadWriteOnce'], csi: {driver: 'csi.example.com', volumeHandle: name}},
      })
    }
  })

  const ours = async () => {
    const endpoints: Synced[] = []
    for (const namespace of namespaces) endpoints.push(...(await client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items)
    const hosts = (await client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${operatorNamespace}/hosts`})).items.filter((h) => h.metadata.name.startsWith(prefix))
    const vols = (await client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${operatorNamespace}/k8svolumes`})).items.filter((v) => v.metadata.name.startsWith(prefix))
    const extras: Synced[] = []
    for (const plural of ['backups', 'backupschedules', 'certificates']) extras.push(...(await client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${extrasNamespace}/${plural}`})).items)
    return [...endpoints, ...hosts, ...vols, ...extras]
  }
  const apiId = (object: Synced) => object.status?.apiID ?? object.status?.api_id
  // resourceVersion too: a restart writes nothing at all (no orphan mark, no status rewrite, no re-apply).
  const snapshot = (objects: Synced[]) => objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name} uid=${o.metadata.uid} rv=${o.metadata.resourceVersion} api=${apiId(o)}`).sort()

  /** Starts an operator and waits until its first pass over everything is done: the positive signal before "nothing changed". */
  const startAndSettle = async (expected: number): Promise<void> => {
    harness.start()
    await eventually(async () => {
      const counts = await Promise.all(['endpoint-discovery', 'endpoint-sync', 'host-discovery', 'host-sync', 'volume-discovery', 'volume-sync',
        'velero-backup-discovery', 'cnpg-schedule-discovery', 'certificate-discovery', 'backup-sync', 'backup-schedule-sync', 'certificate-sync'].map((c) => harness.reconciles(c)))
      // Every sync controller reconciled at least our objects, every discovery controller ran, and nothing is queued.
      return counts[1]! >= 30 && counts[3]! >= 3 && counts[5]! >= 3 && counts[0]! >= 10 && counts[2]! >= 3 && counts[4]! >= 3 &&
        counts.slice(6).every((count) => count >= 1) && (await harness.queueDepth()) === 0
    }, 60_000, `operator settled (${expected} objects)`)
  }

  it('30 Endpoints in 10 namespaces, 3 Hosts, 3 K8sVolumes, a Backup, a BackupSchedule and a Certificate: 5 restarts and 5 setting toggles delete nothing and keep every API id', async () => {
    await startAndSettle(39)
    const synced = await eventually(async () => {
      const objects = await ours()
      return objects.length === 39 && objects.every((o) => o.status?.phase === 'Synced' && apiId(o)) ? objects : undefined
    }, 90_000, '39 synced objects')
    // Settled: the first pass's last status writes are in.
    await harness.stop()
    await startAndSettle(39)
    const before = snapshot(await ours())
    assert.equal(before.length, synced.length)
    const apiBefore = {endpoints: sim.list('endpoints').length, hosts: sim.list('hosts').length, volumes: sim.list('kubernetes/volumes').length}
    sim.clearRequests()

    for (let restart = 0; restart < 5; restart++) {
      await harness.stop()
      await startAndSettle(39)
    }
    for (let toggle = 0; toggle < 5; toggle++) {
      const [discoveryBefore, hostsBefore] = [await harness.reconciles('endpoint-discovery'), await harness.reconciles('host-discovery')]
      await client.mergePatch(configRef(operatorNamespace), {spec: {
        endpoint_discovery: {stale_cleanup_minutes: 10 + ((toggle + 1) % 2)},
        cleanup: {stale_threshold_minutes: 30 + ((toggle + 1) % 2)},
      }})
      // The restarted discovery features went over everything again (the positive signal).
      await eventually(async () => (await harness.reconciles('endpoint-discovery')) >= discoveryBefore + 10 &&
        (await harness.reconciles('host-discovery')) >= hostsBefore + 3 && (await harness.queueDepth()) === 0, 60_000, `toggle ${toggle} reconciled`)
    }
    await harness.stop()

    assert.deepEqual(snapshot(await ours()), before, 'every CR kept its uid, resourceVersion and API id')
    const writes = sim.requests.filter((r) => ['POST', 'DELETE'].includes(r.method) && ['endpoints', 'hosts', 'kubernetes/volumes', 'backups/backups', 'backups/backup-schedules', 'certificates'].includes(r.resource))
    assert.deepEqual(writes.map((r) => `${r.method} ${r.path}`), [], 'no API object created or deleted')
    assert.deepEqual({endpoints: sim.list('endpoints').length, hosts: sim.list('hosts').length, volumes: sim.list('kubernetes/volumes').length}, apiBefore)
  })

  it('SIGTERM while a reconcile waits on a stalled API: the process exits within the grace period', async () => {
    let arrived = 0
    const namespace = await freshNamespace(client, 'stall')
    const kubeconfig = controlPlane().kubeconfigPath
    const operator = await startOperator({kubeconfig, namespace: operatorNamespace, args: ['--graceful-shutdown-timeout', '5']})
    try {
      await eventually(async () => {
        const config = await client.get<KubeObject & {status?: {conditions?: Array<{type: string; status: string}>}}>(configRef(operatorNamespace))
        return config.status?.conditions?.some((c) => c.type === 'APIConnected' && c.status === 'True')
      }, 30_000, 'API connected')
      // From now on every endpoint call hangs for 60 s.
      sim.faults.set({latencyMs: 60_000, match: (_method, path) => (path.startsWith('/api/v1/endpoints') ? (arrived++, true) : false)})
      await client.create(ingressRef(namespace), {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
        metadata: {name: 'stalled', namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: [{host: `stalled.${namespace}.example.com`}]},
      })
      await eventually(async () => arrived > 0, 30_000, 'an endpoint call reached the stalled API').catch((error) => {
        throw new Error(`${(error as Error).message}\n${operator.rawOutput().slice(-6000)}`)
      })
      const started = Date.now()
      const code = await operator.stop('SIGTERM')
      const elapsed = Date.now() - started
      assert.equal(code, 0, operator.rawOutput().slice(-2000))
      // 5 s of grace, then the reconcile's signal aborts the call; before, it waited out the stall and its retries.
      assert.ok(elapsed < 20_000, `exited after ${elapsed} ms`)
    } finally {
      sim.faults.set({})
      await operator.stop('SIGKILL')
    }
  })
})
