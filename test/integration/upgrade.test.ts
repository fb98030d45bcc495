/**
 * Upgrade and downgrade on a real Node: the image of an earlier commit (EARLIER_COMMIT, built from a git worktree by
 * scripts/image/build-earlier.sh and cached by commit) is installed by that commit's own CLI with 2 replicas, every kind
 * is populated and synced (Endpoints from Ingresses, a K8sApp with its pod and Artifacts, Velero and CloudNativePG
 * backups and schedules, a cert-manager Certificate, an S3Bucket with its credentials Secret, a Service of type
 * LoadBalancer, the Node's Host, a PV's K8sVolume, the local cluster), then this version's CLI `install`s this
 * version's image over it. The rolling update must end with 0 API deletes, 0 duplicates (natural keys), at most one
 * API update per object (each listed with the fields it changed), no CR recreated (same uid), nothing left
 * terminating, the OperatorConfig kept (uid and spec), and writers taking turns; the new leader then syncs a new
 * Ingress and releases the finalizers the earlier version set. Then the earlier CLI installs the earlier image again
 * (a downgrade) with the same checks: the earlier version works on what this one left (the CRDs are the same
 * v1alpha1 schemas; see the README). The API writes per kind of both roll-outs are printed at the end.
 *
 * Its own cluster with a Node (test/support/node.ts); skipped (pending) where a Node cannot run (not root, no
 * containerd), and when the earlier commit is neither cached nor in this clone (a shallow clone). The images are built
 * once: this version's into dist/image (when it has none), the earlier one into ~/.cache/polycrate-operator.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import https from 'node:https'
import {mkdtemp, readFile, readdir, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import yaml from 'js-yaml'
import {KubeClient, resourcePath, type KubeObject, type ResourceRef} from '../../src/kube/client.js'
import {installCrds} from '../../src/kube/crd-install.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {finalizers, LEADER_LEASE_NAME} from '../../src/operator/conventions.js'
import {operatorVersion} from '../../src/version.js'
import {ApiSimulator, type RequestLogEntry} from '../support/api-simulator/index.js'
import {changedFields, deletesOf, duplicateKeys, formatWrites, objectIdOf, updatesPerObject, writesByKind} from '../support/api-writes.js'
import {nodeUnsupportedReason, startCluster, waitForServiceAccount, type NodeCluster} from '../support/node.js'
import {eventually} from '../support/helpers.js'
import {parsePromText} from '../support/prom-text.js'
import {upstreamCrd} from '../support/upstream-crds.js'

/** The last commit of main before the upgrade test (issue 33): the version users run before this one. */
export const EARLIER_COMMIT = 'c292fb5b6432191750ea8693b543708aa72c704c'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
const unsupported = nodeUnsupportedReason()
const suite = unsupported ? describe.skip : describe

const OPERATOR_NS = 'polycrate'
const SHOP = 'shop'
const VELERO = 'velero'
const ref = (group: string, version: string, plural: string, namespace?: string, name?: string): ResourceRef => ({group, version, plural, namespace, name})
const polycrate = (plural: string, namespace?: string, name?: string) => ref('polycrate.io', 'v1alpha1', plural, namespace, name)
const refs = {
  pods: (namespace: string, name?: string) => ref('', 'v1', 'pods', namespace, name),
  secrets: (namespace: string, name?: string) => ref('', 'v1', 'secrets', namespace, name),
  services: (namespace: string, name?: string) => ref('', 'v1', 'services', namespace, name),
  namespaces: (name?: string) => ref('', 'v1', 'namespaces', undefined, name),
  pvs: (name?: string) => ref('', 'v1', 'persistentvolumes', undefined, name),
  ingresses: (namespace: string, name?: string) => ref('networking.k8s.io', 'v1', 'ingresses', namespace, name),
  certificates: (namespace: string, name?: string) => ref('cert-manager.io', 'v1', 'certificates', namespace, name),
  velero: (plural: string, name?: string) => ref('velero.io', 'v1', plural, VELERO, name),
  cnpg: (plural: string, name?: string) => ref('postgresql.cnpg.io', 'v1', plural, SHOP, name),
  deployment: () => ref('apps', 'v1', 'deployments', OPERATOR_NS, 'polycrate-operator'),
  lease: () => ref('coordination.k8s.io', 'v1', 'leases', OPERATOR_NS, LEADER_LEASE_NAME),
  operatorConfig: () => polycrate('operatorconfigs', OPERATOR_NS, 'default'),
}

