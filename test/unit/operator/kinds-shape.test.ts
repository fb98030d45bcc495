import assert from 'node:assert/strict'
import {readdirSync} from 'node:fs'
import path from 'node:path'
import {ApiSession} from '../../../src/operator/agent/api-session.js'
import {defaultFeatures} from '../../../src/operator/registry.js'

const kindsDir = path.resolve(import.meta.dirname, '../../../src/operator/kinds')
const kinds = readdirSync(kindsDir, {withFileTypes: true}).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()

describe('one shape per kind (src/operator/kinds/<kind>/)', () => {
  it('finds the nine kinds', () => {
    assert.deepEqual(kinds, ['artifact', 'backup', 'certificate', 'endpoint', 'host', 'k8sapp', 'k8scluster', 'k8svolume', 's3bucket'])
  })

  it('test/unit/kinds/ spells every kind as its folder does', () => {
    const testFolders = readdirSync(path.resolve(import.meta.dirname, '../kinds')).sort()
    assert.deepEqual(testFolders.filter((folder) => !kinds.includes(folder)), [])
  })

  for (const kind of kinds) {
    it(`${kind}: index.ts exports features and nothing else; every other file is ${kind}.<role>.ts`, async () => {
      const files = readdirSync(path.join(kindsDir, kind)).sort()
      assert.ok(files.includes('index.ts'), `${kind} has no index.ts`)
      assert.deepEqual(files.filter((file) => file !== 'index.ts' && !file.startsWith(`${kind}.`)), [])
      const index = await import(path.join(kindsDir, kind, 'index.ts')) as Record<string, unknown>
      assert.deepEqual(Object.keys(index), ['features'])
      assert.equal(typeof index.features, 'function')
    })
  }

  it('the registry runs every feature of every kind', async () => {
    const session = new ApiSession()
    const all = new Set(defaultFeatures(session).map((feature) => feature.name))
    for (const kind of kinds) {
      const {features} = await import(path.join(kindsDir, kind, 'index.ts')) as {features: (s: ApiSession) => readonly {name: string}[]}
      const names = features(session).map((feature) => feature.name)
      assert.ok(names.length > 0, `${kind} has no feature`)
      for (const name of names) assert.ok(all.has(name), `${kind}'s ${name} is not in the registry`)
    }
  })
})
