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

export class ObjectCache<T extends KubeObject> {
  private readonly objects = new Map<string, T>()

  get size(): number {
    return this.objects.size
  }

  get(key: string): T | undefined {
    return this.objects.get(key)
  }

  list(filter?: (object: T) => boolean): T[] {
    const all = [...this.objects.values()]
    return filter ? all.filter(filter) : all
  }

  listNamespace(namespace: string): T[] {
    return this.list((object) => object.metadata?.namespace === namespace)
  }

  keys(): string[] {
    return [...this.objects.keys()]
  }

  /** Replaces the whole content (after a list) and returns what changed, as a watch would have said it. */
  replace(objects: readonly T[]): CacheChange<T>[] {
    const changes: CacheChange<T>[] = []
    const seen = new Set<string>()
    for (const object of objects) {
      const key = objectKey(object)
      seen.add(key)
      const change = this.upsert(object)
      if (change) changes.push(change)
    }
    for (const [key, object] of this.objects) {
      if (!seen.has(key)) {
        this.objects.delete(key)
        changes.push({type: 'deleted', object})
      }
    }
    return changes
  }

  /** Stores the object; no change is reported when its resourceVersion is the one already cached. */
  upsert(object: T): CacheChange<T> | undefined {
    const key = objectKey(object)
    const old = this.objects.get(key)
    this.objects.set(key, object)
    if (!old) return {type: 'added', object}
    if (old.metadata?.resourceVersion === object.metadata?.resourceVersion) return undefined
    return {type: 'updated', old, object}
  }

  remove(object: T): CacheChange<T> | undefined {
    const key = objectKey(object)
    const old = this.objects.get(key)
    if (!old) return undefined
    this.objects.delete(key)
    return {type: 'deleted', object: old}
  }
}
