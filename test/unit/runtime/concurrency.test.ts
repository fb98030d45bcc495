import assert from 'node:assert/strict'
import {forEachLimit} from '../../../src/operator/runtime/concurrency.js'

describe('forEachLimit', () => {
  it('runs every item, never more than the limit at once', async () => {
    let active = 0
    let peak = 0
    const done: number[] = []
    await forEachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      active++
      peak = Math.max(peak, active)
      await new Promise((resolve) => setTimeout(resolve, 5))
      done.push(n)
      active--
    })
    assert.deepEqual(done.sort(), [1, 2, 3, 4, 5, 6, 7])
    assert.equal(peak, 3)
  })

  it('finishes the other items, then rejects with the first error', async () => {
    const done: number[] = []
    await assert.rejects(forEachLimit([1, 2, 3, 4], 2, async (n) => {
      if (n === 2) throw new Error('two')
      done.push(n)
    }), /two/)
    assert.deepEqual(done.sort(), [1, 3, 4])
  })

  it('nothing to do', async () => forEachLimit([], 4, async () => assert.fail('called')))
})
