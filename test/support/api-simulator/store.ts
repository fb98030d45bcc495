/**
 * The in-memory store (one ordered map per collection), the list filters the contract calls "the common set"
 * plus each model's own, `ordering`, and DRF page-number pagination with absolute next/previous URLs.
 */
import type {JsonObject, ResourceModel} from './models.js'

export type StoredObject = JsonObject & {id: string}

export class Store {
  private readonly collections = new Map<string, Map<string, StoredObject>>()

  private collection(resource: string): Map<string, StoredObject> {
    let objects = this.collections.get(resource)
    if (!objects) {
      objects = new Map()
      this.collections.set(resource, objects)
    }
    return objects
  }

  /** Every stored object of a collection in insertion order, soft-deleted ones included. Live references. */
  all(resource: string): StoredObject[] {
    return [...this.collection(resource).values()]
  }

  /** The objects of a collection without copying them into an array. */
  values(resource: string): IterableIterator<StoredObject> {
    return this.collection(resource).values()
  }

  find(resource: string, id: string): StoredObject | undefined {
    return this.collection(resource).get(id)
  }

  save(resource: string, object: StoredObject): void {
    this.collection(resource).set(object.id, object)
  }

  remove(resource: string, id: string): boolean {
    return this.collection(resource).delete(id)
  }
}

/** All values of a query parameter, repeated (`?kind=a&kind=b`) or comma-separated (`?kind=a,b`). */
export function queryValues(query: URLSearchParams, name: string): string[] {
  return query
    .getAll(name)
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '')
}

export function parseBool(value: string | null): boolean | undefined {
  if (value === null) return undefined
  const lower = value.trim().toLowerCase()
  if (lower === 'true' || lower === '1') return true
  if (lower === 'false' || lower === '0') return false
  return undefined
}

function matchesAny(value: unknown, wanted: readonly string[]): boolean {
  if (Array.isArray(value)) return value.some((item) => matchesAny(item, wanted))
  if (value === undefined || value === null) return false
  return wanted.includes(String(value))
}

function boolField(object: JsonObject, field: string): boolean {
  return object[field] === true
}

/**
 * The common filters (`name_exact`, `workspaces`, `organizations`, `kind`, `search`, `archived`, `state`,
 * `state_not`) and the model's own. Archived objects are hidden unless `archived=true`, which shows only them.
 */
export function applyFilters(objects: readonly JsonObject[], query: URLSearchParams, target: ResourceModel): JsonObject[] {
  const predicates: Array<(object: JsonObject) => boolean> = []
  const exactOn = (parameter: string, field: string) => {
    const wanted = queryValues(query, parameter)
    if (wanted.length > 0) predicates.push((object) => matchesAny(object[field], wanted))
  }

  const nameExact = query.get('name_exact')
  if (nameExact !== null) predicates.push((object) => object.name === nameExact)
  exactOn('workspaces', 'workspace')
  exactOn('organizations', 'organization')
  exactOn('kind', 'kind')
  exactOn('state', 'state')
  const stateNot = queryValues(query, 'state_not')
  if (stateNot.length > 0) predicates.push((object) => !matchesAny(object.state, stateNot))

  const search = query.get('search')?.trim().toLowerCase()
  if (search) {
    predicates.push((object) =>
      target.searchFields.some((field) => {
        const value = object[field]
        return typeof value === 'string' && value.toLowerCase().includes(search)
      }),
    )
  }

  const archived = parseBool(query.get('archived')) ?? false
  predicates.push((object) => boolField(object, 'archived') === archived)

  for (const [parameter, filter] of Object.entries(target.filters)) {
    if (filter.kind === 'exact') {
      exactOn(parameter, filter.field)
    } else {
      const wanted = parseBool(query.get(parameter))
      if (wanted !== undefined) predicates.push((object) => boolField(object, filter.field) === wanted)
    }
  }

  return objects.filter((object) => predicates.every((predicate) => predicate(object)))
}

function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0
  if (a === undefined || a === null) return 1
  if (b === undefined || b === null) return -1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0
}

/** `?ordering=name,-created_at`. Without it, insertion (= creation) order. Stable. */
export function applyOrdering<T extends JsonObject>(objects: readonly T[], ordering: string | null): T[] {
  const keys = (ordering ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '')
    .map((key) => (key.startsWith('-') ? {field: key.slice(1), direction: -1} : {field: key, direction: 1}))
  if (keys.length === 0) return [...objects]
  return [...objects].sort((a, b) => {
    for (const {field, direction} of keys) {
      const order = compareValues(a[field], b[field])
      if (order !== 0) return order * direction
    }
    return 0
  })
}

export interface Page<T> {
  count: number
  next: string | null
  previous: string | null
  results: T[]
}

export const MAX_PAGE_SIZE = 1000

/**
 * DRF `PageNumberPagination`: `page` (1-based, or `last`), `page_size` (capped at 1000; invalid → default).
 * next/previous keep every other query parameter; the link to page 1 drops `page`, as DRF does. An invalid page
 * number returns undefined (the caller answers 404 "Invalid page.").
 */
export function paginate<T>(items: readonly T[], requestUrl: URL, pageSizeDefault: number): Page<T> | undefined {
  const sizeParameter = Number(requestUrl.searchParams.get('page_size'))
  const pageSize =
    Number.isInteger(sizeParameter) && sizeParameter > 0 ? Math.min(sizeParameter, MAX_PAGE_SIZE) : pageSizeDefault
  const pageCount = Math.max(1, Math.ceil(items.length / pageSize))
  const pageParameter = requestUrl.searchParams.get('page')
  const page = pageParameter === null ? 1 : pageParameter === 'last' ? pageCount : Number(pageParameter)
  if (!Number.isInteger(page) || page < 1 || page > pageCount) return undefined

  const link = (target: number) => {
    const url = new URL(requestUrl.href)
    if (target === 1) url.searchParams.delete('page')
    else url.searchParams.set('page', String(target))
    return url.href
  }
  return {
    count: items.length,
    next: page < pageCount ? link(page + 1) : null,
    previous: page > 1 ? link(page - 1) : null,
    results: items.slice((page - 1) * pageSize, page * pageSize),
  }
}
