import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import type {ArtifactSpec, ArtifactStatus} from '../../src/crds/artifact.js'
import type {K8sAppSpec, K8sAppStatus} from '../../src/crds/k8sapp.js'
import type {KubeObject} from '../../src/kube/client.js'
import {freshNamespace} from '../support/cluster.js'
import {configRef, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type AppObject = KubeObject & {spec: K8sAppSpec; status?: K8sAppStatus; metadata: {labels?: Record<string, string>; ownerReferences?: Array<{kind: string; name: string; uid: string}>; finalizers?: string[]}}
type ArtifactObject = KubeObject & {spec: ArtifactSpec; status?: ArtifactStatus}
type ApiObject = Record<string, unknown> & {id: string; name: string}
interface EventObject {
  type: string
  reason: string
  message: string
  involvedObject: {kind?: string; name?: string; namespace?: string}
}

const secrets = (namespace: string) => ({group: '', version: 'v1', plural: 'secrets', namespace})
const pods = (namespace: string) => ({group: '', version: 'v1', plural: 'pods', namespace})
const ingresses = (namespace: string) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace})
const apps = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps', namespace})
const artifacts = {group: 'polycrate.io', version: 'v1alpha1', plural: 'artifacts'}
const pvs = {group: '', version: 'v1', plural: 'persistentvolumes'}

const metaYaml = (input: {block?: string; version?: string; workspace?: string; organization?: string; action?: string; status?: string; extra?: string}) => [
  'block:',
  `  name: ${input.block ?? 'nginx-ingress'}`,
  '  display_name: "NGINX Ingress Controller"',
  `  version: "${input.version ?? '1.2.0'}"`,
  '  kind: helm',
  '  type: ingress-controller',
  '  chart: {name: ingress-nginx, version: "4.9.0", repo_url: "https://kubernetes.github.io/ingress-nginx"}',
  'workspace:',
  `  name: ${input.workspace ?? 'production'}`,
  `  organization: ${input.organization ?? 'acme-corp'}`,
  'action:',
  `  name: ${input.action ?? 'install'}`,
  `  status: ${input.status ?? 'success'}`,
  '  last_executed_at: "2025-12-20T10:00:00Z"',
  input.extra ?? '',
].join('\n')

