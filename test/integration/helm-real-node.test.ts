/**
 * The chart on a real Node, as a platform engineer uses it: the operator's image (`npm run image`) loaded into the
 * Node's containerd, `helm install` of `npm run chart`'s archive with 2 replicas → Ready, an annotated Ingress synced
 * into the API simulator; `helm upgrade` with changed values (3 replicas, the dashboard) takes effect; `helm uninstall`
 * runs the pre-delete hook (`uninstall --release-only` in a Job) and leaves no finalizer of the operator and no
 * namespace stuck Terminating (the operator's Namespace stays, Helm's `resource-policy: keep`, and deletes at once). Prints the times of install, upgrade and uninstall.
 *
 * Its own cluster with a Node (test/support/node.ts); skipped (pending) where a Node cannot run.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdtemp, readdir, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import yaml from 'js-yaml'
import {allCrds} from '../../src/crds/index.js'
import {KubeClient, resourcePath, type KubeObject, type ResourceRef} from '../../src/kube/client.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {RELEASE_HOOK_NAME} from '../../src/operator/chart/release-hook.js'
import {operatorFinalizers} from '../../src/operator/install/uninstall.js'
import {operatorVersion} from '../../src/version.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {freshNamespace} from '../support/cluster.js'
import {helm} from '../support/helm.js'
import {nodeUnsupportedReason, startCluster, type NodeCluster} from '../support/node.js'
import {eventually} from '../support/helpers.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
const unsupported = nodeUnsupportedReason()
const suite = unsupported ? describe.skip : describe

const NAMESPACE = 'polycrate'
const RELEASE = 'polycrate-operator'
const ref = (group: string, version: string, plural: string, namespace?: string, name?: string): ResourceRef => ({group, version, plural, namespace, name})

type Pod = KubeObject & {status?: {conditions?: Array<{type: string; status: string}>}}
type Deployment = KubeObject & {spec: {replicas: number}; status?: {readyReplicas?: number; updatedReplicas?: number; observedGeneration?: number}}
const isReady = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && pod.metadata!.deletionTimestamp === undefined

suite(`the Helm chart on a real Node: helm install (2 replicas), upgrade, uninstall${unsupported ? ` (skipped: ${unsupported})` : ''}`, function () {
  this.timeout(600_000)
  let cluster: NodeCluster
  let client: KubeClient
  let sim: ApiSimulator
  let workspaceId: string
  let apps: string
  let archive: string
  let dir: string
  const figures: Record<string, string> = {}
  const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`

  const list = async <T extends KubeObject>(where: ResourceRef, labelSelector?: string) =>
    (await client.request<{items: T[]}>({path: resourcePath(where), query: {labelSelector}})).items
  const pods = () => list<Pod>(ref('', 'v1', 'pods', NAMESPACE), 'app.kubernetes.io/name=polycrate-operator')
  const deployment = () => client.getOrUndefined<Deployment>(ref('apps', 'v1', 'deployments', NAMESPACE, 'polycrate-operator'))
  const kube = () => ['--kubeconfig', cluster.kubeconfigPath]
  const valuesFile = async (name: string, values: unknown) => {
    const file = path.join(dir, name)
    await writeFile(file, yaml.dump(values))
    return file
  }
  const apiEndpoints = () => sim.list('endpoints').filter((e) => e.workspace === workspaceId && e.is_deleted !== true)

  before(async function () {
    this.timeout(60 * 60 * 1000) // cold builds (the image, helm) take minutes on 2 cores
    const imageDir = path.join(root, 'dist/image')
    const archiveName = () => readdir(imageDir).then((files) => files.find((file) => file.endsWith('.oci.tar')), () => undefined)
    if (!(await archiveName())) await run('bash', [path.join(root, 'scripts/image/build.sh')], {cwd: root, maxBuffer: 64 * 1024 * 1024})
    const image = path.join(imageDir, (await archiveName())!)
    archive = (await run(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/chart.ts')], {cwd: root})).stdout.trim()
    await helm(['version'])

    cluster = await startCluster({log: (line) => process.stderr.write(`[helm-real-node] ${line}\n`)})
    client = KubeClient.from(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}), {fieldManager: 'helm-real-node-test'})
    const loaded = await cluster.loadImage(image)
    assert.ok(loaded.includes(`cargo.ayedo.cloud/library/polycrate:${operatorVersion()}`), `the archive carries the chart's image (it carried ${loaded.join(', ')})`)

    sim = await ApiSimulator.start({host: cluster.hostIP})
    const organization = sim.createOrganization('helm')
    workspaceId = sim.createWorkspace({name: 'helm', organizationId: organization.id}).id
    apps = await freshNamespace(client, 'apps')
    dir = await mkdtemp(path.join(tmpdir(), 'helm-real-node-'))
  })

  after(async function () {
    this.timeout(120_000)
    for (const [name, value] of Object.entries(figures)) process.stderr.write(`[helm-real-node] ${name}: ${value}\n`)
    client?.close()
    await sim?.close()
    await cluster?.stop()
  })

  const config = () => ({
    namespace: NAMESPACE,
    deployment: {replicas: 2},
    operator_config: {
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 10, credentials: {api_token: sim.issueToken({kind: 'agent', workspaceId})}},
      local_cluster: {enabled: true, cluster_name: 'helm'},
      endpoint_discovery: {enabled: true},
    },
  })
  let values: ReturnType<typeof config>

  it('helm install with 2 replicas: the Deployment Ready (helm --wait), both Pods Ready', async () => {
    values = config()
    const started = Date.now()
    await helm(['install', RELEASE, archive, '--namespace', NAMESPACE, '--create-namespace', '-f', await valuesFile('install.yaml', values), '--wait', '--timeout', '5m', ...kube()], {timeout: 360_000})
    figures['helm install → Ready (2 replicas)'] = seconds(started)
    const running = await pods()
    assert.equal(running.length, 2)
    assert.ok(running.every(isReady), 'both Pods Ready')
    const status = (await helm(['status', RELEASE, '--namespace', NAMESPACE, '-o', 'json', ...kube()])).stdout
    assert.equal((JSON.parse(status) as {info: {status: string}}).info.status, 'deployed')
  })

  it('an annotated Ingress is synced into the API simulator', async () => {
    const started = Date.now()
    await client.create(ref('networking.k8s.io', 'v1', 'ingresses', apps), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'web', namespace: apps, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: 'web.helm.example'}]},
    })
    await eventually(async () => apiEndpoints().find((e) => e.display_name === 'web.helm.example' || e.name === `${apps}-web-helm-example`), 90_000, 'the Ingress synced into the API')
    figures['Ingress → synced into the API'] = seconds(started)
    const ingress = await client.get<KubeObject>(ref('networking.k8s.io', 'v1', 'ingresses', apps, 'web'))
    assert.ok(((ingress.metadata!.finalizers ?? []) as string[]).some((name) => operatorFinalizers().has(name)), 'the operator put its finalizer on the Ingress')
  })

  it('helm upgrade with changed values (3 replicas, the dashboard): rolled out, the dashboard ConfigMap there', async () => {
    const changed = {...values, deployment: {replicas: 3}, metrics: {dashboard: true}}
    const started = Date.now()
    await helm(['upgrade', RELEASE, archive, '--namespace', NAMESPACE, '-f', await valuesFile('upgrade.yaml', changed), '--wait', '--timeout', '5m', ...kube()], {timeout: 360_000})
    figures['helm upgrade → rolled out (3 replicas)'] = seconds(started)
    const current = (await deployment())!
    assert.equal(current.spec.replicas, 3)
    assert.equal(current.status?.readyReplicas, 3)
    assert.equal((await pods()).filter(isReady).length, 3)
    assert.ok(await client.getOrUndefined(ref('', 'v1', 'configmaps', NAMESPACE, 'polycrate-operator-dashboard')), 'the dashboard ConfigMap')
    const history = JSON.parse((await helm(['history', RELEASE, '--namespace', NAMESPACE, '-o', 'json', ...kube()])).stdout) as Array<{revision: number; status: string}>
    assert.deepEqual(history.map((entry) => [entry.revision, entry.status]), [[1, 'superseded'], [2, 'deployed']])
  })

  it('helm uninstall: the pre-delete hook releases every finalizer; users\' deletes complete, no namespace stuck Terminating', async () => {
    const started = Date.now()
    const {stdout} = await helm(['uninstall', RELEASE, '--namespace', NAMESPACE, '--wait', '--timeout', '5m', ...kube()], {timeout: 360_000})
    figures['helm uninstall (hook + deletion)'] = seconds(started)
    assert.match(stdout, /uninstalled/)
    const ours = operatorFinalizers()
    const ingress = await client.get<KubeObject>(ref('networking.k8s.io', 'v1', 'ingresses', apps, 'web'))
    assert.deepEqual(((ingress.metadata!.finalizers ?? []) as string[]).filter((name) => ours.has(name)), [], 'the Ingress keeps no finalizer of ours')
    for (const def of allCrds) {
      for (const object of await list<KubeObject>(ref('polycrate.io', 'v1alpha1', def.plural))) {
        assert.deepEqual(((object.metadata!.finalizers ?? []) as string[]).filter((name) => ours.has(name)), [], `${def.plural}/${object.metadata!.name} keeps a finalizer of ours`)
      }
    }
    // The hook's objects went with it (hook-succeeded); the operator's objects are gone; the Namespace stays (Helm's
    // resource-policy keep: the release was stored there) and is deleted without waiting for anything.
    assert.equal(await client.getOrUndefined(ref('batch', 'v1', 'jobs', NAMESPACE, RELEASE_HOOK_NAME)), undefined)
    assert.equal(await client.getOrUndefined(ref('rbac.authorization.k8s.io', 'v1', 'clusterroles', undefined, RELEASE_HOOK_NAME)), undefined)
    await eventually(async () => (await pods()).length === 0, 120_000, 'the operator\'s Pods gone')
    assert.equal(await deployment(), undefined)
    assert.equal(await client.getOrUndefined(ref('polycrate.io', 'v1alpha1', 'operatorconfigs', NAMESPACE, 'default')), undefined)
    assert.ok(await client.getOrUndefined(ref('', 'v1', 'namespaces', undefined, NAMESPACE)), 'the Namespace is kept')
    for (const namespace of [NAMESPACE, apps]) {
      await client.delete(ref('', 'v1', 'namespaces', undefined, namespace))
      await eventually(async () => (await client.getOrUndefined(ref('', 'v1', 'namespaces', undefined, namespace))) === undefined, 90_000, `namespace ${namespace} gone`)
    }
    figures['helm uninstall → both namespaces gone'] = seconds(started)
    assert.deepEqual(await list(ref('rbac.authorization.k8s.io', 'v1', 'clusterroles'), 'app.kubernetes.io/part-of=polycrate'), [])
    const hookLog = (await helm(['history', RELEASE, '--namespace', NAMESPACE, ...kube()]).then(() => 'still listed', (error: Error) => error.message))
    assert.match(hookLog, /release: not found/, 'the release is purged')
  })
})
