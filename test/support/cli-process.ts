/**
 * Runs the built CLI as it is installed (`node bin/run.js …`, dist/ from `npm run build`) on its fast path or, with
 * POLYCRATE_NO_FAST_PATH=1, through oclif; reports stdout, stderr, the exit code and whether oclif and client-node
 * were loaded (a module trace), so tests can compare the two paths and know which one ran.
 */
import {execFile} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '../..')

export interface CliRun {
  stdout: string
  stderr: string
  status: number
  loadedOclif: boolean
  loadedClientNode: boolean
}

export function assertBuilt(): void {
  if (!existsSync(path.join(root, 'dist/fast-path.cjs'))) {
    throw new Error('dist/fast-path.cjs is missing: run `npm run build` before these tests (they run the CLI as installed)')
  }
}

/** The fast path's V8 code caches of this test process (not the user's ~/.cache). */
const cacheHome = mkdtempSync(path.join(tmpdir(), 'cli-cache-'))
process.on('exit', () => rmSync(cacheHome, {recursive: true, force: true}))

export async function runCli(args: string[], options: {fastPath: boolean; env?: NodeJS.ProcessEnv; cwd?: string}): Promise<CliRun> {
  const traceDir = mkdtempSync(path.join(tmpdir(), 'cli-trace-'))
  const trace = path.join(traceDir, 'modules')
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      XDG_CACHE_HOME: cacheHome,
      ...options.env,
      NODE_OPTIONS: `--import ${path.join(root, 'test/support/module-trace.mjs')}`,
      MODULE_TRACE_FILE: trace,
    }
    delete env.POLYCRATE_NO_FAST_PATH
    if (!options.fastPath) env.POLYCRATE_NO_FAST_PATH = '1'
    const {stdout, stderr, status} = await new Promise<{stdout: string; stderr: string; status: number}>((resolve) => {
      execFile(process.execPath, [path.join(root, 'bin/run.js'), ...args], {cwd: options.cwd ?? root, env, maxBuffer: 64 * 1024 * 1024}, (error, stdout, stderr) => {
        resolve({stdout, stderr, status: error ? Number((error as {code?: unknown}).code ?? 1) : 0})
      })
    })
    const modules = existsSync(trace) ? readFileSync(trace, 'utf8') : ''
    return {
      stdout,
      stderr,
      status,
      loadedOclif: modules.includes('/node_modules/@oclif/core/'),
      loadedClientNode: modules.includes('/node_modules/@kubernetes/client-node/'),
    }
  } finally {
    rmSync(traceDir, {recursive: true, force: true})
  }
}

/** oclif wraps error messages to the terminal width; the fast path wraps the same, but compare the words. */
export const words = (text: string) => text.replace(/›/g, ' ').replace(/\s+/g, ' ').trim()
