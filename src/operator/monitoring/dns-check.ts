/**
 * The DNS check: a small DNS wire client (RFC 1035) that asks the endpoint's server one question over UDP (or TCP
 * with the 2-byte length prefix) and reports rcode, records, whether the expected results are all present, and the
 * query time. Records are rendered as `dig +short` would (A/AAAA address, names without the final dot, MX
 * `pref name`, TXT the joined strings).
 */
import {createSocket} from 'node:dgram'
import {Socket, isIP} from 'node:net'
import {randomInt} from 'node:crypto'
import type {CheckResultInput} from '../../api/index.js'
import type {ProbeOptions} from './http-check.js'
import type {DnsPlan} from './plan.js'
import {CheckFailure, classify, commonResult, round, type CheckOutcome, type Failure} from './result.js'

export const DNS_TYPES: Record<string, number> = {A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, MX: 15, TXT: 16, AAAA: 28, SRV: 33, CAA: 257}
const TYPE_NAMES = Object.fromEntries(Object.entries(DNS_TYPES).map(([name, code]) => [code, name]))
export const RCODES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE']

export interface DnsAnswer {
  id: number
  rcode: string
  records: Array<{name: string; type: string; ttl: number; data: string}>
}

function encodeName(name: string): Buffer {
  const labels = name.replace(/\.$/, '').split('.').filter(Boolean)
  const parts = labels.map((label) => {
    const bytes = Buffer.from(label, 'utf8')
    if (bytes.length > 63) throw new CheckFailure('configuration', 'BAD_NAME', `DNS label "${label}" is longer than 63 bytes`)
    return Buffer.concat([Buffer.from([bytes.length]), bytes])
  })
  return Buffer.concat([...parts, Buffer.from([0])])
}

/** A query with one question, recursion desired. */
export function encodeQuery(id: number, name: string, type: string): Buffer {
  const header = Buffer.alloc(12)
  header.writeUInt16BE(id, 0)
  header.writeUInt16BE(0x0100, 2)
  header.writeUInt16BE(1, 4)
  const question = Buffer.alloc(4)
  question.writeUInt16BE(DNS_TYPES[type] ?? 1, 0)
  question.writeUInt16BE(1, 2)
  return Buffer.concat([header, encodeName(name), question])
}

function readName(message: Buffer, start: number): {name: string; next: number} {
  const labels: string[] = []
  let offset = start
  let next = -1
  for (let jumps = 0; jumps < 64; jumps++) {
    const length = message.readUInt8(offset)
    if (length === 0) {
      if (next < 0) next = offset + 1
      return {name: labels.join('.'), next}
    }
    if ((length & 0xc0) === 0xc0) {
      if (next < 0) next = offset + 2
      offset = message.readUInt16BE(offset) & 0x3fff
      continue
    }
    labels.push(message.toString('utf8', offset + 1, offset + 1 + length))
    offset += 1 + length
  }
  throw new CheckFailure('response', 'BAD_RESPONSE', 'DNS name compression loop')
}

function recordData(message: Buffer, type: number, offset: number, length: number): string {
  switch (type) {
    case 1: return [...message.subarray(offset, offset + 4)].join('.')
    case 28: {
      const groups: string[] = []
      for (let i = 0; i < 16; i += 2) groups.push(message.readUInt16BE(offset + i).toString(16))
      // The URL parser writes IPv6 in its canonical compressed form (RFC 5952).
      return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1)
    }
    case 2: case 5: case 12: return readName(message, offset).name
    case 15: return `${message.readUInt16BE(offset)} ${readName(message, offset + 2).name}`
    case 16: {
      const strings: string[] = []
      for (let at = offset; at < offset + length;) {
        const size = message.readUInt8(at)
        strings.push(message.toString('utf8', at + 1, at + 1 + size))
        at += 1 + size
      }
      return strings.join('')
    }
    case 33: return `${message.readUInt16BE(offset)} ${message.readUInt16BE(offset + 2)} ${message.readUInt16BE(offset + 4)} ${readName(message, offset + 6).name}`
    case 6: {
      const mname = readName(message, offset)
      const rname = readName(message, mname.next)
      return `${mname.name} ${rname.name} ${message.readUInt32BE(rname.next)}`
    }
    default: return message.subarray(offset, offset + length).toString('hex')
  }
}

