/**
 * Errors of the Polycrate API client. Every error carries the HTTP method and the request path (never the base
 * URL's credentials, never the token, never a request header) and a message a CLI can print as it is.
 *
 * The API's error bodies:
 *   400 → ValidationError / ParseErrorResponse, 401…502 → `{type: "client_error", errors: [{code, detail, attr|null}]}`.
 * Classic DRF shapes (`{detail: "…"}`, `{field: ["…"]}`) and plain-text bodies are understood too.
 */
import type {z} from 'zod'

/** One entry of the contract's `errors` array. */
export interface ApiErrorItem {
  code: string
  detail: string
  attr: string | null
}

export interface ApiErrorInit {
  status: number
  method: string
  path: string
  /** The contract's `type` (`client_error`, `validation_error`, `server_error`), when the body had one. */
  type?: string
  errors?: ApiErrorItem[]
  /** Requests made for this call, retries included. */
  attempts?: number
}

/** Base of every error the client throws. `status` is 0 when no HTTP answer arrived (ApiNetworkError). */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly method: string
  readonly path: string
  readonly type: string | undefined
  readonly errors: ApiErrorItem[]
  /** `code`, `detail` and `attr` of the first error item (the one the message leads with). */
  readonly code: string
  readonly detail: string
  readonly attr: string | null
  readonly attempts: number

  constructor(init: ApiErrorInit, message?: string) {
    const errors = init.errors ?? []
    const first = errors[0]
    super(message ?? defaultMessage(init))
    this.status = init.status
    this.method = init.method
    this.path = init.path
    this.type = init.type
    this.errors = errors
    this.code = first?.code ?? statusCode(init.status)
    this.detail = first?.detail ?? ''
    this.attr = first?.attr ?? null
    this.attempts = init.attempts ?? 1
  }

  /** `GET /api/v1/agents/`: the request this error belongs to. */
  get request(): string {
    return `${this.method} ${this.path}`
  }

  /** Plain data for JSON output (`--json`) and structured logs. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      status: this.status,
      code: this.code,
      detail: this.detail,
      attr: this.attr,
      errors: this.errors,
      method: this.method,
      path: this.path,
      attempts: this.attempts,
    }
  }
}

/** 401 (bad or missing token) or 403 (`forbidden`: the token is valid but may not do this). */
export class ApiAuthError extends ApiError {
  override name = 'ApiAuthError'
  readonly forbidden: boolean
  constructor(init: ApiErrorInit) {
    const forbidden = init.status === 403
    super(
      init,
      forbidden
        ? `The Polycrate API refused ${init.method} ${init.path} (403 Forbidden${details(init.errors)}): the API token may not do this; platform-admin actions need a platform-admin token.`
        : `The Polycrate API rejected the API token (401 Unauthorized${details(init.errors)}) on ${init.method} ${init.path}: check the token (OperatorConfig secret or --token); it may be revoked or expired.`,
    )
    this.forbidden = forbidden
  }
}

/** 404: the object (or the path) does not exist, or is not visible to this token's workspace. */
export class ApiNotFoundError extends ApiError {
  override name = 'ApiNotFoundError'
  constructor(init: ApiErrorInit) {
    super(init, `Not found (404) on ${init.method} ${init.path}${details(init.errors, ': ')}`)
  }
}

/** 409: a unique constraint was hit; the contract asks the operator to read it as "already exists". */
export class ApiConflictError extends ApiError {
  override name = 'ApiConflictError'
  constructor(init: ApiErrorInit, message?: string) {
    super(init, message ?? `Conflict (409) on ${init.method} ${init.path}: the object already exists${details(init.errors, ' — ')}`)
  }
}

/** 400/422: the API rejected the request body or query. `fieldErrors` maps `attr` → details. */
export class ApiValidationError extends ApiError {
  override name = 'ApiValidationError'
  readonly fieldErrors: Record<string, string[]>
  constructor(init: ApiErrorInit) {
    const errors = init.errors ?? []
    const lines = errors.map((e) => (e.attr ? `${e.attr}: ${e.detail}` : e.detail)).filter((line) => line !== '')
    super(init, `The Polycrate API rejected ${init.method} ${init.path} (${init.status} ${init.status === 422 ? 'Unprocessable Entity' : 'Bad Request'})${lines.length > 0 ? `: ${lines.join('; ')}` : ''}`)
    const fieldErrors: Record<string, string[]> = {}
    for (const e of errors) (fieldErrors[e.attr ?? 'non_field_errors'] ??= []).push(e.detail)
    this.fieldErrors = fieldErrors
  }
}

/** 429 that persisted through every retry. `retryAfterMs` is the last Retry-After the API sent, if any. */
export class ApiRateLimitError extends ApiError {
  override name = 'ApiRateLimitError'
  readonly retryAfterMs: number | undefined
  constructor(init: ApiErrorInit & {retryAfterMs?: number}) {
    super(init, `The Polycrate API is rate-limiting ${init.method} ${init.path} (429 Too Many Requests${details(init.errors)}); gave up after ${attemptsText(init.attempts)}.`)
    this.retryAfterMs = init.retryAfterMs
  }
}

/** 5xx that persisted through every retry. */
export class ApiServerError extends ApiError {
  override name = 'ApiServerError'
  constructor(init: ApiErrorInit) {
    super(init, `The Polycrate API failed on ${init.method} ${init.path} (${init.status} ${statusText(init.status)}${details(init.errors)}); gave up after ${attemptsText(init.attempts)}.`)
  }
}

