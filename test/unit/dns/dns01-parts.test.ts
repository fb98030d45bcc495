import assert from 'node:assert/strict'
import {systemClock} from '../../../src/lib/clock.js'
import {WebhookFailure, type DnsApi} from '../../../src/operator/dns/dns-api.js'
import {challengeAnswer, FrontProxyAuthLoader, solveChallenge, type Challenge, type FrontProxyAuth} from '../../../src/operator/dns/dns01-webhook.js'
import type {ZoneRecord} from '../../../src/operator/dns/records.js'

const challenge = (action: 'Present' | 'CleanUp'): Challenge => ({action, fqdn: '_acme-challenge.example.com', key: 'k1', request: {uid: 'u1', action, dnsName: 'example.com'}} as unknown as Challenge)
const signal = new AbortController().signal

describe('DNS01 webhook (the parts of a request)', () => {
  it('FrontProxyAuthLoader: read once found; a miss is tried again only after 10 s', async () => {
    let now = 100_000
    let answer: FrontProxyAuth | undefined = undefined
    let loads = 0
    const warnings: string[] = []
    const loader = new FrontProxyAuthLoader(async () => { loads++; return answer }, {warn: (message) => warnings.push(message)}, {...systemClock, now: () => now})
    assert.equal(await loader.get(), undefined)
    assert.equal(await loader.get(), undefined)
    assert.equal(loads, 1)
    assert.equal(warnings.length, 1)
    answer = {cas: []} as unknown as FrontProxyAuth
    now += 10_000
    assert.equal(await loader.get(), answer)
    now += 60_000
    await loader.get()
    assert.equal(loads, 2)
  })

  const cases: Array<[string, {success: boolean; message?: string}, Record<string, unknown>]> = [
    ['success', {success: true}, {uid: 'u1', success: true}],
    ['failure: a Status with the message', {success: false, message: 'no zone'}, {uid: 'u1', success: false, status: {metadata: {}, status: 'Failure', message: 'no zone'}}],
  ]
  for (const [name, result, response] of cases) {
    it(`challengeAnswer: ${name}`, () => assert.deepEqual(challengeAnswer('acme.polycrate.io', challenge('Present'), result).response, response))
  }

  describe('solveChallenge (fake DnsApi)', () => {
    const make = (zone: boolean, existing: string[] = [], fail = false) => {
      const calls: string[] = []
      const dns = {
        resolve: async () => (zone ? {id: 'z1', name: 'example.com'} : undefined),
        records: async (): Promise<ZoneRecord[]> => existing.map((key, i) => ({id: `r${i}`, zoneId: 'z1', fqdn: '_acme-challenge.example.com', type: 'TXT', target: `"${key}"`})),
        create: async (_zone: unknown, fqdn: string) => {
          if (fail) throw new WebhookFailure(503, 'API down')
          calls.push(`create ${fqdn}`)
        },
        delete: async (record: ZoneRecord) => { calls.push(`delete ${record.id}`) },
      } as unknown as DnsApi
      return {dns: () => dns, calls}
    }
    const rows: Array<[string, ReturnType<typeof make>, 'Present' | 'CleanUp', boolean, string[]]> = [
      ['present: creates the TXT record', make(true), 'Present', true, ['create _acme-challenge.example.com']],
      ['present again: nothing to do', make(true, ['k1']), 'Present', true, []],
      ['clean up: deletes only this key\'s record', make(true, ['k1', 'other']), 'CleanUp', true, ['delete r0']],
      ['clean up without a zone: nothing left, success', make(false), 'CleanUp', true, []],
      ['present without a zone: failure', make(false), 'Present', false, []],
      ['the API fails: failure, no throw', make(true, [], true), 'Present', false, []],
    ]
    for (const [name, {dns, calls}, action, success, expected] of rows) {
      it(name, async () => {
        const result = await solveChallenge(dns, challenge(action), signal)
        assert.equal(result.success, success)
        assert.deepEqual(calls, expected)
      })
    }
  })
})
