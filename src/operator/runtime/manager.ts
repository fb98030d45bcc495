/**
 * The manager: one process running shared informers, controllers (only while leader, except those that write nothing
 * and set needLeaderElection: false), leader election, the
 * metrics and probe servers, and graceful shutdown (stop intake, drain in-flight reconciles within the grace
 * period, release the lease, close the servers).
 */
import {systemClock, type Clock} from '../../lib/clock.js'
import {hostname} from 'node:os'
import {randomUUID} from 'node:crypto'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {LEADER_LEASE_NAME} from '../conventions.js'
import type {Logger} from '../../lib/logger.js'
import {silentLogger} from '../../lib/logger.js'
import {EventRecorder} from '../../kube/events.js'
import {OPERATOR_NAME} from '../conventions.js'
import {ControllerBuilder} from './builder.js'
import type {Controller} from './controller.js'
import {
  createEventLoopCheck,
  startMetricsServer,
  startProbeServer,
  type CheckResult,
  type CheckStatus,
  type EventLoopCheck,
  type RunningHttpServer,
} from './http-servers.js'
import {Informer, type InformerOptions, type InformerRequest} from './informer.js'
import {LeaderElector} from './leader-election.js'
import {Heartbeat} from './heartbeat.js'
import {operatorVersion} from '../../version.js'
import {LeaderPodLabel} from './leader-pod-label.js'
import {OperatorMetrics} from './metrics.js'
import {startSecureMetricsServer, type SecureMetricsOptions} from './secure-metrics.js'

/** How long shutdown waits for the Pod's leader label to read "false". */
const POD_LABEL_CLOSE_MS = 3_000

export interface LeaderElectionSettings {
  leaseName?: string
  leaseDurationMs?: number
  renewDeadlineMs?: number
  retryPeriodMs?: number
}

/** Workers per I/O-bound (discovery, API sync) controller unless `--max-concurrent-syncs` says otherwise. */
export const DEFAULT_MAX_CONCURRENT_SYNCS = 16

export interface ManagerOptions {
  client: KubeClient
  /** The operator's namespace: the lease lives here. */
  namespace: string
  leaderElection?: false | LeaderElectionSettings
  /**
   * Without leader election, the process renews a heartbeat Lease of its own (heartbeat.ts), so that `status` and
   * `uninstall` can tell that it runs. `false` turns it off (benchmarks that count requests). Ignored with leader
   * election: the leader lease says it.
   */
  heartbeat?: false | {intervalMs?: number; durationMs?: number}
  metricsBindAddress?: string
  /** Serve /metrics over HTTPS to callers TokenReview and SubjectAccessReview let in (--metrics-secure). */
  secureMetrics?: SecureMetricsOptions
  probeBindAddress?: string
  /** The host the external-dns webhook listens on (default: every interface). */
  externalDnsWebhookHost?: string
  maxConcurrentReconciles?: number
  /** Workers of each API sync controller (API-bound: mostly waiting on the Polycrate API and the apiserver). Default 16. */
  maxConcurrentSyncs?: number
  shutdownGraceMs?: number
  /** This replica's Pod (in `namespace`): its label polycrate.io/leader follows leadership (LeaderPodLabel). */
  podName?: string
  identity?: string
  logger?: Logger
  metrics?: OperatorMetrics
  /**
   * The one clock of the process (lib/clock.ts): now, timers and sleeps of every engine, controller, elector,
   * scheduler, retry and poll loop, and of time-driven decisions (orphan thresholds, certificate expiry). The system
   * clock by default; tests pass a fake one (test/support/fake-timers.ts) and move it.
   */
  clock?: Clock
  /** Informer tuning (tests use short timeouts). */
  informerDefaults?: Pick<InformerOptions<KubeObject>, 'idleTimeoutMs' | 'watchTimeoutSeconds' | 'backoff'>
}

interface SharedInformer {
  informer: Informer<KubeObject>
  users: number
}

const transformIds = new WeakMap<object, number>()
let nextTransformId = 1

/**
 * What makes two informer requests the same informer: resource, selectors, metadata-only and the transform (by
 * identity: two requesters with different transforms must not share one cache of transformed objects).
 */
