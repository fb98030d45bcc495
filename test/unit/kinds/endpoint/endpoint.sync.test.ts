import assert from 'node:assert/strict'
import {endpointSpec} from '../../../../src/crds/endpoint.js'
import {apiEndpointName, endpointPayload} from '../../../../src/operator/kinds/endpoint/endpoint.payload.js'
import {configHash} from '../../../../src/operator/sync/hash.js'
import {isTerminal, statusUnchanged, syncStatusPatch} from '../../../../src/operator/sync/status.js'
import {ApiAuthError, ApiNetworkError, ApiServerError, ApiValidationError} from '../../../../src/api/index.js'

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

  describe('syncStatusPatch (every sync kind)', () => {
    const synced = {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: 'ok'} as const
    it('camel style (Endpoint): phase, ids, hash, time; the condition keeps its transition time while it holds', () => {
      const first = syncStatusPatch('camel', undefined, 1, synced, {apiId: 'x', configHash: 'h', at: 't1'}, 't1')
      assert.deepEqual([first.phase, first.syncStatus, first.apiID, first.configHash, first.lastSyncedAt, first.observedGeneration, first.message], ['Synced', 'synced', 'x', 'h', 't1', 1, null])
      const again = syncStatusPatch('camel', first, 1, synced, {}, 't2')
      assert.deepEqual(again, first, 'an unchanged sync produces the same status')
      assert.ok(statusUnchanged(first, again), 'so nothing is written')
      const failed = syncStatusPatch('camel', first, 2, {phase: 'Error', syncStatus: 'error', reason: 'APIUnavailable', message: 'down'}, {}, 't3')
      assert.equal(failed.apiID, 'x', 'the API id survives a failed sync')
      assert.equal(failed.message, 'down')
      assert.equal((failed.conditions as Array<{lastTransitionTime: string}>)[0]!.lastTransitionTime, 't3')
    })
    it('snake style (Host, K8sVolume, …) spells the same fields the seeds\' way', () => {
      const patch = syncStatusPatch('snake', undefined, 3, synced, {apiId: 'y', configHash: 'h2', at: 't'}, 't')
      assert.deepEqual(Object.keys(patch).sort(), ['api_id', 'conditions', 'config_hash', 'last_synced_at', 'message', 'observed_generation', 'phase', 'sync_status'])
      assert.equal(patch.api_id, 'y')
    })
    it('only sync-owned fields: discovery-owned status (node_ready) is neither written nor dropped', () => {
      const patch = syncStatusPatch('snake', {node_ready: true, api_id: 'y'}, 1, synced, {}, 't')
      assert.equal('node_ready' in patch, false)
      assert.ok(statusUnchanged({node_ready: true, ...patch}, patch))
    })
    it('a kind\'s extra fields ride along', () => {
      assert.equal(syncStatusPatch('camel', undefined, 1, synced, {extra: {k8sAppID: 'app'}}, 't').k8sAppID, 'app')
    })
  })

  describe('isTerminal', () => {
    const init = {method: 'POST', path: '/api/v1/hosts/', errors: [], attempts: 1}
    const cases: Array<[string, unknown, boolean]> = [
      ['400 validation', new ApiValidationError({...init, status: 400}), true],
      ['403 forbidden', new ApiAuthError({...init, status: 403}), true],
      ['401 is a token problem, retried', new ApiAuthError({...init, status: 401}), false],
      ['503', new ApiServerError({...init, status: 503}), false],
      ['network', new ApiNetworkError({method: 'GET', path: '/', cause: 'ECONNRESET', origin: 'http://x', attempts: 1, timeoutMs: 1}), false],
      ['a plain error', new Error('x'), false],
    ]
    for (const [name, error, terminal] of cases) it(`${name} → ${terminal ? 'terminal' : 'transient'}`, () => assert.equal(isTerminal(error), terminal))
  })
})
