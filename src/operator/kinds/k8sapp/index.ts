/**
 * The K8sApp kind: meta Secret, pod and route discovery → K8sApp CRs, their sync to the API, their pods' status and the Endpoint links.
 * Its only public name is `features`: the registry lists the kinds, each kind lists its features (in the order the
 * OperatorConfig status shows them). Everything else in this folder is the kind's own.
 */
import type {ApiSession} from '../../agent/api-session.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import type {Feature} from '../../runtime/feature.js'
import {K8sAppDiscoveryReconciler} from './k8sapp.discovery.js'
import {K8sAppPodStatusController} from './k8sapp.pod-status.js'
import {K8sAppController, K8sAppEndpointLinker} from './k8sapp.sync.js'

export function features(session: ApiSession): readonly Feature<OperatorConfig>[] {
  return [K8sAppDiscoveryReconciler, K8sAppController(session), K8sAppPodStatusController(session), K8sAppEndpointLinker()]
}
