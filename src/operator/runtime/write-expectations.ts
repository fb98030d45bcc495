/**
 * Expectations for our own writes (controller-runtime's ReplicaSet expectations in spirit): the objects this process
 * wrote whose new version the cache does not show yet. A reconcile that finds one waits, rather than computing from
 * the old version (a timestamp stamped twice, a status written again).
 *
 * Several writes in a row (a spec, then its status) make every version written over "old", not only the one the last
 * write replaced: the cache may show the first write before the second.
 */
import {systemClock, type Clock} from '../../lib/clock.js'

export class WriteExpectations {
  readonly #pending = new Map<string, {older: Set<string>; after: string; until: number}>()
  /** When expired expectations of keys nobody asked about again are dropped next (once per wait at most). */
  #nextSweep = 0

  constructor(private readonly waitMs: number, private readonly clock: Clock = systemClock) {}

  /** How many expectations are held (expired ones included until the next sweep). */
  get size(): number {
    return this.#pending.size
  }

  /** A write of `key` turned `before` (the cached version, if any) into `after`. */
  written(key: string, before: string | undefined, after: string | undefined): void {
    if (after === undefined || after === before) return
    const now = this.clock.now()
    // A key written and never reconciled again (its CR went to another group) would otherwise stay for good.
    if (now >= this.#nextSweep) {
      for (const [pendingKey, {until}] of this.#pending) if (now >= until) this.#pending.delete(pendingKey)
      this.#nextSweep = now + this.waitMs
    }
    const previous = this.#pending.get(key)
    const older = new Set(previous?.older)
    if (before !== undefined) older.add(before)
    if (previous) older.add(previous.after)
    older.delete(after)
    this.#pending.set(key, {older, after, until: now + this.waitMs})
  }

  /**
   * Whether the cache, showing `cachedVersion` of `key`, is still behind a write of ours. Once it is not (it shows our
   * write or someone's later one), or the wait is over, the expectation is dropped.
   */
  behind(key: string, cachedVersion: string | undefined): boolean {
    const pending = this.#pending.get(key)
    if (!pending) return false
    if (cachedVersion !== undefined && pending.older.has(cachedVersion) && this.clock.now() < pending.until) return true
    this.#pending.delete(key)
    return false
  }

  forget(key: string): void {
    this.#pending.delete(key)
  }
}
