/**
 * The endpoint monitoring agent without Kubernetes: fetches its assignment (`GET /api/v1/agent/endpoints/` with
 * X-Agent-ID) every `check_interval_seconds`, checks each endpoint on its own jittered grid (CheckScheduler), keeps
 * the results in a bounded buffer and reports them in health reports (`check_results`), and exposes probe_*
 * metrics. The feature (monitoring-feature.ts) gives it the API client, its id and a place for its status.
 */
import {isDeepStrictEqual} from 'node:util'
import {z} from 'zod'
import {ApiNotFoundError, type CheckResultInput, type PolycrateApiClient} from '../../api/index.js'
import type {Logger} from '../../lib/logger.js'
import {operatorVersion} from '../../version.js'
import {dnsCheck} from './dns-check.js'
import {httpCheck, type ProbeOptions} from './http-check.js'
import {icmpCheck, type PingRunner} from './icmp-check.js'
import type {ProbeMetrics} from './metrics.js'
import {checkPlan, rawAgentEndpoint, type AgentConfig, type CheckPlan} from './plan.js'
import {ResultBuffer} from './result-buffer.js'
import {CheckFailure, round, type CheckOutcome} from './result.js'
import {CheckScheduler} from './schedule.js'
import {tcpCheck} from './tcp-check.js'
import {systemClock, type Clock} from '../../lib/clock.js'

/** Results per health report, and their JSON size: a report stays well under common 1 MiB body limits. */
export const BATCH_MAX_RESULTS = 500
export const BATCH_MAX_BYTES = 512 * 1024

export type CheckRunner = (plan: CheckPlan) => Promise<CheckOutcome>

/** Runs the plan's check; never throws. */
export function runCheck(plan: CheckPlan, options: ProbeOptions & {ping?: PingRunner} = {}): Promise<CheckOutcome> {
  const {settings, endpointId} = plan
  switch (settings.kind) {
    case 'http': return httpCheck(endpointId, settings, options)
    case 'tcp': return tcpCheck(endpointId, settings, options)
    case 'dns': return dnsCheck(endpointId, settings, options)
    case 'icmp': return icmpCheck(endpointId, settings, options)
    case 'invalid': return Promise.resolve(failedOutcome(plan, new CheckFailure('configuration', 'INVALID_SPEC', settings.message), 0, options.clock))
  }
}

function failedOutcome(plan: CheckPlan, failure: CheckFailure, durationMs: number, clock: Clock = systemClock): CheckOutcome {
  return {
    result: {
      endpoint_id: plan.endpointId,
      success: false,
      checked_at: new Date(clock.now() - durationMs).toISOString(),
      error_code: 0,
      error_name: failure.errorName,
      http_error_category: failure.category,
      duration_ms: round(durationMs),
    },
    phases: {},
    message: failure.message,
  }
}

/** The longest a check may take before the agent gives up on it (its own timeout + 2 s of grace). */
export function checkDeadlineMs(plan: CheckPlan): number {
  const {settings} = plan
  switch (settings.kind) {
    case 'icmp': return (settings.count - 1) * settings.intervalSeconds * 1000 + settings.timeoutMs + 4000
    case 'invalid': return 2000
    default: return settings.timeoutMs + 2000
  }
}

export interface EndpointState {
  name: string
  kind: string
  lastResult?: CheckResultInput
  message?: string
  consecutiveFailures: number
}

export interface AgentSnapshot {
  reportedAgentId?: string
  assigned: number
  endpoints: Map<string, EndpointState>
  buffered: number
  dropped: number
  lastFetchAt?: number
  fetchError?: string
  lastReportAt?: number
  reportError?: string
  totalChecks: number
}

