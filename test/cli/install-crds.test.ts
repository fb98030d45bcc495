import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

describe('polycrate operator install-crds (without a cluster)', () => {
  let dir: string
  const saved = {KUBECONFIG: process.env.KUBECONFIG, HOME: process.env.HOME}
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'install-crds-'))
  })
  after(async () => {
    await rm(dir, {recursive: true, force: true})
  })
  afterEach(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  })

  it('a missing --kubeconfig file gives one line saying so, exit 1', async () => {
    const {error} = await runCommand(['operator', 'install-crds', '--kubeconfig', path.join(dir, 'nope.yaml')])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, /nope\.yaml does not exist: check the --kubeconfig path/)
  })

  it('no kubeconfig anywhere says where it looked', async () => {
    delete process.env.KUBECONFIG
    process.env.HOME = dir
    const {error} = await runCommand(['operator', 'install-crds'])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, /No kubeconfig found: pass --kubeconfig <file>, set \$KUBECONFIG, or create .*\.kube\/config/)
  })

  it('an unknown --context lists the known ones', async () => {
    const file = await writeKubeconfig(path.join(dir, 'ctx.yaml'), 'https://127.0.0.1:1', 't')
    const {error} = await runCommand(['operator', 'install-crds', '--kubeconfig', file, '--context', 'prod'])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, /Context "prod" is not in .*; available: test/)
  })

  it('an unreachable server says which and what to check, exit 1', async () => {
    const port = await freePort()
    const file = await writeKubeconfig(path.join(dir, 'down.yaml'), `https://127.0.0.1:${port}`, 't')
    const {error} = await runCommand(['operator', 'install-crds', '--kubeconfig', file])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, new RegExp(`Cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): check that the cluster is running`))
  })

  it('$KUBECONFIG is used when no flag is given', async () => {
    const port = await freePort()
    process.env.KUBECONFIG = await writeKubeconfig(path.join(dir, 'env.yaml'), `https://127.0.0.1:${port}`, 't')
    const {error} = await runCommand(['operator', 'install-crds'])
    assert.match(error!.message, new RegExp(`127\\.0\\.0\\.1:${port}`))
  })
})
