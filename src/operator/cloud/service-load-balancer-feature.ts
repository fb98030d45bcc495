/**
 * Service load balancer controller (`ServiceLoadBalancerController`, `cloud_controller.load_balancer.enabled`):
 * every managed Service of type LoadBalancer → one load balancer instance in the Polycrate API
 * (`/api/v1/loadbalancers/instances/`) forwarding each service port to NodeIP:NodePort of the ready nodes; its
 * public IP, once the API knows it, in `status.loadBalancer.ingress`. What is managed and what the instance looks
 * like are the pure `serviceManagement` / `desiredLoadBalancer` (load-balancer.ts). As the upstream service
 * controller (k8s.io/cloud-provider):
 * - the finalizer `service.kubernetes.io/load-balancer-cleanup` is on before the instance can exist; when the
 *   Service is deleted, changes away from type LoadBalancer or stops being managed (annotation, scope, class), the
 *   instance is deleted first, then `status.loadBalancer` cleared and the finalizer removed;
 * - Events `EnsuringLoadBalancer` / `EnsuredLoadBalancer` around each create or port change, `UpdatedLoadBalancer`
 *   when only the nodes changed, `DeletingLoadBalancer` / `DeletedLoadBalancer` around the delete,
 *   `UnAvailableLoadBalancer` without nodes, `SyncLoadBalancerFailed` when the API fails.
 * Level-triggered: each reconcile looks the instance up by its name (adopt-or-create: a restart or a lost answer
 * never makes a second one), compares ports and config with the desired ones and patches only a difference. While
 * the IP is unknown the Service is polled every few seconds. Node changes requeue every managed Service.
 */
import type {KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import type {ApiSession} from '../agent/api-session.js'
import {finalizers} from '../conventions.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {READ} from '../permissions.js'
import {contentChanged} from '../runtime/predicates.js'
import type {ServiceScope} from './load-balancer.js'
import {LoadBalancerReconciler, type NodeObject, type ServiceObject} from './load-balancer-reconciler.js'


export function slimLbNode(node: KubeObject): KubeObject {
  const n = node as NodeObject
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {name: n.metadata?.name, uid: n.metadata?.uid, resourceVersion: n.metadata?.resourceVersion, labels: n.metadata?.labels},
    status: {
      addresses: n.status?.addresses?.map(({type, address}) => ({type, address})),
      conditions: n.status?.conditions?.filter((c) => c.type === 'Ready').map(({type, status}) => ({type, status})),
    },
  } as KubeObject
}

/**
 * Disabled (or the cloud controller off) it keeps its finalizer on Services, as upstream's service controller does:
 * the finalizer guards an API load balancer instance, and releasing it would let a Service's deletion orphan the
 * instance. Enabled again, it finishes the deletions that waited. (Discovery finalizers, which guard nothing outside
 * the cluster, are released instead: the discovery engine.)
 */
export function ServiceLoadBalancerController(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'cloud-load-balancer',
    enabled: (config) => config.cloud_controller.enabled && config.cloud_controller.load_balancer.enabled,
    permissions: [
      // The cleanup finalizer on the Service, the ingress in its status; nodes for the backends.
      {group: '', resource: 'services', verbs: [...READ, 'patch']},
      {group: '', resource: 'services/status', verbs: ['patch']},
      {group: '', resource: 'nodes', verbs: READ},
    ],
    settings: (config) => ({scope: config.cloud_controller.load_balancer.service_scope, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const scope: ServiceScope = config.cloud_controller.load_balancer.service_scope
      const finalizer = finalizers.loadBalancerCleanup
      const builder = manager.controller('cloud-load-balancer')
      const services = builder.for<ServiceObject>({resource: resources.services, kind: 'Service'}, {
        // Own status writes (the ingress) cause no reconcile; spec, metadata and deletion do.
        onUpdate: (old, next) => JSON.stringify([old.spec, old.metadata?.annotations, old.metadata?.finalizers, old.metadata?.deletionTimestamp])
          !== JSON.stringify([next.spec, next.metadata?.annotations, next.metadata?.finalizers, next.metadata?.deletionTimestamp]),
      })
      const lbServiceKeys = () => services.cache.list()
        .filter((service) => service.spec?.type === 'LoadBalancer' || service.metadata.finalizers?.includes(finalizer))
        .map((service) => `${service.metadata.namespace}/${service.metadata.name}`)
      const nodes = builder.watches({resource: resources.nodes, kind: 'Node', transform: slimLbNode}, lbServiceKeys, {onUpdate: contentChanged})

      const reconciler = new LoadBalancerReconciler({
        session, client: manager.client, services: services.cache, nodes: nodes.cache, scope, events: manager.recorder('cloud-load-balancer'), clock: manager.clock,
      })
      // An instance changed or deleted on the API side is repaired at the resync.
      const running = builder.complete((context) => reconciler.reconcile(context), {resyncPeriodMs: config.api_sync.sync_interval_seconds * 1000})
      return session.resyncing(running)
    },
  }
}
