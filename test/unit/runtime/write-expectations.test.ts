import assert from 'node:assert/strict'
import {WriteExpectations} from '../../../src/operator/runtime/write-expectations.js'
import {systemClock} from '../../../src/lib/clock.js'

describe('WriteExpectations (our own writes the cache does not show yet)', () => {
  const make = () => {
    let now = 1_000
    const expectations = new WriteExpectations(5_000, {...systemClock, now: () => now})
    return {expectations, advance: (ms: number) => { now += ms }}
  }

  // [writes as [before, after], cached version, behind?]
  const cases: Array<[name: string, writes: Array<[string | undefined, string | undefined]>, cached: string | undefined, behind: boolean]> = [
    ['no write', [], '5', false],
    ['cache shows the version written over', [['5', '6']], '5', true],
    ['cache shows our write', [['5', '6']], '6', false],
    ['cache shows a later write of someone else', [['5', '6']], '9', false],
    ['a create (nothing before): cache empty', [[undefined, '6']], undefined, false],
    ['a no-op write (same version)', [['5', '5']], '5', false],
    ['spec then status: cache shows neither', [['5', '6'], ['6', '7']], '5', true],
    // The race the k8sapps test hit: the status write read the cache before it showed the spec write.
    ['spec then status (status read a stale cache): cache shows the spec write only', [['5', '6'], ['5', '7']], '6', true],
    ['spec then status: cache shows the status write', [['5', '6'], ['5', '7']], '7', false],
    ['spec then a no-op status: cache shows the spec write', [['5', '6'], ['6', '6']], '6', false],
  ]
  for (const [name, writes, cached, behind] of cases) {
    it(`${name} → ${behind ? 'wait' : 'reconcile'}`, () => {
      const {expectations} = make()
      for (const [before, after] of writes) expectations.written('ns/a', before, after)
      assert.equal(expectations.behind('ns/a', cached), behind)
    })
  }

  it('an expectation of a key nobody asks about again is dropped by a later write once it has expired', () => {
    const {expectations, advance} = make()
    expectations.written('ns/gone', '5', '6')
    advance(4_999)
    expectations.written('ns/b', '1', '2')
    assert.equal(expectations.size, 2, 'not expired yet: kept')
    advance(5_001)
    expectations.written('ns/c', '1', '2')
    assert.equal(expectations.size, 1, 'ns/gone and ns/b expired and dropped; ns/c held')
    advance(1)
    assert.equal(expectations.behind('ns/c', '1'), true)
  })

  it('waits at most waitMs, then lets the reconcile run (a write the cache never shows: a watch gap)', () => {
    const {expectations, advance} = make()
    expectations.written('ns/a', '5', '6')
    advance(4_999)
    assert.equal(expectations.behind('ns/a', '5'), true)
    advance(1)
    assert.equal(expectations.behind('ns/a', '5'), false)
    assert.equal(expectations.behind('ns/a', '5'), false, 'dropped once over')
  })

  it('is per key, and forget drops a key (the CR was deleted)', () => {
    const {expectations} = make()
    expectations.written('ns/a', '5', '6')
    expectations.written('ns/b', '1', '2')
    expectations.forget('ns/a')
    assert.equal(expectations.behind('ns/a', '5'), false)
    assert.equal(expectations.behind('ns/b', '1'), true)
  })

  it('once seen, an expectation is gone: an older version later (a relist) does not make it wait again', () => {
    const {expectations} = make()
    expectations.written('ns/a', '5', '6')
    assert.equal(expectations.behind('ns/a', '6'), false)
    assert.equal(expectations.behind('ns/a', '5'), false)
  })
})
