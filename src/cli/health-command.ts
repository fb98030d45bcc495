/**
 * `polycrate operator health`: its flags and what it does, shared by the oclif command and the fast path.
 */
import type {ChalkInstance} from 'chalk'
import {colourEnabled} from './colour.js'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'
import {outputFlagSpec, type FlagSpecs, type FlagValues} from './flag-spec.js'

export interface ProbeAnswer {
  ok: boolean
  status: number
  body: string
}

export interface HealthReport {
  url: string
  healthy: boolean
  live: ProbeAnswer
  ready: ProbeAnswer
}

export const healthFlags = {
  url: {
    type: 'string',
    summary: 'Base URL of the operator\'s health probe server (its --health-probe-bind-address).',
    default: 'http://127.0.0.1:8081',
  },
  timeout: {type: 'integer', summary: 'Seconds to wait for each answer.', default: 5, min: 1},
  output: outputFlagSpec,
} as const satisfies FlagSpecs

/** Exit 0 when both probes pass, 1 when the operator answers but a check fails; unreachable fails with exit 2. */
export async function runHealth(flags: FlagValues<typeof healthFlags>, out: CommandOutput): Promise<CommandOutcome<HealthReport>> {
  const base = normalizeUrl(flags.url)
  if (!base) throw new CommandFailure(`--url "${flags.url}" is not a URL: pass e.g. http://127.0.0.1:8081`, 2)

  const timeoutMs = flags.timeout * 1000
  let live: ProbeAnswer
  let ready: ProbeAnswer
  try {
    ;[live, ready] = await Promise.all([probe(base, 'healthz', timeoutMs), probe(base, 'readyz', timeoutMs)])
  } catch (error) {
    throw new CommandFailure(
      `Cannot reach the operator's health endpoint at ${base} (${reachFailure(error, flags.timeout)}): ` +
        'is `polycrate operator run` running, and is --health-probe-bind-address the same?',
      2,
    )
  }

  const report: HealthReport = {url: base, healthy: live.ok && ready.ok, live, ready}
  if (!out.json) {
    // chalk only for a terminal (start-up cost).
    const chalk = colourEnabled(process.stdout) ? (await import('chalk')).default : undefined
    out.log(`Operator at ${base}`)
    out.log(describe('liveness', live, chalk))
    out.log(describe('readiness', ready, chalk))
  }
  return {value: report, exit: report.healthy ? 0 : 1}
}

/** `http://host:port` without a trailing slash; a bare `host:port` or `:port` gets http:// (and 127.0.0.1). */
export function normalizeUrl(value: string): string | undefined {
  let text = value.trim()
  if (text.startsWith(':')) text = `127.0.0.1${text}`
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `http://${text}`
  try {
    const url = new URL(text)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined
    return `${url.origin}${url.pathname}`.replace(/\/+$/, '')
  } catch {
    return undefined
  }
}

/** One GET with node:http(s): fetch would cost this short-lived command ~70 ms of CPU to start undici. */
async function probe(base: string, endpoint: 'healthz' | 'readyz', timeoutMs: number): Promise<ProbeAnswer> {
  const url = new URL(`${base}/${endpoint}?verbose`)
  const {request} = url.protocol === 'https:' ? await import('node:https') : await import('node:http')
  return new Promise((resolve, reject) => {
    const req = request(url, {headers: {accept: 'text/plain'}, signal: AbortSignal.timeout(timeoutMs)}, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        body += chunk
      })
      response.on('end', () => resolve({ok: response.statusCode === 200, status: response.statusCode ?? 0, body}))
      response.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** ECONNREFUSED, ENOTFOUND, … or "no answer within 5 s"; else the innermost cause's message ("bad port"). */
function reachFailure(error: unknown, timeoutSeconds: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutSeconds} s`
  }
  let cause: unknown = error
  let message = error instanceof Error ? error.message : String(error)
  for (let depth = 0; depth < 5 && cause; depth++) {
    const code = (cause as {code?: unknown}).code
    if (typeof code === 'string' && code !== '') return code
    if (cause instanceof Error && cause.message) message = cause.message
    cause = (cause as {cause?: unknown}).cause
  }
  return message
}

/** `  readiness  failed: [-]caches failed: informers not synced`, further failures aligned below. */
function describe(label: string, answer: ProbeAnswer, chalk: ChalkInstance | undefined): string {
  const prefix = `  ${label.padEnd(10)} `
  if (answer.ok) return `${prefix}${chalk ? chalk.green('ok') : 'ok'}`
  const reasons = failureReasons(answer)
  const [first, ...more] = reasons.map((reason, i) => (i === 0 ? `failed: ${reason}` : reason))
  const lines = [`${prefix}${chalk ? chalk.red(first) : first}`]
  const indent = ' '.repeat(prefix.length + 'failed: '.length)
  for (const line of more) lines.push(`${indent}${chalk ? chalk.red(line) : line}`)
  return lines.join('\n')
}

function failureReasons(answer: ProbeAnswer): string[] {
  const failing = answer.body.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('[-]'))
  if (failing.length > 0) return failing
  const firstLine = answer.body.split('\n').map((line) => line.trim()).find(Boolean)
  if (answer.status === 404) return [`HTTP 404: not a health endpoint (is --url the health probe address, not the metrics one?)`]
  return [`HTTP ${answer.status}${firstLine ? `: ${firstLine.slice(0, 200)}` : ''}`]
}
