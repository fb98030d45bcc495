/**
 * The operator's alerting rules (pure): what a team needs to know about a running operator — down or without a
 * leader, a controller failing, API sync failing or behind, webhook errors, monitoring checks off schedule, memory
 * near the limit — as rule groups, and as the VictoriaMetrics operator's VMRule and the Prometheus operator's
 * PrometheusRule that carry them (`metrics.alerts` of the block values).
 *
 * The operator's own series are selected by the labels a VMServiceScrape or ServiceMonitor of the metrics Service
 * gives them (`job` = the Service's name, `namespace`, `pod`); memory comes from the kubelet's cAdvisor and
 * kube-state-metrics (EXTERNAL_SERIES). Each alert's `runbook_url` points at its section in the README.
 */
import type {KubeObject} from '../../kube/client.js'
import {LEADER_LEASE_NAME, OPERATOR_NAME} from '../conventions.js'

/** The metrics Service's name: what a VMServiceScrape or ServiceMonitor puts into `job`. */
export const METRICS_JOB = `${OPERATOR_NAME}-metrics`
/** The operator's container in its Deployment (cAdvisor's and kube-state-metrics' `container` label). */
export const OPERATOR_CONTAINER = 'operator'
/** Where the runbooks are when the values name no other place: the README's section of each alert. */
export const DEFAULT_RUNBOOK_BASE_URL = 'README.md'

export const VM_RULE_CRD = 'vmrules.operator.victoriametrics.com'
export const PROMETHEUS_RULE_CRD = 'prometheusrules.monitoring.coreos.com'

/**
 * Series the rules and the dashboard use that the operator does not expose itself, and who does. `up` is written by
 * the scraper; the others by the kubelet (cAdvisor) and kube-state-metrics, which a monitoring stack runs anyway.
 */
export const EXTERNAL_SERIES: Readonly<Record<string, string>> = {
  up: 'the scraper (vmagent, Prometheus), one per scraped replica',
  container_memory_working_set_bytes: 'cAdvisor in the kubelet (what the OOM killer compares with the limit)',
  container_cpu_usage_seconds_total: 'cAdvisor in the kubelet',
  kube_pod_container_resource_limits: 'kube-state-metrics (resource="memory"|"cpu")',
  kube_pod_container_resource_requests: 'kube-state-metrics (resource="memory"|"cpu")',
}

export type Severity = 'critical' | 'warning'

export interface AlertRule {
  alert: string
  expr: string
  for: string
  labels: {severity: Severity}
  annotations: {summary: string; description: string; runbook_url: string}
}

export interface RuleGroup {
  name: string
  rules: AlertRule[]
}

export interface AlertOptions {
  /** The operator's namespace: every selector is narrowed to it. */
  namespace: string
  /** Where the README is read (its alert sections are `#<alert name in lower case>`). */
  runbookBaseUrl?: string
}

/** The anchor of an alert's section in the README (GitHub's slug of the heading `#### <alert>`). */
export function runbookAnchor(alert: string): string {
  return alert.toLowerCase()
}

interface AlertSpec {
  alert: string
  expr: string
  for: string
  severity: Severity
  summary: string
  description: string
}

/** The rule groups for an operator in `namespace` (pure). */
export function alertRuleGroups(options: AlertOptions): RuleGroup[] {
  const {namespace} = options
  const base = options.runbookBaseUrl ?? DEFAULT_RUNBOOK_BASE_URL
  const selectors: Selectors = {
    namespace,
    own: (metric, extra = '') => `${metric}{job="${METRICS_JOB}",namespace="${namespace}"${extra ? `,${extra}` : ''}}`,
    container: (metric, extra = '') =>
      `${metric}{namespace="${namespace}",container="${OPERATOR_CONTAINER}",pod=~"${OPERATOR_NAME}-.+"${extra ? `,${extra}` : ''}}`,
  }
  const groups: Array<[name: string, alerts: AlertSpec[]]> = [
    ['polycrate-operator.availability', availabilityAlerts(selectors)],
    ['polycrate-operator.controllers', controllerAlerts(selectors)],
    ['polycrate-operator.api-sync', apiSyncAlerts(selectors)],
    ['polycrate-operator.webhooks', webhookAlerts(selectors)],
    ['polycrate-operator.monitoring', monitoringAlerts(selectors)],
    ['polycrate-operator.resources', resourceAlerts(selectors)],
  ]
  return groups.map(([name, alerts]) => ({
    name,
    rules: alerts.map((spec) => ({
      alert: spec.alert,
      expr: spec.expr,
      for: spec.for,
      labels: {severity: spec.severity},
      annotations: {summary: spec.summary, description: spec.description, runbook_url: `${base}#${runbookAnchor(spec.alert)}`},
    })),
  }))
}

