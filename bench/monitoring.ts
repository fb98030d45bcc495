/**
 * Endpoint monitoring agent throughput: how many checks per second one operator (a real process) sustains with a
 * p99 scheduling delay under 1 s. Not a pass/fail test: it prints a table and writes bench/results/monitoring.json.
 *
 *   npm run bench:monitoring [-- --interval 10 --steps 1000,2000,4000,6000,8000 --window 30]
 *
 * Each step assigns N HTTP endpoints (interval `--interval` s, all against one loopback HTTP server in this process)
 * to the operator's agent, waits until the agent checks all of them, then measures over `--window` s: checks per
 * second (polycrate_agent_checks_total), the scheduling delay distribution (polycrate_agent_schedule_delay_seconds:
 * how late checks start against their grid point; p99 from the histogram buckets), skipped rounds, operator CPU and
 * RSS (at the window's end, and mean and max of readings once a second through it), and the V8 heap after a forced
 * GC at the end of each window (bench/heap-probe.cjs). The steps stop once p99 exceeds 1 s. The API simulator and the
 * target share the machine with the operator. `--heap-snapshot` writes a V8 heap snapshot of the operator after the
 * last step to bench/results/ (open it in Chrome DevTools). `--bin DIR/bin/run.js` runs another build's operator (a
 * copy of an earlier build), so two builds can be compared in one time window. `--memory-limit 1024` runs the
 * operator in a memory cgroup with a 1Gi limit (the Deployment's default), as a container runs: Node sizes V8 from the
 * limit, and the cgroup's working set is reported beside RSS. Without root (no cgroup can be made) it passes the V8
 * sizing Node would pick under that limit instead. Without the flag V8 is sized for this machine's memory.
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parseArgs} from 'node:util'
import Table from 'cli-table3'
import {KubeClient} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {operatorNamespaceFor} from '../test/support/api-setup.js'
import {startControlPlane} from '../test/support/control-plane.js'
import {createMemoryCgroup, type MemoryCgroup} from '../test/support/memory-cgroup.js'
import {startHttpTarget} from '../test/support/monitoring-targets.js'
import {startOperator, type OperatorProcess} from '../test/support/operator-process.js'
import {parsePromText, type MetricFamily} from '../test/support/prom-text.js'
import {benchNodeOptions, ensureCrdsWith, heapProbe} from './setup.js'

const {values: flags} = parseArgs({
  args: process.argv.slice(2),
  options: {
    interval: {type: 'string', default: '10'},
    steps: {type: 'string', default: '1000,2000,4000,8000,12000,16000,20000'},
    window: {type: 'string', default: '30'},
    concurrency: {type: 'string', default: '100'},
    'heap-snapshot': {type: 'boolean', default: false},
    /** Extra V8/Node flags for the operator (e.g. `--max-semi-space-size=1`), to compare memory settings. */
    'node-options': {type: 'string', default: ''},
    /**
     * Size V8 as Node does in a container with this memory limit (MiB), e.g. 1024 for the Deployment's default 1Gi:
     * this machine has no cgroup limit, so without it V8 is sized for the host (see v8SizingFor).
     */
    'memory-limit': {type: 'string'},
    /** Another build's bin/run.js (a copy of an earlier build), to compare A/B in the same time window. */
    bin: {type: 'string'},
    /** Writes the operator's output (its log lines and anything else it prints) to this file at the end. */
    'operator-log': {type: 'string'},
  },
})
const intervalSeconds = Number(flags.interval)
const steps = flags.steps.split(',').map(Number)
const windowSeconds = Number(flags.window)
const concurrency = Number(flags.concurrency)

/**
 * The V8 flags equal to what Node 20 picks in a cgroup with `limitMiB` of memory: Node passes the cgroup limit to
 * V8's ResourceConstraints::ConfigureDefaults, which gives the old generation half of it (at least 256 MiB, at most
 * 4 GiB) and a semi-space of old/256 (old ≤ 256 MiB) or old/128, within 1–16 MiB (V8 11.3, 64-bit, no pointer
 * compression; in a 512 MiB cgroup heap_size_limit is 259 MiB, as docs/memory.md records). The flags set only these
 * two sizes; V8 derives the rest from them as it does from the cgroup's, among it how far the old generation may grow
 * past what survived the last full GC (up to ×4 with this machine's 4 GiB old generation, ×1.4 with 512 MiB).
 */
