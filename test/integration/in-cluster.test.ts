/**
 * The operator as production runs it: its image (`npm run image`) on a real Node, installed by
 * `polycrate operator install --values` with 2 replicas, the API simulator on the host as the Polycrate API. Proven on
 * Pods: kubelet probes, one leader, the ServiceAccount token as the only credential, an Ingress synced to the API,
 * /metrics of both replicas without a 403, JSON logs without the token, takeover after SIGKILL and after a Pod
 * deletion, a rolling update to another tag (never two writers, no duplicate, no API delete), both DNS webhooks
 * answering through their Service while the leader goes, and `uninstall` leaving no finalizer and no stuck namespace.
 *
 * Its own cluster with a Node (test/support/node.ts); skipped (pending) where a Node cannot run (not root, no
 * containerd). The image is built once (cached) when dist/image has none.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdtemp, readFile, readdir, writeFile} from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import yaml from 'js-yaml'
import {KubeClient, resourcePath, type KubeObject, type ResourceRef} from '../../src/kube/client.js'
import {installCrds} from '../../src/kube/crd-install.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {LEADER_LEASE_NAME, LEADER_POD_LABEL} from '../../src/operator/conventions.js'
import {operatorFinalizers} from '../../src/operator/install/uninstall.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'
import {operatorVersion} from '../../src/version.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {freshNamespace} from '../support/cluster.js'
import {ctr} from '../support/node-host.js'
import {nodeUnsupportedReason, startCluster, type NodeCluster} from '../support/node.js'
import {eventually} from '../support/operator-process.js'
import {upstreamCrd} from '../support/upstream-crds.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
const unsupported = nodeUnsupportedReason()
const suite = unsupported ? describe.skip : describe

const NAMESPACE = 'polycrate'
const GROUP = 'acme.polycrate.test'
const ref = (group: string, version: string, plural: string, namespace?: string, name?: string): ResourceRef => ({group, version, plural, namespace, name})
const refs = {
  pods: (name?: string) => ref('', 'v1', 'pods', NAMESPACE, name),
  deployment: () => ref('apps', 'v1', 'deployments', NAMESPACE, 'polycrate-operator'),
  lease: () => ref('coordination.k8s.io', 'v1', 'leases', NAMESPACE, LEADER_LEASE_NAME),
  service: (name: string) => ref('', 'v1', 'services', NAMESPACE, name),
  ingresses: (namespace: string, name?: string) => ref('networking.k8s.io', 'v1', 'ingresses', namespace, name),
  namespace: (name: string) => ref('', 'v1', 'namespaces', undefined, name),
}

type Pod = KubeObject & {
  spec: {containers: Array<{env?: Array<{name: string; value?: string; valueFrom?: Record<string, unknown>}>; envFrom?: unknown[]}>; volumes?: Array<Record<string, unknown> & {name: string}>; imagePullSecrets?: unknown[]}
  status?: {podIP?: string; conditions?: Array<{type: string; status: string}>; containerStatuses?: Array<{containerID?: string; restartCount: number; ready: boolean}>}
}
type Lease = KubeObject & {spec?: {holderIdentity?: string; leaseTransitions?: number}}
type Service = KubeObject & {spec: {clusterIP: string}}

const isReady = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && pod.metadata!.deletionTimestamp === undefined

/**
 * One HTTP(S) call on a fresh connection (so each goes through kube-proxy's choice anew), tried again — as the real
 * clients do (Go's transport for a refused connection; external-dns and cert-manager on their next sync) — when the
 * connection was refused or reset: a replica that was just SIGKILLed stays in the Service until kube-proxy learns it is
 * gone, and a request in flight when it died is lost. The webhooks' calls are idempotent (Present included). Up to 5
 * tries within about 2 s; anything else, or a sixth failure, counts as a failed call.
 */
async function call(options: https.RequestOptions & {body?: string; tls?: boolean}): Promise<{status: number; body: string; retries: number}> {
  const once = () => new Promise<{status: number; body: string}>((resolve, reject) => {
    const request = (options.tls ? https : http).request({...options, agent: false, timeout: 5000}, (response) => {
      let body = ''
      response.on('data', (chunk: Buffer) => (body += chunk.toString()))
      response.on('end', () => resolve({status: response.statusCode ?? 0, body}))
      response.on('error', reject)
    })
    request.on('timeout', () => request.destroy(new Error('timeout')))
    request.on('error', reject)
    request.end(options.body)
  })
  for (let retries = 0; ; retries++) {
    try {
      return {...await once(), retries}
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (retries >= 5 || (code !== 'ECONNREFUSED' && code !== 'ECONNRESET')) throw error
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** retries))
    }
  }
}

