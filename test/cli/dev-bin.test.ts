import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

describe('bin/dev.js runs the TypeScript sources without a build', function () {
  this.timeout(60_000)
  let clone: string

  before(() => {
    // A fresh clone after `npm ci`: sources, no dist/ — plus a stale build that must not be used.
    clone = mkdtempSync(path.join(tmpdir(), 'polycrate-fresh-'))
    for (const entry of ['bin', 'package.json', 'tsconfig.json']) cpSync(path.join(root, entry), path.join(clone, entry), {recursive: true})
    for (const entry of ['src', 'node_modules']) symlinkSync(path.join(root, entry), path.join(clone, entry))
    mkdirSync(path.join(clone, 'dist/commands/operator'), {recursive: true})
    writeFileSync(path.join(clone, 'dist/commands/operator/crds.js'), 'console.log("STALE BUILD")\n')
    writeFileSync(path.join(clone, 'oclif.manifest.json'), JSON.stringify({version: '0.1.0', commands: {}}))
  })
  after(() => rmSync(clone, {recursive: true, force: true}))

  it('`node bin/dev.js operator crds --list` lists the CRDs from src/, ignoring dist/ and the manifest', async () => {
    const {stdout, stderr} = await run(process.execPath, [path.join(clone, 'bin/dev.js'), 'operator', 'crds', '--list'], {cwd: clone, env: {...process.env, NODE_OPTIONS: ''}})
    assert.match(stdout, /^KIND\s+GROUP/)
    assert.match(stdout, /OperatorConfig\s+polycrate\.io\s+operatorconfigs/)
    assert.doesNotMatch(stdout + stderr, /STALE BUILD|Could not find tsx|not found/)
  })

  it('also under `node --import tsx` (the old way of starting it)', async () => {
    const {stdout} = await run(process.execPath, ['--import', 'tsx', path.join(clone, 'bin/dev.js'), 'operator', 'crds', '--kind', 'ep'], {cwd: clone, env: {...process.env, NODE_OPTIONS: ''}})
    assert.match(stdout, /name: endpoints\.polycrate\.io/)
  })
  it('errors like bin/run.js: an unknown command and a flag error are one line, without a stack trace', async () => {
    for (const args of [['operator', 'statsu'], ['operator', 'manifests', '--namespace', 'Bad_NS']]) {
      const failed = await run(process.execPath, [path.join(clone, 'bin/dev.js'), ...args], {cwd: clone, env: {...process.env, NODE_OPTIONS: '', DEBUG: ''}})
        .then(() => assert.fail(`${args.join(' ')} succeeded`), (error: {code: number; stderr: string}) => error)
      assert.notEqual(failed.code, 0)
      assert.match(failed.stderr, /Error: /)
      assert.doesNotMatch(failed.stderr, /\n\s+at /, `no stack trace for ${args.join(' ')}`)
    }
  })
})
