/** Reading a Kubernetes watch response: newline-delimited JSON events, with an idle timeout. */
import type {Readable} from 'node:stream'
import type {KubeObject} from '../../kube/client.js'
import {systemClock, type Clock} from '../../lib/clock.js'

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
 */
export function readWatchEvents<T extends KubeObject>(
  stream: Readable,
  idleTimeoutMs: number,
  onEvent: (event: WatchEvent<T>) => void,
  clock: Clock = systemClock,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = ''
    let settled = false
    let idleTimer: unknown
    const finish = (error?: Error) => {
      if (settled) return
      settled = true
      clock.clearTimeout(idleTimer)
      stream.removeAllListeners('data')
      stream.destroy()
      if (error) reject(error)
      else resolve()
    }
    const armIdle = () => {
      clock.clearTimeout(idleTimer)
      idleTimer = clock.setTimeout(() => finish(new WatchIdleError(`no watch event for ${Math.round(idleTimeoutMs / 1000)}s`)), idleTimeoutMs)
    }
    armIdle()
    stream.on('data', (chunk: Buffer | string) => {
      armIdle()
      buffer += chunk.toString()
      let newline: number
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).trim()
        buffer = buffer.slice(newline + 1)
        if (line.length === 0) continue
        let event: WatchEvent<T>
        try {
          event = JSON.parse(line) as WatchEvent<T>
        } catch {
          return finish(new Error(`malformed watch event: ${line.slice(0, 200)}`))
        }
        if (event.type === 'ERROR') {
          const status = event.object as unknown as {code?: number; reason?: string; message?: string}
          if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') {
            return finish(new ResourceExpiredError(status.message ?? 'resource version expired'))
          }
          return finish(new Error(`watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim()))
        }
        try {
          onEvent(event)
        } catch (error) {
          return finish(error as Error)
        }
      }
    })
    stream.once('end', () => finish())
    stream.once('close', () => finish(stream.readableEnded ? undefined : new Error('watch connection closed prematurely')))
    stream.once('error', (error) => finish(error))
  })
}