export function informerKey<T extends KubeObject>(request: InformerRequest<T>): string {
  let transform = 0
  if (request.transform) {
    transform = transformIds.get(request.transform) ?? 0
    if (transform === 0) transformIds.set(request.transform, (transform = nextTransformId++))
  }
  return JSON.stringify([request.resource, request.labelSelector ?? '', request.fieldSelector ?? '', request.metadataOnly ?? false, transform])
}

/** The leader lease was lost: the process must exit (and be restarted) rather than lead again. */
export class LeadershipLostError extends Error {
  override name = 'LeadershipLostError'
  constructor(lease: string, namespace: string) {
    super(`lost the leader lease ${namespace}/${lease}: stopped reconciling and exiting, so that a restarted process campaigns afresh`)
  }
}

export class Manager {
  readonly client: KubeClient
  readonly namespace: string
  readonly metrics: OperatorMetrics
  readonly logger: Logger
  readonly identity: string
  readonly maxConcurrentReconciles: number
  readonly maxConcurrentSyncs: number
  readonly clock: Clock
  readonly externalDnsWebhookHost?: string
  private readonly informers = new Map<string, SharedInformer>()
  private readonly controllers = new Set<Controller>()
  private leading = false
  private started = false
  private elector?: LeaderElector
  private podLabel?: LeaderPodLabel
  private heartbeat?: Heartbeat
  private servers: RunningHttpServer[] = []
  private eventLoopCheck?: EventLoopCheck
  private readonly leadershipListeners = new Set<(leading: boolean) => void>()
  private readonly recorders = new Map<string, EventRecorder>()
  private readonly readyzChecks = new Map<string, () => CheckStatus>()
  /** The controllers being stopped because the lease was lost (the abort went out synchronously). */
  private stoppingOnLoss?: Promise<void>

  constructor(private readonly options: ManagerOptions) {
    this.client = options.client
    this.namespace = options.namespace
    this.metrics = options.metrics ?? new OperatorMetrics()
    this.logger = options.logger ?? silentLogger
    this.identity = options.identity ?? `${hostname()}_${randomUUID()}`
    this.maxConcurrentReconciles = options.maxConcurrentReconciles ?? 4
    this.maxConcurrentSyncs = options.maxConcurrentSyncs ?? DEFAULT_MAX_CONCURRENT_SYNCS
    this.clock = options.clock ?? systemClock
    this.externalDnsWebhookHost = options.externalDnsWebhookHost
    this.client.clock = this.clock
    this.client.onResponse = (method, code) => this.metrics.restClientRequests.inc({method, code})
    // Under leader election every write of this process asks the fence (lib/write-fence.ts); the Lease and the Pod
    // label are sent unfenced.
    if (options.leaderElection) this.client.writeFence = this.writeFence
  }

  get isLeader(): boolean {
    return this.leading
  }

  /**
   * The write fence of this replica (give it to every client that writes: the kube client gets it here, the
   * Polycrate API clients through ApiSession): without leader election always open; with it, open only while the
   * elector leads within its renew deadline (LeaderElector.fence, which steps down on the spot when it finds the
   * deadline passed).
   */
  readonly writeFence = (): string | undefined => {
    if (!this.options.leaderElection) return undefined
    if (!this.elector) return 'not the leader'
    return this.elector.fence()
  }

  onLeadershipChange(listener: (leading: boolean) => void): () => void {
    this.leadershipListeners.add(listener)
    return () => this.leadershipListeners.delete(listener)
  }

  /** A shared informer for this resource/selector; started at once if the manager runs. Pair with releaseInformer. */
  informer<T extends KubeObject>(request: InformerRequest<T>): Informer<T> {
    const key = informerKey(request)
    let shared = this.informers.get(key)
    if (!shared) {
      const informer = new Informer<KubeObject>({
        ...this.options.informerDefaults,
        ...(request as unknown as InformerRequest<KubeObject>),
        client: this.client,
        logger: this.logger,
        metrics: this.metrics,
        clock: this.clock,
      })
      shared = {informer, users: 0}
      this.informers.set(key, shared)
      if (this.started) informer.start()
    }
    shared.users++
    return shared.informer as unknown as Informer<T>
  }

