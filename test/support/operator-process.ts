/** Runs `bin/run.js operator run` as a real process for integration tests, with its logs captured. */
import {spawn, type ChildProcess} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import type {RequestLogEntry} from './api-simulator/index.js'
import {freePort} from './control-plane.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface OperatorProcess {
  child: ChildProcess
  pid: number
  metricsUrl: string
  probeUrl: string
  /** Every log line so far, parsed (the process logs JSON). */
  logs(): Array<Record<string, unknown> & {msg: string}>
  rawOutput(): string
  waitForLog(predicate: (line: Record<string, unknown> & {msg: string}) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>
  /** Sends the signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>
  exited: Promise<number | string>
}

/** `bin`: another build's bin/run.js (benchmarks compare against an earlier commit); default this tree's. */
/** `defaultAddresses`: no address flags, so the process listens where `operator run` does by default (out of a Pod: 127.0.0.1:8080 and :8081). */
export async function startOperator(options: {kubeconfig: string; namespace: string; leaderElect?: boolean; logLevel?: string; args?: string[]; env?: NodeJS.ProcessEnv; nodeArgs?: string[]; bin?: string; wrap?: string[]; defaultAddresses?: boolean}): Promise<OperatorProcess> {
  const [metricsPort, probePort] = options.defaultAddresses ? [8080, 8081] : [await freePort(), await freePort()]
  // `wrap`: a command prefix that execs node in the same process (e.g. into a memory cgroup first).
  const [command, ...prefix] = [...(options.wrap ?? []), process.execPath]
  const child = spawn(command!, [
    ...prefix,
    ...(options.nodeArgs ?? []),
    options.bin ?? path.join(root, 'bin/run.js'), 'operator', 'run',
    '--kubeconfig', options.kubeconfig,
    '--namespace', options.namespace,
    ...(options.defaultAddresses ? [] : ['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`]),
    '--log-format', 'json',
    '--log-level', options.logLevel ?? 'debug',
    ...(options.leaderElect ? ['--leader-elect'] : []),
    ...(options.args ?? []),
  ], {stdio: ['ignore', 'pipe', 'pipe'], env: {...process.env, ...options.env}})
  let output = ''
  const parsed: Array<Record<string, unknown> & {msg: string}> = []
  let partial = ''
  const onData = (chunk: Buffer) => {
    const text = chunk.toString()
    output += text
    partial += text
    let newline: number
    while ((newline = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, newline)
      partial = partial.slice(newline + 1)
      try {
        parsed.push(JSON.parse(line))
      } catch {
        // not a log line (e.g. an oclif error message)
      }
    }
  }
  child.stdout!.on('data', onData)
  child.stderr!.on('data', onData)
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  const operator: OperatorProcess = {
    child,
    pid: child.pid!,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    probeUrl: `http://127.0.0.1:${probePort}`,
    logs: () => parsed,
    rawOutput: () => output,
    exited,
    async waitForLog(predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = parsed.find(predicate)
        if (found) return found
        if (child.exitCode !== null) throw new Error(`operator exited (${child.exitCode}):\n${output.slice(-3000)}`)
        if (Date.now() > deadline) throw new Error(`log line not seen within ${timeoutMs} ms:\n${output.slice(-3000)}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
  return operator
}

/**
 * SIGKILLs `operator` the moment the simulator has answered a request after which `reached()` holds (the simulator
 * calls back synchronously once a request took effect), so the kill lands mid-sync however fast the sync runs;
 * resolves once the process is gone. Polling would overshoot a fast sync by a hundred writes.
 */
export async function killWhen(sim: {onRequest: ((entry: RequestLogEntry) => void) | undefined}, operator: OperatorProcess, reached: (entry: RequestLogEntry) => boolean): Promise<void> {
  const killed = new Promise<void>((resolve) => {
    sim.onRequest = (entry) => {
      if (!reached(entry)) return
      sim.onRequest = undefined
      operator.child.kill('SIGKILL')
      resolve()
    }
  })
  const exitedFirst = operator.exited.then((code) => {
    throw new Error(`the operator exited (${code}) before the kill point\n${operator.rawOutput().slice(-4000)}`)
  })
  try {
    await Promise.race([killed, exitedFirst])
  } finally {
    sim.onRequest = undefined
  }
  await operator.exited
}
