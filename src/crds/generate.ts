/**
 * Turns the zod-defined kinds into `apiextensions.k8s.io/v1` CustomResourceDefinitions whose schemas are
 * structural: every node typed, no `additionalProperties: false`, free-form only where declared with
 * `freeForm()`, int-or-string where declared with `intOrString()`.
 */
import {z} from 'zod'
import {GROUP, VERSION, type CrdDefinition} from './define.js'

export interface JSONSchemaProps {
  type?: string
  description?: string
  properties?: Record<string, JSONSchemaProps>
  additionalProperties?: JSONSchemaProps | boolean
  items?: JSONSchemaProps
  required?: string[]
  enum?: unknown[]
  default?: unknown
  nullable?: boolean
  format?: string
  pattern?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  anyOf?: JSONSchemaProps[]
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  [key: string]: unknown
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1'
  kind: 'CustomResourceDefinition'
  metadata: {name: string; labels: Record<string, string>}
  spec: {
    group: string
    names: {kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories: string[]}
    scope: 'Namespaced' | 'Cluster'
    versions: Array<{
      name: string
      served: boolean
      storage: boolean
      schema: {openAPIV3Schema: JSONSchemaProps}
      subresources: {status: Record<string, never>}
      additionalPrinterColumns: Array<Record<string, unknown>>
    }>
  }
}

const SAFE = Number.MAX_SAFE_INTEGER

/** Rewrites zod's OpenAPI 3.0 output into a Kubernetes structural schema node (recursively). */
export function toStructural(node: JSONSchemaProps): JSONSchemaProps {
  const out: JSONSchemaProps = {...node}
  delete out.$schema
  if (out.minimum === -SAFE) delete out.minimum
  if (out.maximum === SAFE) delete out.maximum
  // zod's ISO datetime regex is stricter than Kubernetes' date-time format and unreadable in `kubectl explain`.
  if (out.format === 'date-time') delete out.pattern

  if (out.anyOf) {
    const types = out.anyOf.map((branch) => branch.type).sort()
    if (types.length === 2 && types[0] === 'integer' && types[1] === 'string') {
      out['x-kubernetes-int-or-string'] = true
      out.anyOf = [{type: 'integer'}, {type: 'string'}]
      delete out.type
      return out
    }
    throw new Error(`unions other than int-or-string are not structural: ${JSON.stringify(node)}`)
  }

  if (out.properties) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([key, value]) => [key, toStructural(value)]),
    )
  }
  if (out.items) out.items = toStructural(out.items)

  const extra = out.additionalProperties
  if (extra === false) {
    delete out.additionalProperties
  } else if (extra !== undefined && (extra === true || Object.keys(extra).length === 0)) {
    // free-form map (z.record(z.string(), z.unknown())) or loose object
    delete out.additionalProperties
    out['x-kubernetes-preserve-unknown-fields'] = true
  } else if (extra !== undefined) {
    if (out.properties) throw new Error('properties and additionalProperties are mutually exclusive in a CRD schema')
    out.additionalProperties = toStructural(extra)
  }
  return out
}

export function openAPISchemaOf(schema: z.ZodType): JSONSchemaProps {
  return toStructural(z.toJSONSchema(schema, {target: 'openapi-3.0', io: 'input'}) as JSONSchemaProps)
}

export function toCustomResourceDefinition(def: CrdDefinition): CustomResourceDefinition {
  const spec = openAPISchemaOf(def.spec)
  const status = openAPISchemaOf(def.status)
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      labels: {'app.kubernetes.io/part-of': 'polycrate-operator', polycrate_managed_by: 'operator'},
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        ...(def.shortNames.length > 0 ? {shortNames: [...def.shortNames]} : {}),
        categories: ['polycrate'],
      },
      scope: def.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              properties: {
                apiVersion: {type: 'string'},
                kind: {type: 'string'},
                metadata: {type: 'object'},
                spec: {...spec, description: spec.description ?? `Desired state of the ${def.kind}.`},
                status: {...status, description: status.description ?? `Observed state of the ${def.kind}.`},
              },
            },
          },
          subresources: {status: {}},
          additionalPrinterColumns: [
            ...def.printerColumns.map((column) => ({...column})),
            {name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp'},
          ],
        },
      ],
    },
  }
}
