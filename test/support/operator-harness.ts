/**
 * One in-process operator for the integration tests: the real apiserver (cluster.ts), optionally a simulator
 * workspace wired to the operator namespace (api-setup.ts), and `createOperator` with what differs between the
 * tests as options. Gives handles instead of copies: stop/start (a restart), the captured logs, the operator's
 * clock offset, and its reconcile counters, the positive signal a test waits for before it asserts that
 * nothing happened.
 *
 *   const harness = inProcessOperator({spec: {endpoint_discovery: {enabled: true}}})   // in a describe(): before/after hooks
 *   it('…', async () => { const {client, sim} = harness; … })
 */
import type {KubeClient} from '../../src/kube/client.js'
import {systemClock} from '../../src/lib/clock.js'
import {createLogger, silentLogger, type LogLevel} from '../../src/lib/logger.js'
import {createOperator, type Operator, type OperatorOptions} from '../../src/operator/operator.js'
import {operatorNamespaceFor} from './api-setup.js'
import {ApiSimulator} from './api-simulator/index.js'
import {adminClient, ensureCrds, freshNamespace} from './cluster.js'
import {freePort} from './control-plane.js'
import {eventually} from './helpers.js'

export type LogLine = Record<string, unknown> & {msg?: string; level?: string}

export interface HarnessOptions {
  /**
   * The OperatorConfig spec of a namespace wired to a fresh simulator workspace (token Secret, api_sync on; more
   * keys are merged in). `false`: no simulator and a bare operator namespace (the test writes its own OperatorConfig).
   */
  spec?: false | Record<string, unknown> | ((harness: OperatorHarness) => Record<string, unknown>)
  /** Features instead of the default set. */
  features?: OperatorOptions['features']
  leaderElection?: OperatorOptions['leaderElection']
  /** Capture JSON log lines at this level in `logs` (default: none, a silent logger). */
  logLevel?: LogLevel
  /** Serve /metrics (and the probes) on free local ports: `metricsUrl`, `probeUrl`. Default: no listeners. */
  metricsPort?: boolean
  probePort?: boolean
  /** Extra setup once the client and the simulator exist, before the operator namespace and the operator. */
  setup?: (harness: OperatorHarness) => Promise<void>
  /** Extra clean-up while the operator still runs (before it stops in `tearDown`). */
  cleanup?: (harness: OperatorHarness) => Promise<void>
  /** Wait until the simulator knows the local cluster before the first test. Default: true with a simulator. */
  waitForCluster?: boolean
  /** Start the operator in `before` (default); `false`: the test calls `start()`. */
  start?: boolean
}

export class OperatorHarness {
  client!: KubeClient
  /** The simulator (throws without one: `spec: false`). */
  get sim(): ApiSimulator {
    if (!this.simulator) throw new Error('this harness runs without a simulator (spec: false)')
    return this.simulator
  }
  /** The operator's namespace. */
  namespace = ''
  workspaceId = ''
  /** The running (or last) operator. */
  operator: Operator | undefined
  /** JSON log lines of every run (with `logLevel`). */
  readonly logs: LogLine[] = []
  /** The operator's wall clock (now) runs this far ahead; its timers and monotonic time do not: a test moves it instead of waiting. */
  offsetMs = 0
  metricsUrl = ''
  probeUrl = ''
  private simulator: ApiSimulator | undefined
  /** The operator's own client under leader election (its manager puts the write fence on it; the test's writes go through `client`). */
  private operatorClient: KubeClient | undefined
  private abort: AbortController | undefined
  private running: Promise<void> | undefined
  private metricsBindAddress = '0'
  private probeBindAddress = '0'

  constructor(readonly options: HarnessOptions = {}) {}

