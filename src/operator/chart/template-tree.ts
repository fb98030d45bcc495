/**
 * A rendered object turned into a Helm template (pure): the values that stand for a setting (placeholders: unique
 * strings and numbers, see compile.ts) become Go template expressions — inside strings, inside JSON documents held in
 * strings (a Grafana dashboard), inside base64 (Secret data) —, a list that holds a list setting becomes that
 * setting, and the parts that vary with a setting become `if`/`else` branches. Then written as YAML with the
 * template actions (emitYaml).
 */
export const ABSENT = Symbol('absent')
export type Absent = typeof ABSENT

/** A piece of a string: literal text, or a Go expression that yields text. */
export type Part = {lit: string} | {go: string}

export type TemplateNode =
  | {t: 'lit'; value: string | number | boolean | null}
  /** A string built from parts. */
  | {t: 'str'; parts: Part[]}
  /** A number setting. */
  | {t: 'num'; go: string}
  /** A value given by a Go expression, written as JSON (a map or list). */
  | {t: 'json'; go: string}
  /** A list setting with literal items before and after it. */
  | {t: 'splice'; before: unknown[]; go: string; after: unknown[]}
  /** Entries: the key's parts, the value, the key as rendered (placeholders in it). */
  | {t: 'map'; entries: Array<[Part[], TemplateNode, string]>}
  | {t: 'list'; items: TemplateNode[]}
  /** Branches by condition (Go expressions, exclusive, together covering every case). */
  | {t: 'cond'; branches: Array<{cond: string; node: TemplateNode | Absent}>}

/** What the converter knows about the placeholders in a rendering. */
export interface Placeholders {
  /** A token string (it may sit inside a longer string) → the Go expression of its setting's value. */
  strings: ReadonlyMap<string, string>
  /** A sentinel number → the Go expression of its setting's value. */
  numbers: ReadonlyMap<number, string>
  /** List settings whose placeholder case is in this rendering: their two sample items, the Go expression of the list. */
  lists: ReadonlyArray<{items: readonly [unknown, unknown]; go: string}>
  /** A marker object (see OPAQUE) → its Go expression. */
  opaque?: ReadonlyMap<string, string>
}

/** Key of a marker object that stands for a value given by a Go expression (an opaque field). */
export const OPAQUE = '__polycrate_chart_opaque__'

/** The template of a rendered value. */
export function toTemplate(value: unknown, placeholders: Placeholders): TemplateNode {
  if (value === null || typeof value === 'boolean') return {t: 'lit', value}
  if (typeof value === 'number') {
    const go = placeholders.numbers.get(value)
    return go ? {t: 'num', go} : {t: 'lit', value}
  }
  if (typeof value === 'string') {
    const parts = stringParts(value, placeholders)
    return parts.every((part) => 'lit' in part) ? {t: 'lit', value} : {t: 'str', parts}
  }
  if (Array.isArray(value)) {
    for (const list of placeholders.lists) {
      const at = value.findIndex((item, index) => deepEqual(item, list.items[0]) && deepEqual(value[index + 1], list.items[1]))
      if (at >= 0) return {t: 'splice', before: value.slice(0, at), go: list.go, after: value.slice(at + 2)}
    }
    return {t: 'list', items: value.map((item) => toTemplate(item, placeholders))}
  }
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>
    if (OPAQUE in record) return {t: 'json', go: placeholders.opaque?.get(String(record[OPAQUE])) ?? fail(`unknown opaque marker ${String(record[OPAQUE])}`)}
    return {t: 'map', entries: Object.entries(record).map(([key, child]) => [stringParts(key, placeholders), toTemplate(child, placeholders), key])}
  }
  throw new Error(`cannot template a ${typeof value}`)
}

/**
 * The parts of a string: its placeholders as expressions; a JSON document (as JSON.stringify wrote it, compact or
 * indented by 2) templated value by value (strings escaped by toRawJson); base64 whose text holds placeholders as
 * b64enc of that text.
 */
export function stringParts(text: string, placeholders: Placeholders): Part[] {
  const tokens = tokensOf(placeholders)
  if (tokens.some(([token]) => text.includes(token))) {
    const json = jsonDocument(text)
    if (json) return mergeParts(jsonParts(json.value, json.indent, '', placeholders))
    return splitByTokens(text, tokens)
  }
  const decoded = base64Text(text)
  if (decoded !== undefined) {
    const inner = stringParts(decoded, placeholders)
    if (inner.some((part) => 'go' in part)) return [{go: `(${printOf(inner)} | b64enc)`}]
  }
  return [{lit: text}]
}

