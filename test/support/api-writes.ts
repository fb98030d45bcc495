/**
 * What an operator wrote to the Polycrate API, from the simulator's request log (pure): writes per kind, updates per
 * object, which fields an update changed, deletes, and duplicates by natural key. The upgrade test and the soak bench
 * count with these.
 */
import type {RequestLogEntry} from './api-simulator/index.js'

export const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** A write the API applied (answered below 400; a dropped request, status 0, applied nothing). */
export const applied = (entry: RequestLogEntry): boolean => entry.status > 0 && entry.status < 400

/** The object id a request names: the path segment after its collection (`/api/v1/<resource>/<id>/…`), if any. */
export function objectIdOf(entry: Pick<RequestLogEntry, 'path' | 'resource'>): string | undefined {
  const segments = entry.path.split('/').filter(Boolean)
  const resource = entry.resource.split('/')
  for (let i = 0; i + resource.length <= segments.length; i++) {
    if (resource.every((part, k) => segments[i + k] === part)) return segments[i + resource.length]
  }
  return undefined
}

/** Applied writes per kind and method, e.g. `{endpoints: {PUT: 3}}`; kinds and methods sorted. */
export function writesByKind(entries: readonly RequestLogEntry[]): Record<string, Record<string, number>> {
  const counts: Record<string, Record<string, number>> = {}
  for (const entry of entries) {
    if (!WRITE_METHODS.has(entry.method) || !applied(entry)) continue
    const kind = (counts[entry.resource] ??= {})
    kind[entry.method] = (kind[entry.method] ?? 0) + 1
  }
  return Object.fromEntries(Object.keys(counts).sort().map((kind) => [kind, Object.fromEntries(Object.entries(counts[kind]!).sort(([a], [b]) => a.localeCompare(b)))]))
}

/** One line per kind: `endpoints PUT 3, POST 1`; `none` when nothing was written. */
export function formatWrites(writes: Record<string, Record<string, number>>): string {
  const lines = Object.entries(writes).map(([kind, methods]) => `${kind} ${Object.entries(methods).map(([method, n]) => `${method} ${n}`).join(', ')}`)
  return lines.length > 0 ? lines.join('; ') : 'none'
}

/** Applied updates (PUT/PATCH) per object, `<resource>/<id>` → count. */
export function updatesPerObject(entries: readonly RequestLogEntry[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const entry of entries) {
    if ((entry.method !== 'PUT' && entry.method !== 'PATCH') || !applied(entry)) continue
    const key = `${entry.resource}/${objectIdOf(entry) ?? '?'}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return counts
}

/** Applied deletes, as `<resource>/<id>`. */
export function deletesOf(entries: readonly RequestLogEntry[], except: (entry: RequestLogEntry) => boolean = () => false): string[] {
  return entries.filter((entry) => entry.method === 'DELETE' && applied(entry) && !except(entry)).map((entry) => `${entry.resource}/${objectIdOf(entry) ?? '?'}`)
}

const same = (a: unknown, b: unknown) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]))
  return value ?? null
}

/**
 * The fields of an update's body whose value differs from the object as the API held it before (dotted paths into
 * nested objects; arrays compare whole). Fields the body leaves out are not changes (a PUT keeps them, as DRF does).
 */
export function changedFields(before: Record<string, unknown> | undefined, body: unknown, prefix = ''): string[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return same(before, body) ? [] : [prefix || '(body)']
  const changed: string[] = []
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    const path = prefix ? `${prefix}.${key}` : key
    const old = before?.[key]
    if (value && typeof value === 'object' && !Array.isArray(value) && old && typeof old === 'object' && !Array.isArray(old)) {
      changed.push(...changedFields(old as Record<string, unknown>, value, path))
    } else if (!same(old, value)) {
      changed.push(path)
    }
  }
  return changed
}

/** The natural key of a live API object: its collection, name and the scope fields it has (as the campaign's oracle). */
export function naturalKey(collection: string, object: Record<string, unknown>): string {
  return [collection, object.name, object.namespace ?? '', object.k8s_cluster ?? '', object.workspace ?? ''].join('|')
}

/** Natural keys held by more than one live object, with their counts. */
export function duplicateKeys(collections: Record<string, ReadonlyArray<Record<string, unknown>>>): Record<string, number> {
  const counts = new Map<string, number>()
  for (const [collection, objects] of Object.entries(collections)) {
    for (const object of objects) {
      if (object.is_deleted) continue
      const key = naturalKey(collection, object)
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
  }
  return Object.fromEntries([...counts].filter(([, n]) => n > 1))
}
