import assert from 'node:assert/strict'
import {
  domainFilter,
  endpointsFromRecords,
  normalizeTarget,
  parseChanges,
  planEndpointChange,
  recordFqdn,
  recordFromApi,
  recordRequest,
  undoOps,
  type Endpoint,
  type RecordOp,
  type ZoneRecord,
} from '../../../src/operator/dns/records.js'

const zone = {id: 'z1', name: 'example.com'}
const rec = (id: string, fqdn: string, type: string, target: string, ttl?: number): ZoneRecord => ({id, zoneId: 'z1', fqdn, type, target, ...(ttl ? {ttl} : {})})
const ep = (dnsName: string, recordType: Endpoint['recordType'], targets: string[], recordTTL?: number): Endpoint => ({dnsName, recordType, targets, ...(recordTTL ? {recordTTL} : {})})
const summary = (ops: RecordOp[]) => ops.map((op) => (op.op === 'create' ? `+${op.target}` : op.op === 'delete' ? `-${op.record.target}` : `ttl ${op.record.target}=${op.ttl}`))

describe('DNS webhook records (pure)', () => {
  describe('parseChanges', () => {
    const cases: Array<[string, unknown, RegExp | ((c: ReturnType<typeof parseChanges>) => void)]> = [
      ['lower camel case keys', {create: [{dnsName: 'A.Example.com.', targets: ['192.0.2.1'], recordType: 'a'}]}, (r) => {
        assert.ok(r.ok)
        assert.deepEqual(r.value.create, [ep('a.example.com', 'A', ['192.0.2.1'])])
      }],
      ['upper camel case keys of external-dns < 0.17 (null lists)', {Create: null, UpdateOld: [{dnsName: 'x.example.com', targets: ['1.2.3.4'], recordType: 'A'}], UpdateNew: [{dnsName: 'x.example.com', targets: ['1.2.3.5'], recordType: 'A'}], Delete: null}, (r) => {
        assert.ok(r.ok)
        assert.equal(r.value.updateNew[0]?.targets[0], '1.2.3.5')
      }],
      ['duplicate targets collapse', {create: [{dnsName: 'x.example.com', targets: ['1.2.3.4', '1.2.3.4'], recordType: 'A'}]}, (r) => {
        assert.ok(r.ok)
        assert.deepEqual(r.value.create[0]?.targets, ['1.2.3.4'])
      }],
      ['a delete may have no targets', {delete: [{dnsName: 'x.example.com', recordType: 'A'}]}, (r) => assert.ok(r.ok)],
      ['unsupported type', {create: [{dnsName: 'x.example.com', targets: ['x'], recordType: 'CAA'}]}, /not supported/],
      ['wildcard not leftmost', {create: [{dnsName: 'a.*.example.com', targets: ['1.2.3.4'], recordType: 'A'}]}, /not a valid DNS name/],
      ['label longer than 63', {create: [{dnsName: `${'a'.repeat(64)}.example.com`, targets: ['1.2.3.4'], recordType: 'A'}]}, /not a valid DNS name/],
      ['updates naming different records', {updateOld: [ep('a.example.com', 'A', ['1.1.1.1'])], updateNew: [ep('b.example.com', 'A', ['1.1.1.1'])]}, /name different records/],
      ['a string TTL', {create: [{dnsName: 'x.example.com', targets: ['1.2.3.4'], recordType: 'A', recordTTL: '60'}]}, /recordTTL/],
      ['not an object', 'hello', /expected object/],
    ]
    for (const [name, body, expect] of cases) {
      it(name, () => {
        const result = parseChanges(body)
        if (expect instanceof RegExp) {
          assert.equal(result.ok, false)
          assert.match((result as {reason: string}).reason, expect)
        } else expect(result)
      })
    }
  })

  it('normalizes and checks targets by type', () => {
    const table: Array<[Endpoint['recordType'], string, string | undefined]> = [
      ['A', '192.0.2.1', '192.0.2.1'],
      ['A', '2001:db8::1', undefined],
      ['AAAA', '2001:DB8::1', '2001:db8::1'],
      ['CNAME', 'Target.Example.com.', 'target.example.com'],
      ['MX', '010  mail.example.com.', '10 mail.example.com'],
      ['MX', 'mail.example.com', undefined],
      ['SRV', '0 5 443 target.example.com.', '0 5 443 target.example.com.'],
      ['SRV', '0 5 70000 t.example.com', undefined],
      ['TXT', '"heritage=external-dns,external-dns/owner=x"', '"heritage=external-dns,external-dns/owner=x"'],
      ['TXT', 'line\nbreak', undefined],
      ['NS', 'ns1.example.net', 'ns1.example.net'],
    ]
    for (const [type, raw, expected] of table) assert.equal(normalizeTarget(type, raw), expected, `${type} ${raw}`)
  })

  it('reads record names as FQDN, relative or apex', () => {
    assert.equal(recordFqdn('www.example.com', 'example.com'), 'www.example.com')
    assert.equal(recordFqdn('WWW.example.com.', 'example.com'), 'www.example.com')
    assert.equal(recordFqdn('www', 'example.com'), 'www.example.com')
    assert.equal(recordFqdn('@', 'example.com'), 'example.com')
    assert.equal(recordFqdn('', 'example.com'), 'example.com')
    assert.equal(recordFqdn(null, 'example.com'), 'example.com')
  })

  it('maps MX/SRV priority between the API and external-dns targets', () => {
    assert.deepEqual(recordFromApi({id: '1', name: 'example.com', type: 'MX', content: 'mail.example.com.', priority: 10, ttl: 300}, zone), rec('1', 'example.com', 'MX', '10 mail.example.com', 300))
    assert.deepEqual(recordRequest(zone, 'example.com', 'MX', '10 mail.example.com', undefined), {name: 'example.com', dns_zone: 'z1', type: 'MX', content: 'mail.example.com', priority: 10})
    assert.deepEqual(recordRequest(zone, '_sip._tcp.example.com', 'SRV', '1 5 5060 sip.example.com', 60), {name: '_sip._tcp.example.com', dns_zone: 'z1', type: 'SRV', content: '5 5060 sip.example.com', ttl: 60, priority: 1})
    assert.deepEqual(recordRequest(zone, 'x.example.com', 'A', '192.0.2.1', undefined), {name: 'x.example.com', dns_zone: 'z1', type: 'A', content: '192.0.2.1'})
  })

  it('groups records into one Endpoint per name and type, leaving unsupported types out', () => {
    const endpoints = endpointsFromRecords([
      rec('1', 'b.example.com', 'A', '192.0.2.2', 60),
      rec('2', 'a.example.com', 'TXT', '"v"'),
      rec('3', 'b.example.com', 'A', '192.0.2.1', 60),
      rec('4', 'example.com', 'CAA', '0 issue "x"'),
    ])
    assert.deepEqual(endpoints, [ep('a.example.com', 'TXT', ['"v"']), ep('b.example.com', 'A', ['192.0.2.2', '192.0.2.1'], 60)])
  })

  it('builds the DomainFilter from the zones', () => {
    const zones = [{id: '1', name: 'example.com'}, {id: '2', name: 'dev.example.com'}]
    assert.deepEqual(domainFilter(zones), {include: ['dev.example.com', 'example.com']})
    assert.deepEqual(domainFilter([]), {regexInclude: '^$'}, 'no zone: a filter that matches nothing (an empty include matches all)')
  })

  describe('planEndpointChange', () => {
    const current = [rec('1', 'x.example.com', 'A', '192.0.2.1', 300), rec('2', 'x.example.com', 'A', '192.0.2.2', 300), rec('3', 'x.example.com', 'TXT', '"owner"'), rec('4', 'y.example.com', 'A', '192.0.2.1')]
    const table: Array<[string, Parameters<typeof planEndpointChange>, string[]]> = [
      ['create adds what is missing only', ['create', ep('x.example.com', 'A', ['192.0.2.2', '192.0.2.3']), current], ['+192.0.2.3']],
      ['a repeated create is a no-op', ['create', ep('x.example.com', 'A', ['192.0.2.1', '192.0.2.2']), current], []],
      ['update: new values first, then removals of old ones', ['update', ep('x.example.com', 'A', ['192.0.2.2', '192.0.2.9']), current, ep('x.example.com', 'A', ['192.0.2.1', '192.0.2.2'])], ['+192.0.2.9', '-192.0.2.1']],
      ['update never removes a value the old Endpoint did not have', ['update', ep('x.example.com', 'A', ['192.0.2.9']), current, ep('x.example.com', 'A', ['192.0.2.1'])], ['+192.0.2.9', '-192.0.2.1']],
      ['update with a new TTL', ['update', ep('x.example.com', 'A', ['192.0.2.1', '192.0.2.2'], 60), current, ep('x.example.com', 'A', ['192.0.2.1', '192.0.2.2'])], ['ttl 192.0.2.1=60', 'ttl 192.0.2.2=60']],
      ['delete removes the listed values of that name and type only', ['delete', ep('x.example.com', 'A', ['192.0.2.1']), current], ['-192.0.2.1']],
      ['delete of a value that is not there', ['delete', ep('x.example.com', 'A', ['192.0.2.7']), current], []],
    ]
    for (const [name, args, expected] of table) it(name, () => assert.deepEqual(summary(planEndpointChange(...args)), expected))

    it('undo reverses applied writes', () => {
      const created = rec('9', 'x.example.com', 'A', '192.0.2.9')
      const applied = [
        {op: {op: 'create', fqdn: 'x.example.com', type: 'A', target: '192.0.2.9'} as RecordOp, created},
        {op: {op: 'delete', record: current[0]} as RecordOp},
        {op: {op: 'set-ttl', record: current[1], ttl: 60} as RecordOp},
      ]
      assert.deepEqual(summary(undoOps(applied)), ['ttl 192.0.2.2=300', '+192.0.2.1', '-192.0.2.9'])
    })
  })
})
