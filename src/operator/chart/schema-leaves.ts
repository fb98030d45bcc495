/**
 * The settings of the block values as a list of leaves (pure), read from the zod schema of the values
 * (`blockValuesSchema`): each leaf's path, its type, whether it may be left out and its default. The chart compiler
 * (compile.ts) varies each leaf to find where it shows up in the objects; values.yaml and values.schema.json are
 * written from the same schema (chart.ts).
 */
import type {z} from 'zod'

export type LeafKind = 'boolean' | 'string' | 'number' | 'string-or-number' | 'enum' | 'array' | 'other'

export interface SchemaLeaf {
  path: readonly string[]
  kind: LeafKind
  /** The leaf schema itself (wrappers removed). */
  schema: z.ZodType
  /** The leaf with its wrappers (what a value at this path is validated with). */
  outer: z.ZodType
  /** Has a default (its own or, for a section without one, none). */
  hasDefault: boolean
  default?: unknown
  /** May be left out without a default taking its place. */
  optional: boolean
  /** Integer (number leaves). */
  integer?: boolean
  /** Values of an enum leaf. */
  values?: string[]
  /** Element schema of an array leaf. */
  element?: z.ZodType
  description?: string
}

interface Def {
  type: string
  innerType?: z.ZodType
  in?: z.ZodType
  shape?: Record<string, z.ZodType>
  element?: z.ZodType
  options?: z.ZodType[]
  entries?: Record<string, string>
  defaultValue?: unknown
  checks?: Array<{_zod: {def: {check: string; format?: string}}}>
  format?: string
}

const def = (schema: z.ZodType) => (schema as unknown as {def: Def}).def
const WRAPPERS = new Set(['optional', 'default', 'nullable', 'prefault', 'readonly', 'catch', 'nonoptional'])

/** The schema without optional/default/pipe wrappers, with what the wrappers said. */
export function unwrapSchema(schema: z.ZodType): {inner: z.ZodType; optional: boolean; hasDefault: boolean; default?: unknown; description?: string} {
  let current = schema
  let optional = false
  let hasDefault = false
  let value: unknown
  let description = (schema as {description?: string}).description
  for (;;) {
    const d = def(current)
    description ??= (current as {description?: string}).description
    if (d.type === 'default' || d.type === 'prefault') {
      if (!hasDefault) {
        hasDefault = true
        value = structuredClone(d.defaultValue)
      }
      current = d.innerType!
    } else if (d.type === 'optional') {
      optional = true
      current = d.innerType!
    } else if (WRAPPERS.has(d.type) && d.innerType) {
      current = d.innerType
    } else if (d.type === 'pipe' && d.in) {
      current = d.in
    } else {
      return {inner: current, optional: optional && !hasDefault, hasDefault, ...(hasDefault ? {default: value} : {}), description}
    }
  }
}

/** Every leaf under an object schema, depth first in the schema's key order. */
export function schemaLeaves(schema: z.ZodType, path: readonly string[] = []): SchemaLeaf[] {
  const {inner} = unwrapSchema(schema)
  const d = def(inner)
  if (d.type !== 'object') throw new Error(`${path.join('.') || 'the values'}: expected an object schema, got ${d.type}`)
  const leaves: SchemaLeaf[] = []
  for (const [key, child] of Object.entries(d.shape!)) {
    const childPath = [...path, key]
    const unwrapped = unwrapSchema(child)
    const childDef = def(unwrapped.inner)
    if (childDef.type === 'object') {
      leaves.push(...schemaLeaves(child, childPath))
      continue
    }
    leaves.push({
      path: childPath,
      kind: kindOf(unwrapped.inner),
      schema: unwrapped.inner,
      outer: child,
      hasDefault: unwrapped.hasDefault,
      ...(unwrapped.hasDefault ? {default: unwrapped.default} : {}),
      optional: unwrapped.optional || !unwrapped.hasDefault,
      ...(childDef.type === 'number' ? {integer: isInteger(unwrapped.inner)} : {}),
      ...(childDef.type === 'enum' ? {values: Object.values(childDef.entries!)} : {}),
      ...(childDef.type === 'array' ? {element: childDef.element} : {}),
      ...(unwrapped.description ? {description: unwrapped.description} : {}),
    })
  }
  return leaves
}

function kindOf(schema: z.ZodType): LeafKind {
  const d = def(schema)
  switch (d.type) {
    case 'boolean': return 'boolean'
    case 'string': return 'string'
    case 'number': return 'number'
    case 'enum': return 'enum'
    case 'array': return 'array'
    case 'union': {
      const kinds = new Set(d.options!.map((option) => def(unwrapSchema(option).inner).type))
      return kinds.size === 2 && kinds.has('string') && kinds.has('number') ? 'string-or-number' : 'other'
    }
    default: return 'other'
  }
}

function isInteger(schema: z.ZodType): boolean {
  const d = def(schema)
  return d.format === 'safeint' || d.format === 'int32' || (d.checks ?? []).some((check) => ['safeint', 'int32', 'int64'].includes(check._zod.def.format ?? ''))
}
