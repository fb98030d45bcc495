/**
 * K8sApp sync (`K8sAppController`): every K8sApp CR → a K8sApp in the Polycrate API (`/api/v1/kubernetes/apps/`),
 * as a declaration on the generic sync feature (an app deleted on the API side is recreated).
 *
 * - Adopt, never duplicate: the natural key is (name, k8s_cluster) — the API's unique constraint — narrowed to the
 *   same namespace (an API app without a namespace, e.g. made by workspace sync, is adopted too). The operator's own
 *   app `polycrate-operator`, which the API sync feature registers, is adopted the same way; its installed_version
 *   stays the API sync feature's (k8sapp.payload.ts).
 * - Block ID linking: the workspace from spec.workspace.name (+ organization): the agent token's own workspace when
 *   the names match, else a lookup by name; then the block by `name_exact` + `workspaces`. `status.block_id` and
 *   `status.installed_version` show what was sent.
 * - A K8sApp claimed by annotation (pod, Ingress, HTTPRoute) is created in the API only once its CR is 3 s old: a
 *   name claimed in two namespaces within moments is a conflict discovery resolves by deleting the CR, and an API
 *   app created in between could only be marked uninstalled (agent tokens may not delete), so it would stay behind.
 * - Deletion (finalizer `polycrate.io/k8sapp-cleanup`): DELETE; agent tokens may not delete K8sApps (403), so the
 *   app is then marked uninstalled and inactive instead, with its pod figures at 0 (no pods, empty details). The
 *   operator's own app is never removed.
 */
import {ApiAuthError, type K8sApp, type K8sAppRequest, type PolycrateApiClient} from '../../../api/index.js'
import {crdResource, type CustomObject} from '../../../crds/define.js'
import {endpointCrd, type EndpointSpec} from '../../../crds/endpoint.js'
import {k8sAppCrd, type K8sAppSpec} from '../../../crds/k8sapp.js'
import type {ApiIdentity, ApiSession} from '../../agent/api-session.js'
import {annotations, finalizers, OPERATOR_NAME} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {READ} from '../../permissions.js'
import type {ReconcileContext} from '../../runtime/controller.js'
import {podStatus} from './k8sapp.pods.js'
import {configHash} from '../../sync/hash.js'
import {k8sAppPayload} from './k8sapp.payload.js'
import {defineSync} from '../../sync/engine.js'
import {objectRef} from '../../../kube/resources.js'

interface Links {
  blockId?: string
  installedVersion?: string
}

/** The API id of the block the CR names, in the workspace it names (undefined when either is not found). */
export async function resolveBlock(spec: K8sAppSpec, api: PolycrateApiClient, identity: ApiIdentity, signal: AbortSignal): Promise<string | undefined> {
  const workspace = spec.workspace
  const blockName = spec.block?.name
  if (!workspace?.name || !blockName) return undefined
  const organizationMatches = !workspace.organization || !identity.organizationName || workspace.organization === identity.organizationName
  let workspaceId: string | undefined
  if (workspace.name === identity.workspaceName && organizationMatches) {
    workspaceId = identity.workspaceId
  } else {
    // Another workspace (a token that sees more than its own): by exact name, in the organization when named.
    for await (const candidate of api.workspaces.list({name: workspace.name}, {signal})) {
      if (candidate.name === workspace.name && (organizationMatches || candidate.organization !== identity.organizationId)) {
        workspaceId = candidate.id
        break
      }
    }
  }
  if (!workspaceId) return undefined
  const block = await api.blocks.findOne({name_exact: blockName, workspaces: workspaceId}, {signal})
  return block?.id
}

/**
 * The pod figures of an app that has no pods (pure): what an uninstalled app reports. The pod-status controller
 * stops at the CR's deletion, so without these the API would keep the last pod's figures for good.
 */
export function noPods(now: Date): Pick<K8sAppRequest, 'pods_total' | 'pods_ready' | 'pods_available' | 'pods_unavailable' | 'pods_restart_count_total' | 'pods_restart_count_last_hour' | 'pods_details' | 'pods_status_hash' | 'pods_status_updated_at'> {
  return {...podStatus([], now.getTime(), configHash), pods_status_updated_at: now.toISOString()}
}

/** How long an annotation-claimed K8sApp CR must exist before its API app is created. */
export const ANNOTATION_APP_SETTLE_MS = 3000

