/**
 * The write fence of a replica: the kube and Polycrate API clients ask it right before each write leaves the process
 * (after every await on the way, so a process frozen and woken in between asks again). With leader election, the
 * manager's fence is open only while the replica holds a lease it renewed within the renew deadline on its own
 * monotonic clock; a replica frozen past the deadline (SIGSTOP, a VM migration, a long GC) wakes with reconciles in
 * flight and refuses every write they try before a timer could even tell it that it lost the lease.
 */

/** Why a write may not go out now (undefined: it may). Pure in what it reads; cheap (called once per write). */
export type WriteFence = () => string | undefined

/** A write refused by the fence: nothing was sent. Not retried (the replica is stepping down). */
export class WriteFencedError extends Error {
  override name = 'WriteFencedError'
  constructor(
    readonly method: string,
    readonly target: string,
    readonly reason: string,
  ) {
    super(`write refused by the leader fence (${reason}): ${method} ${target} was not sent`)
  }
}

/** Throws WriteFencedError when the fence is closed. */
export function checkFence(fence: WriteFence | undefined, method: string, target: string): void {
  const reason = fence?.()
  if (reason !== undefined) throw new WriteFencedError(method, target, reason)
}
