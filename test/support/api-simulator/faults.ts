/**
 * Fault injection: what a flaky network or an overloaded API does to a request. Decided per matching request
 * before routing, so a faulted request changes nothing in the store. Order: latency, then drop, then 429, then
 * an error status; each rate is an independent draw of `random()` (made only when that rate is > 0).
 */

export interface FaultConfig {
  /** 0..1 share of matching requests answered with an error status. */
  errorRate?: number
  /** Default [500, 502, 503]. */
  errorStatuses?: number[]
  /** 0..1 share answered 429 with Retry-After. */
  rateLimitRate?: number
  /** Default 1. */
  retryAfterSeconds?: number
  /** Added to every matching request. */
  latencyMs?: number
  /** 0..1 share whose connection is destroyed without an answer. */
  dropRate?: number
  /** Default: every /api/ request. */
  match?: (method: string, path: string) => boolean
  /** For deterministic tests; default Math.random. */
  random?: () => number
}

export type FaultOutcome =
  | {kind: 'pass'}
  | {kind: 'drop'}
  | {kind: 'rate-limit'; retryAfterSeconds: number}
  | {kind: 'error'; status: number}

export interface FaultPlan {
  latencyMs: number
  outcome: FaultOutcome
}

const NO_FAULT: FaultPlan = {latencyMs: 0, outcome: {kind: 'pass'}}

function checkRate(name: string, value: number | undefined): void {
  if (value !== undefined && !(value >= 0 && value <= 1)) throw new RangeError(`FaultConfig.${name} must be between 0 and 1, got ${value}`)
}

export class Faults {
  private config: FaultConfig | undefined

  /** Replaces the current fault configuration. */
  set(config: FaultConfig): void {
    checkRate('errorRate', config.errorRate)
    checkRate('rateLimitRate', config.rateLimitRate)
    checkRate('dropRate', config.dropRate)
    if (config.errorStatuses?.length === 0) throw new RangeError('FaultConfig.errorStatuses must not be empty')
    if (config.latencyMs !== undefined && !(config.latencyMs >= 0)) throw new RangeError('FaultConfig.latencyMs must be >= 0')
    this.config = {...config}
  }

  clear(): void {
    this.config = undefined
  }

  /** What happens to this request. */
  plan(method: string, path: string): FaultPlan {
    const config = this.config
    if (!config) return NO_FAULT
    const matches = config.match ? config.match(method, path) : path.startsWith('/api/')
    if (!matches) return NO_FAULT
    const random = config.random ?? Math.random
    const hit = (rate: number | undefined) => rate !== undefined && rate > 0 && random() < rate
    const latencyMs = config.latencyMs ?? 0

    if (hit(config.dropRate)) return {latencyMs, outcome: {kind: 'drop'}}
    if (hit(config.rateLimitRate)) return {latencyMs, outcome: {kind: 'rate-limit', retryAfterSeconds: config.retryAfterSeconds ?? 1}}
    if (hit(config.errorRate)) {
      const statuses = config.errorStatuses ?? [500, 502, 503]
      // One more draw picks the status, only when there is a choice.
      const pick = statuses.length === 1 ? 0 : Math.min(statuses.length - 1, Math.floor(random() * statuses.length))
      const status = statuses[pick] ?? 500
      return {latencyMs, outcome: {kind: 'error', status}}
    }
    return {latencyMs, outcome: {kind: 'pass'}}
  }
}
