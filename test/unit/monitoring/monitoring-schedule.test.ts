import assert from 'node:assert/strict'
import {CheckScheduler, nextDue, phaseOffset, type Schedulable} from '../../../src/operator/monitoring/schedule.js'
import {ResultBuffer} from '../../../src/operator/monitoring/result-buffer.js'
import {Tracked} from '../../support/collected.js'
import {FakeTimers, settle} from '../../support/fake-timers.js'

const ids = (n: number, prefix = 'ep') => Array.from({length: n}, (_, i) => `${prefix}-${i}`)
const plans = (n: number, intervalMs: number): Schedulable[] => ids(n).map((endpointId) => ({endpointId, intervalMs}))

function perSecond(times: number[]): number[] {
  const start = Math.min(...times)
  const counts: number[] = []
  for (const t of times) {
    const second = Math.floor((t - start) / 1000)
    counts[second] = (counts[second] ?? 0) + 1
  }
  return Array.from(counts, (c) => c ?? 0)
}

describe('monitoring schedule: grid and spread', () => {
  it('phaseOffset lies in [0, interval) and is stable per id', () => {
    for (const id of ids(200)) {
      const offset = phaseOffset(id, 10_000)
      assert.ok(offset >= 0 && offset < 10_000)
      assert.equal(phaseOffset(id, 10_000), offset)
    }
  })

  it('nextDue is the first grid point at or after now', () => {
    assert.equal(nextDue(25_000, 10_000, 3_000), 33_000)
    assert.equal(nextDue(23_000, 10_000, 3_000), 23_000)
    assert.equal(nextDue(23_001, 10_000, 3_000), 33_000)
  })

  it('1,000 endpoints at 10 s: no second of the interval gets more than 3× the mean (pure offsets)', () => {
    const counts = new Array<number>(10).fill(0)
    for (const id of ids(1000, 'endpoint-uuid')) counts[Math.floor(phaseOffset(id, 10_000) / 1000)]!++
    assert.ok(Math.max(...counts) <= 3 * 100, `counts ${counts.join(',')}`)
    assert.ok(Math.min(...counts) > 0)
  })
})