interface Selectors {
  namespace: string
  /** One of the operator's own series: its scrape job, its namespace, and `extra` matchers. */
  own: (metric: string, extra?: string) => string
  /** A series of the operator's container from cAdvisor or kube-state-metrics. */
  container: (metric: string, extra?: string) => string
}

/** `sum by (by) (errors) / sum by (by) (all)`. */
const ratio = (by: string, errors: string, all: string) => `sum by (${by}) (${errors}) / sum by (${by}) (${all})`

function availabilityAlerts({own, namespace}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorDown',
      // absent() of a bare selector keeps its equality matchers as labels (of `== 1` it would keep none).
      expr: `max by (namespace, job) (${own('up')}) == 0 or absent(${own('up')})`,
      for: '5m',
      severity: 'critical',
      summary: 'No replica of the Polycrate operator is being scraped successfully.',
      description: `No target of job ${METRICS_JOB} in namespace ${namespace} has been up for 5 minutes: nothing discovers, syncs or serves the DNS webhooks.`,
    },
    {
      alert: 'PolycrateOperatorNoLeader',
      expr: `max by (namespace) (${own('leader_election_master_status', `name="${LEADER_LEASE_NAME}"`)}) < 1`,
      for: '5m',
      severity: 'critical',
      summary: 'The Polycrate operator runs but no replica holds the leader lease.',
      description: `Replicas in {{ $labels.namespace }} are up, but none has led the Lease ${LEADER_LEASE_NAME} for 5 minutes: discovery and API sync are stopped.`,
    },
  ]
}

function controllerAlerts({own}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorReconcileErrors',
      expr: `${ratio('namespace, controller', `rate(${own('controller_runtime_reconcile_errors_total')}[5m])`, `rate(${own('controller_runtime_reconcile_total')}[5m])`)} > 0.1`,
      for: '15m',
      severity: 'warning',
      summary: 'A controller of the Polycrate operator keeps failing.',
      description: '{{ $value | humanizePercentage }} of the reconciles of controller {{ $labels.controller }} in {{ $labels.namespace }} failed over the last 15 minutes.',
    },
    {
      alert: 'PolycrateOperatorFeatureNotRunning',
      expr: `max by (namespace, feature, state) (${own('polycrate_operator_feature_status', 'state=~"failed|forbidden|crds_missing|paused_invalid_config"')}) == 1`,
      for: '10m',
      severity: 'warning',
      summary: 'An enabled feature of the Polycrate operator is not running.',
      description: 'Feature {{ $labels.feature }} in {{ $labels.namespace }} is enabled but not running ({{ $labels.state }}) for 10 minutes.',
    },
    {
      alert: 'PolycrateOperatorWorkQueueStalled',
      expr: `max by (namespace, controller) (${own('workqueue_depth')}) > 0 unless on (namespace, controller) sum by (namespace, controller) (rate(${own('workqueue_work_duration_seconds_count')}[10m])) > 0`,
      for: '15m',
      severity: 'warning',
      summary: 'A work queue of the Polycrate operator holds items but none is processed.',
      description: 'The queue of controller {{ $labels.controller }} in {{ $labels.namespace }} has held {{ $value }} items without finishing one for 15 minutes.',
    },
  ]
}

function apiSyncAlerts({own}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorAPIDisconnected',
      expr: `max by (namespace, api_url) (${own('polycrate_operator_api_connected')}) == 0`,
      for: '10m',
      severity: 'warning',
      summary: 'The Polycrate operator cannot report to the Polycrate API.',
      description: 'The heartbeat to {{ $labels.api_url }} from {{ $labels.namespace }} has failed for 10 minutes; the OperatorConfig condition APIConnected says why.',
    },
    {
      alert: 'PolycrateOperatorAPIHeartbeatMissed',
      expr: `time() - max by (namespace, api_url) (${own('polycrate_operator_api_last_heartbeat_timestamp_seconds')}) > 3 * max by (namespace, api_url) (${own('polycrate_operator_api_sync_interval_seconds')})`,
      for: '5m',
      severity: 'warning',
      summary: 'The Polycrate operator\'s heartbeat to the Polycrate API is overdue.',
      description: 'The last successful heartbeat to {{ $labels.api_url }} from {{ $labels.namespace }} is {{ $value | humanizeDuration }} old, more than three sync intervals.',
    },
    {
      alert: 'PolycrateOperatorAPIErrors',
      expr: `${ratio('namespace', `rate(${own('polycrate_api_requests_total', 'code=~"5..|429|network"')}[5m])`, `rate(${own('polycrate_api_requests_total')}[5m])`)} > 0.2`,
      for: '15m',
      severity: 'warning',
      summary: 'Many requests of the Polycrate operator to the Polycrate API fail.',
      description: '{{ $value | humanizePercentage }} of the requests to the Polycrate API from {{ $labels.namespace }} failed (5xx, 429 or no answer) over the last 15 minutes.',
    },
    {
      alert: 'PolycrateOperatorSyncBehind',
      expr: `histogram_quantile(0.9, sum by (namespace, controller, le) (rate(${own('workqueue_queue_duration_seconds_bucket', 'controller=~".+-sync"')}[10m]))) > 60`,
      for: '15m',
      severity: 'warning',
      summary: 'A sync controller of the Polycrate operator falls behind.',
      description: 'Objects wait {{ $value | humanizeDuration }} (90th percentile) in the queue of {{ $labels.controller }} in {{ $labels.namespace }} before they are synced to the Polycrate API.',
    },
  ]
}

