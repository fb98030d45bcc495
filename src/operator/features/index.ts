import {createApiSyncFeature} from '../agent/api-sync-feature.js'
import type {ApiSession} from '../agent/api-session.js'
import {endpointDiscoveryFeature} from '../discovery/endpoint-discovery-feature.js'
import {createEndpointSyncFeature} from '../sync/endpoint-sync-feature.js'
import type {Feature} from '../features.js'

/** Every feature the operator runs, in the order they appear in the OperatorConfig status. */
export function defaultFeatures(session: ApiSession): readonly Feature[] {
  return [createApiSyncFeature(session), endpointDiscoveryFeature, createEndpointSyncFeature(session)]
}
