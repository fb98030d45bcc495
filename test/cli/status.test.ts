import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import http from 'node:http'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import type {StatusReport} from '../../src/cli/status-view.js'
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

  it('unreachable with -o json / -o yaml: exit 1, the error document as --json prints it', async () => {
    const port = await freePort()
    const file = await writeKubeconfig(path.join(dir, 'down-json.yaml'), `https://127.0.0.1:${port}`, 't')
    const message = `Cannot reach the Kubernetes API server at https://127.0.0.1:${port} (ECONNREFUSED): ` +
      'check that the cluster is running and that the kubeconfig points at the right server.'
    const expected = {error: {name: 'Error', message, oclif: {exit: 1}}}
    for (const args of [['-o', 'json'], ['--json']]) {
      const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', file, ...args])
      assert.equal(error?.oclif?.exit, 1)
      assert.deepEqual(JSON.parse(stdout), expected)
    }
    const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', file, '-o', 'yaml'])
    assert.equal(error?.oclif?.exit, 1)
    assert.deepEqual(yaml.load(stdout), expected)
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
    /** Plurals whose list answers 404 ('*': all); the others answer their objects below, none for other kinds. */
    let missing = new Set<string>()
    let notKubernetes = false
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000).toISOString()
    const completedAt = hoursAgo(26)
    const objects: Record<string, unknown[]> = {
      endpoints: [{metadata: {name: 'app-example-com', namespace: 'prod', creationTimestamp: hoursAgo(2)},
        spec: {remoteAddress: 'app.example.com', remotePort: 443, path: '/healthz'},
        status: {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}}],
      certificates: [{metadata: {name: 'app-tls', namespace: 'prod', creationTimestamp: hoursAgo(3)},
        spec: {name: 'app-tls', secret_name: 'app-tls', issuer_name: 'letsencrypt', is_ready: true, certificate_status: 'ready'},
        status: {phase: 'Synced', sync_status: 'synced', api_id: 'cert-1'}}],
      backups: [{metadata: {name: 'daily', namespace: 'velero', creationTimestamp: hoursAgo(27)},
        spec: {name: 'daily', provider: 'velero', kind: 'cluster', status: 'completed', completed_at: completedAt},
        status: {phase: 'Synced', sync_status: 'synced', api_id: 'b-1'}}],
      artifacts: [{metadata: {name: 'nginx-1-25-3', creationTimestamp: hoursAgo(5)},
        spec: {image: 'docker.io/library/nginx:1.25.3', registry: 'docker.io', repository: 'library/nginx', tag: '1.25.3', usage: {pod_count: 2}},
        status: {phase: 'Synced', api_id: 'a-1'}}],
    }
    let server: http.Server
    let kubeconfig: string
    before(async () => {
      server = http.createServer((request, response) => {
        const plural = new URL(request.url ?? '/', 'http://x').pathname.split('/').pop() ?? ''
        response.setHeader('Content-Type', 'application/json')
        if (plural === 'version') {
          response.end(JSON.stringify(notKubernetes ? {hello: 'world'} : {major: '1', minor: '35', gitVersion: 'v1.35.4'}))
          return
        }
        if (missing.has('*') || missing.has(plural)) {
          response.statusCode = 404
          response.end(JSON.stringify({kind: 'Status', status: 'Failure', reason: 'NotFound', message: 'the server could not find the requested resource', code: 404}))
          return
        }
        const items = objects[plural] ?? []
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

    it('a server that is not Kubernetes (404 everywhere, /version not Kubernetes\') is named as such, not "CRDs missing"', async () => {
      missing = new Set(['*'])
      notKubernetes = true
      try {
        const {error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig])
        assert.equal(error?.oclif?.exit, 1)
        assert.match(error!.message, /^The server at http:\/\/127\.0\.0\.1:\d+ does not answer \/version like a Kubernetes API server \(its answer has no major, minor, gitVersion\): check the server of the kubeconfig's context/)
      } finally {
        notKubernetes = false
      }
    })

    it('some CRDs missing: the rest is listed, a warning on stderr names the missing kinds; nothing runs: exit 1 after printing it all', async () => {
      missing = new Set(['artifacts', 'organizations'])
      const {stdout, stderr, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig])
      assert.equal(error?.oclif?.exit, 1, 'nothing runs')
      assert.equal(stderr,
        'Warning: The CRDs of Artifact, Organization are not installed in this cluster, so they are left out: ' +
        'run `polycrate operator install-crds`.\n')
      assert.match(stdout, /^ {2}State: +NOTHING RUNS: no Deployment, Pod or lease of the operator in namespace polycrate$/m)
      assert.match(stdout, /^No OperatorConfig found \(and no operator runs: see above\)\./m)
      assert.doesNotMatch(stdout, /runs with the defaults/)
      assert.match(stdout,
        /^Endpoints\n---------\n {2}NAMESPACE +NAME +HOST +PORT +PATH +PHASE +SYNC +API ID +AGE\n {2}prod +app-example-com +app\.example\.com +443 +\/healthz +Synced +synced +ep-1 +2h$/m)
      assert.doesNotMatch(stdout, /^Artifacts$/m)
    })

    it('each kind\'s table has its kubectl get columns: Certificate, Backup (Completed as an age), the cluster-scoped Artifact', async () => {
      missing = new Set()
      const {stdout, stderr, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig])
      assert.equal(error?.oclif?.exit, 1, 'nothing runs')
      assert.equal(stderr, '')
      assert.match(stdout,
        /^Certificates\n-+\n {2}NAMESPACE +NAME +ISSUER +READY +STATUS +PHASE +SYNC +API ID +AGE\n {2}prod +app-tls +letsencrypt +true +ready +Synced +synced +cert-1 +3h$/m)
      assert.match(stdout,
        /^Backups\n-+\n {2}NAMESPACE +NAME +PROVIDER +KIND +STATUS +COMPLETED +PHASE +SYNC +API ID +AGE\n {2}velero +daily +velero +cluster +completed +1d +Synced +synced +b-1 +1d$/m)
      assert.match(stdout,
        /^Artifacts\n-+\n {2}NAME +REGISTRY +REPOSITORY +TAG +PODS +PHASE +SYNC +API ID +AGE\n {2}nginx-1-25-3 +docker\.io +library\/nginx +1\.25\.3 +2 +Synced +- +a-1 +5h$/m)
    })

    it('-o json carries each row\'s columns: raw values by printer column name, the date as its timestamp', async () => {
      missing = new Set()
      const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig, '-o', 'json'])
      assert.equal(error?.oclif?.exit, 1, 'nothing runs: the document, then exit 1')
      const report = JSON.parse(stdout) as StatusReport
      assert.equal(report.operator?.running, false)
      const columns = Object.fromEntries(report.resources.map((row) => [row.kind, row.columns]))
      assert.deepEqual(columns, {
        Endpoint: {Host: 'app.example.com', Port: '443', Path: '/healthz'},
        Backup: {Provider: 'velero', Kind: 'cluster', Status: 'completed', Completed: completedAt},
        Certificate: {Issuer: 'letsencrypt', Ready: 'true', Status: 'ready'},
        Artifact: {Registry: 'docker.io', Repository: 'library/nginx', Tag: '1.25.3', Pods: '2'},
      })
      const endpoint = report.resources.find((row) => row.kind === 'Endpoint')!
      assert.deepEqual(Object.keys(endpoint), ['kind', 'namespace', 'name', 'columns', 'phase', 'syncStatus', 'apiID', 'age', 'creationTimestamp'])
    })
  })

  it('-o accepts table, json and yaml only', async () => {
    const {error} = await runCommand(['operator', 'status', '-o', 'xml'])
    assert.ok(error)
    assert.match(error.message, /Expected --output=xml to be one of: table, json, yaml/)
  })
})
