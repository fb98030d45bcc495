import assert from 'node:assert/strict'
import {ApiAuthError, ApiNetworkError, ApiServerError, ApiValidationError} from '../../src/api/index.js'
import {connectFailure, leaderIdentity, marksStopped, readToken, stoppedMessage} from '../../src/operator/agent/api-sync-agent.js'
import type {StopReason} from '../../src/operator/runtime/feature.js'

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
