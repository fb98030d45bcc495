/**
 * Kubernetes `resource.Quantity` strings ("10Gi", "3500m", "1e3") → plain numbers. Pure.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource):
 *   <quantity> ::= <sign>? <number> <suffix>
 *   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei            (binary, powers of 2^10)
 *                | n | u | m | "" | k | M | G | T | P | E  (decimal SI)
 *                | e<signed int> | E<signed int>           (decimal exponent)
 *
 * Decisions:
 * - The grammar is followed as Kubernetes does it: a sign is allowed ("-1" is a valid Quantity, -1), and so are
 *   `n` (nano) and `u` (micro) besides the `m` (milli) of the brief, since metrics APIs write CPU as "250000n".
 *   The capacity helpers below (`toMebibytes`, `toCores`) reject negative values: a capacity cannot be negative.
 * - Surrounding whitespace is trimmed (Kubernetes' JSON decoding does the same); whitespace inside ("10 Gi"), unknown
 *   suffixes ("Gb", "K", "KiB"), a suffix without digits ("Gi"), "NaN", "Infinity", hex and "1_000" are invalid.
 * - The value is the IEEE double nearest to the exact quantity (decimal forms go through `Number("<m>e<exp>")`,
 *   binary forms multiply by a power of two, which is exact), so "1.15k" is 1150 and not 1149.999…. A value beyond
 *   the double range ("1e400") is invalid. "-0" is 0.
 * - `toMebibytes` / `toCores` return undefined unless the result is a safe integer (so a CRD/API int64 field never
 *   gets a rounded or overflowing number).
 */

const quantityPattern = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+)|(n|u|m|k|M|G|T|P|E)?)$/

const binaryPowers: Record<string, number> = {Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60}
const decimalExponents: Record<string, number> = {n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18}

/** The value of a Kubernetes quantity, or undefined when the text is not a valid quantity. */
export function parseQuantity(text: string): number | undefined {
  if (typeof text !== 'string') return undefined
  const match = quantityPattern.exec(text.trim())
  if (!match) return undefined
  const [, sign = '', digits = '', binary, exponent, decimal] = match
  let value: number
  if (binary !== undefined) {
    value = Number(`${sign}${digits}`) * 2 ** binaryPowers[binary]!
  } else {
    const exp = exponent !== undefined ? Number(exponent) : decimalExponents[decimal ?? '']!
    value = Number(`${sign}${digits}e${exp}`)
  }
  if (!Number.isFinite(value)) return undefined
  return value === 0 ? 0 : value
}

/** A memory/storage quantity in MiB (bytes / 2^20), rounded down; undefined if invalid, negative or too large. */
export function toMebibytes(text: string): number | undefined {
  const bytes = parseQuantity(text)
  if (bytes === undefined || bytes < 0) return undefined
  const mebibytes = Math.floor(bytes / 2 ** 20)
  return Number.isSafeInteger(mebibytes) ? mebibytes : undefined
}

/**
 * A CPU quantity in whole cores, rounded down but at least 1 for any positive amount ("500m" → 1, "3500m" → 3,
 * "0" → 0); undefined if invalid, negative or too large.
 */
export function toCores(text: string): number | undefined {
  const cores = parseQuantity(text)
  if (cores === undefined || cores < 0) return undefined
  if (cores === 0) return 0
  const whole = Math.max(1, Math.floor(cores))
  return Number.isSafeInteger(whole) ? whole : undefined
}
