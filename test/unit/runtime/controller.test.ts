import assert from 'node:assert/strict'
import {KubeApiError, type KubeObject} from '../../../src/kube/client.js'
import {ObjectCache} from '../../../src/operator/runtime/cache.js'
import {Controller, type Reconciler} from '../../../src/operator/runtime/controller.js'
import type {EventHandler, Informer} from '../../../src/operator/runtime/informer.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {specOrMetadataChanged} from '../../../src/operator/runtime/predicates.js'

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

function controllerWith(reconcile: Reconciler, options: {workers?: number; predicate?: boolean; clock?: FakeTimers; resyncPeriodMs?: number} = {}) {
  const informer = new HandFedInformer()
  const metrics = new OperatorMetrics({processMetrics: false})
  const controller = new Controller({
    name: 'test',
    reconcile,
    maxConcurrentReconciles: options.workers ?? 2,
    watches: [{informer: informer as unknown as Informer<KubeObject>, onUpdate: options.predicate ? specOrMetadataChanged : undefined}],
    metrics,
    clock: options.clock,
    resyncPeriodMs: options.resyncPeriodMs,
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
    await eventually(() => seen.length === 2)
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
    await eventually(() => calls === 1)
    await eventually(() => controller.queue.rateLimiter.retries('ns/a') === 1)
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
    await eventually(() => controller.queue.rateLimiter.retries('ns/a') === 1)
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
    await eventually(() => calls === 2)
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
    await eventually(() => calls === 2)
    await controller.stop()
  })

  it('one key is never reconciled by two workers at once; a change while it runs reconciles it once more', async () => {
    let active = 0
    let maxActive = 0
    let calls = 0
    const others: string[] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const {informer, controller} = controllerWith(async ({key}) => {
      if (key !== 'ns/a') return void others.push(key)
      calls++
      active++
      maxActive = Math.max(maxActive, active)
      if (calls === 1) await gate
      active--
    }, {workers: 4})
    controller.start()
    informer.add(obj('a', 1, '1'))
    await eventually(() => calls === 1)
    informer.update(obj('a', 1, '1'), obj('a', 2, '2'))
    informer.update(obj('a', 2, '2'), obj('a', 3, '3'))
    // The positive signal: a key queued after those updates was reconciled by a free worker.
    informer.add(obj('b'))
    await eventually(() => others.includes('ns/b'))
    assert.equal(calls, 1)
    release()
    await eventually(() => calls === 2)
    // And again: a later key reconciled before the count of 'a' is final.
    informer.add(obj('c'))
    await eventually(() => others.includes('ns/c'))
    await controller.stop()
    assert.equal(maxActive, 1)
    assert.equal(calls, 2)
  })

  it('the predicate skips updates that only touch the status', async () => {
    let calls = 0
    const others: string[] = []
    const {informer, controller} = controllerWith(async ({key}) => void (key === 'ns/a' ? calls++ : others.push(key)), {predicate: true})
    controller.start()
    informer.add(obj('a', 1, '1'))
    await eventually(() => calls === 1)
    informer.update(obj('a', 1, '1'), obj('a', 1, '2')) // status write: generation unchanged
    // The positive signal: an object added after the status write was reconciled.
    informer.add(obj('b'))
    await eventually(() => others.includes('ns/b'))
    assert.equal(calls, 1)
    informer.update(obj('a', 1, '2'), obj('a', 2, '3')) // spec change
    await eventually(() => calls === 2)
    await controller.stop()
  })

  it('stop drains in-flight reconciles within the grace period, and abortInFlight aborts them', async () => {
    let started = false
    let finished = false
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const {informer, controller} = controllerWith(async () => {
      started = true
      await held
      finished = true
    })
    controller.start()
    informer.add(obj('a'))
    await eventually(() => started, 10_000, 'the reconcile in flight')
    const stopping = controller.stop({graceMs: 1000}).then((drained) => ({drained, finished}))
    release()
    assert.deepEqual(await stopping, {drained: true, finished: true}, 'stop resolved after the reconcile in flight had finished')

    let aborted = false
    let entered = false
    const second = controllerWith(async ({signal}) => {
      entered = true
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))
      aborted = signal.aborted
    })
    second.controller.start()
    second.informer.add(obj('b'))
    await eventually(() => entered, 10_000, 'the second reconcile in flight')
    await second.controller.stop({graceMs: 1000, abortInFlight: true})
    assert.equal(aborted, true)
  })

  it('requeueAfterMs and the resync period run on the controller\'s clock (a fake one here)', async () => {
    const clock = new FakeTimers()
    const seen: string[] = []
    const {informer, controller} = controllerWith(async ({key}) => {
      seen.push(key)
      return key === 'ns/a' && seen.filter((k) => k === 'ns/a').length === 1 ? {requeueAfterMs: 5_000} : undefined
    }, {clock, resyncPeriodMs: 60_000})
    controller.start()
    informer.add(obj('a'))
    informer.add(obj('b'))
    await eventually(() => seen.length === 2)
    await clock.advance(4_999)
    assert.deepEqual(seen.filter((k) => k === 'ns/a').length, 1, 'not requeued before 5 s')
    await clock.advance(1)
    await eventually(() => seen.filter((k) => k === 'ns/a').length === 2)
    assert.equal(seen.length, 3, 'only a was requeued')
    await clock.advance(55_000)
    await eventually(() => seen.length === 5)
    assert.deepEqual(seen.slice(3).sort(), ['ns/a', 'ns/b'], 'the resync after 60 s requeues every cached key')
    await clock.advance(60_000)
    await eventually(() => seen.length === 7)
    await controller.stop()
    await clock.advance(120_000)
    assert.equal(seen.length, 7, 'a stopped controller resyncs no more')
  })

  it('resync requeues every cached key; a stopped controller can start again', async () => {
    const seen: string[] = []
    const {informer, controller} = controllerWith(async ({key}) => void seen.push(key))
    controller.start()
    informer.add(obj('a'))
    await eventually(() => seen.length === 1)
    await controller.stop()
    controller.start()
    controller.resync()
    await eventually(() => seen.length >= 2)
    await controller.stop()
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Workers wait for the caches to sync (added with the sync gate).

import {PassThrough} from 'node:stream'
import type {KubeClient} from '../../../src/kube/client.js'
import {Informer as RealInformer} from '../../../src/operator/runtime/informer.js'
import {eventually, never} from '../../support/helpers.js'
import {FakeTimers} from '../../support/fake-timers.js'

/** A HandFedInformer whose sync the test controls: hasSynced/waitForSync as the real Informer has them. */
class GatedInformer extends HandFedInformer {
  readonly name: string
  private synced = false
  private waiters: Array<() => void> = []
  /** How often waitForSync was asked, and whether each call came with a signal. */
  readonly waitCalls: Array<{signal: boolean}> = []
  constructor(name = 'gated') {
    super()
    this.name = name
  }
  override hasSynced() {
    return this.synced
  }
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    this.waitCalls.push({signal: signal !== undefined})
    if (this.synced) return Promise.resolve(true)
    return new Promise((resolve) => {
      const done = () => resolve(this.synced)
      this.waiters.push(done)
      signal?.addEventListener('abort', done, {once: true})
    })
  }
  sync() {
    this.synced = true
    for (const resolve of this.waiters.splice(0)) resolve()
  }
  remove(object: KubeObject) {
    this.cache.remove(object)
    for (const h of this.handlers) h.onDelete?.(object)
  }
}

function gatedController(options: {watched?: GatedInformer | HandFedInformer; reads?: GatedInformer[]} = {}) {
  const seen: string[] = []
  const informer = options.watched ?? new GatedInformer('watched')
  const controller = new Controller({
    name: 'gated',
    reconcile: async ({key}) => void seen.push(key),
    maxConcurrentReconciles: 2,
    watches: [{informer: informer as unknown as Informer<KubeObject>}],
    reads: (options.reads ?? []) as unknown as Informer<KubeObject>[],
  })
  return {seen, informer, controller}
}

describe('Controller: workers wait for the caches to sync', () => {
  const cases: Array<{name: string; make: () => {watched: GatedInformer | HandFedInformer; gate: GatedInformer; reads: GatedInformer[]}}> = [
    {name: 'a watched informer', make: () => {
      const gate = new GatedInformer('watched')
      return {watched: gate, gate, reads: []}
    }},
    {name: 'an informer in reads', make: () => {
      const gate = new GatedInformer('read')
      return {watched: new HandFedInformer(), gate, reads: [gate]}
    }},
  ]

  for (const {name, make} of cases) {
    it(`${name} that has not synced: enqueued keys and informer events wait; after the sync they are reconciled`, async () => {
      const {watched, gate, reads} = make()
      const {seen, controller} = gatedController({watched, reads})
      controller.start()
      assert.equal(controller.hasSynced(), false)
      controller.enqueue('ns/by-hand')
      watched.add(obj('added'))
      watched.update(obj('updated', 1, '1'), obj('updated', 2, '2'))
      // The positive signal: the keys are queued and a worker waits on the unsynced informer.
      await eventually(() => controller.queue.length === 3 && gate.waitCalls.length >= 1, 10_000, 'a worker waiting on the sync')
      assert.deepEqual([...seen], [], 'nothing is reconciled before the sync')
      assert.equal(controller.queue.length, 3, 'the keys wait in the queue')
      assert.ok(gate.waitCalls.length >= 1 && gate.waitCalls.every((call) => call.signal), 'waited on, with the stop signal')

      gate.sync()
      await eventually(() => seen.length === 3)
      assert.deepEqual(seen.sort(), ['ns/added', 'ns/by-hand', 'ns/updated'])
      assert.equal(controller.hasSynced(), true)

      // From now on, keys are reconciled as they come.
      watched.add(obj('later'))
      await eventually(() => seen.includes('ns/later'))
      await controller.stop()
    })
  }

  it('a delete event before the sync is reconciled after it too', async () => {
    const {seen, informer, controller} = gatedController()
    const gate = informer as GatedInformer
    gate.add(obj('a'))
    controller.start()
    gate.remove(obj('a'))
    await eventually(() => controller.queue.length === 1 && gate.waitCalls.length >= 1, 10_000, 'a worker waiting on the sync')
    assert.deepEqual([...seen], [])
    gate.sync()
    await eventually(() => seen.length === 1)
    assert.deepEqual(seen, ['ns/a'])
    await controller.stop()
  })

  it('workers wait for every informer: one synced, one not → still nothing', async () => {
    const first = new GatedInformer('first')
    const second = new GatedInformer('second')
    const {seen, controller} = gatedController({watched: first, reads: [second]})
    controller.start()
    first.add(obj('a'))
    first.sync()
    await eventually(() => second.waitCalls.length >= 1, 10_000, 'a worker waiting on the read informer')
    assert.deepEqual([...seen], [], 'the read informer has not synced yet')
    second.sync()
    await eventually(() => seen.length === 1)
    await controller.stop()
  })

  it('an informer synced before start: no waiting at all', async () => {
    const gate = new GatedInformer('early')
    gate.sync()
    const {seen, controller} = gatedController({watched: gate})
    controller.start()
    gate.add(obj('a'))
    await eventually(() => seen.length === 1)
    await controller.stop()
    assert.equal(gate.waitCalls.length, 0)
  })

  it('stop() before the sync resolves, and nothing is ever reconciled, even if the informer syncs afterwards', async () => {
    const {seen, informer, controller} = gatedController()
    const gate = informer as GatedInformer
    // A witness on the same informer, left running: once it has reconciled ns/c, the stopped one would have too.
    const witness = gatedController({watched: gate})
    witness.controller.start()
    controller.start()
    controller.enqueue('ns/a')
    gate.add(obj('b'))
    await eventually(() => gate.waitCalls.length >= 2, 10_000, 'both controllers waiting on the sync')
    assert.deepEqual([...seen], [])
    assert.equal(await controller.stop({graceMs: 1000}), true, 'stop resolves (nothing was in flight)')
    assert.equal(controller.isRunning, false)
    gate.sync()
    gate.add(obj('c'))
    controller.enqueue('ns/d')
    assert.equal(controller.queue.length, 0, 'a stopped controller queues nothing')
    await never(() => seen.length > 0, () => witness.seen.includes('ns/c'), 'a reconcile of the stopped controller')
    await witness.controller.stop()
  })

  it('a controller stopped before the sync can start again, and then reconciles once synced', async () => {
    const {seen, informer, controller} = gatedController()
    const gate = informer as GatedInformer
    controller.start()
    controller.enqueue('ns/dropped')
    await controller.stop()
    const waits = gate.waitCalls.length
    controller.start()
    controller.enqueue('ns/a')
    await eventually(() => gate.waitCalls.length > waits, 10_000, 'a worker of the new start waiting on the sync')
    assert.deepEqual([...seen], [])
    gate.sync()
    // ns/dropped was queued before ns/a (a FIFO queue): had the stop kept it, it would have been reconciled first.
    await eventually(() => seen.includes('ns/a'))
    await controller.stop()
    assert.deepEqual([...seen], ['ns/a'])
  })
})

describe('Controller: with a real Informer whose initial list has not returned', () => {
  /** A client whose first list answers only when the test says so; the watch then hangs until aborted. */
  function gatedClient(items: KubeObject[]) {
    let answer!: () => void
    const listed = new Promise<void>((resolve) => (answer = resolve))
    const client = {
      request: async () => {
        await listed
        return {metadata: {resourceVersion: '10'}, items}
      },
      stream: async (options: {signal?: AbortSignal}) => {
        const stream = new PassThrough()
        options.signal?.addEventListener('abort', () => stream.destroy())
        return stream
      },
    } as unknown as KubeClient
    return {client, answer}
  }

  /** Counts the calls of the informer's waitForSync (a worker waiting on the cache). */
  function countWaits(informer: RealInformer) {
    const waits = {count: 0}
    const original = informer.waitForSync.bind(informer)
    informer.waitForSync = (signal?: AbortSignal) => {
      waits.count++
      return original(signal)
    }
    return waits
  }

  it('the objects of the initial list are reconciled once it has returned; stop() before it returns resolves', async () => {
    const {client, answer} = gatedClient([obj('a'), obj('b')])
    const informer = new RealInformer({client, resource: {group: '', version: 'v1', plural: 'configmaps'}})
    const seen: string[] = []
    const controller = new Controller({name: 'real', reconcile: async ({key}) => void seen.push(key), watches: [{informer}]})
    const waits = countWaits(informer)
    informer.start()
    controller.start()
    controller.enqueue('ns/by-hand')
    await eventually(() => waits.count === 1, 10_000, 'the workers waiting on the list')
    assert.deepEqual([...seen], [])
    answer()
    await eventually(() => seen.length === 3)
    assert.deepEqual(seen.sort(), ['ns/a', 'ns/b', 'ns/by-hand'])
    await controller.stop()
    await informer.stop()

    const gated = gatedClient([obj('c')])
    const unsynced = new RealInformer({client: gated.client, resource: {group: '', version: 'v1', plural: 'configmaps'}})
    const stopped: string[] = []
    const other = new Controller({name: 'never', reconcile: async ({key}) => void stopped.push(key), watches: [], reads: [unsynced]})
    // A witness reading the same informer, left running: once it has reconciled ns/y, the stopped one would have too.
    const witnessed: string[] = []
    const witness = new Controller({name: 'witness', reconcile: async ({key}) => void witnessed.push(key), watches: [], reads: [unsynced]})
    const unsyncedWaits = countWaits(unsynced)
    unsynced.start()
    other.start()
    witness.start()
    other.enqueue('ns/x')
    witness.enqueue('ns/y')
    await eventually(() => unsyncedWaits.count === 2, 10_000, 'both controllers waiting on the list')
    assert.equal(await other.stop({graceMs: 1000}), true)
    gated.answer()
    await never(() => stopped.length > 0, () => witnessed.includes('ns/y'), 'a reconcile of the stopped controller')
    await witness.stop()
    await unsynced.stop()
  })
})
