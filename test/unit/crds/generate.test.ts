import assert from 'node:assert/strict'
import {z} from 'zod'
import {openAPISchemaOf} from '../../../src/crds/generate.js'
import {freeForm, intOrString, timestamp} from '../../../src/crds/schema.js'
import {structuralViolations} from './structural.js'

describe('toStructural (zod → structural OpenAPI)', () => {
  const cases: Array<{name: string; schema: z.ZodType; expected: Record<string, unknown>}> = [
    {name: 'string', schema: z.string(), expected: {type: 'string'}},
    {name: 'integer drops the safe-integer bounds', schema: z.number().int(), expected: {type: 'integer'}},
    {name: 'integer keeps real bounds', schema: z.number().int().min(1).max(65535), expected: {type: 'integer', minimum: 1, maximum: 65535}},
    {name: 'int-or-string', schema: intOrString(), expected: {'x-kubernetes-int-or-string': true, anyOf: [{type: 'integer'}, {type: 'string'}]}},
    {name: 'free-form', schema: freeForm(), expected: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}},
    {name: 'typed map', schema: z.record(z.string(), z.string()), expected: {type: 'object', additionalProperties: {type: 'string'}}},
    {name: 'timestamp without the zod regex', schema: timestamp(), expected: {type: 'string', format: 'date-time'}},
    {name: 'nullable', schema: z.string().nullable(), expected: {type: 'string', nullable: true}},
    {name: 'enum', schema: z.enum(['a', 'b']), expected: {type: 'string', enum: ['a', 'b']}},
    {name: 'default', schema: z.number().int().default(5), expected: {type: 'integer', default: 5}},
    {
      name: 'strict object loses additionalProperties: false',
      schema: z.strictObject({a: z.string()}),
      expected: {type: 'object', properties: {a: {type: 'string'}}, required: ['a']},
    },
    {
      name: 'optional fields are not required',
      schema: z.object({a: z.string().optional(), b: z.boolean().default(true)}),
      expected: {type: 'object', properties: {a: {type: 'string'}, b: {type: 'boolean', default: true}}},
    },
  ]
  for (const {name, schema, expected} of cases) {
    it(name, () => {
      const out = openAPISchemaOf(schema)
      assert.deepEqual(out, expected)
      assert.deepEqual(structuralViolations(out, '$', false), [])
    })
  }

  it('rejects unions that are not int-or-string', () => {
    assert.throws(() => openAPISchemaOf(z.union([z.string(), z.boolean()])), /not structural/)
  })

  it('the structural checker itself catches violations', () => {
    assert.deepEqual(structuralViolations({type: 'object', properties: {a: {}}}, '$'), ['$.properties.a: no type'])
    assert.deepEqual(structuralViolations({type: 'object', properties: {a: {type: 'object', additionalProperties: false}}}), [
      '$.properties.a: additionalProperties: false',
    ])
    assert.equal(structuralViolations({type: 'array'}, '$', false).length, 1)
  })
})
