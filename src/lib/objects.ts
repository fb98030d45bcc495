/** Small helpers on plain objects. */

/**
 * A shallow copy without the keys whose value is undefined, so a built spec or request body deep-equals what the
 * API server (or the Polycrate API) returns, which never holds undefined.
 */
export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T
}
