/**
 * Every series an alerting rule or a dashboard panel selects is one the operator exposes — with the labels it has —
 * or one of the documented external series (the scraper's `up`, cAdvisor, kube-state-metrics). The operator's series
 * come from its real registries, filled the way `polycrate operator run` fills them: the manager's OperatorMetrics,
 * the API session's client, the DNS webhooks' and the monitoring agent's metrics on the same registry.
 */
import assert from 'node:assert/strict'
import {ApiSession} from '../../../src/operator/agent/api-session.js'
import {dnsWebhookMetrics} from '../../../src/operator/dns/dns-api.js'
import {alertRuleGroups, EXTERNAL_SERIES} from '../../../src/operator/install/alerts.js'
import {dashboardExpressions, operatorDashboard} from '../../../src/operator/install/dashboard.js'
import {ProbeMetrics} from '../../../src/operator/monitoring/metrics.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {selectorsOf} from '../../support/promql.js'

/** Labels the scraper adds to every series of a Kubernetes target (VMServiceScrape, ServiceMonitor). */
const TARGET_LABELS = ['job', 'namespace', 'pod', 'container', 'service', 'endpoint', 'instance']
/** The labels of the external series the expressions may match on (beyond the target labels). */
const EXTERNAL_LABELS: Record<string, string[]> = {
  up: [],
  container_memory_working_set_bytes: ['image', 'id', 'name'],
  container_cpu_usage_seconds_total: ['image', 'id', 'name', 'cpu'],
  kube_pod_container_resource_limits: ['resource', 'unit', 'node'],
  kube_pod_container_resource_requests: ['resource', 'unit', 'node'],
}

/** Every series name the operator's registry renders, with its label names (histograms: _bucket with le, _sum, _count). */
async function exposedSeries(): Promise<Map<string, readonly string[] | undefined>> {
  const metrics = new OperatorMetrics()
  const {registry} = metrics
  new ApiSession({registry}).clientFor('https://api.example.com', 'agent-token')
  dnsWebhookMetrics(registry)
  ProbeMetrics.for(registry)
  const series = new Map<string, readonly string[] | undefined>()
  for (const family of await registry.getMetricsAsJSON()) {
    const labels = (registry.getSingleMetric(family.name) as {labelNames?: string[]} | undefined)?.labelNames
    const type = String(family.type)
    if (type === 'histogram') {
      series.set(`${family.name}_bucket`, [...labels ?? [], 'le'])
      series.set(`${family.name}_sum`, labels)
      series.set(`${family.name}_count`, labels)
    } else if (type === 'summary') {
      series.set(family.name, [...labels ?? [], 'quantile'])
      series.set(`${family.name}_sum`, labels)
      series.set(`${family.name}_count`, labels)
    } else {
      series.set(family.name, labels)
    }
  }
  return series
}

/** What is wrong with the series the expressions select (empty: nothing), and which metrics they use. */
function seriesProblems(expressions: ReadonlyArray<{where: string; expr: string}>, exposed: ReadonlyMap<string, readonly string[] | undefined>) {
  const problems: string[] = []
  const used = new Set<string>()
  for (const {where, expr} of expressions) {
    for (const {metric, labels} of selectorsOf(expr)) {
      used.add(metric)
      const external = metric in EXTERNAL_SERIES
      if (!external && !exposed.has(metric)) {
        problems.push(`${where}: ${metric} is not exposed by the operator`)
        continue
      }
      // Collected gauges (probe_*) declare no label names: only the target's labels may be matched on.
      const known = external ? EXTERNAL_LABELS[metric] ?? [] : exposed.get(metric) ?? []
      for (const label of labels) if (!TARGET_LABELS.includes(label) && !known.includes(label)) problems.push(`${where}: ${metric} has no label ${label}`)
    }
  }
  return {problems, used}
}

describe('metric names of the alerting rules and the dashboard', () => {
  const rules = alertRuleGroups({namespace: 'polycrate'}).flatMap((group) => group.rules.map((rule) => ({where: `rule ${rule.alert}`, expr: rule.expr})))
  const panels = dashboardExpressions(operatorDashboard({namespace: 'polycrate'})).map((expr) => ({where: 'dashboard', expr}))

  it('every selected series is exposed by the operator with the labels matched on, or is a documented external series', async () => {
    const exposed = await exposedSeries()
    assert.ok(exposed.has('controller_runtime_reconcile_total') && exposed.has('polycrate_agent_checks_total') && exposed.has('polycrate_api_requests_total'), 'the registries are filled')
    assert.ok(panels.length >= 40, `the dashboard's queries were found (${panels.length})`)
    const {problems, used} = seriesProblems([...rules, ...panels], exposed)
    assert.deepEqual(problems, [])
    for (const name of Object.keys(EXTERNAL_SERIES)) {
      assert.ok(!exposed.has(name), `${name} is listed as external but the operator exposes it`)
      assert.ok(used.has(name), `${name} is listed as external but nothing uses it`)
      assert.ok(name in EXTERNAL_LABELS, `${name}: its labels are not listed in this test`)
    }
  })

  it('the check catches a misspelt metric, a label the metric does not have and an expression that is no PromQL', async () => {
    const exposed = await exposedSeries()
    const {problems} = seriesProblems([
      {where: 'a', expr: 'rate(controller_runtime_reconcile_error_total{job="x"}[5m])'},
      {where: 'b', expr: 'sum by (name) (workqueue_depth{queue="x"})'},
      {where: 'c', expr: 'kube_pod_container_resource_limits{resource="memory",phase="Running"}'},
      {where: 'd', expr: 'probe_success{phase="connect"}'},
    ], exposed)
    assert.deepEqual(problems, [
      'a: controller_runtime_reconcile_error_total is not exposed by the operator',
      'b: workqueue_depth has no label queue',
      'c: kube_pod_container_resource_limits has no label phase',
      'd: probe_success has no label phase',
    ])
    assert.throws(() => seriesProblems([{where: 'e', expr: 'sum(rate(workqueue_depth[$__rate_interval])'}], exposed), /not PromQL/)
  })
})
