/**
 * Writes a template tree (template-tree.ts) as a Helm template (pure): block YAML, two spaces per level, each
 * setting as a `{{ … }}` action, each branch as `{{- if … }}` … `{{- end }}` lines (Helm's own style), literal text
 * that holds `{{` or `}}` (Prometheus' and Grafana's own templates) as a quoted Go string so that Helm prints it as
 * it is.
 */
import yaml from 'js-yaml'
import {ABSENT, goString, printOf, type Part, type TemplateNode} from './template-tree.js'

/** The lines of one YAML document (no `---`). */
export function emitDocument(node: TemplateNode): string[] {
  if (node.t === 'cond') {
    return branchLines(node.branches, '', (child) => emitDocument(child))
  }
  if (node.t !== 'map') throw new Error(`a document must be a map, got ${node.t}`)
  return mapLines(node.entries, '')
}

function mapLines(entries: ReadonlyArray<readonly [Part[], TemplateNode, string]>, indent: string): string[] {
  const lines: string[] = []
  for (const [key, value] of entries) {
    if (value.t === 'cond') {
      lines.push(...branchLines(value.branches, indent, (child) => entryLines(key, child, indent)))
    } else {
      lines.push(...entryLines(key, value, indent))
    }
  }
  return lines
}

function entryLines(key: Part[], value: TemplateNode, indent: string): string[] {
  const head = `${indent}${keyText(key)}:`
  const inline = inlineText(value)
  if (inline !== undefined) return [`${head} ${inline}`]
  if (value.t === 'map') return [head, ...mapLines(value.entries, `${indent}  `)]
  if (value.t === 'list') return [head, ...listLines(value.items, `${indent}  `)]
  if (value.t === 'cond') throw new Error('nested branches are written by their entry')
  throw new Error(`cannot write a ${value.t}`)
}

function listLines(items: readonly TemplateNode[], indent: string): string[] {
  const lines: string[] = []
  for (const item of items) {
    if (item.t === 'cond') {
      lines.push(...branchLines(item.branches, indent, (child) => itemLines(child, indent)))
    } else {
      lines.push(...itemLines(item, indent))
    }
  }
  return lines
}

function itemLines(item: TemplateNode, indent: string): string[] {
  const inline = inlineText(item)
  if (inline !== undefined) return [`${indent}- ${inline}`]
  if (item.t === 'list') return [`${indent}-`, ...listLines(item.items, `${indent}  `)]
  if (item.t === 'map') {
    const body = mapLines(item.entries, `${indent}  `)
    // The first entry on the dash's line, as YAML is usually written (unless it starts with a branch).
    if (body[0] && !body[0].trimStart().startsWith('{{')) return [`${indent}- ${body[0].slice(indent.length + 2)}`, ...body.slice(1)]
    return [`${indent}-`, ...body]
  }
  throw new Error(`cannot write a ${item.t} as a list item`)
}

function branchLines<T>(branches: ReadonlyArray<{cond: string; node: T | typeof ABSENT}>, indent: string, lines: (node: T) => string[]): string[] {
  // Branches that write nothing are left out; when none is, the last is written as `else` (the conditions of a
  // chain are exclusive and cover every case).
  const present = branches.filter((branch) => branch.node !== ABSENT)
  if (present.length === 0) return []
  const all = present.length === branches.length
  const out: string[] = []
  present.forEach((branch, index) => {
    const keyword = index === 0 ? `if ${branch.cond}` : all && index === present.length - 1 ? 'else' : `else if ${branch.cond}`
    out.push(`${indent}{{- ${keyword} }}`)
    out.push(...lines(branch.node as T))
  })
  out.push(`${indent}{{- end }}`)
  return out
}

/** A node written on one line (scalars, settings, empty maps and lists), or undefined for block maps and lists. */
function inlineText(node: TemplateNode): string | undefined {
  switch (node.t) {
    case 'lit': return scalarText(node.value)
    case 'str': return `{{ ${bare(printOf(node.parts))} | toJson }}`
    case 'num': return `{{ ${bare(node.go)} }}`
    case 'json': return `{{ ${bare(node.go)} | toJson }}`
    case 'splice': {
      const lists = [
        ...(node.before.length > 0 ? [goList(node.before)] : []),
        node.go,
        ...(node.after.length > 0 ? [goList(node.after)] : []),
      ]
      return `{{ ${lists.length === 1 ? node.go : `concat ${lists.join(' ')}`} | toJson }}`
    }
    case 'map': return node.entries.length === 0 ? '{}' : undefined
    case 'list': return node.items.length === 0 ? '[]' : undefined
    case 'cond': return undefined
  }
}

function keyText(parts: Part[]): string {
  if (parts.every((part) => 'lit' in part)) return scalarText(parts.map((part) => (part as {lit: string}).lit).join(''))
  return `{{ ${bare(printOf(parts))} | toJson }}`
}

/** An expression without the parentheses around all of it (`(toString X)` → `toString X`). */
function bare(expression: string): string {
  if (!expression.startsWith('(') || !expression.endsWith(')')) return expression
  let depth = 0
  let quoted = false
  for (let index = 0; index < expression.length; index++) {
    const char = expression[index]
    if (quoted) {
      if (char === '\\') index++
      else if (char === '"') quoted = false
      continue
    }
    if (char === '"') quoted = true
    else if (char === '(') depth++
    else if (char === ')' && --depth === 0 && index < expression.length - 1) return expression
  }
  return expression.slice(1, -1)
}

/** A literal scalar as YAML writes it on one line; text with template delimiters as a Go string Helm prints as it is. */
function scalarText(value: string | number | boolean | null): string {
  if (typeof value === 'string' && (value.includes('{{') || value.includes('}}'))) return `{{ ${goString(value)} | toJson }}`
  const text = yaml.dump(value, {lineWidth: -1}).replace(/\n$/, '')
  if (text.includes('\n')) return JSON.stringify(value)
  return text
}

/** A Go template list of literal items. */
function goList(items: readonly unknown[]): string {
  return `(list ${items.map((item) => goLiteral(item)).join(' ')})`
}

/** A Go template literal of a JSON value. */
export function goLiteral(value: unknown): string {
  if (value === undefined || value === null) return 'nil'
  if (typeof value === 'string') return goString(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return value.length === 0 ? 'list' : `(list ${value.map(goLiteral).join(' ')})`
  const entries = Object.entries(value as Record<string, unknown>)
  return entries.length === 0 ? 'dict' : `(dict ${entries.map(([key, child]) => `${goString(key)} ${goLiteral(child)}`).join(' ')})`
}
