/**
 * Kubernetes Events for things a person should see in `kubectl describe` (bad annotations, bad config,
 * unreachable API). Repeats of the same event are folded into one object with a count, like client-go's
 * EventRecorder, so a retry loop cannot flood the cluster.
 */
import {createHash} from 'node:crypto'
import type {KubeClient, KubeObject} from './client.js'
import {KubeApiError} from './client.js'
import {resources} from './resources.js'
import {systemClock, type Clock} from '../lib/clock.js'

export type EventType = 'Normal' | 'Warning'

export interface EventRecorderOptions {
  client: KubeClient
  component: string
  /** A repeat of the same event within this window only bumps the count (default 10 min). */
  foldWindowMs?: number
  /** The manager's clock (event timestamps, the fold window); the system clock by default. */
  clock?: Clock
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
  private prunedAt = Number.NEGATIVE_INFINITY

  constructor(private readonly options: EventRecorderOptions) {}

  /** Events remembered for folding (those sent within the last two fold windows at most). */
  get size(): number {
    return this.seen.size
  }

  /** Records an event about `object`; never throws (an event is best effort). */
  async record(object: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const now = new Date((this.options.clock ?? systemClock).now())
    const namespace = object.metadata?.namespace ?? 'default'
    const identity = `${object.kind}/${namespace}/${object.metadata?.name}/${type}/${reason}/${message}`
    const window = this.options.foldWindowMs ?? 10 * 60 * 1000
    this.prune(now.getTime(), window)
    const previous = this.seen.get(identity)
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

  /**
   * Forgets the events last sent a fold window ago or longer: a repeat of one is a new Event anyway. Each identity
   * carries its object's name and the message (an error's text, a path with an id), so without this every distinct
   * one would be kept for the life of the process. Once per window, so a record costs O(1) on average.
   */
  private prune(now: number, window: number): void {
    if (now - this.prunedAt < window) return
    this.prunedAt = now
    for (const [identity, seen] of this.seen) if (now - seen.lastSent >= window) this.seen.delete(identity)
  }
}
