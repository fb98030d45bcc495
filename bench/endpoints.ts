/**
 * Endpoint discovery + sync at scale, on a real control plane with the operator as a real process and the
 * Polycrate API simulator. Not a pass/fail test: it prints a table and writes bench/results/endpoints.json.
 *
 *   npm run bench [-- --sizes 1000,5000 --namespaces 1 --idle-minutes 5 --samples 50 --concurrency 16]
 *   (`--ingresses N` is `--sizes N`; `--cpu-prof` writes the operator's CPU profile to bench/results/profiles/;
 *   `--root DIR` runs another build's operator, e.g. a worktree of an earlier commit, for a before/after comparison;
 *   `--memory-limit 1024` runs the operator in a memory cgroup with that limit, as the Deployment's container, and
 *   reports the cgroup's working set beside RSS — root only)
 *
 * Each size N runs in the same process, on the same control plane and against the same operator, one after the
 * other, so the cost per endpoint at two sizes sits side by side in one table (linearity at a glance):
 * B   baseline: a bare KubeClient creates 2×N Endpoint CRs with the same concurrency (all baselines run before the
 *     operator starts; their namespace is deleted and gone by then, so the operator never sees those CRs).
 * P1  N Ingresses × 2 hosts, opted in, spread round-robin over K fresh namespaces (`--namespaces`), created with
 *     that concurrency while the operator runs: time from the first create until all 2N Endpoint CRs are Synced and
 *     the simulator holds 2N live endpoints of those namespaces. Reported as a ratio to B(N), with kube writes and
 *     API calls per endpoint, CPU seconds of the operator and the apiserver, and memory: RSS and the V8 heap after
 *     a forced GC (bench/heap-probe.cjs) before and after, per object cached (N Ingresses + 2N Endpoints).
 * P2  S sequential annotation edits (polycrate_endpoint_path) on random Ingresses of that size: latency until the
 *     simulator's API objects of both hosts show the new spec.http.path (the first host is reported too).
 * P3  idle after the last size: kube writes and API writes (agent/health excluded) in the window.
 *
 * Results: bench/results/endpoints-n<sizes>-k<K>.json.
 */
import {randomBytes} from 'node:crypto'
import {access, mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parseArgs} from 'node:util'
import Table from 'cli-table3'
import {KubeApiError, KubeClient, type KubeObject} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {ApiSimulator, type RequestLogEntry} from '../test/support/api-simulator/index.js'
import {operatorNamespaceFor} from '../test/support/api-setup.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {createMemoryCgroup} from '../test/support/memory-cgroup.js'
import {startOperator, type OperatorProcess} from '../test/support/operator-process.js'
import {parsePromText} from '../test/support/prom-text.js'
import {benchNodeOptions, ensureCrdsWith, heapProbe, namespaceNamed} from './setup.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'

// ---------------------------------------------------------------------------------------------------------------
// flags

const {values: flags} = parseArgs({
  args: process.argv.slice(2),
  options: {
    ingresses: {type: 'string'},
    sizes: {type: 'string'},
    namespaces: {type: 'string', default: '1'},
    'idle-minutes': {type: 'string', default: '5'},
    samples: {type: 'string', default: '50'},
    concurrency: {type: 'string', default: '16'},
    'cpu-prof': {type: 'boolean', default: false},
    // Another build to measure (a worktree of an earlier commit with `npm run build` done): its bin/run.js runs.
    root: {type: 'string'},
    // Run the operator in a memory cgroup with this limit in MiB (root; e.g. 1024, the Deployment's): Node sizes V8
    // from it as in a container, and the cgroup's working set is reported beside RSS.
    'memory-limit': {type: 'string'},
    // More Node/V8 options for the operator (e.g. '--max-semi-space-size=4'), added to NODE_OPTIONS: to try a setting
    // before it goes into the Deployment.
    'node-options': {type: 'string', default: ''},
  },
  strict: true,
})

function positive(name: string, text: string | undefined, integer: boolean): number {
  const value = Number(text)
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    console.error(`--${name} must be a positive ${integer ? 'whole ' : ''}number, got ${JSON.stringify(text)}`)
    process.exit(2)
  }
  return value
}

if (flags.ingresses !== undefined && flags.sizes !== undefined) {
  console.error('--ingresses N is --sizes N: give one of them')
  process.exit(2)
}
const sizes = (flags.sizes ?? flags.ingresses ?? '1000').split(',').map((text) => positive('sizes', text.trim(), true))
const K = positive('namespaces', flags.namespaces, true)
const idleMinutes = positive('idle-minutes', flags['idle-minutes'], false)
const memoryLimitMiB = flags['memory-limit'] === undefined ? undefined : positive('memory-limit', flags['memory-limit'], true)
const cgroup = memoryLimitMiB ? await createMemoryCgroup(`bench-endpoints-${process.pid}`, memoryLimitMiB * 1024 * 1024) : undefined
if (memoryLimitMiB && !cgroup) {
  console.error('--memory-limit needs root and a cgroup hierarchy (v2, or v1 with the memory controller)')
  process.exit(2)
}
const samples = positive('samples', flags.samples, true)
const concurrency = positive('concurrency', flags.concurrency, true)

