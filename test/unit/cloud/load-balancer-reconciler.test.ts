import assert from 'node:assert/strict'
import {ApiNetworkError, ApiServerError} from '../../../src/api/index.js'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {silentLogger} from '../../../src/lib/logger.js'
import {isApiError, LoadBalancerReconciler, type ServiceObject} from '../../../src/operator/cloud/load-balancer-reconciler.js'
import {finalizers} from '../../../src/operator/conventions.js'
import {ObjectCache} from '../../../src/operator/runtime/cache.js'

describe('load balancer reconciler (fake kube client, no API)', () => {
  const cases: Array<[string, unknown, boolean]> = [
    ['network', new ApiNetworkError({method: 'GET', path: '/', cause: 'ECONNRESET', origin: 'http://x', attempts: 1}), true],
    ['5xx', new ApiServerError({method: 'GET', path: '/', errors: [], attempts: 1, status: 502}), true],
    ['a bug', new TypeError('x'), false],
  ]
  for (const [name, error, api] of cases) it(`isApiError: ${name} → ${api}`, () => assert.equal(isApiError(error), api))

  const make = (service: Partial<ServiceObject>, problem?: string) => {
    const calls: string[] = []
    const events: string[] = []
    const client = {
      mergePatch: async (ref: ResourceRef) => {
        calls.push(`patch ${ref.subresource ?? 'object'}`)
        return {}
      },
    } as unknown as KubeClient
    const services = new ObjectCache<ServiceObject>()
    services.upsert({metadata: {name: 's', namespace: 'ns', uid: 'u1', resourceVersion: '1'}, ...service} as ServiceObject)
    const reconciler = new LoadBalancerReconciler({
      session: {client: undefined, identity: undefined, problem}, client, services, nodes: new ObjectCache<KubeObject>(), scope: 'all',
      events: {record: async (_object, type, reason) => { events.push(`${type} ${reason}`) }},
    })
    return {reconciler, calls, events}
  }
  const context = {key: 'ns/s', logger: silentLogger, signal: new AbortController().signal}

  it('not a LoadBalancer, no finalizer: nothing', async () => {
    const {reconciler, calls, events} = make({spec: {type: 'ClusterIP'}} as never)
    assert.equal(await reconciler.reconcile(context), undefined)
    assert.deepEqual([calls, events], [[], []])
  })

  it('no longer wanted, finalizer on, API not connected: an error (retried), nothing released', async () => {
    const {reconciler, calls} = make({spec: {type: 'ClusterIP'}, metadata: {name: 's', namespace: 'ns', uid: 'u1', finalizers: [finalizers.loadBalancerCleanup]}} as never, 'no token')
    await assert.rejects(reconciler.reconcile(context), /cannot delete the load balancer of ns\/s yet: no token/)
    assert.deepEqual(calls, [])
  })

  it('wanted, API not connected: a Warning naming the problem, no finalizer yet', async () => {
    const {reconciler, calls, events} = make({spec: {type: 'LoadBalancer'}} as never, 'no token')
    await reconciler.reconcile(context)
    assert.deepEqual(events, ['Warning APINotConnected'])
    assert.deepEqual(calls, [])
  })
})
