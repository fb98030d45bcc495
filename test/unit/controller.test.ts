import assert from 'node:assert/strict'
import {KubeApiError, type KubeObject} from '../../src/kube/client.js'
import {ObjectCache} from '../../src/operator/runtime/cache.js'
import {Controller, type Reconciler} from '../../src/operator/runtime/controller.js'
import type {EventHandler, Informer} from '../../src/operator/runtime/informer.js'
import {OperatorMetrics} from '../../src/operator/runtime/metrics.js'
import {specOrMetadataChanged} from '../../src/operator/runtime/predicates.js'

/** Just enough of an Informer for a controller: a cache and handlers the test fires by hand. */
class HandFedInformer {
  readonly cache = new ObjectCache<KubeObject>()
  readonly handlers = new Set<EventHandler<KubeObject>>()
  addHandler(handler: EventHandler<KubeObject>) {
    this.handlers.add(handler)
    return () => this.handlers.delete(handler)
  }
  hasSynced() {
    return true
  }
  add(object: KubeObject) {
    this.cache.upsert(object)
    for (const h of this.handlers) h.onAdd?.(object)
  }
  update(old: KubeObject, object: KubeObject) {
    this.cache.upsert(object)
    for (const h of this.handlers) h.onUpdate?.(old, object)
  }
}

const obj = (name: string, generation = 1, rv = '1'): KubeObject => ({metadata: {name, namespace: 'ns', generation, resourceVersion: rv}})
const until = async (condition: () => boolean, ms = 3000) => {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

function controllerWith(reconcile: Reconciler, options: {workers?: number; predicate?: boolean} = {}) {
  const informer = new HandFedInformer()
  const metrics = new OperatorMetrics({processMetrics: false})
  const controller = new Controller({
    name: 'test',
    reconcile,
    maxConcurrentReconciles: options.workers ?? 2,
    watches: [{informer: informer as unknown as Informer<KubeObject>, onUpdate: options.predicate ? specOrMetadataChanged : undefined}],
    metrics,
  })
  const count = async (name: string, labels: Record<string, string>) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0
  return {informer, controller, metrics, count}
}

describe('Controller', () => {
  it('reconciles each added key; success resets the backoff', async () => {
    const seen: string[] = []
    const {informer, controller, count} = controllerWith(async ({key}) => void seen.push(key))
    controller.start()
    informer.add(obj('a'))
    informer.add(obj('b'))
    await until(() => seen.length === 2)
    await controller.stop()
    assert.deepEqual(seen.sort(), ['ns/a', 'ns/b'])
    assert.equal(await count('controller_runtime_reconcile_total', {controller: 'test', result: 'success'}), 2)
  })

  it('a failing reconcile is counted and retried after its backoff; a throw never escapes', async () => {
    let calls = 0
    const {informer, controller, count} = controllerWith(async () => {
      calls++
      throw new Error('API unreachable')
    })
    controller.start()
    informer.add(obj('a'))
    await until(() => calls === 1)
    await until(() => controller.queue.rateLimiter.retries('ns/a') === 1)
    assert.equal(await count('controller_runtime_reconcile_errors_total', {controller: 'test'}), 1)
    assert.equal(await count('controller_runtime_reconcile_total', {controller: 'test', result: 'error'}), 1)
    assert.equal(calls, 1, 'retried before its 5 s backoff')
    await controller.stop({graceMs: 100})
  })

  it('a programming error (TypeError) is contained and counted as a panic', async () => {
    const {informer, controller, count} = controllerWith(async () => {
      const broken = undefined as unknown as {field: string}
      return void broken.field
    })
    controller.start()
    informer.add(obj('a'))
    await until(() => controller.queue.rateLimiter.retries('ns/a') === 1)
    assert.equal(await count('controller_runtime_reconcile_panics_total', {controller: 'test'}), 1)
    await controller.stop({graceMs: 100})
  })

  it('409 Conflict is requeued at once without counting a failure', async () => {
    let calls = 0
    const {informer, controller, count} = controllerWith(async () => {
      if (++calls === 1) throw new KubeApiError(409, 'Conflict', 'the object has been modified')
    })
    controller.start()
    informer.add(obj('a'))
    await until(() => calls === 2)
    await controller.stop()
    assert.equal(await count('controller_runtime_reconcile_errors_total', {controller: 'test'}), 0)
    assert.equal(await count('controller_runtime_reconcile_total', {controller: 'test', result: 'requeue'}), 1)
    assert.equal(controller.queue.rateLimiter.retries('ns/a'), 0)
  })

  it('requeueAfterMs reconciles the key again later', async () => {
    let calls = 0
    const {informer, controller} = controllerWith(async () => (++calls === 1 ? {requeueAfterMs: 30} : undefined))
    controller.start()
    informer.add(obj('a'))
    await until(() => calls === 2)
    await controller.stop()
  })

  it('one key is never reconciled by two workers at once; a change while it runs reconciles it once more', async () => {
    let active = 0
    let maxActive = 0
    let calls = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const {informer, controller} = controllerWith(async () => {
      calls++
      active++
      maxActive = Math.max(maxActive, active)
      if (calls === 1) await gate
      active--
    }, {workers: 4})
    controller.start()
    informer.add(obj('a', 1, '1'))
    await until(() => calls === 1)
    informer.update(obj('a', 1, '1'), obj('a', 2, '2'))
    informer.update(obj('a', 2, '2'), obj('a', 3, '3'))
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(calls, 1)
    release()
    await until(() => calls === 2)
    await new Promise((resolve) => setTimeout(resolve, 20))
    await controller.stop()
    assert.equal(maxActive, 1)
    assert.equal(calls, 2)
  })

  it('the predicate skips updates that only touch the status', async () => {
    let calls = 0
    const {informer, controller} = controllerWith(async () => void calls++, {predicate: true})
    controller.start()
    informer.add(obj('a', 1, '1'))
    await until(() => calls === 1)
    informer.update(obj('a', 1, '1'), obj('a', 1, '2')) // status write: generation unchanged
    await new Promise((resolve) => setTimeout(resolve, 30))
    assert.equal(calls, 1)
    informer.update(obj('a', 1, '2'), obj('a', 2, '3')) // spec change
    await until(() => calls === 2)
    await controller.stop()
  })

  it('stop drains in-flight reconciles within the grace period, and abortInFlight aborts them', async () => {
    let finished = false
    const {informer, controller} = controllerWith(async () => {
      await new Promise((resolve) => setTimeout(resolve, 50))
      finished = true
    })
    controller.start()
    informer.add(obj('a'))
    await new Promise((resolve) => setTimeout(resolve, 10))
    assert.equal(await controller.stop({graceMs: 1000}), true)
    assert.equal(finished, true)

    let aborted = false
    const second = controllerWith(async ({signal}) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))
      aborted = signal.aborted
    })
    second.controller.start()
    second.informer.add(obj('b'))
    await new Promise((resolve) => setTimeout(resolve, 10))
    await second.controller.stop({graceMs: 1000, abortInFlight: true})
    assert.equal(aborted, true)
  })

  it('resync requeues every cached key; a stopped controller can start again', async () => {
    const seen: string[] = []
    const {informer, controller} = controllerWith(async ({key}) => void seen.push(key))
    controller.start()
    informer.add(obj('a'))
    await until(() => seen.length === 1)
    await controller.stop()
    controller.start()
    controller.resync()
    await until(() => seen.length >= 2)
    await controller.stop()
  })
})
