/** The in-memory cache of one resource type, keyed `namespace/name` (or `name` for cluster-scoped objects). */
import type {KubeObject} from '../../kube/client.js'

export function objectKey(object: KubeObject): string {
  const {namespace, name} = object.metadata ?? {}
  return namespace ? `${namespace}/${name}` : (name ?? '')
}

export function splitKey(key: string): {namespace?: string; name: string} {
  const slash = key.indexOf('/')
  return slash < 0 ? {name: key} : {namespace: key.slice(0, slash), name: key.slice(slash + 1)}
}

export type CacheChange<T> =
  | {type: 'added'; object: T}
  | {type: 'updated'; old: T; object: T}
  | {type: 'deleted'; object: T}

/** Drops what the operator never reads and what makes objects big: managedFields. */
export function stripManagedFields<T extends KubeObject>(object: T): T {
  if (object.metadata && 'managedFields' in object.metadata) {
    const {managedFields: _, ...metadata} = object.metadata
    return {...object, metadata}
  }
  return object
}

/** Index function: the values an object is filed under (e.g. its namespace, its owners' uids). */
export type IndexFunction<T> = (object: T) => readonly string[]

/** Built-in indexes every cache has. */
export const NAMESPACE_INDEX = 'namespace'
export const OWNER_INDEX = 'owner'

const byNamespace: IndexFunction<KubeObject> = (object) => [object.metadata?.namespace ?? '']
const byOwner: IndexFunction<KubeObject> = (object) =>
  ((object.metadata?.ownerReferences ?? []) as Array<{uid?: string}>).flatMap((owner) => (owner.uid ? [owner.uid] : []))

/**
 * The objects of one resource, keyed `namespace/name`, with indexes (like client-go's Indexer): by namespace and
 * by owner uid built in, more by name (`addIndex`). Lookups by index cost the size of the answer, not the cache.
 */
export class ObjectCache<T extends KubeObject> {
  private readonly objects = new Map<string, T>()
  private readonly indexes = new Map<string, {fn: IndexFunction<T>; entries: Map<string, Set<string>>}>()

  constructor() {
    this.addIndex(NAMESPACE_INDEX, byNamespace)
    this.addIndex(OWNER_INDEX, byOwner)
  }

  get size(): number {
    return this.objects.size
  }

  /** Adds an index (a second call with the same name keeps the first: shared caches get it once). */
  addIndex(name: string, fn: IndexFunction<T>): void {
    if (this.indexes.has(name)) return
    const index = {fn, entries: new Map<string, Set<string>>()}
    this.indexes.set(name, index)
    for (const [key, object] of this.objects) this.file(index, key, object)
  }

  /** The objects filed under `value` in the index `name`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name)
    if (!index) throw new Error(`no cache index "${name}"`)
    const keys = index.entries.get(value)
    if (!keys) return []
    const found: T[] = []
    for (const key of keys) {
      const object = this.objects.get(key)
      if (object) found.push(object)
    }
    return found
  }

  /** The values of index `name` that have objects (e.g. every namespace with objects). */
  indexValues(name: string): string[] {
    return [...(this.indexes.get(name)?.entries.keys() ?? [])]
  }

  get(key: string): T | undefined {
    return this.objects.get(key)
  }

  list(filter?: (object: T) => boolean): T[] {
    const all = [...this.objects.values()]
    return filter ? all.filter(filter) : all
  }

  listNamespace(namespace: string): T[] {
    return this.byIndex(NAMESPACE_INDEX, namespace)
  }

  keys(): string[] {
    return [...this.objects.keys()]
  }

  /** Replaces the whole content (after a list) and returns what changed, as a watch would have said it. */
  replace(objects: readonly T[]): CacheChange<T>[] {
    const changes: CacheChange<T>[] = []
    const seen = new Set<string>()
    for (const object of objects) {
      seen.add(objectKey(object))
      const change = this.upsert(object)
      if (change) changes.push(change)
    }
    for (const [key, object] of this.objects) {
      if (!seen.has(key)) {
        this.store(key, undefined)
        changes.push({type: 'deleted', object})
      }
    }
    return changes
  }

  /** Stores the object; no change is reported when its resourceVersion is the one already cached. */
  upsert(object: T): CacheChange<T> | undefined {
    const key = objectKey(object)
    const old = this.store(key, object)
    if (!old) return {type: 'added', object}
    if (old.metadata?.resourceVersion === object.metadata?.resourceVersion) return undefined
    return {type: 'updated', old, object}
  }

  remove(object: T): CacheChange<T> | undefined {
    const key = objectKey(object)
    const old = this.store(key, undefined)
    return old ? {type: 'deleted', object: old} : undefined
  }

  /** Sets or removes one object and keeps every index in step; returns the previous object. */
  private store(key: string, object: T | undefined): T | undefined {
    const old = this.objects.get(key)
    for (const index of this.indexes.values()) {
      if (old) this.unfile(index, key, old)
      if (object) this.file(index, key, object)
    }
    if (object) this.objects.set(key, object)
    else this.objects.delete(key)
    return old
  }

  private file(index: {fn: IndexFunction<T>; entries: Map<string, Set<string>>}, key: string, object: T): void {
    for (const value of index.fn(object)) {
      let keys = index.entries.get(value)
      if (!keys) index.entries.set(value, (keys = new Set()))
      keys.add(key)
    }
  }

  private unfile(index: {fn: IndexFunction<T>; entries: Map<string, Set<string>>}, key: string, object: T): void {
    for (const value of index.fn(object)) {
      const keys = index.entries.get(value)
      if (!keys) continue
      keys.delete(key)
      if (keys.size === 0) index.entries.delete(value)
    }
  }
}
