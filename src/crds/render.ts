import yaml from 'js-yaml'
import type {CrdDefinition} from './define.js'
import {GROUP} from './define.js'
import {toCustomResourceDefinition, type CustomResourceDefinition} from './generate.js'

export function customResourceDefinitions(defs: readonly CrdDefinition[]): CustomResourceDefinition[] {
  return defs.map((def) => toCustomResourceDefinition(def))
}

/** One YAML document, as `kubectl apply -f -` reads it. */
export function toYaml(object: unknown): string {
  return yaml.dump(object, {noRefs: true, lineWidth: -1, sortKeys: false})
}

/** Multi-document YAML: every CRD, separated by `---`. */
export function toMultiDocumentYaml(objects: readonly unknown[]): string {
  return objects.map((object) => `---\n${toYaml(object)}`).join('')
}

/** `<group>_<plural>.yaml`, the name controller-gen and the upstream projects use. */
export function crdFileName(def: CrdDefinition): string {
  return `${GROUP}_${def.plural}.yaml`
}