/** Parses an answer; throws a `response` CheckFailure on a malformed message. */
export function decodeAnswer(message: Buffer): DnsAnswer {
  try {
    const id = message.readUInt16BE(0)
    const flags = message.readUInt16BE(2)
    const questions = message.readUInt16BE(4)
    const answers = message.readUInt16BE(6)
    let offset = 12
    for (let i = 0; i < questions; i++) offset = readName(message, offset).next + 4
    const records: DnsAnswer['records'] = []
    for (let i = 0; i < answers; i++) {
      const {name, next} = readName(message, offset)
      const type = message.readUInt16BE(next)
      const ttl = message.readUInt32BE(next + 4)
      const length = message.readUInt16BE(next + 8)
      const dataAt = next + 10
      if (dataAt + length > message.length) throw new RangeError('record beyond the message')
      records.push({name, type: TYPE_NAMES[type] ?? String(type), ttl, data: recordData(message, type, dataAt, length)})
      offset = dataAt + length
    }
    return {id, rcode: RCODES[flags & 0x0f] ?? String(flags & 0x0f), records}
  } catch (error) {
    if (error instanceof CheckFailure) throw error
    throw new CheckFailure('response', 'BAD_RESPONSE', `malformed DNS answer: ${(error as Error).message}`)
  }
}

function exchangeUdp(plan: DnsPlan, query: Buffer, id: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(isIP(plan.server) === 6 ? 'udp6' : 'udp4')
    const close = () => socket.close()
    signal.addEventListener('abort', () => { close(); reject(signal.reason) }, {once: true})
    socket.on('error', (error) => { close(); reject(error) })
    socket.on('message', (message) => {
      // An answer to another query (or garbage) is ignored, as resolvers do.
      if (message.length < 12 || message.readUInt16BE(0) !== id) return
      close()
      resolve(message)
    })
    socket.send(query, plan.port, plan.server)
  })
}

function exchangeTcp(plan: DnsPlan, query: Buffer, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = new Socket()
    signal.addEventListener('abort', () => { socket.destroy(); reject(signal.reason) }, {once: true})
    let received = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length >= 2 && received.length >= 2 + received.readUInt16BE(0)) {
        socket.destroy()
        resolve(received.subarray(2, 2 + received.readUInt16BE(0)))
      }
    })
    socket.on('error', reject)
    socket.on('end', () => reject(Object.assign(new Error('connection closed before the answer'), {code: 'ECONNRESET'})))
    socket.connect({host: plan.server, port: plan.port}, () => {
      const length = Buffer.alloc(2)
      length.writeUInt16BE(query.length)
      socket.write(Buffer.concat([length, query]))
    })
  })
}

export async function dnsCheck(endpointId: string, plan: DnsPlan, options: ProbeOptions = {}): Promise<CheckOutcome> {
  const checkedAt = (options.now ?? Date.now)()
  const started = performance.now()
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new CheckFailure('timeout', 'TIMEOUT', `no DNS answer within ${plan.timeoutMs / 1000} s`)), plan.timeoutMs)
  let answer: DnsAnswer | undefined
  let failure: Failure | undefined
  try {
    const id = randomInt(0, 0x10000)
    const query = encodeQuery(id, plan.name, plan.recordType)
    answer = decodeAnswer(plan.protocol === 'tcp' ? await exchangeTcp(plan, query, controller.signal) : await exchangeUdp(plan, query, id, controller.signal))
    const wantedRcode = plan.expectedRcode || 'NOERROR'
    if (answer.rcode !== wantedRcode) throw new CheckFailure('dns', answer.rcode, `rcode ${answer.rcode}, expected ${wantedRcode}`)
    const values = answer.records.filter((r) => r.type === plan.recordType).map((r) => r.data)
    const missing = plan.expectedResults.filter((expected) => !values.includes(expected.replace(/\.$/, '')))
    if (missing.length > 0) throw new CheckFailure('response', 'RESULT_MISMATCH', `expected ${missing.join(', ')} among the ${plan.recordType} records`)
  } catch (error) {
    const {category, errorName} = classify(error)
    failure = {category, errorName, message: (error as Error)?.message ?? String(error)}
  } finally {
    clearTimeout(timer)
  }
  const durationMs = performance.now() - started
  const values = answer?.records.filter((r) => r.type === plan.recordType).map((r) => r.data) ?? []
  const result: CheckResultInput = {
    ...commonResult(endpointId, checkedAt, failure, durationMs, isIP(plan.server) ? plan.server : null),
    dns_rcode: answer?.rcode ?? null,
    dns_records: answer ? answer.records.map((r) => r.data) : null,
    dns_matched: plan.expectedResults.length > 0 && answer ? plan.expectedResults.every((e) => values.includes(e.replace(/\.$/, ''))) : null,
    dns_query_time_ms: answer ? round(durationMs) : null,
    dns_protocol: plan.protocol,
    dns_record_type: plan.recordType,
    dns_dnssec_valid: null,
  }
  return {result, phases: {resolve: durationMs / 1000}, ...(failure ? {message: failure.message} : {})}
}
