/**
 * Idle cost of the operator, measured on a real control plane: resident memory (RSS), the V8 heap after a forced GC
 * (used / total, code space), external memory, the time from spawn until /readyz answers 200, and Kubernetes API
 * requests per minute once it has settled. Not a pass/fail test: it prints a table and writes bench/results/idle.json.
 *
 *   npm run bench:idle [-- --minutes 1 --rounds 3 --before /tmp/wt-before]
 *
 * It also runs this build through oclif (POLYCRATE_NO_FAST_PATH=1), what `run` cost before its fast path.
 * `--before ROOT` also runs another build (a worktree of an earlier commit, with `npm run build` done and
 * node_modules present) against the same control plane, rounds interleaved with this tree's so that load from
 * elsewhere hits both alike; ready time is then reported as a ratio to ROOT's (CPU time is noisy on a shared machine,
 * memory is not). Each round starts a fresh operator (leader election on, one OperatorConfig with every feature at its
 * default), waits until it is ready and has written the OperatorConfig status, lets it settle for 15 s and probes its
 * memory (bench/heap-probe.cjs). The request rate is measured for this tree only, over --minutes.
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {KubeClient} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {benchNodeOptions, ensureCrdsWith, heapProbe, namespaceNamed} from './setup.js'
import {startOperator, type OperatorProcess} from '../test/support/operator-process.js'
import {parsePromText} from '../test/support/prom-text.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'

const flag = (name: string) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : undefined)
const minutes = Number(flag('minutes') ?? 1) || 1
const rounds = Number(flag('rounds') ?? 2) || 2
const beforeRoot = flag('before')
const MiB = (bytes: number) => Math.round(bytes / 1048576 * 10) / 10
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

interface Tree {name: string; bin?: string; env?: NodeJS.ProcessEnv}
interface Sample {readyMs: number; rss: number; heapUsed: number; heapTotal: number; external: number; code: number}

const controlPlane = await startControlPlane()
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
try {
  await ensureCrdsWith(client)
  const namespace = await namespaceNamed(client, 'polycrate')
  await client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace}, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
    // Every feature at its default, the external-dns webhook (on by default) on a free port: 8888 may be taken on a
    // shared machine, and a webhook that cannot listen keeps /readyz failing.
    spec: {external_dns_webhook: {port: await freePort()}},
  })
  const start = (tree: Tree) => startOperator({
    kubeconfig: controlPlane.kubeconfigPath, namespace, leaderElect: true, logLevel: 'info', bin: tree.bin,
    env: {NODE_OPTIONS: benchNodeOptions(), ...tree.env},
  })
  /** Spawn → /readyz 200 (the CRDs established, every feature started), 15 s of settling, the memory probe. */
  const round = async (tree: Tree): Promise<{sample: Sample; operator: OperatorProcess}> => {
    const spawned = performance.now()
    const operator = await start(tree)
    let readyMs: number
    for (const deadline = Date.now() + 120_000; ;) {
      if (operator.child.exitCode !== null) throw new Error(`operator exited:\n${operator.rawOutput().slice(-3000)}`)
      if (Date.now() > deadline) throw new Error(`/readyz not ok after 120 s: ${await fetch(`${operator.probeUrl}/readyz?verbose`).then((r) => r.text(), String)}`)
      const ok = await fetch(`${operator.probeUrl}/readyz`).then((r) => r.ok, () => false)
      if (ok) {
        readyMs = performance.now() - spawned
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await new Promise((resolve) => setTimeout(resolve, 15_000))
    const probe = await heapProbe(operator) as unknown as {rss: number; heapUsed: number; heapTotal: number; external: number; spaces: Record<string, number>}
    const code = Object.entries(probe.spaces).filter(([name]) => name.startsWith('code')).reduce((sum, [, size]) => sum + size, 0)
    return {sample: {readyMs, rss: probe.rss, heapUsed: probe.heapUsed, heapTotal: probe.heapTotal, external: probe.external, code}, operator}
  }
  const trees: Tree[] = [
    ...(beforeRoot ? [{name: `before (${beforeRoot})`, bin: path.join(path.resolve(beforeRoot), 'bin/run.js')}] : []),
    // The same build through oclif (what `run` cost before it had a fast path of its own).
    {name: 'this tree, through oclif', env: {POLYCRATE_NO_FAST_PATH: '1'}},
    {name: 'this tree'},
  ]
  const samples = new Map<string, Sample[]>(trees.map((t) => [t.name, []]))
  let last: OperatorProcess | undefined
  for (let r = 0; r < rounds; r++) {
    for (const tree of trees) {
      const {sample, operator} = await round(tree)
      samples.get(tree.name)!.push(sample)
      const keep = r === rounds - 1 && tree.name === 'this tree'
      if (keep) last = operator
      else await operator.stop('SIGTERM')
    }
  }
  // Requests per minute, this tree, the last round's process.
  const requests = async () => {
    const families = parsePromText(await (await fetch(last!.metricsUrl)).text())
    return families.get('rest_client_requests_total')!.samples.reduce((sum, s) => sum + s.value, 0)
  }
  const startRequests = await requests()
  const started = Date.now()
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000))
  const perMinute = ((await requests()) - startRequests) / ((Date.now() - started) / 60_000)
  const rssNow = Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${last!.pid}/status`, 'utf8'))![1]) / 1024
  await last!.stop('SIGTERM')

  const summary = (name: string) => {
    const list = samples.get(name)!
    return {
      tree: name,
      rssMiB: MiB(median(list.map((s) => s.rss))),
      heapUsedAfterGcMiB: MiB(median(list.map((s) => s.heapUsed))),
      heapTotalMiB: MiB(median(list.map((s) => s.heapTotal))),
      externalMiB: MiB(median(list.map((s) => s.external))),
      codeSpaceMiB: MiB(median(list.map((s) => s.code))),
      readyMs: Math.round(median(list.map((s) => s.readyMs))),
    }
  }
  const rows = trees.map((t) => summary(t.name))
  const current = rows.at(-1)!
  const before = beforeRoot ? rows[0] : undefined
  const result = {
    idleRssMiB: current.rssMiB,
    heapUsedAfterGcMiB: current.heapUsedAfterGcMiB,
    heapTotalMiB: current.heapTotalMiB,
    externalMiB: current.externalMiB,
    codeSpaceMiB: current.codeSpaceMiB,
    readyMs: current.readyMs,
    ...(before ? {readyRatioToBefore: Math.round(current.readyMs / before.readyMs * 100) / 100, before} : {}),
    throughOclif: rows.at(-2),
    rssAfterWindowMiB: Math.round(rssNow),
    apiserverRequestsPerMinute: Math.round(perMinute * 10) / 10,
    windowMinutes: minutes,
    rounds,
    leaderElection: true,
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  }
  console.table(rows)
  console.log(JSON.stringify(result, null, 2))
  await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
  await writeFile(path.join(import.meta.dirname, 'results', 'idle.json'), JSON.stringify(result, null, 2) + '\n')
} finally {
  client.close()
  await controlPlane.stop()
}
