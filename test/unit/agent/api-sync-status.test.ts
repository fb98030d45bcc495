import assert from 'node:assert/strict'
import {apiSyncStatus, type ApiSyncOutcome} from '../../../src/operator/agent/api-sync-status.js'
import {slug} from '../../../src/operator/agent/api-sync-agent.js'

const connected = (workspace = 'production', clusterId = 'c1'): ApiSyncOutcome => ({
  kind: 'connected',
  workspace: {id: `w-${workspace}`, name: workspace},
  organization: {id: 'o1', name: 'acme-corp'},
  agent: {agentId: 'a1', reportedAgentId: 'polycrate-operator-x', version: '0.1.0', popName: 'fsn1'},
  localCluster: {clusterId, clusterName: 'prod', created: true},
})

describe('API sync status (pure)', () => {
  it('connected: workspace, organization, local cluster, agent, APIConnected=True', () => {
    const status = apiSyncStatus(undefined, connected(), 't1')
    assert.deepEqual(status.api_sync, {workspace_id: 'w-production', workspace_name: 'production', organization_id: 'o1', organization_name: 'acme-corp', resolved_at: 't1'})
    assert.deepEqual(status.local_cluster, {cluster_id: 'c1', cluster_name: 'prod', registered: true, resolved_at: 't1'})
    assert.equal(status.agent?.pop_name, 'fsn1')
    assert.deepEqual(status.conditions?.map((c) => [c.type, c.status, c.reason]), [['APIConnected', 'True', 'Connected']])
  })

  it('a heartbeat that changes nothing produces the same status (no write, resolved_at kept)', () => {
    const first = apiSyncStatus(undefined, connected(), 't1')
    assert.deepEqual(apiSyncStatus(first, connected(), 't2'), first)
  })

  it('a new workspace or cluster moves resolved_at', () => {
    const first = apiSyncStatus(undefined, connected(), 't1')
    assert.equal(apiSyncStatus(first, connected('staging'), 't2').api_sync?.resolved_at, 't2')
    assert.equal(apiSyncStatus(first, connected('production', 'c2'), 't2').local_cluster?.resolved_at, 't2')
  })

  const failures: Array<[ApiSyncOutcome['kind'], string]> = [['no-token', 'NoAgentToken'], ['rejected', 'TokenRejected'], ['unreachable', 'APIUnreachable'], ['failed', 'APIError']]
  for (const [kind, reason] of failures) {
    it(`${kind} → APIConnected=False ${reason}; what was resolved before stays`, () => {
      const before = apiSyncStatus(undefined, connected(), 't1')
      const after = apiSyncStatus(before, {kind, message: 'what to do'} as ApiSyncOutcome, 't2')
      assert.deepEqual(after.conditions?.map((c) => [c.status, c.reason, c.message, c.lastTransitionTime]), [['False', reason, 'what to do', 't2']])
      assert.deepEqual(after.api_sync, before.api_sync)
      assert.deepEqual(after.local_cluster, before.local_cluster)
    })
  }

  it('slug makes API names from display names', () => {
    assert.equal(slug('Production Cluster'), 'production-cluster')
    assert.equal(slug('  --Ünïcode_Name!! '), 'n-code-name')
    assert.equal(slug('!!!'), 'cluster')
  })
})
