import assert from 'node:assert/strict'
import {classifyLogLines, defaultWarmup, faultExplains, faultSchedule, leastSquaresSlope, percentile, summarize, type FaultKind, type LogLine, type SoakSample} from '../../../bench/soak-stats.js'

const sample = (minute: number, fields: Partial<SoakSample> = {}): SoakSample => ({
  minute, rssMiB: 100, heapAfterGcMiB: 30, heapTotalMiB: 40, jitMiB: 3, externalMiB: 2, eventLoopP99Ms: 5, eventLoopMaxMs: 8,
  handles: 20, timers: 30, sockets: 10, changes: 60, kubeWrites: 120, apiWrites: 30, errorLines: 0, ...fields,
})

describe('soak bench arithmetic', () => {
  it('leastSquaresSlope: exact lines, noise around a line, and the degenerate cases', () => {
    const cases: Array<[Array<[number, number]>, number]> = [
      [[[0, 1], [1, 3], [2, 5]], 2],
      [[[0, 5], [10, 5], [20, 5]], 0],
      [[[0, 10], [1, 9], [2, 8], [3, 7]], -1],
      // a line with alternating noise: cov/var = 29/70
      [[[0, 1], [2, 0], [4, 3], [6, 2], [8, 5], [10, 4]], 29 / 70],
    ]
    for (const [points, expected] of cases) assert.ok(Math.abs(leastSquaresSlope(points) - expected) < 1e-3, JSON.stringify(points))
    assert.ok(Number.isNaN(leastSquaresSlope([])))
    assert.ok(Number.isNaN(leastSquaresSlope([[1, 2]])))
    assert.ok(Number.isNaN(leastSquaresSlope([[1, 2], [1, 3]])), 'one distinct x has no slope')
  })

  it('percentile: nearest rank of unsorted values', () => {
    const values = [5, 1, 4, 2, 3]
    const cases: Array<[number, number]> = [[0, 1], [20, 1], [50, 3], [99, 5], [100, 5]]
    for (const [p, expected] of cases) assert.equal(percentile(values, p), expected, `p${p}`)
    assert.ok(Number.isNaN(percentile([], 50)))
  })

  it('summarize: slopes per hour after the warm-up only, ends, event-loop p99s, writes per change by halves, error lines over the whole run', () => {
    // Warm-up: RSS jumps; afterwards it grows 0.05 MiB a minute (3 MiB/h) and the heap is flat.
    const samples = [
      sample(0, {rssMiB: 60, errorLines: 1, changes: 10, kubeWrites: 500}),
      sample(1, {rssMiB: 90}),
      ...Array.from({length: 10}, (_, i) => sample(2 + i, {rssMiB: 100 + 0.05 * i, jitMiB: 3 + 0.01 * i, handles: 20 + (i === 9 ? 1 : 0), eventLoopP99Ms: i === 4 ? 50 : 5, kubeWrites: i < 5 ? 120 : 180})),
    ]
    const summary = summarize(samples, 2)
    assert.equal(summary.measuredSamples, 10)
    assert.equal(summary.rssSlopeMiBPerHour, 3)
    assert.equal(summary.heapAfterGcSlopeMiBPerHour, 0)
    assert.equal(summary.jitSlopeMiBPerHour, 0.6)
    assert.equal(summary.heapWithoutJitSlopeMiBPerHour, -0.6, 'a flat heap whose JIT grows: its data shrank')
    assert.deepEqual(summary.rssMiB, {start: 100, end: 100.5})
    assert.deepEqual(summary.handles, {start: 20, end: 21})
    assert.deepEqual(summary.eventLoopDelayP99Ms, {median: 5, max: 50})
    assert.deepEqual(summary.writesPerChange.kube, {overall: 2.5, firstHalf: 2, secondHalf: 3})
    assert.deepEqual(summary.writesPerChange.api, {overall: 0.5, firstHalf: 0.5, secondHalf: 0.5})
    assert.equal(summary.changes, 10 + 60 * 11)
    assert.equal(summary.errorLines, 1, 'counted in the warm-up too')
  })

  it('summarize: a run shorter than its warm-up uses every sample; one sample has no slope (null)', () => {
    assert.equal(summarize([sample(0, {rssMiB: 1}), sample(1, {rssMiB: 2})], 10).rssSlopeMiBPerHour, 60)
    const one = summarize([sample(0)], 0)
    assert.equal(one.rssSlopeMiBPerHour, null)
    assert.deepEqual(one.writesPerChange.kube, {overall: 2, firstHalf: null, secondHalf: 2})
  })

  it('defaultWarmup: 10 minutes from 30 minutes on, else a fifth (at least 1)', () => {
    const cases: Array<[number, number]> = [[1, 1], [5, 1], [12, 2], [29, 5], [30, 10], [60, 10]]
    for (const [minutes, warmup] of cases) assert.equal(defaultWarmup(minutes), warmup, `${minutes} min`)
  })

  it('faultSchedule: a brown-out at 1/5 and a watch close at 3/5 of every period, none past the end', () => {
    assert.deepEqual(faultSchedule(10, 5, 30), [
      {kind: 'brown-out', atMinute: 1, forSeconds: 30}, {kind: 'watch-close', atMinute: 3, forSeconds: 0},
      {kind: 'brown-out', atMinute: 6, forSeconds: 30}, {kind: 'watch-close', atMinute: 8, forSeconds: 0},
    ])
    assert.deepEqual(faultSchedule(1.2, 5, 30), [], 'the brown-out would end after the run')
    assert.deepEqual(faultSchedule(2, 5, 30).map((f) => f.kind), ['brown-out'], 'a run of 2 minutes: the first brown-out only')
    assert.equal(faultSchedule(60, 5, 30).length, 24)
  })

  it('classifyLogLines: warnings and errors about a fault within it (plus grace) are explained, others are not; info lines are ignored', () => {
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString()
    const faults = [
      {kind: 'brown-out' as const, start: Date.parse(at(10)), end: Date.parse(at(40))},
      {kind: 'watch-close' as const, start: Date.parse(at(30)), end: Date.parse(at(30))},
    ]
    const api = 'The Polycrate API failed on POST /api/v1/endpoints/ (503 Service Unavailable)'
    const lines = [
      {ts: at(5), level: 'warn', msg: 'reconcile failed', error: api},
      {ts: at(10), level: 'error', msg: 'reconcile failed', error: api},
      {ts: at(12), level: 'warn', msg: 'polycrate api request failed; retrying'},
      {ts: at(20), level: 'error', msg: 'reconcile failed', error: 'Artifact x is invalid: status: Invalid value: "null"'},
      {ts: at(35), level: 'warn', msg: 'watch ended early; relisting'},
      {ts: at(50), level: 'warn', msg: 'Polycrate API not connected'},
      {ts: at(55), level: 'warn', msg: 'reconcile failed', error: api},
      {ts: at(20), level: 'info', msg: 'info'},
      {level: 'error', msg: 'no time', error: api},
    ]
    const {explained, unexpected} = classifyLogLines(lines, faults, 10_000)
    assert.deepEqual(explained.map((l) => `${l.ts} ${l.msg}`), [`${at(10)} reconcile failed`, `${at(12)} polycrate api request failed; retrying`, `${at(35)} watch ended early; relisting`, `${at(50)} Polycrate API not connected`])
    assert.deepEqual(unexpected.map((l) => `${l.ts} ${l.msg}`), [`${at(5)} reconcile failed`, `${at(20)} reconcile failed`, `${at(55)} reconcile failed`, 'undefined no time'])
  })

  it('faultExplains: a brown-out explains the Polycrate API\'s errors, a watch close watches and relists', () => {
    const cases: Array<[FaultKind, LogLine, boolean]> = [
      ['brown-out', {msg: 'reconcile failed', error: 'The Polycrate API is rate-limiting GET /api/v1/endpoints/ (429)'}, true],
      ['brown-out', {msg: 'could not report check results', error: 'The Polycrate API failed on POST /api/v1/agent/health/ (502)'}, true],
      ['brown-out', {msg: 'reconcile failed', error: 'Could not remove the finalizer f: httproutes "r" not found'}, false],
      ['watch-close', {msg: 'watch closed; relisting', resource: 'pods'}, true],
      ['watch-close', {msg: 'reconcile failed', error: 'The Polycrate API failed (503)'}, false],
    ]
    for (const [kind, line, answer] of cases) assert.equal(faultExplains(kind, line), answer, `${kind}: ${line.msg} ${String(line.error)}`)
  })
})
