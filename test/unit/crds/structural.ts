/**
 * Checks a CRD schema against the Kubernetes structural-schema rules
 * (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema).
 * Returns one message per violation, with the JSON path of the node.
 */
import type {JSONSchemaProps} from '../../../src/crds/generate.js'

const forbiddenInJunctors = ['type', 'additionalProperties', 'description', 'default', 'nullable', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string']

export function structuralViolations(node: JSONSchemaProps, at = '$', isRoot = true): string[] {
  const problems: string[] = []
  const intOrString = node['x-kubernetes-int-or-string'] === true
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true
  if (!node.type && !intOrString && !preserve) problems.push(`${at}: no type`)
  if (node.additionalProperties === false) problems.push(`${at}: additionalProperties: false`)
  if (node.additionalProperties !== undefined && node.properties) problems.push(`${at}: properties and additionalProperties together`)
  if (preserve && node.type !== 'object' && !isRoot) problems.push(`${at}: x-kubernetes-preserve-unknown-fields on a non-object`)
  if (node.$ref || node.$schema || node.definitions || node.$defs) problems.push(`${at}: $ref/$schema/definitions`)
  if (node.oneOf || node.allOf || node.not) problems.push(`${at}: oneOf/allOf/not`)
  if (node.anyOf) {
    if (!intOrString) problems.push(`${at}: anyOf outside int-or-string`)
    for (const branch of node.anyOf) {
      for (const key of forbiddenInJunctors) if (key in branch && key !== 'type') problems.push(`${at}.anyOf: ${key}`)
    }
  }
  if (node.type === 'array' && !node.items) problems.push(`${at}: array without items`)
  if (node.type === 'object' && !node.properties && node.additionalProperties === undefined && !preserve && !isRoot) {
    if (at !== '$.properties.metadata') problems.push(`${at}: object with neither properties nor additionalProperties nor preserve-unknown-fields`)
  }
  for (const [key, child] of Object.entries(node.properties ?? {})) problems.push(...structuralViolations(child, `${at}.properties.${key}`, false))
  if (node.items) problems.push(...structuralViolations(node.items, `${at}.items`, false))
  if (typeof node.additionalProperties === 'object') problems.push(...structuralViolations(node.additionalProperties, `${at}.additionalProperties`, false))
  if (node.required) {
    for (const name of node.required) if (!node.properties?.[name]) problems.push(`${at}: required ${name} is not a property`)
  }
  return problems
}

/** Follows a printer-column JSONPath like `.spec.block.name` through the schema. */
export function schemaAt(root: JSONSchemaProps, jsonPath: string): JSONSchemaProps | undefined {
  let node: JSONSchemaProps | undefined = root
  for (const part of jsonPath.replace(/^\./, '').split('.')) {
    if (!node) return undefined
    node = node.properties?.[part]
  }
  return node
}
