import assert from 'node:assert/strict'
import {ApiAuthError, ApiNetworkError, ApiRateLimitError, ApiServerError, ApiValidationError, type PolycrateApiClient} from '../../../src/api/index.js'
import type {CrdDefinition} from '../../../src/crds/define.js'
import {KubeApiError, type KubeClient, type ResourceRef} from '../../../src/kube/client.js'
import type {ApiIdentity} from '../../../src/operator/agent/api-session.js'
import {ObjectCache} from '../../../src/operator/runtime/cache.js'
import type {SyncDeclaration, SyncObject} from '../../../src/operator/sync/engine.js'
import {InventoryLoader, KEYS_RETRY_MS, type InventoryItem} from '../../../src/operator/sync/inventory-loader.js'
import {configHash} from '../../../src/operator/sync/hash.js'
import {SyncReconciler} from '../../../src/operator/sync/reconciler.js'
import {createDelayMs, failureReason, missingFromInventory} from '../../../src/operator/sync/status.js'
import {silentLogger} from '../../../src/lib/logger.js'
import {FakeTimers} from '../../support/fake-timers.js'

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

  // A process that updated the API object and died (or had its status write refused) before the Synced status
  // recorded the new hash: the status must not keep claiming the old payload, or a spec back at it never reaches the API.
  describe('SyncReconciler: the recorded hash across an update whose status write is lost (a kube and an API that keep state)', () => {
    const crd = {kind: 'Thing', plural: 'things', singular: 'thing'} as unknown as CrdDefinition
    interface Body {name: string; v: string}
    interface Api extends Body {id: string}
    const payloadOf = (v: string): Body => ({name: 'a', v})
    const make = () => {
      const kube = {status: {} as Record<string, unknown>, writes: [] as Array<Record<string, unknown>>, refuse: undefined as undefined | ((status: Record<string, unknown>) => Error | undefined)}
      const stored = {body: payloadOf('A'), updates: 0}
      const client = {
        mergePatch: async (_ref: ResourceRef, patch: {status?: Record<string, unknown>}) => {
          const status = JSON.parse(JSON.stringify(patch.status ?? {})) as Record<string, unknown>
          const refused = kube.refuse?.(status)
          if (refused) throw refused
          kube.writes.push(status)
          for (const [key, value] of Object.entries(status)) {
            if (value === null) delete kube.status[key]
            else kube.status[key] = value
          }
          return {}
        },
      } as unknown as KubeClient
      const resource = {
        async* list(): AsyncGenerator<Api> { yield {id: 'a1', ...stored.body} },
        async get(id: string) { return {id, ...stored.body} },
        async update(id: string, body: Body) {
          stored.body = {...body}
          stored.updates++
          return {id, ...body}
        },
        async create(): Promise<Api> { throw new Error('the API object exists: no create') },
        async delete() {},
      }
      const declaration = {
        name: 'thing-sync', crd, finalizer: 'things.polycrate.io/sync', noun: 'thing',
        api: () => resource,
        payload: (object: SyncObject<{v: string}>) => payloadOf(object.spec.v),
        lookup: (body: Body) => ({name: body.name}),
        inventory: () => ({}),
      } as unknown as SyncDeclaration<{v: string}, Body, Api>
      const objects = new ObjectCache<SyncObject<{v: string}>>()
      const reconciler = new SyncReconciler({
        declaration, session: {client: api, identity, problem: undefined}, client, objects, related: new ObjectCache(),
        events: {record: async () => {}}, inventory: new InventoryLoader<Api>({list: () => resource.list()}, signal),
      })
      let generation = 0
      let spec: string | undefined
      /** The CR with this spec as the cache shows it (a new generation when it changed), the status as kube holds it now. */
      const setSpec = (v: string) => {
        if (v !== spec) generation++
        spec = v
        objects.upsert({
          apiVersion: 'polycrate.io/v1alpha1', kind: 'Thing', spec: {v}, status: structuredClone(kube.status),
          metadata: {name: 'a', namespace: 'ns', resourceVersion: String(kube.writes.length + generation), generation, finalizers: ['things.polycrate.io/sync']},
        })
      }
      // Synced at A: the API object holds A, the status its id and hash.
      kube.status = {api_id: 'a1', config_hash: configHash(payloadOf('A')), phase: 'Synced'}
      return {reconciler, kube, stored, setSpec}
    }
    const context = (abort?: AbortController) => ({key: 'ns/a', logger: silentLogger, signal: abort?.signal ?? signal})
    const syncedWrite = (status: Record<string, unknown>) => status.phase === 'Synced' && typeof status.config_hash === 'string'

    it('the Synced status write refused after the update: the old hash is not written back; the spec back at A reaches the API', async () => {
      const {reconciler, kube, stored, setSpec} = make()
      setSpec('B')
      kube.refuse = (status) => syncedWrite(status) ? new KubeApiError(500, 'InternalError', 'etcd timeout') : undefined
      await assert.rejects(reconciler.reconcile(context()), KubeApiError)
      assert.deepEqual(stored.body, payloadOf('B'))
      assert.equal(kube.status.phase, 'Error')
      assert.notEqual(kube.status.config_hash, configHash(payloadOf('A')), 'the status does not claim the API holds A')
      kube.refuse = undefined
      setSpec('A')
      await reconciler.reconcile(context())
      assert.deepEqual(stored.body, payloadOf('A'))
      assert.equal(kube.status.config_hash, configHash(payloadOf('A')))
    })

    it('the process dies between the update and the Synced status write: the next one, the spec back at A, updates the API', async () => {
      const {reconciler, kube, stored, setSpec} = make()
      setSpec('B')
      const dying = new AbortController()
      kube.refuse = (status) => {
        if (!syncedWrite(status)) return undefined
        dying.abort()
        return new Error('aborted')
      }
      await assert.rejects(reconciler.reconcile(context(dying)))
      assert.deepEqual(stored.body, payloadOf('B'))
      kube.refuse = undefined
      setSpec('A') // a new process: its cache shows the status as kube holds it
      await reconciler.reconcile(context())
      assert.deepEqual(stored.body, payloadOf('A'))
      assert.equal(kube.status.config_hash, configHash(payloadOf('A')))
      assert.equal(kube.status.phase, 'Synced')
    })

    it('writes: an update costs one status write more (the hash cleared first); an unchanged payload writes nothing', async () => {
      const {reconciler, kube, stored, setSpec} = make()
      setSpec('B')
      await reconciler.reconcile(context())
      assert.deepEqual(kube.writes.map((status) => Object.keys(status).join(',')), ['config_hash', 'phase,sync_status,api_id,config_hash,last_synced_at,observed_generation,message,conditions'])
      assert.equal(kube.writes[0]!.config_hash, null)
      assert.equal(stored.updates, 1)
      setSpec('B') // the cache now shows the Synced status: a restart, a resync
      await reconciler.reconcile(context())
      assert.equal(kube.writes.length, 2, 'no write for an unchanged payload: ' + JSON.stringify(kube.writes.slice(2)))
      assert.equal(stored.updates, 1)
    })

    it('an update that fails after the hash was cleared: the next attempt updates again without clearing it twice', async () => {
      const {reconciler, kube, stored, setSpec} = make()
      setSpec('B')
      const update = stored.updates
      kube.refuse = (status) => syncedWrite(status) ? new KubeApiError(409, 'Conflict', 'conflict') : undefined
      await assert.rejects(reconciler.reconcile(context()))
      kube.refuse = undefined
      const before = kube.writes.length
      setSpec('B')
      await reconciler.reconcile(context())
      assert.equal(stored.updates, update + 2)
      assert.deepEqual(kube.writes.slice(before).map((status) => status.phase), ['Synced'], 'no second clearing: it holds no hash')
    })
  })
})