function v8SizingFor(limitMiB: number): string {
  const old = Math.min(4096, Math.max(256, Math.floor(limitMiB / 2)))
  const semi = Math.min(16, Math.max(1, Math.floor(old / (old <= 256 ? 256 : 128))))
  return `--max-old-space-size=${old} --max-semi-space-size=${semi}`
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const progress = (line: string) => process.stderr.write(`[bench:monitoring] ${line}\n`)

interface Sample {
  checks: number
  failures: number
  skipped: number
  delayBuckets: Map<number, number>
  delayCount: number
  cpu: number
  rss: number
  at: number
}

const sum = (family: MetricFamily | undefined, filter: (labels: Record<string, string>) => boolean = () => true) =>
  (family?.samples ?? []).filter((s) => filter(s.labels)).reduce((total, s) => total + s.value, 0)

async function sample(operator: OperatorProcess): Promise<Sample> {
  const families = parsePromText(await (await fetch(operator.metricsUrl)).text())
  const delay = families.get('polycrate_agent_schedule_delay_seconds')
  const delayBuckets = new Map<number, number>()
  for (const s of delay?.samples ?? []) if (s.name.endsWith('_bucket')) delayBuckets.set(s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), s.value)
  return {
    checks: sum(families.get('polycrate_agent_checks_total')),
    failures: sum(families.get('polycrate_agent_checks_total'), (l) => l.result === 'failure'),
    skipped: sum(families.get('polycrate_agent_checks_skipped_total')),
    delayBuckets,
    delayCount: delay?.samples.find((s) => s.name.endsWith('_count'))?.value ?? 0,
    cpu: sum(families.get('process_cpu_seconds_total')),
    rss: sum(families.get('process_resident_memory_bytes')),
    at: Date.now(),
  }
}

/** The operator's resident set now (VmRSS), read from /proc: sampling it does not load the operator as /metrics does. */
async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) * 1024
}

/** The smallest bucket bound under which `q` of the window's observations fall (an upper bound of the quantile). */
function quantileBound(before: Sample, after: Sample, q: number): number {
  const total = after.delayCount - before.delayCount
  if (total <= 0) return Number.NaN
  for (const [le, count] of [...after.delayBuckets].sort((a, b) => a[0] - b[0])) {
    if (count - (before.delayBuckets.get(le) ?? 0) >= q * total) return le
  }
  return Infinity
}

