/**
 * Cron expression checks (pure), written after the two parsers the backup tools use (Velero, CloudNativePG):
 *
 * - `standard` — Velero's `spec.schedule`: robfig/cron v3 `ParseStandard`: exactly 5 fields
 *   (minute hour day-of-month month day-of-week), an optional `TZ=<zone> ` / `CRON_TZ=<zone> ` prefix, or a
 *   descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every <Go duration>`).
 * - `cnpg` — CloudNativePG's `spec.schedule`: robfig/cron v1.2.0 `cron.Parse`
 *   (`Second|Minute|Hour|Dom|Month|DowOptional|Descriptor`): 6 fields (second minute hour dom month dow), or the
 *   same descriptors; no time-zone prefix. A 5-field string is ACCEPTED by that parser but read as
 *   `second minute hour dom month` (day-of-week `*`), so "0 0 * * *" runs hourly: the check reports it as valid with
 *   `fiveFieldCnpg: true`, and the caller decides what to tell the user.
 *
 * Field syntax (both versions): a comma-separated list of `*` or `?` (any), `n`, `a-b`, each optionally `/step`;
 * `n/step` means `n-max/step`; month names `jan`…`dec` and weekday names `sun`…`sat` (any case) in those fields.
 * Ranges: second/minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-6 (7 is NOT Sunday in robfig).
 * A step must be a positive integer; a range must not run backwards. `L`, `W`, `#` are not supported (robfig has
 * none of them). Like robfig, a `*` ignores anything after a `-` (`*-5` = `*`). Descriptors are case-sensitive.
 * The `TZ=` zone is checked with Intl (the IANA names Go's tz database knows, plus `UTC` and `Local`).
 */
import {parseGoDuration} from './duration.js'

export type CronDialect = 'standard' | 'cnpg'

export type CronCheck =
  | {valid: true; form: 'fields' | 'descriptor'; fiveFieldCnpg?: true}
  | {valid: false; error: string}

interface FieldRange {
  name: string
  min: number
  max: number
  names?: Readonly<Record<string, number>>
}

const months = Object.fromEntries(['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].map((m, i) => [m, i + 1]))
const weekdays = Object.fromEntries(['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'].map((d, i) => [d, i]))

const second: FieldRange = {name: 'second', min: 0, max: 59}
const minute: FieldRange = {name: 'minute', min: 0, max: 59}
const hour: FieldRange = {name: 'hour', min: 0, max: 23}
const dayOfMonth: FieldRange = {name: 'day-of-month', min: 1, max: 31}
const month: FieldRange = {name: 'month', min: 1, max: 12, names: months}
const dayOfWeek: FieldRange = {name: 'day-of-week', min: 0, max: 6, names: weekdays}

const descriptors = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'])

/** Checks `expression` the way the given tool's parser would; never throws. */
export function checkCron(expression: string, dialect: CronDialect): CronCheck {
  if (typeof expression !== 'string' || expression === '') return {valid: false, error: 'the schedule is empty'}
  let spec = expression
  if (dialect === 'standard' && (spec.startsWith('TZ=') || spec.startsWith('CRON_TZ='))) {
    const space = spec.indexOf(' ')
    if (space < 0) return {valid: false, error: `"${spec}" has a time-zone prefix but no schedule after it`}
    const zone = spec.slice(spec.indexOf('=') + 1, space)
    if (!isTimeZone(zone)) return {valid: false, error: `unknown time zone "${zone}"`}
    spec = spec.slice(space).trim()
  }
  if (spec.startsWith('@')) return checkDescriptor(spec)

  const fields = spec.split(/\s+/).filter((f) => f !== '')
  let ranges: FieldRange[]
  let fiveFieldCnpg = false
  if (dialect === 'standard') {
    if (fields.length !== 5) {
      return {valid: false, error: `expected exactly 5 fields (minute hour day-of-month month day-of-week), found ${fields.length}`}
    }
    ranges = [minute, hour, dayOfMonth, month, dayOfWeek]
  } else {
    if (fields.length !== 5 && fields.length !== 6) {
      return {valid: false, error: `expected 6 fields (second minute hour day-of-month month day-of-week), found ${fields.length}`}
    }
    fiveFieldCnpg = fields.length === 5
    ranges = [second, minute, hour, dayOfMonth, month, dayOfWeek].slice(0, fields.length)
  }
  for (const [index, field] of fields.entries()) {
    const error = checkField(field, ranges[index]!)
    if (error) return {valid: false, error}
  }
  return fiveFieldCnpg ? {valid: true, form: 'fields', fiveFieldCnpg: true} : {valid: true, form: 'fields'}
}

function checkDescriptor(spec: string): CronCheck {
  if (descriptors.has(spec)) return {valid: true, form: 'descriptor'}
  if (spec.startsWith('@every ')) {
    const duration = spec.slice('@every '.length)
    if (parseGoDuration(duration) === undefined) return {valid: false, error: `"${duration}" in "${spec}" is not a Go duration such as 1h30m`}
    return {valid: true, form: 'descriptor'}
  }
  return {valid: false, error: `unrecognized descriptor "${spec}" (known: ${[...descriptors].join(', ')}, @every <duration>)`}
}

function checkField(field: string, range: FieldRange): string | undefined {
  for (const part of field.split(',')) {
    const error = checkRange(part, range)
    if (error) return `${range.name} field "${field}": ${error}`
  }
  return undefined
}

function checkRange(expr: string, range: FieldRange): string | undefined {
  const rangeAndStep = expr.split('/')
  const lowAndHigh = rangeAndStep[0]!.split('-')
  let start: number
  let end: number
  if (lowAndHigh[0] === '*' || lowAndHigh[0] === '?') {
    start = range.min
    end = range.max
  } else {
    if (lowAndHigh.length > 2) return `too many hyphens in "${expr}"`
    const low = intOrName(lowAndHigh[0]!, range)
    if (typeof low === 'string') return low
    start = low
    if (lowAndHigh.length === 2) {
      const high = intOrName(lowAndHigh[1]!, range)
      if (typeof high === 'string') return high
      end = high
    } else end = start
  }
  if (rangeAndStep.length > 2) return `too many slashes in "${expr}"`
  if (rangeAndStep.length === 2) {
    const step = integer(rangeAndStep[1]!)
    if (typeof step === 'string') return step
    if (step === 0) return `step of "${expr}" must be a positive number`
    if (lowAndHigh.length === 1) end = range.max
  }
  if (start < range.min) return `${start} is below the minimum ${range.min}`
  if (end > range.max) return `${end} is above the maximum ${range.max}`
  if (start > end) return `the range "${expr}" runs backwards`
  return undefined
}

function intOrName(text: string, range: FieldRange): number | string {
  const named = range.names?.[text.toLowerCase()]
  return named ?? integer(text)
}

function integer(text: string): number | string {
  if (!/^[+-]?\d+$/.test(text)) return `"${text}" is not a number`
  const value = Number(text)
  if (value < 0) return `"${text}" is negative`
  return value
}

function isTimeZone(zone: string): boolean {
  if (zone === 'UTC' || zone === 'Local') return true
  if (zone === '') return false
  try {
    new Intl.DateTimeFormat('en-US', {timeZone: zone})
    return true
  } catch {
    return false
  }
}
