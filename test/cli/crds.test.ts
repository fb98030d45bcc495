import assert from 'node:assert/strict'
import {mkdtemp, readdir, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import {allCrds} from '../../src/crds/index.js'

interface Crd {
  kind: string
  metadata: {name: string}
  spec: {names: {kind: string}}
}

const docs = (text: string) => yaml.loadAll(text).filter(Boolean) as Crd[]

describe('polycrate operator crds', () => {
  it('prints all twelve CRDs as multi-document YAML', async () => {
    const {stdout, error} = await runCommand(['operator', 'crds'])
    assert.equal(error, undefined)
    const crds = docs(stdout)
    assert.equal(crds.length, 12)
    assert.ok(stdout.startsWith('---\n'))
    assert.deepEqual(crds.map((c) => c.spec.names.kind), allCrds.map((d) => d.kind))
    for (const crd of crds) assert.equal(crd.kind, 'CustomResourceDefinition')
  })

  for (const def of allCrds) {
    for (const name of [def.kind, def.plural, ...def.shortNames, def.kind.toLowerCase()]) {
      it(`--kind ${name} prints only ${def.kind}`, async () => {
        const {stdout, error} = await runCommand(['operator', 'crds', '--kind', name])
        assert.equal(error, undefined)
        const crds = docs(stdout)
        assert.deepEqual(crds.map((c) => c.metadata.name), [`${def.plural}.polycrate.io`])
      })
    }
  }

  it('--kind may be repeated', async () => {
    const {stdout} = await runCommand(['operator', 'crds', '--kind', 'ep', '--kind', 'Organization'])
    assert.deepEqual(docs(stdout).map((c) => c.spec.names.kind), ['Endpoint', 'Organization'])
  })

  it('an unknown --kind exits non-zero and lists the valid kinds', async () => {
    const {error, stdout} = await runCommand(['operator', 'crds', '--kind', 'Pod'])
    assert.ok(error)
    assert.equal(error.oclif?.exit, 2)
    assert.match(error.message, /Unknown kind "Pod"/)
    assert.match(error.message, /OperatorConfig \(operatorconfigs, oc, opcfg\)/)
    assert.match(error.message, /S3Bucket \(s3buckets, s3\)/)
    assert.equal(stdout, '')
  })

  it('--list prints a table of kind, group, plural, short names and scope', async () => {
    const {stdout} = await runCommand(['operator', 'crds', '--list'])
    const lines = stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^KIND\s+GROUP\s+PLURAL\s+SHORT NAMES\s+SCOPE$/)
    assert.equal(lines.length, 13)
    assert.match(stdout, /OperatorConfig\s+polycrate\.io\s+operatorconfigs\s+oc,opcfg\s+Namespaced/)
    assert.match(stdout, /Artifact\s+polycrate\.io\s+artifacts\s+-\s+Cluster/)
  })

  it('--list --json prints machine-readable rows', async () => {
    const {stdout} = await runCommand(['operator', 'crds', '--list', '--json'])
    const rows = JSON.parse(stdout) as Array<{kind: string; shortNames: string[]; scope: string}>
    assert.equal(rows.length, 12)
    assert.deepEqual(rows.find((r) => r.kind === 'Endpoint'), {kind: 'Endpoint', group: 'polycrate.io', plural: 'endpoints', shortNames: ['ep', 'pep'], scope: 'Namespaced'})
  })

  it('--output-dir creates the directory and writes <group>_<plural>.yaml per CRD', async () => {
    const base = await mkdtemp(path.join(tmpdir(), 'crds-'))
    try {
      const dir = path.join(base, 'nested', 'crds')
      const {stdout, error} = await runCommand(['operator', 'crds', '--output-dir', dir])
      assert.equal(error, undefined)
      const files = (await readdir(dir)).sort()
      assert.deepEqual(files, allCrds.map((d) => `polycrate.io_${d.plural}.yaml`).sort())
      assert.deepEqual(stdout.trim().split('\n').sort(), files.map((f) => path.join(dir, f)).sort())
      const one = docs(await readFile(path.join(dir, 'polycrate.io_k8sapps.yaml'), 'utf8'))
      assert.deepEqual(one.map((c) => c.spec.names.kind), ['K8sApp'])
    } finally {
      await rm(base, {recursive: true, force: true})
    }
  })

  it('--output-dir and --list exclude each other', async () => {
    const {error} = await runCommand(['operator', 'crds', '--list', '--output-dir', '/tmp/x'])
    assert.ok(error)
    assert.notEqual(error.oclif?.exit, 0)
  })

  it('--help and the README show the operator reference\'s `crds | kubectl apply -f -` first', async () => {
    const {stdout} = await runCommand(['operator', 'crds', '--help'])
    const applies = stdout.split('\n').filter((line) => line.includes('| kubectl apply'))
    assert.match(applies[0] ?? '', /crds \| kubectl apply -f -$/)
    const readme = await readFile(path.resolve(import.meta.dirname, '../../README.md'), 'utf8')
    const inReadme = readme.split('\n').filter((line) => /operator crds \| kubectl apply/.test(line))
    assert.ok(inReadme.length > 0)
    assert.match(inReadme[0]!, /crds \| kubectl apply -f -/)
  })
})
