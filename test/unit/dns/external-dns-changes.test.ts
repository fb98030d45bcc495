import assert from 'node:assert/strict'
import {silentLogger} from '../../../src/lib/logger.js'
import {WebhookFailure, type DnsApi} from '../../../src/operator/dns/dns-api.js'
import {adjustEndpoint, changeItems, changesFailure, ExternalDnsChanges, mediaTypeFailure, outsideFailure, zoneTakes} from '../../../src/operator/dns/external-dns-changes.js'
import {EXTERNAL_DNS_MEDIA_TYPE, type Endpoint, type Zone, type ZoneRecord} from '../../../src/operator/dns/records.js'

const zone: Zone = {id: 'z1', name: 'example.com'}
const endpoint = (dnsName: string, targets: string[] = ['1.2.3.4']): Endpoint => ({dnsName, recordType: 'A', targets})

describe('external-dns webhook (the parts of a request)', () => {
  describe('mediaTypeFailure', () => {
    const cases: Array<[string, 'accept' | 'content-type', string | undefined, number | undefined]> = [
      ['Accept absent', 'accept', undefined, undefined],
      ['Accept */*', 'accept', '*/*', undefined],
      ['Accept ours among others', 'accept', `text/plain, ${EXTERNAL_DNS_MEDIA_TYPE}`, undefined],
      ['Accept JSON only', 'accept', 'application/json', 406],
      ['Content-Type ours', 'content-type', EXTERNAL_DNS_MEDIA_TYPE, undefined],
      ['Content-Type absent', 'content-type', undefined, 415],
      ['Content-Type JSON', 'content-type', 'application/json', 415],
    ]
    for (const [name, header, value, status] of cases) it(`${name} → ${status ?? 'ok'}`, () => assert.equal(mediaTypeFailure(header, value)?.status, status))
  })

  it('changeItems: deletes, then updates with their old Endpoint, then creates', () => {
    const items = changeItems({create: [endpoint('c.example.com')], updateOld: [endpoint('u.example.com', ['1.1.1.1'])], updateNew: [endpoint('u.example.com')], delete: [endpoint('d.example.com')]})
    assert.deepEqual(items.map((item) => `${item.action} ${item.next.dnsName}${item.old ? ` from ${item.old.targets.join()}` : ''}`), ['delete d.example.com', 'update u.example.com from 1.1.1.1', 'create c.example.com'])
  })

  describe('zoneTakes', () => {
    const visible = new Set(['z1'])
    const cases: Array<[string, string, Zone | undefined, boolean]> = [
      ['the apex', 'example.com', zone, true],
      ['a name inside', 'www.example.com', zone, true],
      ['no zone', 'www.example.com', undefined, false],
      ['a zone the token cannot see', 'www.example.org', {id: 'z2', name: 'example.org'}, false],
      ['a name that only ends like it', 'badexample.com', zone, false],
    ]
    for (const [name, dnsName, resolved, takes] of cases) it(`${name} → ${takes}`, () => assert.equal(zoneTakes(dnsName, resolved, visible), takes))
  })

  describe('failures of a request', () => {
    it('outsideFailure: none → nothing; else 422, sorted, at most five named', () => {
      assert.equal(outsideFailure([]), undefined)
      assert.equal(outsideFailure(['f', 'e', 'd', 'c', 'b', 'a'])?.message, '6 name(s) are in no DNS zone the agent token can see, nothing was changed: a, b, c, d, e, …')
    })
    const cases: Array<[string, number[], number | undefined]> = [
      ['none', [], undefined],
      ['refused by the API (4xx)', [422, 400], 422],
      ['the API failed once (5xx)', [422, 500], 503],
    ]
    for (const [name, statuses, status] of cases) {
      it(`changesFailure: ${name} → ${status ?? 'nothing'}`, () => assert.equal(changesFailure(statuses.map((s) => new WebhookFailure(s, `e${s}`)), 3)?.status, status))
    }
  })

  describe('adjustEndpoint', () => {
    const cases: Array<[string, {dnsName: string; recordType: string; setIdentifier?: string | null}, string | undefined]> = [
      ['normalized', {dnsName: 'WWW.Example.com.', recordType: 'a'}, 'www.example.com A'],
      ['a routing policy', {dnsName: 'www.example.com', recordType: 'A', setIdentifier: 'eu'}, undefined],
      ['an unsupported type', {dnsName: 'www.example.com', recordType: 'NAPTR'}, undefined],
    ]
    for (const [name, input, expected] of cases) {
      it(name, () => {
        const adjusted = adjustEndpoint(input)
        assert.equal(adjusted ? `${adjusted.dnsName} ${adjusted.recordType}` : undefined, expected)
      })
    }
  })

  describe('ExternalDnsChanges (fake DnsApi)', () => {
    const make = (failOn?: string) => {
      const records: ZoneRecord[] = [{id: 'r1', zoneId: 'z1', fqdn: 'old.example.com', type: 'A', target: '9.9.9.9'}]
      const calls: string[] = []
      let next = 2
      const dns = {
        zones: async () => [zone],
        resolve: async (name: string) => (name.endsWith('example.com') ? zone : undefined),
        records: async () => records.map((record) => ({...record})),
        create: async (_zone: Zone, fqdn: string, type: string, target: string) => {
          calls.push(`create ${fqdn} ${target}`)
          if (target === failOn) throw new WebhookFailure(500, 'API down')
          return {id: `r${next++}`, zoneId: 'z1', fqdn, type, target}
        },
        delete: async (record: ZoneRecord) => {
          calls.push(`delete ${record.fqdn} ${record.target}`)
        },
        setTtl: async () => {},
      } as unknown as DnsApi
      return {changes: new ExternalDnsChanges(dns, silentLogger, new AbortController().signal), calls}
    }

    it('a name outside every visible zone refuses the whole request before any write', async () => {
      const {changes, calls} = make()
      await assert.rejects(changes.apply([{action: 'create', next: endpoint('www.example.com')}, {action: 'create', next: endpoint('www.other.org')}]), (error: WebhookFailure) => error.status === 422)
      assert.deepEqual(calls, [])
    })

    it('an Endpoint failing part way is undone; the others apply; 503 for the request', async () => {
      const {changes, calls} = make('6.6.6.6')
      await assert.rejects(changes.apply([
        {action: 'create', next: endpoint('multi.example.com', ['5.5.5.5', '6.6.6.6'])},
        {action: 'delete', next: endpoint('old.example.com', ['9.9.9.9'])},
      ]), (error: WebhookFailure) => error.status === 503 && error.message.startsWith('1 of 2 changes failed'))
      assert.deepEqual(calls, ['create multi.example.com 5.5.5.5', 'create multi.example.com 6.6.6.6', 'delete multi.example.com 5.5.5.5', 'delete old.example.com 9.9.9.9'])
    })
  })
})
