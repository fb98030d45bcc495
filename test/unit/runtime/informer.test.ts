import assert from 'node:assert/strict'
import {PassThrough} from 'node:stream'
import {KubeApiError, KubeConnectionError, type KubeClient, type KubeObject, type RequestOptions} from '../../../src/kube/client.js'
import {Informer} from '../../../src/operator/runtime/informer.js'
import {eventually, never} from '../../support/helpers.js'

/**
 * A scripted stand-in for the API server's list and watch endpoints: each list/watch call takes the next step
 * of its script. Only what the informer calls is implemented.
 */
class ScriptedServer {
  lists: Array<{items: KubeObject[]; rv: string; continue?: string} | Error> = []
  watches: Array<(stream: PassThrough) => void | Error> = []
  listCalls: RequestOptions[] = []
  watchCalls: RequestOptions[] = []

  client(): KubeClient {
    return {
      request: async (options: RequestOptions) => {
        this.listCalls.push(options)
        const step = this.lists.shift()
        if (!step) throw new KubeConnectionError('fake', 'ECONNREFUSED', 'no more lists scripted')
        if (step instanceof Error) throw step
        return {metadata: {resourceVersion: step.rv, continue: step.continue}, items: step.items}
      },
      stream: async (options: RequestOptions) => {
        this.watchCalls.push(options)
        const step = this.watches.shift()
        const stream = new PassThrough()
        options.signal?.addEventListener('abort', () => stream.destroy())
        if (!step) return stream // hang until aborted
        const result = step(stream)
        if (result instanceof Error) throw result
        return stream
      },
    } as unknown as KubeClient
  }
}

const obj = (name: string, rv: string, extra: Record<string, unknown> = {}): KubeObject => ({
  metadata: {name, namespace: 'ns', resourceVersion: rv, managedFields: [{manager: 'x'}], ...extra},
})
const line = (type: string, object: KubeObject) => JSON.stringify({type, object}) + '\n'

function informerFor(server: ScriptedServer, options: Partial<ConstructorParameters<typeof Informer>[0]> = {}) {
  return new Informer({
    client: server.client(),
    resource: {group: '', version: 'v1', plural: 'configmaps'},
    random: () => 0, // shortest watch timeout
    backoff: {initialMs: 10, maxMs: 40},
    ...options,
  })
}

