/**
 * What a request to the Polycrate API is and what comes back: the client implements `ApiRequester`, and the typed
 * resources (resources.ts) are written against it, not against the client (so the two do not import each other).
 */
import type {z} from 'zod'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type QueryScalar = string | number | boolean
/** Query parameters; an array becomes a repeated parameter (`kind=http&kind=tcp`); null/undefined are left out. */
export type Query = Record<string, QueryScalar | readonly QueryScalar[] | null | undefined>

export interface ApiRequest<T> {
  method: HttpMethod
  /** Path under the base URL (`/api/v1/kubernetes/apps/`), or an absolute URL from a `next` link. */
  path: string
  query?: Query
  body?: unknown
  headers?: Record<string, string>
  /** Validates a 2xx body; a mismatch is an ApiContractError. Without it the body is returned as parsed. */
  schema?: z.ZodType<T>
  /** The `resource` metric label: the collection path without ids (`kubernetes/apps`). Derived when left out. */
  resource?: string
  /**
   * Cancels this call: aborting it stops the in-flight attempt and any pending retry at once (ApiNetworkError with
   * cause `aborted`, not retried). Combined with the client-wide `options.signal` and the per-attempt timeout.
   */
  signal?: AbortSignal
  /**
   * A create that must not be sent twice (a collection POST: the API may keep no unique key, so a second POST makes a
   * second object). Retried only after an answer that says nothing was applied (429, 503, a refused connection or an
   * unresolvable host); after one that leaves it open (500, 502, 504, a reset, a timeout) the call fails, and the
   * next reconcile's adopt-or-create looks the object up by its natural key first.
   */
  notRepeatable?: boolean
}

export interface ApiResponse<T> {
  status: number
  data: T
  headers: Headers
}

/** What the typed resources need of a client. */
export interface ApiRequester {
  request<T = unknown>(req: ApiRequest<T>): Promise<ApiResponse<T>>
}