/** The Go expression that prints parts as one string (`print` of strings: no separators). */
export function printOf(parts: readonly Part[]): string {
  if (parts.length === 1 && 'go' in parts[0]!) return parts[0].go
  return `print ${parts.map((part) => ('lit' in part ? goString(part.lit) : part.go)).join(' ')}`
}

/** A Go template string literal (JSON's escapes are Go's). */
export function goString(text: string): string {
  return JSON.stringify(text)
}

function tokensOf(placeholders: Placeholders): Array<[string, string]> {
  const tokens: Array<[string, string]> = [...placeholders.strings].map(([token, go]) => [token, `(toString ${go})`])
  for (const [number, go] of placeholders.numbers) tokens.push([String(number), `(toString ${go})`])
  // Longest first, so that a token inside another (none by construction) cannot split it.
  return tokens.sort(([a], [b]) => b.length - a.length)
}

function splitByTokens(text: string, tokens: ReadonlyArray<[string, string]>): Part[] {
  const parts: Part[] = []
  let rest = text
  while (rest.length > 0) {
    let best: {index: number; token: string; go: string} | undefined
    for (const [token, go] of tokens) {
      const index = rest.indexOf(token)
      if (index >= 0 && (!best || index < best.index)) best = {index, token, go}
    }
    if (!best) {
      parts.push({lit: rest})
      break
    }
    if (best.index > 0) parts.push({lit: rest.slice(0, best.index)})
    parts.push({go: best.go})
    rest = rest.slice(best.index + best.token.length)
  }
  return parts
}

function jsonDocument(text: string): {value: unknown; indent: number} | undefined {
  if (!/^[[{]/.test(text)) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (JSON.stringify(value) === text) return {value, indent: 0}
  if (JSON.stringify(value, null, 2) === text) return {value, indent: 2}
  return undefined
}

/** JSON text as JSON.stringify(value, null, indent) writes it, with the placeholders' strings and numbers as expressions. */
function jsonParts(value: unknown, indent: number, prefix: string, placeholders: Placeholders): Part[] {
  const newline = indent > 0 ? `\n${prefix}${' '.repeat(indent)}` : ''
  const close = indent > 0 ? `\n${prefix}` : ''
  const inner = prefix + ' '.repeat(indent)
  if (typeof value === 'string') {
    const parts = stringParts(value, placeholders)
    return parts.every((part) => 'lit' in part) ? [{lit: JSON.stringify(value)}] : [{go: `(${printOf(parts)} | toRawJson)`}]
  }
  if (typeof value === 'number') {
    const go = placeholders.numbers.get(value)
    return go ? [{go: `(toRawJson ${go})`}] : [{lit: JSON.stringify(value)}]
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return [{lit: '[]'}]
    const parts: Part[] = [{lit: '['}]
    value.forEach((item, index) => parts.push({lit: `${index > 0 ? ',' : ''}${newline}`}, ...jsonParts(item, indent, inner, placeholders)))
    return [...parts, {lit: `${close}]`}]
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, child]) => child !== undefined)
    if (entries.length === 0) return [{lit: '{}'}]
    const parts: Part[] = [{lit: '{'}]
    entries.forEach(([key, child], index) => {
      parts.push({lit: `${index > 0 ? ',' : ''}${newline}`}, ...jsonParts(key, indent, inner, placeholders), {lit: indent > 0 ? ': ' : ':'}, ...jsonParts(child, indent, inner, placeholders))
    })
    return [...parts, {lit: `${close}}`}]
  }
  return [{lit: JSON.stringify(value)}]
}

function mergeParts(parts: readonly Part[]): Part[] {
  const merged: Part[] = []
  for (const part of parts) {
    const last = merged.at(-1)
    if (last && 'lit' in last && 'lit' in part) merged[merged.length - 1] = {lit: last.lit + part.lit}
    else merged.push(part)
  }
  return merged
}

function base64Text(text: string): string | undefined {
  if (text.length < 4 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64')
  if (bytes.toString('base64') !== text) return undefined
  const decoded = bytes.toString('utf8')
  return Buffer.from(decoded, 'utf8').equals(bytes) ? decoded : undefined
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((item, index) => deepEqual(item, (b as unknown[])[index]))
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  return keysA.length === keysB.length && keysA.every((key) => Object.hasOwn(b, key) && deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
}

function fail(message: string): never {
  throw new Error(message)
}