  /** Stops the informer when its last user lets go (e.g. when a CRD and the controllers watching it go away). */
  async releaseInformer<T extends KubeObject>(informer: Informer<T>): Promise<void> {
    for (const [key, shared] of this.informers) {
      if (shared.informer !== (informer as unknown)) continue
      if (--shared.users > 0) return
      this.informers.delete(key)
      await shared.informer.stop()
      return
    }
  }

  /** A builder for a controller of this manager (see builder.ts). */
  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(this, name)
  }

  /** The Event recorder of one controller (like controller-runtime's GetEventRecorderFor). */
  recorder(name: string): EventRecorder {
    let recorder = this.recorders.get(name)
    if (!recorder) {
      const logger = this.logger.child({controller: name})
      recorder = new EventRecorder({
        client: this.client,
        component: OPERATOR_NAME,
        clock: this.clock,
        onError: (error) => logger.debug('event not recorded', {error: (error as Error).message}),
      })
      this.recorders.set(name, recorder)
    }
    return recorder
  }

  /** Adds a controller; it runs while this process leads (or, with needLeaderElection false, while the manager runs). */
  addController(controller: Controller): void {
    this.controllers.add(controller)
    if (controller.needLeaderElection ? this.leading : this.started) controller.start()
  }

  async removeController(controller: Controller): Promise<void> {
    this.controllers.delete(controller)
    await controller.stop({graceMs: this.options.shutdownGraceMs ?? 30_000})
  }

  /** Liveness: the event loop is not stalled. */
  healthz(): CheckResult {
    const loop = this.eventLoopCheck?.() ?? {ok: true}
    return {ok: loop.ok, checks: {'event-loop': loop}}
  }

  /** Adds a named readiness check to /readyz (like controller-runtime's AddReadyzCheck). */
  addReadyzCheck(name: string, check: () => CheckStatus): void {
    this.readyzChecks.set(name, check)
  }

  /** Readiness: every informer in use has synced (leader and standby alike), and every added check passes. */
  readyz(): CheckResult {
    const pending = [...this.informers.values()].filter((s) => !s.informer.hasSynced()).map((s) => s.informer.name)
    const caches = pending.length === 0 ? {ok: true} : {ok: false, message: `informers not synced: ${pending.join(', ')}`}
    const added = Object.fromEntries([...this.readyzChecks].map(([name, check]) => [name, check()]))
    const checks = {caches, ...added, ...(this.elector ? {'leader-election': {ok: true, message: this.leading ? 'leader' : 'standby'}} : {})}
    return {ok: Object.values(checks).every((check) => check.ok), checks}
  }

  /** /metrics (plain, or HTTPS with TokenReview and SubjectAccessReview) and the probes. */
  private async startServers(): Promise<RunningHttpServer[]> {
    return (await Promise.all([
      this.options.secureMetrics
        ? startSecureMetricsServer({
          ...this.options.secureMetrics,
          bindAddress: this.options.metricsBindAddress ?? '0',
          metrics: this.metrics,
          client: this.client,
          clock: this.clock,
          namespace: this.namespace,
          logger: this.logger,
        })
        : startMetricsServer({bindAddress: this.options.metricsBindAddress ?? '0', metrics: this.metrics, logger: this.logger}),
      startProbeServer({
        bindAddress: this.options.probeBindAddress ?? '0',
        checks: {healthz: () => this.healthz(), readyz: () => this.readyz()},
        logger: this.logger,
        clock: this.clock,
      }),
    ])).filter((server): server is RunningHttpServer => server !== undefined)
  }

  /** Runs until the signal aborts, then shuts down gracefully. Never rejects for a transient cluster problem. */
  async run(signal: AbortSignal): Promise<void> {
    this.eventLoopCheck = createEventLoopCheck({clock: this.clock})
    this.servers = await this.startServers()

    this.started = true
    for (const {informer} of this.informers.values()) informer.start()
    for (const controller of this.controllers) if (!controller.needLeaderElection) controller.start()

    if (this.options.podName) {
      this.podLabel = new LeaderPodLabel({client: this.client, namespace: this.namespace, podName: this.options.podName, logger: this.logger, clock: this.clock})
      // A restarted process is a standby until it wins the lease; without leader election it leads at once.
      if (this.options.leaderElection) this.podLabel.set(false)
    }
    const holdAbort = new AbortController()
    const lost = new AbortController()
    let leadership: Promise<void> = Promise.resolve()
    if (this.options.leaderElection) {
      const settings = this.options.leaderElection
      this.elector = new LeaderElector({
        client: this.client,
        namespace: this.namespace,
        name: settings.leaseName ?? LEADER_LEASE_NAME,
        identity: this.identity,
        leaseDurationMs: settings.leaseDurationMs,
        renewDeadlineMs: settings.renewDeadlineMs,
        retryPeriodMs: settings.retryPeriodMs,
        logger: this.logger,
        metrics: this.metrics,
        clock: this.clock,
      })
      // Lost (the renew deadline passed, seen by a timer or by the write fence): the reconciles are aborted and the
      // queues dropped in this very call, before anything else of this process runs.
      this.elector.onChange((leading) => {
        if (!leading && this.leading) this.loseLeadership()
      })
      leadership = this.lead(this.elector, signal, holdAbort.signal, lost)
    } else {
      if (this.options.heartbeat !== false) {
        this.heartbeat = new Heartbeat({
          client: this.client,
          namespace: this.namespace,
          identity: this.identity,
          host: hostname(),
          pid: process.pid,
          version: operatorVersion(),
          clock: this.clock,
          logger: this.logger,
          ...this.options.heartbeat,
        })
        this.heartbeat.start()
      }
      this.setLeading(true)
    }

    const both = AbortSignal.any([signal, lost.signal])
    await new Promise<void>((resolve) => (both.aborted ? resolve() : both.addEventListener('abort', () => resolve(), {once: true})))
    if (lost.signal.aborted && !signal.aborted) {
      // Like controller-runtime: a process that lost its lease exits (the pod restarts and campaigns afresh),
      // so no in-memory state of a former leader is ever used again. Reconciles were aborted the moment the renew
      // deadline passed (lead()).
      await this.shutDown()
      throw new LeadershipLostError(this.options.leaderElection ? (this.options.leaderElection.leaseName ?? LEADER_LEASE_NAME) : '', this.namespace)
    }
    this.logger.info('shutting down: draining in-flight reconciles', {graceMs: this.options.shutdownGraceMs ?? 30_000})
    await this.stopControllers(false)
    this.leading = false
    this.podLabel?.set(false) // out of the webhook Service before the lease goes to another replica
    holdAbort.abort()
    await leadership
    await this.elector?.release()
    await this.shutDown()
    this.logger.info('stopped')
  }

  /** Labels the Pod a standby, stops the heartbeat, the informers and the HTTP servers. */
  private async shutDown(): Promise<void> {
    await this.heartbeat?.stop()
    await this.podLabel?.close(POD_LABEL_CLOSE_MS)
    await Promise.all([...this.informers.values()].map((s) => s.informer.stop()))
    await Promise.all(this.servers.map((server) => server.close()))
    this.eventLoopCheck?.stop()
    this.started = false
  }

  private async lead(elector: LeaderElector, signal: AbortSignal, holdSignal: AbortSignal, lost: AbortController): Promise<void> {
    try {
      await elector.acquire(signal)
    } catch {
      return // aborted
    }
    this.setLeading(true)
    const outcome = await elector.hold(holdSignal)
    if (outcome === 'lost') {
      this.logger.error('leader lease lost: stopped reconciling; exiting')
      if (this.leading) this.loseLeadership()
      await this.stoppingOnLoss
      lost.abort()
    }
  }

  /** Stops leading at once: in-flight reconciles get their abort (synchronously), every queue is dropped. */
  private loseLeadership(): void {
    this.setLeading(false)
    this.stoppingOnLoss ??= this.stopControllers(true)
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return
    this.leading = leading
    this.podLabel?.set(leading)
    if (leading) for (const controller of this.controllers) controller.start()
    for (const listener of this.leadershipListeners) listener(leading)
  }

  private async stopControllers(abortInFlight: boolean): Promise<void> {
    const graceMs = this.options.shutdownGraceMs ?? 30_000
    await Promise.all([...this.controllers].map((controller) => controller.stop({graceMs, abortInFlight})))
  }
}
