/**
 * One read of what `status` shows — the polycrate.io inventory, where the operator runs (presence.ts) and the objects
 * held by its finalizers — used by `status` and by every frame of `status --watch`, so both show the same report.
 */
import type {CrdDefinition} from '../crds/define.js'
import type {KubeClient} from '../kube/client.js'
import {collectInventory, type Inventory} from '../kube/resources-inventory.js'
import {heldObjects} from '../operator/held.js'
import {DEFAULT_NAMESPACE} from '../operator/conventions.js'
import {installedPostureWarnings} from '../operator/install/installed-posture.js'
import {collectPresence, operatorPresence, operatorStatus, type OperatorStatus} from '../operator/install/presence.js'
import {operatorConfigsInScope, statusReport, type StatusReport} from './status-view.js'
import {systemClock} from '../lib/clock.js'

export interface StatusRead {
  report: StatusReport
  operator: OperatorStatus
  missing: Inventory['missing']
  /** What a security review should know of the installed operator (posture.ts), for stderr: not part of the report. */
  posture: string[]
}

export async function readStatus(client: KubeClient, server: string, options: {kinds: CrdDefinition[]; namespace?: string; operatorNamespace?: string; now?: () => number; posture?: boolean}): Promise<StatusRead> {
  const now = options.now ?? systemClock.now
  const inventory = await collectInventory(client, {kinds: options.kinds, namespace: options.namespace, operatorConfigsEverywhere: true})
  const presence = operatorPresence(await collectPresence(client, {namespace: options.operatorNamespace}), now())
  const operator = operatorStatus(presence, {operatorNamespace: options.operatorNamespace, defaultNamespace: DEFAULT_NAMESPACE})
  const held = await heldObjects(client, {namespace: options.namespace})
  // The operator shown and any other installed one (e.g. the external-dns webhook open to every namespace); a
  // warning that cannot be read (RBAC) is left out, as it is not what status is asked for. (`posture: false`: the
  // watch's later reads, which print the report only.)
  const posture = options.posture === false ? [] : await installedPostureWarnings(client, [operator.namespace, ...operator.elsewhere.map((instance) => instance.namespace)]).catch(() => [])
  const scoped = {...inventory, operatorConfigs: operatorConfigsInScope(inventory.operatorConfigs, operator.namespace, options.namespace)}
  return {report: statusReport(server, scoped, now(), held, operator), operator, missing: inventory.missing, posture}
}
