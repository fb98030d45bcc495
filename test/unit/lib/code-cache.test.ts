import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {pathToFileURL} from 'node:url'

const codeCache = pathToFileURL(path.resolve(import.meta.dirname, '../../../src/lib/code-cache.ts')).href

/**
 * Each load runs in its own process, as the CLI does: within one process V8 finds the script in its in-memory
 * compilation cache and never looks at the cache data.
 */
describe('loadWithCodeCache (the fast path\'s V8 code cache)', function () {
  this.timeout(30_000)
  let dir: string
  let bundle: string

  /** Loads the bundle in a new process, calls answer(21), saves the cache; returns what it saw. */
  function load(key: string, cacheHome = path.join(dir, 'cache')): {answer: number; dir: string; cache: string} {
    const script = `
      const {loadWithCodeCache} = await import(${JSON.stringify(codeCache)})
      const loaded = loadWithCodeCache(new URL(${JSON.stringify(pathToFileURL(bundle).href)}), ${JSON.stringify(key)})
      const answer = loaded.exports.answer(21)
      loaded.saveCache()
      console.log(JSON.stringify({answer, dir: loaded.exports.dir, cache: loaded.cache}))`
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {env: {...process.env, XDG_CACHE_HOME: cacheHome}, encoding: 'utf8'})
    return JSON.parse(output) as {answer: number; dir: string; cache: string}
  }
  const cacheFiles = async () => (await readdir(path.join(dir, 'cache', 'polycrate')).catch(() => [])).sort()

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'code-cache-'))
    bundle = path.join(dir, 'bundle.cjs')
    // Big enough for V8 to cache it at all (it does not cache tiny scripts).
    const filler = Array.from({length: 500}, (_, i) => `function f${i}(x) { return x + ${i} }`).join('\n')
    await writeFile(bundle, `const os = require("node:os"); exports.answer = (x) => x * 2 + os.EOL.length - 1; exports.dir = __dirname\n${filler}\n`)
  })
  afterEach(() => rm(dir, {recursive: true, force: true}))

  it('runs the CommonJS file (exports, require, __dirname); writes a cache per key after a run; the next run uses it', async () => {
    assert.deepEqual(load('crds'), {answer: 42, dir, cache: 'none'})
    const [written, ...more] = await cacheFiles()
    assert.equal(more.length, 0)
    assert.match(written!, new RegExp(`^bundle\\.cjs-[0-9a-f]{16}-${process.version.replace(/\./g, '\\.')}-${process.arch}-crds\\.v8cache$`))
    assert.deepEqual(load('crds'), {answer: 42, dir, cache: 'used'})
    assert.equal(load('explain').cache, 'none')
    assert.equal((await cacheFiles()).length, 2)
  })

  it('a cache V8 rejects (damaged, another V8) is rewritten, and the code still runs', async () => {
    load('crds')
    const cachePath = path.join(dir, 'cache', 'polycrate', (await cacheFiles())[0]!)
    await writeFile(cachePath, Buffer.alloc(5000, 7))
    assert.deepEqual(load('crds'), {answer: 42, dir, cache: 'rejected'})
    assert.notDeepEqual(await readFile(cachePath), Buffer.alloc(5000, 7))
    assert.equal(load('crds').cache, 'used')
  })

  it('a changed bundle gets a new cache file; a cache directory it cannot write is no error', async () => {
    load('crds')
    await writeFile(bundle, `${await readFile(bundle, 'utf8')}function extra() {}\n`)
    assert.equal(load('crds').cache, 'none')
    assert.equal((await cacheFiles()).length, 2)
    // $XDG_CACHE_HOME is a file: no directory can be made in it.
    assert.deepEqual(load('crds', bundle), {answer: 42, dir, cache: 'none'})
  })
})
