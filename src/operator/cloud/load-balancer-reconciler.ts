/**
 * The reconcile of one Service of type LoadBalancer (service-load-balancer-feature.ts wires it to a controller):
 * its API load balancer instance ensured (created, adopted, updated) or, once it is no longer wanted, deleted before
 * the finalizer goes; the instance's IP in the Service's status. Events as upstream's service controller writes them.
 */
import {
  ApiError,
  ApiNetworkError,
  adoptOrCreate,
  type LoadbalancerInstance,
  type LoadbalancerInstanceCreateRequest,
  type PolycrateApiClient,
} from '../../api/index.js'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import type {EventRecorder} from '../../kube/events.js'
import {objectRef, resources} from '../../kube/resources.js'
import type {Logger} from '../../lib/logger.js'
import type {ApiIdentity, ApiSession} from '../agent/api-session.js'
import {finalizers} from '../conventions.js'
import type {ObjectCache} from '../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../runtime/controller.js'
import {Finalizer} from '../runtime/finalizer.js'
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
import type {Clock} from '../../lib/clock.js'

export type ServiceObject = KubeObject & LbService
export type NodeObject = KubeObject & LbNode

/** While the API has no IP for an instance yet, look again this soon. */
export const IP_POLL_MS = 2_000


type Desired = NonNullable<ReturnType<typeof desiredLoadBalancer>['desired']>

/** An error of the Polycrate API (then a Warning Event), not a bug. */
export function isApiError(error: unknown): boolean {
  return error instanceof ApiNetworkError || error instanceof ApiError
}

export interface LoadBalancerReconcilerOptions {
  session: Pick<ApiSession, 'client' | 'identity' | 'problem'>
  client: KubeClient
  services: ObjectCache<ServiceObject>
  nodes: ObjectCache<KubeObject>
  scope: ServiceScope
  events: Pick<EventRecorder, 'record'>
  /** The manager's clock (adopt-or-create's post-409 delays). */
  clock?: Clock
}

export class LoadBalancerReconciler {
  readonly finalizer: Finalizer<ServiceObject>

  constructor(private readonly options: LoadBalancerReconcilerOptions) {
    this.finalizer = new Finalizer<ServiceObject>({client: options.client, name: finalizers.loadBalancerCleanup, resource: resources.services})
  }

