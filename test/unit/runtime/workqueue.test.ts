import assert from 'node:assert/strict'
import {PerKeyRateLimiter} from '../../../src/lib/backoff.js'
import {WorkQueue} from '../../../src/operator/runtime/workqueue.js'
import {FakeTimers} from '../../support/fake-timers.js'


describe('WorkQueue', () => {
  it('deduplicates keys that wait', async () => {
    const queue = new WorkQueue({name: 't'})
    queue.add('a/x')
    queue.add('a/x')
    queue.add('a/y')
    assert.equal(queue.length, 2)
    assert.equal(await queue.get(), 'a/x')
    assert.equal(await queue.get(), 'a/y')
    assert.equal(queue.length, 0)
  })

  it('never hands a key to two workers at once; an add while it runs requeues it once, after done', async () => {
    const queue = new WorkQueue({name: 't'})
    queue.add('k')
    const first = await queue.get()
    assert.equal(first, 'k')
    queue.add('k')
    queue.add('k')
    assert.equal(queue.length, 0, 'a key in flight must not be queued')
    const second = queue.get()
    // The sign: a free key added now is what the waiting worker gets, so the one in flight was not handed out.
    queue.add('free')
    assert.equal(await second, 'free', 'second worker got a key that is in flight')
    queue.done('free')
    queue.done('k')
    assert.equal(await queue.get(), 'k')
    queue.done('k')
    assert.equal(queue.length, 0, 'the two adds while running make one requeue')
  })

  it('a waiting worker gets a key as soon as it is added', async () => {
    const queue = new WorkQueue({name: 't'})
    const got = queue.get()
    queue.add('z')
    assert.equal(await got, 'z')
  })

  it('addAfter delays, and the earliest pending time wins (a fake clock)', async () => {
    const clock = new FakeTimers()
    const queue = new WorkQueue({name: 't', clock})
    queue.addAfter('d', 200)
    queue.addAfter('d', 20)
    queue.addAfter('d', 500)
    assert.equal(queue.length, 0)
    await clock.advance(19)
    assert.equal(queue.length, 0, 'not before 20 ms')
    await clock.advance(1)
    assert.equal(queue.length, 1)
    assert.equal(await queue.get(), 'd')
    queue.done('d')
    await clock.advance(1000)
    assert.equal(queue.length, 0, 'the later adds of the same key were dropped, not queued again')
  })

  it('addRateLimited uses the per-key backoff; forget resets it', () => {
    const limiter = new PerKeyRateLimiter({initialMs: 10, maxMs: 80})
    const queue = new WorkQueue({name: 't', rateLimiter: limiter})
    assert.deepEqual([queue.addRateLimited('r'), queue.addRateLimited('r'), queue.addRateLimited('r'), queue.addRateLimited('r'), queue.addRateLimited('r')], [10, 20, 40, 80, 80])
    queue.forget('r')
    assert.equal(queue.addRateLimited('r'), 10)
    queue.shutDown()
  })

  it('shutDown wakes waiting workers with undefined and drops pending adds; drain waits for in-flight work', async () => {
    const clock = new FakeTimers()
    const queue = new WorkQueue({name: 't', clock})
    queue.add('busy')
    const busy = await queue.get()
    const waiting = queue.get()
    queue.addAfter('later', 10)
    queue.shutDown()
    assert.equal(await waiting, undefined)
    queue.add('ignored')
    assert.equal(queue.length, 0)
    let drained: boolean | undefined
    const draining = queue.drain(1000).then((d) => (drained = d))
    await clock.advance(999) // all but the last millisecond of its timeout: it still waits for the busy key
    assert.equal(drained, undefined)
    queue.done(busy!)
    assert.equal(await draining, true)
    assert.equal(await queue.get(), undefined)
  })

  it('drain gives up at its timeout on the clock (a fake clock)', async () => {
    const clock = new FakeTimers()
    const queue = new WorkQueue({name: 't', clock})
    queue.add('stuck')
    await queue.get()
    queue.shutDown()
    let drained: boolean | undefined
    void queue.drain(30_000).then((d) => (drained = d))
    await clock.advance(29_999)
    assert.equal(drained, undefined, 'gave up before its timeout')
    await clock.advance(1)
    assert.equal(drained, false)
  })

  it('drain resolves true when the work ends before its timeout (a fake clock)', async () => {
    const clock = new FakeTimers()
    const queue = new WorkQueue({name: 't', clock})
    queue.add('busy')
    const busy = await queue.get()
    queue.shutDown()
    const results: boolean[] = []
    void queue.drain(1000).then((d) => results.push(d))
    await clock.advance(500)
    queue.done(busy!)
    await clock.advance(1000)
    assert.deepEqual(results, [true])
  })

  it('addAfter a month (a certificate\'s expiry) waits a day at most (a timer fires at once past 2^31-1 ms)', async () => {
    const clock = new FakeTimers()
    const queue = new WorkQueue({name: 't', clock})
    queue.addAfter('later', 30 * 24 * 60 * 60 * 1000)
    await clock.advance(24 * 60 * 60 * 1000 - 1)
    assert.equal(queue.length, 0, 'not at once')
    await clock.advance(1)
    assert.equal(await queue.get(), 'later', 'after a day (its reconcile asks again)')
    queue.shutDown()
  })

  it('addAfter a month with real timers: an item due later than an overflowed timer would fire comes out first', async () => {
    const queue = new WorkQueue({name: 't'})
    queue.addAfter('later', 30 * 24 * 60 * 60 * 1000)
    queue.addAfter('soon', 5)
    assert.equal(await queue.get(), 'soon')
    queue.addAfter('sibling', 20)
    assert.equal(await queue.get(), 'sibling', 'the month-long wait fired early')
    assert.equal(queue.length, 0, 'the month-long wait fired early')
    queue.shutDown()
  })
})