describe('monitoring schedule: CheckScheduler on a fake clock', () => {
  it('1,000 endpoints at 10 s over a minute: each checked 6 times, spread (max second ≤ 3× mean), on time', async () => {
    const timers = new FakeTimers()
    const starts: number[] = []
    const perEndpoint = new Map<string, number>()
    const delays: number[] = []
    const scheduler = new CheckScheduler<Schedulable>({
      clock: timers,
      concurrency: 100,
      run: async (plan) => {
        starts.push(timers.now())
        perEndpoint.set(plan.endpointId, (perEndpoint.get(plan.endpointId) ?? 0) + 1)
      },
      onStart: (_plan, delay) => delays.push(delay),
    })
    const startAt = timers.now()
    scheduler.update(plans(1000, 10_000))
    await timers.advance(60_000 - 1)
    scheduler.stop()
    assert.equal(perEndpoint.size, 1000)
    assert.deepEqual(new Set(perEndpoint.values()), new Set([6]))
    const counts = perSecond(starts)
    const mean = starts.length / 60
    assert.ok(Math.max(...counts) <= 3 * mean, `max ${Math.max(...counts)} vs mean ${mean}`)
    assert.ok(starts.every((t) => t >= startAt))
    assert.equal(Math.max(...delays), 0, 'nothing waits for a slot at this load')
  })

  it('at most `concurrency` checks run at once; the others wait in order and start late', async () => {
    const timers = new FakeTimers()
    let running = 0
    let peak = 0
    const delays: number[] = []
    const scheduler = new CheckScheduler<Schedulable>({
      clock: timers,
      concurrency: 3,
      run: async () => {
        running++
        peak = Math.max(peak, running)
        await new Promise<void>((resolve) => timers.setTimeout(resolve, 30_000))
        running--
      },
      onStart: (_plan, delay) => delays.push(delay),
    })
    // 10 endpoints due within one minute, each check taking 30 s: they overlap.
    scheduler.update(ids(10).map((endpointId) => ({endpointId, intervalMs: 60_000})))
    await timers.advance(200_000)
    scheduler.stop()
    assert.equal(peak, 3)
    assert.ok(delays.length >= 10)
    assert.ok(Math.max(...delays) > 0, 'checks beyond the bound waited')
  })

  it('a hanging check never moves the others: its endpoint skips rounds while the rest run on their grid', async () => {
    const timers = new FakeTimers()
    const started = new Map<string, number[]>()
    const skipped: string[] = []
    let release: () => void = () => {}
    const scheduler = new CheckScheduler<Schedulable>({
      clock: timers,
      concurrency: 2,
      run: (plan) => {
        started.set(plan.endpointId, [...(started.get(plan.endpointId) ?? []), timers.now()])
        return plan.endpointId === 'hang' ? new Promise<void>((resolve) => { release = resolve }) : Promise.resolve()
      },
      onSkip: (plan) => skipped.push(plan.endpointId),
    })
    scheduler.update([{endpointId: 'hang', intervalMs: 1000}, {endpointId: 'a', intervalMs: 1000}, {endpointId: 'b', intervalMs: 1000}])
    await timers.advance(10_000)
    assert.equal(started.get('hang')?.length, 1)
    assert.ok(skipped.filter((id) => id === 'hang').length >= 9)
    for (const id of ['a', 'b']) {
      const times = started.get(id)!
      assert.ok(times.length >= 10, `${id}: ${times.length}`)
      for (let i = 1; i < times.length; i++) assert.equal(times[i]! - times[i - 1]!, 1000, `${id} stays on its grid`)
    }
    release()
    await settle()
    await timers.advance(2000)
    assert.ok(started.get('hang')!.length >= 2, 'back on its grid once the check returned')
    scheduler.stop()
  })

  it('after a stall (a blocked event loop, a clock step) missed rounds are skipped and counted, not made up in a burst', async () => {
    const timers = new FakeTimers()
    const starts: Array<[string, number]> = []
    let skipped = 0
    const scheduler = new CheckScheduler<Schedulable>({clock: timers, concurrency: 10, run: async (plan) => { starts.push([plan.endpointId, timers.now()]) }, onSkip: () => skipped++})
    scheduler.update(plans(10, 1000))
    await timers.advance(5000)
    const before = starts.length
    await timers.jump(30_000)
    const stalled = timers.now()
    assert.equal(starts.filter(([, at]) => at === stalled).length, 10, 'one late check per endpoint, not 30')
    assert.equal(starts.length, before + 10)
    assert.ok(skipped >= 10 * 28 && skipped <= 10 * 30, `skipped ${skipped}`)
    await timers.advance(5000)
    for (const id of ids(10)) {
      const after = starts.filter(([endpoint, at]) => endpoint === id && at > stalled).map(([, at]) => at)
      assert.equal(after.length, 5, `${id} back on its 1 s grid`)
      assert.ok(after.every((at) => (at - phaseOffset(id, 1000)) % 1000 === 0))
    }
    scheduler.stop()
  })

  it('update: removed endpoints stop, added ones start, an unchanged interval keeps the grid, a changed one moves', async () => {
    const timers = new FakeTimers()
    const seen: Array<[string, number]> = []
    const scheduler = new CheckScheduler<Schedulable>({clock: timers, concurrency: 10, run: async (plan) => { seen.push([plan.endpointId, timers.now()]) }})
    scheduler.update([{endpointId: 'x', intervalMs: 5000}, {endpointId: 'y', intervalMs: 5000}])
    await timers.advance(5000)
    const xTimes = () => seen.filter(([id]) => id === 'x').map(([, t]) => t)
    const firstX = xTimes()[0]!
    scheduler.update([{endpointId: 'x', intervalMs: 5000}, {endpointId: 'z', intervalMs: 5000}])
    seen.length = 0
    await timers.advance(10_000)
    assert.ok(!seen.some(([id]) => id === 'y'), 'y was removed')
    assert.ok(seen.some(([id]) => id === 'z'))
    assert.ok(xTimes().every((t) => (t - firstX) % 5000 === 0), 'x kept its grid')
    scheduler.update([{endpointId: 'x', intervalMs: 2000}])
    seen.length = 0
    await timers.advance(10_000)
    assert.ok(xTimes().length >= 4, 'x now every 2 s')
    scheduler.stop()
  })

  it('one timer serves all endpoints: never more than one pending, whatever their number; none after stop', async () => {
    const timers = new FakeTimers()
    const pending = new Set<unknown>()
    const counted = {
      now: () => timers.now(),
      setTimeout: (callback: () => void, ms: number) => {
        const handle: unknown = timers.setTimeout(() => {
          pending.delete(handle)
          callback()
        }, ms)
        pending.add(handle)
        return handle
      },
      clearTimeout: (handle: unknown) => {
        pending.delete(handle)
        timers.clearTimeout(handle)
      },
    }
    let runs = 0
    let most = 0
    const scheduler = new CheckScheduler<Schedulable>({clock: counted, concurrency: 100, run: async () => { runs++; most = Math.max(most, pending.size) }})
    scheduler.update(plans(1000, 10_000))
    assert.equal(pending.size, 1)
    await timers.advance(20_000 - 1)
    assert.equal(runs, 2000, 'each endpoint twice in 20 s')
    assert.ok(most <= 1 && pending.size === 1, `${most} timers pending at most, ${pending.size} now`)
    scheduler.stop()
    assert.equal(pending.size, 0)
  })
})

