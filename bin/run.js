#!/usr/bin/env node
// `operator crds|health|explain` try the fast path first: src/cli/fast-path.ts, bundled into one CommonJS file and
// loaded with a V8 code cache, without oclif. `operator run` has a fast path of its own (src/cli/run-fast-path.ts,
// bundled into dist/run/ as ES modules, its lazily loaded parts as chunks of their own): the operator runs without
// oclif, which would otherwise stay in memory for the life of the process. What a
// fast path does not take (help, an error in the arguments, POLYCRATE_NO_FAST_PATH=1, …) and every other command go
// to oclif.
import {URL} from 'node:url'

// A reader that stops early (`polycrate operator crds | head`) closes the pipe: stop quietly with exit 0, as the output
// was cut short on purpose (not an unhandled 'error' event's stack trace, nor exit 1 under `set -o pipefail`).
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
  process.exit(0)
})

const [topic, command] = process.argv.slice(2)
let handled = false
if (topic === 'operator' && ['crds', 'health', 'explain'].includes(command) && !process.env.POLYCRATE_NO_FAST_PATH) {
  const {loadWithCodeCache} = await import('../dist/lib/code-cache.js')
  const fastPath = loadWithCodeCache(new URL('../dist/fast-path.cjs', import.meta.url), command)
  handled = await fastPath.exports.runFastPath(process.argv.slice(2))
  if (handled) fastPath.saveCache()
} else if (topic === 'operator' && command === 'run' && !process.env.POLYCRATE_NO_FAST_PATH) {
  // Node ≥ 22.1 (the image's 24): V8's compile cache for the operator's modules, beside the fast path's code cache
  // ($XDG_CACHE_HOME/polycrate; the image's /tmp, an emptyDir that outlives a container restart). A start compiles from
  // it (~10 % of the import's CPU) and flushes what it compiled once the operator runs; Node 20 has no such cache.
  const {default: nodeModule} = await import('node:module')
  if (nodeModule.enableCompileCache) {
    const {cacheDirectory} = await import('../dist/lib/code-cache.js')
    nodeModule.enableCompileCache(`${cacheDirectory()}/compile-cache`)
    setTimeout(() => nodeModule.flushCompileCache?.(), 10_000).unref()
  }
  const {runOperatorFastPath} = await import('../dist/run/run-fast-path.js')
  handled = await runOperatorFastPath(process.argv.slice(2))
}
if (!handled) {
  const {execute} = await import('@oclif/core/execute')
  await execute({dir: import.meta.url})
}