/**
 * No HTTP answer: connection refused or reset, DNS failure, TLS failure, timeout, or the call was aborted (cause
 * `aborted`: the client-wide signal or the call's own signal; never retried).
 * `cause` is a short code: `ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`, `timeout`, `aborted`, … (never the
 * underlying error object, which could drag request details along).
 */
export class ApiNetworkError extends ApiError {
  override name = 'ApiNetworkError'
  override readonly cause: string
  readonly origin: string
  constructor(init: Omit<ApiErrorInit, 'status'> & {cause: string; origin: string; timeoutMs?: number}) {
    const reason = init.cause === 'timeout'
      ? `no answer within ${init.timeoutMs === undefined ? 'the timeout' : `${init.timeoutMs} ms`}`
      : init.cause === 'aborted' ? 'the call was aborted' : init.cause
    super(
      {...init, status: 0, errors: [{code: init.cause, detail: reason, attr: null}]},
      `Cannot reach the Polycrate API at ${init.origin} for ${init.method} ${init.path} (${reason}); gave up after ${attemptsText(init.attempts)}. Check the API URL and the network.`,
    )
    this.cause = init.cause
    this.origin = init.origin
  }

  override toJSON(): Record<string, unknown> {
    return {...super.toJSON(), cause: this.cause, origin: this.origin}
  }
}

/**
 * A 2xx answer whose body does not match the contract (the zod schema). The message names the field path and the
 * expectation, e.g. `GET /api/v1/endpoints/ → results[0].remote_port: expected number, received string`.
 * Received values are never quoted (they could be secrets such as S3 keys).
 */
export class ApiContractError extends ApiError {
  override name = 'ApiContractError'
  /** `results[0].remote_port: expected number, received string`, one per issue. */
  readonly issues: string[]
  constructor(init: Omit<ApiErrorInit, 'errors'> & {issues: string[]}) {
    const [first = 'unexpected response', ...rest] = init.issues
    super(
      {...init, errors: init.issues.map((detail) => ({code: 'contract_mismatch', detail, attr: null}))},
      `${init.method} ${init.path} → ${first}${rest.length > 0 ? ` (and ${rest.length} more mismatch${rest.length === 1 ? '' : 'es'})` : ''}`,
    )
    this.issues = init.issues
  }
}

/** Maps a final HTTP error status to its class. */
export function errorForStatus(init: ApiErrorInit & {retryAfterMs?: number}): ApiError {
  const {status} = init
  if (status === 401 || status === 403) return new ApiAuthError(init)
  if (status === 404) return new ApiNotFoundError(init)
  if (status === 409) return new ApiConflictError(init)
  if (status === 400 || status === 422) return new ApiValidationError(init)
  if (status === 429) return new ApiRateLimitError(init)
  if (status >= 500) return new ApiServerError(init)
  return new ApiError(init)
}

/**
 * Reads an error body into the contract's `{type, errors}`: the contract shape, DRF's `{detail}` and field maps,
 * or text (first 200 characters of its first line).
 */
export function parseErrorBody(body: unknown, text: string): {type?: string; errors: ApiErrorItem[]} {
  if (isRecord(body)) {
    if (Array.isArray(body.errors)) {
      const errors = body.errors.filter(isRecord).map((e) => ({
        code: typeof e.code === 'string' ? e.code : 'error',
        detail: typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail ?? ''),
        attr: typeof e.attr === 'string' ? e.attr : null,
      }))
      return {type: typeof body.type === 'string' ? body.type : undefined, errors}
    }
    if (typeof body.detail === 'string') {
      return {errors: [{code: typeof body.code === 'string' ? body.code : 'error', detail: body.detail, attr: null}]}
    }
    const errors: ApiErrorItem[] = []
    for (const [attr, value] of Object.entries(body)) {
      const messages = Array.isArray(value) ? value : [value]
      for (const message of messages) if (typeof message === 'string') errors.push({code: 'invalid', detail: message, attr})
    }
    if (errors.length > 0) return {type: 'validation_error', errors}
  }
  const line = text.trim().split('\n')[0]?.trim() ?? ''
  if (line !== '' && !line.startsWith('<')) return {errors: [{code: 'error', detail: line.slice(0, 200), attr: null}]}
  return {errors: []}
}

/** Zod issues → `results[0].remote_port: expected number, received string` (values are never quoted). */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const at = formatPath(issue.path)
    let what = issue.message.replace(/^Invalid (input|option): /, '')
    if (issue.code === 'invalid_type' && /received undefined$/.test(what)) what = `missing (expected ${issue.expected})`
    else if (issue.code === 'invalid_union') what = 'matches none of the allowed types'
    return at === '' ? what : `${at}: ${what}`
  })
}

/** `['results', 0, 'remote_port']` → `results[0].remote_port`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`
    else out += `[${JSON.stringify(String(key))}]`
  }
  return out
}

function details(errors: ApiErrorItem[] | undefined, separator = ': '): string {
  const first = errors?.[0]
  if (!first) return ''
  const text = [first.code, first.detail].filter((part) => part !== '' && part !== 'error').join(': ')
  return text === '' ? '' : `${separator}${first.attr ? `${first.attr}: ` : ''}${text}`
}

function defaultMessage(init: ApiErrorInit): string {
  return `The Polycrate API answered ${init.status} ${statusText(init.status)} on ${init.method} ${init.path}${details(init.errors)}`
}

function attemptsText(attempts: number | undefined): string {
  const n = attempts ?? 1
  return `${n} attempt${n === 1 ? '' : 's'}`
}

function statusCode(status: number): string {
  return status === 0 ? 'network_error' : `http_${status}`
}

const statusTexts: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 409: 'Conflict', 410: 'Gone', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity',
  429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
}

function statusText(status: number): string {
  return statusTexts[status] ?? 'Error'
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
