import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import http from 'node:http'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

describe('polycrate operator status (without a cluster)', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'status-'))
  })
  after(async () => {
    await rm(dir, {recursive: true, force: true})
  })

  it('an unreachable server says which and what to check, exit 1', async () => {
    const port = await freePort()
    const file = await writeKubeconfig(path.join(dir, 'down.yaml'), `https://127.0.0.1:${port}`, 't')
    const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', file])
    assert.equal(error?.oclif?.exit, 1)
    assert.equal(error?.message,
      `Cannot reach the Kubernetes API server at https://127.0.0.1:${port} (ECONNREFUSED): ` +
      'check that the cluster is running and that the kubeconfig points at the right server.')
    assert.equal(stdout, '')
  })

  it('unreachable with -o json: still exit 1, nothing on stdout', async () => {
    const port = await freePort()
    const file = await writeKubeconfig(path.join(dir, 'down-json.yaml'), `https://127.0.0.1:${port}`, 't')
    const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', file, '-o', 'json'])
    assert.equal(error?.oclif?.exit, 1)
    assert.equal(stdout, '')
  })

  it('a missing --kubeconfig file gives one line saying so, exit 1', async () => {
    const {error} = await runCommand(['operator', 'status', '--kubeconfig', path.join(dir, 'nope.yaml')])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, /nope\.yaml does not exist: check the --kubeconfig path/)
  })

  it('an unknown --kind exits 2 listing the valid kinds, before any connection', async () => {
    const {error} = await runCommand(['operator', 'status', '--kubeconfig', path.join(dir, 'nope.yaml'), '--kind', 'pods'])
    assert.equal(error?.oclif?.exit, 2)
    assert.match(error!.message, /^Unknown kind "pods"\. Valid kinds: OperatorConfig \(operatorconfigs, oc, opcfg\); .*Endpoint \(endpoints, ep, pep\)/)
  })

  it('--namespace and -A exclude each other', async () => {
    const {error} = await runCommand(['operator', 'status', '-n', 'x', '-A'])
    assert.ok(error)
    assert.match(error.message, /cannot also be provided when using --namespace/)
  })

  describe('against an API server without (some of) the CRDs', () => {
    /** Plurals whose list answers 404 ('*': all); the others answer one object each for endpoints, none otherwise. */
    let missing = new Set<string>()
    let server: http.Server
    let kubeconfig: string
    before(async () => {
      server = http.createServer((request, response) => {
        const plural = new URL(request.url ?? '/', 'http://x').pathname.split('/').pop() ?? ''
        response.setHeader('Content-Type', 'application/json')
        if (missing.has('*') || missing.has(plural)) {
          response.statusCode = 404
          response.end(JSON.stringify({kind: 'Status', status: 'Failure', reason: 'NotFound', message: 'the server could not find the requested resource', code: 404}))
          return
        }
        const items = plural === 'endpoints'
          ? [{metadata: {name: 'app-example-com', namespace: 'prod', creationTimestamp: new Date(Date.now() - 2 * 3600_000).toISOString()},
            status: {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}}]
          : []
        response.end(JSON.stringify({kind: 'List', metadata: {}, items}))
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const {port} = server.address() as {port: number}
      kubeconfig = await writeKubeconfig(path.join(dir, 'fake.yaml'), `http://127.0.0.1:${port}`, 't')
    })
    after(() => new Promise((resolve) => server.close(resolve)))

    it('no polycrate.io CRD at all: says how to install them, exit 1', async () => {
      missing = new Set(['*'])
      const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig])
      assert.equal(error?.oclif?.exit, 1)
      assert.equal(error?.message,
        'The polycrate.io CRDs are not installed in this cluster: run `polycrate operator install-crds` ' +
        '(or `polycrate operator crds | kubectl apply --server-side -f -`).')
      assert.equal(stdout, '')
    })

    it('some CRDs missing: the rest is listed, a warning on stderr names the missing kinds', async () => {
      missing = new Set(['artifacts', 'organizations'])
      const {stdout, stderr, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig])
      assert.equal(error, undefined, error?.message)
      assert.equal(stderr,
        'Warning: The CRDs of Artifact, Organization are not installed in this cluster, so they are left out: ' +
        'run `polycrate operator install-crds`.\n')
      assert.match(stdout, /^No OperatorConfig found: the operator runs with the defaults \(create polycrate\/default to configure it\)\.$/m)
      assert.match(stdout, /^Endpoints\n---------\n {2}NAMESPACE +NAME +PHASE +SYNC +API ID +AGE\n {2}prod +app-example-com +Synced +synced +ep-1 +2h$/m)
    })
  })

  it('-o accepts table, json and yaml only', async () => {
    const {error} = await runCommand(['operator', 'status', '-o', 'xml'])
    assert.ok(error)
    assert.match(error.message, /Expected --output=xml to be one of: table, json, yaml/)
  })
})
