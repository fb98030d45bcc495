import assert from 'node:assert/strict'
import {getEventListeners} from 'node:events'
import {anySignal} from '../../../src/lib/signals.js'

describe('anySignal (AbortSignal.any whose links to its sources end)', () => {
  it('aborts with the reason of the first source that aborts, and lets go of every source then', () => {
    const [a, b] = [new AbortController(), new AbortController()]
    const {signal} = anySignal([a.signal, b.signal])
    assert.equal(signal.aborted, false)
    b.abort(new Error('b went'))
    assert.equal(signal.aborted, true)
    assert.equal((signal.reason as Error).message, 'b went')
    assert.equal(getEventListeners(a.signal, 'abort').length, 0, 'no listener left on the source still alive')
  })

  it('a source aborted already: aborted at once with its reason, no listener added', () => {
    const live = new AbortController()
    const {signal} = anySignal([live.signal, AbortSignal.abort('gone')])
    assert.equal(signal.aborted, true)
    assert.equal(signal.reason, 'gone')
    assert.equal(getEventListeners(live.signal, 'abort').length, 0)
  })

  it('dispose(): the sources no longer hold it (a long-lived source combined a thousand times keeps no listener)', () => {
    const longLived = new AbortController()
    for (let i = 0; i < 1000; i++) {
      const timeout = new AbortController()
      const combined = anySignal([longLived.signal, timeout.signal])
      combined.dispose()
    }
    assert.equal(getEventListeners(longLived.signal, 'abort').length, 0)
    const last = anySignal([longLived.signal])
    last.dispose()
    longLived.abort()
    assert.equal(last.signal.aborted, false, 'disposed: not aborted by its former source')
  })

  it('no sources: a signal that never aborts', () => {
    assert.equal(anySignal([]).signal.aborted, false)
  })
})
