/**
 * A restart must change nothing (every feature gets a restart test): with Endpoints, Hosts and
 * K8sVolumes synced, restarting the operator and toggling discovery settings deletes no CR, deletes or creates no
 * API object and keeps every API id. And a reconcile stalled on the API ends with the grace period on SIGTERM.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import yaml from 'js-yaml'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {silentLogger} from '../../src/lib/logger.js'
import {createOperator, type Operator} from '../../src/operator/operator.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {eventually, startOperator} from '../support/operator-process.js'
import {ingressRef} from '../support/helpers.js'

type Synced = KubeObject & {metadata: {uid: string; name: string; namespace: string}; status?: {phase?: string; apiID?: string; api_id?: string}}
const polycrate = (plural: string, namespace?: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural, namespace})

async function reconcileCount(operator: Operator, controller: string): Promise<number> {
  const metric = await operator.manager.metrics.reconcileTotal.get()
  return metric.values.filter((v) => v.labels.controller === controller).reduce((sum, v) => sum + v.value, 0)
}

async function queueDepth(operator: Operator): Promise<number> {
  const metric = await operator.manager.metrics.workqueueDepth.get()
  return metric.values.reduce((sum, v) => sum + v.value, 0)
}

describe('restarts and setting toggles change nothing (in-process operator, simulator)', function () {
  this.timeout(300_000)
  let client: KubeClient
  let sim: ApiSimulator
  let operatorNamespace: string
  const prefix = `rs-${randomBytes(3).toString('hex')}`
  const namespaces: string[] = []
  let extrasNamespace: string
  const nodes = [0, 1, 2].map((i) => `${prefix}-node-${i}`)
  const volumes = [0, 1, 2].map((i) => `${prefix}-pv-${i}`)

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
    extrasNamespace = await freshNamespace(client, 'rsx')
    operatorNamespace = (await operatorNamespaceFor(client, sim, {backup_discovery: {velero_namespace: extrasNamespace}})).namespace
    // Velero, CloudNativePG and cert-manager CRDs, and one object of each kind the backup and certificate
    // discovery read.
    const crdDir = path.resolve(import.meta.dirname, '../../../shared/fixtures/crds')
    for (const file of ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml', 'cert-manager.io_certificates.yaml']) {
      const crd = yaml.load(readFileSync(path.join(crdDir, file), 'utf8')) as {metadata: {name: string}}
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

  after(async () => {
    for (const name of nodes) await client.delete({group: '', version: 'v1', plural: 'nodes', name}).catch(() => {})
    for (const name of volumes) await client.delete({group: '', version: 'v1', plural: 'persistentvolumes', name}).catch(() => {})
    client.close()
    await sim.close()
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

  /** Runs an operator until its first pass over everything is done: the positive signal before "nothing changed". */
  const startAndSettle = async (expected: number): Promise<{operator: Operator; stop: () => Promise<void>}> => {
    const abort = new AbortController()
    const operator = createOperator({client, namespace: operatorNamespace, logger: silentLogger, metricsBindAddress: '0', probeBindAddress: '0'})
    const running = operator.run(abort.signal)
    await eventually(async () => {
      const counts = await Promise.all(['endpoint-discovery', 'endpoint-sync', 'host-discovery', 'host-sync', 'volume-discovery', 'volume-sync',
        'velero-backup-discovery', 'cnpg-schedule-discovery', 'certificate-discovery', 'backup-sync', 'backup-schedule-sync', 'certificate-sync'].map((c) => reconcileCount(operator, c)))
      // Every sync controller reconciled at least our objects, every discovery controller ran, and nothing is queued.
      return counts[1]! >= 30 && counts[3]! >= 3 && counts[5]! >= 3 && counts[0]! >= 10 && counts[2]! >= 3 && counts[4]! >= 3 &&
        counts.slice(6).every((count) => count >= 1) && (await queueDepth(operator)) === 0
    }, 60_000, `operator settled (${expected} objects)`)
    return {operator, stop: async () => {
      abort.abort()
      await running
    }}
  }

  it('30 Endpoints in 10 namespaces, 3 Hosts, 3 K8sVolumes, a Backup, a BackupSchedule and a Certificate: 5 restarts and 5 setting toggles delete nothing and keep every API id', async () => {
    let current = await startAndSettle(39)
    const synced = await eventually(async () => {
      const objects = await ours()
      return objects.length === 39 && objects.every((o) => o.status?.phase === 'Synced' && apiId(o)) ? objects : undefined
    }, 90_000, '39 synced objects')
    // Settled: the first pass's last status writes are in.
    await current.stop()
    current = await startAndSettle(39)
    const before = snapshot(await ours())
    assert.equal(before.length, synced.length)
    const apiBefore = {endpoints: sim.list('endpoints').length, hosts: sim.list('hosts').length, volumes: sim.list('kubernetes/volumes').length}
    sim.clearRequests()

    for (let restart = 0; restart < 5; restart++) {
      await current.stop()
      current = await startAndSettle(39)
    }
    for (let toggle = 0; toggle < 5; toggle++) {
      const operator = current.operator
      const [discoveryBefore, hostsBefore] = [await reconcileCount(operator, 'endpoint-discovery'), await reconcileCount(operator, 'host-discovery')]
      await client.mergePatch({...polycrate('operatorconfigs', operatorNamespace), name: 'default'}, {spec: {
        endpoint_discovery: {stale_cleanup_minutes: 10 + ((toggle + 1) % 2)},
        cleanup: {stale_threshold_minutes: 30 + ((toggle + 1) % 2)},
      }})
      // The restarted discovery features went over everything again (the positive signal).
      await eventually(async () => (await reconcileCount(operator, 'endpoint-discovery')) >= discoveryBefore + 10 &&
        (await reconcileCount(operator, 'host-discovery')) >= hostsBefore + 3 && (await queueDepth(operator)) === 0, 60_000, `toggle ${toggle} reconciled`)
    }
    await current.stop()

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
        const config = await client.get<KubeObject & {status?: {conditions?: Array<{type: string; status: string}>}}>({...polycrate('operatorconfigs', operatorNamespace), name: 'default'})
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
