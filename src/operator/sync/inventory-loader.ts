/**
 * The inventory listing of one sync: every API object of this cluster for the kind, paged. It serves two readers —
 * the inventory check (which ids still exist) and adopt-or-create (which natural keys exist, see inventory-keys.ts) —
 * and holds what used to live in the sync's closures: the current `InventoryKeys`, whether a background load is
 * running, and when the last one failed (a failed load is not retried for 10 s; lookups go to the API meanwhile).
 */
import type {PolycrateApiClient} from '../../api/index.js'
import type {Logger} from '../../lib/logger.js'
import type {ApiIdentity} from '../agent/api-session.js'
import {InventoryKeys} from './inventory-keys.js'
import {systemClock} from '../../lib/clock.js'

/** A listed API object: its id, whether the API marks it deleted. */
export interface InventoryItem {
  id: string
  is_deleted?: boolean | null
}

export interface InventorySource<Item extends InventoryItem> {
  /** Every API object of this cluster (the declaration's `inventory` filters). */
  list(api: PolycrateApiClient, identity: ApiIdentity, signal: AbortSignal): AsyncIterable<Item>
  /** The natural key of a listed object; without it no keys are collected (every create looks up first). */
  naturalKey?(item: Item): string
}

/** After a failed background load, lookups go to the API for this long before the next attempt. */
export const KEYS_RETRY_MS = 10_000

export class InventoryLoader<Item extends InventoryItem> {
  private current = new InventoryKeys()
  private loading = false
  private failedAt = 0

  constructor(
    private readonly source: InventorySource<Item>,
    /** The feature's stop signal: listings outlive a single reconcile. */
    private readonly signal: AbortSignal,
    private readonly now: () => number = systemClock.now,
  ) {}

  /** The natural keys adopt-or-create consults. */
  get keys(): InventoryKeys {
    return this.current
  }

  /** The session changed (another workspace or cluster): what was listed says nothing about it. */
  reset(): void {
    this.current = new InventoryKeys()
  }

  /** Lists the inventory; returns the ids seen and hands the natural keys to the keys current when it began. */
  async list(api: PolycrateApiClient, identity: ApiIdentity): Promise<Set<string>> {
    const into = this.current
    const token = into.begin()
    const ids = new Set<string>()
    const listed: string[] = []
    for await (const item of this.source.list(api, identity, this.signal)) {
      ids.add(item.id)
      if (this.source.naturalKey && !item.is_deleted) listed.push(this.source.naturalKey(item))
    }
    into.complete(token, listed)
    return ids
  }

  /** Starts the first listing in the background; until it completes, lookups go to the API as before. */
  load(api: PolycrateApiClient, identity: ApiIdentity, logger: Pick<Logger, 'debug'>): void {
    if (this.current.loaded || this.loading || this.now() - this.failedAt < KEYS_RETRY_MS) return
    this.loading = true
    this.list(api, identity).then(
      () => logger.debug(`inventory listing loaded for adopt-or-create`, {keys: this.current.size}),
      (error: Error) => {
        this.failedAt = this.now()
        logger.debug('inventory listing failed; lookups go to the API', {error: error.message})
      },
    ).finally(() => {
      this.loading = false
    })
  }
}
