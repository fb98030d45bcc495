/**
 * Property-based tests (fast-check) for the parsers of untrusted input from the network: DNS answers (the monitoring
 * agent's DNS check, wire format by dns-packet) and the JSON bodies of both DNS webhooks (external-dns `POST /records`,
 * cert-manager's ChallengePayload). Each property is written down above its test. Runs are seeded by fast-check and
 * print the seed and the shrunk counterexample on failure, so a failure can be replayed.
 */
import assert from 'node:assert/strict'
import {createSocket, type Socket as UdpSocket} from 'node:dgram'
import {createServer, type Server} from 'node:net'
import type {AddressInfo} from 'node:net'
import packet from 'dns-packet'
import fc from 'fast-check'
import {decodeAnswer, dnsCheck, encodeQuery} from '../../../src/operator/monitoring/dns-check.js'
import type {DnsPlan} from '../../../src/operator/monitoring/plan.js'
import {CheckFailure} from '../../../src/operator/monitoring/result.js'
import {parseChallenge} from '../../../src/operator/dns/dns01-webhook.js'
import {endpointToWire, parseChanges, parseJson, SUPPORTED_RECORD_TYPES, type Endpoint} from '../../../src/operator/dns/records.js'

const runs = {numRuns: 300}

/** Whether `promise` rejects with a `response` CheckFailure (a malformed answer), rather than resolving. */
async function rejectedAsResponse(promise: Promise<unknown>): Promise<boolean> {
  try {
    await promise
    return false
  } catch (error) {
    if (error instanceof CheckFailure && error.category === 'response' && error.errorName === 'BAD_RESPONSE') return true
    throw error
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// DNS answers

const RCODES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE']
const name = fc.domain()
const u16 = fc.integer({min: 0, max: 0xffff})
/** A TXT character-string: at most 255 bytes of UTF-8. */
const txtString = fc.string({unit: 'grapheme', maxLength: 20}).filter((s) => Buffer.byteLength(s) <= 255)
/**
 * An IPv6 address in its canonical text (RFC 5952, by the URL parser), from 16 bytes. Not fc.ipV6(): dns-packet's
 * address encoder (@leichtgewicht/ip-codec 2.0.5) misreads a `::` that stands for one zero group at the start
 * (`::1:2:3:4:5:6:7` loses its last group); the check only decodes addresses, which is exact.
 */
const ipv6 = fc.uint8Array({minLength: 16, maxLength: 16}).map((bytes) => {
  const groups = Array.from({length: 8}, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16))
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1)
})

/** An answer record for dns-packet.encode, and what the check must extract from it (rendered as dig +short). */
const answerRecord = fc.tuple(name, fc.nat({max: 2 ** 31 - 1})).chain(([owner, ttl]) => fc.oneof(
  fc.ipV4().map((ip) => ({record: {type: 'A', data: ip}, type: 'A', data: ip})),
  ipv6.map((ip) => ({record: {type: 'AAAA', data: ip}, type: 'AAAA', data: ip})),
  fc.tuple(fc.constantFrom('CNAME', 'NS', 'PTR'), name).map(([type, target]) => ({record: {type, data: target}, type, data: target})),
  fc.tuple(u16, name).map(([preference, exchange]) => ({record: {type: 'MX', data: {preference, exchange}}, type: 'MX', data: `${preference} ${exchange}`})),
  fc.tuple(u16, u16, u16, name).map(([priority, weight, port, target]) => ({record: {type: 'SRV', data: {priority, weight, port, target}}, type: 'SRV', data: `${priority} ${weight} ${port} ${target}`})),
  fc.array(txtString, {minLength: 1, maxLength: 4}).map((strings) => ({record: {type: 'TXT', data: strings}, type: 'TXT', data: strings.join('')})),
  fc.tuple(fc.constantFrom(0, 128), fc.constantFrom('issue', 'issuewild', 'iodef'), fc.string({maxLength: 30}).filter((s) => !s.includes('"'))).map(([flags, tag, value]) => ({
    record: {type: 'CAA', data: {flags, tag, value}}, type: 'CAA', data: `${flags} ${tag} "${value}"`,
  })),
).map((answer) => ({record: {...answer.record, name: owner, ttl}, expected: {name: owner, type: answer.type, ttl, data: answer.data}})))

