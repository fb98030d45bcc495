/**
 * Kubernetes Events for things a person should see in `kubectl describe` (bad annotations, bad config,
 * unreachable API). Repeats of the same event are folded into one object with a count, like client-go's
 * EventRecorder, so a retry loop cannot flood the cluster.
 */
import {createHash} from 'node:crypto'
import type {KubeClient, KubeObject} from './client.js'
import {KubeApiError} from './client.js'
import {resources} from './resources.js'

export type EventType = 'Normal' | 'Warning'

export interface EventRecorderOptions {
  client: KubeClient
  component: string
  /** A repeat of the same event within this window only bumps the count (default 10 min). */
  foldWindowMs?: number
  now?: () => Date
  onError?: (error: unknown) => void
}

interface Seen {
  name: string
  namespace: string
  count: number
  firstTimestamp: string
  lastSent: number
}

export class EventRecorder {
  private readonly seen = new Map<string, Seen>()

  constructor(private readonly options: EventRecorderOptions) {}

  /** Records an event about `object`; never throws (an event is best effort). */
  async record(object: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const now = (this.options.now ?? (() => new Date()))()
    const namespace = object.metadata?.namespace ?? 'default'
    const identity = `${object.kind}/${namespace}/${object.metadata?.name}/${type}/${reason}/${message}`
    const previous = this.seen.get(identity)
    const window = this.options.foldWindowMs ?? 10 * 60 * 1000
    try {
      if (previous && now.getTime() - previous.lastSent < window) {
        previous.count++
        previous.lastSent = now.getTime()
        await this.options.client.mergePatch(
          {...resources.events, namespace: previous.namespace, name: previous.name},
          {count: previous.count, lastTimestamp: now.toISOString()},
        )
        return
      }
      const hash = createHash('sha256').update(identity).digest('hex').slice(0, 10)
      const name = `${object.metadata?.name ?? 'object'}.${hash}.${now.getTime().toString(16)}`.slice(0, 253)
      await this.options.client.create({...resources.events, namespace}, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: {name, namespace},
        involvedObject: {
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: object.metadata?.name,
          namespace: object.metadata?.namespace,
          uid: object.metadata?.uid,
          resourceVersion: object.metadata?.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: {component: this.options.component},
        reportingComponent: this.options.component,
        firstTimestamp: now.toISOString(),
        lastTimestamp: now.toISOString(),
        count: 1,
      })
      this.seen.set(identity, {name, namespace, count: 1, firstTimestamp: now.toISOString(), lastSent: now.getTime()})
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404 && previous) this.seen.delete(identity)
      this.options.onError?.(error)
    }
  }
}
