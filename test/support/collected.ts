/**
 * Which objects a full garbage collection frees: for tests that something is *not* kept (a buffer or a map that must
 * let go of what left it). Uses V8's `gc` (turned on here with --expose-gc, as node's own tests do).
 */
import {setFlagsFromString} from 'node:v8'
import {runInNewContext} from 'node:vm'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Weak references to objects, to ask after a collection which of them are still alive. */
export class Tracked<T extends object> {
  private readonly refs: Array<[string, WeakRef<T>]> = []

  /** Tracks `object` under `name` and returns it. */
  track(name: string, object: T): T {
    this.refs.push([name, new WeakRef(object)])
    return object
  }

  /**
   * The names of the tracked objects still alive after full collections. WeakRef targets stay alive until the end of
   * the job that made or read them (the spec's KeepDuringJob), so this waits for a macrotask first.
   */
  async alive(): Promise<string[]> {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    gc()
    return this.refs.filter(([, ref]) => ref.deref() !== undefined).map(([name]) => name)
  }
}
