import assert from 'node:assert/strict'
import {pause, poll, repeat, sleep, systemClock, timeoutSignal} from '../../../src/lib/clock.js'
import {FakeTimers, settle} from '../../support/fake-timers.js'

describe('clock', () => {
  describe('systemClock', () => {
    it('a timer is unref\'d unless it keeps the process alive', () => {
      const plain = systemClock.setTimeout(() => {}, 60_000) as NodeJS.Timeout
      const kept = systemClock.setTimeout(() => {}, 60_000, {keepAlive: true}) as NodeJS.Timeout
      try {
        assert.equal(plain.hasRef(), false)
        assert.equal(kept.hasRef(), true)
      } finally {
        systemClock.clearTimeout(plain)
        systemClock.clearTimeout(kept)
      }
    })
  })

  describe('sleep', () => {
    it('resolves when the clock reaches its end, not before', async () => {
      const clock = new FakeTimers()
      let done = false
      const sleeping = sleep(clock, 1000).then(() => (done = true))
      await clock.advance(999)
      assert.equal(done, false)
      await clock.advance(1)
      await sleeping
      assert.equal(done, true)
    })

    it('rejects with an AbortError when the signal aborts, and its timer is gone', async () => {
      const clock = new FakeTimers()
      const controller = new AbortController()
      let fired = false
      const sleeping = sleep(clock, 1000, controller.signal).then(() => (fired = true))
      await clock.advance(500)
      controller.abort(new Error('shutdown'))
      await assert.rejects(sleeping, (error: Error) => error.name === 'AbortError' && (error.cause as Error).message === 'shutdown')
      await clock.advance(1000)
      assert.equal(fired, false)
    })

    it('rejects at once when the signal has already aborted', async () => {
      await assert.rejects(sleep(new FakeTimers(), 1000, AbortSignal.abort()), {name: 'AbortError'})
    })
  })

  describe('pause', () => {
    it('resolves at its end on the clock, or as soon as the signal aborts (never rejects)', async () => {
      const clock = new FakeTimers()
      let done = false
      const pausing = pause(clock, 1000).then(() => (done = true))
      await clock.advance(999)
      assert.equal(done, false)
      await clock.advance(1)
      await pausing
      const controller = new AbortController()
      const cut = pause(clock, 60_000, controller.signal)
      controller.abort()
      await cut
      await pause(clock, 60_000, controller.signal)
    })
  })

  describe('poll', () => {
    it('asks every interval on the clock until a value comes; the check is told once the deadline has passed', async () => {
      const clock = new FakeTimers()
      const seen: Array<[number, boolean]> = []
      const start = clock.now()
      const polling = poll(clock, {intervalMs: 100, timeoutMs: 250}, (expired) => {
        seen.push([clock.now() - start, expired])
        return seen.length === 4 ? 'done' : undefined
      })
      await settle()
      await clock.advance(300)
      assert.equal(await polling, 'done')
      assert.deepEqual(seen, [[0, false], [100, false], [200, false], [300, true]])
    })

    it('throws the check\'s own error at the deadline, or a plain one when it returns nothing', async () => {
      const clock = new FakeTimers()
      const own = poll(clock, {intervalMs: 100, timeoutMs: 150}, (expired) => {
        if (expired) throw new Error('still not Established')
        return undefined
      })
      const plain = poll(clock, {intervalMs: 100, timeoutMs: 150}, () => undefined)
      const outcomes = Promise.allSettled([own, plain])
      await settle()
      await clock.advance(200)
      const [a, b] = await outcomes
      assert.match(String((a as PromiseRejectedResult).reason), /still not Established/)
      assert.match(String((b as PromiseRejectedResult).reason), /not done after/)
    })
  })

  describe('timeoutSignal', () => {
    it('aborts with a TimeoutError after its time on the clock', async () => {
      const clock = new FakeTimers()
      const {signal} = timeoutSignal(clock, 100)
      await clock.advance(99)
      assert.equal(signal.aborted, false)
      await clock.advance(1)
      assert.equal(signal.aborted, true)
      assert.equal((signal.reason as DOMException).name, 'TimeoutError')
    })

    it('clear stops it', async () => {
      const clock = new FakeTimers()
      const {signal, clear} = timeoutSignal(clock, 100)
      clear()
      await clock.advance(1000)
      assert.equal(signal.aborted, false)
    })
  })

  describe('repeat', () => {
    it('calls back every interval until stopped', async () => {
      const clock = new FakeTimers()
      const start = clock.now()
      const calls: number[] = []
      const stop = repeat(clock, 1000, () => calls.push(clock.now() - start))
      await clock.advance(3500)
      assert.deepEqual(calls, [1000, 2000, 3000])
      stop()
      await clock.advance(5000)
      assert.equal(calls.length, 3)
    })

    it('a slow async callback does not shift the schedule', async () => {
      const clock = new FakeTimers()
      const start = clock.now()
      const calls: number[] = []
      const stop = repeat(clock, 1000, () => {
        calls.push(clock.now() - start)
        return new Promise<void>((resolve) => clock.setTimeout(resolve, 1500))
      })
      await clock.advance(3000)
      stop()
      await settle()
      assert.deepEqual(calls, [1000, 2000, 3000])
    })

    it('stopping from inside the callback arms nothing more', async () => {
      const clock = new FakeTimers()
      let calls = 0
      const stop = repeat(clock, 10, () => {
        calls++
        stop()
      })
      await clock.advance(100)
      assert.equal(calls, 1)
    })
  })
})
