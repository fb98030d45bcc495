/**
 * The DNS check: asks the endpoint's server one question over UDP (or TCP with the 2-byte length prefix) and reports
 * rcode, records, whether the expected results are all present, and the query time. Records are rendered as
 * `dig +short` would (A/AAAA address, names without the final dot, MX `pref name`, SRV `prio weight port target`,
 * SOA `mname rname serial`, CAA `flags tag "value"`, TXT the joined strings).
 *
 * The DNS wire format (RFC 1035: names, compression, records) is `dns-packet`'s, loaded on the first DNS check. Our
 * own code is what that library does not do: refusing names it would encode wrongly (a label over 63 bytes, a name
 * over 255), refusing an answer that claims more than the message holds (dns-packet clamps some reads instead of
 * failing) or that answers another query id, the rendering above, and the sockets (UDP, TCP with its framing).
 * Any malformed answer is a `response` failure of the check; nothing the server sends makes it throw.
 */
import {createSocket} from 'node:dgram'
import {Socket, isIP} from 'node:net'
import {randomInt} from 'node:crypto'
import type * as DnsPacket from 'dns-packet'
import type {CheckResultInput} from '../../api/index.js'
import type {ProbeOptions} from './http-check.js'
import type {DnsPlan} from './plan.js'
import {CheckFailure, checkResult, classify, commonResult, round, type CheckOutcome, type Failure} from './result.js'
import {systemClock} from '../../lib/clock.js'

export interface DnsAnswer {
  id: number
  rcode: string
  records: Array<{name: string; type: string; ttl: number; data: string}>
}

type Wire = typeof DnsPacket
let wire: Promise<Wire> | undefined

/** dns-packet (CommonJS), imported once, on the first DNS check. */
export function dnsWire(): Promise<Wire> {
  return (wire ??= import('dns-packet').then((module) => module.default as Wire))
}

/** A query with one question (class IN), recursion desired. */
export async function encodeQuery(id: number, name: string, type: string): Promise<Buffer> {
  const packet = await dnsWire()
  const labels = name.split('.').filter(Boolean)
  for (const label of labels) {
    if (Buffer.byteLength(label) > 63) throw new CheckFailure('configuration', 'BAD_NAME', `DNS label "${label}" is longer than 63 bytes`)
  }
  // Each label has its length byte, and the root its zero byte.
  if (labels.reduce((sum, label) => sum + 1 + Buffer.byteLength(label), 1) > 255) throw new CheckFailure('configuration', 'BAD_NAME', `DNS name "${name}" is longer than 255 bytes`)
  return packet.encode({
    type: 'query', id, flags: packet.RECURSION_DESIRED,
    questions: [{type: type as DnsPacket.RecordType, name: labels.join('.'), class: 'IN'}],
  })
}

/** A record as dns-packet decodes it; its `data` typing does not match what it returns for some types (CAA). */
interface DecodedRecord {
  name: string
  type: string
  ttl?: number
  data?: unknown
}

const domain = (name: unknown) => (name === '.' ? '' : String(name))

function render(record: DecodedRecord): string {
  const data = record.data as Record<string, unknown> | undefined
  switch (record.type) {
    case 'A': case 'AAAA': return String(data)
    case 'NS': case 'CNAME': case 'PTR': case 'DNAME': return domain(data)
    case 'MX': return `${String(data?.preference)} ${domain(data?.exchange)}`
    case 'SRV': return `${String(data?.priority)} ${String(data?.weight)} ${String(data?.port)} ${domain(data?.target)}`
    case 'SOA': return `${domain(data?.mname)} ${domain(data?.rname)} ${String(data?.serial)}`
    case 'CAA': return `${String(data?.flags)} ${String(data?.tag)} "${String(data?.value)}"`
    case 'TXT': return (Array.isArray(data) ? data : [data]).map((part) => (Buffer.isBuffer(part) ? part.toString('utf8') : String(part))).join('')
    default: return presentation(data)
  }
}