progress(`steps ${steps.join(', ')} endpoints at ${intervalSeconds} s, window ${windowSeconds} s, max_concurrent_checks ${concurrency}; cpus ${os.cpus().length}`)
const controlPlane = await startControlPlane({log: (line) => progress(`[control plane] ${line}`)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const sim = await ApiSimulator.start()
const target = await startHttpTarget()
let operator: OperatorProcess | undefined
const rows: Array<Record<string, number | string>> = []
const limitMiB = flags['memory-limit'] ? Number(flags['memory-limit']) : undefined
const cgroup: MemoryCgroup | undefined = limitMiB ? await createMemoryCgroup(`bench-monitoring-${process.pid}`, limitMiB * 1024 * 1024) : undefined
if (limitMiB) progress(cgroup ? `the operator runs in the memory cgroup ${cgroup.dir} (limit ${limitMiB} MiB)` : `no memory cgroup could be made (not root?): V8 sized as under ${limitMiB} MiB instead: ${v8SizingFor(limitMiB)}`)
try {
  await ensureCrdsWith(client)
  const {workspaceId} = await operatorNamespaceFor(client, sim, {
    endpoint_discovery: {enabled: false},
    agent: {enabled: true, check_interval_seconds: intervalSeconds, max_concurrent_checks: concurrency},
  }).then(async (wired) => {
    operator = await startOperator({
      kubeconfig: controlPlane.kubeconfigPath, namespace: wired.namespace, logLevel: 'warn',
      env: {NODE_OPTIONS: benchNodeOptions([limitMiB && !cgroup ? v8SizingFor(limitMiB) : '', flags['node-options']].join(' ').trim())},
      ...(flags.bin ? {bin: path.resolve(flags.bin)} : {}),
      ...(cgroup ? {wrap: cgroup.wrap} : {}),
      nodeArgs: flags['heap-snapshot'] ? ['--heapsnapshot-signal=SIGUSR1', `--diagnostic-dir=${path.join(import.meta.dirname, 'results')}`] : [],
    })
    return wired
  })
  const running = operator!
  let created = 0
  for (const n of steps) {
    for (; created < n; created++) {
      sim.insert('endpoints', {
        name: `bench-${created}`, kind: 'http', remote_address: '127.0.0.1', remote_port: target.port, workspace: workspaceId,
        spec: {http: {path: '/ok', interval: intervalSeconds, timeout: 5}},
      })
    }
    // Warm-up: the next fetch picks the new endpoints up, then one whole interval runs them.
    for (const deadline = Date.now() + 120_000; ;) {
      // The metrics server may not listen yet right after the start.
      const text = await fetch(running.metricsUrl).then((r) => r.text(), () => '')
      const assigned = sum(parsePromText(text).get('polycrate_agent_assigned_endpoints'))
      if (assigned === n) break
      if (Date.now() > deadline) throw new Error(`the agent has ${assigned} of ${n} endpoints after 2 minutes`)
      await sleep(1000)
    }
    await sleep(intervalSeconds * 1000 + 2000)
    const before = await sample(running)
    // RSS once a second through the window: a single reading at its end moves with the GC cycle.
    const rssSamples: number[] = []
    const workingSetSamples: number[] = []
    for (const end = before.at + windowSeconds * 1000; Date.now() < end;) {
      await sleep(Math.min(1000, end - Date.now()))
      rssSamples.push(await residentBytes(running.pid))
      if (cgroup) workingSetSamples.push(await cgroup.workingSetBytes())
    }
    const after = await sample(running)
    const heap = await heapProbe(running)
    const seconds = (after.at - before.at) / 1000
    const row = {
      endpoints: n,
      'target checks/s': Math.round(n / intervalSeconds),
      'checks/s': Math.round((after.checks - before.checks) / seconds),
      'failed/s': Math.round((after.failures - before.failures) / seconds),
      'skipped rounds': after.skipped - before.skipped,
      'p50 delay ≤ s': quantileBound(before, after, 0.5),
      'p99 delay ≤ s': quantileBound(before, after, 0.99),
      'CPU % of a core': Math.round((100 * (after.cpu - before.cpu)) / seconds),
      'RSS MiB': Math.round(after.rss / 1024 / 1024),
      'RSS mean MiB': Math.round(rssSamples.reduce((a, b) => a + b, 0) / rssSamples.length / 1024 / 1024),
      'RSS max MiB': Math.round(Math.max(...rssSamples) / 1024 / 1024),
      ...(cgroup ? {
        'cgroup working set mean MiB': Math.round(workingSetSamples.reduce((a, b) => a + b, 0) / workingSetSamples.length / 1024 / 1024),
        'cgroup working set max MiB': Math.round(Math.max(...workingSetSamples) / 1024 / 1024),
      } : {}),
      'heap after GC MiB': Math.round(heap.heapUsed / 1024 / 1024),
      'RSS after GC MiB': Math.round(heap.rss / 1024 / 1024),
      'heap total MiB': Math.round(heap.heapTotal / 1024 / 1024),
      'external MiB': Math.round(heap.external / 1024 / 1024),
      // The machine's 1-minute load average at the end of the window: the figures only mean something with it.
      'load avg': Math.round(os.loadavg()[0]! * 10) / 10,
    }
    rows.push(row)
    progress(JSON.stringify(row))
    if (!(row['p99 delay ≤ s'] <= 1)) break
  }
  if (flags['heap-snapshot'] && operator) {
    await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
    process.kill(operator.pid, 'SIGUSR1')
    await sleep(15_000) // V8 writes Heap.<date>.<pid>…heapsnapshot synchronously; the process is busy meanwhile
    progress('heap snapshot written to bench/results/')
  }
} finally {
  await operator?.stop('SIGTERM').catch(() => {})
  if (flags['operator-log'] && operator) await writeFile(flags['operator-log'], operator.rawOutput())
  client.close()
  await sim.close()
  await target.close()
  await controlPlane.stop()
  await cgroup?.remove()
}

const table = new Table({head: Object.keys(rows[0] ?? {endpoints: ''})})
for (const row of rows) table.push(Object.values(row).map(String))
console.log(table.toString())
const sustained = rows.filter((row) => Number(row['p99 delay ≤ s']) <= 1 && Number(row['checks/s']) >= 0.95 * Number(row['target checks/s']))
const best = sustained.at(-1)
console.log(best
  ? `sustained: ${best['checks/s']} checks/s (${best.endpoints} endpoints at ${intervalSeconds} s) with p99 scheduling delay ≤ ${best['p99 delay ≤ s']} s on ${os.cpus().length} cores`
  : 'no step met p99 scheduling delay ≤ 1 s')
const out = path.join(import.meta.dirname, 'results')
await mkdir(out, {recursive: true})
await writeFile(path.join(out, 'monitoring.json'), JSON.stringify({intervalSeconds, windowSeconds, concurrency, cpus: os.cpus().length, rows, sustained: best ?? null}, null, 2))
