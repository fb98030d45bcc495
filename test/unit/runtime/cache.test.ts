import assert from 'node:assert/strict'
import type {KubeObject} from '../../../src/kube/client.js'
import {NAMESPACE_INDEX, OWNER_INDEX, ObjectCache, objectKey, splitKey, type IndexFunction} from '../../../src/operator/runtime/cache.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

interface Options {
  namespace?: string
  rv?: string
  owners?: string[]
  labels?: Record<string, string>
}

function obj(name: string, options: Options = {}): KubeObject {
  return {
    metadata: {
      name,
      ...(options.namespace === undefined ? {} : {namespace: options.namespace}),
      resourceVersion: options.rv ?? '1',
      ...(options.owners ? {ownerReferences: options.owners.map((uid) => ({apiVersion: 'v1', kind: 'Owner', name: `o-${uid}`, uid}))} : {}),
      ...(options.labels ? {labels: options.labels} : {}),
    },
  }
}

/** A custom index: the value of the label `app`. */
const APP_INDEX = 'app'
const byApp: IndexFunction<KubeObject> = (object) => {
  const app = object.metadata?.labels?.app
  return app === undefined ? [] : [app]
}

const names = (objects: KubeObject[]) => objects.map(objectKey).sort()

/** Every bucket of every index, as `index=value → keys`, sorted: what the indexes hold, compared as a whole. */
function buckets(cache: ObjectCache<KubeObject>, indexes: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const index of indexes) {
    for (const value of cache.indexValues(index).sort()) out[`${index}=${value}`] = names(cache.byIndex(index, value))
  }
  return out
}

/** What the indexes must hold for these objects, computed from scratch by the index functions. */
function expectedBuckets(objects: KubeObject[], indexes: Record<string, IndexFunction<KubeObject>>): Record<string, string[]> {
  const out: Record<string, Set<string>> = {}
  for (const [index, fn] of Object.entries(indexes)) {
    for (const object of objects) for (const value of fn(object)) (out[`${index}=${value}`] ??= new Set()).add(objectKey(object))
  }
  return Object.fromEntries(Object.entries(out).sort(([x], [y]) => (x < y ? -1 : 1)).map(([key, set]) => [key, [...set].sort()]))
}

const builtIn: Record<string, IndexFunction<KubeObject>> = {
  [NAMESPACE_INDEX]: (object) => [object.metadata?.namespace ?? ''],
  [OWNER_INDEX]: (object) => ((object.metadata?.ownerReferences ?? []) as Array<{uid: string}>).map((owner) => owner.uid),
}
const allIndexes = {...builtIn, [APP_INDEX]: byApp}

function assertConsistent(cache: ObjectCache<KubeObject>, indexes: Record<string, IndexFunction<KubeObject>> = allIndexes): void {
  const expected = expectedBuckets(cache.list(), indexes)
  const actual = buckets(cache, Object.keys(indexes))
  assert.deepEqual(
    Object.fromEntries(Object.entries(actual).sort(([x], [y]) => (x < y ? -1 : 1))),
    expected,
    'the indexes hold exactly what the index functions say of the cached objects (no stale buckets)',
  )
}

// ---------------------------------------------------------------------------------------------------------------

describe('ObjectCache: keys', () => {
  const rows: Array<[string, KubeObject, string, {namespace?: string; name: string}]> = [
    ['namespaced', obj('a', {namespace: 'ns'}), 'ns/a', {namespace: 'ns', name: 'a'}],
    ['cluster-scoped', obj('node-1'), 'node-1', {name: 'node-1'}],
  ]
  for (const [what, object, key, split] of rows) {
    it(`${what}: objectKey and splitKey agree`, () => {
      assert.equal(objectKey(object), key)
      assert.deepEqual(splitKey(key), split)
    })
  }
})

