/* global process */
// Bench-only preload for the operator process (NODE_OPTIONS="--expose-gc --require bench/heap-probe.cjs"): on
// SIGUSR2 it collects garbage and logs one JSON line with the V8 heap and RSS, which the bench reads from the log.
process.on('SIGUSR2', () => {
  globalThis.gc()
  globalThis.gc()
  const memory = process.memoryUsage()
  process.stderr.write(`${JSON.stringify({msg: 'heap-probe', at: Date.now(), heapUsed: memory.heapUsed, heapTotal: memory.heapTotal, rss: memory.rss, external: memory.external})}\n`)
})