// ---------------------------------------------------------------------------------------------------------------
// helpers

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const startedAt = Date.now()
const progress = (message: string) => process.stderr.write(`[bench ${((Date.now() - startedAt) / 1000).toFixed(1).padStart(7)}s] ${message}\n`)
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits

/** Runs `work(i)` for i in [0, count) with at most `limit` in flight. */
async function pool(count: number, limit: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({length: Math.min(limit, count)}, async () => {
    for (let index = next++; index < count; index = next++) await work(index)
  }))
}

/** Nearest-rank percentile of ascending `sorted`. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)))
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0)
const notGet = (counts: Record<string, number>) => sum(Object.fromEntries(Object.entries(counts).filter(([method]) => method !== 'GET')))
const formatCounts = (counts: Record<string, number>) => Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ') || '0'

const endpointsRef = (namespace: string, name?: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace, name})
const ingressRef = (namespace: string, name?: string) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace, name})

type EndpointCr = KubeObject & {status?: {phase?: string; apiID?: string}}

async function listAll<T>(client: KubeClient, listPath: string): Promise<T[]> {
  const items: T[] = []
  let token: string | undefined
  do {
    const page = await client.request<{items: T[]; metadata: {continue?: string}}>({path: listPath, query: {limit: 500, continue: token}})
    items.push(...page.items)
    token = page.metadata.continue || undefined
  } while (token)
  return items
}

/** rest_client_requests_total of the operator, summed over codes, by method. */
async function kubeRequestsByMethod(operator: OperatorProcess): Promise<Record<string, number>> {
  const families = parsePromText(await (await fetch(operator.metricsUrl)).text())
  const counts: Record<string, number> = {}
  for (const sample of families.get('rest_client_requests_total')?.samples ?? []) {
    const method = sample.labels.method ?? '?'
    counts[method] = (counts[method] ?? 0) + sample.value
  }
  return counts
}

function delta(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [method, value] of Object.entries(after)) {
    const d = value - (before[method] ?? 0)
    if (d !== 0) out[method] = d
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)))
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** The pids of this run's kube-apiserver, etcd and kube-controller-manager (their command lines name the control plane's directory). */
async function controlPlanePids(dir: string): Promise<{apiserver?: number; etcd?: number; controllerManager?: number}> {
  const found: {apiserver?: number; etcd?: number; controllerManager?: number} = {}
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0')
    if (!args.some((arg) => arg.startsWith(dir))) continue
    if (args[0]?.endsWith('/kube-apiserver')) found.apiserver ??= Number(entry)
    if (args[0]?.endsWith('/kube-controller-manager')) found.controllerManager ??= Number(entry)
    if (args[0]?.endsWith('/etcd')) found.etcd ??= Number(entry)
  }
  return found
}

/** Per controller: reconciles and the seconds spent in them (controller_runtime_reconcile_*). */
async function reconcileStats(operator: OperatorProcess): Promise<Record<string, {count: number; seconds: number}>> {
  const families = parsePromText(await (await fetch(operator.metricsUrl)).text())
  const stats: Record<string, {count: number; seconds: number}> = {}
  for (const sample of families.get('controller_runtime_reconcile_time_seconds')?.samples ?? []) {
    const controller = sample.labels.controller ?? '?'
    const entry = (stats[controller] ??= {count: 0, seconds: 0})
    if (sample.name.endsWith('_count')) entry.count += sample.value
    if (sample.name.endsWith('_sum')) entry.seconds += sample.value
  }
  return stats
}

function statsDelta(after: Record<string, {count: number; seconds: number}>, before: Record<string, {count: number; seconds: number}>) {
  const out: Record<string, {count: number; seconds: number}> = {}
  for (const [controller, value] of Object.entries(after)) {
    const count = value.count - (before[controller]?.count ?? 0)
    if (count > 0) out[controller] = {count, seconds: round(value.seconds - (before[controller]?.seconds ?? 0), 2)}
  }
  return out
}


/**
 * Follows the Endpoint CRs of some namespaces with one cluster-wide watch (cheap for the apiserver, unlike listing
 * 2N CRs again and again): `namespace/name` → status.phase. `broken` is set when the watch ends early; the caller
 * then falls back to listing.
 */
