/** "Did you mean …?" for a misspelt key: the nearest candidate by optimal-string-alignment (Damerau–Levenshtein) distance. */

/** Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[][] = Array.from({length: rows}, (_, i) => Array.from({length: cols}, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

/**
 * The candidate nearest to `word` (case-insensitive), if it is near enough to be a typo: at most a third of the
 * longer word's length in edits (at least 1), or one contains the other (`replica` → `replicas`).
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase()
  let best: {candidate: string; distance: number} | undefined
  for (const candidate of candidates) {
    const other = candidate.toLowerCase()
    const distance = editDistance(lower, other)
    const limit = Math.max(1, Math.floor(Math.max(lower.length, other.length) / 3))
    const contained = lower.length >= 3 && (other.includes(lower) || lower.includes(other))
    if (distance > limit && !contained) continue
    if (!best || distance < best.distance) best = {candidate, distance}
  }
  return best?.candidate
}