describe('ObjectCache: built-in indexes', () => {
  it('files every object under its namespace (cluster-scoped under "")', () => {
    const cache = new ObjectCache<KubeObject>()
    for (const object of [obj('a', {namespace: 'n1'}), obj('b', {namespace: 'n1'}), obj('c', {namespace: 'n2'}), obj('node')]) cache.upsert(object)
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'n1')), ['n1/a', 'n1/b'])
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'n2')), ['n2/c'])
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, '')), ['node'])
    assert.deepEqual(cache.indexValues(NAMESPACE_INDEX).sort(), ['', 'n1', 'n2'])
    assert.deepEqual(cache.byIndex(NAMESPACE_INDEX, 'none'), [])
    assertConsistent(cache)
  })

  it('files every object under each of its owners\' uids; objects without owners are under none', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.upsert(obj('a', {namespace: 'ns', owners: ['u1']}))
    cache.upsert(obj('b', {namespace: 'ns', owners: ['u1', 'u2']}))
    cache.upsert(obj('c', {namespace: 'ns'}))
    cache.upsert({metadata: {name: 'd', namespace: 'ns', ownerReferences: [{apiVersion: 'v1', kind: 'X', name: 'x'} as never]}})
    assert.deepEqual(names(cache.byIndex(OWNER_INDEX, 'u1')), ['ns/a', 'ns/b'])
    assert.deepEqual(names(cache.byIndex(OWNER_INDEX, 'u2')), ['ns/b'])
    assert.deepEqual(cache.indexValues(OWNER_INDEX).sort(), ['u1', 'u2'], 'an owner reference without uid files nothing')
  })

  it('byIndex of an unknown index throws, naming it', () => {
    const cache = new ObjectCache<KubeObject>()
    assert.throws(() => cache.byIndex('nope', 'x'), /nope/)
  })

  it('indexValues of an unknown index is empty', () => {
    assert.deepEqual(new ObjectCache<KubeObject>().indexValues('nope'), [])
  })
})

describe('ObjectCache: addIndex', () => {
  it('an index added to a filled cache indexes the objects already there, and later ones', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.upsert(obj('a', {namespace: 'ns', labels: {app: 'shop'}}))
    cache.upsert(obj('b', {namespace: 'ns', labels: {app: 'blog'}}))
    cache.upsert(obj('c', {namespace: 'ns'}))
    cache.addIndex(APP_INDEX, byApp)
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'shop')), ['ns/a'])
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'blog')), ['ns/b'])
    cache.upsert(obj('d', {namespace: 'other', labels: {app: 'shop'}}))
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'shop')), ['ns/a', 'other/d'])
    assert.deepEqual(cache.indexValues(APP_INDEX).sort(), ['blog', 'shop'])
    assertConsistent(cache)
  })

  it('a second addIndex with the same name keeps the first function (shared caches get it once)', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.upsert(obj('a', {namespace: 'ns', labels: {app: 'shop', tier: 'web'}}))
    cache.addIndex(APP_INDEX, byApp)
    let calls = 0
    cache.addIndex(APP_INDEX, (object) => {
      calls++
      return [object.metadata?.labels?.tier ?? '']
    })
    cache.upsert(obj('b', {namespace: 'ns', labels: {app: 'shop', tier: 'db'}}))
    assert.equal(calls, 0, 'the second function is never called')
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'shop')), ['ns/a', 'ns/b'])
    assert.deepEqual(cache.byIndex(APP_INDEX, 'web'), [])
  })

  it('the built-in indexes cannot be replaced either', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(NAMESPACE_INDEX, () => ['everything'])
    cache.upsert(obj('a', {namespace: 'ns'}))
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'ns')), ['ns/a'])
    assert.deepEqual(cache.byIndex(NAMESPACE_INDEX, 'everything'), [])
  })

  it('an index function may file one object under several values', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex('hosts', (object) => (object.metadata?.annotations?.hosts ?? '').split(',').filter(Boolean))
    cache.upsert({metadata: {name: 'a', namespace: 'ns', resourceVersion: '1', annotations: {hosts: 'x.io,y.io'}}})
    cache.upsert({metadata: {name: 'b', namespace: 'ns', resourceVersion: '1', annotations: {hosts: 'y.io'}}})
    assert.deepEqual(names(cache.byIndex('hosts', 'x.io')), ['ns/a'])
    assert.deepEqual(names(cache.byIndex('hosts', 'y.io')), ['ns/a', 'ns/b'])
    cache.upsert({metadata: {name: 'a', namespace: 'ns', resourceVersion: '2', annotations: {hosts: 'z.io'}}})
    assert.deepEqual(cache.indexValues('hosts').sort(), ['y.io', 'z.io'])
    assert.deepEqual(names(cache.byIndex('hosts', 'y.io')), ['ns/b'])
  })
})