describe('K8sApp and Artifact discovery and sync (in-process operator, real apiserver, simulator)', function () {
  this.timeout(180_000)
  let workspaceName: string
  let organizationName: string
  const ignoredNs = `k8sapp-ignored-${randomBytes(3).toString('hex')}`
  const run = randomBytes(3).toString('hex')
  const createdPvs: string[] = []
  /** The operator's clock is `harness.offsetMs` ahead: the stale artifact test moves it instead of waiting an hour. */
  const harness = inProcessOperator({
    spec: {
      artifact_discovery: {
        ignore_namespaces: ['kube-system', ignoredNs],
        registry_filter: {include_registries: [], exclude_registries: ['registry.k8s.io', 'excluded.example.com']},
        stale_cleanup_minutes: 30,
      },
    },
    setup: async () => {
      await harness.client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ignoredNs}})
    },
    cleanup: async () => {
      for (const name of createdPvs) await harness.client.delete({...pvs, name}).catch(() => {})
    },
  })

  const createSecret = (ns: string, name: string, stringData: Record<string, string> | undefined) =>
    harness.client.create(secrets(ns), {apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace: ns}, ...(stringData ? {stringData} : {})})
  /** A real owner object (the garbage collector runs: a pod owned by a missing uid would be removed). */
  const createOwner = async (ns: string, kind: 'ReplicaSet' | 'Job', name: string) => {
    const template = {metadata: {labels: {owner: name}}, spec: {containers: [{name: 'c', image: 'x'}], restartPolicy: kind === 'Job' ? 'Never' : 'Always'}}
    const owner = kind === 'Job'
      ? await harness.client.create<KubeObject>({group: 'batch', version: 'v1', plural: 'jobs', namespace: ns}, {apiVersion: 'batch/v1', kind, metadata: {name, namespace: ns}, spec: {template}})
      : await harness.client.create<KubeObject>({group: 'apps', version: 'v1', plural: 'replicasets', namespace: ns}, {apiVersion: 'apps/v1', kind, metadata: {name, namespace: ns}, spec: {selector: {matchLabels: {owner: name}}, template}})
    return {apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1', kind, name, uid: owner.metadata!.uid!, controller: true}
  }
  const createPod = async (ns: string, name: string, input: {app?: string; images?: string[]; init?: string[]; owner?: {kind: string; name: string; uid: string; apiVersion: string}; ready?: boolean; imageIDs?: Record<string, string>}) => {
    const images = input.images ?? ['apps.example.com/team/service:1.0']
    await harness.client.create(pods(ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name, namespace: ns,
        ...(input.app !== undefined ? {annotations: {polycrate_k8sapp_name: input.app}} : {}),
        ...(input.owner ? {ownerReferences: [{...input.owner, controller: true}]} : {}),
      },
      spec: {
        containers: images.map((image, i) => ({name: `c${i}`, image})),
        ...(input.init ? {initContainers: input.init.map((image, i) => ({name: `i${i}`, image}))} : {}),
      },
    })
    if (input.ready) {
      await harness.client.mergePatch({...pods(ns), name, subresource: 'status'}, {status: {
        phase: 'Running',
        conditions: [{type: 'Ready', status: 'True'}],
        containerStatuses: images.map((image, i) => ({
          name: `c${i}`, image, imageID: input.imageIDs?.[image] ?? '', ready: true, restartCount: 0, started: true,
          state: {running: {startedAt: new Date().toISOString()}},
        })),
      }})
    }
  }
  const getApp = (ns: string, name: string) => harness.client.getOrUndefined<AppObject>({...apps(ns), name})
  const syncedApp = (ns: string, name: string, what = `K8sApp ${ns}/${name} synced`) =>
    eventually(async () => {
      const app = await getApp(ns, name)
      return app?.status?.phase === 'Synced' && app.status.api_id ? app : undefined
    }, 60_000, what)
  const apiApp = (id: string) => harness.sim.get('kubernetes/apps', id) as ApiObject | undefined
  const apiAppsNamed = (name: string) => (harness.sim.list('kubernetes/apps') as ApiObject[]).filter((app) => app.name === name)
  const events = async (ns: string, name: string) =>
    (await harness.client.request<{items: EventObject[]}>({path: `/api/v1/namespaces/${ns}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items
  const eventWith = (ns: string, name: string, reason: string, what?: string) =>
    eventually(async () => (await events(ns, name)).find((event) => event.reason === reason && event.type === 'Warning'), 60_000, what ?? `Warning ${reason} on ${ns}/${name}`)
  const getArtifact = (name: string) => harness.client.getOrUndefined<ArtifactObject>({...artifacts, name})

  before(() => {
    const workspace = harness.sim.get('workspaces', harness.workspaceId)!
    workspaceName = String(workspace.name)
    organizationName = String(harness.sim.get('organizations', String(workspace.organization))?.name)
  })

  it('meta secrets → K8sApps as the seed example, the action table, owner reference, labels; synced with installed_version; deleting the secret removes the CR and uninstalls the API app', async () => {
    const ns = await freshNamespace(harness.client, 'apps')
    const rows = [
      {app: 'row-install-ok', action: 'install', status: 'success', expect: 'installed'},
      {app: 'row-install-running', action: 'install', status: 'running', expect: 'installation_running'},
      {app: 'row-install-failed', action: 'install', status: 'failed', expect: 'installation_failed'},
      {app: 'row-uninstall-ok', action: 'uninstall', status: 'success', expect: 'uninstalled'},
    ] as const
    for (const row of rows) await createSecret(ns, `${row.app}.poly`, {meta: metaYaml({block: row.app, action: row.action, status: row.status})})
    for (const row of rows) {
      const app = await syncedApp(ns, row.app)
      const flags = ['installed', 'installation_running', 'installation_failed', 'uninstalled'] as const
      for (const flag of flags) assert.equal(app.status?.[flag], flag === row.expect, `${row.app}: status.${flag}`)
      const api = apiApp(app.status!.api_id!)!
      for (const flag of flags) assert.equal(api[flag], flag === row.expect, `${row.app}: API ${flag}`)
      assert.equal(api.installed_version, '1.2.0')
      assert.equal(api.kind, 'helm')
      assert.equal(api.namespace, ns)
      assert.equal(app.status?.installed_version, '1.2.0')
    }
    const app = (await getApp(ns, 'row-install-ok'))!
    assert.deepEqual(app.spec.block, {
      name: 'row-install-ok', display_name: 'NGINX Ingress Controller', version: '1.2.0', kind: 'helm', type: 'ingress-controller',
      chart: {name: 'ingress-nginx', version: '4.9.0', repo_url: 'https://kubernetes.github.io/ingress-nginx'},
    })
    assert.deepEqual(app.spec.workspace, {name: 'production', organization: 'acme-corp'})
    assert.deepEqual(app.spec.action, {name: 'install', status: 'success', last_executed_at: '2025-12-20T10:00:00Z'})
    assert.equal(app.metadata.labels?.['k8sapps.polycrate.io/block'], 'row-install-ok')
    assert.equal(app.metadata.labels?.['k8sapps.polycrate.io/kind'], 'helm')
    assert.equal(app.metadata.labels?.['k8sapps.polycrate.io/type'], 'ingress-controller')
    assert.equal(app.metadata.labels?.polycrate_discovered, 'true')
    const secret = await harness.client.get<KubeObject>({...secrets(ns), name: 'row-install-ok.poly'})
    assert.deepEqual(app.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Secret', 'row-install-ok.poly', secret.metadata!.uid]])
    assert.ok(app.metadata.finalizers?.includes('polycrate.io/k8sapp-cleanup'))

    // An action change flips the status and the API.
    await harness.client.replace({...secrets(ns), name: 'row-install-running.poly'}, {
      apiVersion: 'v1', kind: 'Secret', metadata: {name: 'row-install-running.poly', namespace: ns},
      stringData: {meta: metaYaml({block: 'row-install-running', version: '1.3.0'})},
    })
    const flipped = await eventually(async () => {
      const current = await getApp(ns, 'row-install-running')
      const api = current?.status?.api_id ? apiApp(current.status.api_id) : undefined
      return current?.status?.installed === true && api?.installed === true && api.installed_version === '1.3.0' ? current : undefined
    }, 60_000, 'install running → success with version 1.3.0')
    assert.equal(flipped.status?.installation_running, false)

    // Secret deleted → CR gone; the API app (agent tokens may not delete K8sApps) is marked uninstalled.
    const apiId = app.status!.api_id!
    await harness.client.delete({...secrets(ns), name: 'row-install-ok.poly'})
    await eventually(async () => !(await getApp(ns, 'row-install-ok')), 60_000, 'K8sApp gone after its secret')
    const gone = apiApp(apiId)!
    assert.equal(gone.installed, false)
    assert.equal(gone.uninstalled, true)
    assert.equal(apiAppsNamed('row-install-ok').length, 1, 'no second API app')
  })

  it('adopts an API K8sApp of the same name in this cluster instead of creating a duplicate, and links the block of the named workspace', async () => {
    const ns = await freshNamespace(harness.client, 'adopt')
    const clusterId = String(harness.sim.list('kubernetes/clusters')[0]!.id)
    const existing = harness.sim.insert('kubernetes/apps', {name: 'adopt-me', k8s_cluster: clusterId, kind: 'polycrate'})
    const block = harness.sim.insert('blocks', {name: 'adopt-me-block', workspace: harness.workspaceId, organization: harness.sim.get('workspaces', harness.workspaceId)!.organization})
    await createSecret(ns, 'adopt-me.poly', {'meta.yaml': metaYaml({block: 'adopt-me-block', workspace: workspaceName, organization: organizationName, version: '2.0.0'})})
    const app = await syncedApp(ns, 'adopt-me')
    assert.equal(app.status?.api_id, existing.id, 'the existing API app is adopted')
    assert.equal(apiAppsNamed('adopt-me').length, 1, 'no duplicate')
    await eventually(async () => apiApp(String(existing.id))?.block === block.id, 30_000, 'block linked in the API')
    assert.equal((await getApp(ns, 'adopt-me'))?.status?.block_id, block.id)
    assert.equal(apiApp(String(existing.id))?.installed_version, '2.0.0')

    // The operator's own app (registered by the API sync feature) is adopted, and its version stays the running one.
    const own = apiAppsNamed('polycrate-operator')
    assert.equal(own.length, 1)
    await createSecret(harness.namespace, 'polycrate-operator.poly', {meta: metaYaml({block: 'polycrate-operator', version: '0.0.1-from-secret'})})
    const ownCr = await syncedApp(harness.namespace, 'polycrate-operator')
    assert.equal(ownCr.status?.api_id, own[0]!.id)
    assert.equal(apiAppsNamed('polycrate-operator').length, 1)
    assert.notEqual(apiApp(own[0]!.id)?.installed_version, '0.0.1-from-secret')
  })

  it('malformed meta secrets → a Warning Event on the Secret naming key and problem; an existing K8sApp stays as it was; other apps unaffected', async () => {
    const ns = await freshNamespace(harness.client, 'bad')
    await createSecret(ns, 'good.poly', {meta: metaYaml({block: 'good'})})
    await createSecret(ns, 'keep.poly', {meta: metaYaml({block: 'keep', version: '1.0.0'})})
    await syncedApp(ns, 'keep')
    const cases: Array<[string, Record<string, string> | undefined, RegExp]> = [
      ['no-data.poly', undefined, /has no data/],
      ['wrong-key.poly', {values: 'x: 1'}, /no key "meta"/],
      ['bad-yaml.poly', {meta: 'block: [unclosed\n  name: x'}, /not valid YAML/],
      ['a-list.poly', {meta: '- a\n- b'}, /a list, not a map/],
      ['block-list.poly', {meta: 'block: [1, 2]\naction: {name: install, status: success}'}, /"block" is a list/],
    ]
    for (const [name, data] of cases) await createSecret(ns, name, data)
    for (const [name, , pattern] of cases) {
      const event = await eventWith(ns, name, 'InvalidMetaSecret')
      assert.match(event.message, pattern)
      assert.equal(await getApp(ns, name.replace(/\.poly$/, '')), undefined)
    }
    // Unknown action status and a number where text belongs: the app is made, with a Warning each.
    await createSecret(ns, 'odd-status.poly', {meta: metaYaml({block: 'odd-status', status: 'exploded'})})
    await createSecret(ns, 'numeric.poly', {meta: 'block:\n  name: numeric\n  version: 1.20\naction: {name: install, status: success}'})
    assert.match((await eventWith(ns, 'odd-status.poly', 'UnknownActionStatus')).message, /exploded/)
    assert.match((await eventWith(ns, 'numeric.poly', 'MetaSecretFieldCoerced')).message, /block\.version/)
    const odd = await syncedApp(ns, 'odd-status')
    assert.equal(odd.status?.installed, undefined, 'no flags from an unknown status')
    assert.equal((await syncedApp(ns, 'numeric')).spec.block?.version, '1.2')

    // An existing K8sApp survives its secret turning unreadable.
    const before = (await getApp(ns, 'keep'))!
    await harness.client.replace({...secrets(ns), name: 'keep.poly'}, {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'keep.poly', namespace: ns}, stringData: {meta: '{{{ not yaml'}})
    await eventWith(ns, 'keep.poly', 'InvalidMetaSecret')
    const after = (await getApp(ns, 'keep'))!
    assert.deepEqual(after.spec, before.spec)
    assert.equal(after.metadata.uid, before.metadata!.uid)
    const good = await syncedApp(ns, 'good')
    assert.equal(good.status?.installed, true)
    for (const event of await events(ns, 'keep.poly')) assert.doesNotMatch(event.message, /not yaml/, 'the data is never quoted')
  })

  it('annotated pods → one external K8sApp per (namespace, name) with pod status (Job pods excluded); cross-namespace conflict → ignored with a Warning on each side; the meta secret wins; the last pod gone removes it', async () => {
    const [ns1, ns2, ns3] = [await freshNamespace(harness.client, 'lbl'), await freshNamespace(harness.client, 'lbl'), await freshNamespace(harness.client, 'lbl')]
    // Names unique per run: annotation claims are cluster-wide, and other test files share the control plane.
    const [web_, dup] = [`web-${run}`, `dup-${run}`]
    const rs = await createOwner(ns1, 'ReplicaSet', 'web-1')
    await createPod(ns1, 'web-a', {app: web_, owner: rs, ready: true})
    await createPod(ns1, 'web-b', {app: web_, owner: rs, ready: false})
    await createPod(ns1, 'web-job', {app: web_, owner: await createOwner(ns1, 'Job', 'web-migrate'), ready: true})
    await createPod(ns1, 'only-job', {app: `job-only-${run}`, owner: await createOwner(ns1, 'Job', 'cron-1'), ready: true})
    await createPod(ns1, 'other', {owner: await createOwner(ns1, 'ReplicaSet', 'db'), ready: true})
    const web = await syncedApp(ns1, web_)
    assert.equal(web.spec.kind, 'external')
    assert.equal(web.metadata.labels?.['k8sapps.polycrate.io/discovery-source'], 'pod')
    const apiWeb = await eventually(async () => {
      const api = apiApp(web.status!.api_id!)
      // The figures settle once the test's status patches are in (a write per sync window).
      return api?.pods_total === 2 && api.pods_ready === 1 ? api : undefined
    }, 60_000, 'pod status of web in the API: 2 pods (the Job pod not counted), 1 ready')
    assert.equal(apiWeb.kind, 'external')
    assert.equal(apiWeb.byoa, false)
    assert.ok(apiWeb.pods_status_hash)
    assert.equal((apiWeb.pods_details as unknown[]).length, 2)

    // A secret app counts every non-Job pod of its namespace.
    await createSecret(ns1, 'platform.poly', {meta: metaYaml({block: 'platform'})})
    const platform = await syncedApp(ns1, 'platform')
    await eventually(async () => apiApp(platform.status!.api_id!)?.pods_total === 3, 60_000, 'secret app counts web-a, web-b, other')
    assert.equal(await getApp(ns1, `job-only-${run}`), undefined, 'an app made only of Job pods is not created')

    // Cross-namespace conflict.
    await createPod(ns2, 'dup-2', {app: dup})
    await createPod(ns3, 'dup-3', {app: dup})
    const e2 = await eventWith(ns2, 'dup-2', 'K8sAppNameConflict')
    const e3 = await eventWith(ns3, 'dup-3', 'K8sAppNameConflict')
    assert.match(e2.message, new RegExp(ns3))
    assert.match(e3.message, new RegExp(ns2))
    // dup-2 came first, so ns2 may have had its app for a moment before dup-3 made it a conflict: it goes again.
    await eventually(async () => (await getApp(ns2, dup)) === undefined && (await getApp(ns3, dup)) === undefined, 60_000, 'no app for a conflicting name')
    // Resolving the conflict lets the remaining namespace have its app.
    await harness.client.delete({...pods(ns3), name: 'dup-3'})
    await syncedApp(ns2, dup, 'dup in ns2 after the conflict is gone')

    // The meta secret wins over the annotation.
    await createSecret(ns1, `${web_}.poly`, {meta: metaYaml({block: 'web-block'})})
    const won = await eventually(async () => {
      const app = await getApp(ns1, web_)
      return app?.spec.source?.kind === 'Secret' && app.status?.phase === 'Synced' ? app : undefined
    }, 60_000, 'web taken over by its meta secret')
    assert.equal(won.spec.kind, 'helm')
    assert.equal(won.status?.api_id, web.status?.api_id, 'the same API app')
    assert.equal(apiAppsNamed(web_).length, 1)
    await harness.client.delete({...secrets(ns1), name: `${web_}.poly`})
    // Back to the annotation: the final state, not the moment before the garbage collector acts on the deleted
    // Secret's owner reference (the app may go and come back in between).
    await eventually(async () => {
      const app = await getApp(ns1, web_)
      return app?.spec.source?.kind === 'Pod' && !app.metadata.deletionTimestamp && (app.metadata.ownerReferences ?? []).length === 0 && app.status?.phase === 'Synced'
    }, 60_000, 'web back to the annotation')

    // The last matching pod gone → the K8sApp goes.
    await harness.client.delete({...pods(ns1), name: 'web-a'})
    assert.ok(await getApp(ns1, web_), 'one pod left: still there')
    await harness.client.delete({...pods(ns1), name: 'web-b'})
    await eventually(async () => !(await getApp(ns1, web_)), 60_000, 'web gone with its last pod')
  })

  it('malformed annotations: an empty name and one too long for a CR → Warning Events; other apps unaffected', async () => {
    const ns = await freshNamespace(harness.client, 'badlbl')
    const fine = `fine-${run}`
    await createPod(ns, 'empty', {app: '  '})
    await createPod(ns, 'long', {app: 'x'.repeat(254)})
    await createPod(ns, 'upper', {app: 'Not_Valid'})
    await createPod(ns, 'fine', {app: fine})
    await eventWith(ns, 'empty', 'EmptyK8sAppName')
    assert.match((await eventWith(ns, 'long', 'InvalidK8sAppName')).message, /254 characters/)
    await eventWith(ns, 'upper', 'InvalidK8sAppName')
    await syncedApp(ns, fine)
    const all = (await harness.client.request<{items: AppObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ns}/k8sapps`})).items
    assert.deepEqual(all.map((app) => app.metadata!.name), [fine])
  })

  it('BYOA: an Ingress with polycrate_k8sapp_name + polycrate_k8sapp_byoa creates an external byoa K8sApp, and its Endpoint carries the app\'s API id', async () => {
    const ns = await freshNamespace(harness.client, 'byoa')
    const acme = `acme-shop-${run}`
    const ingress = (annotations: Record<string, string>) => ({
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'acme-shop', namespace: ns, annotations},
      spec: {rules: [{host: `acme-${ns}.example.com`, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]},
    })
    // The three annotations at once (as the BYOA block sets them): the Endpoint usually syncs before the app has an id.
    await harness.client.create(ingresses(ns), ingress({polycrate_endpoint_monitor: 'true', polycrate_k8sapp_name: acme, polycrate_k8sapp_byoa: 'true'}))
    await createPod(ns, 'acme-1', {app: acme, ready: true})
    const app = await syncedApp(ns, acme)
    assert.equal(app.spec.byoa, true)
    assert.equal(app.spec.kind, 'external')
    assert.equal(app.metadata.labels?.['k8sapps.polycrate.io/discovery-source'], 'ingress')
    const api = apiApp(app.status!.api_id!)!
    assert.equal(api.byoa, true)
    assert.equal(api.kind, 'external')
    // The Endpoint of the host carries the app's API id, in its status and in the API.
    const endpoint = await eventually(async () => {
      const list = (await harness.client.request<{items: Array<KubeObject & {status?: {k8sAppID?: string; apiID?: string}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ns}/endpoints`})).items
      return list.find((candidate) => candidate.status?.k8sAppID === app.status!.api_id)
    }, 60_000, 'Endpoint status.k8sAppID = the app id')
    await eventually(async () => harness.sim.get('endpoints', endpoint.status!.apiID!)?.k8s_app === app.status!.api_id, 30_000, 'API endpoint k8s_app = the app id')
    // An ingress-sourced app of the same name as pods: one app, not two.
    assert.equal(apiAppsNamed(acme).length, 1)
  })

  it('K8sVolumes link to the app through the claim\'s namespace', async () => {
    const ns = await freshNamespace(harness.client, 'vol')
    await createSecret(ns, 'db.poly', {meta: metaYaml({block: 'db'})})
    const app = await syncedApp(ns, 'db')
    const pvName = `k8sapp-pv-${randomBytes(3).toString('hex')}`
    createdPvs.push(pvName)
    await harness.client.create(pvs, {
      apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name: pvName},
      spec: {capacity: {storage: '1Gi'}, accessModes: ['ReadWriteOnce'], hostPath: {path: '/tmp/x'}, claimRef: {namespace: ns, name: 'data'}},
    })
    await eventually(async () => (harness.sim.list('kubernetes/volumes') as ApiObject[]).find((v) => v.provider_object_name === pvName && v.k8s_app === app.status!.api_id), 60_000, 'API volume linked to the app')
  })

  it('Artifacts: an image used again after it was unused loses last_seen_at (its status stays an object: no apply that leaves status null)', async () => {
    const ns = await freshNamespace(harness.client, 'again')
    const image = 'localhost:5000/team/again:1'
    await createPod(ns, 'a1', {images: [image]})
    await eventually(async () => (await getArtifact('localhost-5000-team-again-1'))?.spec.usage?.pod_count === 1, 60_000, 'the Artifact in use')
    await harness.client.delete({...pods(ns), name: 'a1'})
    await eventually(async () => (await getArtifact('localhost-5000-team-again-1'))?.status?.last_seen_at, 60_000, 'the Artifact unused (last_seen_at)')
    await createPod(ns, 'a2', {images: [image]})
    const again = await eventually(async () => {
      const found = await getArtifact('localhost-5000-team-again-1')
      return found?.spec.usage?.pod_count === 1 && !found.status?.last_seen_at ? found : undefined
    }, 60_000, 'the Artifact in use again, without last_seen_at')
    assert.deepEqual(again.status ?? {}, {})
  })

  it('Artifacts: one per image (init containers too) named from the reference, registry/repository/tag/digest, pods and namespaces; registry filters; K8sApp status.artifacts; removal only after stale_cleanup_minutes', async () => {
    const ns = await freshNamespace(harness.client, 'art')
    const digest = `sha256:${'a'.repeat(64)}`
    const nginx = 'cargo.ayedo.cloud/library/nginx:1.25.3'
    await createSecret(ns, 'shop.poly', {meta: metaYaml({block: 'shop'})})
    await createPod(ns, 'p1', {images: [nginx, 'localhost:5000/team/app'], init: ['busybox@sha256:' + 'b'.repeat(64)], ready: true, imageIDs: {[nginx]: `docker-pullable://cargo.ayedo.cloud/library/nginx@${digest}`}})
    await createPod(ns, 'p2', {images: [nginx, 'registry.k8s.io/pause:3.9', 'excluded.example.com/x:1']})
    await createPod(ignoredNs, 'p3', {images: [nginx]})
    const art = await eventually(async () => {
      const found = await getArtifact('cargo-ayedo-cloud-library-nginx-1-25-3')
      return found?.spec.usage?.pod_count === 2 && found.spec.digest ? found : undefined
    }, 60_000, 'nginx Artifact')
    assert.equal(art.spec.image, nginx)
    assert.equal(art.spec.registry, 'cargo.ayedo.cloud')
    assert.equal(art.spec.repository, 'library/nginx')
    assert.equal(art.spec.tag, '1.25.3')
    assert.equal(art.spec.digest, digest)
    assert.deepEqual(art.spec.usage?.namespaces, [ns], 'the ignored namespace does not count')
    const local = await eventually(() => getArtifact('localhost-5000-team-app'), 30_000, 'registry with a port, no tag')
    assert.equal(local.spec.registry, 'localhost:5000')
    assert.equal(local.spec.tag, 'latest')
    const digestOnly = await eventually(() => getArtifact(`busybox-sha256-${'b'.repeat(64)}`), 30_000, 'digest-only init container image')
    assert.equal(digestOnly.spec.registry, 'docker.io')
    assert.equal(digestOnly.spec.repository, 'library/busybox')
    assert.equal(digestOnly.spec.tag, undefined)
    assert.equal(digestOnly.spec.digest, `sha256:${'b'.repeat(64)}`)
    assert.equal(await getArtifact('registry-k8s-io-pause-3-9'), undefined, 'excluded registry')
    assert.equal(await getArtifact('excluded-example-com-x-1'), undefined, 'excluded registry')
    // The app's status follows the pods of its namespace on its own (not the Artifact CRs): p1 alone already gives
    // 3 artifacts with nginx in 1 pod, so wait for the state with both pods, not for the count.
    const shop = await eventually(async () => {
      const app = await getApp(ns, 'shop')
      return app?.status?.artifacts?.find((a) => a.name === 'cargo-ayedo-cloud-library-nginx-1-25-3')?.pod_count === 2 ? app : undefined
    }, 60_000, 'shop status.artifacts with both pods')
    assert.equal(shop.status?.artifact_count, 3)
    assert.deepEqual(shop.status?.artifacts?.find((a) => a.name === 'cargo-ayedo-cloud-library-nginx-1-25-3'), {name: 'cargo-ayedo-cloud-library-nginx-1-25-3', image: nginx, pod_count: 2})

    // Unused: kept with last_seen_at until stale_cleanup_minutes (30) have passed on the operator's clock.
    await harness.client.delete({...pods(ns), name: 'p1'})
    const unused = await eventually(async () => {
      const found = await getArtifact('localhost-5000-team-app')
      return found?.status?.last_seen_at && found.spec.usage?.pod_count === 0 ? found : undefined
    }, 60_000, 'localhost artifact unused')
    harness.offsetMs = 29 * 60_000
    await createPod(ignoredNs, 'nudge-1', {images: ['localhost:5000/team/app']})
    await eventually(async () => (await getArtifact('cargo-ayedo-cloud-library-nginx-1-25-3'))?.spec.usage?.pod_count === 1, 30_000, 'nginx count follows p1')
    assert.equal((await getArtifact('localhost-5000-team-app'))?.status?.last_seen_at, unused.status?.last_seen_at, 'still kept after 29 minutes')
    harness.offsetMs = 31 * 60_000
    await createPod(ignoredNs, 'nudge-2', {images: ['localhost:5000/team/app']})
    await eventually(async () => !(await getArtifact('localhost-5000-team-app')), 30_000, 'stale artifact removed after 30 minutes')
    assert.ok(await getArtifact('cargo-ayedo-cloud-library-nginx-1-25-3'), 'the artifact in use stays')
    harness.offsetMs = 0

    // include_registries: only these registries.
    await harness.client.mergePatch(configRef(harness.namespace), {spec: {artifact_discovery: {registry_filter: {include_registries: ['docker.io']}}}})
    await createPod(ns, 'p4', {images: ['nginx:1.27']})
    await eventually(() => getArtifact('nginx-1-27'), 60_000, 'docker.io artifact with include_registries [docker.io]')
    await eventually(async () => !(await getArtifact('cargo-ayedo-cloud-library-nginx-1-25-3')), 60_000, 'cargo artifact no longer included')
    await harness.client.mergePatch(configRef(harness.namespace), {spec: {artifact_discovery: {registry_filter: {include_registries: []}}}})
  })
})