/** A response as a DNS server sends it: the question, some answers, an rcode. */
const response = fc.record({
  id: u16,
  rcode: fc.integer({min: 0, max: RCODES.length - 1}),
  question: name,
  answers: fc.array(answerRecord, {maxLength: 6}),
}).map(({id, rcode, question, answers}) => ({
  id,
  rcode: RCODES[rcode]!,
  answers: answers.map((answer) => answer.expected),
  message: packet.encode({
    type: 'response', id, flags: packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE | rcode,
    questions: [{type: 'A', name: question}],
    answers: answers.map((answer) => answer.record) as packet.Answer[],
  }),
}))

describe('DNS answers (property-based)', () => {
  // Property (never throws): for any bytes, decodeAnswer either resolves or rejects with a `response` failure
  // (BAD_RESPONSE); no other error escapes. Run on random bytes and on valid answers with bytes changed.
  it('any bytes: an answer or a BAD_RESPONSE failure, nothing else', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({maxLength: 600}), async (bytes) => {
      await decodeAnswer(Buffer.from(bytes)).catch((error: unknown) => rejectedAsResponse(Promise.reject(error)))
    }), runs)
    await fc.assert(fc.asyncProperty(response, fc.array(fc.tuple(fc.nat(), fc.integer({min: 0, max: 255})), {minLength: 1, maxLength: 8}), async ({message}, changes) => {
      const mutated = Buffer.from(message)
      for (const [at, value] of changes) mutated[at % mutated.length] = value
      await decodeAnswer(mutated).catch((error: unknown) => rejectedAsResponse(Promise.reject(error)))
    }), runs)
  })

  // Property (round trip): for a response that dns-packet.encode made from arbitrary answers, the check extracts
  // exactly those answers (owner name, type, TTL, data rendered as dig +short), the id and the rcode.
  it('decode(dns-packet.encode(answers)) = the answers, the id, the rcode', async () => {
    await fc.assert(fc.asyncProperty(response, async ({id, rcode, answers, message}) => {
      assert.deepEqual(await decodeAnswer(message, id), {id, rcode, records: answers})
    }), runs)
  })

  // Property (rejects what it must): the same response with another id, or any strict prefix of it (a truncated
  // message) that still claims its records, is a BAD_RESPONSE.
  it('another id, or a truncated message, is a BAD_RESPONSE', async () => {
    await fc.assert(fc.asyncProperty(response, u16, async ({id, message}, other) => {
      fc.pre(other !== id)
      assert.ok(await rejectedAsResponse(decodeAnswer(message, other)))
    }), runs)
    await fc.assert(fc.asyncProperty(response.filter((r) => r.answers.length > 0), fc.nat(), async ({id, message}, cut) => {
      assert.ok(await rejectedAsResponse(decodeAnswer(message.subarray(0, cut % message.length), id)))
    }), runs)
  })

  // Property (query encoding): the query decodes, with dns-packet, to one IN question for the name (without empty
  // labels or the final dot) and type, recursion desired, with the id.
  it('encodeQuery: dns-packet reads back the id, RD, and one question', async () => {
    await fc.assert(fc.asyncProperty(u16, name, fc.constantFrom('A', 'AAAA', 'CNAME', 'MX', 'NS', 'PTR', 'SOA', 'SRV', 'TXT', 'CAA'), fc.boolean(), async (id, domain, type, dot) => {
      const decoded = packet.decode(await encodeQuery(id, `${domain}${dot ? '.' : ''}`, type))
      assert.equal(decoded.id, id)
      assert.equal(decoded.type, 'query')
      assert.equal(decoded.flag_rd, true)
      assert.deepEqual(decoded.questions, [{name: domain, type, class: 'IN'}])
    }), runs)
  })
})