describe('ObjectCache: index maintenance on change', () => {
  interface Row {
    name: string
    before: Options & {labels?: Record<string, string>}
    after: Options & {labels?: Record<string, string>}
    /** [index, old value, new value] that the object must move between. */
    moves: Array<[string, string, string]>
  }
  const rows: Row[] = [
    {name: 'its owner changes', before: {namespace: 'ns', owners: ['u1']}, after: {namespace: 'ns', owners: ['u2'], rv: '2'}, moves: [[OWNER_INDEX, 'u1', 'u2']]},
    {name: 'its custom index value changes', before: {namespace: 'ns', labels: {app: 'shop'}}, after: {namespace: 'ns', labels: {app: 'blog'}, rv: '2'}, moves: [[APP_INDEX, 'shop', 'blog']]},
    {
      name: 'owner and custom value change at once',
      before: {namespace: 'ns', owners: ['u1'], labels: {app: 'shop'}},
      after: {namespace: 'ns', owners: ['u2'], labels: {app: 'blog'}, rv: '2'},
      moves: [[OWNER_INDEX, 'u1', 'u2'], [APP_INDEX, 'shop', 'blog']],
    },
    {name: 'the same resourceVersion still refiles it', before: {namespace: 'ns', labels: {app: 'shop'}}, after: {namespace: 'ns', labels: {app: 'blog'}}, moves: [[APP_INDEX, 'shop', 'blog']]},
  ]
  for (const row of rows) {
    it(`an updated object moves between buckets when ${row.name}`, () => {
      const cache = new ObjectCache<KubeObject>()
      cache.addIndex(APP_INDEX, byApp)
      cache.upsert(obj('keep', {namespace: 'ns', owners: ['u1'], labels: {app: 'shop'}}))
      cache.upsert(obj('a', row.before))
      cache.upsert(obj('a', row.after))
      for (const [index, from, to] of row.moves) {
        assert.deepEqual(names(cache.byIndex(index, from)), ['ns/keep'], `${index}: left ${from}`)
        assert.deepEqual(names(cache.byIndex(index, to)), ['ns/a'], `${index}: filed under ${to}`)
      }
      assert.equal(cache.get('ns/a')?.metadata?.resourceVersion, row.after.rv ?? '1')
      assertConsistent(cache)
    })
  }

  it('the namespace is part of the key: an object "moved" to another namespace is a second object until the first is removed', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.upsert(obj('a', {namespace: 'n1'}))
    cache.upsert(obj('a', {namespace: 'n2', rv: '2'}))
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'n1')), ['n1/a'])
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'n2')), ['n2/a'])
    cache.remove(obj('a', {namespace: 'n1'}))
    assert.deepEqual(cache.indexValues(NAMESPACE_INDEX), ['n2'])
    assertConsistent(cache)
  })

  it('an object that loses its last index value leaves the index; an emptied bucket disappears from indexValues', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(APP_INDEX, byApp)
    cache.upsert(obj('a', {namespace: 'ns', owners: ['u1'], labels: {app: 'shop'}}))
    cache.upsert(obj('a', {namespace: 'ns', rv: '2'}))
    assert.deepEqual(cache.indexValues(APP_INDEX), [])
    assert.deepEqual(cache.indexValues(OWNER_INDEX), [])
    assert.deepEqual(cache.byIndex(APP_INDEX, 'shop'), [])
    assertConsistent(cache)
  })

  it('byIndex returns the newest version of an updated object', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.upsert(obj('a', {namespace: 'ns', owners: ['u1']}))
    cache.upsert(obj('a', {namespace: 'ns', owners: ['u1'], rv: '5'}))
    assert.deepEqual(cache.byIndex(OWNER_INDEX, 'u1').map((o) => o.metadata?.resourceVersion), ['5'])
    assert.deepEqual(cache.listNamespace('ns').map((o) => o.metadata?.resourceVersion), ['5'])
  })

  it('upsert reports added, updated (with the old object) and nothing for the same resourceVersion', () => {
    const cache = new ObjectCache<KubeObject>()
    const first = obj('a', {namespace: 'ns'})
    const second = obj('a', {namespace: 'ns', rv: '2'})
    assert.deepEqual(cache.upsert(first), {type: 'added', object: first})
    assert.deepEqual(cache.upsert(second), {type: 'updated', old: first, object: second})
    assert.equal(cache.upsert(obj('a', {namespace: 'ns', rv: '2'})), undefined)
    assert.equal(cache.size, 1)
  })

  it('remove takes the object out of every index; removing an unknown object reports nothing', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(APP_INDEX, byApp)
    const a = obj('a', {namespace: 'ns', owners: ['u1'], labels: {app: 'shop'}})
    cache.upsert(a)
    cache.upsert(obj('b', {namespace: 'ns', owners: ['u1'], labels: {app: 'shop'}}))
    // The deleted object as a watch delivers it: its last state (here: other labels) — the cached one is unfiled.
    assert.deepEqual(cache.remove(obj('a', {namespace: 'ns', rv: '9'})), {type: 'deleted', object: a})
    assert.equal(cache.get('ns/a'), undefined)
    assert.deepEqual(names(cache.byIndex(NAMESPACE_INDEX, 'ns')), ['ns/b'])
    assert.deepEqual(names(cache.byIndex(OWNER_INDEX, 'u1')), ['ns/b'])
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'shop')), ['ns/b'])
    assert.equal(cache.remove(obj('a', {namespace: 'ns'})), undefined)
    cache.remove(obj('b', {namespace: 'ns'}))
    assert.deepEqual(cache.indexValues(NAMESPACE_INDEX), [])
    assert.deepEqual(cache.indexValues(OWNER_INDEX), [])
    assert.deepEqual(cache.indexValues(APP_INDEX), [])
    assert.equal(cache.size, 0)
  })
})

