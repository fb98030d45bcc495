/**
 * What a K8sApp CR becomes in the Polycrate API (pure): the K8sAppRequest body.
 *
 * Decisions:
 * - `name` = spec.name, else the CR name; `namespace` = spec.namespace, else the CR's; `display_name` =
 *   block.display_name when set.
 * - `kind` = spec.kind, else `polycrate` when a block is named, else `external`. `byoa` is always sent: true only
 *   for an external app with spec.byoa (set only on ingress/httproute-sourced CRs), else false — so an app that was
 *   external (or BYOA) before it became a block's app does not keep the flag it had then.
 * - `block` = the resolved block id (block ID linking) only when resolved; an unresolved block is left out, never
 *   sent as null, so a link made elsewhere is not undone.
 * - `installed_version` = spec.installed_version, else block.version; left out when neither is set, and always for
 *   the operator's own app `polycrate-operator`, whose version the API sync feature reports (the running one).
 * - The installation flags follow the action table (k8sapps.ts `installationStatus`); an action outside the table
 *   (or none: an app claimed by annotation) sends only `uninstalled: false`. `active: true` unless the action says
 *   uninstalled: an app the operator marked uninstalled and inactive (CR deleted) is revived when it comes back.
 * - `source` = where it was discovered (secret, pod, ingress, httproute); `created_by_component: 'operator'`.
 */
import type {K8sAppRequest} from '../../../api/requests.js'
import type {K8sAppSpec} from '../../../crds/k8sapp.js'
import {OPERATOR_NAME} from '../../conventions.js'
import {installationStatus} from './k8sapp.mapping.js'

export function k8sAppPayload(
  object: {metadata: {name: string; namespace?: string}; spec: K8sAppSpec},
  clusterId: string,
  blockId?: string,
): K8sAppRequest {
  const {spec} = object
  const name = spec.name ?? object.metadata.name
  const kind = spec.kind ?? (spec.block?.name ? 'polycrate' : 'external')
  const version = name === OPERATOR_NAME ? undefined : spec.installed_version ?? spec.block?.version
  const flags = installationStatus(spec.action)
  const body: K8sAppRequest = {
    name,
    namespace: spec.namespace ?? object.metadata.namespace ?? null,
    kind,
    k8s_cluster: clusterId,
    created_by_component: 'operator',
    ...(flags ?? {uninstalled: false}),
  }
  // A CR that exists is an app that is there: an API app the operator marked uninstalled (its last pod went, a name
  // conflict) comes back active when it is adopted again. Only an uninstall action says otherwise.
  if (!flags?.uninstalled) body.active = true
  if (spec.block?.display_name) body.display_name = spec.block.display_name
  body.byoa = kind === 'external' && spec.byoa === true
  if (blockId) body.block = blockId
  if (version) body.installed_version = version
  if (spec.source?.kind) body.source = spec.source.kind.toLowerCase()
  if (spec.description) body.description = spec.description
  return body
}
