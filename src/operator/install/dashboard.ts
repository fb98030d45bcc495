/**
 * The operator's Grafana dashboard (pure), built from typed panels: controllers (reconcile rate, errors, time),
 * work queues (depth, latency), API sync, the DNS webhooks, the endpoint monitoring agent, and memory and CPU against
 * requests and limits. Shipped as a ConfigMap labelled `grafana_dashboard: "1"`, which the Grafana sidecar
 * (kube-prometheus-stack, the Grafana chart, victoria-metrics-k8s-stack) loads.
 *
 * The operator's series are selected by the scrape job of its metrics Service and the dashboard's `namespace` and
 * `pod` variables; memory and CPU come from cAdvisor and kube-state-metrics (EXTERNAL_SERIES of alerts.ts).
 */
import {OPERATOR_NAME} from '../conventions.js'
import {METRICS_JOB, OPERATOR_CONTAINER} from './alerts.js'

export const DASHBOARD_UID = 'polycrate-operator'
/** The key of the dashboard in the ConfigMap (the sidecar writes it to a file of that name). */
export const DASHBOARD_FILE = 'polycrate-operator.json'
/** The Grafana sidecar's default label for dashboard ConfigMaps. */
export const GRAFANA_DASHBOARD_LABEL = {grafana_dashboard: '1'} as const

export type Unit = 'short' | 's' | 'bytes' | 'percentunit' | 'reqps' | 'ops' | 'none' | 'dateTimeAsIso'

export interface Target {
  refId: string
  expr: string
  legendFormat?: string
  instant?: boolean
  format?: 'time_series' | 'table'
}

export interface GridPos {
  x: number
  y: number
  w: number
  h: number
}

const datasource = {type: 'prometheus', uid: '${datasource}'} as const

interface PanelBase {
  id: number
  title: string
  description: string
  gridPos: GridPos
  datasource: typeof datasource
  targets: Target[]
}

export interface TimeSeriesPanel extends PanelBase {
  type: 'timeseries'
  fieldConfig: {defaults: {unit: Unit; min?: number; max?: number; custom: {fillOpacity: number; lineWidth: number}}; overrides: FieldOverride[]}
  options: {legend: {displayMode: 'table' | 'list'; placement: 'bottom' | 'right'; calcs: string[]}; tooltip: {mode: 'multi' | 'single'; sort: 'desc' | 'none'}}
}

export interface StatPanel extends PanelBase {
  type: 'stat'
  fieldConfig: {defaults: {unit: Unit; thresholds: {mode: 'absolute'; steps: Array<{color: string; value: number | null}>}}; overrides: FieldOverride[]}
  options: {reduceOptions: {calcs: ['lastNotNull']; fields: ''; values: false}; colorMode: 'value' | 'background'; textMode: 'auto' | 'name' | 'value_and_name'; graphMode: 'none' | 'area'}
}

export interface TablePanel extends PanelBase {
  type: 'table'
  fieldConfig: {defaults: {unit: Unit}; overrides: FieldOverride[]}
  options: {showHeader: true}
  transformations: Array<{id: 'organize'; options: {excludeByName: Record<string, boolean>}}>
}

export interface RowPanel {
  type: 'row'
  id: number
  title: string
  collapsed: false
  gridPos: GridPos
  panels: []
}

/** A series drawn differently: requests and limits as dashed lines. */
export interface FieldOverride {
  matcher: {id: 'byRegexp'; options: string}
  properties: Array<{id: 'custom.lineStyle'; value: {fill: 'dash'; dash: number[]}} | {id: 'custom.fillOpacity'; value: number}>
}

export type Panel = TimeSeriesPanel | StatPanel | TablePanel | RowPanel

export interface TemplateVariable {
  name: string
  label: string
  type: 'datasource' | 'query'
  query: string | {query: string; refId: string}
  datasource?: typeof datasource
  current?: {text: string; value: string}
  includeAll?: boolean
  multi?: boolean
  allValue?: string
  refresh?: 1 | 2
  hide: 0
}

export interface Dashboard {
  uid: string
  title: string
  description: string
  tags: string[]
  editable: boolean
  schemaVersion: number
  version: number
  refresh: string
  time: {from: string; to: string}
  timezone: string
  templating: {list: TemplateVariable[]}
  panels: Panel[]
  annotations: {list: []}
  links: []
}

