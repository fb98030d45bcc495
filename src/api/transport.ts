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
