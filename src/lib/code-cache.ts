/**
 * Loads a CommonJS bundle with a V8 code cache, for short-lived commands whose CPU time is mostly compiling
 * JavaScript (Node 22's `module.enableCompileCache()` does this for every module; Node 20 has nothing of the kind).
 *
 * The cache lives in the user's cache directory (`$XDG_CACHE_HOME/polycrate`, else `~/.cache/polycrate`), one file
 * per bundle content (a hash: V8 itself only compares the source's length, and npm gives every installed file the
 * same mtime), Node version and key, written after a run without one. V8 rejects a cache of another V8 or other
 * flags (then this compiles as usual and writes a new one); a cache it cannot read or write is no error, only slower.
 */
import {createHash} from 'node:crypto'
import {mkdirSync, readFileSync, renameSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {homedir} from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import vm from 'node:vm'

export interface CachedModule<T> {
  exports: T
  /** Whether V8 compiled from a cache: none found, used, or rejected (another V8, other flags, a damaged file). */
  cache: 'none' | 'used' | 'rejected'
  /** Writes the code cache if there was none (or V8 rejected it): call after the run, so it holds what ran. */
  saveCache(): void
}

export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'polycrate')
}

export function loadWithCodeCache<T>(url: URL, key: string, env: NodeJS.ProcessEnv = process.env): CachedModule<T> {
  const filename = fileURLToPath(url)
  const bytes = readFileSync(filename)
  const hash = createHash('sha1').update(bytes).digest('hex').slice(0, 16)
  const cacheFile = path.join(cacheDirectory(env), `${path.basename(filename)}-${hash}-${process.version}-${process.arch}-${key}.v8cache`)
  let cachedData: Buffer | undefined
  try {
    cachedData = readFileSync(cacheFile)
  } catch {
    // none yet
  }
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${bytes.toString('utf8')}\n})`, {filename, cachedData})
  const module = {exports: {} as T}
  const wrapper = script.runInThisContext() as (exports: T, require: NodeJS.Require, module: {exports: T}, file: string, dir: string) => void
  wrapper(module.exports, createRequire(filename), module, filename, path.dirname(filename))
  const cache = !cachedData ? 'none' : script.cachedDataRejected ? 'rejected' : 'used'
  return {
    exports: module.exports,
    cache,
    saveCache() {
      if (cache === 'used') return
      try {
        mkdirSync(path.dirname(cacheFile), {recursive: true})
        const partial = `${cacheFile}.${process.pid}`
        writeFileSync(partial, script.createCachedData())
        renameSync(partial, cacheFile)
      } catch {
        // a read-only home: no cache
      }
    },
  }
}
