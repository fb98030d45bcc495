/**
 * K8sApp robustness (issue "Must show" R): a pod churn storm is no API write storm, and a SIGKILL during the
 * initial sync of 200 meta secrets leaves no duplicate K8sApp in the API.
 */
import assert from 'node:assert/strict'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {controlPlane, freshNamespace} from '../support/cluster.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually} from '../support/helpers.js'
import {killWhen, startOperator, type OperatorProcess} from '../support/operator-process.js'

type ApiObject = Record<string, unknown> & {id: string; name: string}
const pods = (namespace: string) => ({group: '', version: 'v1', plural: 'pods', namespace})

async function forEachLimit<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items]
  await Promise.all(Array.from({length: limit}, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await run(item)
  }))
}

describe('K8sApp faults (real apiserver, simulator)', function () {
  this.timeout(600_000)
  const windowSeconds = 5
  const processes: OperatorProcess[] = []
  /** The rollout test's operator (in process, `windowSeconds` sync window); the kill test runs operator processes in a namespace of its own. */
  const harness = inProcessOperator({
    spec: ({sim}) => ({api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: windowSeconds}}),
    start: false,
    cleanup: async () => {
      await Promise.all(processes.splice(0).map((operator) => operator.stop('SIGKILL')))
    },
  })
  let client: KubeClient
  let sim: ApiSimulator
  before(() => {
    ;({client, sim} = harness)
  })

  it('R: a 200-pod rollout of 20 apps within 30 s → at most one pod-status API write per app per sync window, the final state reported, 0 duplicates', async () => {
    const ns = await freshNamespace(client, 'roll')
    harness.start()
    try {
      const apps = Array.from({length: 20}, (_, i) => `roll-app-${i}`)
      const owner = async (name: string) => {
        const template = {metadata: {labels: {rs: name}}, spec: {containers: [{name: 'c', image: 'x'}]}}
        const rs = await client.create<KubeObject>({group: 'apps', version: 'v1', plural: 'replicasets', namespace: ns}, {apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: {name, namespace: ns}, spec: {selector: {matchLabels: {rs: name}}, template}})
        return {apiVersion: 'apps/v1', kind: 'ReplicaSet', name, uid: rs.metadata!.uid!, controller: true}
      }
      const readyPod = async (app: string, name: string, ownerRef: Record<string, unknown>) => {
        await client.create(pods(ns), {apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace: ns, annotations: {polycrate_k8sapp_name: app}, ownerReferences: [ownerRef]}, spec: {containers: [{name: 'c', image: `roll.example.com/${app}:1`}]}})
        await client.mergePatch({...pods(ns), name, subresource: 'status'}, {status: {phase: 'Running', conditions: [{type: 'Ready', status: 'True'}], containerStatuses: [{name: 'c', image: 'x', imageID: '', ready: true, restartCount: 0, state: {running: {}}}]}})
      }
      const generation1 = new Map<string, Record<string, unknown>>()
      for (const app of apps) generation1.set(app, await owner(`${app}-v1`))
      await forEachLimit(apps.flatMap((app) => Array.from({length: 10}, (_, i) => [app, i] as const)), 8, ([app, i]) => readyPod(app, `${app}-v1-${i}`, generation1.get(app)!))
      const reported = (generation: string) => eventually(async () => apps.every((app) => {
        const found = (sim.list('kubernetes/apps') as ApiObject[]).filter((a) => a.name === app)
        const details = found[0]?.pods_details as Array<{name: string; ready: boolean}> | undefined
        return found.length === 1 && found[0]!.pods_total === 10 && details?.every((pod) => pod.name.includes(`-${generation}-`) && pod.ready)
      }), 180_000, `the ${generation} pods of 20 apps reported`)
      await reported('v1')

      const from = sim.requests.length
      const started = Date.now()
      const generation2 = new Map<string, Record<string, unknown>>()
      for (const app of apps) generation2.set(app, await owner(`${app}-v2`))
      await forEachLimit(apps.flatMap((app) => Array.from({length: 10}, (_, i) => [app, i] as const)), 8, async ([app, i]) => {
        await readyPod(app, `${app}-v2-${i}`, generation2.get(app)!)
        await client.delete({...pods(ns), name: `${app}-v1-${i}`})
      })
      const rolloutSeconds = (Date.now() - started) / 1000
      assert.ok(rolloutSeconds <= 30, `the rollout took ${rolloutSeconds} s (more than 30 s: the machine is too slow for this test)`)
      await reported('v2')
      const elapsed = (Date.now() - started) / 1000

      const ids = new Map((sim.list('kubernetes/apps') as ApiObject[]).filter((a) => apps.includes(a.name)).map((a) => [`/api/v1/kubernetes/apps/${a.id}/`, a.name]))
      const writes = new Map<string, number[]>()
      for (const request of sim.requests.slice(from)) {
        const body = request.body as Record<string, unknown> | undefined
        if (request.method !== 'PATCH' || !ids.has(request.path) || !body || !('pods_status_hash' in body)) continue
        const app = ids.get(request.path)!
        writes.set(app, [...(writes.get(app) ?? []), Date.parse(String(body.pods_status_updated_at))])
      }
      let total = 0
      for (const app of apps) {
        const times = (writes.get(app) ?? []).sort((a, b) => a - b)
        total += times.length
        assert.ok(times.length >= 1, `${app}: the new pods were reported`)
        for (let i = 1; i < times.length; i++) {
          assert.ok(times[i]! - times[i - 1]! >= windowSeconds * 1000, `${app}: two pod-status writes ${times[i]! - times[i - 1]!} ms apart (window ${windowSeconds} s)`)
        }
        assert.ok(times.length <= Math.ceil(elapsed / windowSeconds) + 1, `${app}: ${times.length} writes in ${elapsed} s`)
      }
      process.stdout.write(`      rollout: 400 pod changes in ${rolloutSeconds.toFixed(1)} s; ${total} pod-status API writes for 20 apps until the final state (${elapsed.toFixed(1)} s, window ${windowSeconds} s)\n`)
      for (const app of apps) assert.equal((sim.list('kubernetes/apps') as ApiObject[]).filter((a) => a.name === app).length, 1, `${app}: no duplicate`)
    } finally {
      await harness.stop()
    }
  })

  it('R: SIGKILL during the initial sync of 200 meta secrets, then restart → 0 duplicate K8sApps in the API, all 200 synced', async () => {
    const {namespace: operatorNamespace} = await operatorNamespaceFor(client, sim)
    const ns = await freshNamespace(client, 'kill')
    const names = Array.from({length: 200}, (_, i) => `kill-app-${i}`)
    await forEachLimit(names, 16, async (name) => {
      await client.create({group: '', version: 'v1', plural: 'secrets', namespace: ns}, {
        apiVersion: 'v1', kind: 'Secret', metadata: {name: `${name}.poly`, namespace: ns},
        stringData: {meta: `block: {name: ${name}, version: "1.0.0", kind: polycrate}\naction: {name: install, status: success}\n`},
      })
    })
    sim.faults.set({latencyMs: 20}) // spread the sync out so the kills land in the middle of it
    const inApi = () => (sim.list('kubernetes/apps') as ApiObject[]).filter((a) => names.includes(a.name)).length
    let kills = 0
    for (let kill = 0; kill < 3; kill++) {
      const before = inApi()
      const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace, logLevel: 'info'})
      processes.push(operator)
      const target = before + 1 + Math.floor(Math.random() * 20)
      await killWhen(sim, operator, (entry) => entry.method === 'POST' && entry.resource === 'kubernetes/apps' && inApi() >= target)
      processes.splice(processes.indexOf(operator), 1)
      kills++
    }
    const created = inApi()
    assert.ok(created > 0 && created < 200, `the kills did not land during the sync: ${created} API apps`)
    sim.faults.clear()
    processes.push(await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace: operatorNamespace, logLevel: 'info'}))
    await eventually(async () => {
      const list = (await client.request<{items: Array<{status?: {phase?: string; api_id?: string}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ns}/k8sapps`})).items
      return list.length === 200 && list.every((app) => app.status?.phase === 'Synced' && app.status.api_id)
    }, 300_000, '200 K8sApps synced after the restarts')
    const all = (sim.list('kubernetes/apps') as ApiObject[]).filter((a) => names.includes(a.name))
    assert.equal(all.length, 200, 'one API app per meta secret')
    assert.equal(new Set(all.map((a) => a.name)).size, 200, '0 duplicates')
    const list = (await client.request<{items: Array<{metadata: {name: string}; status?: {api_id?: string}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ns}/k8sapps`})).items
    const byName = new Map(all.map((a) => [a.name, a.id]))
    for (const app of list) assert.equal(app.status?.api_id, byName.get(app.metadata.name), `${app.metadata.name}: the CR points at the one API app`)
    assert.equal(kills, 3)
  })
})
