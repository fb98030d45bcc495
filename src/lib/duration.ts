/**
 * Go durations (`time.ParseDuration` / `time.Duration.String()`), as Kubernetes objects written by Go controllers
 * carry them: Velero's `spec.ttl` (`metav1.Duration`, e.g. "720h0m0s"), robfig/cron's `@every 1h30m`.
 *
 * Decisions:
 * - The grammar is Go's: an optional sign, then one or more `<number><unit>` terms (`1h30m`, `1.5h`, `.5s`, `2h45m0.5s`),
 *   units `ns`, `us`, `µs` (U+00B5), `μs` (U+03BC), `ms`, `s`, `m`, `h`; the bare string "0" (optionally signed) is
 *   zero. No spaces, no `d` (days), no missing unit ("10"), no empty string.
 * - The value is kept as exact integer nanoseconds (a bigint), and a duration beyond Go's int64 range is invalid, as
 *   in Go. A fraction is cut towards zero at the nanosecond (`1.0000000009s` = 1 s); Go computes it in float64 and
 *   can differ in the last nanosecond for fractions longer than ~15 digits, which no real object has.
 * - `formatGoDuration` is Go's `Duration.String()`: "72h0m0s", "1h30m0s", "1.5s", "1.5ms", "500µs", "0s".
 */

const NANOS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 micro sign
  'μs': 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
}

const MAX_INT64 = (1n << 63n) - 1n

/** A parsed Go duration in nanoseconds, or undefined when `text` is not one (Go's ParseDuration would fail). */
export function parseGoDuration(text: string): bigint | undefined {
  if (typeof text !== 'string') return undefined
  let rest = text
  let negative = false
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-')
    rest = rest.slice(1)
  }
  if (rest === '0') return 0n
  if (rest === '') return undefined
  let total = 0n
  while (rest !== '') {
    const term = /^(\d*)(?:\.(\d*))?([^\d.]*)/.exec(rest)
    if (!term) return undefined
    const [whole, intPart = '', fracPart, unitText = ''] = term
    if (intPart === '' && (fracPart === undefined || fracPart === '')) return undefined // "." or a unit alone
    const unit = NANOS[unitText]
    if (unit === undefined) return undefined // missing ("10") or unknown ("10d", "10 h") unit
    let value = BigInt(intPart || '0') * unit
    if (fracPart) value += (BigInt(fracPart) * unit) / 10n ** BigInt(fracPart.length)
    total += value
    if (total > MAX_INT64 + (negative ? 1n : 0n)) return undefined
    rest = rest.slice(whole.length)
  }
  return negative ? -total : total
}

/** Whether `text` is a Go duration. */
export function isGoDuration(text: string): boolean {
  return parseGoDuration(text) !== undefined
}

/** Go's `time.Duration.String()` of a duration in nanoseconds. */
export function formatGoDuration(nanos: bigint): string {
  const negative = nanos < 0n
  let u = negative ? -nanos : nanos
  let out: string
  if (u < 1_000_000_000n) {
    if (u === 0n) return '0s'
    if (u < 1_000n) out = `${u}ns`
    else if (u < 1_000_000n) out = `${withFraction(u, 3)}µs`
    else out = `${withFraction(u, 6)}ms`
  } else {
    const seconds = withFraction(u % 60_000_000_000n, 9)
    u /= 60_000_000_000n // whole minutes
    out = `${seconds}s`
    if (u > 0n) {
      out = `${u % 60n}m${out}`
      u /= 60n
      if (u > 0n) out = `${u}h${out}`
    }
  }
  return negative ? `-${out}` : out
}

/** `value / 10**precision` with its fraction, trailing zeros (and a bare ".") left out. */
function withFraction(value: bigint, precision: number): string {
  const scale = 10n ** BigInt(precision)
  const fraction = (value % scale).toString().padStart(precision, '0').replace(/0+$/, '')
  return fraction === '' ? `${value / scale}` : `${value / scale}.${fraction}`
}

/** `text` in Go's canonical spelling ("96h" → "96h0m0s"), or undefined when it is not a Go duration. */
export function canonicalGoDuration(text: string): string | undefined {
  const nanos = parseGoDuration(text)
  return nanos === undefined ? undefined : formatGoDuration(nanos)
}