async function watchEndpointPhases(client: KubeClient, namespaces: ReadonlySet<string>) {
  const listPath = '/apis/polycrate.io/v1alpha1/endpoints'
  const state = {phases: new Map<string, string | undefined>(), broken: false, stopped: false}
  const keyOf = (item: EndpointCr) => (namespaces.has(item.metadata?.namespace ?? '') ? `${item.metadata?.namespace}/${item.metadata?.name}` : undefined)
  const list = await client.request<{items: EndpointCr[]; metadata: {resourceVersion: string}}>({path: listPath})
  for (const item of list.items) {
    const key = keyOf(item)
    if (key) state.phases.set(key, item.status?.phase)
  }
  const controller = new AbortController()
  const stream = await client.stream({path: listPath, query: {watch: 1, resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 3600}, timeoutMs: 3_600_000, signal: controller.signal})
  let partial = ''
  stream.on('data', (chunk: Buffer) => {
    partial += chunk.toString()
    let newline: number
    while ((newline = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, newline)
      partial = partial.slice(newline + 1)
      if (line.trim() === '') continue
      const event = JSON.parse(line) as {type: string; object: EndpointCr}
      if (event.type === 'ERROR') {
        state.broken = true
        continue
      }
      const key = keyOf(event.object)
      if (!key) continue
      if (event.type === 'ADDED' || event.type === 'MODIFIED') state.phases.set(key, event.object.status?.phase)
      else if (event.type === 'DELETED') state.phases.delete(key)
    }
  })
  const ended = () => {
    if (!state.stopped) state.broken = true
  }
  stream.on('end', ended)
  stream.on('error', ended)
  return {
    state,
    stop() {
      state.stopped = true
      controller.abort()
      stream.destroy()
    },
  }
}

type ApiEndpoint = Record<string, unknown> & {id: string; remote_address?: string; spec?: {http?: {path?: string}}}
/** The host domain of the size with this index: hosts are unique across sizes, so each size's API endpoints are told apart by it. */
const domainOf = (sizeIndex: number) => `s${sizeIndex}.bench.example.com`
const hostsOf = (sizeIndex: number, i: number) => [`app-${i}-a.${domainOf(sizeIndex)}`, `app-${i}-b.${domainOf(sizeIndex)}`]
/** Live simulator endpoints of one size. */
const apiEndpointsOf = (sim: ApiSimulator, sizeIndex: number) =>
  (sim.list('endpoints') as ApiEndpoint[]).filter((e) => String(e.remote_address ?? '').endsWith(`.${domainOf(sizeIndex)}`))

const MiB = (bytes: number) => round(bytes / 1024 ** 2)

// ---------------------------------------------------------------------------------------------------------------
// the run

type Cpu = {operator: number; apiserver: number; etcd: number; controllerManager: number; bench: number}

