/**
 * The natural keys of a kind's API objects, as one inventory listing saw them, plus every key this process has
 * since tried to create. It answers one question for adopt-or-create: "can the lookup GET be skipped for this key?"
 * — yes only when a listing has completed and the key is in neither set.
 *
 * What a listing taken before a create means: nothing about that create. So a key is added *before* its create is
 * sent (whatever the outcome: a create whose answer is lost may still have landed, and may land after any later
 * listing read its page) and stays for the life of the process. An object created by a previous run exists before this process lists, so it
 * is in the listing. The remaining gaps (another writer's create after the listing; a list item whose `name` shows a
 * display name) are why the sync uses this only for kinds whose key the API enforces as unique: a wrong "absent"
 * then costs a 409 and the real lookup (adoptOrCreate), never a duplicate.
 */
export class InventoryKeys {
  private listed?: Set<string>
  /** Keys this process has tried to create: kept for good (a create may land after any later listing's page). */
  private readonly added = new Set<string>()
  private generation = 0
  private completed = 0

  /** A listing completed at least once. */
  get loaded(): boolean {
    return this.listed !== undefined
  }

  get size(): number {
    return this.listed?.size ?? 0
  }

  /** Starts a listing; pass the token to `complete` (abandoning one needs nothing). */
  begin(): number {
    return ++this.generation
  }

  /** The listing `token` saw `listed`: replaces what an older listing saw (a listing older than the last one is ignored). */
  complete(token: number, listed: Iterable<string>): void {
    if (token <= this.completed) return
    this.completed = token
    this.listed = new Set(listed)
  }

  /** The key may exist from now on (call before creating it). */
  add(key: string): void {
    this.added.add(key)
  }

  /** The last listing and this process's creates say the key does not exist. False while nothing is listed. */
  absent(key: string): boolean {
    return this.listed !== undefined && !this.listed.has(key) && !this.added.has(key)
  }
}