describe('monitoring ResultBuffer', () => {
  const result = (n: number) => ({endpoint_id: `e${n}`, success: true, checked_at: new Date(n * 1000).toISOString()})

  it('peek takes the oldest within count and bytes; ack removes exactly those; a failed send re-sends them', () => {
    const buffer = new ResultBuffer(100)
    for (let i = 0; i < 10; i++) buffer.push(result(i))
    const first = buffer.peek(4, 1_000_000)!
    assert.deepEqual(first.results.map((r) => r.endpoint_id), ['e0', 'e1', 'e2', 'e3'])
    // Not acknowledged (the API failed): the same results again.
    assert.deepEqual(buffer.peek(4, 1_000_000)!.results, first.results)
    buffer.push(result(10))
    buffer.ack(first.lastSeq)
    assert.equal(buffer.size, 7)
    assert.equal(buffer.peek(100, 1_000_000)!.results[0]!.endpoint_id, 'e4')
    const oneSize = Buffer.byteLength(JSON.stringify(result(5)))
    assert.equal(buffer.peek(100, oneSize * 2)!.results.length, 2, 'bounded by bytes')
    assert.equal(buffer.peek(100, 1)!.results.length, 1, 'at least one result')
  })

  it('full: the oldest is dropped and counted; an ack after drops removes only what was sent', () => {
    const buffer = new ResultBuffer(5)
    for (let i = 0; i < 5; i++) buffer.push(result(i))
    const batch = buffer.peek(3, 1_000_000)!
    for (let i = 5; i < 8; i++) buffer.push(result(i))
    assert.equal(buffer.dropped, 3)
    assert.equal(buffer.size, 5)
    buffer.ack(batch.lastSeq)
    assert.deepEqual(buffer.peek(10, 1_000_000)!.results.map((r) => r.endpoint_id), ['e3', 'e4', 'e5', 'e6', 'e7'])
  })

  it('keeps no result that left: acknowledged and dropped ones are freed (a slow stream of results does not pile up)', async () => {
    const tracked = new Tracked<ReturnType<typeof result>>()
    const buffer = new ResultBuffer(10)
    // Pushed, acknowledged and dropped inside a function: nothing but the buffer holds them afterwards.
    ;(() => {
      for (let i = 0; i < 5; i++) buffer.push(tracked.track(`e${i}`, result(i)))
      buffer.ack(buffer.peek(5, 1_000_000)!.lastSeq) // all five acknowledged
      for (let i = 5; i < 20; i++) buffer.push(tracked.track(`e${i}`, result(i))) // e5–e9 dropped (full)
      buffer.ack(buffer.peek(3, 1_000_000)!.lastSeq) // e10–e12 acknowledged
    })()
    assert.deepEqual(await tracked.alive(), ['e13', 'e14', 'e15', 'e16', 'e17', 'e18', 'e19'])
    assert.equal(buffer.size, 7)
    assert.equal(buffer.dropped, 5)
    assert.deepEqual(buffer.peek(10, 1_000_000)!.results.map((r) => r.endpoint_id), ['e13', 'e14', 'e15', 'e16', 'e17', 'e18', 'e19'])
  })

  it('stays correct over many pushes and acks (compaction)', () => {
    const buffer = new ResultBuffer(50_000)
    let next = 0
    let expected = 0
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 300; i++) buffer.push(result(next++))
      const batch = buffer.peek(250, 10_000_000)!
      assert.equal(batch.results[0]!.endpoint_id, `e${expected}`)
      expected += batch.results.length
      buffer.ack(batch.lastSeq)
    }
    assert.equal(buffer.size, next - expected)
  })
})
