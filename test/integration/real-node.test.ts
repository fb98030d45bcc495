/**
 * The cluster with a real Node (test/support/node.ts) does what a cluster does: the Node is Ready with the version of
 * test/controlplane/go.mod, a Deployment's Pods run and pass their readiness probe, Pods get a ServiceAccount token
 * that works against the apiserver through the `kubernetes` Service, aggregated ClusterRoles are filled, a ClusterIP
 * Service reaches the Pods from the host, and stopping leaves nothing on the host. It has its own cluster (the shared
 * control plane of the other tests has no Node). Skipped (pending) where a Node cannot run: not root, or no
 * containerd/runc/CNI plugins.
 */
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import http from 'node:http'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {KubeClient, type KubeObject} from '../../src/kube/client.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/helpers.js'
import {canDropTables, hostTraces, nodeUnsupportedReason, startCluster, waitForServiceAccount, type NodeCluster} from '../support/node.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const unsupported = nodeUnsupportedReason()
const suite = unsupported ? describe.skip : describe

type Pod = KubeObject & {status?: {phase?: string; podIP?: string; conditions?: Array<{type: string; status: string}>}; spec?: {nodeName?: string}}

suite(`a cluster with a real Node${unsupported ? ` (skipped: ${unsupported})` : ''}`, function () {
  this.timeout(180_000)
  let cluster: NodeCluster
  let client: KubeClient
  let namespace: string
  let tracesBefore: Awaited<ReturnType<typeof hostTraces>>
  let stopped = false

  before(async function () {
    // a cold build of kube-scheduler, kube-proxy and kubelet takes minutes on 2 cores
    this.timeout(60 * 60 * 1000)
    tracesBefore = await hostTraces()
    const started = Date.now()
    cluster = await startCluster({log: (line) => process.stderr.write(`[real node] ${line}\n`)})
    process.stderr.write(`[real node] cluster with Node Ready after ${((Date.now() - started) / 1000).toFixed(1)}s\n`)
    client = KubeClient.from(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}))
    namespace = await freshNamespace(client, 'node')
    // the serviceaccount controller creates `default`; Pods are refused until it exists
    await waitForServiceAccount(client, namespace)
  })

  after(async function () {
    this.timeout(120_000)
    client?.close()
    if (!stopped) await cluster?.stop()
  })

  it('has a Ready Node reporting the Kubernetes version of go.mod', async () => {
    const goMod = await readFile(path.resolve(here, '../controlplane/go.mod'), 'utf8')
    const version = /^\s*k8s\.io\/kubernetes (v\S+)/m.exec(goMod)?.[1]
    type Node = KubeObject & {status?: {nodeInfo?: {kubeletVersion?: string; containerRuntimeVersion?: string}; conditions?: Array<{type: string; status: string}>; addresses?: Array<{type: string; address: string}>}}
    const node = await client.get<Node>({group: '', version: 'v1', plural: 'nodes', name: cluster.nodeName})
    assert.equal(node.status?.nodeInfo?.kubeletVersion, version)
    assert.match(String(node.status?.nodeInfo?.containerRuntimeVersion), /^containerd:\/\//)
    assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True')
    assert.deepEqual(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, cluster.hostIP)
    const info = await client.request<{gitVersion: string}>({path: '/version'})
    assert.equal(info.gitVersion, version, 'the apiserver reports the same version')
  })

  it('runs a Deployment of 2 replicas whose Pods pass an httpGet readiness probe', async () => {
    await client.create({group: 'apps', version: 'v1', plural: 'deployments', namespace}, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'echo'},
      spec: {
        replicas: 2, selector: {matchLabels: {app: 'echo'}},
        template: {
          metadata: {labels: {app: 'echo'}},
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: 'echo', image: cluster.images.echo, imagePullPolicy: 'Never', ports: [{containerPort: 8080}],
              readinessProbe: {httpGet: {path: '/healthz', port: 8080}, periodSeconds: 1},
              securityContext: {runAsUser: 65532, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: ['ALL']}},
            }],
          },
        },
      },
    })
    type Deployment = KubeObject & {status?: {readyReplicas?: number}}
    await eventually(async () =>
      (await client.get<Deployment>({group: 'apps', version: 'v1', plural: 'deployments', namespace, name: 'echo'})).status?.readyReplicas === 2, 120_000, '2 ready replicas')
    const list = await client.request<{items: Pod[]}>({path: `/api/v1/namespaces/${namespace}/pods`, query: {labelSelector: 'app=echo'}})
    assert.equal(list.items.length, 2)
    for (const pod of list.items) {
      assert.equal(pod.status?.phase, 'Running')
      assert.equal(pod.spec?.nodeName, cluster.nodeName, 'scheduled by kube-scheduler')
      assert.equal(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True')
      assert.ok(pod.status?.podIP?.startsWith('10.244.0.'), `Pod IP ${pod.status?.podIP} is on the bridge`)
    }
  })

  it('mounts the ServiceAccount token, ca.crt and namespace, which work against the apiserver via the kubernetes Service', async () => {
    const list = await client.request<{items: Pod[]}>({path: `/api/v1/namespaces/${namespace}/pods`, query: {labelSelector: 'app=echo'}})
    const podIP = list.items[0]?.status?.podIP
    assert.ok(podIP)
    // the Pod POSTs a SelfSubjectReview to $KUBERNETES_SERVICE_HOST with its token, verifying TLS with its ca.crt
    const answer = JSON.parse(await httpGet(`http://${podIP}:8080/serviceaccount`)) as Record<string, unknown>
    assert.deepEqual(
      {namespace: answer.namespace, status: answer.status, username: answer.username, apiserver: answer.apiserver, error: answer.error},
      {namespace, status: 201, username: `system:serviceaccount:${namespace}:default`, apiserver: '10.0.0.1:443', error: undefined},
    )
    const rootCa = await client.get<KubeObject & {data?: Record<string, string>}>({group: '', version: 'v1', plural: 'configmaps', namespace, name: 'kube-root-ca.crt'})
    assert.equal(rootCa.data?.['ca.crt'], cluster.clusterCa?.cert)
  })

  it('fills aggregated ClusterRoles (view)', async () => {
    type Role = KubeObject & {rules?: unknown[]}
    await eventually(async () =>
      ((await client.get<Role>({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', name: 'view'})).rules?.length ?? 0) > 0, 120_000, 'rules in ClusterRole view')
  })

  it('routes a ClusterIP Service to both Pods from the host (kube-proxy)', async () => {
    type Service = KubeObject & {spec?: {clusterIP?: string}}
    const service = await client.create<Service>({group: '', version: 'v1', plural: 'services', namespace}, {
      apiVersion: 'v1', kind: 'Service', metadata: {name: 'echo'},
      spec: {selector: {app: 'echo'}, ports: [{port: 80, targetPort: 8080}]},
    })
    const ip = service.spec?.clusterIP
    assert.ok(ip?.startsWith('10.0.0.'))
    const list = await client.request<{items: Pod[]}>({path: `/api/v1/namespaces/${namespace}/pods`, query: {labelSelector: 'app=echo'}})
    const names = new Set(list.items.map((p) => p.metadata?.name))
    const seen = new Set<string>()
    await eventually(async () => {
      const body = await httpGet(`http://${ip}:80/`).catch(() => undefined)
      if (body) seen.add((JSON.parse(body) as {hostname: string}).hostname)
      return seen.size === 2
    }, 120_000, 'answers from both Pods through the Service')
    assert.deepEqual(seen, names)
  })

  it('leaves nothing on the host after stop: processes, mounts, bridge, iptables chains, directories', async function () {
    this.timeout(120_000)
    const pod = (await client.request<{items: Pod[]}>({path: `/api/v1/namespaces/${namespace}/pods`})).items[0]
    assert.ok(pod, 'Pods run before the stop')
    const during = await hostTraces()
    assert.ok(during.mounts.length > 0 && during.chains.length > 0 && during.links.includes('polycrate0'), 'a running Node leaves traces to check')
    client.close()
    stopped = true
    await cluster.stop()
    const after = await hostTraces()
    assert.deepEqual({mounts: after.mounts, links: after.links, chains: after.chains, processes: after.processes}, {mounts: [], links: [], chains: [], processes: []})
    assert.deepEqual(after.paths.filter((p) => !tracesBefore.paths.includes(p)), [], 'no directory that was not there before')
    // iptables' nf_tables backend creates its tables on first use; with `nft` the clean-up deletes them again
    if (canDropTables()) assert.deepEqual(after.tables.filter((t) => !tracesBefore.tables.includes(t)), [], 'no iptables table that was not there before')
  })
})

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // no keep-alive: every request is a new connection, which kube-proxy balances anew
    const request = http.get(url, {timeout: 5000, agent: false}, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => (response.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`${url}: HTTP ${response.statusCode}`))))
    })
    request.on('timeout', () => request.destroy(new Error(`${url}: timeout`)))
    request.on('error', reject)
  })
}