progress(`sizes ${sizes.join(', ')} Ingresses (× 2 hosts) over ${K} namespace(s), concurrency ${concurrency}, P2 samples ${samples}, idle ${idleMinutes} min; starting the control plane`)
const controlPlane = await startControlPlane({log: (line) => progress(`[control plane] ${line}`)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const sim = await ApiSimulator.start()
let operator: OperatorProcess | undefined
let exitCode = 0
try {
  await ensureCrdsWith(client)
  progress(`control plane up, CRDs installed; simulator at ${sim.url}`)

  // ---- Baselines B(N): a bare client creates 2N Endpoint CRs with the same concurrency (no operator running).
  const baselines: Array<{ms: number; perSecond: number; namespaceCleanupMs: number; apiserverCpuMsPerCr: number}> = []
  const cpPids = await controlPlanePids(controlPlane.dir)
  const apiserverCpu = async () => (cpPids.apiserver ? await cpuSeconds(cpPids.apiserver) : Number.NaN)
  for (const N of sizes) {
    const baselineNs = await namespaceNamed(client, `bench-baseline-${randomBytes(3).toString('hex')}`)
    const endpointBody = (name: string, host: string) => ({
      apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name, namespace: baselineNs},
      spec: {remoteAddress: host, remotePort: 443, kind: 'http'},
    })
    // Warm-up (not timed): connections, the CRD's storage path and the apiserver's caches.
    await pool(concurrency, concurrency, async (i) => {
      await client.create(endpointsRef(baselineNs), endpointBody(`warmup-${i}`, `warmup-${i}.bench.example.com`))
    })
    const baselineStart = performance.now()
    const apiserverBefore = await apiserverCpu()
    await pool(2 * N, concurrency, async (i) => {
      await client.create(endpointsRef(baselineNs), endpointBody(`base-${i}`, `base-${i}.bench.example.com`))
    })
    const ms = performance.now() - baselineStart
    const apiserverCpuMsPerCr = round(((await apiserverCpu()) - apiserverBefore) * 1000 / (2 * N), 2)
    progress(`B(${N}): ${2 * N} Endpoint CRs created in ${round(ms / 1000, 2)} s (${round((2 * N) / (ms / 1000))}/s)`)
    // The operator syncs every Endpoint CR of the cluster: the baseline's must be gone before it starts.
    const deleteStart = performance.now()
    await client.delete({group: '', version: 'v1', plural: 'namespaces', name: baselineNs})
    for (const deadline = Date.now() + 600_000; ;) {
      if ((await client.getOrUndefined({group: '', version: 'v1', plural: 'namespaces', name: baselineNs})) === undefined) break
      if (Date.now() > deadline) throw new Error(`namespace ${baselineNs} not gone after 10 minutes`)
      await sleep(500)
    }
    const leftover = await listAll<EndpointCr>(client, `/apis/polycrate.io/v1alpha1/namespaces/${baselineNs}/endpoints`)
    if (leftover.length > 0) throw new Error(`${leftover.length} baseline Endpoint CRs left after the namespace deletion`)
    baselines.push({ms: round(ms), perSecond: round((2 * N) / (ms / 1000)), namespaceCleanupMs: round(performance.now() - deleteStart), apiserverCpuMsPerCr})
  }

  // ---- The operator: namespace wired to a simulator workspace, sync interval 60 s, no leader election.
  // The external-dns webhook (on by default) on a free port: 8888 may be taken on a shared machine, and a webhook that
  // cannot listen leaves the OperatorConfig Degraded, never Ready.
  const {namespace: operatorNs} = await operatorNamespaceFor(client, sim, {
    api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 60}, external_dns_webhook: {port: await freePort()},
  })
  // bin/run.js loads dist/: other people may be rebuilding it (`rm -rf dist && tsc`) right now; wait and retry.
  const operatorRoot = flags.root ? path.resolve(flags.root) : path.join(import.meta.dirname, '..')
  const distRun = path.join(operatorRoot, 'dist', 'commands', 'operator', 'run.js')
  let operatorStart = performance.now()
  let op: OperatorProcess | undefined
  type ConfigStatus = {phase?: string; local_cluster?: {cluster_id?: string}; controllers?: Array<{name: string; running?: boolean}>}
  for (let attempt = 1; !op; attempt++) {
    for (const deadline = Date.now() + 600_000; !(await access(distRun).then(() => true, () => false));) {
      if (Date.now() > deadline) throw new Error(`${distRun} missing for 10 minutes: run npm run build`)
      await sleep(1000)
    }
    operatorStart = performance.now()
    const started = await startOperator({
      ...(cgroup ? {wrap: cgroup.wrap} : {}),
      kubeconfig: controlPlane.kubeconfigPath, namespace: operatorNs, leaderElect: false, logLevel: 'warn',
      bin: path.join(operatorRoot, 'bin', 'run.js'),
      env: {NODE_OPTIONS: benchNodeOptions(flags['node-options'])},
      // The operator's V8 CPU profile, written when it exits (open it in Chrome DevTools or speedscope).
      nodeArgs: flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.join(import.meta.dirname, 'results', 'profiles')}`] : [],
    })
    operator = started
    for (const deadline = Date.now() + 120_000; ;) {
      if (started.child.exitCode !== null) {
        if (attempt < 3 && /MODULE_NOT_FOUND|Cannot find module/.test(started.rawOutput())) {
          progress(`operator could not load dist/ (being rebuilt?); retrying (${attempt})`)
          await sleep(5000)
          break
        }
        throw new Error(`operator exited (${started.child.exitCode}):\n${started.rawOutput().slice(-3000)}`)
      }
      const config = await client.getOrUndefined<KubeObject & {status?: ConfigStatus}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: operatorNs, name: 'default'})
      const running = new Set((config?.status?.controllers ?? []).filter((c) => c.running).map((c) => c.name))
      if (config?.status?.phase === 'Ready' && config.status.local_cluster?.cluster_id && running.has('endpoint-sync') && running.has('endpoint-discovery')) {
        op = started
        break
      }
      if (Date.now() > deadline) throw new Error(`operator not Ready with endpoint-sync + endpoint-discovery after 120 s: ${JSON.stringify(config?.status)}\n${started.rawOutput().slice(-3000)}`)
      await sleep(250)
    }
  }
  const operatorReadyMs = performance.now() - operatorStart
  progress(`operator pid ${op.pid} Ready (endpoint-discovery, endpoint-sync running, cluster registered) after ${round(operatorReadyMs / 1000, 1)} s`)
  await sleep(2000)
  const cpu = async (): Promise<Cpu> => ({
    operator: await cpuSeconds(op.pid),
    apiserver: cpPids.apiserver ? await cpuSeconds(cpPids.apiserver) : Number.NaN,
    etcd: cpPids.etcd ? await cpuSeconds(cpPids.etcd) : Number.NaN,
    // Its garbage collector follows every object with an owner reference (each Endpoint CR has one).
    controllerManager: cpPids.controllerManager ? await cpuSeconds(cpPids.controllerManager) : Number.NaN,
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
  })

  const runSize = async (sizeIndex: number, N: number) => {
    const baseline = baselines[sizeIndex]!
    const namespaces = await Promise.all(Array.from({length: K}, (_, k) => namespaceNamed(client, `bench-apps-${sizeIndex}-${k}-${randomBytes(3).toString('hex')}`)))
    const namespaceOf = (i: number) => namespaces[i % K]!

    // ---- P1: N Ingresses × 2 hosts over K namespaces with the operator running.
    const memoryBefore = await heapProbe(op)
    const kubeBefore = await kubeRequestsByMethod(op)
    const simBefore = sim.requests.length
    const cpuBefore = await cpu()
    const reconcilesBefore = await reconcileStats(op)
    const crWatch = await watchEndpointPhases(client, new Set(namespaces))
    const p1Start = performance.now()
    let createsDoneMs = 0
    const creating = pool(N, concurrency, async (i) => {
      const namespace = namespaceOf(i)
      await client.create(ingressRef(namespace), {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
        metadata: {name: `app-${i}`, namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: hostsOf(sizeIndex, i).map((host) => ({host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}))},
      })
    }).then(() => {
      createsDoneMs = performance.now() - p1Start
      progress(`P1(${N}): ${N} Ingresses created after ${round(createsDoneMs / 1000, 2)} s`)
    })
    let apiCompleteMs: number | undefined
    let crsCompleteMs: number | undefined
    let lastCrCheck = 0
    let lastReport = 0
    let crCount = 0
    let syncedCount = 0
    let apiCreated = 0
    let scanned = simBefore
    const domain = `.${domainOf(sizeIndex)}`
    const p1Deadline = Date.now() + Math.max(600_000, N * 1_200)
    for (;;) {
      const now = performance.now()
      // API side: count the simulator's successful endpoint creates of this size (only the new log entries).
      for (; scanned < sim.requests.length; scanned++) {
        const entry = sim.requests[scanned]!
        if (entry.method === 'POST' && entry.resource === 'endpoints' && entry.status === 201 && String((entry.body as {remote_address?: string} | undefined)?.remote_address ?? '').endsWith(domain)) apiCreated++
      }
      if (apiCreated >= 2 * N && apiCompleteMs === undefined) apiCompleteMs = now - p1Start
      // Kube side: the watch; listing only when the watch broke.
      if (!crWatch.state.broken) {
        crCount = crWatch.state.phases.size
        syncedCount = [...crWatch.state.phases.values()].filter((phase) => phase === 'Synced').length
      } else if (now - lastCrCheck >= 1000) {
        lastCrCheck = now
        const crs = (await Promise.all(namespaces.map((namespace) => listAll<EndpointCr>(client, `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`)))).flat()
        crCount = crs.length
        syncedCount = crs.filter((e) => e.status?.phase === 'Synced').length
      }
      if (crCount >= 2 * N && crsCompleteMs === undefined) crsCompleteMs = performance.now() - p1Start
      if (createsDoneMs > 0 && syncedCount === 2 * N && crCount === 2 * N && apiEndpointsOf(sim, sizeIndex).length === 2 * N) break
      if (now - lastReport >= 10_000) {
        lastReport = now
        progress(`P1(${N}): ${crCount}/${2 * N} Endpoint CRs, ${syncedCount} Synced, ${apiCreated} API endpoints created`)
      }
      if (Date.now() > p1Deadline) throw new Error(`P1 not complete in time: ${crCount} CRs, ${syncedCount} Synced, ${apiCreated} API endpoints created\n${op.rawOutput().slice(-3000)}`)
      if (op.child.exitCode !== null) throw new Error(`operator exited (${op.child.exitCode}):\n${op.rawOutput().slice(-3000)}`)
      await sleep(100)
    }
    if (crWatch.state.broken) progress(`P1(${N}): the Endpoint watch ended early; completion was checked by listing (1 s resolution)`)
    crWatch.stop()
    await creating
    const p1Ms = performance.now() - p1Start
    const cpuAfter = await cpu()
    const cpuP1 = Object.fromEntries(Object.entries(cpuAfter).map(([k, v]) => [k, round(v - cpuBefore[k as keyof Cpu], 1)])) as Cpu
    const reconcilesP1 = statsDelta(await reconcileStats(op), reconcilesBefore)
    const kubeP1 = delta(await kubeRequestsByMethod(op), kubeBefore)
    const simP1 = sim.requests.slice(simBefore)
    const apiP1ByMethod = countBy(simP1, (r) => r.method)
    // Memory: the V8 heap after a forced GC and RSS, per object cached (N Ingresses + 2N Endpoint CRs).
    await sleep(2000)
    const memoryAfter = await heapProbe(op)
    const cgroupAfter = await cgroup?.workingSetBytes()
    const objects = 3 * N
    progress(`P1(${N}): complete after ${round(p1Ms / 1000, 2)} s (ratio to B ${round(p1Ms / baseline.ms, 2)}); kube ${formatCounts(kubeP1)}; API ${formatCounts(apiP1ByMethod)}`)

    // Duplicates / losses (a correctness side note, not a timing figure).
    const byHost = new Map<string, string[]>()
    for (const e of apiEndpointsOf(sim, sizeIndex)) byHost.set(String(e.remote_address), [...(byHost.get(String(e.remote_address)) ?? []), e.id])
    const duplicates = [...byHost.values()].filter((ids) => ids.length > 1).length
    const lost = Array.from({length: N}, (_, i) => hostsOf(sizeIndex, i)).flat().filter((host) => !byHost.has(host)).length

    // ---- P2: sequential annotation edits; latency until the API objects show the new path.
    const picks = new Set<number>()
    while (picks.size < Math.min(samples, N)) picks.add(Math.floor(Math.random() * N))
    const picked = [...picks]
    while (picked.length < samples) picked.push(Math.floor(Math.random() * N)) // S > N: repeats allowed
    const kubeBeforeP2 = await kubeRequestsByMethod(op)
    const simBeforeP2 = sim.requests.length
    const firstHostMs: number[] = []
    const bothHostsMs: number[] = []
    let p2Timeouts = 0
    for (const [k, i] of picked.entries()) {
      const ids = hostsOf(sizeIndex, i).map((host) => byHost.get(host)?.[0])
      if (ids.some((id) => id === undefined)) throw new Error(`no API endpoint for a host of app-${i}`)
      const newPath = `/p2-${k}-${randomBytes(3).toString('hex')}`
      const pathOf = (id: string) => (sim.get('endpoints', id) as {spec?: {http?: {path?: string}}} | undefined)?.spec?.http?.path
      const t0 = performance.now()
      await client.mergePatch(ingressRef(namespaceOf(i), `app-${i}`), {metadata: {annotations: {polycrate_endpoint_path: newPath}}})
      let first: number | undefined
      for (const deadline = t0 + 60_000; ;) {
        const done = ids.map((id) => pathOf(id!) === newPath)
        if (first === undefined && done.some(Boolean)) first = performance.now() - t0
        if (done.every(Boolean)) {
          bothHostsMs.push(performance.now() - t0)
          firstHostMs.push(first!)
          break
        }
        if (performance.now() > deadline) {
          p2Timeouts++
          progress(`P2(${N}): sample ${k} (app-${i}) timed out after 60 s`)
          break
        }
        await sleep(10)
      }
    }
    const kubeP2 = delta(await kubeRequestsByMethod(op), kubeBeforeP2)
    const apiP2 = sim.requests.slice(simBeforeP2)
    const sortedBoth = [...bothHostsMs].sort((a, b) => a - b)
    const sortedFirst = [...firstHostMs].sort((a, b) => a - b)
    progress(`P2(${N}): ${bothHostsMs.length}/${samples} samples; both hosts p50 ${round(percentile(sortedBoth, 50))} ms, p99 ${round(percentile(sortedBoth, 99))} ms, max ${round(sortedBoth.at(-1) ?? Number.NaN)} ms`)

    return {
      ingresses: N,
      endpoints: 2 * N,
      namespaces: K,
      baseline: {what: `bare KubeClient creates ${2 * N} Endpoint CRs, concurrency ${concurrency} (after ${concurrency} untimed warm-up creates)`, ...baseline},
      p1: {
        ratioToBaseline: round(p1Ms / baseline.ms, 2),
        ms: round(p1Ms),
        msPerEndpoint: round(p1Ms / (2 * N), 2),
        ingressCreatesDoneMs: round(createsDoneMs),
        allEndpointCrsExistMs: crsCompleteMs === undefined ? null : round(crsCompleteMs),
        allApiEndpointsExistMs: apiCompleteMs === undefined ? null : round(apiCompleteMs),
        endpointsPerSecond: round((2 * N) / (p1Ms / 1000)),
        kubeRequestsByMethod: kubeP1,
        kubeRequestsTotal: sum(kubeP1),
        kubeWritesPerEndpoint: round(notGet(kubeP1) / (2 * N), 2),
        apiRequestsByMethod: apiP1ByMethod,
        apiRequestsTotal: simP1.length,
        apiCallsPerEndpoint: round(simP1.length / (2 * N), 2),
        apiRequestsByMethodResourceStatus: countBy(simP1, (r) => `${r.method} ${r.resource} ${r.status}`),
        cpuSeconds: cpuP1,
        operatorCpuMsPerEndpoint: round((cpuP1.operator * 1000) / (2 * N), 2),
        apiserverCpuMsPerEndpoint: round((cpuP1.apiserver * 1000) / (2 * N), 2),
        reconciles: reconcilesP1,
        duplicateApiEndpoints: duplicates,
        hostsWithoutApiEndpoint: lost,
      },
      memory: {
        objectsCached: objects,
        rssMiBBefore: MiB(memoryBefore.rss), rssMiBAfter: MiB(memoryAfter.rss),
        ...(cgroupAfter === undefined ? {} : {cgroupWorkingSetMiBAfter: MiB(cgroupAfter)}),
        heapAfterGcMiBBefore: MiB(memoryBefore.heapUsed), heapAfterGcMiBAfter: MiB(memoryAfter.heapUsed),
        heapTotalMiBBefore: MiB(memoryBefore.heapTotal), heapTotalMiBAfter: MiB(memoryAfter.heapTotal),
        externalMiBBefore: MiB(memoryBefore.external), externalMiBAfter: MiB(memoryAfter.external),
        rssKiBPerObject: round((memoryAfter.rss - memoryBefore.rss) / 1024 / objects, 2),
        heapKiBPerObject: round((memoryAfter.heapUsed - memoryBefore.heapUsed) / 1024 / objects, 2),
      },
      p2: {
        measuredUntil: 'both hosts of the edited Ingress show the new spec.http.path in the simulator (polled every 10 ms); firstHost = the first of the two',
        samples, completed: bothHostsMs.length, timeouts: p2Timeouts,
        bothHostsMs: {p50: round(percentile(sortedBoth, 50)), p99: round(percentile(sortedBoth, 99)), max: round(sortedBoth.at(-1) ?? Number.NaN), min: round(sortedBoth[0] ?? Number.NaN)},
        firstHostMs: {p50: round(percentile(sortedFirst, 50)), p99: round(percentile(sortedFirst, 99)), max: round(sortedFirst.at(-1) ?? Number.NaN)},
        kubeRequestsByMethod: kubeP2,
        apiRequestsByMethod: countBy(apiP2, (r) => r.method),
        rawBothHostsMs: bothHostsMs.map((ms) => round(ms)),
      },
    }
  }
  const runs: Array<Awaited<ReturnType<typeof runSize>>> = []
  for (const [sizeIndex, N] of sizes.entries()) runs.push(await runSize(sizeIndex, N))

  // ---- P3: idle, after the last size.
  progress('P3: settling 10 s')
  await sleep(10_000)
  const kubeBeforeP3 = await kubeRequestsByMethod(op)
  const simBeforeP3 = sim.requests.length
  const p3Start = performance.now()
  progress(`P3: counting for ${idleMinutes} min`)
  await sleep(idleMinutes * 60_000)
  const p3Minutes = (performance.now() - p3Start) / 60_000
  const kubeP3 = delta(await kubeRequestsByMethod(op), kubeBeforeP3)
  const simP3 = sim.requests.slice(simBeforeP3)
  const apiWritesP3: RequestLogEntry[] = simP3.filter((r) => r.method !== 'GET' && r.resource !== 'agent/health')
  const apiGetsP3 = simP3.filter((r) => r.method === 'GET')
  const kubeWritesP3 = notGet(kubeP3)
  const memoryEnd = await heapProbe(op)
  const cgroupEnd = await cgroup?.workingSetBytes()
  progress(`P3: kube ${formatCounts(kubeP3)}; API writes ${apiWritesP3.length}, API GETs ${apiGetsP3.length}`)

  // ---- Report.
  const result = {
    benchmark: 'endpoints',
    timestamp: new Date().toISOString(),
    machine: {cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? '', totalMemMiB: Math.round(os.totalmem() / 1024 ** 2), node: process.version, platform: `${os.platform()} ${os.release()}`},
    parameters: {sizes, namespaces: K, hostsPerIngress: 2, concurrency, samples, idleMinutes, syncIntervalSeconds: 60, leaderElection: false, operatorLogLevel: 'warn'},
    operatorReadyMs: round(operatorReadyMs),
    runs,
    linearity: runs.length > 1 ? {msPerEndpointRatio: round(runs.at(-1)!.p1.msPerEndpoint / runs[0]!.p1.msPerEndpoint, 2), p1RatioToBaselineRatio: round(runs.at(-1)!.p1.ratioToBaseline / runs[0]!.p1.ratioToBaseline, 2)} : null,
    p3: {
      windowMinutes: round(p3Minutes, 2),
      kubeWrites: kubeWritesP3,
      apiWrites: apiWritesP3.length,
      apiWritesDetail: countBy(apiWritesP3, (r) => `${r.method} ${r.resource} ${r.status}`),
      kubeRequestsByMethod: kubeP3,
      kubeGetsPerMinute: round((kubeP3.GET ?? 0) / p3Minutes),
      apiGetsPerMinute: round(apiGetsP3.length / p3Minutes),
      rssMiBAtEnd: MiB(memoryEnd.rss),
      ...(cgroupEnd === undefined ? {} : {cgroupWorkingSetMiBAtEnd: MiB(cgroupEnd)}),
      heapAfterGcMiBAtEnd: MiB(memoryEnd.heapUsed),
      heapTotalMiBAtEnd: MiB(memoryEnd.heapTotal),
      externalMiBAtEnd: MiB(memoryEnd.external),
    },
  }

  const table = new Table({head: ['figure', ...runs.map((run) => `N=${run.ingresses} (${run.endpoints} endpoints, ${K} ns)`)], style: {head: [], border: []}})
  const row = (label: string, cell: (run: (typeof runs)[number]) => string) => table.push([label, ...runs.map(cell)])
  row('B  baseline', (r) => `${round(r.baseline.ms / 1000, 2)} s (${r.baseline.perSecond}/s; apiserver CPU ${r.baseline.apiserverCpuMsPerCr} ms / CR)`)
  row('P1 ratio to B', (r) => `${r.p1.ratioToBaseline}×`)
  row('P1 absolute', (r) => `${round(r.p1.ms / 1000, 2)} s (creates done ${round(r.p1.ingressCreatesDoneMs / 1000, 1)} s, CRs ${r.p1.allEndpointCrsExistMs === null ? '-' : round(r.p1.allEndpointCrsExistMs / 1000, 1)} s)`)
  row('P1 ms / endpoint', (r) => String(r.p1.msPerEndpoint))
  row('P1 kube writes / endpoint', (r) => `${r.p1.kubeWritesPerEndpoint} (${formatCounts(r.p1.kubeRequestsByMethod)})`)
  row('P1 API calls / endpoint', (r) => `${r.p1.apiCallsPerEndpoint} (${formatCounts(r.p1.apiRequestsByMethod)})`)
  row('P1 CPU s operator', (r) => `${r.p1.cpuSeconds.operator} (${r.p1.operatorCpuMsPerEndpoint} ms / endpoint)`)
  row('P1 CPU s apiserver / etcd / KCM / bench', (r) => `${r.p1.cpuSeconds.apiserver} (${r.p1.apiserverCpuMsPerEndpoint} ms / endpoint) / ${r.p1.cpuSeconds.etcd} / ${r.p1.cpuSeconds.controllerManager} / ${r.p1.cpuSeconds.bench}`)
  row('RSS before → after P1', (r) => `${r.memory.rssMiBBefore} → ${r.memory.rssMiBAfter} MiB (${r.memory.rssKiBPerObject} KiB / object)${'cgroupWorkingSetMiBAfter' in r.memory ? `; cgroup working set ${r.memory.cgroupWorkingSetMiBAfter} MiB` : ''}`)
  row('V8 heap total / external after', (r) => `${r.memory.heapTotalMiBAfter} / ${r.memory.externalMiBAfter} MiB`)
  row('heap after GC before → after', (r) => `${r.memory.heapAfterGcMiBBefore} → ${r.memory.heapAfterGcMiBAfter} MiB (${r.memory.heapKiBPerObject} KiB / object)`)
  row('P1 duplicates / lost', (r) => `${r.p1.duplicateApiEndpoints} / ${r.p1.hostsWithoutApiEndpoint}`)
  row('P2 p50 / p99 (both hosts)', (r) => `${r.p2.bothHostsMs.p50} / ${r.p2.bothHostsMs.p99} ms (${r.p2.completed}/${r.p2.samples}, ${r.p2.timeouts} timed out)`)
  console.log(table.toString())
  console.log(`operator ready after ${round(operatorReadyMs)} ms; P3 (${round(p3Minutes, 2)} min idle after the last size): kube writes ${kubeWritesP3}, API writes ${apiWritesP3.length} (expected 0 and 0); RSS ${result.p3.rssMiBAtEnd} MiB${'cgroupWorkingSetMiBAtEnd' in result.p3 ? ` (cgroup working set ${result.p3.cgroupWorkingSetMiBAtEnd} MiB)` : ''}, heap after GC ${result.p3.heapAfterGcMiBAtEnd} MiB`)
  if (result.linearity) console.log(`linearity: ms per endpoint at N=${sizes.at(-1)} ÷ at N=${sizes[0]} = ${result.linearity.msPerEndpointRatio}`)
  await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
  const file = path.join(import.meta.dirname, 'results', `endpoints-n${sizes.join('-')}-k${K}${flags.root ? `-${path.basename(path.resolve(flags.root))}` : ''}.json`)
  await writeFile(file, JSON.stringify(result, null, 2) + '\n')
  progress(`wrote ${path.relative(process.cwd(), file)}`)
} catch (error) {
  exitCode = 1
  console.error(error instanceof KubeApiError ? `${error.status} ${error.reason}: ${error.message}` : error)
} finally {
  if (operator) await operator.stop('SIGTERM').catch(() => {})
  client.close()
  await sim.close()
  await controlPlane.stop()
  await cgroup?.remove()
}
process.exit(exitCode)