describe('the DNS check against a server that answers anything (property-based)', () => {
  let udp: UdpSocket
  let tcp: Server
  let reply: (query: Buffer) => Buffer = () => Buffer.alloc(0)
  before(async () => {
    udp = createSocket('udp4')
    udp.on('message', (query, remote) => udp.send(reply(query), remote.port, remote.address))
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve))
    tcp = createServer((socket) => {
      socket.once('data', (framed: Buffer) => {
        const answer = reply(framed.subarray(2))
        const length = Buffer.alloc(2)
        length.writeUInt16BE(answer.length)
        socket.end(Buffer.concat([length, answer]))
      })
      socket.on('error', () => undefined)
    })
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve))
  })
  after(async () => {
    udp.close()
    await new Promise((resolve) => tcp.close(resolve))
  })
  const plan = (protocol: 'udp' | 'tcp'): DnsPlan => ({
    kind: 'dns', server: '127.0.0.1', port: protocol === 'udp' ? (udp.address()).port : (tcp.address() as AddressInfo).port,
    name: 'svc.test', recordType: 'A', protocol, timeoutMs: 2000, expectedResults: [], expectedRcode: '',
  })
  /** `bytes` as the answer to `query`: with its id, so that UDP does not ignore it. */
  const withId = (bytes: Uint8Array, query: Buffer) => {
    const answer = Buffer.from(bytes.length >= 2 ? bytes : Buffer.concat([Buffer.from(bytes), Buffer.alloc(2 - bytes.length)]))
    query.copy(answer, 0, 0, 2)
    return answer
  }

  // Property (never throws out of the check): whatever bytes the server answers, over UDP or TCP, dnsCheck resolves
  // to a result; a result that is not a success is a `response` failure (the bytes were not a usable answer). UDP
  // datagrams shorter than a header are ignored, as resolvers do (then the check times out): UDP gets 12 bytes or more.
  it('any answer bytes: dnsCheck resolves; a failure is a response failure, never a throw', async () => {
    const answers = fc.oneof(
      fc.tuple(fc.uint8Array({minLength: 12, maxLength: 300}), fc.constant('udp' as const)),
      fc.tuple(fc.uint8Array({maxLength: 300}), fc.constant('tcp' as const)),
    )
    await fc.assert(fc.asyncProperty(answers, async ([bytes, protocol]) => {
      reply = (query) => withId(bytes, query)
      const {result} = await dnsCheck('ep', plan(protocol))
      assert.ok(result.success || result.http_error_category === 'response', `${protocol}: ${result.error_name} ${result.http_error_category}`)
    }), {numRuns: 60})
  })

  // Property (round trip through the check): a server answering with dns-packet-encoded A records gets exactly those
  // addresses reported, and the check is a success when they are what it expects.
  it('the A records a server answers are the records the check reports', async () => {
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.ipV4(), {minLength: 1, maxLength: 5}), fc.constantFrom('udp' as const, 'tcp' as const), async (ips, protocol) => {
      reply = (query) => packet.encode({
        type: 'response', id: query.readUInt16BE(0), flags: packet.RECURSION_DESIRED,
        questions: [{type: 'A', name: 'svc.test'}], answers: ips.map((ip) => ({type: 'A', name: 'svc.test', ttl: 60, data: ip})),
      })
      const {result} = await dnsCheck('ep', {...plan(protocol), expectedResults: [ips[0]!]})
      assert.equal(result.success, true, String(result.error_name))
      assert.deepEqual(result.dns_records, ips)
      assert.equal(result.dns_matched, true)
    }), {numRuns: 30})
  })

  it('TCP: an answer with another id is a BAD_RESPONSE; UDP: it is ignored, and the right one counts', async () => {
    const answer = (id: number) => packet.encode({type: 'response', id, questions: [{type: 'A', name: 'svc.test'}], answers: [{type: 'A', name: 'svc.test', data: '10.0.0.1'}]})
    reply = (query) => answer((query.readUInt16BE(0) + 1) & 0xffff)
    const tcpResult = (await dnsCheck('ep', plan('tcp'))).result
    assert.equal(tcpResult.success, false)
    assert.equal(tcpResult.error_name, 'BAD_RESPONSE')
    reply = (query) => {
      udp.send(answer((query.readUInt16BE(0) + 1) & 0xffff), (udp.address()).port, '127.0.0.1') // a stray datagram first
      return answer(query.readUInt16BE(0))
    }
    const udpResult = (await dnsCheck('ep', plan('udp'))).result
    assert.equal(udpResult.success, true, String(udpResult.error_name))
    assert.deepEqual(udpResult.dns_records, ['10.0.0.1'])
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// webhook bodies

/** Any JSON text, and text that is almost JSON. */
const bodyText = fc.oneof(fc.json(), fc.string({maxLength: 80}), fc.json().map((json) => json.slice(0, Math.max(0, json.length - 1))))
/** Objects with the keys the parsers look at, holding any JSON value: deeper than a random object gets. */
const anyValue = fc.jsonValue({maxDepth: 2})
const looseEndpoint = fc.record({dnsName: anyValue, targets: anyValue, recordType: anyValue, setIdentifier: anyValue, recordTTL: anyValue}, {requiredKeys: []})
const looseChanges = fc.dictionary(fc.constantFrom('create', 'updateOld', 'updateNew', 'delete', 'Create', 'Delete', 'other'), fc.oneof(anyValue, fc.array(looseEndpoint, {maxLength: 3})))
const looseChallenge = fc.record({
  apiVersion: anyValue, kind: anyValue,
  request: fc.oneof(anyValue, fc.record({uid: anyValue, action: fc.oneof(anyValue, fc.constantFrom('Present', 'CleanUp')), type: anyValue, dnsName: anyValue, key: anyValue, resolvedFQDN: anyValue}, {requiredKeys: []})),
}, {requiredKeys: []})

/** The verdict shape both parsers answer with: ok with a value, or not ok with a non-empty reason (a 400). */
const verdict = (parsed: {ok: true; value: unknown} | {ok: false; reason: string}) => (parsed.ok ? parsed.value !== undefined : typeof parsed.reason === 'string' && parsed.reason.length > 0)

/** A DNS name both webhooks accept: lower case labels of letters, digits and inner hyphens. */
const dnsLabel = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/)
const dnsName = fc.array(dnsLabel, {minLength: 2, maxLength: 4}).map((labels) => labels.join('.')).filter((n) => n.length <= 253)

/** A valid Endpoint (normalised, as parseChanges returns it), of any supported type. */
const endpoint: fc.Arbitrary<Endpoint> = fc.record({
  dnsName,
  type: fc.constantFrom(...SUPPORTED_RECORD_TYPES),
  ttl: fc.option(fc.integer({min: 1, max: 86_400}), {nil: undefined}),
}).chain(({dnsName: owner, type, ttl}) => {
  const target: fc.Arbitrary<string> = {
    A: fc.ipV4(),
    AAAA: fc.ipV6().map((ip) => ip.toLowerCase()),
    CNAME: dnsName,
    NS: dnsName,
    MX: fc.tuple(u16, dnsName).map(([pref, host]) => `${pref} ${host}`),
    SRV: fc.tuple(u16, u16, u16, dnsName).map(([a, b, c, host]) => `${a} ${b} ${c} ${host}`),
    // eslint-disable-next-line no-control-regex
    TXT: fc.string({minLength: 1, maxLength: 100}).filter((s) => !/[\u0000-\u001f]/.test(s) && s.trim() === s),
  }[type]
  return fc.uniqueArray(target, {minLength: 1, maxLength: 4}).map((targets) => ({dnsName: owner, recordType: type, targets, ...(ttl ? {recordTTL: ttl} : {})}))
})

describe('DNS webhook bodies (property-based)', () => {
  // Property (never throws): for any text, parseJson gives a value or a reason; for any JSON value, and for
  // objects with the right keys and any values, parseChanges and parseChallenge answer a verdict (a value, or a
  // reason the webhook sends with a 400) and never throw.
  it('any body: a verdict, never a throw (external-dns Changes, cert-manager ChallengePayload)', () => {
    fc.assert(fc.property(bodyText, (text) => {
      const parsed = parseJson(text)
      if (!parsed.ok) return verdict(parsed)
      return verdict(parseChanges(parsed.value)) && verdict(parseChallenge(parsed.value))
    }), runs)
    fc.assert(fc.property(fc.oneof(anyValue, looseChanges), (body) => verdict(parseChanges(body))), runs)
    fc.assert(fc.property(fc.oneof(anyValue, looseChallenge), (body) => verdict(parseChallenge(body))), runs)
  })

  // Property (round trip): Changes built from valid Endpoints, sent as external-dns sends them (JSON, lower or upper
  // camel case keys), parse back to the same Endpoints in every list.
  it('external-dns: parseChanges(JSON(changes of valid endpoints)) = those endpoints', () => {
    fc.assert(fc.property(fc.array(endpoint, {maxLength: 4}), fc.array(endpoint, {maxLength: 4}), fc.array(endpoint, {maxLength: 4}), fc.boolean(), (create, update, remove, upper) => {
      const wire = (list: Endpoint[]) => list.map(endpointToWire)
      const body = upper
        ? {Create: wire(create), UpdateOld: wire(update), UpdateNew: wire(update), Delete: wire(remove)}
        : {create: wire(create), updateOld: wire(update), updateNew: wire(update), delete: wire(remove)}
      const text = parseJson(JSON.stringify(body))
      assert.ok(text.ok)
      const parsed = parseChanges(text.value)
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason)
      assert.deepEqual(parsed.value, {create, updateOld: update, updateNew: update, delete: remove})
    }), runs)
  })

  // Property (rejects what external-dns' own types reject, and what the API cannot hold): an endpoint whose dnsName
  // is not a string, whose type is unsupported, or that has a setIdentifier makes the whole body a 400.
  it('external-dns: a non-string name, an unsupported type or a setIdentifier is refused', () => {
    fc.assert(fc.property(endpoint, fc.oneof(
      fc.constant<[string, unknown]>(['dnsName', 42]),
      fc.constantFrom('PTR', 'SOA', 'CAA', 'NAPTR').map((type): [string, unknown] => ['recordType', type]),
      fc.string({minLength: 1, maxLength: 10}).map((id): [string, unknown] => ['setIdentifier', id]),
    ), (valid, [field, value]) => {
      const parsed = parseChanges({create: [{...endpointToWire(valid), [field]: value}]})
      return !parsed.ok && parsed.reason.length > 0
    }), runs)
  })

  // Property (round trip): a ChallengePayload with a valid dnsName and key, as cert-manager sends it, is accepted with
  // the same action, key and request, and the TXT record name `_acme-challenge.<name>` (from resolvedFQDN when given).
  it('cert-manager: parseChallenge(JSON(valid payload)) keeps action, key and request; fqdn as cert-manager resolves it', () => {
    const key = fc.stringMatching(/^[\x21-\x7e]{1,80}$/).filter((k) => !k.includes('"'))
    fc.assert(fc.property(fc.constantFrom('Present', 'CleanUp'), dnsName, fc.boolean(), key, fc.boolean(), (action, domain, wildcard, value, resolved) => {
      const request = {
        uid: 'u1', action, type: 'dns-01', dnsName: wildcard ? `*.${domain}` : domain, key: value, resourceNamespace: 'default',
        ...(resolved ? {resolvedFQDN: `_acme-challenge.${domain}.`, resolvedZone: `${domain}.`} : {}),
      }
      const text = parseJson(JSON.stringify({apiVersion: 'acme.cert-manager.io/v1alpha1', kind: 'ChallengePayload', request}))
      assert.ok(text.ok)
      const parsed = parseChallenge(text.value)
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason)
      assert.deepEqual(parsed.value, {action, fqdn: `_acme-challenge.${domain}`, key: value, request})
    }), runs)
  })

  // Property (rejects): an unknown action, a type other than dns-01, or a key with a quote or a space is refused.
  it('cert-manager: an unknown action, another challenge type, a key with a quote or space is refused', () => {
    fc.assert(fc.property(dnsName, fc.oneof(
      fc.string({maxLength: 12}).filter((a) => a !== 'Present' && a !== 'CleanUp').map((action) => ({action})),
      fc.string({maxLength: 12}).filter((t) => t !== 'dns-01').map((type) => ({type})),
      fc.constantFrom('a"b', 'a b', '', ' ').map((key) => ({key})),
    ), (domain, change) => {
      const parsed = parseChallenge({request: {action: 'Present', type: 'dns-01', dnsName: domain, key: 'k', ...change}})
      return !parsed.ok && parsed.reason.length > 0
    }), runs)
  })
})
