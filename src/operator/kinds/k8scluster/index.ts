/**
 * The K8sCluster kind: K8sCluster CRs registered with the API and probed.
 * Its only public name is `features`: the registry lists the kinds, each kind lists its features (in the order the
 * OperatorConfig status shows them). Everything else in this folder is the kind's own.
 */
import type {ApiSession} from '../../agent/api-session.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import type {Feature} from '../../runtime/feature.js'
import {K8sClusterReconciler} from './k8scluster.reconciler.js'

export function features(session: ApiSession): readonly Feature<OperatorConfig>[] {
  return [K8sClusterReconciler(session)]
}
