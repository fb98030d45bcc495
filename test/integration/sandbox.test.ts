/**
 * `npm start` (scripts/sandbox.ts), issue 14 defect 6: the operator's log goes to a file the banner names and
 * `--logs` shows it; with the output piped, Ctrl-C (SIGINT to the process group) after the reader has gone still
 * tears everything down, the temporary directory included. (`--smoke` is what .ci/run runs before any build.)
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import {eventually} from '../support/helpers.js'

const root = path.resolve(import.meta.dirname, '../..')

describe('npm start (the sandbox)', function () {
  this.timeout(180_000)

  it('names the operator\'s log file, shows it with --logs, and cleans up on Ctrl-C with its output piped', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/sandbox.ts'), '--interval', '1', '--logs'], {
      cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      // A screen with an Endpoint CR and the operator's own log lines under it.
      await eventually(async () => /operator log \(.*\), last lines:\n.*controller=/.test(stdout) && /Synced/.test(stdout), 150_000, 'a refresh with synced endpoints and the log tail')
      const logPath = /operator log\s+(\S+operator\.log)\s+\(tail -f it/.exec(stdout)?.[1]
      // (the banner itself is not printed on failure: it holds an API token)
      assert.ok(logPath, 'no operator log path in the banner')
      const dir = path.dirname(logPath)
      assert.ok(existsSync(logPath))
      assert.doesNotMatch(stdout + stderr, /Could not find tsx/)

      // The reader goes first (as `| tee` does on Ctrl-C), then SIGINT reaches the whole group.
      child.stdout.destroy()
      process.kill(-child.pid!, 'SIGINT')
      assert.equal(await exited, 0, stderr)
      assert.equal(existsSync(dir), false, `${dir} was left behind`)
      assert.match(stderr, /stopped; .* removed/)
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL')
    }
  })

  /** Processes whose command line holds `text` (from /proc). */
  const processesWith = (text: string) => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)
    } catch {
      return false
    }
  }).map(Number)

  it('with :8888 taken, --smoke still passes (every port free or chosen); --smoke of an unknown flag is a usage error', async function () {
    this.timeout(300_000)
    const usage = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/sandbox.ts'), '--smoke', '--bogus'], {cwd: root, stdio: ['ignore', 'pipe', 'pipe']})
    let usageErr = ''
    usage.stderr.on('data', (chunk: Buffer) => {
      usageErr += chunk.toString()
    })
    assert.equal(await new Promise((resolve) => usage.once('exit', resolve)), 2)
    assert.match(usageErr, /Unknown option '--bogus'[\s\S]*Usage: npm start/)

    // Jupyter's port, the external-dns webhook's default: taken. (Where it is taken already, that is the test too.)
    const busy = net.createServer()
    await new Promise<void>((resolve) => busy.once('error', () => resolve()).listen(8888, '127.0.0.1', () => resolve()))
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/sandbox.ts'), '--smoke'], {cwd: root, stdio: ['ignore', 'pipe', 'pipe']})
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
      })
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
      assert.equal(code, 0, stderr)
      assert.match(stderr, /smoke: OK/)
    } finally {
      busy.close()
    }
  })

  it('kill -KILL of the sandbox takes its operator with it (a watchdog), and its directory', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/sandbox.ts'), '--interval', '1', '--no-examples'], {
      cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    try {
      await eventually(async () => /operator log\s+(\S+operator\.log)/.test(stdout), 150_000, 'the banner')
      const dir = path.dirname(/operator log\s+(\S+operator\.log)/.exec(stdout)![1]!)
      const kubeconfig = path.join(dir, 'kubeconfig')
      const operators = () => processesWith(kubeconfig).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('operator\0run'))
      await eventually(async () => operators().length > 0, 30_000, 'the operator process')
      process.kill(child.pid!, 'SIGKILL')
      await eventually(async () => operators().length === 0, 30_000, 'the operator gone after the sandbox was killed')
      await eventually(async () => !existsSync(dir), 30_000, `${dir} removed`)
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        // gone already
      }
    }
  })
})
