import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import type {OperatorConfig} from '../../../src/operator/config/operator-config.js'
import type {Logger} from '../../../src/lib/logger.js'
import {FeatureSet, featureState, planFeatures, type Feature} from '../../../src/operator/runtime/feature.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import type {CrdGate} from '../../../src/operator/runtime/crd-gate.js'
import type {Manager} from '../../../src/operator/runtime/manager.js'

const feature = (name: string, options: Partial<Feature<OperatorConfig>> = {}): Feature<OperatorConfig> => ({
  name,
  enabled: (config) => config.node_discovery.enabled,
  permissions: [],
  settings: (config) => config.node_discovery,
  start: () => ({stop: async () => {}}),
  ...options,
})
const config = (spec: object = {}): OperatorConfig => operatorConfigSpec.parse(spec)
const settingsOf = (c: OperatorConfig) => JSON.stringify(c.node_discovery)

describe('planFeatures', () => {
  const nodes = feature('node-discovery')
  const gated = feature('gateway', {requiredCrds: ['httproutes.gateway.networking.k8s.io']})
  const none = new Map<string, string>()

  const cases: Array<{name: string; config: OperatorConfig | undefined; crds: string[]; running: Map<string, string>; actions: string[]; states: string[]}> = [
    {name: 'enabled and not running → start', config: config(), crds: [], running: none, actions: ['start node-discovery'], states: ['node-discovery Running']},
    {name: 'disabled and running → stop', config: config({node_discovery: {enabled: false}}), crds: [], running: new Map([['node-discovery', settingsOf(config())]]), actions: ['stop node-discovery'], states: ['node-discovery Disabled']},
    {name: 'settings changed → restart', config: config({node_discovery: {label_selector: 'a=b'}}), crds: [], running: new Map([['node-discovery', settingsOf(config())]]), actions: ['restart node-discovery'], states: ['node-discovery Running']},
    {name: 'unchanged → nothing', config: config(), crds: [], running: new Map([['node-discovery', settingsOf(config())]]), actions: [], states: ['node-discovery Running']},
    {name: 'invalid config → everything paused', config: undefined, crds: [], running: new Map([['node-discovery', settingsOf(config())]]), actions: ['stop node-discovery'], states: ['node-discovery PausedInvalidConfig']},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const plan = planFeatures([nodes], c.config, (crd) => c.crds.includes(crd), c.running)
      assert.deepEqual(plan.actions.map((a) => `${a.action} ${a.feature.name}`), c.actions)
      assert.deepEqual(plan.states.map((s) => `${s.name} ${s.reason}`), c.states)
    })
  }

  it('a feature waits for its CRDs, starts when they are Established, stops when they go', () => {
    const waiting = planFeatures([gated], config(), () => false, none)
    assert.deepEqual(waiting.actions, [])
    assert.deepEqual(waiting.states, [{name: 'gateway', enabled: true, running: false, reason: 'WaitingForCRDs: httproutes.gateway.networking.k8s.io'}])
    const present = planFeatures([gated], config(), () => true, none)
    assert.deepEqual(present.actions.map((a) => a.action), ['start'])
    const gone = planFeatures([gated], config(), () => false, new Map([['gateway', settingsOf(config())]]))
    assert.deepEqual(gone.actions.map((a) => a.action), ['stop'])
  })

  it('an enabled feature missing one of the operator\'s own CRDs: CRDsMissing with the install command, in missingOwnCrds', () => {
    const endpoints = feature('endpoint-discovery', {requiredCrds: ['endpoints.polycrate.io']})
    const plan = planFeatures([endpoints, gated], config(), () => false, none)
    assert.match(plan.states[0]!.reason!, /^CRDsMissing: endpoints\.polycrate\.io; install them with `polycrate operator install-crds` \(or `polycrate operator crds \| kubectl apply -f -`\)$/)
    assert.deepEqual([...plan.missingOwnCrds], [['endpoints.polycrate.io', ['endpoint-discovery']]])
    // optional sources (Gateway API) only wait; a disabled feature misses nothing
    assert.match(plan.states[1]!.reason!, /^WaitingForCRDs/)
    assert.equal(planFeatures([endpoints], config({node_discovery: {enabled: false}}), () => false, none).missingOwnCrds.size, 0)
  })

  it('a stop says why: disabled, invalid config, missing CRD; a restart says restart', () => {
    const running = new Map([['node-discovery', settingsOf(config())]])
    const why = (c: OperatorConfig | undefined, established: boolean, f: Feature<OperatorConfig> = nodes) => planFeatures([f], c, () => established, running).actions[0]?.why?.kind
    assert.equal(why(config({node_discovery: {enabled: false}}), true), 'disabled')
    assert.equal(why(undefined, true), 'invalid-config')
    assert.equal(why(config(), false, feature('node-discovery', {requiredCrds: ['k8sclusters.polycrate.io']})), 'missing-crds')
    assert.equal(why(config({node_discovery: {label_selector: 'a=b'}}), true), 'restart')
  })
})

