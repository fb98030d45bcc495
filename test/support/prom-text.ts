/**
 * A strict parser for the Prometheus text exposition format (version 0.0.4), for tests: it throws on anything
 * Prometheus' own parser (expfmt) would reject, plus the consistency rules promtool checks for histograms and
 * summaries. https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */
export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
  timestamp?: number
  line: number
}

export interface MetricFamily {
  name: string
  type: MetricType
  help?: string
  samples: Sample[]
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const types = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
/** What Go's strconv.ParseFloat accepts in decimal (Prometheus parses values with it): case-insensitive Inf/NaN. */
const floatPattern = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i

export class PromTextError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`)
  }
}

/** Parses `text`; throws PromTextError at the first violation. Families are keyed by their name. */
export function parsePromText(text: string): Map<string, MetricFamily> {
  if (text !== '' && !text.endsWith('\n')) throw new PromTextError(text.split('\n').length, 'the last line must end with a line feed')
  const families = new Map<string, MetricFamily>()
  const seenSeries = new Set<string>()
  const closed = new Set<string>()
  const typed = new Set<string>()
  let current: MetricFamily | undefined
  const lines = text.split('\n')
  lines.pop() // after the final line feed

  const switchTo = (name: string, line: number): MetricFamily => {
    if (current?.name === name) return current
    if (closed.has(name) || families.has(name)) {
      throw new PromTextError(line, `metric family ${name} appears in two places: its lines must be contiguous`)
    }
    if (current) closed.add(current.name)
    current = {name, type: 'untyped', samples: []}
    families.set(name, current)
    return current
  }

  for (const [index, raw] of lines.entries()) {
    const line = index + 1
    const text = raw.replace(/^[ \t]+/, '')
    if (text === '') continue
    if (text.startsWith('#')) {
      const match = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(text)
      if (!match) continue // any other comment
      const [, keyword, name = '', rest = ''] = match
      if (!metricName.test(name)) throw new PromTextError(line, `invalid metric name "${name}"`)
      const family = switchTo(name, line)
      if (keyword === 'HELP') {
        if (family.help !== undefined) throw new PromTextError(line, `second HELP line for ${name}`)
        family.help = unescapeHelp(rest, line)
      } else {
        if (typed.has(name)) throw new PromTextError(line, `second TYPE line for ${name}`)
        if (family.samples.length > 0) throw new PromTextError(line, `TYPE line for ${name} after its samples`)
        const type = rest.trim()
        if (!types.has(type as MetricType)) throw new PromTextError(line, `unknown metric type "${type}" for ${name}`)
        family.type = type as MetricType
        typed.add(name)
      }
      continue
    }

    const sample = parseSample(text, line)
    const familyName = familyOf(sample.name, current)
    const family = switchTo(familyName, line)
    checkSampleName(family, sample)
    const key = `${sample.name}{${Object.entries(sample.labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`
    if (seenSeries.has(key)) throw new PromTextError(line, `duplicate series ${key}`)
    seenSeries.add(key)
    family.samples.push(sample)
  }

  for (const family of families.values()) {
    if (family.type === 'histogram') checkHistogram(family)
    if (family.type === 'summary') checkSummary(family)
    if (family.type === 'counter') {
      for (const s of family.samples) {
        if (s.value < 0) throw new PromTextError(s.line, `counter ${s.name} is negative (${s.value})`)
      }
    }
  }
  return families
}

/** The family a sample belongs to: the current family if the name is one of its sample names, else the name itself. */
function familyOf(name: string, current: MetricFamily | undefined): string {
  if (current) {
    const suffixes = current.type === 'histogram' ? ['_bucket', '_sum', '_count'] : current.type === 'summary' ? ['', '_sum', '_count'] : ['']
    if (suffixes.some((suffix) => current.name + suffix === name)) return current.name
  }
  return name
}

function checkSampleName(family: MetricFamily, sample: Sample) {
  const allowed = family.type === 'histogram' ? ['_bucket', '_sum', '_count'] : family.type === 'summary' ? ['', '_sum', '_count'] : ['']
  if (!allowed.some((suffix) => family.name + suffix === sample.name)) {
    throw new PromTextError(sample.line, `sample ${sample.name} does not belong to ${family.type} ${family.name}`)
  }
  if (family.type === 'histogram' && sample.name.endsWith('_bucket') && !('le' in sample.labels)) {
    throw new PromTextError(sample.line, `histogram bucket ${sample.name} has no "le" label`)
  }
  if (family.type === 'histogram' && !sample.name.endsWith('_bucket') && 'le' in sample.labels) {
    throw new PromTextError(sample.line, `${sample.name} must not carry an "le" label`)
  }
  if (family.type === 'summary' && sample.name === family.name && !('quantile' in sample.labels)) {
    throw new PromTextError(sample.line, `summary sample ${sample.name} has no "quantile" label`)
  }
}

function parseSample(text: string, line: number): Sample {
  let pos = 0
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(text)
  if (!nameMatch) throw new PromTextError(line, `invalid metric name at "${text.slice(0, 40)}"`)
  const name = nameMatch[0]
  pos = name.length
  const labels: Record<string, string> = {}
  if (text[pos] === '{') {
    pos++
    for (;;) {
      pos = skipBlanks(text, pos)
      if (text[pos] === '}') {
        pos++
        break
      }
      const labelMatch = /^[^=\s]*/.exec(text.slice(pos))
      const label = labelMatch?.[0] ?? ''
      if (!labelName.test(label)) throw new PromTextError(line, `invalid label name "${label}" in ${name}`)
      if (label.startsWith('__')) throw new PromTextError(line, `label name "${label}" in ${name} is reserved (starts with __)`)
      if (label in labels) throw new PromTextError(line, `label "${label}" appears twice in ${name}`)
      pos = skipBlanks(text, pos + label.length)
      if (text[pos] !== '=') throw new PromTextError(line, `expected "=" after label ${label} in ${name}`)
      pos = skipBlanks(text, pos + 1)
      if (text[pos] !== '"') throw new PromTextError(line, `label value of ${label} in ${name} must be quoted`)
      pos++
      let value = ''
      for (;;) {
        const ch = text[pos]
        if (ch === undefined) throw new PromTextError(line, `unterminated label value of ${label} in ${name}`)
        if (ch === '"') break
        if (ch === '\\') {
          const next = text[pos + 1]
          if (next === '\\') value += '\\'
          else if (next === '"') value += '"'
          else if (next === 'n') value += '\n'
          else throw new PromTextError(line, `invalid escape "\\${next ?? ''}" in label value of ${label} in ${name}`)
          pos += 2
          continue
        }
        value += ch
        pos++
      }
      labels[label] = value
      pos = skipBlanks(text, pos + 1)
      if (text[pos] === ',') {
        pos++
        continue
      }
      if (text[pos] === '}') {
        pos++
        break
      }
      throw new PromTextError(line, `expected "," or "}" after label ${label} in ${name}`)
    }
  }
  const rest = text.slice(pos)
  const fields = /^[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*$/.exec(rest)
  if (!fields) throw new PromTextError(line, `expected " value [timestamp]" after ${name}, got "${rest}"`)
  const valueText = fields[1] ?? ''
  if (!floatPattern.test(valueText)) throw new PromTextError(line, `invalid sample value "${valueText}" for ${name}`)
  const sample: Sample = {name, labels, value: parseFloatValue(valueText), line}
  if (fields[2] !== undefined) {
    if (!/^-?\d+$/.test(fields[2])) throw new PromTextError(line, `invalid timestamp "${fields[2]}" for ${name}`)
    sample.timestamp = Number(fields[2])
  }
  return sample
}

function parseFloatValue(text: string): number {
  const lower = text.toLowerCase().replace(/^\+/, '')
  if (lower === 'nan' || lower === '-nan') return Number.NaN
  if (lower === 'inf' || lower === 'infinity') return Number.POSITIVE_INFINITY
  if (lower === '-inf' || lower === '-infinity') return Number.NEGATIVE_INFINITY
  return Number(text)
}

function skipBlanks(text: string, pos: number): number {
  while (text[pos] === ' ' || text[pos] === '\t') pos++
  return pos
}

function unescapeHelp(text: string, line: number): string {
  return text.replace(/\\(.?)/g, (_, next: string) => {
    if (next === '\\') return '\\'
    if (next === 'n') return '\n'
    throw new PromTextError(line, `invalid escape "\\${next}" in HELP text`)
  })
}

/** Groups samples by their labels without `drop`, e.g. a histogram's series without `le`. */
function groupBy(samples: Sample[], drop: string): Map<string, Sample[]> {
  const groups = new Map<string, Sample[]>()
  for (const s of samples) {
    const key = JSON.stringify(Object.entries(s.labels).filter(([k]) => k !== drop).sort(([a], [b]) => a.localeCompare(b)))
    const list = groups.get(key) ?? []
    list.push(s)
    groups.set(key, list)
  }
  return groups
}

function checkHistogram(family: MetricFamily) {
  const buckets = groupBy(family.samples.filter((s) => s.name === `${family.name}_bucket`), 'le')
  const sums = groupBy(family.samples.filter((s) => s.name === `${family.name}_sum`), 'le')
  const counts = groupBy(family.samples.filter((s) => s.name === `${family.name}_count`), 'le')
  for (const [key, series] of buckets) {
    const first = series[0]!
    const les = series.map((s) => {
      const le = s.labels.le ?? ''
      if (!floatPattern.test(le)) throw new PromTextError(s.line, `invalid le="${le}" in ${s.name}`)
      return {le: parseFloatValue(le), sample: s}
    })
    for (let i = 1; i < les.length; i++) {
      const prev = les[i - 1]!
      const cur = les[i]!
      if (!(cur.le > prev.le)) throw new PromTextError(cur.sample.line, `${family.name} buckets are not in increasing le order`)
      if (cur.sample.value < prev.sample.value) {
        throw new PromTextError(cur.sample.line, `${family.name} buckets are not cumulative: le=${cur.sample.labels.le} has ${cur.sample.value} < ${prev.sample.value}`)
      }
    }
    const inf = les.at(-1)!
    if (inf.le !== Number.POSITIVE_INFINITY) throw new PromTextError(first.line, `${family.name} has no le="+Inf" bucket`)
    const count = counts.get(key)?.[0]
    const sum = sums.get(key)?.[0]
    if (!count) throw new PromTextError(first.line, `${family.name} has buckets but no _count for ${key}`)
    if (!sum) throw new PromTextError(first.line, `${family.name} has buckets but no _sum for ${key}`)
    if (count.value !== inf.sample.value) {
      throw new PromTextError(count.line, `${family.name}_count (${count.value}) differs from the +Inf bucket (${inf.sample.value})`)
    }
  }
  for (const [key, [count]] of counts) {
    if (count && !buckets.has(key)) throw new PromTextError(count.line, `${family.name}_count without buckets for ${key}`)
  }
}

function checkSummary(family: MetricFamily) {
  const counts = groupBy(family.samples.filter((s) => s.name === `${family.name}_count`), 'quantile')
  const sums = groupBy(family.samples.filter((s) => s.name === `${family.name}_sum`), 'quantile')
  for (const [key, series] of groupBy(family.samples.filter((s) => s.name === family.name), 'quantile')) {
    for (const s of series) {
      const q = Number(s.labels.quantile)
      if (!(q >= 0 && q <= 1)) throw new PromTextError(s.line, `invalid quantile="${s.labels.quantile}" in ${s.name}`)
    }
    if (!counts.has(key) || !sums.has(key)) throw new PromTextError(series[0]!.line, `${family.name} quantiles without _sum/_count for ${key}`)
  }
}
