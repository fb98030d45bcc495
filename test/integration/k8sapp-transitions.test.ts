/**
 * K8sApp state changes the operator makes itself, end to end: the last pod gone (the API app is uninstalled and
 * reports no pods), and a name conflict between two namespaces arising while the first app is being synced.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import type {KubeObject} from '../../src/kube/client.js'
import {freshNamespace} from '../support/cluster.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually} from '../support/helpers.js'

type ApiApp = Record<string, unknown> & {id: string; name: string; namespace?: string | null}
const pods = (namespace: string) => ({group: '', version: 'v1', plural: 'pods', namespace})
const apps = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps', namespace})

describe('K8sApp transitions (in-process operator, real apiserver, simulator)', function () {
  this.timeout(180_000)
  const harness = inProcessOperator()
  const run = randomBytes(3).toString('hex')

  const createPod = async (namespace: string, name: string, app: string, ready = true) => {
    await harness.client.create(pods(namespace), {
      apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, annotations: {polycrate_k8sapp_name: app}},
      spec: {containers: [{name: 'c', image: 'apps.example.com/team/service:1.0'}]},
    })
    if (ready) {
      await harness.client.mergePatch({...pods(namespace), name, subresource: 'status'}, {status: {
        phase: 'Running', conditions: [{type: 'Ready', status: 'True'}],
        containerStatuses: [{name: 'c', image: 'apps.example.com/team/service:1.0', imageID: '', ready: true, restartCount: 3, started: true, state: {running: {startedAt: new Date().toISOString()}}}],
      }})
    }
  }
  const apiAppsNamed = (name: string) => (harness.sim.list('kubernetes/apps') as ApiApp[]).filter((app) => app.name === name && !app.is_deleted)
  const events = async (namespace: string, name: string) =>
    (await harness.client.request<{items: Array<{type: string; reason: string}>}>({path: `/api/v1/namespaces/${namespace}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items
  const getApp = (namespace: string, name: string) => harness.client.getOrUndefined<KubeObject & {status?: {api_id?: string; phase?: string}}>({...apps(namespace), name})


  it('the last pod gone → the API app is uninstalled and inactive with pods_total 0, no ready/available pods, no restarts, empty pods_details', async () => {
    const namespace = await freshNamespace(harness.client, 'last')
    const name = `last-${run}`
    await createPod(namespace, 'only', name)
    const app = await eventually(async () => {
      const found = await getApp(namespace, name)
      return found?.status?.phase === 'Synced' && found.status.api_id ? found : undefined
    }, 60_000, 'app synced')
    const id = app.status!.api_id!
    await eventually(async () => harness.sim.get('kubernetes/apps', id)?.pods_total === 1 && harness.sim.get('kubernetes/apps', id)?.pods_ready === 1, 60_000, 'one ready pod in the API')
    await harness.client.delete({...pods(namespace), name: 'only'})
    const gone = await eventually(async () => {
      const api = harness.sim.get('kubernetes/apps', id) as ApiApp | undefined
      return api?.uninstalled === true ? api : undefined
    }, 60_000, 'API app marked uninstalled')
    assert.equal(gone.active, false)
    assert.deepEqual(
      [gone.pods_total, gone.pods_ready, gone.pods_available, gone.pods_unavailable, gone.pods_restart_count_total, gone.pods_restart_count_last_hour, gone.pods_details],
      [0, 0, 0, 0, 0, 0, []],
    )
  })

  it('two pods of one app name ~100 ms apart in two namespaces (a name conflict) → no app in the API; the conflict resolved → the remaining app is synced, installed and active', async () => {
    // Three rounds: the race (the first namespace's app synced before the second pod is seen) is likely, not certain.
    const rounds = await Promise.all([0, 1, 2].map(async (round) => {
      const [ns1, ns2] = [await freshNamespace(harness.client, 'conflict'), await freshNamespace(harness.client, 'conflict')]
      return {ns1, ns2, name: `clash-${round}-${run}`}
    }))
    await Promise.all(rounds.map(async ({ns1, ns2, name}) => {
      await createPod(ns1, 'a', name, false)
      await new Promise((resolve) => setTimeout(resolve, 100))
      await createPod(ns2, 'b', name, false)
    }))
    for (const {ns1, ns2, name} of rounds) {
      for (const [namespace, pod] of [[ns1, 'a'], [ns2, 'b']] as const) {
        await eventually(async () => (await events(namespace, pod)).some((event) => event.type === 'Warning' && event.reason === 'K8sAppNameConflict'), 60_000, `conflict Warning on ${namespace}/${pod}`)
      }
      await eventually(async () => !(await getApp(ns1, name)) && !(await getApp(ns2, name)), 60_000, 'no K8sApp CR for the conflicting name')
    }
    // Settled: every CR gone with its finalizer released (a sync in flight has finished).
    for (const {name} of rounds) assert.deepEqual(apiAppsNamed(name).map((app) => `${app.namespace} uninstalled=${app.uninstalled}`), [], `no API app ${name}`)

    const {ns1, ns2, name} = rounds[0]!
    await harness.client.delete({...pods(ns2), name: 'b'})
    const back = await eventually(async () => {
      const found = await getApp(ns1, name)
      return found?.status?.phase === 'Synced' && found.status.api_id ? found : undefined
    }, 60_000, 'the remaining app synced once the conflict is gone')
    const api = harness.sim.get('kubernetes/apps', back.status!.api_id!) as ApiApp
    assert.deepEqual([api.namespace, api.uninstalled, api.active], [ns1, false, true])
  })

  it('an app marked uninstalled (last pod gone) whose pod comes back → adopted: not uninstalled, active again', async () => {
    const namespace = await freshNamespace(harness.client, 'again')
    const name = `again-${run}`
    await createPod(namespace, 'first', name)
    const app = await eventually(async () => {
      const found = await getApp(namespace, name)
      return found?.status?.phase === 'Synced' && found.status.api_id ? found : undefined
    }, 60_000, 'app synced')
    const id = app.status!.api_id!
    await harness.client.delete({...pods(namespace), name: 'first'})
    await eventually(async () => harness.sim.get('kubernetes/apps', id)?.uninstalled === true, 60_000, 'API app marked uninstalled')
    await createPod(namespace, 'second', name)
    await eventually(async () => {
      const api = harness.sim.get('kubernetes/apps', id)
      return api?.uninstalled === false && api.active === true ? api : undefined
    }, 60_000, 'the same API app, active again')
    assert.equal(apiAppsNamed(name).length, 1)
  })
})
