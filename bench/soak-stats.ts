/**
 * The soak bench's arithmetic (bench/soak.ts), pure: least-squares slopes, the summary of the per-minute samples
 * after the warm-up, the fault schedule, and which warning/error log lines a healthy run should not have.
 */

/** One sample a minute of the operator under churn. */
export interface SoakSample {
  /** Minutes since the churn started. */
  minute: number
  rssMiB: number
  /** V8 heap used after two forced full GCs. */
  heapAfterGcMiB: number
  heapTotalMiB: number
  /**
   * Of the heap after GC, compiled code: machine code and bytecode with their metadata (v8.getHeapCodeStatistics).
   * It grows while the JIT optimizes functions that have run long enough, and levels off; the rest is data.
   */
  jitMiB: number
  externalMiB: number
  /** Event-loop delay since the previous sample (perf_hooks.monitorEventLoopDelay), ms. */
  eventLoopP99Ms: number
  eventLoopMaxMs: number
  /** process.getActiveResourcesInfo() without timers: sockets, servers, pipes, file requests. */
  handles: number
  /** Active timers (`Timeout` in process.getActiveResourcesInfo()): requeues, intervals, deadlines. */
  timers: number
  /** Open socket file descriptors of the process (/proc/<pid>/fd). */
  sockets: number
  /** User changes (creates, edits, deletes) since the previous sample. */
  changes: number
  /** The operator's Kubernetes writes (create/update/patch/delete answered < 400) since the previous sample. */
  kubeWrites: number
  /** The operator's applied Polycrate API writes since the previous sample (the health report excluded). */
  apiWrites: number
  /** Warning and error log lines a healthy run should not have, since the previous sample. */
  errorLines: number
}

/** The least-squares slope of y over x (NaN with fewer than two distinct x). */
export function leastSquaresSlope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n
  let covariance = 0
  let variance = 0
  for (const [x, y] of points) {
    covariance += (x - meanX) * (y - meanY)
    variance += (x - meanX) ** 2
  }
  return variance === 0 ? Number.NaN : covariance / variance
}

/** Nearest-rank percentile (p in 0–100) of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const round = (value: number, digits = 2) => (Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : null)
const ratio = (writes: number, changes: number) => (changes > 0 ? writes / changes : Number.NaN)

export interface WritesPerChange {
  /** Over all samples after the warm-up. */
  overall: number | null
  /** The first and the second half of them: flat when they are about equal. */
  firstHalf: number | null
  secondHalf: number | null
}

export interface SoakSummary {
  warmupMinutes: number
  /** Samples after the warm-up, which the slopes and the rest are computed from. */
  measuredSamples: number
  rssSlopeMiBPerHour: number | null
  heapAfterGcSlopeMiBPerHour: number | null
  /**
   * The compiled code's part of that slope (the JIT), and the rest: data, what a leak would grow — but also V8's
   * feedback and code-dependency metadata (allocation sites, dependent-code lists), which grow with the optimized
   * code and which only a heap snapshot tells apart (bench/heap-diff.ts).
   */
  jitSlopeMiBPerHour: number | null
  heapWithoutJitSlopeMiBPerHour: number | null
  rssMiB: {start: number | null; end: number | null}
  heapAfterGcMiB: {start: number | null; end: number | null}
  /** The median and the largest of the per-minute event-loop delay p99s. */
  eventLoopDelayP99Ms: {median: number | null; max: number | null}
  handles: {start: number | null; end: number | null}
  timers: {start: number | null; end: number | null}
  sockets: {start: number | null; end: number | null}
  changes: number
  writesPerChange: {kube: WritesPerChange; api: WritesPerChange}
  errorLines: number
}

/** Sums one field over samples. */
const total = (samples: readonly SoakSample[], field: 'changes' | 'kubeWrites' | 'apiWrites' | 'errorLines') => samples.reduce((sum, s) => sum + s[field], 0)

function writesPerChange(samples: readonly SoakSample[], field: 'kubeWrites' | 'apiWrites'): WritesPerChange {
  const half = Math.floor(samples.length / 2)
  const of = (part: readonly SoakSample[]) => round(ratio(total(part, field), total(part, 'changes')))
  return {overall: of(samples), firstHalf: of(samples.slice(0, half)), secondHalf: of(samples.slice(half))}
}

/**
 * The summary of a soak: slopes per hour and the rest over the samples taken at or after `warmupMinutes` (all of
 * them when none is). Error lines count over the whole run: a healthy run has none, warm-up or not.
 */