export interface MonitoringAgentOptions {
  config: AgentConfig
  /** The reported agent id (`<agent_id_prefix>-<stable id>`). */
  agentId: () => Promise<string>
  /** The API client while connected, else undefined (the agent waits and keeps checking what it has). */
  api: () => PolycrateApiClient | undefined
  metrics: ProbeMetrics
  logger: Logger
  /** The manager's clock: the schedule, fetches, reports, deadlines and the checks' own timeouts run on it. */
  clock?: Clock
  /** Replaces the real checks (bench, scheduling tests). */
  check?: CheckRunner
  probe?: ProbeOptions & {ping?: PingRunner}
  /** Called after every fetch and report (the feature writes the status from it). */
  onStatus?: (snapshot: AgentSnapshot) => void
}

/** The agent has no API session to fetch with: not a failure of its own (api-sync tells why). */
class NotConnectedYet extends Error {
  constructor() {
    super('not connected to the Polycrate API yet (see the APIConnected condition)')
  }
}

export class MonitoringAgent {
  private readonly clock: Clock
  private readonly scheduler: CheckScheduler<CheckPlan>
  readonly buffer: ResultBuffer
  private readonly state = new Map<string, EndpointState>()
  private plans = new Map<string, CheckPlan>()
  private readonly abort = new AbortController()
  private fetchTimer?: unknown
  private reportTimer?: unknown
  private reporting?: Promise<void>
  private readonly startedAt: number
  private snapshotInfo: Omit<AgentSnapshot, 'assigned' | 'endpoints' | 'buffered' | 'dropped' | 'totalChecks'> = {}
  private totals = {checks: 0, success: 0, failed: 0, sinceReport: 0}
  private stopped = false

  constructor(private readonly options: MonitoringAgentOptions) {
    this.clock = options.clock ?? systemClock
    this.startedAt = this.clock.now()
    this.buffer = new ResultBuffer(options.config.result_buffer_size)
    this.scheduler = new CheckScheduler<CheckPlan>({
      clock: this.clock,
      concurrency: options.config.max_concurrent_checks,
      run: (plan) => this.checkOne(plan),
      onStart: (_plan, delayMs) => options.metrics.delay.observe(delayMs / 1000),
      onSkip: () => options.metrics.skipped.inc(),
    })
  }

  start(): void {
    void this.refresh()
    this.scheduleReport()
  }

  /**
   * A graceful stop: no new checks, the running ones finish (each within its deadline), then the buffer is reported
   * — all within `graceMs`; what is still buffered after that is lost with the process.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.scheduler.stop()
    this.clock.clearTimeout(this.fetchTimer)
    this.clock.clearTimeout(this.reportTimer)
    let timer: unknown
    const timeUp = new Promise<void>((resolve) => { timer = this.clock.setTimeout(resolve, graceMs) })
    const flush = async () => {
      await this.scheduler.idle()
      while (this.buffer.size > 0 && !this.stopped) {
        const before = this.buffer.size
        await this.report()
        if (this.buffer.size >= before) return
      }
    }
    await Promise.race([flush(), timeUp])
    this.clock.clearTimeout(timer)
    this.stop()
  }

  /** Stops fetching and checking at once; running checks finish but are not reported. */
  stop(): void {
    this.stopped = true
    this.abort.abort()
    this.scheduler.stop()
    this.clock.clearTimeout(this.fetchTimer)
    this.clock.clearTimeout(this.reportTimer)
    this.options.metrics.retain(new Set())
    this.options.metrics.assigned.set(0)
  }

  snapshot(): AgentSnapshot {
    return {
      ...this.snapshotInfo,
      assigned: this.plans.size,
      endpoints: this.state,
      buffered: this.buffer.size,
      dropped: this.buffer.dropped,
      totalChecks: this.totals.checks,
    }
  }