/** The polycrate.io kinds a sync controller writes to the API: its controller's name and its plural. */
const SYNC_CONTROLLERS: Array<[string, string]> = [
  ['endpoint-sync', 'endpoints'], ['host-sync', 'hosts'], ['volume-sync', 'k8svolumes'], ['backup-sync', 'backups'],
  ['backup-schedule-sync', 'backupschedules'], ['certificate-sync', 'certificates'], ['k8sapp-sync', 'k8sapps'],
  ['s3-bucket-provisioning', 's3buckets'],
]
const POLYCRATE_PLURALS = [...SYNC_CONTROLLERS.map(([, plural]) => plural), 'artifacts', 'k8sclusters', 'operatorconfigs']
/** The API collections of the objects the operator owns (duplicates are looked for there). */
const API_COLLECTIONS = ['endpoints', 'hosts', 'kubernetes/volumes', 'backups/backups', 'backups/backup-schedules', 'kubernetes/apps', 'certificates', 's3/buckets', 'kubernetes/clusters', 'loadbalancers/instances']
/** Sources of the users: what the operator may set finalizers on. */
const SOURCES: ResourceRef[] = [
  refs.ingresses(SHOP), refs.services(SHOP), refs.certificates(SHOP), refs.velero('backups'), refs.velero('schedules'),
  refs.cnpg('backups'), refs.cnpg('scheduledbackups'), refs.secrets(SHOP), refs.pvs(),
]

type Pod = KubeObject & {spec: {containers: Array<{image?: string}>}; status?: {podIP?: string; conditions?: Array<{type: string; status: string}>}}
type Lease = KubeObject & {spec?: {holderIdentity?: string}}
type Synced = KubeObject & {spec?: Record<string, unknown>; status?: Record<string, unknown> & {phase?: string}}
type Deployment = KubeObject & {metadata: {generation?: number}; status?: {observedGeneration?: number; replicas?: number; updatedReplicas?: number; readyReplicas?: number}}

const isReady = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && pod.metadata!.deletionTimestamp === undefined
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
/** The value at a dotted path of an object. */
const valueAt = (object: unknown, dotted: string) => dotted.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], object)
/** A value in a few characters, for the figures. */
const brief = (value: unknown) => {
  const text = JSON.stringify(value) ?? 'undefined'
  return text.length > 80 ? `${text.slice(0, 77)}…` : text
}

/** What the test keeps of a Kubernetes object between two points in time. */
interface KubeSeen {uid: string; resourceVersion: string; deleting: boolean; finalizers: string[]}

