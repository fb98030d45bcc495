import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient, type ResourceRef} from '../../src/kube/client.js'
import {silentLogger} from '../../src/lib/logger.js'
import {ObjectCache} from '../../src/operator/runtime/cache.js'
import {clusterStatus, K8sClusterRegistrar, slotCandidates, type ClusterObject, type Probe, type Registration} from '../../src/operator/kinds/k8scluster/registrar.js'

const NOW = '2026-01-01T00:00:00.000Z'
const cluster = (name: string, status?: Record<string, unknown>, extra: Record<string, unknown> = {}): ClusterObject => ({
  apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sCluster',
  metadata: {name, namespace: 'ns', resourceVersion: '1', generation: 2, creationTimestamp: `2026-01-01T00:00:0${name.length}Z`, ...extra},
  spec: {apiServer: 'https://api.example.com:6443', authentication: {serviceAccountToken: {secretRef: {name: 'tok', key: 'token'}}}} as never,
  status,
})
const registered = {apiID: 'c1', conditions: [{type: 'Registered', status: 'True', reason: 'Created', message: '', lastTransitionTime: NOW}]}

describe('K8sCluster registrar (the parts of its reconcile)', () => {
  describe('slotCandidates', () => {
    it('the CR being reconciled counts with the phase just probed; the others with their status', () => {
      const candidates = slotCandidates([cluster('a', {phase: 'Ready', ...registered}), cluster('bb', {phase: 'Unreachable'}), cluster('ccc', undefined, {deletionTimestamp: NOW})], 'ns/bb', 'Ready')
      assert.deepEqual(candidates.map(({key, ready, registered: r, deleting}) => [key, ready, r, deleting]), [
        ['ns/a', true, true, false],
        ['ns/bb', true, false, false],
        ['ns/ccc', false, false, true],
      ])
    })
  })

  describe('clusterStatus', () => {
    const ready: Probe = {phase: 'Ready', reachable: true, reason: 'Ready', message: 'answers', version: 'v1.31.0'}
    const cases: Array<[string, Probe, 'Ready' | 'Error', Registration, Record<string, unknown> | undefined, Record<string, unknown>]> = [
      ['registered: Synced, the id, the hash, lastSyncedAt when it wrote', ready, 'Ready', {status: 'synced', reason: 'Synced', message: 'as c1', id: 'c1', hash: 'h', wrote: true, how: 'Created'}, undefined,
        {phase: 'Ready', message: 'answers', syncStatus: 'synced', apiID: 'c1', configHash: 'h', lastSyncedAt: NOW, kubernetesVersion: 'v1.31.0', reachable: true}],
      ['another CR holds the slot: phase Error, its message, the id cleared', ready, 'Error', {status: 'error', reason: 'WorkspaceHasCluster', message: 'held'}, {apiID: 'old', configHash: 'h0'},
        {phase: 'Error', message: 'held', syncStatus: 'error', apiID: null, configHash: 'h0', lastSyncedAt: undefined}],
      ['not connected: what was there is kept', {phase: 'Unreachable', reachable: false, reason: 'ConnectionFailed', message: 'no answer'} as Probe, 'Error', {status: 'pending', reason: 'APINotConnected', message: 'waiting'}, {apiID: 'c1', kubernetesVersion: 'v1.30.0', lastSyncedAt: 'then'},
        {syncStatus: 'pending', apiID: 'c1', kubernetesVersion: 'v1.30.0', lastSyncedAt: 'then', reachable: false}],
    ]
    for (const [name, probe, phase, sync, previous, expected] of cases) {
      it(name, () => {
        const {patch} = clusterStatus(previous, 2, probe, phase, sync, NOW)
        for (const [field, value] of Object.entries(expected)) assert.deepEqual(patch[field], value, field)
        assert.equal(patch.lastProbedAt, NOW)
      })
    }

    it('conditions: Ready, Synced; Registered True with how, False when another holds the slot', () => {
      const types = (sync: Registration) => (clusterStatus(undefined, 2, ready, 'Ready', sync, NOW).patch.conditions as Array<{type: string; status: string; reason: string}>).map((c) => `${c.type}=${c.status}/${c.reason}`)
      assert.deepEqual(types({status: 'synced', reason: 'Synced', message: 'm', how: 'Adopted'}), ['Ready=True/Ready', 'Synced=True/Synced', 'Registered=True/Adopted'])
      assert.deepEqual(types({status: 'error', reason: 'WorkspaceHasCluster', message: 'm'}), ['Ready=True/Ready', 'Synced=False/WorkspaceHasCluster', 'Registered=False/WorkspaceHasCluster'])
    })
  })

  describe('reconcile (fake kube client and probe)', () => {
    const make = (secret: Record<string, string> | undefined) => {
      const calls: string[] = []
      const events: string[] = []
      const client = {
        request: async () => {
          if (!secret) throw new KubeApiError(404, 'NotFound', 'gone')
          return {data: Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, Buffer.from(v).toString('base64')]))}
        },
        mergePatch: async (ref: ResourceRef, patch: {status?: {phase?: string}}) => {
          calls.push(`patch ${ref.subresource ?? 'object'} ${patch.status?.phase ?? ''}`.trim())
          return {}
        },
      } as unknown as KubeClient
      const clusters = new ObjectCache<ClusterObject>()
      clusters.upsert(cluster('a'))
      const registrar = new K8sClusterRegistrar({
        session: {client: undefined, identity: undefined, problem: 'no token'}, client, clusters, intervalMs: 60_000,
        events: {record: async (_object, type, reason) => { events.push(`${type} ${reason}`) }},
        probe: async () => ({kind: 'ok', version: 'v1.31.0'}),
      })
      return {registrar, calls, events}
    }
    const context = {key: 'ns/a', logger: silentLogger, signal: new AbortController().signal}

    it('its Secret is missing: phase Error, one Warning, probed again after the interval', async () => {
      const {registrar, calls, events} = make(undefined)
      assert.deepEqual(await registrar.reconcile(context), {requeueAfterMs: 60_000})
      assert.deepEqual(calls, ['patch status Error'])
      assert.deepEqual(events, ['Warning CredentialsSecretMissing'])
    })

    it('its API server answers, the Polycrate API is not connected: Ready, not registered, no finalizer', async () => {
      const {registrar, calls, events} = make({token: 't0ken'})
      await registrar.reconcile(context)
      assert.deepEqual(calls, ['patch status Ready'])
      assert.equal(events.length, 1)
      assert.match(events[0]!, /^Normal /)
    })
  })
})
