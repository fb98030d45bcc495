import assert from 'node:assert/strict'
import {PassThrough} from 'node:stream'
import {FakeTimers, settle} from '../../support/fake-timers.js'
import {readWatchEvents, ResourceExpiredError, WatchIdleError, type WatchEvent} from '../../../src/operator/runtime/watch-stream.js'

const event = (type: string, name: string, rv: string) => JSON.stringify({type, object: {metadata: {name, resourceVersion: rv}}}) + '\n'

describe('readWatchEvents', () => {
  it('parses newline-delimited events, also when split across chunks, until the server ends the stream', async () => {
    const stream = new PassThrough()
    const seen: WatchEvent[] = []
    const done = readWatchEvents(stream, 1000, (e) => seen.push(e))
    const text = event('ADDED', 'a', '1') + event('MODIFIED', 'a', '2') + event('BOOKMARK', '', '3')
    stream.write(text.slice(0, 17))
    stream.write(text.slice(17, 60))
    stream.end(text.slice(60))
    await done
    assert.deepEqual(seen.map((e) => [e.type, e.object.metadata?.resourceVersion]), [['ADDED', '1'], ['MODIFIED', '2'], ['BOOKMARK', '3']])
  })

  it('a chunk that ends inside a multi-byte UTF-8 character: the value arrives whole, not as U+FFFD', async () => {
    const stream = new PassThrough()
    const seen: WatchEvent[] = []
    const done = readWatchEvents(stream, 1000, (e) => seen.push(e))
    const bytes = Buffer.from(JSON.stringify({type: 'ADDED', object: {metadata: {name: 'a', annotations: {team: 'Grüße aus 東京'}}}}) + '\n')
    const cut = bytes.indexOf(Buffer.from('東')) + 1 // inside the three bytes of 東
    stream.write(bytes.subarray(0, cut))
    stream.write(bytes.subarray(cut, cut + 1))
    stream.end(bytes.subarray(cut + 1))
    await done
    assert.deepEqual(seen.map((e) => e.object.metadata?.annotations?.team), ['Grüße aus 東京'])
  })

  it('an in-stream 410 ERROR means: relist', async () => {
    const stream = new PassThrough()
    const done = readWatchEvents(stream, 1000, () => {})
    stream.write(JSON.stringify({type: 'ERROR', object: {kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (5)'}}) + '\n')
    await assert.rejects(done, ResourceExpiredError)
    assert.ok(stream.destroyed)
  })

  it('another ERROR event is an error to retry', async () => {
    const stream = new PassThrough()
    const done = readWatchEvents(stream, 1000, () => {})
    stream.write(JSON.stringify({type: 'ERROR', object: {kind: 'Status', code: 500, reason: 'InternalError', message: 'boom'}}) + '\n')
    await assert.rejects(done, /watch error 500 InternalError: boom/)
  })

  it('a silent connection hits the idle timeout and is destroyed', async () => {
    const stream = new PassThrough()
    const clock = new FakeTimers()
    let settled = false
    const done = readWatchEvents(stream, 80, () => {}, clock)
    done.then(() => (settled = true), () => (settled = true))
    stream.write(event('ADDED', 'a', '1'))
    await settle()
    await clock.advance(79) // 80 ms after the last bytes, not before
    assert.equal(settled, false)
    await clock.advance(1)
    await assert.rejects(done, WatchIdleError)
    assert.ok(stream.destroyed)
  })

  it('bytes keep the idle timer from firing', async () => {
    const stream = new PassThrough()
    const clock = new FakeTimers()
    const done = readWatchEvents(stream, 80, () => {}, clock)
    for (let i = 0; i < 5; i++) {
      await clock.advance(60) // 300 ms in all, never 80 without bytes
      stream.write(event('BOOKMARK', '', String(i)))
      await settle()
    }
    stream.end()
    await done
  })

  it('a connection closed without end is an error', async () => {
    const stream = new PassThrough()
    const done = readWatchEvents(stream, 1000, () => {})
    stream.destroy()
    await assert.rejects(done, /closed prematurely/)
  })

  it('malformed JSON is an error', async () => {
    const stream = new PassThrough()
    const done = readWatchEvents(stream, 1000, () => {})
    stream.write('{not json\n')
    await assert.rejects(done, /malformed watch event/)
  })
})
