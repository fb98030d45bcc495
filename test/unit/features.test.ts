import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../src/crds/operator-config.js'
import type {OperatorConfig} from '../../src/operator/config/operator-config.js'
import {planFeatures, type Feature} from '../../src/operator/features.js'

const feature = (name: string, options: Partial<Feature> = {}): Feature => ({
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
    const why = (c: OperatorConfig | undefined, established: boolean, f: Feature = nodes) => planFeatures([f], c, () => established, running).actions[0]?.why?.kind
    assert.equal(why(config({node_discovery: {enabled: false}}), true), 'disabled')
    assert.equal(why(undefined, true), 'invalid-config')
    assert.equal(why(config(), false, feature('node-discovery', {requiredCrds: ['k8sclusters.polycrate.io']})), 'missing-crds')
    assert.equal(why(config({node_discovery: {label_selector: 'a=b'}}), true), 'restart')
  })
})
