/**
 * The operator's one structured logger: JSON lines (in a pod, or with --log-format json) or readable text on a
 * TTY. Child loggers carry fields such as `controller` and `key`. Values under keys that look like secrets are
 * never written.
 */
import {isoNow, systemClock, type Clock} from './clock.js'
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
export type LogFormat = 'json' | 'text'

const order: Record<LogLevel, number> = {debug: 10, info: 20, warn: 30, error: 40}
const secretKeys = /token|password|secret|authorization|api[_-]?key|credential/i

export type Fields = Record<string, unknown>

export interface Logger {
  debug(message: string, fields?: Fields): void
  info(message: string, fields?: Fields): void
  warn(message: string, fields?: Fields): void
  error(message: string, fields?: Fields): void
  child(fields: Fields): Logger
  enabled(level: LogLevel): boolean
}

export interface LoggerOptions {
  level?: LogLevel
  format?: LogFormat
  write?: (line: string) => void
  /** The clock of the timestamps (the system clock by default; the CLI makes the logger before any manager). */
  clock?: Clock
}

export function createLogger(options: LoggerOptions = {}, base: Fields = {}): Logger {
  const level = options.level ?? 'info'
  const format = options.format ?? (process.stderr.isTTY ? 'text' : 'json')
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`))
  const clock = options.clock ?? systemClock
  const emit = (at: LogLevel, message: string, fields?: Fields) => {
    if (order[at] < order[level]) return
    const all = redact({...base, ...fields})
    if (format === 'json') {
      write(JSON.stringify({ts: isoNow(clock), level: at, msg: message, ...all}))
    } else {
      const extras = Object.entries(all).map(([k, v]) => `${k}=${typeof v === 'string' ? quote(v) : JSON.stringify(v)}`)
      write([isoNow(clock), at.toUpperCase().padEnd(5), message, ...extras].join(' '))
    }
  }
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({level, format, write, clock}, {...base, ...fields}),
    enabled: (at) => order[at] >= order[level],
  }
}

/** A logger that drops everything (tests, library defaults). */
export const silentLogger: Logger = createLogger({level: 'error', write: () => {}})

function quote(value: string): string {
  return /[\s"=]/.test(value) ? JSON.stringify(value) : value
}

function redact(fields: Fields): Fields {
  const out: Fields = {}
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) out[key] = value.message
    else out[key] = secretKeys.test(key) && value !== undefined ? '[redacted]' : value
  }
  return out
}
