/** The Grafana dashboard (pure): its ConfigMap for the sidecar, its layout, and the panels a team asked for. */
import assert from 'node:assert/strict'
import {DASHBOARD_FILE, DASHBOARD_UID, operatorDashboard, type Dashboard, type Panel} from '../../../src/operator/install/dashboard.js'
import {monitoringObjects} from '../../../src/operator/install/monitoring-objects.js'
import {selectorsOf} from '../../support/promql.js'

type DataPanel = Exclude<Panel, {type: 'row'}>

const dataPanels = (dashboard: Dashboard) => dashboard.panels.filter((panel): panel is DataPanel => panel.type !== 'row')

describe('Grafana dashboard', () => {
  const dashboard = operatorDashboard({namespace: 'ops'})

  it('ships as a ConfigMap labelled for the Grafana sidecar, holding the dashboard as JSON', () => {
    const {dashboard: configMap} = monitoringObjects('ops')
    const object = configMap as {kind: string; metadata: {name: string; namespace: string; labels: Record<string, string>}; data: Record<string, string>}
    assert.equal(object.kind, 'ConfigMap')
    assert.equal(object.metadata.name, 'polycrate-operator-dashboard')
    assert.equal(object.metadata.namespace, 'ops')
    assert.equal(object.metadata.labels.grafana_dashboard, '1')
    assert.deepEqual(Object.keys(object.data), [DASHBOARD_FILE])
    const parsed = JSON.parse(object.data[DASHBOARD_FILE]!) as Dashboard
    assert.deepEqual(parsed, dashboard)
    assert.equal(parsed.uid, DASHBOARD_UID)
    // kubectl apply keeps the last-applied annotation (256 KiB) only for small objects; the sidecar reads any size.
    assert.ok(object.data[DASHBOARD_FILE]!.length < 200_000, `${object.data[DASHBOARD_FILE]!.length} characters`)
  })

  it('preselects the operator\'s namespace and lets every replica be chosen', () => {
    const variables = Object.fromEntries(dashboard.templating.list.map((variable) => [variable.name, variable]))
    assert.deepEqual(Object.keys(variables), ['datasource', 'namespace', 'pod'])
    assert.deepEqual(variables.namespace!.current, {text: 'ops', value: 'ops'})
    assert.equal(variables.pod!.includeAll, true)
    for (const panel of dataPanels(dashboard)) {
      for (const target of panel.targets) {
        for (const {metric, labels} of selectorsOf(target.expr)) {
          if (metric === 'up') continue
          assert.ok(labels.includes('namespace') && labels.includes('pod'), `${panel.title}: ${metric} is not narrowed to $namespace and $pod`)
        }
      }
    }
  })

  it('lays the panels out on the 24-column grid without overlaps; ids and refIds are unique', () => {
    const ids = dashboard.panels.map((panel) => panel.id)
    assert.equal(new Set(ids).size, ids.length)
    const cells = new Set<string>()
    for (const panel of dashboard.panels) {
      const {x, y, w, h} = panel.gridPos
      assert.ok(x >= 0 && w > 0 && x + w <= 24, `${panel.title}: ${JSON.stringify(panel.gridPos)}`)
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          const cell = `${column},${row}`
          assert.ok(!cells.has(cell), `${panel.title} overlaps at ${cell}`)
          cells.add(cell)
        }
      }
    }
    for (const panel of dataPanels(dashboard)) {
      const refIds = panel.targets.map((target) => target.refId)
      assert.equal(new Set(refIds).size, refIds.length, panel.title)
      assert.ok(panel.description.length > 0, `${panel.title}: no description`)
    }
  })

  it('has the panels a team needs, each on the series it is about', () => {
    const metricsOf = (title: string) => {
      const panel = dataPanels(dashboard).find((candidate) => candidate.title === title)
      assert.ok(panel, `no panel "${title}"`)
      return new Set(panel.targets.flatMap((target) => selectorsOf(target.expr).map((selector) => selector.metric)))
    }
    const expected: Record<string, string[]> = {
      'Reconciles per second': ['controller_runtime_reconcile_total'],
      'Reconcile errors per second': ['controller_runtime_reconcile_errors_total'],
      'Queue depth': ['workqueue_depth'],
      'Queue latency (p90)': ['workqueue_queue_duration_seconds_bucket'],
      'Polycrate API requests per second': ['polycrate_api_requests_total'],
      'Heartbeat age': ['polycrate_operator_api_last_heartbeat_timestamp_seconds', 'polycrate_operator_api_sync_interval_seconds'],
      'Webhook calls per second': ['polycrate_dns_webhook_requests_total'],
      'Checks per second': ['polycrate_agent_checks_total'],
      'Check success ratio': ['polycrate_agent_checks_total'],
      Memory: ['container_memory_working_set_bytes', 'kube_pod_container_resource_requests', 'kube_pod_container_resource_limits'],
      CPU: ['container_cpu_usage_seconds_total', 'kube_pod_container_resource_requests', 'kube_pod_container_resource_limits'],
    }
    for (const [title, metrics] of Object.entries(expected)) {
      const used = metricsOf(title)
      for (const metric of metrics) assert.ok(used.has(metric), `${title}: ${metric} missing`)
    }
    const byController = dataPanels(dashboard).find((panel) => panel.title === 'Reconciles per second')!
    assert.match(byController.targets[0]!.expr, /^sum by \(controller, result\)/)
    assert.match(dataPanels(dashboard).find((panel) => panel.title === 'Checks per second')!.targets[0]!.expr, /^sum by \(kind, result\)/)
  })
})