suite(`upgrade from ${EARLIER_COMMIT.slice(0, 7)} to this version and back, on a real Node with 2 replicas${unsupported ? ` (skipped: ${unsupported})` : ''}`, function () {
  this.timeout(300_000)
  let cluster: NodeCluster
  let client: KubeClient
  let sim: ApiSimulator
  let earlier: {cli: string; image: string}
  let currentImage: string
  const values = {earlier: '', current: ''}
  const figures: Record<string, string> = {}
  const suiteStarted = Date.now()

  const list = async <T extends KubeObject>(where: ResourceRef, labelSelector?: string) =>
    (await client.request<{items: T[]}>({path: resourcePath(where), query: {labelSelector}})).items
  const operatorPods = () => list<Pod>(refs.pods(OPERATOR_NS), 'app.kubernetes.io/name=polycrate-operator')
  const leaderPod = async () => {
    const holder = (await client.getOrUndefined<Lease>(refs.lease()))?.spec?.holderIdentity
    return (await operatorPods()).find((pod) => holder?.startsWith(`${pod.metadata!.name}_`))
  }
  /** `polycrate operator <args>` of a tree: this one's bin/run.js, or the earlier commit's. */
  const cli = async (tree: string, args: string[]) => {
    const result = await run(process.execPath, [path.join(tree, 'bin/run.js'), 'operator', ...args, '--kubeconfig', cluster.kubeconfigPath], {
      cwd: tree, env: {...process.env, POLYCRATE_NO_FAST_PATH: '1'}, maxBuffer: 16 * 1024 * 1024, timeout: 280_000,
    }).catch((error: {stdout?: string; stderr?: string; code?: number}) => {
      throw new Error(`polycrate operator ${args[0]} (${tree}) failed (${error.code}): ${error.stdout ?? ''}\n${error.stderr ?? ''}`)
    })
    return result.stdout
  }
  const apiLive = (collection: string) => sim.list(collection).filter((object) => object.is_deleted !== true)

  before(async function () {
    // cold builds (node binaries, both images) take minutes on 2 cores
    this.timeout(60 * 60 * 1000)
    const built = await run('bash', [path.join(root, 'scripts/image/build-earlier.sh'), EARLIER_COMMIT], {cwd: root, maxBuffer: 64 * 1024 * 1024})
      .catch((error: {code?: number; stderr?: string}) => {
        if (error.code === 3) return undefined
        throw new Error(`scripts/image/build-earlier.sh failed (${error.code}):\n${error.stderr ?? ''}`)
      })
    if (!built) {
      process.stderr.write(`[upgrade] skipped: commit ${EARLIER_COMMIT} is not in this clone (git fetch --unshallow) and not cached\n`)
      this.skip()
    }
    const cache = built!.stdout.trim().split('\n').at(-1)!
    earlier = {cli: path.join(cache, 'cli'), image: (await readFile(path.join(cache, 'ref'), 'utf8')).trim()}
    const earlierArchive = (await readFile(path.join(cache, 'archive'), 'utf8')).trim()

    const imageDir = path.join(root, 'dist/image')
    const archiveName = () => readdir(imageDir).then((files) => files.find((file) => file.endsWith('.oci.tar')), () => undefined)
    if (!(await archiveName())) await run('bash', [path.join(root, 'scripts/image/build.sh')], {cwd: root, maxBuffer: 64 * 1024 * 1024})
    const currentArchive = path.join(imageDir, (await archiveName())!)
    figures['images ready (earlier, this version)'] = seconds(Date.now() - suiteStarted)

    const clusterStarted = Date.now()
    cluster = await startCluster({log: (line) => process.stderr.write(`[upgrade] ${line}\n`)})
    client = KubeClient.from(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}), {fieldManager: 'upgrade-test'})
    currentImage = `cargo.ayedo.cloud/library/polycrate:${operatorVersion()}`
    for (const [archive, image] of [[earlierArchive, earlier.image], [currentArchive, currentImage]] as const) {
      const loaded = await cluster.loadImage(archive)
      assert.ok(loaded.includes(image), `${archive} carries ${image} (it carried ${loaded.join(', ')})`)
    }
    await installCrds(client, ['cert-manager.io_certificates.yaml', 'velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml']
      .map((file) => upstreamCrd(file) as KubeObject & {metadata: {name: string}}))
    figures['cluster with a Node, images loaded'] = seconds(Date.now() - clusterStarted)

    // The Polycrate API where the Pods reach the host.
    sim = await ApiSimulator.start({host: cluster.hostIP})
    const organization = sim.createOrganization('upgrade')
    const workspaceId = sim.createWorkspace({name: 'upgrade', organizationId: organization.id}).id
    const token = sim.issueToken({kind: 'agent', workspaceId})
    for (const name of [SHOP, VELERO]) await client.create(refs.namespaces(), {apiVersion: 'v1', kind: 'Namespace', metadata: {name}})

    const dir = await mkdtemp(path.join(tmpdir(), 'upgrade-'))
    const config = (imageTag?: string) => yaml.dump({
      blocks: [{
        name: 'polycrate-operator', from: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator',
        config: {
          namespace: OPERATOR_NS,
          ...(imageTag ? {image_tag: imageTag} : {}),
          deployment: {replicas: 2},
          operator_config: {
            api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 10, credentials: {api_token: token}},
            local_cluster: {enabled: true, cluster_name: 'upgrade'},
            endpoint_discovery: {enabled: true},
            app_discovery: {enabled: true},
            backup_discovery: {enabled: true, velero_namespace: VELERO, cnpg_enabled: true},
            certificate_discovery: {enabled: true},
            cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all'}},
          },
        },
      }],
    })
    values.earlier = path.join(dir, 'earlier.poly')
    values.current = path.join(dir, 'current.poly')
    await writeFile(values.earlier, config(earlier.image.split(':').at(-1)))
    await writeFile(values.current, config())
  })

  after(async function () {
    this.timeout(120_000)
    figures['whole file'] = seconds(Date.now() - suiteStarted)
    for (const [name, value] of Object.entries(figures)) process.stderr.write(`[upgrade] ${name}: ${value}\n`)
    client?.close()
    await sim?.close()
    await cluster?.stop()
  })

  // ---- what the checks read ------------------------------------------------------------------------------------

  /** Every polycrate.io CR and every user source, by `<plural> <namespace>/<name>`. */
  async function kubeState(): Promise<Map<string, KubeSeen>> {
    const seen = new Map<string, KubeSeen>()
    const add = (plural: string, item: KubeObject) => seen.set(`${plural} ${item.metadata!.namespace ?? ''}/${item.metadata!.name}`, {
      uid: item.metadata!.uid!, resourceVersion: item.metadata!.resourceVersion!, deleting: item.metadata!.deletionTimestamp !== undefined,
      finalizers: (item.metadata!.finalizers ?? []) as string[],
    })
    for (const plural of POLYCRATE_PLURALS) for (const item of await list(polycrate(plural))) add(plural, item)
    for (const source of SOURCES) for (const item of await list(source)) add(`${source.group || 'core'}/${source.plural}`, item)
    return seen
  }

  /** The API objects by `<collection>/<id>` (deleted ones too), as they are now. */
  function apiState(): Map<string, Record<string, unknown>> {
    const state = new Map<string, Record<string, unknown>>()
    for (const collection of API_COLLECTIONS) {
      for (const object of sim.list(collection, {includeDeleted: true})) state.set(`${collection}/${String(object.id)}`, structuredClone(object))
    }
    return state
  }

  /** What every sync kind still waits for (empty: all synced), plus the S3 Secret and the Service's address. */
  async function unsynced(): Promise<string[]> {
    const waiting: string[] = []
    const expected: Record<string, number> = {endpoints: 4, hosts: 1, k8svolumes: 1, backups: 2, backupschedules: 2, certificates: 1, k8sapps: 1, s3buckets: 1}
    for (const [plural, count] of Object.entries(expected)) {
      const items = await list<Synced>(polycrate(plural))
      const ready = items.filter((item) => item.status?.phase === (plural === 's3buckets' ? 'Ready' : 'Synced'))
      if (ready.length < count) waiting.push(`${plural} ${ready.length}/${count} (${items.map((i) => `${i.metadata!.name}=${i.status?.phase}`).join(', ')})`)
    }
    if (!(await client.getOrUndefined(refs.secrets(SHOP, 's3-shop-data-credentials')))) waiting.push('the S3 credentials Secret')
    const service = await client.get<KubeObject & {status?: {loadBalancer?: {ingress?: unknown[]}}}>(refs.services(SHOP, 'shop-lb'))
    if (!service.status?.loadBalancer?.ingress?.length) waiting.push('the LoadBalancer Service\'s address')
    if (!(await list(polycrate('artifacts'))).some((a) => JSON.stringify(a).includes('polycrate.local/echo'))) waiting.push('the echo image\'s Artifact')
    // The app's pod Ready and reported as such (a pod status inside the report window would otherwise be written by whichever leader comes next).
    const app = await client.getOrUndefined<Synced>(polycrate('k8sapps', SHOP, 'shop'))
    if (app?.status?.pods_total !== 1 || app.status.pods_ready !== 1) waiting.push(`the app's pod reported Ready (${JSON.stringify({total: app?.status?.pods_total, ready: app?.status?.pods_ready})})`)
    return waiting
  }

  /** The leader's metrics: reconciles per controller, and the work queues' depth and active workers (summed). */
  /**
   * /metrics of a Pod: plain http for the earlier version; this version serves it over https with the scraper's token (secure
   * metrics, its default), verified with the install's CA.
   */
  async function scrape(pod: Pod): Promise<string> {
    const secret = async (name: string, key: string) => {
      const found = await client.getOrUndefined<KubeObject & {data?: Record<string, string>}>(refs.secrets(OPERATOR_NS, name))
      return found?.data?.[key] ? Buffer.from(found.data[key], 'base64').toString('utf8') : undefined
    }
    const [token, ca] = [await secret('polycrate-operator-metrics-scraper-token', 'token'), await secret('polycrate-operator-metrics-tls', 'ca.crt')]
    if (!token || !ca || pod.spec.containers[0]!.image === earlier.image) return (await fetch(`http://${pod.status!.podIP}:8080/metrics`)).text()
    return new Promise((resolve, reject) => {
      const request = https.get({host: pod.status!.podIP, port: 8080, path: '/metrics', ca, servername: `polycrate-operator-metrics.${OPERATOR_NS}.svc`, headers: {Authorization: `Bearer ${token}`}}, (response) => {
        let body = ''
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics: ${response.statusCode} ${body.slice(0, 200)}`))))
      })
      request.on('error', reject)
    })
  }

  async function leaderMetrics(pod: Pod) {
    const text = await scrape(pod)
    const families = parsePromText(text)
    const total = (name: string) => (families.get(name)?.samples ?? []).reduce((sum, s) => sum + s.value, 0)
    const reconciles: Record<string, number> = {}
    for (const sample of families.get('controller_runtime_reconcile_total')?.samples ?? []) {
      const controller = sample.labels.controller ?? '?'
      reconciles[controller] = (reconciles[controller] ?? 0) + sample.value
    }
    return {reconciles, depth: total('workqueue_depth'), active: total('controller_runtime_active_workers'), leader: total('leader_election_master_status')}
  }

  /**
   * The roll-out to `image` is over and its leader has caught up: the Deployment rolled out, only Pods of `image`
   * (both Ready), the leader one of them, and its metrics show every sync controller has reconciled at least as many
   * times as there are CRs of its kind (the load balancer controller: Services), no work queued or in progress — on
   * two scrapes in a row with the same counts.
   */
  async function settledOn(image: string): Promise<Pod> {
    await eventually(async () => {
      const deployment = await client.get<Deployment>(refs.deployment())
      const pods = await operatorPods()
      const s = deployment.status
      return (s?.observedGeneration ?? 0) >= (deployment.metadata.generation ?? 0) && s?.replicas === 2 && s.updatedReplicas === 2 && s.readyReplicas === 2
        && pods.length === 2 && pods.every((pod) => isReady(pod) && pod.spec.containers[0]!.image === image)
    }, 240_000, `both Pods on ${image} and Ready, no other`)
    let previous: string | undefined
    return eventually(async () => {
      const leader = await leaderPod()
      if (!leader || leader.spec.containers[0]!.image !== image) return undefined
      const metrics = await leaderMetrics(leader)
      const counts: Record<string, number> = {'cloud-load-balancer': 1}
      for (const [controller, plural] of SYNC_CONTROLLERS) counts[controller] = (await list(polycrate(plural))).length
      const caughtUp = metrics.leader === 1 && metrics.depth === 0 && metrics.active === 0
        && Object.entries(counts).every(([controller, n]) => (metrics.reconciles[controller] ?? 0) >= n)
      const now = JSON.stringify(metrics.reconciles)
      const stable = caughtUp && previous === now
      previous = caughtUp ? now : undefined
      return stable ? leader : undefined
    }, 180_000, `the leader on ${image} caught up`)
  }

  /**
   * The checks of a roll-out, over the API requests from `since` on and the Kubernetes state before it; records the
   * API writes per kind and the fields each update changed.
   */
  function rollOutChecks(label: string, window: RequestLogEntry[], apiBefore: Map<string, Record<string, unknown>>, kubeBefore: Map<string, KubeSeen>, kubeAfter: Map<string, KubeSeen>) {
    figures[`${label}: API writes per kind`] = formatWrites(writesByKind(window))
    const changes: string[] = []
    for (const entry of window) {
      if ((entry.method !== 'PUT' && entry.method !== 'PATCH') || entry.status >= 400 || entry.status === 0) continue
      const key = `${entry.resource}/${objectIdOf(entry)}`
      const before = apiBefore.get(key)
      const fields = changedFields(before, entry.body).map((field) => `${field} ${brief(valueAt(before, field))} → ${brief(valueAt(entry.body, field))}`)
      changes.push(`${entry.resource} ${String(before?.name ?? objectIdOf(entry))}: ${fields.join(', ') || '(nothing changed)'}`)
    }
    figures[`${label}: API updates (fields changed)`] = changes.join('; ') || 'none'
    const moved = [...kubeAfter].filter(([key, seen]) => kubeBefore.get(key)?.resourceVersion !== seen.resourceVersion).map(([key]) => `${key}${kubeBefore.has(key) ? '' : ' (new)'}`)
    figures[`${label}: Kubernetes objects written (resourceVersion moved)`] = moved.join(', ') || 'none'

    assert.deepEqual(deletesOf(window), [], `${label}: no API delete`)
    assert.deepEqual(duplicateKeys(Object.fromEntries(API_COLLECTIONS.map((c) => [c, apiLive(c)]))), {}, `${label}: no API duplicate`)
    const twice = [...updatesPerObject(window)].filter(([, n]) => n > 1)
    assert.deepEqual(twice, [], `${label}: at most one API update per object`)
    const recreated = [...kubeBefore].filter(([key, seen]) => kubeAfter.get(key)?.uid !== seen.uid).map(([key]) => key)
    assert.deepEqual(recreated, [], `${label}: no object recreated or gone`)
    assert.deepEqual([...kubeAfter].filter(([, seen]) => seen.deleting).map(([key]) => key), [], `${label}: nothing left terminating`)
    // Writers, by the caller's address, in the order of their writes: once another replica writes, the one before never writes again.
    const writers: string[] = []
    for (const entry of window) {
      if (entry.method === 'GET' || !entry.remoteAddress) continue
      if (writers.at(-1) !== entry.remoteAddress) writers.push(entry.remoteAddress)
    }
    assert.equal(new Set(writers).size, writers.length, `${label}: writers took turns: ${writers.join(' → ')}`)
  }

  /** The version now running works: a new Ingress syncs, and deleting one the earlier roll-out synced releases its finalizers and its API endpoint. */
  async function works(label: string, created: string, deleted: string) {
    const host = `${created}.shop.example`
    await client.create(refs.ingresses(SHOP), ingress(created, [host]))
    await eventually(async () => apiLive('endpoints').some((e) => e.display_name === host || String(e.name).includes(host.replace(/\./g, '-'))), 60_000, `${label}: ${host} synced into the API`)
    const endpoint = (await list<Synced>(polycrate('endpoints', SHOP))).find((e) => e.spec?.remoteAddress === `${deleted}.shop.example`)
    assert.ok(endpoint, `the Endpoint CR of ${deleted}`)
    const apiId = String(endpoint.status?.apiID)
    await client.delete(refs.ingresses(SHOP, deleted))
    await eventually(async () => (await client.getOrUndefined(refs.ingresses(SHOP, deleted))) === undefined, 60_000, `${label}: Ingress ${deleted} gone (its finalizer released)`)
    await eventually(async () => (await client.getOrUndefined(polycrate('endpoints', SHOP, endpoint.metadata!.name))) === undefined, 60_000, `${label}: the Endpoint CR of ${deleted} gone`)
    await eventually(async () => !apiLive('endpoints').some((e) => e.id === apiId), 60_000, `${label}: the API endpoint of ${deleted} deleted`)
  }

  /** Installs with `tree`'s CLI and `valuesFile`, waits until the leader on `image` caught up, and runs the checks. */
  async function rollOut(label: string, tree: string, valuesFile: string, image: string) {
    const since = sim.requests.length
    const apiBefore = apiState()
    const kubeBefore = await kubeState()
    const configBefore = await client.get<Synced>(refs.operatorConfig())
    const started = Date.now()
    await cli(tree, ['install', '--values', valuesFile, '--timeout', '240'])
    figures[`${label}: install → rolled out`] = seconds(Date.now() - started)
    await settledOn(image)
    figures[`${label}: install → new leader caught up`] = seconds(Date.now() - started)
    const window = sim.requests.slice(since)
    rollOutChecks(label, window, apiBefore, kubeBefore, await kubeState())
    const configAfter = await client.get<Synced>(refs.operatorConfig())
    assert.equal(configAfter.metadata!.uid, configBefore.metadata!.uid, 'the OperatorConfig kept')
    assert.deepEqual(configAfter.spec, configBefore.spec, 'the OperatorConfig\'s spec kept')
  }

  const ingress = (name: string, hosts: string[]) => ({
    apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
    metadata: {name, namespace: SHOP, annotations: {polycrate_endpoint_monitor: 'true'}},
    spec: {rules: hosts.map((host) => ({host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'shop-lb', port: {number: 80}}}}]}}))},
  })

  /** Every kind the operator handles, as users make them. */
  async function populate() {
    await client.create(refs.ingresses(SHOP), ingress('web', ['web.shop.example', 'www.shop.example']))
    await client.create(refs.ingresses(SHOP), ingress('blog', ['blog.shop.example']))
    await client.create(refs.ingresses(SHOP), ingress('docs', ['docs.shop.example']))
    // A Polycrate app: its meta Secret and a running pod of it (the echo image), behind a LoadBalancer Service.
    await client.create(refs.secrets(SHOP), {
      apiVersion: 'v1', kind: 'Secret', metadata: {name: 'shop.poly', namespace: SHOP},
      stringData: {meta: [
        'block:', '  name: shop', '  display_name: "Shop"', '  version: "1.0.0"', '  kind: helm', '  type: app',
        'workspace:', '  name: upgrade', '  organization: upgrade',
        'action:', '  name: install', '  status: success', '  last_executed_at: "2026-01-01T10:00:00Z"',
      ].join('\n')},
    })
    await waitForServiceAccount(client, SHOP)
    await client.create(refs.pods(SHOP), {
      apiVersion: 'v1', kind: 'Pod', metadata: {name: 'shop-web', namespace: SHOP, labels: {app: 'shop-web'}, annotations: {polycrate_k8sapp_name: 'shop'}},
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [{
          name: 'web', image: cluster.images.echo, imagePullPolicy: 'Never', ports: [{containerPort: 8080}],
          securityContext: {runAsUser: 65532, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: ['ALL']}},
        }],
      },
    })
    await client.create(refs.services(SHOP), {
      apiVersion: 'v1', kind: 'Service', metadata: {name: 'shop-lb', namespace: SHOP},
      spec: {type: 'LoadBalancer', selector: {app: 'shop-web'}, ports: [{name: 'http', port: 80, targetPort: 8080, protocol: 'TCP'}]},
    })
    // Velero: a schedule and the backup it made.
    await client.create(refs.velero('schedules'), {
      apiVersion: 'velero.io/v1', kind: 'Schedule', metadata: {name: 'nightly', namespace: VELERO},
      spec: {schedule: '0 3 * * *', template: {ttl: '720h0m0s', includedNamespaces: [SHOP]}},
    })
    await client.create(refs.velero('backups'), {
      apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: 'nightly-20260101030000', namespace: VELERO, labels: {'velero.io/schedule-name': 'nightly'}},
      spec: {ttl: '720h0m0s', includedNamespaces: [SHOP]},
    })
    // CloudNativePG: a scheduled backup and its completed backup.
    await client.create(refs.cnpg('scheduledbackups'), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name: 'pg-nightly', namespace: SHOP},
      spec: {schedule: '0 0 3 * * *', cluster: {name: 'pg'}, method: 'barmanObjectStore'},
    })
    await client.create(refs.cnpg('backups'), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'Backup',
      metadata: {name: 'pg-nightly-20260101030000', namespace: SHOP, labels: {'cnpg.io/scheduled-backup': 'pg-nightly'}},
      spec: {cluster: {name: 'pg'}, method: 'barmanObjectStore'},
    })
    await client.mergePatch({...refs.cnpg('backups', 'pg-nightly-20260101030000'), subresource: 'status'}, {status: {
      phase: 'completed', method: 'barmanObjectStore', backupId: '20260101T030000', startedAt: '2026-01-01T03:00:00Z', stoppedAt: '2026-01-01T03:04:00Z',
    }})
    // cert-manager: an issued Certificate.
    await client.create(refs.certificates(SHOP), {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'shop-tls', namespace: SHOP},
      spec: {secretName: 'shop-tls', dnsNames: ['web.shop.example'], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
    })
    await client.mergePatch({...refs.certificates(SHOP, 'shop-tls'), subresource: 'status'}, {status: {
      conditions: [{type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: '2026-01-01T00:00:00Z'}],
      notBefore: '2026-01-01T00:00:00Z', notAfter: '2036-06-01T00:00:00Z', renewalTime: '2036-01-01T00:00:00Z', revision: 1,
    }})
    // An S3 bucket (the operator writes its credentials Secret) and a PersistentVolume.
    await client.create(polycrate('s3buckets', SHOP), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'data', namespace: SHOP}, spec: {name: 'shop-data', region: 'fsn1'}})
    await client.create(refs.pvs(), {
      apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name: 'upgrade-pv'},
      spec: {capacity: {storage: '1Gi'}, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'manual', hostPath: {path: '/tmp/upgrade-pv'}},
    })
  }

  // ---- the cases -----------------------------------------------------------------------------------------------

  it(`${EARLIER_COMMIT.slice(0, 7)}, installed by its own CLI with 2 replicas: every kind populated and synced into the API`, async () => {
    const started = Date.now()
    await cli(earlier.cli, ['install', '--values', values.earlier, '--timeout', '240'])
    await eventually(leaderPod, 60_000, 'a lease holder')
    await populate()
    let waiting: string[] = []
    await eventually(async () => {
      waiting = await unsynced()
      return waiting.length === 0
    }, 240_000, 'every kind synced').catch((error: Error) => {
      throw new Error(`${error.message}: still waiting for ${waiting.join('; ')}`)
    })
    await settledOn(earlier.image)
    figures['earlier version: install → every kind synced'] = seconds(Date.now() - started)
    const objects = Object.fromEntries(API_COLLECTIONS.map((collection) => [collection, apiLive(collection).length]))
    figures['API objects before the upgrade'] = Object.entries(objects).map(([collection, n]) => `${collection} ${n}`).join(', ')
    for (const collection of API_COLLECTIONS) assert.ok(objects[collection]! > 0, `${collection} has objects`)
    const ingressFinalizers = (await client.get(refs.ingresses(SHOP, 'blog'))).metadata!.finalizers as string[]
    assert.ok(ingressFinalizers.includes(finalizers.ingressDiscovery), 'the earlier version holds its finalizer on the Ingresses')
  })

  it('`install` of this version over it: the rolling update ends with 0 API deletes, 0 duplicates, ≤ 1 API update per object, no CR recreated, nothing terminating, the OperatorConfig kept; then it syncs and releases the earlier version\'s finalizers', async () => {
    await rollOut('upgrade', root, values.current, currentImage)
    await works('upgrade', 'after-upgrade', 'blog')
  })

  it(`back to ${EARLIER_COMMIT.slice(0, 7)} (a downgrade by its own CLI): the same checks, and it works on what this version left`, async () => {
    await rollOut('downgrade', earlier.cli, values.earlier, earlier.image)
    await works('downgrade', 'after-downgrade', 'docs')
  })
})
