/**
 * K8sApp state changes the operator makes itself, end to end: the last pod gone (the API app is uninstalled and
 * reports no pods), and a name conflict between two namespaces arising while the first app is being synced.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import type {KubeClient} from '../../src/kube/client.js'
import {silentLogger} from '../../src/lib/logger.js'
import {createOperator} from '../../src/operator/operator.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, ensureCrds, freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/operator-process.js'

type ApiApp = Record<string, unknown> & {id: string; name: string; namespace?: string | null}
const pods = (namespace: string) => ({group: '', version: 'v1', plural: 'pods', namespace})
const apps = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps', namespace})

describe('K8sApp transitions (in-process operator, real apiserver, simulator)', function () {
  this.timeout(180_000)
  let client: KubeClient
  let sim: ApiSimulator
  let stop: AbortController
  let running: Promise<void>
  const run = randomBytes(3).toString('hex')

  const createPod = async (namespace: string, name: string, app: string, ready = true) => {
    await client.create(pods(namespace), {
      apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, annotations: {polycrate_k8sapp_name: app}},
      spec: {containers: [{name: 'c', image: 'apps.example.com/team/service:1.0'}]},
    })
    if (ready) {
      await client.mergePatch({...pods(namespace), name, subresource: 'status'}, {status: {
        phase: 'Running', conditions: [{type: 'Ready', status: 'True'}],
        containerStatuses: [{name: 'c', image: 'apps.example.com/team/service:1.0', imageID: '', ready: true, restartCount: 3, started: true, state: {running: {startedAt: new Date().toISOString()}}}],
      }})
    }
  }
  const getApp = (namespace: string, name: string) => client.getOrUndefined<{status?: {api_id?: string; phase?: string}}>({...apps(namespace), name})

  before(async () => {
    await ensureCrds()
    client = adminClient()
    sim = await ApiSimulator.start()
    const {namespace} = await operatorNamespaceFor(client, sim)
    stop = new AbortController()
    running = createOperator({client, namespace, logger: silentLogger, metricsBindAddress: '0', probeBindAddress: '0'}).run(stop.signal)
    await eventually(async () => sim.list('kubernetes/clusters').length === 1, 30_000, 'the local cluster in the API')
  })
  after(async () => {
    stop?.abort()
    await running
    client?.close()
    await sim?.close()
  })

  it('the last pod gone → the API app is uninstalled and inactive with pods_total 0, no ready/available pods, no restarts, empty pods_details', async () => {
    const namespace = await freshNamespace(client, 'last')
    const name = `last-${run}`
    await createPod(namespace, 'only', name)
    const app = await eventually(async () => {
      const found = await getApp(namespace, name)
      return found?.status?.phase === 'Synced' && found.status.api_id ? found : undefined
    }, 60_000, 'app synced')
    const id = app.status!.api_id!
    await eventually(async () => sim.get('kubernetes/apps', id)?.pods_total === 1 && sim.get('kubernetes/apps', id)?.pods_ready === 1, 60_000, 'one ready pod in the API')
    await client.delete({...pods(namespace), name: 'only'})
    const gone = await eventually(async () => {
      const api = sim.get('kubernetes/apps', id) as ApiApp | undefined
      return api?.uninstalled === true ? api : undefined
    }, 60_000, 'API app marked uninstalled')
    assert.equal(gone.active, false)
    assert.deepEqual(
      [gone.pods_total, gone.pods_ready, gone.pods_available, gone.pods_unavailable, gone.pods_restart_count_total, gone.pods_restart_count_last_hour, gone.pods_details],
      [0, 0, 0, 0, 0, 0, []],
    )
  })
})