function webhookAlerts({own}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorWebhookErrors',
      expr: `${ratio('namespace, webhook', `rate(${own('polycrate_dns_webhook_requests_total', 'code=~"5.."')}[5m])`, `rate(${own('polycrate_dns_webhook_requests_total')}[5m])`)} > 0.05`,
      for: '10m',
      severity: 'warning',
      summary: 'A DNS webhook of the Polycrate operator answers with errors.',
      description: '{{ $value | humanizePercentage }} of the requests to the {{ $labels.webhook }} webhook in {{ $labels.namespace }} got a 5xx answer over the last 10 minutes.',
    },
  ]
}

function monitoringAlerts({own}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorMonitoringChecksNotRunning',
      expr: `max by (namespace, pod) (${own('polycrate_agent_assigned_endpoints')}) > 0 unless on (namespace, pod) sum by (namespace, pod) (increase(${own('polycrate_agent_checks_total')}[30m])) > 0`,
      for: '5m',
      severity: 'warning',
      summary: 'The endpoint monitoring agent has endpoints but runs no checks.',
      description: '{{ $labels.pod }} in {{ $labels.namespace }} has {{ $value }} endpoints assigned and ran no check in 30 minutes.',
    },
    {
      alert: 'PolycrateOperatorMonitoringChecksLate',
      expr: `histogram_quantile(0.9, sum by (namespace, pod, le) (rate(${own('polycrate_agent_schedule_delay_seconds_bucket')}[10m]))) > 5`,
      for: '15m',
      severity: 'warning',
      summary: 'Endpoint checks start late against their schedule.',
      description: 'Checks of {{ $labels.pod }} in {{ $labels.namespace }} start {{ $value | humanizeDuration }} late (90th percentile): more checks are due than max_concurrent_checks lets run.',
    },
    {
      alert: 'PolycrateOperatorMonitoringResultsDropped',
      expr: `sum by (namespace, pod) (increase(${own('polycrate_agent_results_dropped_total')}[10m])) > 0`,
      for: '5m',
      severity: 'warning',
      summary: 'Endpoint check results are lost before they reach the Polycrate API.',
      description: '{{ $labels.pod }} in {{ $labels.namespace }} dropped {{ $value | humanize }} check results in 10 minutes: its result buffer is full because reports to the API fail.',
    },
  ]
}

function resourceAlerts({container}: Selectors): AlertSpec[] {
  return [
    {
      alert: 'PolycrateOperatorMemoryNearLimit',
      expr: `max by (namespace, pod) (${container('container_memory_working_set_bytes')}) / max by (namespace, pod) (${container('kube_pod_container_resource_limits', 'resource="memory"')}) > 0.9`,
      for: '15m',
      severity: 'warning',
      summary: 'The Polycrate operator uses more than 90% of its memory limit.',
      description: '{{ $labels.pod }} in {{ $labels.namespace }} uses {{ $value | humanizePercentage }} of its memory limit; at the limit it is OOM-killed.',
    },
  ]
}

/** The rules as a Prometheus rule file (`promtool check rules`, a Prometheus `rule_files` entry). */
export function ruleFile(groups: readonly RuleGroup[]): {groups: readonly RuleGroup[]} {
  return {groups}
}

type Meta = {name: string; namespace: string; labels: Record<string, string>}

/** The VictoriaMetrics operator's VMRule (vmalert evaluates it). */
export function vmRule(meta: Meta, groups: readonly RuleGroup[]): KubeObject {
  return {apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMRule', metadata: meta, spec: {groups: structuredClone(groups)}} as KubeObject
}

/** The Prometheus operator's PrometheusRule (same groups). */
export function prometheusRule(meta: Meta, groups: readonly RuleGroup[]): KubeObject {
  return {apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: meta, spec: {groups: structuredClone(groups)}} as KubeObject
}
