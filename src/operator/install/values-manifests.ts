/**
 * What `manifests --values` prints and the Helm chart renders (pure): the install plan of the block values with the
 * operator's RBAC, and the objects of it that the values ask for. One function, so that the command and the chart
 * (src/operator/chart/) cannot disagree about which objects belong to a set of values.
 */
import {operatorPermissions} from '../operator.js'
import {installPlan, planObjects, type InstallPlan, type InstallPlanOptions} from './objects.js'
import type {BlockValues} from './values.js'
import type {Permission} from '../permissions.js'
import type {KubeObject} from '../../kube/client.js'

/** Each optional object: included when given true, left out when false; by default as the values say. */
export interface ValuesObjectsChoice {
  /** Default `metrics.enabled`. */
  vmServiceScrape?: boolean
  /** Default `metrics.alerts`. */
  vmRule?: boolean
  /** Default false: printed output cannot see whether the cluster has the Prometheus operator's CRD. */
  prometheusRule?: boolean
  /** Default `metrics.dashboard`. */
  dashboard?: boolean
}

/** `permissions`: the RBAC granted (default: that of the features the values enable, as install grants). */
export function valuesManifests(values: BlockValues, options: InstallPlanOptions & ValuesObjectsChoice & {permissions?: readonly Permission[]} = {}): {plan: InstallPlan; objects: KubeObject[]} {
  const plan = installPlan(values, options.permissions ?? operatorPermissions(values.effectiveSpec), options)
  const objects = planObjects(plan, {
    vmServiceScrape: options.vmServiceScrape ?? values.metrics.enabled,
    vmRule: options.vmRule ?? values.metrics.alerts,
    prometheusRule: options.prometheusRule ?? false,
    dashboard: options.dashboard ?? values.metrics.dashboard,
  })
  return {plan, objects}
}
