import assert from 'node:assert/strict'
import {ApiAuthError, ApiNetworkError, ApiServerError, ApiValidationError, type PolycrateApiClient} from '../../../src/api/index.js'
import type {KubeClient} from '../../../src/kube/client.js'
import {silentLogger} from '../../../src/lib/logger.js'
import type {ApiSession} from '../../../src/operator/agent/api-session.js'
import {ApiSyncAgent, connectFailure, leaderIdentity, marksStopped, readToken, stoppedMessage, type SecretObject} from '../../../src/operator/agent/api-sync-agent.js'
import {credentialsSecret, validateOperatorConfig} from '../../../src/operator/config/operator-config.js'
import type {OperatorConfigObject} from '../../../src/operator/config/operator-config-controller.js'
import {ObjectCache} from '../../../src/operator/runtime/cache.js'
import {Controller} from '../../../src/operator/runtime/controller.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import type {StopReason} from '../../../src/operator/runtime/feature.js'
import {FakeTimers} from '../../support/fake-timers.js'

const ref = {namespace: 'polycrate', secret_name: 'polycrate-api-token', token_key: 'token'}
const b64 = (value: string) => Buffer.from(value).toString('base64')
const init = {method: 'POST', path: '/api/v1/agent/health/', errors: [], attempts: 1}

describe('API sync agent (pure parts)', () => {
  describe('readToken', () => {
    const cases: Array<[string, {data?: Record<string, string>} | undefined, string]> = [
      ['no Secret', undefined, 'problem: No agent token: Secret polycrate/polycrate-api-token does not exist. Create it: kubectl create secret generic polycrate-api-token -n polycrate --from-literal=token=<agent token>'],
      ['no such key', {data: {other: b64('x')}}, 'problem: No agent token: Secret polycrate/polycrate-api-token has no key "token" (it has: other). Add it, or set api_sync.credentials_ref.token_key.'],
      ['no keys at all', {}, 'problem: No agent token: Secret polycrate/polycrate-api-token has no key "token" (it has: no keys). Add it, or set api_sync.credentials_ref.token_key.'],
      ['only whitespace', {data: {token: b64(' \n')}}, 'problem: No agent token: key "token" of Secret polycrate/polycrate-api-token is empty.'],
      ['a token, trimmed', {data: {token: b64('abc\n')}}, 'token: abc'],
    ]
    for (const [name, secret, expected] of cases) {
      it(name, () => {
        const read = readToken(secret as never, ref)
        assert.equal('problem' in read ? `problem: ${read.problem}` : `token: ${read.token}`, expected)
      })
    }
  })

  describe('connectFailure', () => {
    const url = 'https://api.example.com'
    const cases: Array<[string, unknown, string | undefined]> = [
      ['401', new ApiAuthError({...init, status: 401}), 'rejected'],
      ['403', new ApiAuthError({...init, status: 403}), 'rejected'],
      ['network', new ApiNetworkError({method: 'POST', path: '/', cause: 'ECONNREFUSED', origin: url, attempts: 1}), 'unreachable'],
      ['503', new ApiServerError({...init, status: 503}), 'unreachable'],
      ['400', new ApiValidationError({...init, status: 400}), 'failed'],
      ['not the API\'s: rethrown', new Error('bug'), undefined],
    ]
    for (const [name, error, kind] of cases) it(`${name} → ${kind ?? 'undefined'}`, () => assert.equal(connectFailure(error, url, ref, 30)?.kind, kind))
    it('rejected: names the Secret and what to do', () => assert.equal((connectFailure(new ApiAuthError({...init, status: 403}), url, ref, 30) as {message: string}).message,
      'The Polycrate API at https://api.example.com rejected the agent token from Secret polycrate/polycrate-api-token (403 Forbidden): create a new API token for the cluster\'s workspace and update the Secret.'))
  })

  describe('leaderIdentity', () => {
    const cases: Array<[string, unknown, unknown]> = [
      ['no status', undefined, undefined],
      ['no workspace name yet', {api_sync: {workspace_id: 'w'}}, undefined],
      ['the leader connected', {api_sync: {workspace_id: 'w', workspace_name: 'W', organization_id: null}, local_cluster: {cluster_id: 'c'}},
        {workspaceId: 'w', workspaceName: 'W', organizationId: undefined, organizationName: undefined, clusterId: 'c'}],
    ]
    for (const [name, status, identity] of cases) it(name, () => assert.deepEqual(leaderIdentity(status as never), identity))
  })

  describe('stopping', () => {
    const why = (kind: StopReason['kind']): StopReason => ({kind, message: kind} as StopReason)
    const cases: Array<[string, StopReason | undefined, boolean, string, boolean]> = [
      ['disabled, leader', why('disabled'), true, 'API sync is disabled (api_sync.enabled is false).', true],
      ['restart', why('restart'), true, 'API sync is restarting with new settings.', false],
      ['shutdown', why('shutdown'), true, 'API sync is stopped: shutdown.', false],
      ['missing CRDs, standby', why('missing-crds'), false, 'API sync is stopped: missing-crds.', false],
      ['no reason', undefined, true, 'API sync is stopped.', true],
    ]
    for (const [name, reason, leader, message, marks] of cases) {
      it(name, () => assert.deepEqual([stoppedMessage(reason), marksStopped(reason, leader)], [message, marks]))
    }
  })
})

