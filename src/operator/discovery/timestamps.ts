/**
 * Timestamps of source objects (pure): discovery writes them to CRs as RFC 3339 in UTC (`2024-01-01T00:00:00Z`; a
 * non-zero fraction is kept to the millisecond), whatever offset the source wrote; a Date (typed client objects)
 * works too. An unreadable value is left out with an `InvalidTimestamp` problem.
 */
import {commonProblemReasons, quoted, type DiscoveryProblem} from './types.js'

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/** Epoch milliseconds of an RFC 3339 date-time (or a valid Date); undefined for anything else. */
export function timestampMillis(value: unknown): number | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.getTime()
  if (typeof value !== 'string') return undefined
  const match = rfc3339.exec(value)
  if (!match) return undefined
  const [, y, mo, d, h, mi, s, fraction, zone] = match
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number]
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined
  let offsetMinutes = 0
  if (zone !== 'Z') {
    const [oh, om] = zone!.slice(1).split(':').map(Number) as [number, number]
    if (oh > 23 || om > 59) return undefined
    offsetMinutes = (zone!.startsWith('-') ? -1 : 1) * (oh * 60 + om)
  }
  const millis = fraction ? Number(`${fraction.slice(1)}00`.slice(0, 3)) : 0
  const utc = new Date(0)
  utc.setUTCFullYear(year, month - 1, day)
  utc.setUTCHours(hour, minute, second, millis)
  return utc.getTime() - offsetMinutes * 60_000
}

/** RFC 3339 in UTC: `2024-01-01T00:00:00Z`, with `.sss` only when the milliseconds are not zero. */
export function formatTimestamp(millis: number): string {
  return new Date(millis).toISOString().replace(/\.000Z$/, 'Z')
}

/** `normalizeTimestamp("2024-01-01T01:00:00+01:00")` → "2024-01-01T00:00:00Z"; undefined when not a timestamp. */
export function normalizeTimestamp(value: unknown): string | undefined {
  const millis = timestampMillis(value)
  return millis === undefined ? undefined : formatTimestamp(millis)
}

/** A timestamp field: absent when the source has none, absent + an InvalidTimestamp problem when unreadable. */
export function timestampField(
  value: unknown,
  subject: string,
  path: string,
  field: string,
  problems: DiscoveryProblem[],
): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const normalized = normalizeTimestamp(value)
  if (normalized === undefined) {
    problems.push({
      reason: commonProblemReasons.invalidTimestamp,
      message: `${subject}: ${path} ${quoted(value)} is not an RFC 3339 timestamp such as "2024-01-01T00:00:00Z"; ${field} is left out.`,
    })
  }
  return normalized
}