describe('ObjectCache: replace', () => {
  it('objects missing from the new list leave every index and are reported deleted; the rest added/updated', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(APP_INDEX, byApp)
    const a = obj('a', {namespace: 'n1', owners: ['u1'], labels: {app: 'shop'}})
    const b = obj('b', {namespace: 'n2', owners: ['u2'], labels: {app: 'blog'}})
    const c = obj('c', {namespace: 'n1', owners: ['u1'], labels: {app: 'shop'}})
    for (const object of [a, b, c]) cache.upsert(object)

    const c2 = obj('c', {namespace: 'n1', owners: ['u3'], labels: {app: 'wiki'}, rv: '2'})
    const d = obj('d', {namespace: 'n3', labels: {app: 'shop'}})
    const changes = cache.replace([c2, d])

    const summary = changes.map((change) => `${change.type} ${objectKey(change.object)}`).sort()
    assert.deepEqual(summary, ['added n3/d', 'deleted n1/a', 'deleted n2/b', 'updated n1/c'])
    assert.deepEqual(cache.keys().sort(), ['n1/c', 'n3/d'])
    assert.deepEqual(cache.indexValues(NAMESPACE_INDEX).sort(), ['n1', 'n3'])
    assert.deepEqual(cache.indexValues(OWNER_INDEX).sort(), ['u3'])
    assert.deepEqual(cache.indexValues(APP_INDEX).sort(), ['shop', 'wiki'])
    assert.deepEqual(names(cache.byIndex(APP_INDEX, 'shop')), ['n3/d'])
    assert.deepEqual(cache.byIndex(NAMESPACE_INDEX, 'n2'), [])
    assert.deepEqual(cache.byIndex(OWNER_INDEX, 'u1'), [])
    assertConsistent(cache)
  })

  it('replace with the same list reports nothing; with an empty list empties every index', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(APP_INDEX, byApp)
    const objects = [obj('a', {namespace: 'n1', owners: ['u1'], labels: {app: 'x'}}), obj('b', {namespace: 'n2'})]
    assert.equal(cache.replace(objects).length, 2)
    assert.deepEqual(cache.replace(objects.map((o) => structuredClone(o))), [])
    assert.equal(cache.replace([]).length, 2)
    assert.equal(cache.size, 0)
    for (const index of [NAMESPACE_INDEX, OWNER_INDEX, APP_INDEX]) assert.deepEqual(cache.indexValues(index), [], index)
  })
})

describe('ObjectCache: list and listNamespace', () => {
  it('listNamespace(ns) equals list() filtered by namespace, for every namespace, after a mix of changes', () => {
    const cache = new ObjectCache<KubeObject>()
    cache.replace([obj('a', {namespace: 'n1'}), obj('b', {namespace: 'n2'}), obj('c', {namespace: 'n1'}), obj('node-1'), obj('node-2')])
    cache.upsert(obj('d', {namespace: 'n3'}))
    cache.remove(obj('c', {namespace: 'n1'}))
    cache.upsert(obj('e', {namespace: 'n1', rv: '3'}))
    for (const namespace of ['n1', 'n2', 'n3', '', 'missing']) {
      assert.deepEqual(
        names(cache.listNamespace(namespace)),
        names(cache.list((object) => (object.metadata?.namespace ?? '') === namespace)),
        `namespace "${namespace}"`,
      )
    }
    assert.deepEqual(names(cache.listNamespace('n1')), ['n1/a', 'n1/e'])
    assert.deepEqual(names(cache.list()), ['n1/a', 'n1/e', 'n2/b', 'n3/d', 'node-1', 'node-2'])
  })

  it('a long random sequence of upserts, updates and removes keeps every index consistent', () => {
    // A fixed linear congruential generator: the same sequence every run.
    let seed = 12345
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const cache = new ObjectCache<KubeObject>()
    cache.addIndex(APP_INDEX, byApp)
    for (let step = 0; step < 500; step++) {
      const name = `o${next(12)}`
      const namespace = ['n1', 'n2', 'n3', undefined][next(4)]
      const choice = next(10)
      if (choice < 2) {
        cache.remove(obj(name, {namespace}))
      } else if (choice === 9) {
        cache.replace(cache.list().filter(() => next(2) === 0))
      } else {
        const owners = [['u1'], ['u2'], ['u1', 'u3'], []][next(4)]
        const app = ['shop', 'blog', undefined][next(3)]
        cache.upsert(obj(name, {namespace, owners, labels: app ? {app} : {}, rv: String(step)}))
      }
      if (step % 25 === 0) assertConsistent(cache)
    }
    assertConsistent(cache)
  })
})
