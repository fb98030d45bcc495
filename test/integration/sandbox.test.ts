/**
 * `npm start` (scripts/sandbox.ts), issue 14 defect 6: the operator's log goes to a file the banner names and
 * `--logs` shows it; with the output piped, Ctrl-C (SIGINT to the process group) after the reader has gone still
 * tears everything down, the temporary directory included. (`--smoke` is what .ci/run runs before any build.)
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import path from 'node:path'
import {eventually} from '../support/operator-process.js'

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
})
