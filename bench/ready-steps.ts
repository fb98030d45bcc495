/**
 * Where the operator's time to Ready goes (issue 36): starts `operator run` as the endpoint bench does (API sync on
 * against the simulator, no leader election, from dist/), polls the OperatorConfig every 20 ms until it is Ready as
 * the bench defines it (phase Ready, cluster registered, endpoint-discovery and endpoint-sync running), and prints each
 * run's log lines (debug) with their time since spawn, and the median of every step over the runs. Not a pass/fail
 * test.
 *
 *   npm run build && node --import tsx bench/ready-steps.ts [--runs 5] [--node-options '…']
 */
import {parseArgs} from 'node:util'
import {KubeClient, type KubeObject} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {operatorNamespaceFor} from '../test/support/api-setup.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {startOperator} from '../test/support/operator-process.js'
import {benchNodeOptions, ensureCrdsWith} from './setup.js'

const {values: flags} = parseArgs({
  options: {runs: {type: 'string', default: '5'}, 'node-options': {type: 'string', default: ''}},
  strict: true,
})
const runs = Number(flags.runs)
const controlPlane = await startControlPlane({})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const sim = await ApiSimulator.start()
type ConfigStatus = {phase?: string; local_cluster?: {cluster_id?: string}; controllers?: Array<{name: string; running?: boolean}>}
/** Per message (first occurrence per run): ms since spawn. */
const steps = new Map<string, number[]>()
const readyMs: number[] = []
try {
  await ensureCrdsWith(client)
  for (let run = 1; run <= runs; run++) {
    const {namespace} = await operatorNamespaceFor(client, sim, {
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 60}, external_dns_webhook: {port: await freePort()},
    })
    const spawnedAt = Date.now()
    const op = await startOperator({
      kubeconfig: controlPlane.kubeconfigPath, namespace, logLevel: 'debug',
      env: {NODE_OPTIONS: benchNodeOptions(flags['node-options'])},
    })
    try {
      for (const deadline = Date.now() + 60_000; ;) {
        const config = await client.getOrUndefined<KubeObject & {status?: ConfigStatus}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: 'default'})
        const running = new Set((config?.status?.controllers ?? []).filter((c) => c.running).map((c) => c.name))
        if (config?.status?.phase === 'Ready' && config.status.local_cluster?.cluster_id && running.has('endpoint-sync') && running.has('endpoint-discovery')) break
        if (Date.now() > deadline) throw new Error(`not Ready after 60 s:\n${op.rawOutput().slice(-3000)}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const ready = Date.now() - spawnedAt
      readyMs.push(ready)
      console.log(`\n== run ${run}: Ready seen after ${ready} ms`)
      const seen = new Set<string>()
      for (const line of op.logs()) {
        const at = Date.parse(String(line.time ?? line.ts ?? '')) - spawnedAt
        if (!Number.isFinite(at) || at > ready) continue
        const detail = Object.entries(line).filter(([key]) => !['time', 'ts', 'level', 'msg'].includes(key)).map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(' ')
        console.log(`${String(at).padStart(6)} ms  ${line.msg}${detail ? `  ${detail.slice(0, 140)}` : ''}`)
        if (!seen.has(line.msg)) {
          seen.add(line.msg)
          steps.set(line.msg, [...(steps.get(line.msg) ?? []), at])
        }
      }
    } finally {
      await op.stop('SIGTERM')
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  console.log(`\n== median over ${runs} runs (first time each message is logged, ms since spawn)`)
  for (const [msg, values] of [...steps].sort((a, b) => median(a[1]) - median(b[1]))) console.log(`${String(median(values)).padStart(6)}  ${msg}${values.length < runs ? ` (${values.length} of ${runs} runs)` : ''}`)
  console.log(`${String(median(readyMs)).padStart(6)}  Ready seen (OperatorConfig polled every 20 ms)  [${readyMs.join(', ')}]`)
} finally {
  await sim.close()
  await controlPlane.stop()
}
