/**
 * The shell habits of issue 34, as a user meets them in a terminal: `polycrate autocomplete` (its scripts, and bash
 * completing for real), "did you mean" on a pty, NO_COLOR on a pty (the fast path and oclif), and `version` without
 * a cluster. Terminal cases run the installed CLI under util-linux `script`, which gives it a pty.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {createServer, type Server} from 'node:http'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import type {VersionReport} from '../../src/cli/version-view.js'
import {assertBuilt, runCli} from '../support/cli-process.js'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

const root = path.resolve(import.meta.dirname, '../..')
const bin = path.join(root, 'bin/run.js')
const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {version: string}
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/

/** Runs `command` (a shell line) on a pty (`script -qec`); `input` is typed into it. */
function onPty(command: string, options: {env?: NodeJS.ProcessEnv; input?: string} = {}): Promise<{output: string; status: number}> {
  return new Promise((resolve) => {
    // A user's terminal: no colour switches, and not a CI job (chalk gives no colour on a pty when CI is set, while
    // oclif's ansis colours even a pipe there).
    const env: NodeJS.ProcessEnv = {...process.env, TERM: 'xterm-256color'}
    delete env.NO_COLOR
    delete env.FORCE_COLOR
    delete env.CI
    Object.assign(env, options.env)
    const child = execFile('script', ['-qec', command, '/dev/null'], {env, cwd: tmpdir()}, (error, stdout) => {
      resolve({output: stdout, status: error ? Number((error as {code?: unknown}).code ?? 1) : 0})
    })
    child.stdin!.end(options.input ?? '')
  })
}

