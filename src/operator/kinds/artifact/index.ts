/**
 * The Artifact kind: the images of the K8sApps' pods → cluster-scoped Artifact CRs.
 * Its only public name is `features`: the registry lists the kinds, each kind lists its features (in the order the
 * OperatorConfig status shows them). Everything else in this folder is the kind's own.
 */
import type {ApiSession} from '../../agent/api-session.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import type {Feature} from '../../runtime/feature.js'
import {ArtifactDiscoveryReconciler} from './artifact.discovery.js'

export function features(_session: ApiSession): readonly Feature<OperatorConfig>[] {
  return [ArtifactDiscoveryReconciler]
}