/** Types we do not render: a Buffer (a type dns-packet does not know) as hex, as before; fields joined by spaces. */
function presentation(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('hex')
  if (Array.isArray(value)) return value.map(presentation).join(' ')
  if (value !== null && typeof value === 'object') return Object.values(value).map(presentation).join(' ')
  return String(value)
}

/**
 * Parses an answer; rejects with a `response` CheckFailure on a malformed message (whatever dns-packet cannot decode,
 * or records past the end of the message) and on an id other than `expectedId`.
 */
export async function decodeAnswer(message: Buffer, expectedId?: number): Promise<DnsAnswer> {
  const packet = await dnsWire()
  let answer: DnsAnswer
  try {
    const decoded = packet.decode(message) as DnsPacket.DecodedPacket & {rcode?: string}
    const end = packet.decode.bytes
    if (!(end <= message.length)) throw new RangeError(`records run past the end of the ${message.length}-byte message`)
    answer = {
      id: decoded.id ?? 0,
      rcode: (decoded.rcode ?? '').replace(/^RCODE_/, ''),
      records: ((decoded.answers ?? []) as DecodedRecord[]).map((record) => ({name: domain(record.name), type: record.type, ttl: record.ttl ?? 0, data: render(record)})),
    }
  } catch (error) {
    throw new CheckFailure('response', 'BAD_RESPONSE', `malformed DNS answer: ${(error as Error)?.message ?? String(error)}`)
  }
  if (expectedId !== undefined && answer.id !== expectedId) throw new CheckFailure('response', 'BAD_RESPONSE', `DNS answer id ${answer.id} does not match the query id ${expectedId}`)
  return answer
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
  const clock = options.clock ?? systemClock
  const checkedAt = clock.now()
  const started = performance.now()
  const controller = new AbortController()
  const timer = clock.setTimeout(() => controller.abort(new CheckFailure('timeout', 'TIMEOUT', `no DNS answer within ${plan.timeoutMs / 1000} s`)), plan.timeoutMs)
  let answer: DnsAnswer | undefined
  let failure: Failure | undefined
  try {
    const id = randomInt(0, 0x10000)
    const query = await encodeQuery(id, plan.name, plan.recordType)
    answer = await decodeAnswer(plan.protocol === 'tcp' ? await exchangeTcp(plan, query, controller.signal) : await exchangeUdp(plan, query, id, controller.signal), id)
    const wantedRcode = plan.expectedRcode || 'NOERROR'
    if (answer.rcode !== wantedRcode) throw new CheckFailure('dns', answer.rcode, `rcode ${answer.rcode}, expected ${wantedRcode}`)
    const values = answer.records.filter((r) => r.type === plan.recordType).map((r) => r.data)
    const missing = plan.expectedResults.filter((expected) => !values.includes(expected.replace(/\.$/, '')))
    if (missing.length > 0) throw new CheckFailure('response', 'RESULT_MISMATCH', `expected ${missing.join(', ')} among the ${plan.recordType} records`)
  } catch (error) {
    const {category, errorName} = classify(error)
    failure = {category, errorName, message: (error as Error)?.message ?? String(error)}
  } finally {
    clock.clearTimeout(timer)
  }
  const durationMs = performance.now() - started
  const values = answer?.records.filter((r) => r.type === plan.recordType).map((r) => r.data) ?? []
  const result: CheckResultInput = checkResult(commonResult(endpointId, checkedAt, failure, durationMs, isIP(plan.server) ? plan.server : null), {
    dns_rcode: answer?.rcode ?? null,
    dns_records: answer ? answer.records.map((r) => r.data) : null,
    dns_matched: plan.expectedResults.length > 0 && answer ? plan.expectedResults.every((e) => values.includes(e.replace(/\.$/, ''))) : null,
    dns_query_time_ms: answer ? round(durationMs) : null,
    dns_protocol: plan.protocol,
    dns_record_type: plan.recordType,
    dns_dnssec_valid: null,
  })
  return {result, phases: {resolve: durationMs / 1000}, ...(failure ? {message: failure.message} : {})}
}
