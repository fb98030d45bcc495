/** Exponential backoff with jitter, and the per-key rate limiter of the work queue (the operator reference's 5 s → 60 s). */

export interface BackoffPolicy {
  initialMs: number
  maxMs: number
  factor?: number
  /** Spread of the random jitter: 0.2 = ±20 %. */
  jitter?: number
}

/** Delay before retry number `attempt` (0-based): initial × factor^attempt, capped at max, jittered. */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const factor = policy.factor ?? 2
  const base = Math.min(policy.maxMs, policy.initialMs * factor ** Math.max(0, attempt))
  const jitter = policy.jitter ?? 0
  const spread = base * jitter * (2 * random() - 1)
  return Math.max(0, Math.round(base + spread))
}

/** Backoff for a retry loop (watch restarts): grows on each failure, starts over after a healthy period. */
export class Backoff {
  private attempt = 0
  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    return backoffDelay(this.attempt++, this.policy, this.random)
  }

  reset(): void {
    this.attempt = 0
  }

  get attempts(): number {
    return this.attempt
  }
}

/** Watch restarts: ≈0.8 s → 30 s with jitter (kube-rs's default). */
export const watchBackoffPolicy: BackoffPolicy = {initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.25}

/** Failed reconciles of one key: 5 s → 60 s (the operator reference's numbers), no jitter, reset on success. */
export const reconcileBackoffPolicy: BackoffPolicy = {initialMs: 5_000, maxMs: 60_000, factor: 2}

/** Per-key exponential failure rate limiter (controller-runtime's ItemExponentialFailureRateLimiter). */
export class PerKeyRateLimiter {
  private readonly failures = new Map<string, number>()
  constructor(private readonly policy: BackoffPolicy = reconcileBackoffPolicy) {}

  /** The delay for this key's next retry; counts one more failure. */
  when(key: string): number {
    const count = this.failures.get(key) ?? 0
    this.failures.set(key, count + 1)
    return backoffDelay(count, this.policy)
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0
  }

  forget(key: string): void {
    this.failures.delete(key)
  }
}
