/**
 * kubectl's AGE (`ShortHumanDuration`): `45s`, `3m`, `5h`, `7d`, `2y`, whole units rounded down; `0s` for a time up
 * to a second ahead (clock skew), `<invalid>` further ahead, `<unknown>` without a timestamp. The one
 * implementation (status-view.ts re-exports it as formatAge); no imports, so `version` loads no CRD catalogue.
 */
export function shortAge(timestamp: string | undefined | null, now: number): string {
  if (!timestamp) return '<unknown>'
  const at = Date.parse(timestamp)
  if (Number.isNaN(at)) return '<unknown>'
  const seconds = Math.trunc((now - at) / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h`
  if (hours < 24 * 365) return `${Math.floor(hours / 24)}d`
  return `${Math.floor(hours / 24 / 365)}y`
}