/**
 * The agent run by a controller on fake timers, as the API sync feature runs it: one key, its heartbeat the
 * controller's requeue. A fake API records each health report; the manager leads.
 */
function heartbeatRig(intervalSeconds: number) {
  const timers = new FakeTimers()
  const reports: Array<{uptime_seconds: number; start_time: string; reported_at: string}> = []
  const api = {
    failing: false,
    agent: {
      health: async (body: {uptime_seconds: number; start_time: string; reported_at: string}) => {
        reports.push(body)
        if (api.failing) throw new ApiNetworkError({method: 'POST', path: '/api/v1/agent/health/', cause: 'ECONNREFUSED', origin: 'https://api.example.com', attempts: 1})
        return {workspace_id: 'w1', workspace_name: 'W', agent_id: 'a1', pop_id: 'p1'}
      },
    },
  }
  const session = {identity: undefined, clientFor: () => api as unknown as PolycrateApiClient, connected: () => {}, disconnected: () => {}} as unknown as ApiSession
  const validation = validateOperatorConfig({api_sync: {enabled: true, api_url: 'https://api.example.com', sync_interval_seconds: intervalSeconds}})
  if (!validation.ok) throw new Error(validation.problems.join('; '))
  const config = validation.config
  const namespace = 'polycrate'
  const secretRef = credentialsSecret(config)
  const secrets = new ObjectCache<SecretObject>()
  secrets.upsert({metadata: {name: secretRef.secret_name, namespace, resourceVersion: '1'}, data: {[secretRef.token_key]: b64('agent-token')}})
  const client = {getOrUndefined: async () => ({metadata: {uid: 'kube-system-uid'}})} as unknown as KubeClient
  const metrics = new OperatorMetrics({processMetrics: false})
  const agent = new ApiSyncAgent({
    manager: {client, namespace, isLeader: true, logger: silentLogger, clock: timers, metrics},
    config, session, token: {namespace, ...secretRef}, secrets, configs: new ObjectCache<OperatorConfigObject>(), events: {record: async () => {}},
  })
  const controller = new Controller({name: 'api-sync', reconcile: (context) => agent.reconcile(context), watches: [], maxConcurrentReconciles: 1, needLeaderElection: false, clock: timers})
  return {timers, reports, api, agent, controller, metrics}
}

describe('API sync agent heartbeat (fake timers)', () => {
  it('reports at once, then every sync interval as the clock advances, with the uptime of the clock', async () => {
    const {timers, reports, agent, controller} = heartbeatRig(60)
    const start = timers.now()
    controller.start()
    controller.enqueue(agent.key)
    await timers.advance(0) // the first report goes out before the clock moves
    assert.equal(reports.length, 1)
    await timers.advance(59_999)
    assert.equal(reports.length, 1, 'reported before the interval')
    await timers.advance(1)
    await timers.advance(120_000)
    assert.deepEqual(reports.map((r) => [r.uptime_seconds, r.reported_at]), [0, 60, 120, 180].map((s) => [s, new Date(start + s * 1000).toISOString()]))
    assert.ok(reports.every((r) => r.start_time === new Date(start).toISOString()))
    await controller.stop()
    await timers.advance(600_000)
    assert.equal(reports.length, 4, 'reported after the controller stopped')
  })

  it('a failed report is tried again every 30 s at most, not every interval', async () => {
    const {timers, reports, api, agent, controller} = heartbeatRig(300)
    const start = timers.now()
    api.failing = true
    controller.start()
    controller.enqueue(agent.key)
    await timers.advance(0) // the first report goes out before the clock moves
    await timers.advance(90_000)
    assert.deepEqual(reports.map((r) => Date.parse(r.reported_at) - start), [0, 30_000, 60_000, 90_000])
    api.failing = false
    await timers.advance(329_999)
    assert.equal(reports.length, 5)
    await timers.advance(1)
    assert.deepEqual(reports.slice(4).map((r) => Date.parse(r.reported_at) - start), [120_000, 420_000], 'back to the interval once connected')
    await controller.stop()
  })

  it('the heartbeat gauges: connected, when it last got through (by the clock), the interval; gone once API sync stops', async () => {
    const {timers, api, agent, controller, metrics} = heartbeatRig(60)
    const value = async (gauge: 'apiConnected' | 'apiLastHeartbeat' | 'apiSyncInterval') =>
      (await metrics[gauge].get()).values.find((sample) => sample.labels.api_url === 'https://api.example.com')?.value
    const start = timers.now()
    controller.start()
    controller.enqueue(agent.key)
    await timers.advance(0)
    assert.equal(await value('apiConnected'), 1)
    assert.equal(await value('apiLastHeartbeat'), start / 1000)
    assert.equal(await value('apiSyncInterval'), 60)
    api.failing = true
    await timers.advance(60_000)
    assert.equal(await value('apiConnected'), 0, 'a failed heartbeat')
    assert.equal(await value('apiLastHeartbeat'), start / 1000, 'the last success stays')
    api.failing = false
    await timers.advance(30_000)
    assert.equal(await value('apiConnected'), 1)
    assert.equal(await value('apiLastHeartbeat'), (start + 90_000) / 1000)
    await controller.stop()
    await agent.stopped({kind: 'disabled', message: 'it is disabled in the OperatorConfig'}, undefined)
    for (const gauge of ['apiConnected', 'apiLastHeartbeat', 'apiSyncInterval'] as const) assert.equal(await value(gauge), undefined, `${gauge} after API sync stopped`)
  })
})
