/** Runs `task` for every item with at most `limit` at a time; rejects with the first error after all settled. */
export async function forEachLimit<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: unknown
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!
      try {
        await task(item)
      } catch (error) {
        failure ??= error
      }
    }
  }
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker))
  if (failure !== undefined) throw failure
}
