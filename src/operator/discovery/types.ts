/**
 * Types every kind's discovery mapping shares: the problems a mapping reports about a source (the engine turns them
 * into Kubernetes Events on that source) and the timestamps it reads.
 */

/** A timestamp as a source object holds it: a string in API JSON, a Date in @kubernetes/client-node's typed objects. */
export type TimestampLike = string | Date

/** Something wrong with a source a person should see; a problem never stops the other fields of a mapping. */
export interface DiscoveryProblem {
  /** The Event type: Warning unless said otherwise. */
  type?: 'Warning' | 'Normal'
  /** CamelCase Event reason, one of the kind's problem reasons (or `commonProblemReasons`). */
  reason: string
  /** Names the field, annotation or host, the bad value and what is accepted. */
  message: string
}

/** Problem reasons several kinds report with the same meaning (also Kubernetes Event reasons). */
export const commonProblemReasons = {
  /** The source has no metadata.name: there is nothing to name its CR after. */
  missingName: 'MissingName',
  /** A timestamp field that is not RFC 3339: the field is left out. */
  invalidTimestamp: 'InvalidTimestamp',
} as const

/** A source's bad value as a problem message shows it: strings in quotes, anything else as JSON. */
export function quoted(value: unknown): string {
  if (typeof value === 'string') return `"${value}"`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