describe('planFeatures on a standby replica', () => {
  const discovery = feature('node-discovery')
  const webhook = feature('external-dns-webhook', {everyReplica: true})

  it('a standby runs only the everyReplica features; the leader runs all', () => {
    const standby = planFeatures([discovery, webhook], config(), () => true, new Map(), false)
    assert.deepEqual(standby.actions.map((a) => `${a.action} ${a.feature.name}`), ['start external-dns-webhook'])
    assert.deepEqual(standby.states.map((s) => `${s.name} ${s.reason}`), ['node-discovery Standby', 'external-dns-webhook Running'])
    const running = new Map([['external-dns-webhook', settingsOf(config())]])
    const promoted = planFeatures([discovery, webhook], config(), () => true, running, true)
    // the webhook keeps serving through the promotion: it is neither stopped nor restarted
    assert.deepEqual(promoted.actions.map((a) => `${a.action} ${a.feature.name}`), ['start node-discovery'])
  })
})

describe('featureState: the state label of polycrate_operator_feature_status', () => {
  const cases: Array<[reason: string | undefined, running: boolean, state: string]> = [
    ['Running', true, 'running'],
    ['Standby', false, 'standby'],
    ['Disabled', false, 'disabled'],
    ['PausedInvalidConfig', false, 'paused_invalid_config'],
    ['WaitingForCRDs: httproutes.gateway.networking.k8s.io', false, 'waiting_for_crds'],
    ['CRDsMissing: endpoints.polycrate.io; install them with …', false, 'crds_missing'],
    ['Failed: could not start: bind address [::]:8888 is in use', false, 'failed'],
  ]
  for (const [reason, running, state] of cases) it(`${reason} → ${state}`, () => assert.equal(featureState(reason, running), state))
})

describe('FeatureSet', () => {
  const silent = {debug() {}, info() {}, warn() {}, error() {}, child() { return silent }}
  const metrics = new OperatorMetrics({processMetrics: false})
  const manager = {metrics} as unknown as Manager
  const gate = {isEstablished: () => true} as unknown as CrdGate

  it('a feature whose start fails later is reported Failed with its problem, in the states and the readiness check', async () => {
    let fail: ((message: string) => void) | undefined
    const server = feature('external-dns-webhook', {
      everyReplica: true,
      start: (_manager, _config, _established, context) => {
        let problem: string | undefined
        fail = (message) => {
          problem = message
          context.changed()
        }
        return {problem: () => problem, stop: async () => {}}
      },
    })
    const set = new FeatureSet(manager, gate, [server], silent as unknown as Logger)
    let changes = 0
    set.onChange(() => changes++)
    assert.deepEqual(await set.apply(config(), {leading: false}), [{name: 'external-dns-webhook', enabled: true, running: true, reason: 'Running'}])
    assert.deepEqual(set.failed(), [])
    fail!('could not start: bind address [::]:8888 is in use: use a free port (OperatorConfig external_dns_webhook.port)')
    assert.equal(changes, 1)
    assert.deepEqual(await set.apply(config(), {leading: false}), [{name: 'external-dns-webhook', enabled: true, running: false, reason: 'Failed: could not start: bind address [::]:8888 is in use: use a free port (OperatorConfig external_dns_webhook.port)'}])
    assert.deepEqual(set.failed(), [{name: 'external-dns-webhook', problem: 'could not start: bind address [::]:8888 is in use: use a free port (OperatorConfig external_dns_webhook.port)'}])
    const states = (await metrics.featureStatus.get()).values.filter((sample) => sample.labels.feature === 'external-dns-webhook')
    assert.deepEqual(states.filter((sample) => sample.value === 1).map((sample) => sample.labels.state), ['failed'], 'the failed feature\'s state series is 1')
    assert.equal(states.length, 8, 'one series per state, the others 0')
    await set.stopAll()
    assert.deepEqual(set.failed(), [])
  })
})
