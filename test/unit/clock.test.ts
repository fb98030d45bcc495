import assert from 'node:assert/strict'
import {repeat, sleep, systemClock, timeoutSignal} from '../../src/lib/clock.js'
import {FakeTimers, settle} from '../support/fake-timers.js'

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