type Size = 'stat' | 'third' | 'half' | 'full'
const widths: Record<Size, number> = {stat: 6, third: 8, half: 12, full: 24}
const heights: Record<Size, number> = {stat: 4, third: 8, half: 8, full: 8}

type PanelSpec =
  | {kind: 'timeseries'; title: string; description: string; unit: Unit; size?: Size; targets: Array<[expr: string, legend: string]>; dashed?: string; min?: number; max?: number}
  | {kind: 'stat'; title: string; description: string; unit: Unit; targets: Array<[expr: string, legend: string]>; thresholds: Array<[color: string, from: number | null]>; textMode?: 'auto' | 'name'}
  | {kind: 'table'; title: string; description: string; size?: Size; expr: string; hide: string[]}

interface RowSpec {
  title: string
  panels: PanelSpec[]
}

/** Lays rows and their panels out on Grafana's 24-column grid (pure). */
function layout(rows: readonly RowSpec[]): Panel[] {
  const panels: Panel[] = []
  let id = 1
  let y = 0
  for (const row of rows) {
    panels.push({type: 'row', id: id++, title: row.title, collapsed: false, gridPos: {x: 0, y, w: 24, h: 1}, panels: []})
    y += 1
    let x = 0
    let lineHeight = 0
    for (const spec of row.panels) {
      const size: Size = spec.kind === 'stat' ? 'stat' : spec.size ?? 'third'
      const w = widths[size]
      const h = heights[size]
      if (x + w > 24) {
        x = 0
        y += lineHeight
        lineHeight = 0
      }
      panels.push(panel(spec, id++, {x, y, w, h}))
      x += w
      lineHeight = Math.max(lineHeight, h)
    }
    y += lineHeight
  }
  return panels
}

const refIds = 'ABCDEFGHIJ'

function panel(spec: PanelSpec, id: number, gridPos: GridPos): Panel {
  const base = {id, title: spec.title, description: spec.description, gridPos, datasource}
  if (spec.kind === 'table') {
    return {
      ...base,
      type: 'table',
      targets: [{refId: 'A', expr: spec.expr, instant: true, format: 'table'}],
      fieldConfig: {defaults: {unit: 'none'}, overrides: []},
      options: {showHeader: true},
      transformations: [{id: 'organize', options: {excludeByName: Object.fromEntries(spec.hide.map((name) => [name, true]))}}],
    }
  }
  const targets = spec.targets.map(([expr, legendFormat], index) => ({refId: refIds[index]!, expr, legendFormat}))
  if (spec.kind === 'stat') {
    return {
      ...base,
      type: 'stat',
      targets: targets.map((target) => ({...target, instant: true})),
      fieldConfig: {defaults: {unit: spec.unit, thresholds: {mode: 'absolute', steps: spec.thresholds.map(([color, value]) => ({color, value}))}}, overrides: []},
      options: {reduceOptions: {calcs: ['lastNotNull'], fields: '', values: false}, colorMode: 'background', textMode: spec.textMode ?? 'auto', graphMode: 'none'},
    }
  }
  return {
    ...base,
    type: 'timeseries',
    targets,
    fieldConfig: {
      defaults: {unit: spec.unit, ...(spec.min === undefined ? {} : {min: spec.min}), ...(spec.max === undefined ? {} : {max: spec.max}), custom: {fillOpacity: 10, lineWidth: 1}},
      overrides: spec.dashed
        ? [{matcher: {id: 'byRegexp', options: spec.dashed}, properties: [{id: 'custom.lineStyle', value: {fill: 'dash', dash: [10, 10]}}, {id: 'custom.fillOpacity', value: 0}]}]
        : [],
    },
    options: {legend: {displayMode: 'table', placement: 'bottom', calcs: ['lastNotNull', 'max']}, tooltip: {mode: 'multi', sort: 'desc'}},
  }
}

