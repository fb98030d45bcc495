/**
 * Replies and the contract's error bodies (drf-standardized-errors):
 * `{type: 'client_error' | 'server_error' | 'validation_error', errors: [{code, detail, attr}]}`.
 */
import type {FieldError} from './models.js'

export interface Reply {
  status: number
  body?: unknown
  headers?: Record<string, string>
}

export function ok(body: unknown, status = 200): Reply {
  return {status, body}
}

export function noContent(status = 204): Reply {
  return {status}
}

function errorReply(status: number, code: string, detail: string, headers?: Record<string, string>): Reply {
  return {
    status,
    body: {type: status >= 500 ? 'server_error' : 'client_error', errors: [{code, detail, attr: null}]},
    ...(headers ? {headers} : {}),
  }
}

export const unauthenticated = (detail = 'Authentication credentials were not provided.') =>
  errorReply(401, 'not_authenticated', detail, {'www-authenticate': 'Bearer realm="api"'})
export const authenticationFailed = (detail = 'Invalid token.') =>
  errorReply(401, 'authentication_failed', detail, {'www-authenticate': 'Bearer realm="api"'})
export const forbidden = (detail = 'You do not have permission to perform this action.') => errorReply(403, 'permission_denied', detail)
export const notFound = (detail = 'Not found.') => errorReply(404, 'not_found', detail)
export const methodNotAllowed = (method: string) => errorReply(405, 'method_not_allowed', `Method "${method}" not allowed.`)
export const conflict = (code: string, detail: string) => errorReply(409, code, detail)
export const throttled = (seconds: number) =>
  errorReply(429, 'throttled', `Request was throttled. Expected available in ${seconds} second${seconds === 1 ? '' : 's'}.`, {
    'retry-after': String(seconds),
  })
export const serverError = (status: number, detail: string) => errorReply(status, status === 500 ? 'error' : 'service_unavailable', detail)
export const parseError = (detail: string) => ({
  status: 400,
  body: {type: 'client_error', errors: [{code: 'parse_error', detail, attr: null}]},
})

export function validationError(errors: readonly FieldError[]): Reply {
  return {status: 400, body: {type: 'validation_error', errors: errors.map(({code, detail, attr}) => ({code, detail, attr}))}}
}

export function fieldError(attr: string, code: string, detail: string): Reply {
  return validationError([{attr, code, detail}])
}
