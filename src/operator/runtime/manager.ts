/**
 * The manager: one process running shared informers, controllers (only while leader), leader election, the
 * metrics and probe servers, and graceful shutdown (stop intake, drain in-flight reconciles within the grace
 * period, release the lease, close the servers).
 */
import {hostname} from 'node:os'
import {randomUUID} from 'node:crypto'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {LEADER_LEASE_NAME} from '../conventions.js'
import type {Logger} from '../logger.js'
import {silentLogger} from '../logger.js'
import type {Controller} from './controller.js'
import {
  createEventLoopCheck,
  startMetricsServer,
  startProbeServer,
  type CheckResult,
  type EventLoopCheck,
  type RunningHttpServer,
} from './http-servers.js'
import {Informer, type InformerOptions} from './informer.js'
import {LeaderElector} from './leader-election.js'
import {OperatorMetrics} from './metrics.js'

export interface LeaderElectionSettings {
  leaseName?: string
  leaseDurationMs?: number
  renewDeadlineMs?: number
  retryPeriodMs?: number
}

export interface ManagerOptions {
  client: KubeClient
  /** The operator's namespace: the lease lives here. */
  namespace: string
  leaderElection?: false | LeaderElectionSettings
  metricsBindAddress?: string
  probeBindAddress?: string
  maxConcurrentReconciles?: number
  shutdownGraceMs?: number
  identity?: string
  logger?: Logger
  metrics?: OperatorMetrics
  /** Informer tuning (tests use short timeouts). */
  informerDefaults?: Pick<InformerOptions<KubeObject>, 'idleTimeoutMs' | 'watchTimeoutSeconds' | 'backoff'>
}

interface SharedInformer {
  informer: Informer<KubeObject>
  users: number
}

export type InformerRequest<T extends KubeObject> = Omit<InformerOptions<T>, 'client' | 'logger' | 'metrics'>

export class Manager {
  readonly client: KubeClient
  readonly namespace: string
  readonly metrics: OperatorMetrics
  readonly logger: Logger
  readonly identity: string
  readonly maxConcurrentReconciles: number
  private readonly informers = new Map<string, SharedInformer>()
  private readonly controllers = new Set<Controller>()
  private leading = false
  private started = false
  private elector?: LeaderElector
  private servers: RunningHttpServer[] = []
  private eventLoopCheck?: EventLoopCheck
  private readonly leadershipListeners = new Set<(leading: boolean) => void>()

  constructor(private readonly options: ManagerOptions) {
    this.client = options.client
    this.namespace = options.namespace
    this.metrics = options.metrics ?? new OperatorMetrics()
    this.logger = options.logger ?? silentLogger
    this.identity = options.identity ?? `${hostname()}_${randomUUID()}`
    this.maxConcurrentReconciles = options.maxConcurrentReconciles ?? 4
    this.client.onResponse = (method, code) => this.metrics.restClientRequests.inc({method, code})
  }

  get isLeader(): boolean {
    return this.leading
  }

  onLeadershipChange(listener: (leading: boolean) => void): () => void {
    this.leadershipListeners.add(listener)
    return () => this.leadershipListeners.delete(listener)
  }

  /** A shared informer for this resource/selector; started at once if the manager runs. Pair with releaseInformer. */
  informer<T extends KubeObject>(request: InformerRequest<T>): Informer<T> {
    const key = JSON.stringify([request.resource, request.labelSelector, request.fieldSelector, request.metadataOnly ?? false])
    let shared = this.informers.get(key)
    if (!shared) {
      const informer = new Informer<KubeObject>({
        ...this.options.informerDefaults,
        ...(request as unknown as InformerRequest<KubeObject>),
        client: this.client,
        logger: this.logger,
        metrics: this.metrics,
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

  /** Adds a controller; it runs while this process leads. */
  addController(controller: Controller): void {
    this.controllers.add(controller)
    if (this.leading) controller.start()
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

  /** Readiness: every informer in use has synced (leader and standby alike). */
  readyz(): CheckResult {
    const pending = [...this.informers.values()].filter((s) => !s.informer.hasSynced()).map((s) => s.informer.name)
    const caches = pending.length === 0 ? {ok: true} : {ok: false, message: `informers not synced: ${pending.join(', ')}`}
    return {ok: caches.ok, checks: {caches, ...(this.elector ? {'leader-election': {ok: true, message: this.leading ? 'leader' : 'standby'}} : {})}}
  }

  /** Runs until the signal aborts, then shuts down gracefully. Never rejects for a transient cluster problem. */
  async run(signal: AbortSignal): Promise<void> {
    this.eventLoopCheck = createEventLoopCheck()
    this.servers = (await Promise.all([
      startMetricsServer({bindAddress: this.options.metricsBindAddress ?? '0', metrics: this.metrics, logger: this.logger}),
      startProbeServer({
        bindAddress: this.options.probeBindAddress ?? '0',
        checks: {healthz: () => this.healthz(), readyz: () => this.readyz()},
        logger: this.logger,
      }),
    ])).filter((server): server is RunningHttpServer => server !== undefined)

    this.started = true
    for (const {informer} of this.informers.values()) informer.start()

    const holdAbort = new AbortController()
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
      })
      leadership = this.lead(this.elector, signal, holdAbort.signal)
    } else {
      this.setLeading(true)
    }

    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), {once: true})))
    this.logger.info('shutting down: draining in-flight reconciles', {graceMs: this.options.shutdownGraceMs ?? 30_000})
    await this.stopControllers(false)
    this.leading = false
    holdAbort.abort()
    await leadership
    await this.elector?.release()
    await Promise.all([...this.informers.values()].map((s) => s.informer.stop()))
    await Promise.all(this.servers.map((server) => server.close()))
    this.eventLoopCheck.stop()
    this.started = false
    this.logger.info('stopped')
  }

  private async lead(elector: LeaderElector, signal: AbortSignal, holdSignal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await elector.acquire(signal)
      } catch {
        return // aborted
      }
      this.setLeading(true)
      const outcome = await elector.hold(holdSignal)
      if (outcome === 'lost') {
        this.logger.error('leader lease lost: stopped reconciling; waiting to lead again')
        this.setLeading(false)
        await this.stopControllers(true)
      } else {
        return
      }
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return
    this.leading = leading
    if (leading) for (const controller of this.controllers) controller.start()
    for (const listener of this.leadershipListeners) listener(leading)
  }

  private async stopControllers(abortInFlight: boolean): Promise<void> {
    const graceMs = this.options.shutdownGraceMs ?? 30_000
    await Promise.all([...this.controllers].map((controller) => controller.stop({graceMs, abortInFlight})))
  }
}
