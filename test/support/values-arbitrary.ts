/**
 * fast-check values of the chart (the block's config), read from its values.schema.json: every key may be left out,
 * strings by their pattern or as text with quotes, backslashes, template braces and non-ASCII letters, integers in
 * their bounds with small counts likely, lists of up to three items (duplicates likely), string-or-number settings
 * as either. Values that the operator's own checks refuse (parseBlockValues) are filtered out.
 */
import fc from 'fast-check'
import {parseBlockValues, ValuesError} from '../../src/operator/install/values.js'

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  items?: JsonSchema
  enum?: unknown[]
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  default?: unknown
  anyOf?: JsonSchema[]
}

/**
 * Text as users write it and as attackers might: quotes, backslashes, `{{ }}`, `$`, `<>&`, letters beyond ASCII.
 * (Not U+2028/U+2029: Go's JSON encoder escapes them where JavaScript's does not — the one known difference, in
 * image_credentials inside the pull Secret.)
 */
const text = fc.string({unit: fc.constantFrom(...'abcxyzABC0129 -_./:@"\'\\{}<>&$%#!?,;=+~|*äß中😀'.split(/(?:)/u)), maxLength: 16})
const quantities = fc.constantFrom<unknown>('100m', '1', '0.5', '250m', '2', '64Mi', '512Mi', '1Gi', '1500M', 1, 2, 0.5, 4)

export function valuesArbitrary(schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  return (arbitraryOf(schema, []) as fc.Arbitrary<Record<string, unknown>>).filter(valid)
}

function valid(values: Record<string, unknown>): boolean {
  try {
    parseBlockValues(values)
    return true
  } catch (error) {
    if (error instanceof ValuesError) return false
    throw error
  }
}

function arbitraryOf(schema: JsonSchema, path: readonly string[]): fc.Arbitrary<unknown> {
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []
  if (schema.enum) return fc.constantFrom(...schema.enum)
  if (types.includes('object') && schema.properties) {
    const model = Object.fromEntries(Object.entries(schema.properties).map(([key, child]) => [key, arbitraryOf(child, [...path, key])]))
    return fc.record(model, {requiredKeys: []})
  }
  if (path.at(-2) === 'requests' || path.at(-2) === 'limits') return quantities
  if (types.includes('string') && types.includes('number')) return fc.oneof(stringOf(schema), fc.integer({min: 0, max: 100}), fc.constantFrom(0.5, 1.25))
  if (types.includes('boolean')) return fc.boolean()
  if (types.includes('integer') || types.includes('number')) {
    const min = schema.minimum ?? 0
    const max = Math.min(schema.maximum ?? 100_000, 100_000)
    return fc.oneof(fc.integer({min, max: Math.min(max, min + 3)}), fc.integer({min, max}))
  }
  if (types.includes('array')) {
    const item = arbitraryOf(schema.items ?? {type: 'string'}, [...path, '[]'])
    return fc.oneof(fc.constant([]), fc.array(item, {minLength: 1, maxLength: 3}), item.map((value) => [value, value]))
  }
  if (types.includes('string')) return stringOf(schema)
  return fc.constant(schema.default ?? null)
}

function stringOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  const base = schema.pattern ? fc.stringMatching(new RegExp(schema.pattern)) : text
  const options = [base, ...(schema.default !== undefined ? [fc.constant(schema.default)] : [])]
  return fc.oneof(...options).filter((value) => typeof value === 'string' && value.length >= (schema.minLength ?? 0) && value.length <= (schema.maxLength ?? 63))
}
