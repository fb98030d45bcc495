/** The hash sync keeps in `configHash` / `config_hash`: unchanged payloads cause no API write. */
import {createHash} from 'node:crypto'

/** Stable hash of a payload: keys sorted, so equal content always hashes the same. */
export function configHash(payload: unknown): string {
  return createHash('sha256').update(canonical(payload)).digest('hex').slice(0, 16)
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}