/** The block's memory request for the operator's container (its `deployment.resources.requests.memory`, 256Mi). */
const MEMORY_REQUEST = 256 * 1024 * 1024

/**
 * A container's memory as the kubelet counts it, from its cgroup (v1 here): usage, and the working set (usage less
 * inactive file pages — what eviction and `kubectl top` use); and the process' VmRSS.
 */
async function containerMemory(containerId: string): Promise<{usage: number; workingSet: number; rss: number; processRss: number}> {
  const tasks = (await ctr('tasks', 'list')).stdout.split('\n').map((line) => line.trim().split(/\s+/))
  const pid = tasks.find(([id]) => id === containerId)?.[1]
  if (!pid) throw new Error(`no task for container ${containerId}`)
  const cgroups = await readFile(`/proc/${pid}/cgroup`, 'utf8')
  const memory = cgroups.split('\n').map((line) => line.split(':')).find(([, controllers]) => controllers?.split(',').includes('memory'))?.[2]
  if (memory === undefined) throw new Error(`no memory cgroup for pid ${pid}`)
  const dir = path.join('/sys/fs/cgroup/memory', memory)
  const usage = Number((await readFile(path.join(dir, 'memory.usage_in_bytes'), 'utf8')).trim())
  const stat = new Map((await readFile(path.join(dir, 'memory.stat'), 'utf8')).split('\n').map((line) => line.split(' ') as [string, string]).map(([key, value]) => [key, Number(value)]))
  // The process' own resident set also counts the node binary's pages, which the page cache charged elsewhere.
  const processRss = Number(/^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024
  return {usage, workingSet: usage - (stat.get('total_inactive_file') ?? 0), rss: stat.get('total_rss') ?? 0, processRss}
}
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
const containerIdOf = (pod: Pod) => pod.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '')

