/**
 * The generic sync's wiring on a manager that never runs (its informers are created, not started) and on fake
 * timers: the inventory check runs every sync interval on the manager's timers, only while leading.
 */
import assert from 'node:assert/strict'
import type {PolycrateApiClient} from '../../../src/api/index.js'
import type {CrdDefinition} from '../../../src/crds/define.js'
import {crdResource} from '../../../src/crds/define.js'
import type {KubeClient} from '../../../src/kube/client.js'
import type {ApiIdentity, ApiSession} from '../../../src/operator/agent/api-session.js'
import {validateOperatorConfig} from '../../../src/operator/config/operator-config.js'
import {Manager} from '../../../src/operator/runtime/manager.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {defineSync, type SyncDeclaration} from '../../../src/operator/sync/engine.js'
import {FakeTimers} from '../../support/fake-timers.js'

interface Api {id: string; name: string}

const crd = {kind: 'Thing', plural: 'things', singular: 'thing'} as unknown as CrdDefinition

function setUp() {
  const timers = new FakeTimers()
  const client = {
    request: async () => {
      throw new Error('no kube calls in this test')
    },
    stream: async () => {
      throw new Error('no kube calls in this test')
    },
  } as unknown as KubeClient
  const manager = new Manager({client, namespace: 'polycrate', leaderElection: false, metrics: new OperatorMetrics({processMetrics: false}), clock: timers})
  const listings: number[] = []
  const declaration = {
    name: 'thing-sync', crd, finalizer: 'things.polycrate.io/sync', noun: 'thing',
    api: () => ({
      async* list(): AsyncGenerator<Api> {
        listings.push(timers.now())
        yield* []
      },
    }),
    payload: () => ({}),
    inventory: () => ({}),
  } as unknown as SyncDeclaration<Record<string, unknown>, Record<string, unknown>, Api>
  const session = {
    client: {} as PolycrateApiClient,
    identity: {workspaceId: 'w1', clusterId: 'c1'} as ApiIdentity,
    problem: undefined,
    onChange: () => () => {},
  } as unknown as ApiSession
  const validation = validateOperatorConfig({api_sync: {enabled: true, api_url: 'https://api.example.com', sync_interval_seconds: 60}})
  if (!validation.ok) throw new Error(validation.problems.join('; '))
  // The CRs' informer (shared by key) reports synced; the manager leads (as start() would make it without election).
  const informer = manager.informer({resource: crdResource(crd)})
  informer.hasSynced = () => true
  const lead = (leading: boolean) => ((manager as unknown as {leading: boolean}).leading = leading)
  const running = defineSync(session, declaration).start(manager, validation.config, () => true, {changed: () => {}})
  return {timers, listings, lead, running}
}

describe('generic sync engine (fake timers)', () => {
  it('the inventory check lists the API objects every sync interval while leading, and not after stop', async () => {
    const {timers, listings, lead, running} = setUp()
    const start = timers.now()
    lead(true)
    await timers.advance(59_999)
    assert.deepEqual(listings, [], 'listed before the first interval')
    await timers.advance(1)
    assert.deepEqual(listings.map((at) => at - start), [60_000])
    await timers.advance(120_000)
    assert.deepEqual(listings.map((at) => at - start), [60_000, 120_000, 180_000])
    await running.stop()
    await timers.advance(600_000)
    assert.equal(listings.length, 3, 'listed after stop')
  })

  it('a standby does not list: the check runs, but only the leader looks', async () => {
    const {timers, listings, lead, running} = setUp()
    lead(false)
    await timers.advance(180_000)
    assert.deepEqual(listings, [])
    lead(true)
    await timers.advance(60_000)
    assert.equal(listings.length, 1)
    await running.stop()
  })
})