  /** Fetches the assignment and updates the schedule; again after `check_interval_seconds`. */
  async refresh(): Promise<void> {
    const interval = this.options.config.check_interval_seconds * 1000
    // One fetch loop: a refresh asked for early (the API connected) replaces the pending one.
    this.clock.clearTimeout(this.fetchTimer)
    try {
      const api = this.options.api()
      if (!api) throw new NotConnectedYet()
      const agentId = await this.options.agentId()
      this.snapshotInfo.reportedAgentId = agentId
      const fetchAssignment = () => api.request({
        method: 'GET',
        path: '/api/v1/agent/endpoints/',
        headers: {'x-agent-id': agentId},
        schema: z.array(z.unknown()),
        resource: 'agent/endpoints',
        signal: this.abort.signal,
      })
      // 404: the API does not know this agent id yet; a health report registers it.
      const {data} = await fetchAssignment().catch(async (error: unknown) => {
        if (!(error instanceof ApiNotFoundError)) throw error
        await this.report()
        return fetchAssignment()
      })
      this.applyAssignment(data)
      this.snapshotInfo.lastFetchAt = this.clock.now()
      delete this.snapshotInfo.fetchError
    } catch (error) {
      if (this.stopped) return
      this.snapshotInfo.fetchError = (error as Error).message
      // No API session (yet): api-sync reports and logs that (APIConnected); the connect asks for a refresh at once.
      if (error instanceof NotConnectedYet) this.options.logger.debug('waiting for the Polycrate API connection to fetch the assigned endpoints')
      else this.options.logger.warn('could not fetch the assigned endpoints; checking the last known ones', {error: (error as Error).message})
    }
    this.emitStatus()
    if (!this.stopped) {
      // Before the first successful fetch, try again soon rather than after a whole interval.
      const next = this.snapshotInfo.lastFetchAt === undefined ? Math.min(interval, 5000) : interval
      this.fetchTimer = this.clock.setTimeout(() => void this.refresh(), next)
    }
  }

  /** The assignment (an array of AgentEndpoint) → plans, schedule, metrics. Items that do not parse are skipped. */
  applyAssignment(items: readonly unknown[]): void {
    const plans = new Map<string, CheckPlan>()
    for (const item of items) {
      const parsed = rawAgentEndpoint.safeParse(item)
      if (!parsed.success) {
        this.options.logger.warn('skipping an assigned endpoint the agent cannot read', {id: (item as {id?: unknown})?.id})
        continue
      }
      const plan = checkPlan(parsed.data, this.options.config)
      // An unchanged plan keeps its object: every fetch would otherwise replace each endpoint's plan with an equal
      // copy, one more long-lived object per endpoint and interval for the GC to promote and collect.
      const known = this.plans.get(plan.endpointId)
      plans.set(plan.endpointId, known && isDeepStrictEqual(known, plan) ? known : plan)
    }
    this.plans = plans
    for (const id of [...this.state.keys()]) if (!plans.has(id)) this.state.delete(id)
    for (const plan of plans.values()) {
      const known = this.state.get(plan.endpointId)
      const kind = plan.settings.kind === 'invalid' ? plan.settings.endpointKind : plan.settings.kind
      if (known) Object.assign(known, {name: plan.name, kind})
      else this.state.set(plan.endpointId, {name: plan.name, kind, consecutiveFailures: 0})
    }
    this.options.metrics.retain(new Set(plans.keys()))
    this.options.metrics.assigned.set(plans.size)
    this.scheduler.update([...plans.values()])
  }