  async reconcile({key, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    const {services, session, events} = this.options
    const service = services.get(key)
    if (!service) return
    const management = serviceManagement(service, this.options.scope)
    for (const problem of management.problems) await events.record(service, 'Warning', problem.reason, problem.message)
    const wanted = management.managed && !service.metadata.deletionTimestamp
    const api = session.client
    const identity = session.identity
    if (!wanted) return this.remove(service, key, api, identity, logger, signal)
    if (!api || !identity) {
      // Right after a start the first health report is still out; a known problem is shown. A session change requeues every Service.
      if (session.problem) await events.record(service, 'Warning', 'APINotConnected', `The load balancer waits for the Polycrate API connection: ${session.problem}`)
      return
    }
    const plan = desiredLoadBalancer(service, this.options.nodes.list() as NodeObject[], identity.clusterId)
    for (const problem of plan.problems) await events.record(service, 'Warning', problem.reason, problem.message)
    if (!plan.desired) return
    if (!identity.organizationId) throw new Error('the Polycrate API did not tell the organization of the workspace; a load balancer needs it')
    await this.finalizer.add(service, signal)
    let instance: LoadbalancerInstance
    try {
      instance = await this.ensure(service, key, plan.desired, api, identity, logger, signal)
    } catch (error) {
      if (signal.aborted || !isApiError(error)) throw error
      await events.record(service, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${(error as Error).message}; retrying with backoff.`)
      throw error
    }
    const ip = instance.ip_address ?? undefined
    await this.writeIngress(service, ip, signal)
    return ip ? undefined : {requeueAfterMs: IP_POLL_MS}
  }

  /** No longer a managed LoadBalancer, or deleted: the instance goes, then the finalizer. */
  private async remove(service: ServiceObject, key: string, api: PolycrateApiClient | undefined, identity: ApiIdentity | undefined, logger: Logger, signal: AbortSignal): Promise<undefined> {
    const {session, events} = this.options
    if (!this.finalizer.has(service)) return
    if (!api || !identity) throw new Error(`cannot delete the load balancer of ${key} yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
    const found = await this.findInstances(api, identity.workspaceId, service.metadata.uid ?? '', signal)
    if (found.length > 0) {
      await events.record(service, 'Normal', 'DeletingLoadBalancer', 'Deleting load balancer')
      for (const instance of found) {
        const outcome = await api.loadBalancers.delete(instance.id, {signal})
        logger.info('load balancer deleted from the API', {service: key, apiId: instance.id, outcome})
      }
      await events.record(service, 'Normal', 'DeletedLoadBalancer', 'Deleted load balancer')
    }
    if (!service.metadata.deletionTimestamp) await this.writeIngress(service, undefined, signal)
    await this.finalizer.release(service, signal)
    return undefined
  }

  /** The instance as desired: unchanged, its backends updated, updated, adopted or created. */
  private async ensure(service: ServiceObject, key: string, desired: Desired, api: PolycrateApiClient, identity: ApiIdentity, logger: Logger, signal: AbortSignal): Promise<LoadbalancerInstance> {
    const {events} = this.options
    const uid = service.metadata.uid ?? ''
    const [existing] = await this.findInstances(api, identity.workspaceId, uid, signal)
    const update = (id: string) => api.loadBalancers.update(id, {name: desired.name, display_name: desired.display_name, ports: desired.ports, config: desired.config, consumer_meta: desired.consumer_meta}, {signal})
    if (existing && loadBalancerUpToDate(existing, desired)) return existing
    if (existing && loadBalancerUpToDate({...existing, config: desired.config}, desired)) {
      // Only the backends changed (a node came, went or changed its address): upstream's node sync event.
      const instance = await update(existing.id)
      logger.info('load balancer backends updated in the API', {service: key, apiId: instance.id})
      await events.record(service, 'Normal', 'UpdatedLoadBalancer', 'Updated load balancer with new hosts')
      return instance
    }
    await events.record(service, 'Normal', 'EnsuringLoadBalancer', 'Ensuring load balancer')
    let instance: LoadbalancerInstance
    if (existing) {
      instance = await update(existing.id)
      logger.info('load balancer updated in the API', {service: key, apiId: instance.id})
    } else {
      // A 409 (the create raced another, or its answer was lost) reads the instance back instead.
      const body: LoadbalancerInstanceCreateRequest = {...desired, workspace: identity.workspaceId, organization: identity.organizationId!}
      const result = await adoptOrCreate(api.loadBalancers, {lookup: {workspaces: identity.workspaceId}, matches: (candidate) => ownsInstance(candidate, uid), body, signal, clock: this.options.clock})
      instance = result.created || loadBalancerUpToDate(result.object, desired) ? result.object : await update(result.object.id)
      logger.info(result.created ? 'load balancer created in the API' : 'existing load balancer adopted', {service: key, apiId: instance.id})
    }
    await events.record(service, 'Normal', 'EnsuredLoadBalancer', 'Ensured load balancer')
    return instance
  }

  /** The Service's instances: by name (one filtered list), else every instance of the workspace whose consumer_meta names it. */
  private async findInstances(api: PolycrateApiClient, workspaceId: string, uid: string, signal: AbortSignal): Promise<LoadbalancerInstance[]> {
    const byName = await api.loadBalancers.listAll({name_exact: loadBalancerName(uid), workspaces: workspaceId}, {signal})
    if (byName.length > 0) return byName
    return (await api.loadBalancers.listAll({workspaces: workspaceId}, {signal})).filter((instance) => ownsInstance(instance, uid))
  }

  private async writeIngress(service: ServiceObject, ip: string | undefined, signal: AbortSignal): Promise<void> {
    if (ingressUpToDate(service, ip)) return
    // A merge patch would merge into the old ingress list's fields; the whole loadBalancer is replaced.
    await this.options.client.mergePatch(objectRef(resources.services, service, 'status'), {status: {loadBalancer: {ingress: ingressStatus(ip).ingress ?? null}}}, {signal})
  }
}
