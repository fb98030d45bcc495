import assert from 'node:assert/strict'
import {smokeVerdict, type SmokeEndpoint, type SmokeHealth} from '../../../scripts/sandbox-smoke.js'

const ep = (namespace: string, name: string, status?: SmokeEndpoint['status']): SmokeEndpoint => ({metadata: {namespace, name}, status})
const synced = (namespace: string, name: string) => ep(namespace, name, {phase: 'Synced', syncStatus: 'synced', apiID: `id-${name}`})

describe('npm start -- --smoke verdict', () => {
  const ready: SmokeHealth = {phase: 'Ready', readyz: 200}
  const cases: Array<{name: string; endpoints: SmokeEndpoint[]; api: number; clusters: number; ok: boolean; reason: RegExp; health?: SmokeHealth}> = [
    {
      name: 'all synced but Degraded (the webhook\'s port taken): not OK',
      endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 1, ok: false,
      health: {phase: 'Degraded', message: 'Not running: external-dns-webhook (could not start: [::]:8888 is in use).', readyz: 500},
      reason: /^the operator is Degraded \(OperatorConfig phase: Not running: external-dns-webhook/,
    },
    {
      name: 'Ready by its status but /readyz failing: not OK, with the failing check',
      endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 1, ok: false,
      health: {phase: 'Ready', readyz: 500, readyzBody: '[+]caches ok\n[-]features failed: external-dns-webhook: in use\nreadyz check failed'},
      reason: /^the operator is not ready: \/readyz answered 500 \(\[-\]features failed: external-dns-webhook: in use\)$/,
    },
    {name: '/readyz not answering', endpoints: [], api: 0, clusters: 1, ok: false, health: {phase: 'Ready', readyz: 0}, reason: /\/readyz answered nothing/},
    {name: 'all synced, counts agree', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 1, ok: true, reason: /2 Endpoint CRs synced to 2 API endpoints/},
    {name: 'cluster not registered', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 2, clusters: 0, ok: false, reason: /local cluster is not registered/},
    {name: 'no Endpoint from the HTTPRoute', endpoints: [synced('production', 'a')], api: 1, clusters: 1, ok: false, reason: /namespace\(s\) acme-shop/},
    {name: 'one pending, with its message', endpoints: [synced('production', 'a'), ep('acme-shop', 'b', {phase: 'Error', syncStatus: 'error', message: 'API said 500'})], api: 1, clusters: 1, ok: false, reason: /1 of 2 Endpoint CRs not synced: acme-shop\/b: Error \(error\): API said 500/},
    {name: 'Synced without API ID', endpoints: [synced('production', 'a'), ep('acme-shop', 'b', {phase: 'Synced'})], api: 2, clusters: 1, ok: false, reason: /not synced/},
    {name: 'API count differs', endpoints: [synced('production', 'a'), synced('acme-shop', 'b')], api: 3, clusters: 1, ok: false, reason: /2 synced Endpoint CRs but 3 endpoints/},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const verdict = smokeVerdict(c.endpoints, c.api, c.clusters, ['production', 'acme-shop'], c.health ?? ready)
      assert.equal(verdict.ok, c.ok)
      assert.match(verdict.reason, c.reason)
    })
  }
})
