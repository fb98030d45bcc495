/**
 * The alerting rules and the dashboard as objects (`metrics.alerts`, `metrics.dashboard` of the block values), and
 * what install and uninstall do with them: the VMRule where VictoriaMetrics' CRD exists, the PrometheusRule where the
 * Prometheus operator's does (like the VMServiceScrape), the dashboard ConfigMap always; each removed again when its
 * setting is turned off.
 */
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {OPERATOR_NAME} from '../conventions.js'
import {alertRuleGroups, prometheusRule, PROMETHEUS_RULE_CRD, vmRule, VM_RULE_CRD} from './alerts.js'
import {applyObject, crdExists, deleteObject, resultOf, type ObjectResult} from './cluster-objects.js'
import {DASHBOARD_FILE, GRAFANA_DASHBOARD_LABEL, operatorDashboard} from './dashboard.js'
import type {BlockValues} from './values.js'

export interface MonitoringObjects {
  vmRule: KubeObject
  prometheusRule: KubeObject
  /** ConfigMap `polycrate-operator-dashboard` labelled for the Grafana sidecar. */
  dashboard: KubeObject
}

const labels = {'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/part-of': 'polycrate', 'app.kubernetes.io/managed-by': 'polycrate-operator-manifests'}

/** The three objects for an operator in `namespace` (pure; whether each is applied is the caller's choice). */
export function monitoringObjects(namespace: string, metrics: Pick<BlockValues['metrics'], 'runbookBaseUrl'> = {}): MonitoringObjects {
  const groups = alertRuleGroups({namespace, runbookBaseUrl: metrics.runbookBaseUrl})
  const meta = (name: string, extra: Record<string, string> = {}) => ({name, namespace, labels: {...labels, ...extra}})
  return {
    vmRule: vmRule(meta(OPERATOR_NAME), groups),
    prometheusRule: prometheusRule(meta(OPERATOR_NAME), groups),
    dashboard: {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(`${OPERATOR_NAME}-dashboard`, GRAFANA_DASHBOARD_LABEL),
      data: {[DASHBOARD_FILE]: JSON.stringify(operatorDashboard({namespace}), null, 2)},
    } as KubeObject,
  }
}

/**
 * Install's step for them: each rule object applied when `metrics.alerts` and its CRD exists (`skipped` without
 * the CRD), deleted when the CRD exists and alerts are off; the dashboard applied or deleted by `metrics.dashboard`.
 */
export async function applyMonitoringObjects(client: KubeClient, objects: MonitoringObjects, metrics: BlockValues['metrics'], report: (result: ObjectResult) => void): Promise<void> {
  for (const [object, crd] of [[objects.vmRule, VM_RULE_CRD], [objects.prometheusRule, PROMETHEUS_RULE_CRD]] as const) {
    if (await crdExists(client, crd)) {
      if (metrics.alerts) report(await applyObject(client, object))
      else reportDeleted(report, await deleteObject(client, object, 'metrics.alerts is false'))
    } else if (metrics.alerts) {
      report(resultOf(object, 'skipped', `the CRD ${crd} is not installed`))
    }
  }
  if (metrics.dashboard) report(await applyObject(client, objects.dashboard))
  else reportDeleted(report, await deleteObject(client, objects.dashboard, 'metrics.dashboard is false'))
}

/** Uninstall's step: whatever of them exists goes. */
export async function deleteMonitoringObjects(client: KubeClient, objects: MonitoringObjects, report: (result: ObjectResult) => void): Promise<void> {
  if (await crdExists(client, VM_RULE_CRD)) reportDeleted(report, await deleteObject(client, objects.vmRule))
  if (await crdExists(client, PROMETHEUS_RULE_CRD)) reportDeleted(report, await deleteObject(client, objects.prometheusRule))
  reportDeleted(report, await deleteObject(client, objects.dashboard))
}

function reportDeleted(report: (result: ObjectResult) => void, result: ObjectResult): void {
  if (result.outcome === 'deleted') report(result)
}