  private async checkOne(plan: CheckPlan): Promise<void> {
    const started = performance.now()
    const check = this.options.check ?? ((p: CheckPlan) => runCheck(p, {...this.options.probe, clock: this.clock}))
    let timer: unknown
    const deadline = checkDeadlineMs(plan)
    const outcome = await Promise.race([
      check(plan),
      new Promise<CheckOutcome>((resolve) => {
        timer = this.clock.setTimeout(() => resolve(failedOutcome(plan, new CheckFailure('timeout', 'TIMEOUT', `the check did not finish within ${deadline / 1000} s`), performance.now() - started, this.clock)), deadline)
      }),
    ])
    this.clock.clearTimeout(timer)
    // An endpoint unassigned while it was checked: its result is still true and is reported, but not shown.
    const state = this.state.get(plan.endpointId)
    if (this.stopped) return
    const dropped = this.buffer.dropped
    this.buffer.push(outcome.result)
    if (this.buffer.dropped > dropped) this.options.metrics.dropped.inc(this.buffer.dropped - dropped)
    this.totals.checks++
    this.totals.sinceReport++
    if (outcome.result.success) this.totals.success++
    else this.totals.failed++
    if (state) {
      state.lastResult = outcome.result
      state.consecutiveFailures = outcome.result.success ? 0 : state.consecutiveFailures + 1
      if (outcome.message) state.message = outcome.message
      else delete state.message
      const kind = plan.settings.kind === 'invalid' ? plan.settings.endpointKind : plan.settings.kind
      // Labels from the current assignment (the scheduler may run an equal plan object from an earlier fetch).
      const current = this.plans.get(plan.endpointId) ?? plan
      this.options.metrics.record(plan.endpointId, {endpoint: current.name, organization: current.organization}, kind, outcome)
    }
    this.options.metrics.buffered.set(this.buffer.size)
    if (this.buffer.size >= BATCH_MAX_RESULTS) void this.report()
  }

  private scheduleReport(): void {
    if (this.stopped) return
    // Buffered results go out every 10 s (sooner with a shorter check interval, or when a batch is full).
    const interval = Math.min(10_000, this.options.config.check_interval_seconds * 1000)
    this.reportTimer = this.clock.setTimeout(() => {
      void this.report().finally(() => this.scheduleReport())
    }, interval)
  }

  /** Sends buffered results (one report at a time) until the buffer is empty or the API fails. */
  report(): Promise<void> {
    this.reporting ??= this.sendAll().finally(() => {
      this.reporting = undefined
      this.emitStatus()
    })
    return this.reporting
  }

  private async sendAll(): Promise<void> {
    for (;;) {
      const api = this.options.api()
      if (!api || this.stopped) return
      const batch = this.buffer.peek(BATCH_MAX_RESULTS, BATCH_MAX_BYTES)
      try {
        const agentId = await this.options.agentId()
        const now = this.clock.now()
        await api.agent.health({
          reported_agent_id: agentId,
          kind: 'operator',
          version: operatorVersion(),
          status: 'healthy',
          uptime_seconds: Math.round((now - this.startedAt) / 1000),
          start_time: new Date(this.startedAt).toISOString(),
          reported_at: new Date(now).toISOString(),
          api_connected: true,
          check_summary: {
            monitored_endpoints: this.plans.size,
            checks_per_minute: this.checksPerMinute(),
            checks_in_queue: this.scheduler.queued,
            failed_checks: this.totals.failed,
            successful_checks: this.totals.success,
            checks_since_last_report: this.totals.sinceReport,
            total_checks: this.totals.checks,
          },
          check_results: batch?.results ?? [],
        }, {signal: this.abort.signal})
        if (batch) this.buffer.ack(batch.lastSeq)
        this.totals.sinceReport = 0
        this.snapshotInfo.lastReportAt = this.clock.now()
        delete this.snapshotInfo.reportError
      } catch (error) {
        if (!this.stopped) {
          this.snapshotInfo.reportError = (error as Error).message
          this.options.logger.warn('could not report check results; keeping them for the next report', {buffered: this.buffer.size, error: (error as Error).message})
        }
        return
      } finally {
        this.options.metrics.buffered.set(this.buffer.size)
      }
      if (!batch || this.buffer.size === 0) return
    }
  }

  private checksPerMinute(): number {
    let perMinute = 0
    for (const plan of this.plans.values()) perMinute += 60_000 / plan.intervalMs
    return Math.round(perMinute * 100) / 100
  }

  private emitStatus(): void {
    if (!this.stopped) this.options.onStatus?.(this.snapshot())
  }
}
