/**
 * A signal that aborts when any of `signals` does (with that signal's reason), like `AbortSignal.any` — but whose link
 * to its sources ends with `dispose()` (or its own abort). `AbortSignal.any` leaves a WeakRef to every signal it made in
 * each source for as long as the source lives, observed ones even past a GC (nodejs/node#55351, #64476): one per
 * request combined with a long-lived signal (the client's, the elector's) grows the heap for the life of the process.
 * Call `dispose()` when the operation the signal guards is over.
 */
export function anySignal(signals: readonly AbortSignal[]): {signal: AbortSignal; dispose(): void} {
  const controller = new AbortController()
  const listeners: Array<[AbortSignal, () => void]> = []
  const dispose = () => {
    for (const [source, listener] of listeners.splice(0)) source.removeEventListener('abort', listener)
  }
  for (const source of signals) {
    if (source.aborted) {
      dispose()
      controller.abort(source.reason)
      return {signal: controller.signal, dispose}
    }
    const listener = () => {
      dispose()
      controller.abort(source.reason)
    }
    source.addEventListener('abort', listener, {once: true})
    listeners.push([source, listener])
  }
  return {signal: controller.signal, dispose}
}