describe('Informer (list/watch loop)', () => {
  it('lists page by page, strips managedFields, then watches from the list\'s resourceVersion with bookmarks', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [obj('a', '1')], rv: '10', continue: 'page2'}, {items: [obj('b', '2')], rv: '10'})
    const informer = informerFor(server, {pageSize: 1})
    const adds: string[] = []
    informer.addHandler({onAdd: (o) => adds.push(o.metadata!.name!)})
    informer.start()
    await informer.waitForSync()
    await eventually(() => server.watchCalls.length === 1)
    await informer.stop()
    assert.deepEqual(adds, ['a', 'b'])
    assert.equal(server.listCalls[0]!.query!.limit, 1)
    assert.equal(server.listCalls[1]!.query!.continue, 'page2')
    const watch = server.watchCalls[0]!.query!
    assert.equal(watch.resourceVersion, '10')
    assert.equal(watch.allowWatchBookmarks, true)
    assert.equal(watch.timeoutSeconds, 300)
    assert.equal('managedFields' in (informer.cache.get('ns/a')!.metadata ?? {}), false)
  })

  it('applies watch events to the cache and tells handlers; bookmarks only move the resourceVersion', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [obj('a', '1')], rv: '10'})
    server.watches.push((s) => {
      s.write(line('MODIFIED', obj('a', '11')))
      s.write(line('ADDED', obj('c', '12')))
      s.write(line('BOOKMARK', {metadata: {resourceVersion: '15'}}))
      s.end(line('DELETED', obj('a', '16')))
    })
    const informer = informerFor(server)
    const events: string[] = []
    informer.addHandler({
      onAdd: (o) => events.push(`add ${o.metadata!.name}`),
      onUpdate: (old, o) => events.push(`update ${o.metadata!.name} ${old.metadata!.resourceVersion}→${o.metadata!.resourceVersion}`),
      onDelete: (o) => events.push(`delete ${o.metadata!.name}`),
    })
    informer.start()
    await eventually(() => server.watchCalls.length === 2)
    await informer.stop()
    assert.deepEqual(events, ['add a', 'update a 1→11', 'add c', 'delete a'])
    assert.equal(server.watchCalls[1]!.query!.resourceVersion, '16', 'the next watch resumes from the last event')
    assert.deepEqual(informer.cache.keys(), ['ns/c'])
  })

  it('410 Gone in the stream → relist; objects gone meanwhile are reported deleted', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [obj('a', '1'), obj('b', '2')], rv: '10'}, {items: [obj('b', '3')], rv: '20'})
    server.watches.push((s) => {
      s.write(JSON.stringify({type: 'ERROR', object: {code: 410, reason: 'Expired', message: 'too old'}}) + '\n')
    })
    const informer = informerFor(server)
    const events: string[] = []
    informer.addHandler({
      onUpdate: (_, o) => events.push(`update ${o.metadata!.name}`),
      onDelete: (o) => events.push(`delete ${o.metadata!.name}`),
    })
    informer.start()
    await eventually(() => server.watchCalls.length === 2)
    await informer.stop()
    assert.equal(server.listCalls.length, 2)
    assert.equal(server.watchCalls[1]!.query!.resourceVersion, '20')
    assert.deepEqual(events.sort(), ['delete a', 'update b'])
  })

  it('a list older than what it already saw (a lagging apiserver: time travel) is not applied; the next, current one is', async () => {
    const server = new ScriptedServer()
    server.lists.push(
      {items: [obj('a', '5')], rv: '10'},
      {items: [obj('a', '5'), obj('gone', '8')], rv: '12'}, // stale: 'gone' was deleted at 14, 'a' updated at 15
      {items: [obj('a', '15')], rv: '20'},
    )
    server.watches.push((s) => {
      s.write(line('ADDED', obj('gone', '13')))
      s.write(line('DELETED', obj('gone', '14')))
      s.write(line('MODIFIED', obj('a', '15')))
      s.write(JSON.stringify({type: 'ERROR', object: {code: 410, reason: 'Expired', message: 'too old'}}) + '\n')
    })
    const informer = informerFor(server)
    const events: string[] = []
    informer.addHandler({
      onAdd: (o) => events.push(`add ${o.metadata!.name}@${o.metadata!.resourceVersion}`),
      onUpdate: (_, o) => events.push(`update ${o.metadata!.name}@${o.metadata!.resourceVersion}`),
      onDelete: (o) => events.push(`delete ${o.metadata!.name}`),
    })
    informer.start()
    await eventually(() => server.watchCalls.length === 2)
    await informer.stop()
    assert.equal(server.listCalls.length, 3)
    assert.equal(server.watchCalls[1]!.query!.resourceVersion, '20')
    // never 'add gone' again, never 'a' back at 5
    assert.deepEqual(events, ['add a@5', 'add gone@13', 'delete gone', 'update a@15'])
    assert.deepEqual(informer.cache.list().map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`), ['a@15'])
  })

  it('410 Gone as the HTTP status of the watch → relist', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [], rv: '10'}, {items: [], rv: '30'})
    server.watches.push(() => new KubeApiError(410, 'Expired', 'too old'))
    const informer = informerFor(server)
    informer.start()
    await eventually(() => server.watchCalls.length === 2)
    await informer.stop()
    assert.equal(server.listCalls.length, 2)
    assert.equal(server.watchCalls[1]!.query!.resourceVersion, '30')
  })

  it('other errors (list refused, watch 500, connection reset) are retried with backoff, never given up', async () => {
    const server = new ScriptedServer()
    server.lists.push(new KubeConnectionError('fake', 'ECONNREFUSED', 'down'), new KubeApiError(403, 'Forbidden', 'no'), {items: [obj('a', '1')], rv: '10'})
    server.watches.push(
      () => new KubeApiError(500, 'InternalError', 'boom'),
      (s) => void s.destroy(new Error('ECONNRESET')),
    )
    const informer = informerFor(server)
    informer.start()
    await eventually(() => server.watchCalls.length === 3, 5000, 'a third watch')
    await informer.stop()
    assert.equal(server.listCalls.length, 3, 'a failed watch resumes from its resourceVersion instead of relisting')
    assert.equal(server.watchCalls[2]!.query!.resourceVersion, '10')
    assert.ok(informer.hasSynced())
  })

  it('a silent watch is abandoned after the idle timeout and started again', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [], rv: '10'})
    server.watches.push(() => {}) // connected, never says anything
    const informer = informerFor(server, {idleTimeoutMs: 50})
    informer.start()
    await eventually(() => server.watchCalls.length === 2, 10_000, 'a second watch')
    await informer.stop()
  })

  it('a handler added after sync first gets every cached object; a throwing handler does not stop the loop', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [obj('a', '1'), obj('b', '1')], rv: '10'})
    server.watches.push((s) => void s.write(line('ADDED', obj('c', '11'))))
    const informer = informerFor(server)
    informer.addHandler({onAdd: () => {
      throw new Error('bad handler')
    }})
    informer.start()
    await informer.waitForSync()
    const late: string[] = []
    informer.addHandler({onAdd: (o) => late.push(o.metadata!.name!)})
    await eventually(() => late.length === 3)
    await informer.stop()
    assert.deepEqual(late, ['a', 'b', 'c'])
  })

  it('metadata-only informers ask for PartialObjectMetadata', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [], rv: '1'})
    const informer = informerFor(server, {metadataOnly: true})
    informer.start()
    await eventually(() => server.watchCalls.length === 1)
    await informer.stop()
    assert.match(server.listCalls[0]!.accept!, /as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1/)
    assert.match(server.watchCalls[0]!.accept!, /as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1/)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Sync state, before and after the first list.

/** A client whose list calls wait until the test answers them (or the call is aborted); watches hang until aborted. */
function heldListClient() {
  const pending: Array<{resolve: (page: unknown) => void}> = []
  const client = {
    request: (options: RequestOptions) => new Promise((resolve, reject) => {
      const aborted = () => reject(Object.assign(new Error('aborted'), {name: 'AbortError'}))
      if (options.signal?.aborted) return aborted()
      pending.push({resolve})
      options.signal?.addEventListener('abort', aborted, {once: true})
    }),
    stream: async (options: RequestOptions) => {
      // Like the real client: a call made with an aborted signal fails at once.
      if (options.signal?.aborted) throw Object.assign(new Error('aborted'), {name: 'AbortError'})
      const stream = new PassThrough()
      options.signal?.addEventListener('abort', () => stream.destroy())
      return stream
    },
  } as unknown as KubeClient
  const answer = (items: KubeObject[], rv = '10') => pending.shift()!.resolve({metadata: {resourceVersion: rv}, items})
  return {client, pending, answer}
}

describe('Informer (sync state)', () => {
  const configmaps = {group: '', version: 'v1', plural: 'configmaps'}

  it('has not synced until the first list returns; every waiter is told then, and later waiters at once', async () => {
    const held = heldListClient()
    const informer = new Informer({client: held.client, resource: configmaps})
    const early = informer.waitForSync()
    informer.start()
    await eventually(() => held.pending.length === 1)
    assert.equal(informer.hasSynced(), false)
    let earlyDone = false
    void early.then(() => (earlyDone = true))
    // The sign: a later waiter, let go by its signal, has been told (false); the early one would have been by then.
    const later = new AbortController()
    let laterTold: boolean | undefined
    void informer.waitForSync(later.signal).then((synced) => (laterTold = synced))
    later.abort()
    await never(() => earlyDone, () => laterTold === false, 'the early waiter told before the list returned')
    held.answer([obj('a', '1')])
    assert.equal(await early, true)
    assert.equal(informer.hasSynced(), true)
    assert.equal(await informer.waitForSync(), true)
    assert.deepEqual(informer.cache.keys(), ['ns/a'])
    await informer.stop()
  })

  it('waitForSync with a signal resolves false when the signal aborts first', async () => {
    const held = heldListClient()
    const informer = new Informer({client: held.client, resource: configmaps})
    informer.start()
    const abort = new AbortController()
    const waiting = informer.waitForSync(abort.signal)
    abort.abort()
    assert.equal(await waiting, false)
    await informer.stop()
  })

  // An 'abort' listener added after the event fired would never run: the promise would stay pending until the
  // informer syncs (forever, if it never does).
  it('waitForSync with a signal that is aborted already resolves false at once', async () => {
    const held = heldListClient()
    const informer = new Informer({client: held.client, resource: configmaps})
    informer.start()
    let outcome: boolean | string = 'still pending'
    void informer.waitForSync(AbortSignal.abort()).then((synced) => (outcome = synced))
    // The sign: a waiter asked after it, let go by its signal, has been told; "at once" is before that.
    const later = new AbortController()
    const laterWait = informer.waitForSync(later.signal)
    later.abort()
    assert.equal(await laterWait, false)
    await informer.stop()
    assert.equal(outcome, false)
  })

  it('stop() before the first list returns resolves; the informer never claims to have synced', async () => {
    const held = heldListClient()
    const informer = new Informer({client: held.client, resource: configmaps})
    informer.start()
    await eventually(() => held.pending.length === 1)
    await informer.stop()
    assert.equal(informer.hasSynced(), false)
    assert.equal(informer.cache.size, 0)
  })

  it('a handler added before the sync gets each listed object once (no replay on top)', async () => {
    const held = heldListClient()
    const informer = new Informer({client: held.client, resource: configmaps})
    const adds: string[] = []
    informer.addHandler({onAdd: (o) => adds.push(o.metadata!.name!)})
    informer.start()
    await eventually(() => held.pending.length === 1)
    held.answer([obj('a', '1'), obj('b', '1')])
    await informer.waitForSync()
    await informer.stop()
    assert.deepEqual(adds, ['a', 'b'])
  })

  it('every object is cached as transform makes it, after managedFields are stripped and the kind is filled in', async () => {
    const server = new ScriptedServer()
    server.lists.push({items: [obj('a', '1', {annotations: {big: 'x'.repeat(100)}}), {...obj('b', '1'), kind: 'Special'}], rv: '10'})
    server.watches.push((s) => void s.write(line('ADDED', obj('c', '11', {annotations: {big: 'y'}}))))
    const seenByTransform: KubeObject[] = []
    const informer = informerFor(server, {
      kind: 'ConfigMap',
      transform: (object: KubeObject) => {
        seenByTransform.push(object)
        const {annotations: _, ...metadata} = object.metadata ?? {}
        return {...object, metadata: {...metadata, labels: {transformed: 'yes'}}}
      },
    })
    informer.start()
    await eventually(() => informer.cache.size === 3)
    await informer.stop()
    for (const object of seenByTransform) assert.equal('managedFields' in (object.metadata ?? {}), false, 'stripped before the transform')
    assert.deepEqual(seenByTransform.map((o) => o.kind), ['ConfigMap', 'Special', 'ConfigMap'], 'kind filled in only where missing')
    for (const key of ['ns/a', 'ns/b', 'ns/c']) {
      const cached = informer.cache.get(key)!
      assert.deepEqual(cached.metadata?.labels, {transformed: 'yes'}, key)
      assert.equal(cached.metadata?.annotations, undefined, key)
    }
  })
})