  /** Control plane, simulator and namespace; then the operator unless `start: false`. */
  async setUp(): Promise<void> {
    await ensureCrds()
    this.client = adminClient()
    if (this.options.spec !== false) this.simulator = await ApiSimulator.start()
    await this.options.setup?.(this)
    if (this.options.spec === false) {
      this.namespace = await freshNamespace(this.client, 'op')
    } else {
      const spec = typeof this.options.spec === 'function' ? this.options.spec(this) : this.options.spec
      ;({namespace: this.namespace, workspaceId: this.workspaceId} = await operatorNamespaceFor(this.client, this.sim, spec))
    }
    if (this.options.metricsPort) {
      const port = await freePort()
      this.metricsBindAddress = `127.0.0.1:${port}`
      this.metricsUrl = `http://127.0.0.1:${port}/metrics`
    }
    if (this.options.probePort) {
      const port = await freePort()
      this.probeBindAddress = `127.0.0.1:${port}`
      this.probeUrl = `http://127.0.0.1:${port}`
    }
    if (this.options.start === false) return
    this.start()
    if (this.options.waitForCluster ?? this.simulator !== undefined) {
      await eventually(async () => this.sim.list('kubernetes/clusters').length >= 1, 30_000, 'the local cluster in the API')
    }
  }

  /** Starts a fresh operator (the one before must be stopped). */
  start(overrides: Partial<OperatorOptions> = {}): Operator {
    if (this.running) throw new Error('the operator is running: stop() it first')
    const logger = this.options.logLevel
      ? createLogger({level: this.options.logLevel, format: 'json', write: (line) => this.logs.push(JSON.parse(line) as LogLine)})
      : silentLogger
    const leaderElection = overrides.leaderElection ?? this.options.leaderElection
    if (leaderElection && !this.operatorClient) this.operatorClient = adminClient()
    this.operator = createOperator({
      client: leaderElection ? this.operatorClient! : this.client, namespace: this.namespace, logger,
      metricsBindAddress: this.metricsBindAddress, probeBindAddress: this.probeBindAddress,
      clock: {...systemClock, now: () => systemClock.now() + this.offsetMs},
      ...(this.options.features ? {features: this.options.features} : {}),
      ...(this.options.leaderElection !== undefined ? {leaderElection: this.options.leaderElection} : {}),
      ...overrides,
    })
    this.abort = new AbortController()
    this.running = this.operator.run(this.abort.signal)
    return this.operator
  }

  /** Stops the operator and waits until it is down (a graceful shutdown). */
  async stop(): Promise<void> {
    this.abort?.abort()
    const running = this.running
    this.running = undefined
    await running
  }

  async tearDown(): Promise<void> {
    if (this.client) await this.options.cleanup?.(this)
    await this.stop()
    this.client?.close()
    this.operatorClient?.close()
    await this.simulator?.close()
  }

  /** How often `controller` reconciled (every result), from the operator's own metrics registry. */
  async reconciles(controller: string): Promise<number> {
    if (!this.operator) return 0
    const metric = await this.operator.manager.metrics.reconcileTotal.get()
    return metric.values.filter((v) => v.labels.controller === controller).reduce((sum, v) => sum + v.value, 0)
  }

  /** Waits until `controller` reconciled at least `count` more times than `since` (a value read before the change). */
  async reconciledSince(controller: string, since: number, count = 1, timeoutMs = 30_000): Promise<number> {
    return eventually(async () => {
      const now = await this.reconciles(controller)
      return now >= since + count ? now : undefined
    }, timeoutMs, `${count} more reconcile(s) of ${controller}`)
  }

  /** Items waiting in the work queues of all controllers. */
  async queueDepth(): Promise<number> {
    if (!this.operator) return 0
    const metric = await this.operator.manager.metrics.workqueueDepth.get()
    return metric.values.reduce((sum, v) => sum + v.value, 0)
  }

  /** Waits for a captured log line (needs `logLevel`). */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs = 30_000, what = 'log line'): Promise<LogLine> {
    return eventually(async () => this.logs.find(match), timeoutMs, what)
  }
}

/** An OperatorHarness set up in `before` and torn down in `after` of the enclosing describe(). */
export function inProcessOperator(options: HarnessOptions = {}): OperatorHarness {
  const harness = new OperatorHarness(options)
  before(async function () {
    this.timeout(120_000)
    await harness.setUp()
  })
  after(async function () {
    this.timeout(60_000)
    await harness.tearDown()
  })
  return harness
}
