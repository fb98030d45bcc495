/** Operator versions as the rollout compares them: semver-aware, a leading "v" ignored. */

const VERSION = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/

function comparePrerelease(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0
  if (a === undefined) return 1 // a release sorts after its pre-releases
  if (b === undefined) return -1
  const left = a.split('.')
  const right = b.split('.')
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const x = left[index]
    const y = right[index]
    if (x === undefined) return -1
    if (y === undefined) return 1
    const xNumeric = /^\d+$/.test(x)
    const yNumeric = /^\d+$/.test(y)
    if (xNumeric && yNumeric && Number(x) !== Number(y)) return Number(x) - Number(y)
    if (xNumeric !== yNumeric) return xNumeric ? -1 : 1
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

/** Semver-aware order ("0.9.0" < "0.10.0", pre-releases before their release); non-versions after versions, null last. */
export function compareVersions(a: string | null, b: string | null): number {
  if (a === b) return 0
  if (a === null) return 1
  if (b === null) return -1
  const x = VERSION.exec(a.trim())
  const y = VERSION.exec(b.trim())
  if (x && !y) return -1
  if (!x && y) return 1
  if (x && y) {
    for (const part of [1, 2, 3]) {
      const difference = Number(x[part] ?? 0) - Number(y[part] ?? 0)
      if (difference !== 0) return difference
    }
    const order = comparePrerelease(x[4], y[4])
    if (order !== 0) return order
  }
  return a < b ? -1 : a > b ? 1 : 0
}
