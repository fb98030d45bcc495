/* global process */
// Bench-only preload for the operator process (NODE_OPTIONS="--expose-gc --require bench/heap-probe.cjs"): on
// SIGUSR2 it collects garbage and logs one JSON line with the V8 heap (used/total, and per space: code, old, new,
// large objects, …), external and array-buffer memory and RSS, which the bench reads from the log.
const v8 = process.getBuiltinModule('node:v8') // Node ≥ 20.16; no require() in this repo's lint
process.on('SIGUSR2', () => {
  globalThis.gc()
  globalThis.gc()
  const memory = process.memoryUsage()
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]))
  const {heap_size_limit: heapSizeLimit} = v8.getHeapStatistics()
  process.stderr.write(`${JSON.stringify({
    msg: 'heap-probe', at: Date.now(), heapUsed: memory.heapUsed, heapTotal: memory.heapTotal, rss: memory.rss,
    external: memory.external, arrayBuffers: memory.arrayBuffers, heapSizeLimit, spaces,
  })}\n`)
})
