/**
 * P4: K8sApp + Artifact discovery (and Endpoint discovery) within a memory budget, on a real control plane with
 * the operator as a real process and the Polycrate API simulator. Not a pass/fail test: it prints a table and
 * writes bench/results/k8sapps.json.
 *
 *   npm run bench:p4 [-- --pods 10000 --secrets 5000 --meta 200 --ingresses 2000 --namespaces 200 --idle-minutes 5]
 *                       [--memory-limit 1024]   (the operator in a memory cgroup with that limit, as the Deployment's
 *                                               container; the cgroup's working set beside RSS — root only)
 *
 * Everything is created straight in the apiserver before the operator starts (no kubelet: pods stay Pending): per
 * namespace pods of three ReplicaSets (the first annotated polycrate_k8sapp_name), of two Jobs and bare ones;
 * Secrets of which one per namespace is a meta secret; Ingresses with polycrate_endpoint_monitor. Then:
 * - convergence: operator start → every K8sApp Synced with its pod status reported, every Endpoint Synced, every
 *   image's Artifact present;
 * - memory: RSS, and the V8 heap after a forced GC (bench/heap-probe.cjs), after convergence and after idle;
 * - idle: kube writes and API writes (agent/health excluded) during the idle minutes (expected 0 / 0);
 * - memory per 1,000 pods: heap after GC before and after 2,000 more bare pods.
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {parseArgs} from 'node:util'
import {KubeClient} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {operatorNamespaceFor} from '../test/support/api-setup.js'
import {startControlPlane} from '../test/support/control-plane.js'
import {createMemoryCgroup} from '../test/support/memory-cgroup.js'
import {startOperator, type OperatorProcess} from '../test/support/operator-process.js'
import {parsePromText} from '../test/support/prom-text.js'
import {benchNodeOptions, ensureCrdsWith, heapProbe, namespaceNamed} from './setup.js'

const {values: flags} = parseArgs({
  args: process.argv.slice(2),
  options: {
    pods: {type: 'string', default: '10000'},
    secrets: {type: 'string', default: '5000'},
    meta: {type: 'string', default: '200'},
    ingresses: {type: 'string', default: '2000'},
    namespaces: {type: 'string', default: '200'},
    'idle-minutes': {type: 'string', default: '5'},
    concurrency: {type: 'string', default: '16'},
    'memory-limit': {type: 'string'},
  },
  strict: true,
})
const int = (name: keyof typeof flags) => {
  const value = Number(flags[name])
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive whole number`)
  return value
}
const [P, S, M, I, NS, C] = [int('pods'), int('secrets'), int('meta'), int('ingresses'), int('namespaces'), int('concurrency')]
const idleMinutes = Number(flags['idle-minutes'])
const cgroup = flags['memory-limit'] === undefined ? undefined : await createMemoryCgroup(`bench-p4-${process.pid}`, int('memory-limit') * 1024 * 1024)
if (flags['memory-limit'] !== undefined && !cgroup) {
  console.error('--memory-limit needs root and a cgroup hierarchy (v2, or v1 with the memory controller)')
  process.exit(2)
}
const started = Date.now()
const progress = (message: string) => process.stderr.write(`[p4 ${((Date.now() - started) / 1000).toFixed(1).padStart(7)}s] ${message}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits
const MiB = (bytes: number) => round(bytes / 1024 / 1024)

async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, async () => {
    for (let index = next++; index < items.length; index = next++) await work(items[index]!)
  }))
}

async function kubeWrites(operator: OperatorProcess): Promise<number> {
  const families = parsePromText(await (await fetch(operator.metricsUrl)).text())
  return (families.get('rest_client_requests_total')?.samples ?? []).filter((s) => s.labels.method !== 'GET').reduce((sum, s) => sum + s.value, 0)
}
async function rssBytes(pid: number): Promise<number> {
  return Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024
}

progress(`pods ${P}, secrets ${S} (${M} meta), ingresses ${I}, namespaces ${NS}, idle ${idleMinutes} min`)
const controlPlane = await startControlPlane({log: (line) => progress(`[control plane] ${line}`)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const sim = await ApiSimulator.start()
let operator: OperatorProcess | undefined
try {
  await ensureCrdsWith(client)
  const {namespace: operatorNs} = await operatorNamespaceFor(client, sim, {api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 60}})
  const namespaces = Array.from({length: NS}, (_, i) => `p4-${String(i).padStart(3, '0')}`)
  for (const ns of namespaces) await namespaceNamed(client, ns)
  const t0 = Date.now()
  // Owners: 3 ReplicaSets and 2 Jobs per namespace (the garbage collector runs: owners must exist).
  const owners = new Map<string, {apiVersion: string; kind: string; name: string; uid: string; controller: true}>()
  const template = {metadata: {labels: {p4: 'x'}}, spec: {containers: [{name: 'c', image: 'x'}], restartPolicy: 'Never'}}
  await pool(namespaces.flatMap((ns) => [0, 1, 2, 3, 4].map((k) => [ns, k] as const)), C, async ([ns, k]) => {
    const job = k >= 3
    const name = job ? `job-${k}` : `rs-${k}`
    const created = job
      ? await client.create<{metadata: {uid: string}}>({group: 'batch', version: 'v1', plural: 'jobs', namespace: ns}, {apiVersion: 'batch/v1', kind: 'Job', metadata: {name, namespace: ns}, spec: {template}})
      : await client.create<{metadata: {uid: string}}>({group: 'apps', version: 'v1', plural: 'replicasets', namespace: ns}, {apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: {name, namespace: ns}, spec: {selector: {matchLabels: {p4: 'x'}}, template: {...template, spec: {...template.spec, restartPolicy: 'Always'}}}})
    owners.set(`${ns}/${name}`, {apiVersion: job ? 'batch/v1' : 'apps/v1', kind: job ? 'Job' : 'ReplicaSet', name, uid: created.metadata.uid, controller: true})
  })
  const perNs = Math.ceil(P / NS)
  const images = new Set<string>()
  const podSpecs = Array.from({length: P}, (_, i) => {
    const n = i % NS
    const ns = namespaces[n]!
    const k = Math.floor(i / NS) % perNs
    // 60 % in ReplicaSets (the first annotated), 20 % in Jobs, 20 % bare.
    const slot = k % 10
    const owner = slot < 6 ? owners.get(`${ns}/rs-${slot % 3}`) : slot < 8 ? owners.get(`${ns}/job-${3 + (slot % 2)}`) : undefined
    const image = `bench.example.com/team-${n % 20}/svc-${slot % 3}:1.${n % 3}`
    images.add(image)
    return {ns, name: `pod-${i}`, owner, image, app: owner?.name === 'rs-0' ? `app-${n}` : undefined}
  })
  await pool(podSpecs, C, async (spec) => {
    await client.create({group: '', version: 'v1', plural: 'pods', namespace: spec.ns}, {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {name: spec.name, namespace: spec.ns, ...(spec.app ? {annotations: {polycrate_k8sapp_name: spec.app}} : {}), ...(spec.owner ? {ownerReferences: [spec.owner]} : {})},
      spec: {containers: [{name: 'app', image: spec.image, env: [{name: 'CONFIG', value: 'x'.repeat(200)}]}, {name: 'sidecar', image: 'bench.example.com/mesh/proxy:1'}]},
    })
  })
  images.add('bench.example.com/mesh/proxy:1')
  progress(`${P} pods created`)
  await pool(Array.from({length: S}, (_, i) => i), C, async (i) => {
    const ns = namespaces[i % NS]!
    const meta = i < M
    await client.create({group: '', version: 'v1', plural: 'secrets', namespace: ns}, {
      apiVersion: 'v1', kind: 'Secret', metadata: {name: meta ? `block-${i}.poly` : `secret-${i}`, namespace: ns},
      stringData: meta
        ? {meta: `block: {name: block-${i}, version: "1.0.${i}", kind: helm}\nworkspace: {name: bench}\naction: {name: install, status: success}\n`}
        : {'tls.key': 'k'.repeat(2048), 'tls.crt': 'c'.repeat(2048)},
    })
  })
  progress(`${S} secrets created`)
  await pool(Array.from({length: I}, (_, i) => i), C, async (i) => {
    const ns = namespaces[i % NS]!
    await client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ns}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: `web-${i}`, namespace: ns, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: `web-${i}.${ns}.bench.example.com`}]},
    })
  })
  progress(`${I} ingresses created; objects created in ${round((Date.now() - t0) / 1000)} s; starting the operator`)

  const expectedApps = M + Math.min(NS, P)
  const operatorStart = Date.now()
  operator = await startOperator({
    kubeconfig: controlPlane.kubeconfigPath, namespace: operatorNs, logLevel: 'warn',
    env: {NODE_OPTIONS: benchNodeOptions()},
    ...(cgroup ? {wrap: cgroup.wrap} : {}),
  })
  const list = async <T>(p: string) => {
    const items: T[] = []
    let token: string | undefined
    do {
      const page = await client.request<{items: T[]; metadata: {continue?: string}}>({path: p, query: {limit: 1000, continue: token}})
      items.push(...page.items)
      token = page.metadata.continue || undefined
    } while (token)
    return items
  }
  for (;;) {
    const apps = await list<{status?: {phase?: string; api_id?: string; pods_status_hash?: string}}>('/apis/polycrate.io/v1alpha1/k8sapps')
    const endpoints = await list<{status?: {phase?: string}}>('/apis/polycrate.io/v1alpha1/endpoints')
    const artifacts = await list<unknown>('/apis/polycrate.io/v1alpha1/artifacts')
    const appsDone = apps.filter((a) => a.status?.phase === 'Synced' && a.status.api_id && a.status.pods_status_hash).length
    const endpointsDone = endpoints.filter((e) => e.status?.phase === 'Synced').length
    progress(`K8sApps ${appsDone}/${expectedApps}, Endpoints ${endpointsDone}/${I}, Artifacts ${artifacts.length}/${images.size}`)
    if (appsDone >= expectedApps && endpointsDone >= I && artifacts.length >= images.size) break
    if (Date.now() - operatorStart > 40 * 60_000) throw new Error('no convergence within 40 minutes')
    await sleep(5000)
  }
  const convergenceSeconds = round((Date.now() - operatorStart) / 1000)
  progress(`converged in ${convergenceSeconds} s; settling 30 s`)
  await sleep(30_000)
  const converged = {...(await heapProbe(operator)), rssNow: await rssBytes(operator.pid), workingSet: await cgroup?.workingSetBytes()}
  const kubeBefore = await kubeWrites(operator)
  const simBefore = sim.requests.length
  const idleStart = Date.now()
  progress(`idle for ${idleMinutes} min`)
  await sleep(idleMinutes * 60_000)
  const idleMin = (Date.now() - idleStart) / 60_000
  const kubeIdle = (await kubeWrites(operator)) - kubeBefore
  const apiIdle = sim.requests.slice(simBefore).filter((r) => r.method !== 'GET' && r.resource !== 'agent/health')
  const afterIdle = {...(await heapProbe(operator)), rssNow: await rssBytes(operator.pid), workingSet: await cgroup?.workingSetBytes()}

  // Memory per 1,000 pods: 2,000 more bare pods (not annotated, an image already known).
  const extra = 2000
  await pool(Array.from({length: extra}, (_, i) => i), C, async (i) => {
    const ns = namespaces[i % NS]!
    await client.create({group: '', version: 'v1', plural: 'pods', namespace: ns}, {
      apiVersion: 'v1', kind: 'Pod', metadata: {name: `extra-${i}`, namespace: ns},
      spec: {containers: [{name: 'app', image: 'bench.example.com/mesh/proxy:1', env: [{name: 'CONFIG', value: 'x'.repeat(200)}]}]},
    })
  })
  await sleep(60_000)
  const withExtra = await heapProbe(operator)
  const perThousandPods = (withExtra.heapUsed - afterIdle.heapUsed) / (extra / 1000)

  const result = {
    parameters: {pods: P, secrets: S, metaSecrets: M, ingresses: I, namespaces: NS, idleMinutes, syncIntervalSeconds: 60, images: images.size, k8sApps: expectedApps},
    convergenceSeconds,
    memoryLimitMiB: flags['memory-limit'] === undefined ? null : int('memory-limit'),
    converged: {rssMiB: MiB(converged.rssNow), heapAfterGcMiB: MiB(converged.heapUsed), ...(converged.workingSet === undefined ? {} : {cgroupWorkingSetMiB: MiB(converged.workingSet)})},
    afterIdle: {rssMiB: MiB(afterIdle.rssNow), heapAfterGcMiB: MiB(afterIdle.heapUsed), ...(afterIdle.workingSet === undefined ? {} : {cgroupWorkingSetMiB: MiB(afterIdle.workingSet)})},
    idle: {minutes: round(idleMin, 2), kubeWrites: kubeIdle, kubeWritesPerMinute: round(kubeIdle / idleMin, 2), apiWrites: apiIdle.length, apiWritesPerMinute: round(apiIdle.length / idleMin, 2), apiWritesDetail: apiIdle.map((r) => `${r.method} ${r.resource} ${r.status}`).slice(0, 20)},
    heapPerThousandPodsKiB: round(perThousandPods / 1024),
  }
  console.table({
    'convergence (s)': result.convergenceSeconds,
    'RSS after convergence (MiB)': result.converged.rssMiB,
    'V8 heap after GC, converged (MiB)': result.converged.heapAfterGcMiB,
    ...(cgroup ? {'cgroup working set, converged (MiB)': result.converged.cgroupWorkingSetMiB} : {}),
    'RSS after idle (MiB)': result.afterIdle.rssMiB,
    ...(cgroup ? {'cgroup working set, after idle (MiB)': result.afterIdle.cgroupWorkingSetMiB} : {}),
    'V8 heap after GC, after idle (MiB)': result.afterIdle.heapAfterGcMiB,
    'idle kube writes / min': result.idle.kubeWritesPerMinute,
    'idle API writes / min': result.idle.apiWritesPerMinute,
    'heap per 1,000 pods (KiB)': result.heapPerThousandPodsKiB,
  })
  await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
  await writeFile(path.join(import.meta.dirname, 'results', 'k8sapps.json'), `${JSON.stringify(result, null, 2)}\n`)
} finally {
  await operator?.stop('SIGTERM').catch(() => {})
  client.close()
  await sim.close()
  await controlPlane.stop()
  await cgroup?.remove()
}
