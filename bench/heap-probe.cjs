/* global process, setTimeout */
// Bench-only preload for the operator process (NODE_OPTIONS="--expose-gc --require bench/heap-probe.cjs"): on
// SIGUSR2 it collects garbage and logs one JSON line with the V8 heap (used/total, and per space: code, old, new,
// large objects, …), what of it is compiled code (v8.getHeapCodeStatistics: machine code and bytecode with their
// metadata, the JIT's share), external and array-buffer memory and RSS, which the bench reads from the log. The line also
// carries the event-loop delay since the previous probe (perf_hooks.monitorEventLoopDelay, read before the forced GC,
// which itself blocks the loop, and restarted after it) and the active handles and requests by type
// (process.getActiveResourcesInfo(): sockets, servers, timers, …).
const v8 = process.getBuiltinModule('node:v8') // Node ≥ 20.16; no require() in this repo's lint
const {monitorEventLoopDelay} = process.getBuiltinModule('node:perf_hooks')
const loopDelay = monitorEventLoopDelay({resolution: 10})
loopDelay.enable()
const ms = (ns) => Math.round(ns / 1e4) / 100
process.on('SIGUSR2', () => {
  const eventLoop = {p50Ms: ms(loopDelay.percentile(50)), p99Ms: ms(loopDelay.percentile(99)), maxMs: ms(loopDelay.max), samples: loopDelay.count}
  const resources = {}
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1
  globalThis.gc()
  globalThis.gc()
  const memory = process.memoryUsage()
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]))
  const {heap_size_limit: heapSizeLimit} = v8.getHeapStatistics()
  const {code_and_metadata_size: codeAndMetadata, bytecode_and_metadata_size: bytecodeAndMetadata} = v8.getHeapCodeStatistics()
  process.stderr.write(`${JSON.stringify({
    msg: 'heap-probe', at: Date.now(), heapUsed: memory.heapUsed, heapTotal: memory.heapTotal, rss: memory.rss,
    external: memory.external, arrayBuffers: memory.arrayBuffers, heapSizeLimit, spaces, code: {codeAndMetadata, bytecodeAndMetadata}, eventLoop, resources,
  })}\n`)
  // The delay the forced GC caused is recorded when the loop's timer next runs: start counting after that.
  setTimeout(() => loopDelay.reset(), 50).unref()
})