export function K8sAppController(session: ApiSession): Feature<OperatorConfig> {
  return defineSync<K8sAppSpec, K8sAppRequest, K8sApp, Links>(session, {
    name: 'k8sapp-sync',
    crd: k8sAppCrd,
    finalizer: finalizers.k8sAppSync,
    noun: 'K8sApp',
    api: (client) => client.k8sApps,
    requiresCluster: true,
    links: async (object, api, identity, signal) => ({
      blockId: await resolveBlock(object.spec, api, identity, signal),
      installedVersion: k8sAppPayload(object, identity.clusterId ?? '').installed_version ?? undefined,
    }),
    payload: (object, {identity, links}) => k8sAppPayload(object, identity.clusterId!, links.blockId),
    lookup: (body, identity) => ({name_exact: body.name ?? '', k8s_cluster: identity.clusterId}),
    matches: (candidate, body) => !candidate.namespace || candidate.namespace === body.namespace,
    inventory: (identity) => ({k8s_cluster: identity.clusterId}),
    // An app claimed by annotation may be taken back by discovery right away (its name claimed in another namespace
    // a moment later: a conflict); agent tokens cannot delete an API app, so it would stay behind uninstalled.
    createAfterMs: (object) => (object.spec.source && object.spec.source.kind !== 'Secret' ? ANNOTATION_APP_SETTLE_MS : 0),
    extraStatus: (links) => ({
      ...(links.blockId ? {block_id: links.blockId} : {}),
      ...(links.installedVersion ? {installed_version: links.installedVersion} : {}),
    }),
    remove: async (api, id, object, signal, now) => {
      if ((object.spec.name ?? object.metadata.name) === OPERATOR_NAME) return 'kept: the operator\'s own K8sApp belongs to the API sync feature'
      try {
        return await api.k8sApps.delete(id, {signal})
      } catch (error) {
        if (!(error instanceof ApiAuthError && error.forbidden)) throw error
        await api.k8sApps.update(id, {installed: false, installation_running: false, installation_failed: false, uninstalled: true, active: false, ...noPods(new Date(now))}, {signal})
        return 'marked uninstalled and inactive, with no pods (agent tokens may not delete K8sApps)'
      }
    },
  })
}

/**
 * Endpoints learn their K8sApp's API id (`K8sAppEndpointLinker`): an Endpoint often syncs before its K8sApp has an
 * API id (both come from the same Ingress), and the Endpoint sync looks the app up only when the Endpoint changes.
 * So once a K8sApp has its `status.api_id`, each Endpoint CR of its namespace naming it (`spec.k8sAppName`) whose
 * `status.k8sAppID` differs gets the annotation `polycrate_k8sapp_id` = that id: a metadata change, which makes the
 * Endpoint sync link it. The annotation changes only with the id, so nothing is written at rest.
 */
export function K8sAppEndpointLinker(): Feature<OperatorConfig> {
  return {
    name: 'k8sapp-endpoint-link',
    enabled: (config) => config.api_sync.enabled,
    permissions: [
      {group: 'polycrate.io', resource: k8sAppCrd.plural, verbs: READ},
      {group: 'polycrate.io', resource: endpointCrd.plural, verbs: [...READ, 'patch']},
    ],
    settings: () => ({}),
    start(manager) {
      const builder = manager.controller('k8sapp-endpoint-link')
      const appsResource = crdResource(k8sAppCrd)
      const endpointsResource = crdResource(endpointCrd)
      type App = CustomObject<K8sAppSpec, {api_id?: string}>
      type Endpoint = CustomObject<EndpointSpec, {k8sAppID?: string}>
      const apps = builder.for<App>({resource: appsResource, kind: k8sAppCrd.kind})
      const endpoints = builder.watches<Endpoint>({resource: endpointsResource, kind: endpointCrd.kind}, (endpoint) =>
        endpoint.spec?.k8sAppName ? [`${endpoint.metadata.namespace}/${endpoint.spec.k8sAppName}`] : [])
      const running = builder.complete(async ({key, signal}: ReconcileContext) => {
        const app = apps.cache.get(key)
        const id = app?.status?.api_id
        if (!app || !id || app.metadata.deletionTimestamp) return
        const name = app.spec?.name ?? app.metadata.name
        for (const endpoint of endpoints.cache.listNamespace(app.metadata.namespace ?? '')) {
          if (endpoint.spec?.k8sAppName !== name || endpoint.status?.k8sAppID === id || endpoint.metadata.annotations?.[annotations.k8sAppId] === id) continue
          if (endpoint.metadata.deletionTimestamp) continue
          await manager.client.mergePatch(objectRef(endpointsResource, endpoint), {metadata: {annotations: {[annotations.k8sAppId]: id}}}, {signal})
        }
      })
      return {stop: () => running.stop()}
    },
  }
}
