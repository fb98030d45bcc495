/**
 * The heartbeat of an operator process that runs without leader election: a `coordination.k8s.io/v1` Lease of its
 * own in its namespace (named after its host, labelled polycrate.io/lease-role=heartbeat), renewed every interval with
 * the process's identity, host, pid and version. `status` reads it to tell whether anything runs and since when it
 * last said so; `uninstall` refuses to release the shared finalizers under it. A graceful shutdown clears the holder
 * (like a leader lease's release), so a stopped process is seen as stopped at once; a killed one as stale once the
 * lease duration has passed.
 *
 * It uses the verbs the leader lease needs already (get, create, update). Failures are logged and retried on the next
 * beat: a heartbeat never stops the operator.
 */
import {createHash} from 'node:crypto'
import {KubeApiError, resourcePath, type KubeClient, type ResourceRef} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {systemClock, type Clock} from '../../lib/clock.js'
import {silentLogger, type Logger} from '../../lib/logger.js'
import {heartbeatLease, OPERATOR_NAME} from '../conventions.js'
import {microTime, type Lease} from './leader-election.js'

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
/** Three missed beats: a process is stale (its heartbeat expired) 15 s after its last renewal. */
export const DEFAULT_HEARTBEAT_DURATION_MS = 15_000

export interface HeartbeatOptions {
  client: KubeClient
  namespace: string
  /** The process's identity (the manager's: `<host>_<uuid>`). */
  identity: string
  /** The host name the process runs on (its Pod's name in a Pod). */
  host: string
  pid?: number
  version?: string
  intervalMs?: number
  durationMs?: number
  clock?: Clock
  logger?: Logger
}

/** The Lease name of a host's heartbeat (pure): a DNS subdomain of at most 63 characters, stable per host. */
export function heartbeatLeaseName(host: string): string {
  const hash = createHash('sha256').update(host).digest('hex').slice(0, 8)
  const readable = host.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63 - heartbeatLease.namePrefix.length - hash.length - 1).replace(/-+$/, '')
  return `${heartbeatLease.namePrefix}${readable ? `${readable}-` : ''}${hash}`
}

/** The Lease a beat writes (pure): held by `identity`, renewed `now`, with the process's annotations. */
export function heartbeatLeaseBody(
  previous: Lease | undefined,
  options: {namespace: string; name: string; identity: string; host: string; pid?: number; version?: string; durationMs: number},
  now: number,
  holding = true,
): Lease {
  const spec = previous?.spec ?? {}
  const sameHolder = spec.holderIdentity === options.identity
  const metadata = previous?.metadata ?? {name: options.name, namespace: options.namespace}
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      ...metadata,
      labels: {...metadata.labels, 'app.kubernetes.io/name': OPERATOR_NAME, [heartbeatLease.roleLabel]: heartbeatLease.roleValue},
      annotations: {
        ...metadata.annotations,
        [heartbeatLease.hostAnnotation]: options.host,
        ...(options.pid === undefined ? {} : {[heartbeatLease.pidAnnotation]: String(options.pid)}),
        ...(options.version === undefined ? {} : {[heartbeatLease.versionAnnotation]: options.version}),
      },
    },
    spec: {
      ...spec,
      ...(holding ? {holderIdentity: options.identity} : {holderIdentity: undefined}),
      leaseDurationSeconds: Math.max(1, Math.ceil(options.durationMs / 1000)),
      acquireTime: sameHolder && spec.acquireTime ? spec.acquireTime : microTime(now),
      renewTime: microTime(now),
    },
  }
}

export class Heartbeat {
  readonly name: string
  private readonly ref: ResourceRef
  private readonly clock: Clock
  private readonly logger: Logger
  private readonly intervalMs: number
  private readonly durationMs: number
  private lease: Lease | undefined
  private timer: unknown
  private stopped = true
  private beating: Promise<void> = Promise.resolve()

  constructor(private readonly options: HeartbeatOptions) {
    this.name = heartbeatLeaseName(options.host)
    this.ref = {...resources.leases, namespace: options.namespace, name: this.name}
    this.clock = options.clock ?? systemClock
    this.logger = options.logger ?? silentLogger
    this.intervalMs = options.intervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS
    this.durationMs = options.durationMs ?? DEFAULT_HEARTBEAT_DURATION_MS
  }

  /** Beats at once, then every interval until stop(). */
  start(): void {
    if (!this.stopped) return
    this.stopped = false
    const tick = () => {
      if (this.stopped) return
      this.beating = this.write(true).finally(() => {
        if (!this.stopped) this.timer = this.clock.setTimeout(tick, this.intervalMs)
      })
    }
    tick()
  }

  /** Stops beating and clears the holder, so that the process is seen as stopped at once. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.clock.clearTimeout(this.timer)
    await this.beating
    if (this.lease?.spec?.holderIdentity === this.options.identity) await this.write(false)
  }

  private async write(holding: boolean): Promise<void> {
    const settings = {...this.options, name: this.name, durationMs: this.durationMs}
    const client = this.options.client
    try {
      if (!this.lease) {
        this.lease = await client.request<Lease>({path: resourcePath(this.ref), timeoutMs: this.intervalMs}).catch((error: unknown) => {
          if (error instanceof KubeApiError && error.status === 404) return undefined
          throw error
        })
      }
      const body = heartbeatLeaseBody(this.lease, settings, this.clock.now(), holding)
      this.lease = this.lease
        ? await client.request<Lease>({method: 'PUT', path: resourcePath(this.ref), body, timeoutMs: this.intervalMs})
        : await client.request<Lease>({method: 'POST', path: resourcePath({...this.ref, name: undefined}), body, timeoutMs: this.intervalMs})
    } catch (error) {
      // A conflict (another process of this host wrote it) or a deleted lease: read it afresh on the next beat.
      if (error instanceof KubeApiError && (error.status === 409 || error.status === 404)) this.lease = undefined
      this.logger.debug('heartbeat not written; retrying on the next beat', {lease: `${this.options.namespace}/${this.name}`, error: (error as Error).message})
    }
  }
}
