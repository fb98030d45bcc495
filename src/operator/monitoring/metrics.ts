/**
 * The agent's `/metrics`: the blackbox exporter's probe_* gauges per endpoint (`endpoint`, `organization` labels,
 * as the operator reference shows), and the agent's own counters. Registered once per registry (a feature
 * restart reuses them); the series of an endpoint go away when it is no longer assigned.
 *
 * The probe_* gauges are collectors (the Prometheus client's const-metrics pattern): each endpoint's last values sit
 * in one small object, and the series are rendered from them when /metrics is scraped. prom-client gauges kept a
 * labelled series object and its hash key per endpoint and phase (nine per HTTP endpoint), the agent's largest
 * per-endpoint cost.
 */
import {Counter, Gauge, Histogram, type Metric, type Registry} from 'prom-client'
import type {CheckOutcome} from './result.js'

export interface ProbeLabels {
  endpoint: string
  organization: string
}

/** One endpoint's last probe values (numbers; the phases object is the check's own, not a copy). */
interface ProbeSeries {
  labels: ProbeLabels
  success: number
  duration: number
  httpStatus: number | undefined
  sslExpiry: number | undefined
  phases: Readonly<Record<string, number>> | undefined
}

type Sample = {labels: Record<string, string>; value: number}

/** A gauge whose samples are computed when it is scraped (duck-typed to what prom-client's Registry calls). */
function collectedGauge(registry: Registry, name: string, help: string, samples: () => Sample[]): void {
  const metric = {
    name,
    help,
    type: 'gauge',
    aggregator: 'omit',
    get: async () => ({name, help, type: 'gauge', aggregator: 'omit', values: samples()}),
    reset: () => {},
  }
  registry.registerMetric(metric as unknown as Metric)
}

export class ProbeMetrics {
  readonly checks: Counter<'kind' | 'result'>
  readonly skipped: Counter
  readonly dropped: Counter
  readonly buffered: Gauge
  readonly assigned: Gauge
  readonly delay: Histogram
  private readonly series = new Map<string, ProbeSeries>()

  constructor(registry: Registry) {
    const registers = [registry]
    const each = (value: (series: ProbeSeries) => number | undefined) => () => {
      const samples: Sample[] = []
      for (const series of this.series.values()) {
        const v = value(series)
        if (v !== undefined) samples.push({labels: series.labels as unknown as Record<string, string>, value: v})
      }
      return samples
    }
    collectedGauge(registry, 'probe_success', 'Whether the last check of the endpoint succeeded (1) or failed (0)', each((s) => s.success))
    collectedGauge(registry, 'probe_duration_seconds', 'How long the last check of the endpoint took, in seconds', each((s) => s.duration))
    collectedGauge(registry, 'probe_http_duration_seconds', 'Duration of the last HTTP check by phase (resolve, connect, tls, processing, transfer), summed over redirects', () => {
      const samples: Sample[] = []
      for (const {labels, phases} of this.series.values()) {
        for (const [phase, value] of Object.entries(phases ?? {})) samples.push({labels: {endpoint: labels.endpoint, organization: labels.organization, phase}, value})
      }
      return samples
    })
    collectedGauge(registry, 'probe_http_status_code', 'HTTP status code of the last check\'s final response (0 without a response)', each((s) => s.httpStatus))
    collectedGauge(registry, 'probe_ssl_earliest_cert_expiry', 'Earliest expiry of the certificates the endpoint sent, in unix seconds', each((s) => s.sslExpiry))
    this.checks = new Counter({name: 'polycrate_agent_checks_total', help: 'Checks run by the endpoint monitoring agent, by kind and result', labelNames: ['kind', 'result'], registers})
    this.skipped = new Counter({name: 'polycrate_agent_checks_skipped_total', help: 'Check rounds skipped because the endpoint\'s previous check was still running', registers})
    this.dropped = new Counter({name: 'polycrate_agent_results_dropped_total', help: 'Check results dropped (oldest first) because the result buffer was full', registers})
    this.buffered = new Gauge({name: 'polycrate_agent_results_buffered', help: 'Check results waiting to be reported to the API', registers})
    this.assigned = new Gauge({name: 'polycrate_agent_assigned_endpoints', help: 'Endpoints the API assigned to this agent', registers})
    this.delay = new Histogram({name: 'polycrate_agent_schedule_delay_seconds', help: 'How late checks start against their schedule', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers})
  }

  private static readonly byRegistry = new WeakMap<Registry, ProbeMetrics>()

  static for(registry: Registry): ProbeMetrics {
    let metrics = ProbeMetrics.byRegistry.get(registry)
    if (!metrics) {
      metrics = new ProbeMetrics(registry)
      ProbeMetrics.byRegistry.set(registry, metrics)
    }
    return metrics
  }

  record(endpointId: string, labels: ProbeLabels, kind: string, outcome: CheckOutcome): void {
    let series = this.series.get(endpointId)
    if (!series || series.labels.endpoint !== labels.endpoint || series.labels.organization !== labels.organization) {
      series = {labels: {endpoint: labels.endpoint, organization: labels.organization}, success: 0, duration: 0, httpStatus: undefined, sslExpiry: undefined, phases: undefined}
      this.series.set(endpointId, series)
    }
    const {result} = outcome
    series.success = result.success ? 1 : 0
    series.duration = (result.duration_ms ?? 0) / 1000
    this.checks.inc({kind, result: result.success ? 'success' : 'failure'})
    if (kind === 'http') {
      series.httpStatus = result.status_code ?? 0
      series.phases = outcome.phases
    }
    if (typeof result.ssl_cert_not_after === 'string') series.sslExpiry = Date.parse(result.ssl_cert_not_after) / 1000
  }

  /** Removes every series of endpoints not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const id of [...this.series.keys()]) if (!keep.has(id)) this.series.delete(id)
  }
}
