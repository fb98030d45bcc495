/**
 * Keeps the label `polycrate.io/leader` of this replica's own Pod at "true" while it holds the leader lease and
 * "false" otherwise, so that `kubectl get pods -L polycrate.io/leader` shows who leads. Informational: the webhooks
 * serve on every replica and their Service selects every replica (manifests.ts).
 *
 * Level-triggered: set() records what the label should be; one loop writes it (a merge patch of that one label)
 * until the Pod shows it, retrying failures with backoff, and always writes the latest value. close() writes
 * "false" within a deadline on shutdown; a process that dies without it leaves "true" on a Pod whose container is
 * not running (not ready, so out of the Service) until the restarted process writes "false".
 */
import {Backoff} from '../../lib/backoff.js'
import {pause, systemClock, type Clock} from '../../lib/clock.js'
import type {Logger} from '../../lib/logger.js'
import {KubeApiError, type KubeClient} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {describeKubeError} from '../../kube/errors.js'
import {LEADER_POD_LABEL} from '../conventions.js'

export interface LeaderPodLabelOptions {
  client: KubeClient
  namespace: string
  podName: string
  logger: Logger
  /** Retry delays; tests shorten them. Default 0.5 s → 30 s. */
  backoff?: {initialMs: number; maxMs: number}
  /** The clock of the retries (the manager's; the system clock by default). */
  clock?: Clock
}

export class LeaderPodLabel {
  private desired: boolean | undefined
  private applied: boolean | undefined
  private running: Promise<void> | undefined
  private readonly abort = new AbortController()
  private readonly backoff: Backoff
  private readonly clock: Clock

  constructor(private readonly options: LeaderPodLabelOptions) {
    this.clock = options.clock ?? systemClock
    this.backoff = new Backoff({...(options.backoff ?? {initialMs: 500, maxMs: 30_000}), factor: 2, jitter: 0.2})
  }

  /** The label should say `leading`; written in the background, retried until it lands. */
  set(leading: boolean): void {
    if (this.abort.signal.aborted) return
    this.desired = leading
    if (this.running || leading === this.applied) return
    this.running = this.writeUntilApplied()
  }

  /** Writes "false", waits for it at most `timeoutMs`, then stops all writes. */
  async close(timeoutMs: number): Promise<void> {
    this.set(false)
    const timer = new AbortController()
    if (this.running) await Promise.race([this.running, pause(this.clock, timeoutMs, timer.signal)])
    timer.abort()
    this.abort.abort()
    await this.running
  }

  private async writeUntilApplied(): Promise<void> {
    const {client, namespace, podName, logger} = this.options
    const signal = this.abort.signal
    try {
      while (this.desired !== undefined && this.desired !== this.applied && !signal.aborted) {
        const value = this.desired
        try {
          await client.mergePatch(
            {...resources.pods, namespace, name: podName},
            {metadata: {labels: {[LEADER_POD_LABEL]: String(value)}}},
            // "false" is said whatever the write fence says (a replica that lost the lease says so on its own Pod);
            // "true" only while the fence is open.
            {signal, unfenced: value === false},
          )
          this.applied = value
          this.backoff.reset()
          logger.info('pod labelled', {pod: `${namespace}/${podName}`, label: LEADER_POD_LABEL, value: String(value)})
        } catch (error) {
          if (signal.aborted) return
          const delay = this.backoff.next()
          logger.warn('could not label this replica\'s pod; retrying', {
            pod: `${namespace}/${podName}`,
            label: LEADER_POD_LABEL,
            reason: error instanceof KubeApiError && error.status === 404
              ? `no Pod ${namespace}/${podName}: --pod-name (env POD_NAME) must name the Pod this process runs in`
              : describeKubeError(error, `patch pods in ${namespace} (polycrate operator manifests grants it)`),
            retryInMs: delay,
          })
          await pause(this.clock, delay, signal)
        }
      }
    } finally {
      this.running = undefined // right after the last check, in the same step: a later set() starts a new loop
    }
  }
}
