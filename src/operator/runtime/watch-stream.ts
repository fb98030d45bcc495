/** Reading a Kubernetes watch response: newline-delimited JSON events, with an idle timeout. */
import type {Readable} from 'node:stream'
import type {KubeObject} from '../../kube/client.js'
import {monotonicNow, systemClock, type Clock} from '../../lib/clock.js'

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType
  object: T
}

/** The watch was silent for longer than the idle timeout: the connection is presumed dead. */
export class WatchIdleError extends Error {
  override name = 'WatchIdleError'
}

/** The resource version we asked for is too old (410 Gone, on connect or in-stream): a relist is needed. */
export class ResourceExpiredError extends Error {
  override name = 'ResourceExpiredError'
}

/**
 * Calls `onEvent` for every event until the server ends the stream (a normal watch timeout). Rejects with
 * WatchIdleError when no bytes arrive for `idleTimeoutMs`, with ResourceExpiredError for an in-stream 410, and
 * with the stream's own error otherwise. The stream is destroyed on every exit path. The idle timer runs on `clock`.
 *
 * Lines are cut from the bytes and each is decoded whole: a chunk may end inside a multi-byte UTF-8 character (a
 * label or annotation value in another script), which decoding chunk by chunk would turn into U+FFFD. The idle timer
 * is set once per idle period, not once per chunk: a burst of events delivers thousands of chunks a second.
 */
export function readWatchEvents<T extends KubeObject>(
  stream: Readable,
  idleTimeoutMs: number,
  onEvent: (event: WatchEvent<T>) => void,
  clock: Clock = systemClock,
): Promise<void> {
  return new Promise((resolve, reject) => {
    /** The bytes of a line not yet ended, chunk by chunk. */
    const partial: Buffer[] = []
    let settled = false
    let idleTimer: unknown
    let lastBytesAt = monotonicNow(clock)
    const finish = (error?: Error) => {
      if (settled) return
      settled = true
      clock.clearTimeout(idleTimer)
      stream.removeAllListeners('data')
      stream.destroy()
      if (error) reject(error)
      else resolve()
    }
    const armIdle = (ms: number) => {
      idleTimer = clock.setTimeout(() => {
        const silentFor = monotonicNow(clock) - lastBytesAt
        if (silentFor >= idleTimeoutMs) finish(new WatchIdleError(`no watch event for ${Math.round(idleTimeoutMs / 1000)}s`))
        else armIdle(idleTimeoutMs - silentFor)
      }, ms)
    }
    armIdle(idleTimeoutMs)
    /** One line's event; false when the watch is over. */
    const handle = (line: string): boolean => {
      if (line.length === 0) return true
      let event: WatchEvent<T>
      try {
        event = JSON.parse(line) as WatchEvent<T>
      } catch {
        finish(new Error(`malformed watch event: ${line.slice(0, 200)}`))
        return false
      }
      if (event.type === 'ERROR') {
        const status = event.object as unknown as {code?: number; reason?: string; message?: string}
        if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') {
          finish(new ResourceExpiredError(status.message ?? 'resource version expired'))
        } else {
          finish(new Error(`watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim()))
        }
        return false
      }
      try {
        onEvent(event)
      } catch (error) {
        finish(error as Error)
        return false
      }
      return true
    }
    stream.on('data', (data: Buffer | string) => {
      lastBytesAt = monotonicNow(clock)
      const chunk = typeof data === 'string' ? Buffer.from(data) : data
      let start = 0
      for (let newline: number; (newline = chunk.indexOf(0x0a, start)) >= 0; start = newline + 1) {
        let bytes = chunk.subarray(start, newline)
        if (partial.length > 0) {
          partial.push(bytes)
          bytes = Buffer.concat(partial)
          partial.length = 0
        }
        if (!handle(bytes.toString('utf8').trim())) return
      }
      if (start < chunk.length) partial.push(chunk.subarray(start))
    })
    stream.once('end', () => finish())
    stream.once('close', () => finish(stream.readableEnded ? undefined : new Error('watch connection closed prematurely')))
    stream.once('error', (error) => finish(error))
  })
}
