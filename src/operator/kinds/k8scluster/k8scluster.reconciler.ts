/**
 * K8sCluster registration (`K8sClusterReconciler`).
 * A user-declared K8sCluster CR is probed with its own credentials (the token or kubeconfig in the Secret it names,
 * `spec.caCertificate` trusted): `GET /version`, then an authenticated `GET /api` → `status.reachable`,
 * `kubernetesVersion`, `lastProbedAt` and the phase `Ready` / `Unreachable` / `Unauthorized` / `Error` with a reason
 * that says what to fix; again every sync interval, and at once when the Secret changes (it is watched, metadata
 * only), so a rotated token is picked up without a restart.
 *
 * The API keeps one cluster per workspace: the registered CR holds the slot (while none is: the oldest one whose API
 * server answered, `slotHolder`) and adopts the workspace's cluster (the one `local_cluster` registered, or any) or
 * creates it with `spec.kind` (default generic); it sets the display name and description from the CR. Any other CR
 * gets phase Error, reason WorkspaceHasCluster. The
 * finalizer deletes the API cluster only when this CR created it. Credentials stay inside the reconcile: the probe
 * target is never logged, and no message, Event or status field carries them.
 */
import {crdResource} from '../../../crds/define.js'
import {resources} from '../../../kube/resources.js'
import {k8sClusterCrd} from '../../../crds/k8scluster.js'
import type {KubeObject} from '../../../kube/client.js'
import type {ApiSession} from '../../agent/api-session.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {READ} from '../../permissions.js'
import {specMetadataOrDeletionChanged} from '../../runtime/predicates.js'
import {credentialsRef} from './k8scluster.mapping.js'
import {K8sClusterRegistrar, type ClusterObject} from './k8scluster.registrar.js'



export function K8sClusterReconciler(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'k8s-cluster',
    // A K8sCluster CR is user-declared: there is no switch, the CR is the request.
    enabled: () => true,
    permissions: [
      {group: 'polycrate.io', resource: k8sClusterCrd.plural, verbs: [...READ, 'patch', 'update']},
      {group: 'polycrate.io', resource: `${k8sClusterCrd.plural}/status`, verbs: ['patch']},
      // The credentials Secret a CR names, in the CR's namespace (watched metadata-only, read when probing).
      {group: '', resource: 'secrets', verbs: READ},
    ],
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const builder = manager.controller('k8s-cluster')
      const clusters = builder.for<ClusterObject>({resource: crdResource(k8sClusterCrd), kind: 'K8sCluster'}, {onUpdate: specMetadataOrDeletionChanged})
      // Metadata only: a change of a Secret a CR names (a rotated token) probes that CR again at once.
      builder.watches<KubeObject>({resource: resources.secrets, kind: 'Secret', metadataOnly: true}, (secret) =>
        clusters.cache.list()
          .filter((cluster) => cluster.metadata.namespace === secret.metadata?.namespace && credentialsRef(cluster.spec ?? {})?.name === secret.metadata?.name)
          .map((cluster) => `${cluster.metadata.namespace}/${cluster.metadata.name}`))
      const registrar = new K8sClusterRegistrar({
        session, client: manager.client, clusters: clusters.cache, events: manager.recorder('k8s-cluster'), intervalMs: config.api_sync.sync_interval_seconds * 1000,
        clock: manager.clock,
      })
      const running = builder.complete((context) => registrar.reconcile(context))
      return session.resyncing(running)
    },
  }
}