/** The dashboard for an operator whose namespace is preselected as `namespace` (pure). */
export function operatorDashboard(options: {namespace: string}): Dashboard {
  const own = (metric: string, extra = '') => `${metric}{job="${METRICS_JOB}",namespace="$namespace",pod=~"$pod"${extra ? `,${extra}` : ''}}`
  const rate = (selector: string) => `rate(${selector}[$__rate_interval])`
  const queries: Queries = {
    own,
    container: (metric, extra = '') => `${metric}{namespace="$namespace",container="${OPERATOR_CONTAINER}",pod=~"$pod"${extra ? `,${extra}` : ''}}`,
    rate,
    p90: (by, bucket) => `histogram_quantile(0.9, sum by (${by}, le) (${rate(bucket)}))`,
  }
  const rows = [overviewRow(queries), controllersRow(queries), workQueuesRow(queries), apiSyncRow(queries), webhooksRow(queries), monitoringRow(queries), resourcesRow(queries)]

  return {
    uid: DASHBOARD_UID,
    title: 'Polycrate operator',
    description: `Controllers, work queues, API sync, DNS webhooks, endpoint monitoring and resources of the Polycrate operator (${OPERATOR_NAME}).`,
    tags: ['polycrate', 'kubernetes-operator'],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: {from: 'now-3h', to: 'now'},
    timezone: 'browser',
    templating: {
      list: [
        {name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', hide: 0},
        {
          name: 'namespace', label: 'Namespace', type: 'query', datasource, refresh: 2, hide: 0,
          query: {query: `label_values(up{job="${METRICS_JOB}"}, namespace)`, refId: 'namespace'},
          current: {text: options.namespace, value: options.namespace},
        },
        {
          name: 'pod', label: 'Replica', type: 'query', datasource, refresh: 2, hide: 0, includeAll: true, multi: true, allValue: '.+',
          query: {query: `label_values(up{job="${METRICS_JOB}",namespace="$namespace"}, pod)`, refId: 'pod'},
          current: {text: 'All', value: '$__all'},
        },
      ],
    },
    panels: layout(rows),
    annotations: {list: []},
    links: [],
  }
}

/** Selectors of the dashboard: the operator's series ($namespace, $pod), its container's (cAdvisor, kube-state-metrics). */
interface Queries {
  own: (metric: string, extra?: string) => string
  container: (metric: string, extra?: string) => string
  /** rate() over Grafana's $__rate_interval. */
  rate: (selector: string) => string
  /** The 90th percentile of a histogram's buckets, by `by`. */
  p90: (by: string, bucket: string) => string
}

function overviewRow({own}: Queries): RowSpec {
  return {
    title: 'Overview',
    panels: [
      {kind: 'stat', title: 'Replicas up', description: 'Scraped replicas that answer (`up`).', unit: 'none', targets: [[`sum(up{job="${METRICS_JOB}",namespace="$namespace"})`, 'up']], thresholds: [['red', null], ['green', 1]]},
      {kind: 'stat', title: 'Leader', description: 'The replica that holds the leader lease.', unit: 'none', textMode: 'name', targets: [[`max by (pod) (${own('leader_election_master_status')}) == 1`, '{{pod}}']], thresholds: [['green', null]]},
      {kind: 'stat', title: 'Features not running', description: 'Enabled features that failed, lack their RBAC rules, miss a polycrate.io CRD or are paused by an invalid OperatorConfig.', unit: 'none', targets: [[`count(${own('polycrate_operator_feature_status', 'state=~"failed|forbidden|crds_missing|paused_invalid_config"')} == 1) or vector(0)`, 'not running']], thresholds: [['green', null], ['red', 1]]},
      {kind: 'stat', title: 'Polycrate API connected', description: 'Whether the leader\'s last heartbeat got through (1) or not (0).', unit: 'none', targets: [[`max(${own('polycrate_operator_api_connected')})`, 'connected']], thresholds: [['red', null], ['green', 1]]},
    ],
  }
}

function controllersRow({own, rate, p90}: Queries): RowSpec {
  return {
    title: 'Controllers',
    panels: [
      {kind: 'timeseries', title: 'Reconciles per second', description: 'By controller and result.', unit: 'ops', targets: [[`sum by (controller, result) (${rate(own('controller_runtime_reconcile_total'))})`, '{{controller}} {{result}}']]},
      {kind: 'timeseries', title: 'Reconcile errors per second', description: 'Failed reconciles by controller (retried with backoff).', unit: 'ops', targets: [[`sum by (controller) (${rate(own('controller_runtime_reconcile_errors_total'))})`, '{{controller}}']]},
      {kind: 'timeseries', title: 'Reconcile time (p90)', description: '90th percentile of the time a reconcile takes, by controller.', unit: 's', targets: [[p90('controller', own('controller_runtime_reconcile_time_seconds_bucket')), '{{controller}}']]},
      {kind: 'timeseries', title: 'Active workers', description: 'Workers busy per controller, against its maximum.', unit: 'none', dashed: '.*max$', targets: [[`sum by (controller) (${own('controller_runtime_active_workers')})`, '{{controller}}'], [`max by (controller) (${own('controller_runtime_max_concurrent_reconciles')})`, '{{controller}} max']]},
      {kind: 'table', title: 'Features', description: 'Each feature\'s state per replica (`polycrate_operator_feature_status`).', size: 'half', expr: `${own('polycrate_operator_feature_status')} == 1`, hide: ['Time', 'Value', '__name__', 'job', 'instance', 'endpoint', 'service', 'container']},
    ],
  }
}

function workQueuesRow({own, rate, p90}: Queries): RowSpec {
  return {
    title: 'Work queues',
    panels: [
      {kind: 'timeseries', title: 'Queue depth', description: 'Items waiting for a worker, by controller.', unit: 'none', targets: [[`sum by (controller) (${own('workqueue_depth')})`, '{{controller}}']]},
      {kind: 'timeseries', title: 'Queue latency (p90)', description: 'How long an item waits before a worker takes it, by controller.', unit: 's', targets: [[p90('controller', own('workqueue_queue_duration_seconds_bucket')), '{{controller}}']]},
      {kind: 'timeseries', title: 'Retries per second', description: 'Items put back with backoff after an error, by controller.', unit: 'ops', targets: [[`sum by (controller) (${rate(own('workqueue_retries_total'))})`, '{{controller}}']]},
    ],
  }
}

function apiSyncRow({own, rate, p90}: Queries): RowSpec {
  return {
    title: 'API sync',
    panels: [
      {kind: 'timeseries', title: 'Polycrate API requests per second', description: 'By HTTP status code ("network": no answer).', unit: 'reqps', targets: [[`sum by (code) (${rate(own('polycrate_api_requests_total'))})`, '{{code}}']]},
      {kind: 'timeseries', title: 'Polycrate API latency (p90)', description: 'By resource.', unit: 's', targets: [[p90('resource', own('polycrate_api_request_duration_seconds_bucket')), '{{resource}}']]},
      {kind: 'timeseries', title: 'Heartbeat age', description: 'Seconds since the last successful heartbeat, against three sync intervals (the alert\'s threshold).', unit: 's', min: 0, dashed: '.*threshold$', targets: [[`time() - max(${own('polycrate_operator_api_last_heartbeat_timestamp_seconds')})`, 'since last heartbeat'], [`3 * max(${own('polycrate_operator_api_sync_interval_seconds')})`, 'alert threshold']]},
      {kind: 'timeseries', title: 'Kubernetes API requests per second', description: 'The operator\'s requests to the apiserver by method and code.', unit: 'reqps', targets: [[`sum by (method, code) (${rate(own('rest_client_requests_total'))})`, '{{method}} {{code}}']]},
    ],
  }
}

function webhooksRow({own, rate, p90}: Queries): RowSpec {
  return {
    title: 'DNS webhooks',
    panels: [
      {kind: 'timeseries', title: 'Webhook calls per second', description: 'By webhook (external-dns, dns01) and HTTP status code.', unit: 'reqps', targets: [[`sum by (webhook, code) (${rate(own('polycrate_dns_webhook_requests_total'))})`, '{{webhook}} {{code}}']]},
      {kind: 'timeseries', title: 'DNS API errors per second', description: 'Failed Polycrate DNS API calls by webhook and operation.', unit: 'ops', targets: [[`sum by (webhook, operation) (${rate(own('polycrate_dns_webhook_api_errors_total'))})`, '{{webhook}} {{operation}}']]},
      {kind: 'timeseries', title: 'Record change time (p90)', description: 'One DNS record write, by webhook and operation.', unit: 's', targets: [[p90('webhook, operation', own('polycrate_dns_webhook_record_change_duration_seconds_bucket')), '{{webhook}} {{operation}}']]},
    ],
  }
}

function monitoringRow({own, rate, p90}: Queries): RowSpec {
  return {
    title: 'Endpoint monitoring',
    panels: [
      {kind: 'timeseries', title: 'Checks per second', description: 'By kind (http, tcp, dns, icmp) and result.', unit: 'ops', targets: [[`sum by (kind, result) (${rate(own('polycrate_agent_checks_total'))})`, '{{kind}} {{result}}']]},
      {kind: 'timeseries', title: 'Check success ratio', description: 'Share of checks that succeeded, by kind.', unit: 'percentunit', min: 0, max: 1, targets: [[`sum by (kind) (${rate(own('polycrate_agent_checks_total', 'result="success"'))}) / sum by (kind) (${rate(own('polycrate_agent_checks_total'))})`, '{{kind}}']]},
      {kind: 'timeseries', title: 'Endpoints', description: 'Assigned to the agent, and those whose last check failed.', unit: 'none', targets: [[`sum(${own('polycrate_agent_assigned_endpoints')})`, 'assigned'], [`count(${own('probe_success')} == 0) or vector(0)`, 'failing']]},
      {kind: 'timeseries', title: 'Schedule delay (p90)', description: 'How late checks start against their schedule (waiting for a free slot).', unit: 's', targets: [[p90('pod', own('polycrate_agent_schedule_delay_seconds_bucket')), '{{pod}}']]},
      {kind: 'timeseries', title: 'Skipped checks and dropped results', description: 'Rounds skipped because the previous check still ran; results dropped from a full buffer.', unit: 'ops', targets: [[`sum(${rate(own('polycrate_agent_checks_skipped_total'))})`, 'skipped'], [`sum(${rate(own('polycrate_agent_results_dropped_total'))})`, 'dropped']]},
      {kind: 'timeseries', title: 'Results waiting', description: 'Check results buffered until the next report to the API.', unit: 'none', targets: [[`sum by (pod) (${own('polycrate_agent_results_buffered')})`, '{{pod}}']]},
    ],
  }
}

function resourcesRow({own, container, rate}: Queries): RowSpec {
  return {
    title: 'Resources',
    panels: [
      {
        kind: 'timeseries', title: 'Memory', size: 'half', unit: 'bytes', dashed: '.*(request|limit)$',
        description: 'Working set (cAdvisor, what the OOM killer compares) and RSS/heap (the process) per replica, against the container\'s request and limit (kube-state-metrics).',
        targets: [
          [`sum by (pod) (${container('container_memory_working_set_bytes')})`, '{{pod}} working set'],
          [`sum by (pod) (${own('process_resident_memory_bytes')})`, '{{pod}} rss'],
          [`sum by (pod) (${own('nodejs_heap_size_used_bytes')})`, '{{pod}} heap used'],
          [`max(${container('kube_pod_container_resource_requests', 'resource="memory"')})`, 'request'],
          [`max(${container('kube_pod_container_resource_limits', 'resource="memory"')})`, 'limit'],
        ],
      },
      {
        kind: 'timeseries', title: 'CPU', size: 'half', unit: 'short', dashed: '.*(request|limit)$',
        description: 'Cores used per replica (cAdvisor, and the process\' own counter), against the container\'s request and limit (kube-state-metrics).',
        targets: [
          [`sum by (pod) (${rate(container('container_cpu_usage_seconds_total'))})`, '{{pod}} container'],
          [`sum by (pod) (${rate(own('process_cpu_seconds_total'))})`, '{{pod}} process'],
          [`max(${container('kube_pod_container_resource_requests', 'resource="cpu"')})`, 'request'],
          [`max(${container('kube_pod_container_resource_limits', 'resource="cpu"')})`, 'limit'],
        ],
      },
      {kind: 'timeseries', title: 'Event loop lag (p99)', description: 'Node.js event loop delay per replica: a busy loop delays every reconcile and probe.', unit: 's', targets: [[`max by (pod) (${own('nodejs_eventloop_lag_p99_seconds')})`, '{{pod}}']]},
    ],
  }
}

/** Every PromQL expression of the dashboard's panels, and the series its variables list labels of. */
export function dashboardExpressions(dashboard: Dashboard): string[] {
  const panels = dashboard.panels.flatMap((panel) => (panel.type === 'row' ? [] : panel.targets.map((target) => target.expr)))
  const variables = dashboard.templating.list.flatMap((variable) => {
    const query = typeof variable.query === 'string' ? variable.query : variable.query.query
    const series = /^label_values\((.+),\s*[a-zA-Z_]+\)$/.exec(query)?.[1]
    return series ? [series] : []
  })
  return [...panels, ...variables]
}
