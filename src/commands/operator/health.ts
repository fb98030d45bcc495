import * as Flags from '@oclif/core/flags'
import chalk from 'chalk'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'

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

export default class Health extends JsonAwareCommand {
  static override summary = 'Ask a running operator whether it is alive and ready (/healthz and /readyz).'
  static override description =
    'Fetches /healthz?verbose and /readyz?verbose from the operator\'s health probe address and prints the result. ' +
    'Exit code 0 when both pass, 1 when the operator answers but a check fails, 2 when it cannot be reached.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --url http://10.0.0.12:8081',
    'kubectl -n polycrate port-forward deploy/polycrate-operator 8081 & <%= config.bin %> <%= command.id %> --json',
  ]

  static override enableJsonFlag = true

  static override flags = {
    url: Flags.string({
      summary: 'Base URL of the operator\'s health probe server (its --health-probe-bind-address).',
      default: 'http://127.0.0.1:8081',
    }),
    timeout: Flags.integer({summary: 'Seconds to wait for each answer.', default: 5, min: 1}),
  }

  async run(): Promise<HealthReport> {
    const {flags} = await this.parse(Health)
    const base = normalizeUrl(flags.url)
    if (!base) this.error(`--url "${flags.url}" is not a URL: pass e.g. http://127.0.0.1:8081`, {exit: 2})

    const timeoutMs = flags.timeout * 1000
    let live: ProbeAnswer
    let ready: ProbeAnswer
    try {
      ;[live, ready] = await Promise.all([probe(base, 'healthz', timeoutMs), probe(base, 'readyz', timeoutMs)])
    } catch (error) {
      this.error(
        `Cannot reach the operator's health endpoint at ${base} (${reachFailure(error, flags.timeout)}): ` +
          'is `polycrate operator run` running, and is --health-probe-bind-address the same?',
        {exit: 2},
      )
    }

    const report: HealthReport = {url: base, healthy: live.ok && ready.ok, live, ready}
    if (this.jsonEnabled()) {
      if (!report.healthy) {
        this.logJson(report)
        this.exit(1)
      }
      return report
    }

    const colour = Boolean(process.stdout.isTTY)
    this.log(`Operator at ${base}`)
    this.log(describe('liveness', live, colour))
    this.log(describe('readiness', ready, colour))
    if (!report.healthy) this.exit(1)
    return report
  }
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
function describe(label: string, answer: ProbeAnswer, colour: boolean): string {
  const prefix = `  ${label.padEnd(10)} `
  if (answer.ok) return `${prefix}${colour ? chalk.green('ok') : 'ok'}`
  const reasons = failureReasons(answer)
  const [first, ...more] = reasons.map((reason, i) => (i === 0 ? `failed: ${reason}` : reason))
  const lines = [`${prefix}${colour ? chalk.red(first) : first}`]
  const indent = ' '.repeat(prefix.length + 'failed: '.length)
  for (const line of more) lines.push(`${indent}${colour ? chalk.red(line) : line}`)
  return lines.join('\n')
}

function failureReasons(answer: ProbeAnswer): string[] {
  const failing = answer.body.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('[-]'))
  if (failing.length > 0) return failing
  const firstLine = answer.body.split('\n').map((line) => line.trim()).find(Boolean)
  if (answer.status === 404) return [`HTTP 404: not a health endpoint (is --url the health probe address, not the metrics one?)`]
  return [`HTTP ${answer.status}${firstLine ? `: ${firstLine.slice(0, 200)}` : ''}`]
}
