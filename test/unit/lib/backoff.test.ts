import assert from 'node:assert/strict'
import {Backoff, backoffDelay, PerKeyRateLimiter, reconcileBackoffPolicy, watchBackoffPolicy} from '../../../src/lib/backoff.js'

describe('backoff', () => {
  const cases: Array<[attempt: number, expected: number]> = [[0, 5000], [1, 10000], [2, 20000], [3, 40000], [4, 60000], [10, 60000], [100, 60000]]
  for (const [attempt, expected] of cases) {
    it(`reconcile backoff: attempt ${attempt} → ${expected} ms`, () => {
      assert.equal(backoffDelay(attempt, reconcileBackoffPolicy), expected)
    })
  }

  it('watch backoff is jittered ±25 % around 0.8 s → 30 s', () => {
    assert.equal(backoffDelay(0, watchBackoffPolicy, () => 0), 600)
    assert.equal(backoffDelay(0, watchBackoffPolicy, () => 1), 1000)
    assert.equal(backoffDelay(0, watchBackoffPolicy, () => 0.5), 800)
    assert.equal(backoffDelay(20, watchBackoffPolicy, () => 0.5), 30000)
    for (let i = 0; i < 100; i++) {
      const delay = backoffDelay(3, watchBackoffPolicy)
      assert.ok(delay >= 6400 * 0.75 && delay <= 6400 * 1.25, String(delay))
    }
  })

  it('Backoff grows and resets', () => {
    const backoff = new Backoff({initialMs: 100, maxMs: 1000}, () => 0.5)
    assert.deepEqual([backoff.next(), backoff.next(), backoff.next(), backoff.next(), backoff.next()], [100, 200, 400, 800, 1000])
    backoff.reset()
    assert.equal(backoff.next(), 100)
  })

  it('PerKeyRateLimiter counts failures per key and forgets on success', () => {
    const limiter = new PerKeyRateLimiter()
    assert.equal(limiter.when('a'), 5000)
    assert.equal(limiter.when('a'), 10000)
    assert.equal(limiter.when('b'), 5000)
    assert.equal(limiter.retries('a'), 2)
    limiter.forget('a')
    assert.equal(limiter.retries('a'), 0)
    assert.equal(limiter.when('a'), 5000)
  })
})
