/* global process, console */
// What each module that `operator run` loads costs in memory, measured in fresh processes (`node --expose-gc`): RSS,
// V8 heap used after GC, and V8 code space, after importing the module (and everything it imports) on top of bare
// Node. Plain JavaScript so that it measures any build: `node bench/memory-imports.mjs [ROOT]` (default: this
// worktree; ROOT must hold a built dist/ and node_modules/). Prints a table, sorted by RSS, and the JSON.
import {spawnSync} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'))
const runs = 3
// What `operator run` imports, from the outside in. A module that does not exist in ROOT is skipped.
const modules = [
  '@oclif/core',
  '@oclif/core/execute',
  '@kubernetes/client-node',
  'zod',
  'dist/lib/logger.js',
  'dist/kube/load.js',
  'dist/kube/client.js',
  'dist/operator/runtime/manager.js',
  'dist/operator/config/operator-config.js',
  'dist/operator/agent/api-session.js',
  'dist/operator/monitoring/monitoring-feature.js',
  'dist/operator/cloud/cloud-node-feature.js',
  'dist/operator/cloud/service-load-balancer-feature.js',
  'dist/operator/dns/external-dns-webhook.js',
  'dist/operator/dns/dns01-webhook.js',
  'dist/operator/kinds/k8scluster/k8scluster.reconciler.js',
  'dist/operator/kinds/s3bucket/s3bucket.reconciler.js',
  'dist/operator/kinds/endpoint/endpoint.discovery.js',
  'dist/operator/kinds/k8sapp/k8sapp.discovery.js',
  'dist/operator/kinds/endpoint/endpoint.sync.js',
  'dist/operator/registry.js',
  'dist/operator/operator.js',
  'dist/commands/operator/run.js', // the oclif command class (help, flag errors, POLYCRATE_NO_FAST_PATH=1)
  'dist/run/run-fast-path.js', // what bin/run.js loads for `operator run` (the bundle)
]

const probe = `
const v8 = require('node:v8')
const measure = () => {
  gc(); gc()
  const m = process.memoryUsage()
  const code = v8.getHeapSpaceStatistics().filter((s) => s.space_name.startsWith('code')).reduce((a, s) => a + s.space_used_size, 0)
  return {rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, code}
}
const spec = process.argv[1]
import(spec).then(() => console.log(JSON.stringify(measure())), (e) => { console.error(String(e)); process.exit(1) })`

function sample(spec) {
  const values = []
  for (let i = 0; i < runs; i++) {
    const result = spawnSync(process.execPath, ['--expose-gc', '-e', probe, spec], {cwd: root, encoding: 'utf8', env: {...process.env, NODE_OPTIONS: ''}})
    if (result.status !== 0) return undefined
    values.push(JSON.parse(result.stdout.trim().split('\n').pop()))
  }
  // The median by RSS (the least noisy by far is heapUsed; RSS varies by ~1 MiB run to run).
  values.sort((a, b) => a.rss - b.rss)
  return values[Math.floor(values.length / 2)]
}

const MiB = (bytes) => Math.round(bytes / 1048576 * 10) / 10
const base = sample('node:os')
const rows = [{module: '(bare node)', rss: MiB(base.rss), heapUsed: MiB(base.heapUsed), heapTotal: MiB(base.heapTotal), external: MiB(base.external), code: MiB(base.code)}]
for (const module of modules) {
  const spec = module.startsWith('dist/') ? pathToFileURL(path.join(root, module)).href : module
  const m = sample(spec)
  if (!m) continue
  rows.push({
    module,
    rss: MiB(m.rss - base.rss), heapUsed: MiB(m.heapUsed - base.heapUsed), heapTotal: MiB(m.heapTotal - base.heapTotal),
    external: MiB(m.external - base.external), code: MiB(m.code - base.code),
  })
}
console.log(`root: ${root} (MiB on top of bare node, except the first row; median of ${runs} fresh processes)`)
console.table(rows)
console.log(JSON.stringify({root, rows}))
