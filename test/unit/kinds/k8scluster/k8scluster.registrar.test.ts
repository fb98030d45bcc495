import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient, type ResourceRef} from '../../../../src/kube/client.js'
import {silentLogger} from '../../../../src/lib/logger.js'
import {ObjectCache} from '../../../../src/operator/runtime/cache.js'
import {clusterDrifted, clusterStatus, createdByCr, K8sClusterRegistrar, slotCandidates, type ClusterObject, type Probe, type Registration} from '../../../../src/operator/kinds/k8scluster/k8scluster.registrar.js'
import {annotations} from '../../../../src/operator/conventions.js'
import type {ApiSession} from '../../../../src/operator/agent/api-session.js'

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

    /**
     * Regression (issue 33): a CR created the workspace's cluster in the API, the process crashed before its status
     * recorded it (or the create's answer was lost). The next process found the cluster by the workspace and took it
     * for an adopted one, so deleting the CR never deleted it. The create now marks the cluster with the CR's uid.
     */
    describe('the cluster this CR created, found again after a crash before the status write', () => {
      const registrarWith = (stored: Array<Record<string, unknown>>, clusterId?: string, options: {updateAnswerLost?: boolean} = {}) => {
        const patches: Array<Record<string, unknown>> = []
        const apiCalls: string[] = []
        const events: string[] = []
        const client = {
          request: async () => ({data: {token: Buffer.from('t0ken').toString('base64')}}),
          mergePatch: async (_ref: ResourceRef, patch: Record<string, unknown>) => {
            patches.push(patch)
            return {}
          },
          // The CRD is there (a CR deleted by a user, not going with its CRD).
          getOrUndefined: async () => ({metadata: {name: 'k8sclusters.polycrate.io'}}),
        } as unknown as KubeClient
        const k8sClusters = {
          collection: 'kubernetes/clusters',
          async *list() {
            apiCalls.push('list')
            yield* stored
          },
          async findOne() {
            return stored[0]
          },
          async get(id: string) {
            apiCalls.push(`get ${id}`)
            return stored.find((c) => c.id === id)
          },
          async create(body: Record<string, unknown>) {
            apiCalls.push('create')
            const made = {id: `c${stored.length + 1}`, ...body}
            stored.push(made)
            return made
          },
          async update(id: string, body: Record<string, unknown>) {
            apiCalls.push(`update ${id} after ${patches.length} patches`)
            const found = stored.find((c) => c.id === id)
            Object.assign(found ?? {}, body)
            if (options.updateAnswerLost) throw new Error('socket hang up (the update was applied, its answer lost)')
            return found
          },
          async delete(id: string) {
            apiCalls.push(`delete ${id}`)
            return 'deleted'
          },
        }
        const session = {client: {k8sClusters}, identity: {workspaceId: 'ws', workspaceName: 'prod', clusterId}, problem: undefined} as unknown as Pick<ApiSession, 'client' | 'identity' | 'problem'>
        const clusters = new ObjectCache<ClusterObject>()
        const registrar = new K8sClusterRegistrar({
          session, client, clusters, intervalMs: 60_000,
          events: {record: async (_object, type, reason) => { events.push(`${type} ${reason}`) }},
          probe: async () => ({kind: 'ok', version: 'v1.31.0'}),
        })
        return {registrar, clusters, patches, apiCalls, events, stored}
      }
      const registeredHow = (patches: Array<Record<string, unknown>>) =>
        ((patches.findLast((p) => p.status)?.status as {conditions?: Array<{type: string; reason: string}>} | undefined)?.conditions ?? []).find((c) => c.type === 'Registered')?.reason
      const cr = (uid: string, status?: Record<string, unknown>, extra: Record<string, unknown> = {}) => cluster('prod', status, {uid, finalizers: ['polycrate.io/k8scluster-cleanup'], ...extra})

      it('an update of another payload: the recorded hash is cleared first, so an answer lost (or a crash) after the update leaves no hash the old payload would match', async () => {
        const status = {phase: 'Ready', configHash: 'hash-of-the-old-payload', ...registered}
        for (const updateAnswerLost of [false, true]) {
          const {registrar, clusters, patches, apiCalls} = registrarWith([{id: 'c1', name: 'prod', annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}], 'c1', {updateAnswerLost})
          clusters.upsert(cr('u1', status))
          await registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
          assert.deepEqual(patches[0], {apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sCluster', status: {configHash: null}})
          assert.deepEqual(apiCalls.filter((call) => call.startsWith('update')), ['update c1 after 1 patches'], 'the update after the hash was cleared')
          const last = patches.at(-1)!.status as {configHash?: string | null; syncStatus?: string}
          if (updateAnswerLost) assert.deepEqual([last.syncStatus, last.configHash], ['error', null], 'the old hash written back')
          else assert.ok(last.syncStatus === 'synced' && typeof last.configHash === 'string' && last.configHash !== status.configHash)
        }
        // The same payload again (and in the API): no clearing, no update.
        const first = registrarWith([{id: 'c1', name: 'prod', annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}], 'c1')
        first.clusters.upsert(cr('u1', status))
        await first.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        const {registrar, clusters, patches, apiCalls} = registrarWith(first.stored, 'c1')
        clusters.upsert(cr('u1', {...status, configHash: (first.patches.at(-1)!.status as {configHash: string}).configHash}))
        await registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        assert.ok(!apiCalls.some((call) => call.startsWith('update')), 'updated an unchanged payload')
        assert.ok(!patches.some((patch) => (patch.status as {configHash?: unknown} | undefined)?.configHash === null), 'cleared the hash of an unchanged payload')
      })

      it('the recorded hash matches, the API cluster does not (a write of the slot\'s previous holder answered after this CR\'s): updated again', async () => {
        const first = registrarWith([{id: 'c1', name: 'prod', annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}], 'c1')
        first.clusters.upsert(cr('u1', {phase: 'Ready', ...registered}))
        await first.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        const synced = first.patches.findLast((p) => p.status)!.status as Record<string, unknown>
        Object.assign(first.stored[0]!, {display_name: 'prod (eu)', description: 'renamed'}) // the late write
        const next = registrarWith(first.stored, 'c1')
        next.clusters.upsert(cr('u1', synced))
        await next.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        assert.deepEqual(next.apiCalls.filter((call) => call.startsWith('update')), ['update c1 after 0 patches'])
        assert.deepEqual([first.stored[0]!.display_name, first.stored[0]!.description], ['prod', ''])
      })

      it('clusterDrifted: display name, description and a known Kubernetes version; not read → no', () => {
        const payload = {display_name: 'prod', description: 'd', kubernetes_version: 'v1.31.0'}
        const cases: Array<[Record<string, unknown> | undefined, boolean]> = [
          [undefined, false],
          [{id: 'c1', display_name: 'prod', description: 'd', kubernetes_version: 'v1.31.0'}, false],
          [{id: 'c1', display_name: 'prod (eu)', description: 'd', kubernetes_version: 'v1.31.0'}, true],
          [{id: 'c1', display_name: 'prod', description: null, kubernetes_version: 'v1.31.0'}, true],
          [{id: 'c1', display_name: 'prod', description: 'd', kubernetes_version: 'v1.30.0'}, true],
        ]
        for (const [inApi, drifted] of cases) assert.equal(clusterDrifted(inApi as never, payload), drifted, JSON.stringify(inApi))
        assert.equal(clusterDrifted({id: 'c1', display_name: 'prod', description: ''} as never, {display_name: 'prod', description: ''}), false, 'no version probed: not compared')
      })

      it('createdByCr: the mark of the CR\'s uid, nothing else', () => {
        assert.equal(createdByCr({annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}, 'u1'), true)
        assert.equal(createdByCr({annotations: {[annotations.k8sClusterCreatedBy]: 'u2'}}, 'u1'), false)
        assert.equal(createdByCr({annotations: {}}, 'u1'), false)
        assert.equal(createdByCr({annotations: null}, 'u1'), false)
        assert.equal(createdByCr({annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}, undefined), false)
      })

      it('the first process creates the cluster marked with the CR\'s uid; the next one, without a status, finds it (by the workspace, or as the identity\'s cluster) and calls it Created; deleting the CR deletes it', async () => {
        for (const viaIdentity of [false, true]) {
          const first = registrarWith([])
          first.clusters.upsert(cr('u1'))
          await first.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
          assert.deepEqual(first.apiCalls.slice(0, 2), ['list', 'create'])
          assert.deepEqual((first.stored[0]!.annotations as Record<string, string>)[annotations.k8sClusterCreatedBy], 'u1')
          assert.equal(registeredHow(first.patches), 'Created')

          // The crash: the status write above never happened. A new process sees the CR without a status.
          const next = registrarWith(first.stored, viaIdentity ? 'c1' : undefined)
          next.clusters.upsert(cr('u1'))
          await next.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
          assert.ok(!next.apiCalls.includes('create'), 'created again')
          assert.equal(registeredHow(next.patches), 'Created', `found ${viaIdentity ? 'as the identity\'s cluster' : 'by the workspace'}: still this CR's`)
          assert.equal(next.events[0], 'Normal ClusterCreated')

          const status = next.patches.findLast((p) => p.status)!.status as Record<string, unknown>
          next.clusters.upsert(cr('u1', status, {deletionTimestamp: NOW}))
          await next.registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
          assert.ok(next.apiCalls.includes('delete c1'), 'the cluster the CR created was not deleted with it')
        }
      })

      it('the slot goes to the CR that created the workspace\'s cluster even when its status never said so: a second CR is refused, not handed the cluster', async () => {
        const {registrar, clusters, patches, apiCalls} = registrarWith([{id: 'c1', name: 'prod', annotations: {[annotations.k8sClusterCreatedBy]: 'u1'}}])
        // prod: created the cluster, crashed before its status said so; its last probe failed (a blip)
        clusters.upsert(cr('u1', {phase: 'Unreachable'}))
        clusters.upsert(cluster('staging', undefined, {uid: 'u2'})) // newer, Ready
        await registrar.reconcile({key: 'ns/staging', logger: silentLogger, signal: new AbortController().signal})
        const status = patches.findLast((p) => p.status)!.status as {phase?: string; conditions?: Array<{type: string; reason: string}>}
        assert.equal(status.phase, 'Error')
        assert.equal(status.conditions?.find((c) => c.type === 'Registered')?.reason, 'WorkspaceHasCluster')
        assert.ok(!apiCalls.some((call) => call.startsWith('update') || call === 'create'), 'staging took the cluster')
      })

      it('an older CR not probed yet (a process that started after both were made): the younger one waits for its probe instead of taking the slot', async () => {
        const {registrar, clusters, patches, apiCalls} = registrarWith([])
        clusters.upsert(cr('u1'))
        clusters.upsert(cluster('staging', undefined, {uid: 'u2'}))
        await registrar.reconcile({key: 'ns/staging', logger: silentLogger, signal: new AbortController().signal})
        const status = patches.findLast((p) => p.status)!.status as {syncStatus?: string; conditions?: Array<{type: string; reason: string}>}
        assert.equal(status.syncStatus, 'pending')
        assert.equal(status.conditions?.find((c) => c.type === 'Synced')?.reason, 'WaitingForOlderCluster')
        assert.deepEqual(apiCalls, [], 'staging registered before prod was probed')
      })

      it('a cluster without the mark (local_cluster\'s, another CR\'s) is adopted: deleting the CR keeps it', async () => {
        const {registrar, clusters, patches, apiCalls} = registrarWith([{id: 'c9', name: 'local', annotations: {[annotations.k8sClusterCreatedBy]: 'someone-else'}}])
        clusters.upsert(cr('u1'))
        await registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        assert.equal(registeredHow(patches), 'Adopted')
        const status = patches.findLast((p) => p.status)!.status as Record<string, unknown>
        clusters.upsert(cr('u1', status, {deletionTimestamp: NOW}))
        await registrar.reconcile({key: 'ns/prod', logger: silentLogger, signal: new AbortController().signal})
        assert.ok(!apiCalls.some((call) => call.startsWith('delete')))
      })
    })
  })
})
