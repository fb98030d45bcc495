import assert from 'node:assert/strict'
import {mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {spawn} from 'node:child_process'
import {createServer, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {assertBuilt, runCli, words, type CliRun} from '../support/cli-process.js'
import {freePort} from '../support/control-plane.js'

const root = path.resolve(import.meta.dirname, '../..')

/**
 * bin/run.js runs `operator crds|health|explain` on a fast path without oclif. Each case here runs the installed CLI
 * both ways (fast path, and POLYCRATE_NO_FAST_PATH=1 through oclif): the same stdout and exit code, the same error
 * message, and the module trace shows which path ran. explain's cases are in test/integration/explain.test.ts.
 */
describe('the CLI fast path (bin/run.js): the same output as oclif, without loading it', function () {
  this.timeout(60_000)
  before(assertBuilt)

  /** Both ways; asserts the fast path ran without oclif (or fell through to it) and the results agree. */
  async function both(args: string[], expect: {fast: boolean; status: number}, env?: NodeJS.ProcessEnv): Promise<CliRun> {
    const [fast, oclif] = await Promise.all([runCli(args, {fastPath: true, env}), runCli(args, {fastPath: false, env})])
    assert.equal(oclif.loadedOclif, true, 'POLYCRATE_NO_FAST_PATH=1 runs oclif')
    assert.equal(fast.loadedOclif, !expect.fast, expect.fast ? 'the fast path loads no oclif' : 'this falls through to oclif')
    assert.equal(fast.status, expect.status, `fast path exit code; stderr: ${fast.stderr}`)
    assert.equal(oclif.status, expect.status, `oclif exit code; stderr: ${oclif.stderr}`)
    assert.equal(fast.stdout, oclif.stdout)
    assert.equal(words(fast.stderr), words(oclif.stderr))
    return fast
  }

  describe('crds', () => {
    it('--list', async () => {
      const {stdout} = await both(['operator', 'crds', '--list'], {fast: true, status: 0})
      assert.match(stdout, /^KIND\s+GROUP\s+PLURAL\s+SHORT NAMES\s+SCOPE\n/)
    })

    it('--list --json, --kind repeated and in the short form', async () => {
      const {stdout} = await both(['operator', 'crds', '--list', '--json', '--kind', 'ep', '-k', 'Organization'], {fast: true, status: 0})
      assert.deepEqual((JSON.parse(stdout) as Array<{kind: string}>).map((row) => row.kind), ['Endpoint', 'Organization'])
    })

    it('all CRDs as YAML, and --kind=X --json', async () => {
      assert.match((await both(['operator', 'crds'], {fast: true, status: 0})).stdout, /^---\napiVersion: apiextensions\.k8s\.io\/v1\n/)
      const {stdout} = await both(['operator', 'crds', '--kind=opcfg', '--json'], {fast: true, status: 0})
      assert.equal((JSON.parse(stdout) as {items: Array<{spec: {names: {kind: string}}}>}).items[0]!.spec.names.kind, 'OperatorConfig')
    })

    it('-o: yaml is the CRDs\' YAML; json and --list -o yaml|json are the document --json prints', async () => {
      const text = (await both(['operator', 'crds', '--kind', 'ep'], {fast: true, status: 0})).stdout
      assert.equal((await both(['operator', 'crds', '--kind', 'ep', '-o', 'yaml'], {fast: true, status: 0})).stdout, text)
      const json = (await both(['operator', 'crds', '--kind', 'ep', '--json'], {fast: true, status: 0})).stdout
      assert.equal((await both(['operator', 'crds', '--kind', 'ep', '-o', 'json'], {fast: true, status: 0})).stdout, json)
      const rows = JSON.parse((await both(['operator', 'crds', '--list', '-o', 'json'], {fast: true, status: 0})).stdout) as unknown[]
      const {stdout} = await both(['operator', 'crds', '--list', '-o', 'yaml'], {fast: true, status: 0})
      assert.deepEqual(yaml.load(stdout), rows)
      const failed = await both(['operator', 'crds', '--list', '--kind', 'Pod', '-o', 'yaml'], {fast: true, status: 2})
      assert.equal((yaml.load(failed.stdout) as {error: {oclif: {exit: number}}}).error.oclif.exit, 2)
    })

    it('--output-dir writes the same files and prints their paths', async () => {
      const base = await mkdtemp(path.join(tmpdir(), 'fast-crds-'))
      try {
        const [fast, oclif] = await Promise.all([
          runCli(['operator', 'crds', '--output-dir', 'out'], {fastPath: true, cwd: await mkdtemp(path.join(base, 'fast-'))}),
          runCli(['operator', 'crds', '--output-dir', 'out'], {fastPath: false, cwd: await mkdtemp(path.join(base, 'oclif-'))}),
        ])
        assert.equal(fast.loadedOclif, false)
        assert.equal(fast.status, 0)
        assert.equal(oclif.status, 0)
        const dirOf = (run: CliRun) => path.dirname(run.stdout.split('\n')[0]!)
        assert.equal(fast.stdout.replaceAll(dirOf(fast), 'DIR'), oclif.stdout.replaceAll(dirOf(oclif), 'DIR'))
        const files = await readdir(dirOf(fast))
        assert.equal(files.length, 12)
        assert.deepEqual(files, await readdir(dirOf(oclif)))
        for (const name of files) {
          assert.equal(await readFile(path.join(dirOf(fast), name), 'utf8'), await readFile(path.join(dirOf(oclif), name), 'utf8'), name)
        }
      } finally {
        await rm(base, {recursive: true, force: true})
      }
    })

    it('an error that is no CommandFailure (a file where --output-dir should be): exit 1, the same message and JSON', async () => {
      const base = await mkdtemp(path.join(tmpdir(), 'fast-crds-'))
      try {
        await writeFile(path.join(base, 'file'), '')
        const target = path.join(base, 'file', 'crds')
        const {stderr} = await both(['operator', 'crds', '--output-dir', target], {fast: true, status: 1})
        assert.match(words(stderr), /ENOTDIR/)
        const json = await both(['operator', 'crds', '--output-dir', target, '--json'], {fast: true, status: 1})
        assert.equal((JSON.parse(json.stdout) as {error: {code: string}}).error.code, 'ENOTDIR')
      } finally {
        await rm(base, {recursive: true, force: true})
      }
    })

    it('an unknown --kind: the same message, exit 2; with --json the same error JSON', async () => {
      const {stderr} = await both(['operator', 'crds', '--kind', 'Pod'], {fast: true, status: 2})
      assert.match(words(stderr), /^Error: Unknown kind "Pod"\. Valid kinds: OperatorConfig/)
      const json = await both(['operator', 'crds', '--kind', 'Pod', '--json'], {fast: true, status: 2})
      assert.equal((JSON.parse(json.stdout) as {error: {oclif: {exit: number}}}).error.oclif.exit, 2)
    })

    for (const args of [['--help'], ['-h'], ['--list', '--output-dir', 'x'], ['--bogus'], ['--kind'], ['extra'], ['--list=yes'], ['--', '--list']]) {
      it(`falls through to oclif: crds ${args.join(' ')}`, async () => {
        const run = await runCli(['operator', 'crds', ...args], {fastPath: true})
        assert.equal(run.loadedOclif, true)
      })
    }
  })

  describe('health', () => {
    let server: Server
    let url: string
    let ready = true
    before(async () => {
      server = createServer((request, response) => {
        const path = new URL(request.url!, 'http://x').pathname
        if (path === '/healthz') return response.end('[+]ping ok\nhealthz check passed\n')
        if (path === '/readyz' && ready) return response.end('[+]caches ok\nreadyz check passed\n')
        if (path === '/readyz') {
          response.statusCode = 500
          return response.end('[+]ping ok\n[-]caches failed: informers not synced\n[-]leader failed: not leader yet\nreadyz check failed\n')
        }
        response.statusCode = 404
        response.end('404 page not found\n')
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as {port: number}).port}`
    })
    after(() => new Promise((resolve) => server.close(resolve)))
    beforeEach(() => {
      ready = true
    })

    it('healthy: exit 0, text and --json', async () => {
      assert.equal((await both(['operator', 'health', '--url', url], {fast: true, status: 0})).stdout, `Operator at ${url}\n  liveness   ok\n  readiness  ok\n`)
      const {stdout} = await both(['operator', 'health', `--url=${url}/`, '--json', '--timeout', '3'], {fast: true, status: 0})
      assert.equal((JSON.parse(stdout) as {healthy: boolean}).healthy, true)
    })

    it('unhealthy: exit 1, the failing checks (text) or the report (--json)', async () => {
      ready = false
      const {stdout} = await both(['operator', 'health', '--url', url], {fast: true, status: 1})
      assert.match(stdout, /readiness {2}failed: \[-\]caches failed: informers not synced\n {21}\[-\]leader failed: not leader yet\n$/)
      const json = await both(['operator', 'health', '--url', url, '--json'], {fast: true, status: 1})
      assert.equal((JSON.parse(json.stdout) as {healthy: boolean}).healthy, false)
      const asYaml = await both(['operator', 'health', '--url', url, '-o', 'yaml'], {fast: true, status: 1})
      assert.deepEqual(yaml.load(asYaml.stdout), JSON.parse(json.stdout))
      assert.equal((await both(['operator', 'health', '--url', url, '-o', 'json'], {fast: true, status: 1})).stdout, json.stdout)
    })

    it('a URL that is not a health endpoint (404): exit 1', async () => {
      await both(['operator', 'health', '--url', `${url}/metrics`], {fast: true, status: 1})
    })

    it('cannot reach: exit 2 with the same message, text and --json', async () => {
      const port = await freePort()
      const {stderr} = await both(['operator', 'health', '--url', `127.0.0.1:${port}`], {fast: true, status: 2})
      assert.equal(words(stderr), `Error: Cannot reach the operator's health endpoint at http://127.0.0.1:${port} (ECONNREFUSED): ` +
        'is `polycrate operator run` running, and is --health-probe-bind-address the same?')
      await both(['operator', 'health', '--url', `127.0.0.1:${port}`, '--json'], {fast: true, status: 2})
    })

    it('--url that is not a URL: exit 2', async () => {
      await both(['operator', 'health', '--url', 'ftp://x'], {fast: true, status: 2})
    })

    for (const args of [['--timeout', '0'], ['--timeout', 'soon'], ['--url'], ['--url', 'a', '--url', 'b'], ['-h']]) {
      it(`falls through to oclif: health ${args.join(' ')}`, async () => {
        const run = await both(['operator', 'health', ...args], {fast: false, status: 2})
        assert.notEqual(run.stderr, '')
      })
    }
  })

  describe('run (src/cli/run-fast-path.ts; running operators: test/integration/operator-run.test.ts)', () => {
    it('a bad bind address: the same message, exit 2', async () => {
      const {stderr} = await both(['operator', 'run', '--metrics-bind-address', 'nonsense'], {fast: true, status: 2})
      assert.match(words(stderr), /metrics-bind-address/)
    })

    it('a kubeconfig that does not exist: the same message, exit 1', async () => {
      const {stderr} = await both(['operator', 'run', '--kubeconfig', '/nonexistent/kubeconfig'], {fast: true, status: 1})
      assert.match(words(stderr), /nonexistent/)
    })

    it('starts from its bundle (dist/run/) and logs package.json\'s version', async function () {
      this.timeout(20_000)
      const dir = await mkdtemp(path.join(tmpdir(), 'run-version-'))
      const kubeconfig = path.join(dir, 'kubeconfig')
      // An apiserver that is not there: the operator logs its start, then keeps retrying until killed.
      await writeFile(kubeconfig, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:${await freePort()}"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n`)
      const child = spawn(process.execPath, [path.join(root, 'bin/run.js'), 'operator', 'run', '--kubeconfig', kubeconfig], {env: {...process.env, POLYCRATE_NO_FAST_PATH: undefined}})
      try {
        let out = ''
        const line = await new Promise<string>((resolve, reject) => {
          const scan = (chunk: Buffer) => {
            out += chunk.toString()
            const found = out.split('\n').find((l) => l.includes('starting polycrate operator'))
            if (found) resolve(found)
          }
          child.stdout.on('data', scan)
          child.stderr.on('data', scan)
          child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)))
        })
        const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {version: string}
        assert.equal((JSON.parse(line) as {version?: string}).version, pkg.version)
      } finally {
        child.kill('SIGKILL')
        await rm(dir, {recursive: true, force: true})
      }
    })

    for (const args of [['--help'], ['--json'], ['--log-level', 'trace'], ['--bogus'], ['extra']]) {
      it(`falls through to oclif: run ${args.join(' ')}`, async () => {
        const run = await runCli(['operator', 'run', ...args], {fastPath: true})
        assert.equal(run.loadedOclif, true)
        assert.doesNotMatch(run.stdout + run.stderr, /starting polycrate operator/)
        // An extra word is a command that does not exist (@oclif/plugin-not-found: exit 127, as a shell's).
        assert.equal(run.status, args[0] === '--help' ? 0 : args[0] === 'extra' ? 127 : 2)
      })
    }
  })

  it('other commands, and POLYCRATE_CONTENT_TYPE=json, go to oclif', async () => {
    assert.equal((await runCli(['operator', 'manifests', '--help'], {fastPath: true})).loadedOclif, true)
    const run = await runCli(['operator', 'crds', '--list'], {fastPath: true, env: {POLYCRATE_CONTENT_TYPE: 'json'}})
    assert.equal(run.loadedOclif, true)
    assert.equal((JSON.parse(run.stdout) as unknown[]).length, 12)
  })
})
