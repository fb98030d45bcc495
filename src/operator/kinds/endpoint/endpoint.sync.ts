/**
 * Endpoint sync (`EndpointController`): every Endpoint CR → an endpoint in the Polycrate API, as a declaration on
 * the generic sync feature (sync/engine.ts). The payload (endpoint.payload.ts) is pure; the only lookup is the
 * API id of the K8sApp named by `spec.k8sAppName`, which lands in `status.k8sAppID`.
 */
import type {Endpoint, EndpointRequest} from '../../../api/index.js'
import {endpointCrd, type EndpointSpec} from '../../../crds/endpoint.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {endpointPayload} from './endpoint.payload.js'
import {defineSync} from '../../sync/engine.js'

export function EndpointController(session: ApiSession): Feature<OperatorConfig> {
  return defineSync<EndpointSpec, EndpointRequest, Endpoint, {appId?: string}>(session, {
    name: 'endpoint-sync',
    crd: endpointCrd,
    finalizer: finalizers.endpointSync,
    noun: 'endpoint',
    api: (client) => client.endpoints,
    links: async (object, api, identity, signal) => {
      if (!object.spec.k8sAppName || !identity.clusterId) return {}
      const app = await api.k8sApps.findOne({name_exact: object.spec.k8sAppName, k8s_cluster: identity.clusterId}, {signal})
      return {appId: app?.id}
    },
    payload: (object, {identity, links}) => endpointPayload({
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
      spec: object.spec,
      clusterId: identity.clusterId,
      k8sAppId: links.appId,
    }),
    lookup: (body, identity) => ({name_exact: body.name, ...(identity.clusterId ? {k8s_cluster: identity.clusterId} : {})}),
    inventory: (identity) => (identity.clusterId ? {k8s_cluster: identity.clusterId} : {}),
    // Endpoint names are unique per workspace in the API (409 on a second create).
    naturalKey: {body: (body) => body.name, object: (object) => object.name},
    extraStatus: (links) => (links.appId ? {k8sAppID: links.appId} : {}),
  })
}
