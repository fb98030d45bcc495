import assert from 'node:assert/strict'
import {ApiAuthError, ApiNetworkError, ApiRateLimitError, ApiServerError, ApiValidationError, type PolycrateApiClient} from '../../src/api/index.js'
import type {CrdDefinition} from '../../src/crds/define.js'
import type {KubeClient, ResourceRef} from '../../src/kube/client.js'
import type {ApiIdentity} from '../../src/operator/agent/api-session.js'
import {ObjectCache} from '../../src/operator/runtime/cache.js'
import type {SyncDeclaration, SyncObject} from '../../src/operator/sync/engine.js'
import {InventoryLoader, KEYS_RETRY_MS, type InventoryItem} from '../../src/operator/sync/inventory-loader.js'
import {SyncReconciler} from '../../src/operator/sync/reconciler.js'
import {createDelayMs, failureReason, missingFromInventory} from '../../src/operator/sync/status.js'
import {silentLogger} from '../../src/lib/logger.js'
import {FakeTimers} from '../support/fake-timers.js'

const init = {method: 'POST', path: '/api/v1/hosts/', errors: [], attempts: 1}
const signal = new AbortController().signal
const api = {} as PolycrateApiClient
const identity = {workspaceId: 'w1', clusterId: 'c1'} as unknown as ApiIdentity

