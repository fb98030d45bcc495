import assert from 'node:assert/strict'
import {endpointSpec} from '../../src/crds/endpoint.js'
import {apiEndpointName, configHash, endpointPayload} from '../../src/operator/sync/endpoint-payload.js'
import {endpointStatus} from '../../src/operator/sync/endpoint-sync-feature.js'

const spec = (extra: object = {}) => endpointSpec.parse({remoteAddress: 'app.example.com', remotePort: 443, tls: true, path: '/health', timeout: 5, interval: 60, expectedStatusCodes: [200], ...extra})

describe('endpoint sync (pure parts)', () => {
  describe('endpointPayload', () => {
    it('puts the check settings inside spec.http, as the contract wants', () => {
      const payload = endpointPayload({namespace: 'production', name: 'app-example-com', spec: spec(), clusterId: 'c1'})
      assert.deepEqual(payload.spec, {http: {path: '/health', tls: true, timeout: 5, interval: 60, method: 'GET', expected_status_code: 200, accepted_status_codes: [200]}})
      assert.equal(payload.name, 'production-app-example-com')
      assert.equal(payload.display_name, 'app.example.com')
      assert.equal(payload.remote_address, 'app.example.com')
      assert.equal(payload.remote_port, 443)
      assert.equal(payload.kind, 'http')
      assert.equal(payload.k8s_cluster, 'c1')
      assert.equal(payload.created_by_component, 'operator')
    })

    const cases: Array<[string, object, (p: ReturnType<typeof endpointPayload>) => void]> = [
      ['several accepted codes, the first is the expected one', {expectedStatusCodes: [301, 302]}, (p) => {
        assert.equal(p.spec?.http?.expected_status_code, 301)
        assert.deepEqual(p.spec?.http?.accepted_status_codes, [301, 302])
      }],
      ['no port: 80 without TLS', {remotePort: undefined, tls: false}, (p) => assert.equal(p.remote_port, 80)],
      ['no port: 443 with TLS', {remotePort: undefined}, (p) => assert.equal(p.remote_port, 443)],
      ['expected body travels as an annotation', {expectedBody: '"database":"connected"'}, (p) => assert.deepEqual(p.annotations, {'endpoints.polycrate.io/expected-body': '"database":"connected"'})],
      ['K8sApp name becomes a label', {k8sAppName: 'acme-shop'}, (p) => assert.equal((p.labels as Record<string, string>).polycrate_k8sapp_name, 'acme-shop')],
      ['source becomes labels', {source: {kind: 'HTTPRoute', name: 'shop', namespace: 'x'}}, (p) => assert.equal((p.labels as Record<string, string>).polycrate_source_kind, 'HTTPRoute')],
    ]
    for (const [name, extra, check] of cases) it(name, () => check(endpointPayload({namespace: 'ns', name: 'n', spec: spec(extra)})))
  })

  describe('apiEndpointName', () => {
    it('namespace and name, DNS-safe', () => assert.equal(apiEndpointName('Prod', 'app-example-com'), 'prod-app-example-com'))
    it('long names are cut with a hash, ≤ 63 characters, and stay distinct', () => {
      const a = apiEndpointName('a-very-long-namespace-name-for-testing', 'an-even-longer-endpoint-name-example-com-a')
      const b = apiEndpointName('a-very-long-namespace-name-for-testing', 'an-even-longer-endpoint-name-example-com-b')
      assert.ok(a.length <= 63 && b.length <= 63)
      assert.notEqual(a, b)
      assert.match(a, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    })
  })

  describe('configHash', () => {
    it('ignores key order and undefined values; changes with content', () => {
      assert.equal(configHash({a: 1, b: {c: [1, 2]}, d: undefined}), configHash({b: {c: [1, 2]}, a: 1}))
      assert.notEqual(configHash({a: 1}), configHash({a: 2}))
      assert.notEqual(configHash({a: [1, 2]}), configHash({a: [2, 1]}))
    })
  })

  describe('endpointStatus', () => {
    it('synced: phase, ids, hash, time; the condition keeps its transition time while it holds', () => {
      const first = endpointStatus(undefined, 1, {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: 'ok', ok: true}, {apiID: 'x', configHash: 'h', at: 't1'}, 't1')
      assert.deepEqual([first.phase, first.syncStatus, first.apiID, first.configHash, first.lastSyncedAt, first.observedGeneration], ['Synced', 'synced', 'x', 'h', 't1', 1])
      const again = endpointStatus(first, 1, {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: 'ok', ok: true}, {}, 't2')
      assert.deepEqual(again, first, 'an unchanged sync produces the same status (no write)')
      const failed = endpointStatus(first, 2, {phase: 'Error', syncStatus: 'error', reason: 'APIUnavailable', message: 'down', ok: false}, {}, 't3')
      assert.equal(failed.apiID, 'x', 'the API id survives a failed sync')
      assert.equal(failed.message, 'down')
      assert.equal(failed.conditions![0]!.lastTransitionTime, 't3')
    })
  })
})