export function summarize(samples: readonly SoakSample[], warmupMinutes: number): SoakSummary {
  const after = samples.filter((s) => s.minute >= warmupMinutes)
  const measured = after.length > 0 ? after : samples
  const slopeOf = (value: (sample: SoakSample) => number) => round(leastSquaresSlope(measured.map((s) => [s.minute, value(s)] as const)) * 60)
  const slope = (field: 'rssMiB' | 'heapAfterGcMiB' | 'jitMiB') => slopeOf((s) => s[field])
  const ends = (field: 'rssMiB' | 'heapAfterGcMiB' | 'handles' | 'timers' | 'sockets') => ({start: round(measured[0]?.[field] ?? Number.NaN, 1), end: round(measured.at(-1)?.[field] ?? Number.NaN, 1)})
  const p99s = measured.map((s) => s.eventLoopP99Ms)
  return {
    warmupMinutes,
    measuredSamples: after.length,
    rssSlopeMiBPerHour: slope('rssMiB'),
    heapAfterGcSlopeMiBPerHour: slope('heapAfterGcMiB'),
    jitSlopeMiBPerHour: slope('jitMiB'),
    heapWithoutJitSlopeMiBPerHour: slopeOf((s) => s.heapAfterGcMiB - s.jitMiB),
    rssMiB: ends('rssMiB'),
    heapAfterGcMiB: ends('heapAfterGcMiB'),
    eventLoopDelayP99Ms: {median: round(percentile(p99s, 50), 1), max: round(p99s.length ? Math.max(...p99s) : Number.NaN, 1)},
    handles: ends('handles'),
    timers: ends('timers'),
    sockets: ends('sockets'),
    changes: total(samples, 'changes'),
    writesPerChange: {kube: writesPerChange(measured, 'kubeWrites'), api: writesPerChange(measured, 'apiWrites')},
    errorLines: total(samples, 'errorLines'),
  }
}

/** The default warm-up: 10 minutes for runs of 30 minutes or more, else a fifth of the run (at least one minute). */
export function defaultWarmup(minutes: number): number {
  return minutes >= 30 ? 10 : Math.max(1, Math.floor(minutes / 5))
}

export type FaultKind = 'brown-out' | 'watch-close'

export interface FaultEvent {
  kind: FaultKind
  /** Minutes after the churn started. */
  atMinute: number
  /** How long it lasts (a watch close is instant: 0). */
  forSeconds: number
}

/**
 * Every `everyMinutes`: an API brown-out of `brownOutSeconds` at 1/5 of each period and a close of every watch at
 * 3/5 of it, until `minutes` (a fault whose end would pass the run's end is left out).
 */
export function faultSchedule(minutes: number, everyMinutes: number, brownOutSeconds: number): FaultEvent[] {
  const events: FaultEvent[] = []
  for (let start = 0; start < minutes; start += everyMinutes) {
    const brownOut = start + everyMinutes / 5
    if (brownOut + brownOutSeconds / 60 <= minutes) events.push({kind: 'brown-out', atMinute: brownOut, forSeconds: brownOutSeconds})
    const close = start + (everyMinutes * 3) / 5
    if (close < minutes) events.push({kind: 'watch-close', atMinute: close, forSeconds: 0})
  }
  return events
}

/** A log line of the operator (JSON): `ts` (ISO), `level`, `msg`, fields. */
export interface LogLine {
  ts?: string
  level?: string
  msg: string
  [field: string]: unknown
}

/** When a fault was injected, in ms since the epoch (`end` = start for an instant one). */
export interface FaultWindow {
  kind: FaultKind
  start: number
  end: number
}

/**
 * Whether a fault of this kind explains what a line says: a brown-out the Polycrate API's errors, retries and the
 * disconnection; a watch close what a watch or a relist logs.
 */
export function faultExplains(kind: FaultKind, line: LogLine): boolean {
  const text = [line.msg, line.error, line.message].filter((part) => part !== undefined).map(String).join(' ')
  return kind === 'brown-out' ? /polycrate api/i.test(text) : /\bwatch|relist|resource ?version|too old/i.test(text)
}

/**
 * Splits the warning and error lines into those an injected fault explains (logged from its start until `graceMs`
 * after its end, and about what it broke: see faultExplains) and those a healthy run should not have. Lines without a
 * parsable `ts` count as unexplained.
 */
export function classifyLogLines(lines: readonly LogLine[], faults: readonly FaultWindow[], graceMs: number, explains = faultExplains): {explained: LogLine[]; unexpected: LogLine[]} {
  const explained: LogLine[] = []
  const unexpected: LogLine[] = []
  for (const line of lines) {
    if (line.level !== 'warn' && line.level !== 'error') continue
    const at = Date.parse(line.ts ?? '')
    const covered = Number.isFinite(at) && faults.some((fault) => at >= fault.start && at <= fault.end + graceMs && explains(fault.kind, line))
    ;(covered ? explained : unexpected).push(line)
  }
  return {explained, unexpected}
}