describe('generic sync: the parts of the reconcile', () => {
  describe('failureReason', () => {
    const cases: Array<[string, unknown, string]> = [
      ['network', new ApiNetworkError({method: 'GET', path: '/', cause: 'ECONNRESET', origin: 'http://x', attempts: 1}), 'APIUnavailable'],
      ['503', new ApiServerError({...init, status: 503}), 'APIUnavailable'],
      ['429', new ApiRateLimitError({...init, status: 429}), 'APIUnavailable'],
      ['401', new ApiAuthError({...init, status: 401}), 'SyncFailed'],
      ['a kube or plain error', new Error('x'), 'SyncFailed'],
    ]
    for (const [name, error, reason] of cases) it(`${name} → ${reason}`, () => assert.equal(failureReason(error), reason))
  })

  describe('createDelayMs', () => {
    const now = Date.parse('2026-01-01T00:01:00Z')
    const cases: Array<[string, string | undefined, number | undefined, string | undefined, number]> = [
      ['no delay declared', undefined, undefined, '2026-01-01T00:01:00Z', 0],
      ['has an API id: never waits', 'a1', 30_000, '2026-01-01T00:01:00Z', 0],
      ['new: waits the rest', undefined, 30_000, '2026-01-01T00:00:50Z', 20_000],
      ['old enough: ≤ 0', undefined, 30_000, '2026-01-01T00:00:00Z', -30_000],
    ]
    for (const [name, apiId, after, created, delay] of cases) it(`${name} → ${delay}`, () => assert.equal(createDelayMs(apiId, after, created, now), delay))
    it('no creationTimestamp: NaN, which is not > 0 (creates now)', () => assert.ok(!(createDelayMs(undefined, 30_000, undefined, now) > 0)))
  })

  describe('missingFromInventory', () => {
    const cr = (name: string, apiId?: string, deleting = false) => ({apiVersion: 'v', kind: 'K', metadata: {name, namespace: 'ns', ...(deleting ? {deletionTimestamp: 'x'} : {})}, spec: {}, status: apiId ? {api_id: apiId} : {}})
    const cases: Array<[string, ReturnType<typeof cr>[], string[], string[]]> = [
      ['all listed', [cr('a', '1'), cr('b', '2')], ['1', '2'], []],
      ['one gone', [cr('a', '1'), cr('b', '2')], ['1'], ['ns/b']],
      ['no API id yet: not this check\'s business', [cr('a')], [], []],
      ['being deleted: left to the finalizer', [cr('a', '1', true)], [], []],
    ]
    for (const [name, objects, ids, keys] of cases) it(name, () => assert.deepEqual(missingFromInventory(objects, new Set(ids), 'api_id'), keys))
  })

  describe('InventoryLoader', () => {
    const source = (items: InventoryItem[] | Error) => ({
      calls: 0,
      async* list() {
        this.calls++
        if (items instanceof Error) throw items
        yield* items
      },
      naturalKey: (item: InventoryItem) => `key-${item.id}`,
    })

    it('list: every id; the natural keys of the live ones', async () => {
      const loader = new InventoryLoader(source([{id: '1'}, {id: '2', is_deleted: true}]), signal)
      assert.deepEqual([...await loader.list(api, identity)], ['1', '2'])
      assert.equal(loader.keys.loaded, true)
      assert.equal(loader.keys.absent('key-1'), false)
      assert.equal(loader.keys.absent('key-2'), true)
    })

    it('reset: a new, unloaded set of keys', async () => {
      const loader = new InventoryLoader(source([{id: '1'}]), signal)
      await loader.list(api, identity)
      loader.reset()
      assert.equal(loader.keys.loaded, false)
    })

    it('load: once while loading or loaded; after a failure not again for 10 s', async () => {
      let now = 0
      const failing = source(new Error('down'))
      const loader = new InventoryLoader(failing, signal, () => now)
      now = KEYS_RETRY_MS + 1
      loader.load(api, identity, silentLogger)
      loader.load(api, identity, silentLogger) // still loading
      await new Promise((resolve) => setImmediate(resolve))
      assert.equal(failing.calls, 1)
      now += KEYS_RETRY_MS - 1
      loader.load(api, identity, silentLogger)
      await new Promise((resolve) => setImmediate(resolve))
      assert.equal(failing.calls, 1)
      now += 1
      loader.load(api, identity, silentLogger)
      await new Promise((resolve) => setImmediate(resolve))
      assert.equal(failing.calls, 2)
    })
  })

  describe('SyncReconciler (fake kube client and API)', () => {
    const crd = {kind: 'Thing', plural: 'things', singular: 'thing'} as unknown as CrdDefinition
    interface Api {id: string; name: string; is_deleted?: boolean}
    interface MakeOptions {
      connected?: boolean
      problem?: string
      create?: (body: {name: string}) => Promise<Api>
      clock?: FakeTimers
      createAfterMs?: number
      creationTimestamp?: string
      /** What the API's list answers. */
      listed?: Api[]
      /** The CR is being deleted, with the sync's finalizer on and this status. */
      deleting?: Record<string, unknown>
    }
    const make = (options: MakeOptions = {}) => {
      const calls: string[] = []
      const statuses: Array<Record<string, unknown>> = []
      const client = {
        mergePatch: async (ref: ResourceRef, patch: {metadata?: unknown; status?: Record<string, unknown>}) => {
          if (patch.status) statuses.push(patch.status)
          calls.push(`kube patch ${ref.subresource ?? 'object'} ${patch.status ? `phase=${patch.status.phase} reason=${(patch.status.conditions as Array<{reason: string}>)[0]?.reason}` : ''}`.trim())
          return {}
        },
        getOrUndefined: async () => ({metadata: {name: 'things.polycrate.io'}}),
      } as unknown as KubeClient
      const resource = {
        async* list(): AsyncGenerator<Api> {
          calls.push('api list')
          yield* options.listed ?? []
        },
        async delete(id: string) {
          calls.push(`api delete ${id}`)
        },
        async create(body: {name: string}) {
          calls.push(`api create ${body.name}`)
          return options.create ? options.create(body) : {id: 'a1', name: body.name}
        },
        async update(id: string) {
          calls.push(`api update ${id}`)
          return {id}
        },
        async get(id: string) {
          return {id}
        },
      }
      const declaration = {
        name: 'thing-sync', crd, finalizer: 'things.polycrate.io/sync', noun: 'thing',
        api: () => resource,
        payload: (object: SyncObject<Record<string, unknown>>) => ({name: object.metadata.name}),
        lookup: (body: {name: string}) => ({name: body.name}),
        inventory: () => ({}),
        ...(options.createAfterMs !== undefined ? {createAfterMs: () => options.createAfterMs} : {}),
      } as unknown as SyncDeclaration<Record<string, unknown>, {name: string}, Api>
      const objects = new ObjectCache<SyncObject<Record<string, unknown>>>()
      const events: string[] = []
      const session = {client: options.connected === false ? undefined : api, identity: options.connected === false ? undefined : identity, problem: options.problem}
      const reconciler = new SyncReconciler({
        declaration, session, client, objects, related: new ObjectCache(),
        events: {record: async (_object, type, reason) => { events.push(`${type} ${reason}`) }},
        inventory: new InventoryLoader<Api>({list: () => resource.list()}, signal),
        clock: options.clock,
      })
      const metadata = {name: 'a', namespace: 'ns', resourceVersion: '1', generation: 1, creationTimestamp: options.creationTimestamp,
        ...(options.deleting ? {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['things.polycrate.io/sync']} : {})}
      objects.upsert({apiVersion: 'polycrate.io/v1alpha1', kind: 'Thing', metadata, spec: {}, ...(options.deleting ? {status: options.deleting} : {})})
      return {reconciler, calls, events, statuses}
    }
    const context = {key: 'ns/a', logger: silentLogger, signal}

    it('a new CR: finalizer, lookup, create, Synced status — in this order', async () => {
      const {reconciler, calls, events} = make()
      await reconciler.reconcile(context)
      assert.deepEqual(calls, ['kube patch object', 'api list', 'api create a', 'kube patch status phase=Synced reason=Synced'])
      assert.deepEqual(events, [])
    })

    it('a kind that lets a new CR settle: waits out its createAfterMs on the clock, then creates; the status time is the clock\'s', async () => {
      const clock = new FakeTimers(Date.parse('2026-01-01T00:01:00Z'))
      const {reconciler, calls, statuses} = make({clock, createAfterMs: 30_000, creationTimestamp: '2026-01-01T00:00:50Z'})
      assert.deepEqual(await reconciler.reconcile(context), {requeueAfterMs: 20_000})
      assert.deepEqual(calls, [])
      await clock.advance(19_999)
      assert.deepEqual(await reconciler.reconcile(context), {requeueAfterMs: 1})
      await clock.advance(1)
      assert.equal(await reconciler.reconcile(context), undefined)
      assert.deepEqual(calls, ['kube patch object', 'api list', 'api create a', 'kube patch status phase=Synced reason=Synced'])
      assert.equal(statuses.at(-1)?.last_synced_at, '2026-01-01T00:01:20.000Z')
    })

    describe('a CR being deleted: its API object goes, then the finalizer', () => {
      const cases: Array<[string, Record<string, unknown>, Api[], string[]]> = [
        ['with its API id: deleted by the id, no lookup', {api_id: 'a1'}, [], ['api delete a1', 'kube patch object']],
        // A process killed between the create and the status write: the API object exists, its id was never recorded.
        ['without an API id, the API holds its natural key: found and deleted', {}, [{id: 'a7', name: 'a'}], ['api list', 'api delete a7', 'kube patch object']],
        ['without an API id, nothing in the API: only the finalizer released', {}, [], ['api list', 'kube patch object']],
      ]
      for (const [name, status, listed, calls] of cases) {
        it(name, async () => {
          const made = make({deleting: status, listed})
          assert.equal(await made.reconciler.reconcile(context), undefined)
          assert.deepEqual(made.calls, calls)
        })
      }

      it('without an API id, deleted within its settle time (never created): no lookup, only the finalizer released', async () => {
        // Deleted at 00:00:00, created 10 s before, a settle time of 30 s.
        const made = make({deleting: {}, listed: [{id: 'a7', name: 'a'}], createAfterMs: 30_000, creationTimestamp: '2025-12-31T23:59:50Z'})
        assert.equal(await made.reconciler.reconcile(context), undefined)
        assert.deepEqual(made.calls, ['kube patch object'])
      })
    })

    it('not connected, a known problem: Pending, nothing else', async () => {
      const {reconciler, calls} = make({connected: false, problem: 'no token'})
      await reconciler.reconcile(context)
      assert.deepEqual(calls, ['kube patch status phase=Pending reason=APINotConnected'])
    })

    it('not connected, no problem known yet: nothing written', async () => {
      const {reconciler, calls} = make({connected: false})
      await reconciler.reconcile(context)
      assert.deepEqual(calls, [])
    })

    it('the API refuses the object: Error status, a Warning Event, no retry', async () => {
      const {reconciler, calls, events} = make({create: async () => { throw new ApiValidationError({...init, status: 400}) }})
      assert.equal(await reconciler.reconcile(context), undefined)
      assert.deepEqual(calls.at(-1), 'kube patch status phase=Error reason=Rejected')
      assert.deepEqual(events, ['Warning SyncRejected'])
    })

    it('a transient failure: Error status and the error rethrown (backoff)', async () => {
      const {reconciler, calls} = make({create: async () => { throw new ApiServerError({...init, status: 503}) }})
      await assert.rejects(reconciler.reconcile(context), ApiServerError)
      assert.deepEqual(calls.at(-1), 'kube patch status phase=Error reason=APIUnavailable')
    })
  })
})