suite(`the operator in a cluster: image, install with 2 replicas on a real Node, HA, uninstall${unsupported ? ` (skipped: ${unsupported})` : ''}`, function () {
  this.timeout(300_000)
  let cluster: NodeCluster
  let client: KubeClient
  let sim: ApiSimulator
  let workspaceId: string
  let apps: string
  let imageRef: string
  let token: string
  let valuesFile: string
  const figures: Record<string, string> = {}

  const list = async <T extends KubeObject>(where: ResourceRef, labelSelector?: string) =>
    (await client.request<{items: T[]}>({path: resourcePath(where), query: {labelSelector}})).items
  const pods = () => list<Pod>(refs.pods(), 'app.kubernetes.io/name=polycrate-operator')
  const leaseHolder = async () => (await client.getOrUndefined<Lease>(refs.lease()))?.spec?.holderIdentity
  /** The Pod that holds the lease (its identity is `<hostname = Pod name>_<uuid>`). */
  const leaderPod = async () => {
    const holder = await leaseHolder()
    return (await pods()).find((pod) => holder?.startsWith(`${pod.metadata!.name}_`))
  }
  const apiEndpoints = () => sim.list('endpoints').filter((e) => e.workspace === workspaceId && e.is_deleted !== true)
  const apiDeletes = () => sim.requests.filter((r) => r.method === 'DELETE' && !r.path.includes('/domains/dnsrecords'))
  const cli = async (args: string[]) => {
    const result = await run(process.execPath, [path.join(root, 'bin/run.js'), 'operator', ...args, '--kubeconfig', cluster.kubeconfigPath], {
      cwd: root, env: {...process.env, POLYCRATE_NO_FAST_PATH: '1'}, maxBuffer: 16 * 1024 * 1024, timeout: 280_000,
    }).catch((error: {stdout?: string; stderr?: string; code?: number}) => {
      throw new Error(`polycrate operator ${args[0]} failed (${error.code}): ${error.stdout ?? ''}\n${error.stderr ?? ''}`)
    })
    return result.stdout
  }
  const createIngress = (name: string, host: string) => client.create(refs.ingresses(apps), {
    apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
    metadata: {name, namespace: apps, annotations: {polycrate_endpoint_monitor: 'true'}},
    spec: {rules: [{host}]},
  })
  const synced = (host: string) => eventually(async () => apiEndpoints().find((e) => e.display_name === host || e.name === `${apps}-${host.replace(/\./g, '-')}`), 60_000, `${host} synced into the API`)
  /** No two API endpoints of one name: the sync never created one twice. */
  const assertNoDuplicates = () => {
    const names = apiEndpoints().map((e) => String(e.name))
    assert.deepEqual(names.filter((name, index) => names.indexOf(name) !== index), [], 'duplicate API endpoints')
  }

  before(async function () {
    // cold builds (node binaries, the image) take minutes on 2 cores
    this.timeout(60 * 60 * 1000)
    const imageDir = path.join(root, 'dist/image')
    const archiveName = () => readdir(imageDir).then((files) => files.find((file) => file.endsWith('.oci.tar')), () => undefined)
    if (!(await archiveName())) await run('bash', [path.join(root, 'scripts/image/build.sh')], {cwd: root, maxBuffer: 64 * 1024 * 1024})
    const archive = path.join(imageDir, (await archiveName())!)

    cluster = await startCluster({log: (line) => process.stderr.write(`[in-cluster] ${line}\n`)})
    client = KubeClient.from(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}), {fieldManager: 'in-cluster-test'})
    const loaded = await cluster.loadImage(archive)
    imageRef = `cargo.ayedo.cloud/library/polycrate:${operatorVersion()}`
    assert.ok(loaded.includes(imageRef), `the archive carries ${imageRef} (it carried ${loaded.join(', ')})`)
    // The DNS01 webhook's manifests include a cert-manager Issuer and Certificate (no cert-manager runs here: the
    // operator then serves with a certificate it makes itself).
    const crds = []
    for (const file of ['cert-manager.io_certificates.yaml', 'cert-manager.io_issuers.yaml']) crds.push(upstreamCrd(file) as KubeObject & {metadata: {name: string}})
    await installCrds(client, crds)

    // The Polycrate API where the Pods reach the host.
    sim = await ApiSimulator.start({host: cluster.hostIP})
    const organization = sim.createOrganization('in-cluster')
    workspaceId = sim.createWorkspace({name: 'in-cluster', organizationId: organization.id}).id
    token = sim.issueToken({kind: 'agent', workspaceId})
    sim.insert('domains/dnszones', {name: 'in-cluster.example', kind: 'internal', organization: organization.id})
    apps = await freshNamespace(client, 'apps')

    const dir = await mkdtemp(path.join(tmpdir(), 'in-cluster-'))
    valuesFile = path.join(dir, 'workspace.poly')
    await writeFile(valuesFile, yaml.dump({
      blocks: [{
        name: 'polycrate-operator', from: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator',
        config: {
          namespace: NAMESPACE,
          deployment: {replicas: 2},
          operator_config: {
            api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 10, credentials: {api_token: token}},
            local_cluster: {enabled: true, cluster_name: 'in-cluster'},
            endpoint_discovery: {enabled: true, ignore_namespaces: ['kube-system', 'kube-public']},
            external_dns_webhook: {enabled: true},
            dns01_webhook: {enabled: true, group_name: GROUP, solver_name: 'polycrate'},
          },
        },
      }],
    }))
  })

  after(async function () {
    this.timeout(120_000)
    for (const [name, value] of Object.entries(figures)) process.stderr.write(`[in-cluster] ${name}: ${value}\n`)
    client?.close()
    await sim?.close()
    await cluster?.stop()
  })

  it('`install --values` with 2 replicas: both Pods Ready through the kubelet\'s probes, one leader by its Pod label', async () => {
    const started = Date.now()
    const output = await cli(['install', '--values', valuesFile, '--timeout', '240'])
    figures['install → Ready'] = `${((Date.now() - started) / 1000).toFixed(1)} s`
    assert.match(output, /polycrate-operator/)
    const running = await pods()
    assert.equal(running.length, 2)
    assert.ok(running.every(isReady), 'both Pods Ready')
    const leader = await eventually(leaderPod, 60_000, 'a lease holder')
    await eventually(async () => {
      const labels = (await pods()).map((pod) => pod.metadata!.labels?.[LEADER_POD_LABEL])
      return labels.filter((value) => value === 'true').length === 1 && labels.filter((value) => value === 'false').length === 1
    }, 30_000, 'exactly one Pod labelled leader')
    assert.equal((await client.get<Pod>(refs.pods(leader.metadata!.name))).metadata!.labels?.[LEADER_POD_LABEL], 'true')
  })

  it('the mounted ServiceAccount token is the only credential in the Pods', async () => {
    for (const pod of await pods()) {
      for (const container of pod.spec.containers) {
        assert.equal(container.envFrom, undefined)
        for (const env of container.env ?? []) assert.ok(env.valueFrom === undefined || 'fieldRef' in env.valueFrom, `env ${env.name} comes from ${JSON.stringify(env.valueFrom)}`)
      }
      assert.equal(pod.spec.imagePullSecrets, undefined)
      const volumes = (pod.spec.volumes ?? []).map((volume) => Object.keys(volume).filter((key) => key !== 'name')[0])
      assert.deepEqual(volumes.sort(), ['emptyDir', 'projected'])
      const projected = (pod.spec.volumes ?? []).find((volume) => 'projected' in volume)!.projected as {sources: Array<Record<string, unknown>>}
      assert.deepEqual(projected.sources.map((source) => Object.keys(source)[0]).sort(), ['configMap', 'downwardAPI', 'serviceAccountToken'])
    }
  })

  it('an annotated Ingress is synced into the API, which the Pods reach on the host', async () => {
    await createIngress('web', 'web.in-cluster.example')
    await synced('web.in-cluster.example')
    assertNoDuplicates()
  })

  it('/metrics of both Pods, scraped as the metrics Service lists them: no request refused (0 × 403)', async () => {
    type Slice = KubeObject & {endpoints?: Array<{addresses: string[]}>}
    const slices = await eventually(async () => {
      const slices = await list<Slice>(ref('discovery.k8s.io', 'v1', 'endpointslices', NAMESPACE), 'kubernetes.io/service-name=polycrate-operator-metrics')
      const addresses = slices.flatMap((slice) => (slice.endpoints ?? []).flatMap((endpoint) => endpoint.addresses))
      return addresses.length === 2 ? addresses : undefined
    }, 30_000, 'both Pods behind the metrics Service')
    for (const address of slices) {
      const metrics = await call({host: address, port: 8080, path: '/metrics'})
      assert.equal(metrics.status, 200)
      assert.match(metrics.body, /^rest_client_requests_total\{/m)
      assert.doesNotMatch(metrics.body, /^rest_client_requests_total\{[^}]*code="403"/m)
      assert.match(metrics.body, /^leader_election_master_status\{/m)
    }
  })

  it('container logs are JSON lines, and the agent token is in none of them', async () => {
    for (const pod of await pods()) {
      const response = await client.stream({path: `/api/v1/namespaces/${NAMESPACE}/pods/${pod.metadata!.name}/log`, accept: '*/*'})
      let log = ''
      for await (const chunk of response) log += String(chunk)
      const lines = log.split('\n').filter((line) => line.trim() !== '')
      assert.ok(lines.length > 3, `${pod.metadata!.name} logged`)
      for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `not JSON: ${line}`)
      assert.ok(!log.includes(token), 'the token is not in the log')
    }
  })

  it('container memory (cgroup) of both replicas, idle, is below the block\'s 256Mi request', async () => {
    for (const pod of await pods()) {
      const memory = await containerMemory(containerIdOf(pod))
      const role = pod.metadata!.labels?.[LEADER_POD_LABEL] === 'true' ? 'leader' : 'standby'
      figures[`container memory idle (${role})`] = `cgroup working set ${mib(memory.workingSet)} (rss ${mib(memory.rss)}, usage ${mib(memory.usage)}); process RSS ${mib(memory.processRss)}`
      assert.ok(memory.workingSet < MEMORY_REQUEST, `${role}: working set ${mib(memory.workingSet)}`)
    }
  })

  /**
   * Calls both webhooks through their Service (ClusterIP, kube-proxy) until `done` resolves: external-dns' negotiation
   * and records, and a DNS01 Present + CleanUp with kube-apiserver's front-proxy client certificate, as the aggregator
   * sends it. Returns the counts.
   */
  async function callWebhooksUntil(done: Promise<unknown>) {
    const service = await client.get<Service>(refs.service('polycrate-operator'))
    const host = service.spec.clusterIP
    const frontProxy = cluster.frontProxy.client
    let finished = false
    void done.finally(() => (finished = true))
    const counts = {calls: 0, failed: 0, retried: 0, errors: [] as string[]}
    const attempt = async (what: string, call: () => Promise<{status: number; body: string; retries: number}>, ok: (answer: {status: number; body: string}) => boolean) => {
      counts.calls++
      try {
        const answer = await call()
        if (answer.retries > 0) counts.retried++
        if (!ok(answer)) throw new Error(`${answer.status} ${answer.body.slice(0, 200)}`)
      } catch (error) {
        counts.failed++
        counts.errors.push(`${what}: ${(error as Error).message}`)
      }
    }
    let i = 0
    while (!finished) {
      const key = `key-${i++}`
      const challenge = (action: string) => JSON.stringify({request: {uid: key, action, type: 'dns-01', dnsName: 'www.in-cluster.example', key, resolvedFQDN: '_acme-challenge.www.in-cluster.example.', resolvedZone: 'in-cluster.example.'}})
      const dns01 = (action: string) => call({
        tls: true, host, port: 443, method: 'POST', path: `/apis/${GROUP}/v1alpha1/polycrate`, headers: {'Content-Type': 'application/json'},
        body: challenge(action), cert: frontProxy.cert, key: frontProxy.key, rejectUnauthorized: false,
      })
      await Promise.all([
        attempt('external-dns GET /', () => call({host, port: 8888, path: '/', headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}}), (a) => a.status === 200 && a.body.includes('in-cluster.example')),
        attempt('external-dns GET /records', () => call({host, port: 8888, path: '/records', headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}}), (a) => a.status === 200),
        (async () => {
          // an aggregated API's create: 201 with the ChallengePayload and its response
          await attempt('DNS01 Present', () => dns01('Present'), (a) => a.status === 201 && JSON.parse(a.body).response?.success === true)
          await attempt('DNS01 CleanUp', () => dns01('CleanUp'), (a) => a.status === 201 && JSON.parse(a.body).response?.success === true)
        })(),
      ])
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return counts
  }

  /**
   * Takes the leader away (`goes`), creates an Ingress meanwhile and calls both webhooks until 3 s after another replica
   * holds the lease: the takeover within 20 s, 0 failed webhook calls, the Ingress synced, no duplicate, and at the end
   * 2 Ready Pods again (a killed container restarts as a standby; a deleted Pod is replaced).
   */
  async function takeover(what: string, goes: (leader: Pod) => Promise<unknown>, ingress: string) {
    const leader = (await leaderPod())!
    const startedAt = Date.now()
    const newLeader = eventually(async () => {
      const holder = await leaseHolder()
      return holder !== undefined && !holder.startsWith(`${leader.metadata!.name}_`) ? holder : undefined
    }, 30_000, 'another lease holder')
    const calls = callWebhooksUntil(newLeader.then(() => new Promise((resolve) => setTimeout(resolve, 3000))))
    await goes(leader)
    await createIngress(ingress, `${ingress}.in-cluster.example`)
    await newLeader
    const seconds = (Date.now() - startedAt) / 1000
    figures[`takeover after ${what}`] = `${seconds.toFixed(1)} s`
    assert.ok(seconds < 20, `took over after ${seconds} s`)
    const counted = await calls
    figures[`webhook calls during the takeover after ${what}`] = `${counted.calls} calls, ${counted.failed} failed, ${counted.retried} tried again after a refused or reset connection`
    assert.deepEqual(counted.errors, [])
    assert.ok(counted.calls > 20)
    await synced(`${ingress}.in-cluster.example`)
    assertNoDuplicates()
    await eventually(async () => {
      const current = await pods()
      return current.length === 2 && current.every(isReady)
    }, 120_000, 'the Deployment back at 2 Ready Pods')
  }

  it('SIGKILL of the leader\'s container: the other replica leads within 20 s, both webhooks answer every call through their Service, an Ingress created meanwhile syncs, no duplicate', async () => {
    await takeover('SIGKILL', (leader) => ctr('tasks', 'kill', '--signal', 'SIGKILL', containerIdOf(leader)), 'during-kill')
  })

  it('`kubectl delete pod` of the leader: the other replica leads within 20 s, both webhooks answer every call through their Service, an Ingress created meanwhile syncs', async () => {
    await takeover('a Pod deletion', (leader) => client.delete(refs.pods(leader.metadata!.name)), 'during-delete')
  })

  it('a rolling update to another tag: no duplicate, no API delete, never two writers', async () => {
    const newTag = `${imageRef}-rollout`
    await ctr('images', 'tag', imageRef, newTag)
    const since = sim.requests.length
    const deletesBefore = apiDeletes().length
    // what `kubectl set image` sends: a strategic merge patch (a JSON merge patch would replace the whole container list)
    await client.request({
      method: 'PATCH', path: resourcePath(refs.deployment()), contentType: 'application/strategic-merge-patch+json',
      body: {spec: {template: {spec: {containers: [{name: 'operator', image: newTag}]}}}},
    })
    await eventually(async () => {
      const current = await pods()
      return current.length === 2 && current.every((pod) => isReady(pod) && (pod.spec.containers[0] as {image?: string}).image === newTag)
    }, 240_000, 'both Pods on the new tag and Ready').catch(async (error: Error) => {
      const states = (await pods()).map((pod) => `${pod.metadata!.name} ${(pod.spec.containers[0] as {image?: string}).image} ready=${isReady(pod)} ${JSON.stringify(pod.status?.containerStatuses?.map((c) => (c as {state?: unknown}).state))}`)
      throw new Error(`${error.message}; Pods: ${states.join('; ')}`)
    })
    await createIngress('after-rollout', 'after-rollout.in-cluster.example')
    await synced('after-rollout.in-cluster.example')
    assertNoDuplicates()
    assert.equal(apiDeletes().length, deletesBefore, 'no API delete')
    // Writers, by the caller's address, in the order of their writes (DNS records are written by any replica's webhook):
    // once another replica writes, the one before never writes again.
    const writers: string[] = []
    for (const entry of sim.requests.slice(since)) {
      if (entry.method === 'GET' || entry.path.includes('/domains/dnsrecords') || !entry.remoteAddress) continue
      if (writers.at(-1) !== entry.remoteAddress) writers.push(entry.remoteAddress)
    }
    assert.equal(new Set(writers).size, writers.length, `writers took turns: ${writers.join(' → ')}`)
  })

  it('1,000 Endpoints (500 Ingresses × 2 hosts) synced: the leader\'s container memory (cgroup) stays below the 256Mi request', async () => {
    const bulk = await freshNamespace(client, 'bulk')
    const started = Date.now()
    const names = Array.from({length: 500}, (_, i) => `app-${i}`)
    for (let i = 0; i < names.length; i += 25) {
      await Promise.all(names.slice(i, i + 25).map((name) => client.create(refs.ingresses(bulk), {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
        metadata: {name, namespace: bulk, annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: [{host: `${name}.bulk.example`}, {host: `${name}-admin.bulk.example`}]},
      })))
    }
    await eventually(async () => apiEndpoints().filter((e) => String(e.name).startsWith(`${bulk}-`)).length === 1000, 240_000, '1,000 endpoints in the API')
    figures['1,000 Endpoints synced in'] = `${((Date.now() - started) / 1000).toFixed(1)} s`
    assertNoDuplicates()
    const leader = (await leaderPod())!
    const memory = await containerMemory(containerIdOf(leader))
    figures['container memory after 1,000 Endpoints (leader)'] = `cgroup working set ${mib(memory.workingSet)} (rss ${mib(memory.rss)}, usage ${mib(memory.usage)}); process RSS ${mib(memory.processRss)}`
    assert.ok(memory.workingSet < MEMORY_REQUEST, `working set ${mib(memory.workingSet)}`)
  })

  it('`uninstall`: no finalizer of the operator on any source object, users\' deletes complete, no namespace stuck Terminating', async () => {
    await cli(['uninstall', '--values', valuesFile, '--timeout', '240'])
    const ours = operatorFinalizers()
    const ingresses = await list<KubeObject>(refs.ingresses(apps))
    assert.ok(ingresses.length >= 4)
    for (const ingress of ingresses) {
      assert.deepEqual(((ingress.metadata!.finalizers ?? []) as string[]).filter((name) => ours.has(name)), [], `${ingress.metadata!.name} keeps a finalizer of ours`)
    }
    await client.delete(refs.namespace(apps))
    await eventually(async () => (await client.getOrUndefined(refs.namespace(apps))) === undefined, 90_000, `namespace ${apps} gone`)
    assert.deepEqual(await pods(), [])
    assert.equal(existsSync(valuesFile), true)
  })
})
