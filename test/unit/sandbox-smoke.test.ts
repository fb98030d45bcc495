import assert from 'node:assert/strict'
import {smokeVerdict, type SmokeEndpoint} from '../../scripts/sandbox-smoke.js'

const ep = (namespace: string, name: string, status?: SmokeEndpoint['status']): SmokeEndpoint => ({metadata: {namespace, name}, status})
const synced = (namespace: string, name: string) => ep(namespace, name, {phase: 'Synced', syncStatus: 'synced', apiID: `id-${name}`})

describe('npm start -- --smoke verdict', () => {
  const cases: Array<{name: string; endpoints: SmokeEndpoint[]; api: number; clusters: number; ok: boolean; reason: RegExp}> = [
    {name: 'all synced, counts agree', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 1, ok: true, reason: /2 Endpoint CRs synced to 2 API endpoints/},
    {name: 'cluster not registered', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 0, ok: false, reason: /local cluster is not registered/},
    {name: 'no Endpoint from the HTTPRoute', endpoints: [synced('production', 'a')], api: 1, clusters: 1, ok: false, reason: /namespace\(s\) acme-shop/},
    {name: 'one pending, with its message', endpoints: [synced('production', 'a'), ep('acme-shop', 'b', {phase: 'Error', syncStatus: 'error', message: 'API said 500'})], api: 1, clusters: 1, ok: false, reason: /1 of 2 Endpoint CRs not synced: acme-shop\/b: Error \(error\): API said 500/},
    {name: 'Synced without API ID', endpoints: [synced('production', 'a'), ep('acme-shop', 'b', {phase: 'Synced'})], api: 2, clusters: 1, ok: false, reason: /not synced/},
    {name: 'API count differs', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 3, clusters: 1, ok: false, reason: /2 synced Endpoint CRs but 3 endpoints/},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const verdict = smokeVerdict(c.endpoints, c.api, c.clusters, ['production', 'acme-shop'])
      assert.equal(verdict.ok, c.ok)
      assert.match(verdict.reason, c.reason)
    })
  }
})