describe('shell habits: autocomplete, did you mean, NO_COLOR, version', function () {
  this.timeout(60_000)
  before(assertBuilt)

  describe('polycrate autocomplete (@oclif/plugin-autocomplete)', () => {
    let cache: string
    const functions = (shell: string) => path.join(cache, 'polycrate/autocomplete/functions', shell)
    before(async () => {
      cache = await mkdtemp(path.join(tmpdir(), 'autocomplete-'))
      const run = await runCli(['autocomplete', 'bash'], {fastPath: true, env: {XDG_CACHE_HOME: cache}})
      assert.equal(run.status, 0, run.stderr)
      assert.match(run.stdout, /polycrate autocomplete script bash/)
    })
    after(() => rm(cache, {recursive: true, force: true}))

    it('bash, zsh and powershell scripts, each naming every command and its flags', async () => {
      const scripts = {
        bash: await readFile(path.join(functions('bash'), 'polycrate.bash'), 'utf8'),
        zsh: await readFile(path.join(functions('zsh'), '_polycrate'), 'utf8'),
        powershell: await readFile(path.join(functions('powershell'), 'polycrate.ps1'), 'utf8'),
      }
      for (const [shell, script] of Object.entries(scripts)) {
        for (const command of ['status', 'install', 'uninstall', 'manifests', 'crds', 'explain', 'rollout', 'version']) assert.match(script, new RegExp(command), `${shell}: ${command}`)
        for (const flag of ['kubeconfig', 'output', 'values', 'leader-elect']) assert.match(script, new RegExp(`\\b${flag}\\b`), `${shell}: --${flag}`)
      }
      // zsh completes the values of enum flags.
      assert.match(scripts.zsh, /\{-o,--output\}"\[[^\]]*\]:output options:\(table json yaml\)"/)
      assert.match(scripts.zsh, /--log-level"\[[^\]]*\]:log-level options:\(debug info warn error\)"/)
    })

    it('the bash function completes commands and flags in a real bash', async () => {
      const complete = (...words: string[]) => new Promise<string[]>((resolve, reject) => {
        const script = `source ${JSON.stringify(path.join(functions('bash'), 'polycrate.bash'))}
COMP_WORDS=(${words.map((word) => JSON.stringify(word)).join(' ')}); COMP_CWORD=${words.length - 1}
_polycrate_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`
        execFile('bash', ['--norc', '-c', script], (error, stdout) => (error ? reject(error) : resolve(stdout.split('\n').filter(Boolean).sort())))
      })
      assert.deepEqual(await complete('polycrate', 'operator', 'sta'), ['status'])
      assert.deepEqual(await complete('polycrate', 'operator', 'rollout', 'p'), ['pause'])
      assert.deepEqual(await complete('polycrate', 'operator', 'status', '--ou'), ['--output'])
      assert.deepEqual(await complete('polycrate', 'ver'), ['version'])
    })

    it('autocomplete script bash prints the line for ~/.bashrc', async () => {
      const run = await runCli(['autocomplete', 'script', 'bash'], {fastPath: true, env: {XDG_CACHE_HOME: cache}})
      assert.equal(run.stdout.trim(), `POLYCRATE_AC_BASH_SETUP_PATH=${path.join(cache, 'polycrate/autocomplete/bash_setup')} && test -f $POLYCRATE_AC_BASH_SETUP_PATH && source $POLYCRATE_AC_BASH_SETUP_PATH; # polycrate autocomplete setup`)
    })
  })

  describe('did you mean (@oclif/plugin-not-found)', () => {
    it('on a terminal: asks, and runs the suggestion on yes', async () => {
      const {output, status} = await onPty(`node ${bin} operator crd --list`, {input: 'y\n', env: {NO_COLOR: '1'}})
      assert.match(output, /operator crd is not a polycrate command/)
      assert.match(output, /Did you mean operator crds\?/)
      assert.match(output, /KIND +GROUP +PLURAL/, 'ran operator crds --list')
      assert.equal(status, 0)
    })

    it('on a terminal, no: exit 127; not on a terminal: no question, exit 127', async () => {
      const no = await onPty(`node ${bin} operator stauts`, {input: 'n\n', env: {NO_COLOR: '1'}})
      assert.match(no.output, /Did you mean operator status\?/)
      assert.equal(no.status, 127)
      const piped = await runCli(['operator', 'stauts'], {fastPath: true})
      assert.equal(piped.status, 127)
      const stderr = piped.stderr.replaceAll(new RegExp(ANSI, 'g'), '') // a CI job (CI set) gets oclif's colour in a pipe
      assert.match(stderr, /operator stauts is not a polycrate command/)
      assert.doesNotMatch(stderr, /Did you mean/)
    })
  })

  describe('NO_COLOR on a terminal', () => {
    let server: Server
    let url: string
    before(async () => {
      server = createServer((request, response) => response.end('[+]ping ok\nok\n'))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as {port: number}).port}`
    })
    after(() => new Promise<void>((resolve) => server.close(() => resolve())))

    it('the fast path (health): colour on a terminal, none with NO_COLOR, none with an empty NO_COLOR ignored', async () => {
      assert.match((await onPty(`node ${bin} operator health --url ${url}`)).output, ANSI)
      assert.doesNotMatch((await onPty(`node ${bin} operator health --url ${url}`, {env: {NO_COLOR: '1'}})).output, ANSI)
      assert.match((await onPty(`node ${bin} operator health --url ${url}`, {env: {NO_COLOR: ''}})).output, ANSI)
    })

    it('oclif commands: chalk output, oclif\'s error and the fast path\'s error mark', async () => {
      const down = `node ${bin} version --kubeconfig /nonexistent`
      assert.match((await onPty(down)).output, ANSI)
      assert.doesNotMatch((await onPty(down, {env: {NO_COLOR: '1', FORCE_COLOR: '1'}})).output, ANSI)
      const error = `node ${bin} operator crds --kind Pod`
      assert.match((await onPty(error)).output, ANSI)
      assert.doesNotMatch((await onPty(error, {env: {NO_COLOR: '1'}})).output, ANSI)
      assert.doesNotMatch((await onPty(`POLYCRATE_NO_FAST_PATH=1 ${error}`, {env: {NO_COLOR: '1'}})).output, ANSI)
    })
  })

  describe('polycrate version without a cluster', () => {
    it('--client: the CLI\'s and Node\'s version; -o json / --json / -o yaml the same document', async () => {
      const text = await runCommand(['version', '--client'])
      assert.equal(text.stdout, `Client:   polycrate ${pkg.version} (Node ${process.version}, ${process.platform}/${process.arch})\n`)
      const expected: VersionReport = {client: {version: pkg.version, node: process.version, platform: process.platform, arch: process.arch}}
      assert.deepEqual(JSON.parse((await runCommand(['version', '--client', '-o', 'json'])).stdout), expected)
      assert.deepEqual(JSON.parse((await runCommand(['version', '--client', '--json'])).stdout), expected)
      assert.deepEqual(yaml.load((await runCommand(['version', '--client', '-o', 'yaml'])).stdout), expected)
    })

    it('an unreachable cluster: the client printed, the cluster\'s error, exit 1 (JSON too)', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'version-'))
      try {
        const port = await freePort()
        const kubeconfig = await writeKubeconfig(path.join(dir, 'down.yaml'), `https://127.0.0.1:${port}`, 't')
        const text = await runCommand(['version', '--kubeconfig', kubeconfig])
        assert.equal(text.error?.oclif?.exit, 1)
        assert.match(text.stdout, /^Client: {3}polycrate /)
        assert.match(text.stdout, new RegExp(`^Cluster: {2}Cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`, 'm'))
        const json = await runCommand(['version', '--kubeconfig', kubeconfig, '-o', 'json'])
        assert.equal(json.error?.oclif?.exit, 1)
        const report = JSON.parse(json.stdout) as VersionReport
        assert.deepEqual(report.cluster, {server: `https://127.0.0.1:${port}`, error: text.stdout.split('\n')[1]!.slice('Cluster:  '.length)})
      } finally {
        await rm(dir, {recursive: true, force: true})
      }
    })

    it('an API URL without a token: exit 2 before connecting', async () => {
      const {error} = await runCommand(['version', '--api-url', 'https://api.example'])
      assert.equal(error?.oclif?.exit, 2)
      assert.equal(error?.message, 'Missing the Polycrate API token: pass --token or set POLYCRATE_API_TOKEN.')
    })
  })

  describe('a reader that stops early (`| head`)', () => {
    // The CRDs are ~110 KB, more than a pipe holds: the CLI is still writing when head has gone.
    for (const args of ['operator crds', 'operator crds --json']) {
      it(`${args} | head -c 10 under pipefail: exit 0, nothing on stderr (${args.includes('--json') ? 'oclif' : 'the fast path'})`, async () => {
        const result = await new Promise<{status: number; stdout: string; stderr: string}>((resolve) => {
          execFile('bash', ['-o', 'pipefail', '-c', `node ${JSON.stringify(bin)} ${args} | head -c 10`], (error, stdout, stderr) => {
            resolve({status: error ? Number((error as {code?: unknown}).code ?? 1) : 0, stdout, stderr})
          })
        })
        assert.deepEqual({...result, stdout: result.stdout.length}, {status: 0, stdout: 10, stderr: ''})
      })
    }
  })
})
