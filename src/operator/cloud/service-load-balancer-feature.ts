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
import {
  ApiError,
  ApiNetworkError,
  adoptOrCreate,
  type LoadbalancerInstance,
  type LoadbalancerInstanceCreateRequest,
  type PolycrateApiClient,
} from '../../api/index.js'
import type {KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import type {ApiSession} from '../agent/api-session.js'
import {finalizers} from '../conventions.js'
import {Finalizer} from '../runtime/finalizer.js'
import type {Feature} from '../runtime/feature.js'
import {READ} from '../permissions.js'
import {contentChanged} from '../runtime/predicates.js'
import {
  desiredLoadBalancer,
  ingressStatus,
  ingressUpToDate,
  loadBalancerName,
  loadBalancerUpToDate,
  ownsInstance,
  serviceManagement,
  type LbNode,
  type LbService,
  type ServiceScope,
} from './load-balancer.js'

type ServiceObject = KubeObject & LbService
type NodeObject = KubeObject & LbNode

/** How often a Service whose load balancer has no IP yet is polled. */
export const IP_POLL_MS = 2_000


/** Only what the load balancers depend on: Ready, addresses, labels. */
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
export function ServiceLoadBalancerController(session: ApiSession): Feature {
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
      const client = manager.client
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

      const refOf = (service: ServiceObject, subresource?: string) => ({...resources.services, namespace: service.metadata.namespace, name: service.metadata.name, subresource})
      const guard = new Finalizer<ServiceObject>({client, name: finalizer, refOf: (service) => refOf(service)})
      const writeIngress = async (service: ServiceObject, ip: string | undefined, signal: AbortSignal) => {
        if (ingressUpToDate(service, ip)) return
        // A merge patch would merge into the old ingress list's fields; the whole loadBalancer is replaced.
        await client.mergePatch(refOf(service, 'status'), {status: {loadBalancer: {ingress: ingressStatus(ip).ingress ?? null}}}, {signal})
      }
      const apiError = (error: unknown) => error instanceof ApiNetworkError || error instanceof ApiError
      /** The Service's instances: by name (one filtered list), else every instance of the workspace whose consumer_meta names it. */
      const findInstances = async (api: PolycrateApiClient, workspaceId: string, uid: string, signal: AbortSignal) => {
        const byName = await api.loadBalancers.listAll({name_exact: loadBalancerName(uid), workspaces: workspaceId}, {signal})
        if (byName.length > 0) return byName
        return (await api.loadBalancers.listAll({workspaces: workspaceId}, {signal})).filter((instance) => ownsInstance(instance, uid))
      }

      const running = builder.complete(async ({key, logger, signal}) => {
        const service = services.cache.get(key)
        if (!service) return
        const recorder = running.recorder
        const management = serviceManagement(service, scope)
        for (const problem of management.problems) await recorder.record(service, 'Warning', problem.reason, problem.message)
        const wanted = management.managed && !service.metadata.deletionTimestamp
        const api = session.client
        const identity = session.identity
        const uid = service.metadata.uid ?? ''

        if (!wanted) {
          // No longer a managed LoadBalancer, or deleted: the instance goes, then the finalizer.
          if (!guard.has(service)) return
          if (!api || !identity) throw new Error(`cannot delete the load balancer of ${key} yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
          const found = await findInstances(api, identity.workspaceId, uid, signal)
          if (found.length > 0) {
            await recorder.record(service, 'Normal', 'DeletingLoadBalancer', 'Deleting load balancer')
            for (const instance of found) {
              const outcome = await api.loadBalancers.delete(instance.id, {signal})
              logger.info('load balancer deleted from the API', {service: key, apiId: instance.id, outcome})
            }
            await recorder.record(service, 'Normal', 'DeletedLoadBalancer', 'Deleted load balancer')
          }
          if (!service.metadata.deletionTimestamp) await writeIngress(service, undefined, signal)
          await guard.release(service, signal)
          return
        }

        if (!api || !identity) {
          // Right after a start the first health report is still out; a known problem is shown. A session change requeues every Service.
          if (session.problem) await recorder.record(service, 'Warning', 'APINotConnected', `The load balancer waits for the Polycrate API connection: ${session.problem}`)
          return
        }
        const plan = desiredLoadBalancer(service, nodes.cache.list() as NodeObject[], identity.clusterId)
        for (const problem of plan.problems) await recorder.record(service, 'Warning', problem.reason, problem.message)
        if (!plan.desired) return
        if (!identity.organizationId) throw new Error('the Polycrate API did not tell the organization of the workspace; a load balancer needs it')
        await guard.add(service, signal)

        const desired = plan.desired
        let instance: LoadbalancerInstance
        try {
          const [existing] = await findInstances(api, identity.workspaceId, uid, signal)
          const update = (id: string) => api.loadBalancers.update(id, {name: desired.name, display_name: desired.display_name, ports: desired.ports, config: desired.config, consumer_meta: desired.consumer_meta}, {signal})
          if (existing && loadBalancerUpToDate(existing, desired)) {
            instance = existing
          } else if (existing && loadBalancerUpToDate({...existing, config: desired.config}, desired)) {
            // Only the backends changed (a node came, went or changed its address): upstream's node sync event.
            instance = await update(existing.id)
            logger.info('load balancer backends updated in the API', {service: key, apiId: instance.id})
            await recorder.record(service, 'Normal', 'UpdatedLoadBalancer', 'Updated load balancer with new hosts')
          } else {
            await recorder.record(service, 'Normal', 'EnsuringLoadBalancer', 'Ensuring load balancer')
            if (existing) {
              instance = await update(existing.id)
              logger.info('load balancer updated in the API', {service: key, apiId: instance.id})
            } else {
              // A 409 (the create raced another, or its answer was lost) reads the instance back instead.
              const body: LoadbalancerInstanceCreateRequest = {...desired, workspace: identity.workspaceId, organization: identity.organizationId}
              const result = await adoptOrCreate(api.loadBalancers, {lookup: {workspaces: identity.workspaceId}, matches: (candidate) => ownsInstance(candidate, uid), body, signal})
              instance = result.created || loadBalancerUpToDate(result.object, desired) ? result.object : await update(result.object.id)
              logger.info(result.created ? 'load balancer created in the API' : 'existing load balancer adopted', {service: key, apiId: instance.id})
            }
            await recorder.record(service, 'Normal', 'EnsuredLoadBalancer', 'Ensured load balancer')
          }
        } catch (error) {
          if (signal.aborted || !apiError(error)) throw error
          await recorder.record(service, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${(error as Error).message}; retrying with backoff.`)
          throw error
        }
        const ip = instance.ip_address ?? undefined
        await writeIngress(service, ip, signal)
        return ip ? undefined : {requeueAfterMs: IP_POLL_MS}
      }, {resyncPeriodMs: config.api_sync.sync_interval_seconds * 1000}) // an instance changed or deleted on the API side is repaired
      return session.resyncing(running)
    },
  }
}
