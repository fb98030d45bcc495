import type {KubeObject} from '../../src/kube/client.js'
import type {DiscoverySource, SourceCaches} from '../../src/operator/discovery/engine.js'

const keyOf = (object: KubeObject) => (object.metadata?.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata?.name ?? '')

/**
 * SourceCaches over plain arrays, by source id, for the pure functions of a discovery: the index functions are the
 * declaration's own (`sources`), so `byIndex` answers as the informer caches do. `looked` records which source ids
 * were read.
 */
export function sourceCaches(byId: Record<string, KubeObject[]>, sources: readonly DiscoverySource[] = []): SourceCaches & {looked: Set<string>} {
  const looked = new Set<string>()
  const indexesOf = new Map(sources.map((source) => [source.id, source.indexes ?? {}]))
  return {
    looked,
    list: (id, namespace) => {
      looked.add(id)
      return (byId[id] ?? []).filter((object) => namespace === undefined || object.metadata?.namespace === namespace)
    },
    get: (id, key) => {
      looked.add(id)
      return (byId[id] ?? []).find((object) => keyOf(object) === key)
    },
    byIndex: (id, index, value) => {
      looked.add(id)
      const fn = indexesOf.get(id)?.[index]
      if (!fn) throw new Error(`source ${id} has no index ${index}`)
      return (byId[id] ?? []).filter((object) => fn(object).includes(value))
    },
  }
}
