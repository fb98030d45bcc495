/**
 * Reads every polycrate.io object of the requested kinds from a cluster, for `polycrate operator status`:
 * paged lists (`limit` + `continue`, restarted once if the continue token expires), a few kinds at a time, and a
 * clear answer when the CRDs are not installed (a 404 on the list of a kind). No printing here.
 */
import {allCrds, GROUP, VERSION} from '../crds/index.js'
import type {CrdDefinition} from '../crds/define.js'
import {operatorConfigCrd} from '../crds/operatorconfig.js'
import {KubeApiError, resourcePath, type KubeClient, type KubeObject} from './client.js'

/** The part of KubeClient the inventory needs (tests pass a fake). */
export type ListingClient = Pick<KubeClient, 'request'>

/** A polycrate.io object as a list returns it. */
export interface InventoryObject extends KubeObject {
  metadata?: KubeObject['metadata'] & {creationTimestamp?: string}
  spec?: unknown
  status?: unknown
}

export interface KindListing {
  def: CrdDefinition
  items: InventoryObject[]
}

export interface Inventory {
  /** Every OperatorConfig in scope (listed whatever the kinds asked for); empty when its CRD is missing. */
  operatorConfigs: InventoryObject[]
  /** The requested kinds whose CRD exists, in the order of `allCrds`. */
  listings: KindListing[]
  /** Kinds (requested ones and OperatorConfig) whose list answered 404: their CRD is not installed. */
  missing: CrdDefinition[]
}

export interface InventoryOptions {
  /** Kinds to list; every kind by default. */
  kinds?: readonly CrdDefinition[]
  /** Only this namespace (namespaced kinds); all namespaces when absent. Cluster-scoped kinds are listed whole. */
  namespace?: string
  /**
   * List the OperatorConfigs of every namespace whatever `namespace` says (`status -n` filters the sources, not the
   * operator's configuration); a listing of the kind OperatorConfig itself still keeps to `namespace`.
   */
  operatorConfigsEverywhere?: boolean
  /** Kinds listed at the same time; 4 by default. */
  concurrency?: number
  /** Objects per page; 500 by default (kubectl's chunk size). */
  pageSize?: number
}

/** Not one of the listed kinds has its CRD in the cluster. */
export class CrdsMissingError extends Error {
  override name = 'CrdsMissingError'
  constructor(readonly missing: readonly CrdDefinition[]) {
    super(`the polycrate.io CRDs are not installed (${missing.map((def) => def.plural).join(', ')} answered 404)`)
  }
}

interface ListPage<T> {
  metadata?: {continue?: string; resourceVersion?: string}
  items?: T[]
}

/**
 * Every item of a list, page by page. When a continue token has expired (410 Gone, e.g. after etcd compaction),
 * the list starts over once, as a whole.
 */
export async function listAllPages<T>(client: ListingClient, path: string, pageSize = 500): Promise<T[]> {
  for (let attempt = 0; ; attempt++) {
    const items: T[] = []
    let token: string | undefined
    try {
      do {
        const page = await client.request<ListPage<T>>({path, query: {limit: pageSize, continue: token}})
        for (const item of page.items ?? []) items.push(item)
        token = page.metadata?.continue || undefined
      } while (token)
      return items
    } catch (error) {
      const expired = token !== undefined && error instanceof KubeApiError && error.status === 410
      if (!expired || attempt > 0) throw error
    }
  }
}

/** The list path of one kind, namespaced kinds limited to `namespace` when given. */
export function listPath(def: CrdDefinition, namespace?: string): string {
  return resourcePath({
    group: GROUP,
    version: VERSION,
    plural: def.plural,
    namespace: def.scope === 'Namespaced' ? namespace : undefined,
  })
}

type Outcome<R> = {ok: true; value: R} | {ok: false; error: unknown}

/** `fn` over `items`, at most `limit` at a time; after the first failure no new item is started. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<Outcome<R>[]> {
  const outcomes: Outcome<R>[] = []
  let next = 0
  let failed = false
  const worker = async () => {
    while (!failed && next < items.length) {
      const index = next++
      try {
        outcomes[index] = {ok: true, value: await fn(items[index]!)}
      } catch (error) {
        failed = true
        outcomes[index] = {ok: false, error}
      }
    }
  }
  await Promise.all(Array.from({length: Math.max(1, Math.min(limit, items.length))}, worker))
  return outcomes
}

const isNotFound = (error: unknown) => error instanceof KubeApiError && error.status === 404

/**
 * Lists the requested kinds plus OperatorConfig. Throws `CrdsMissingError` when every list answered 404, the first
 * other error (unreachable, 401, 403, …) as it is; a kind whose CRD alone is missing ends up in `missing`.
 */
export async function collectInventory(client: ListingClient, options: InventoryOptions = {}): Promise<Inventory> {
  const requested = new Set(options.kinds ?? allCrds)
  const toList = allCrds.filter((def) => requested.has(def) || def === operatorConfigCrd)
  const outcomes = await mapBounded(toList, options.concurrency ?? 4, async (def) => {
    try {
      const everywhere = def === operatorConfigCrd && options.operatorConfigsEverywhere
      return await listAllPages<InventoryObject>(client, listPath(def, everywhere ? undefined : options.namespace), options.pageSize)
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  })

  const failure = outcomes.find((outcome) => outcome && !outcome.ok)
  if (failure && !failure.ok) throw failure.error

  const missing: CrdDefinition[] = []
  const listings: KindListing[] = []
  let operatorConfigs: InventoryObject[] = []
  toList.forEach((def, index) => {
    const outcome = outcomes[index]
    const items = outcome?.ok ? outcome.value : undefined
    if (items === undefined) {
      missing.push(def)
      return
    }
    if (def === operatorConfigCrd) operatorConfigs = items
    const inScope = def === operatorConfigCrd && options.namespace ? items.filter((item) => item.metadata?.namespace === options.namespace) : items
    if (requested.has(def)) listings.push({def, items: inScope})
  })
  if (missing.length === toList.length) throw new CrdsMissingError(missing)
  return {operatorConfigs, listings, missing}
}
