/**
 * The Endpoint kind: Ingress / HTTPRoute discovery → Endpoint CRs, and their sync to the API.
 * Its only public name is `features`: the registry lists the kinds, each kind lists its features (in the order the
 * OperatorConfig status shows them). Everything else in this folder is the kind's own.
 */
import type {ApiSession} from '../../agent/api-session.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import type {Feature} from '../../runtime/feature.js'
import {EndpointDiscoveryReconciler} from './endpoint.discovery.js'
import {EndpointController} from './endpoint.sync.js'

export function features(session: ApiSession): readonly Feature<OperatorConfig>[] {
  return [EndpointDiscoveryReconciler, EndpointController(session)]
}
