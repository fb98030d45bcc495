import assert from 'node:assert/strict'
import {isLabelValue, planNodeInit, providerIdFor, type CloudNode, type NodeInitInput, type NodeInitPlan, type Taint} from '../../../src/operator/cloud/node-init.js'

const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized'
const uninitialized: Taint = {key: TAINT, value: 'true', effect: 'NoSchedule'}
const other: Taint = {key: 'dedicated', value: 'db', effect: 'NoExecute'}
const CLUSTER = '5f0c7a4e-2b1d-4c8e-9a34-0d1e2f3a4b5c'

function node(options: {name?: string; providerID?: string; taints?: Taint[]; labels?: Record<string, string>} = {}): CloudNode {
  return {
    metadata: {name: options.name ?? 'worker-1', resourceVersion: '7', ...(options.labels ? {labels: options.labels} : {})},
    spec: {...(options.providerID !== undefined ? {providerID: options.providerID} : {}), taints: options.taints ?? [uninitialized]},
  }
}

const ready = (overrides: Partial<NodeInitInput> = {}): NodeInitInput => ({
  node: node(), host: {synced: true}, clusterId: CLUSTER, popName: 'fsn1', ...overrides,
})

const regionLabels = (pop: string) => ({'topology.kubernetes.io/region': pop, 'failure-domain.beta.kubernetes.io/region': pop})

describe('cloud controller: node initialization plan (planNodeInit)', () => {
  it('providerID is polycrate://<clusterID>/<node>', () => {
    assert.equal(providerIdFor(CLUSTER, 'worker-1'), `polycrate://${CLUSTER}/worker-1`)
  })

  const cases: Array<{name: string; input: NodeInitInput; expected: NodeInitPlan | ((plan: NodeInitPlan) => void)}> = [
    {
      name: 'tainted node, Host synced, PoP known → providerID, both region labels, taint removed',
      input: ready(),
      expected: {action: 'initialize', patch: {providerID: `polycrate://${CLUSTER}/worker-1`, labels: regionLabels('fsn1'), taints: []}, warnings: []},
    },
    {
      name: 'other taints are kept, in order',
      input: ready({node: node({taints: [other, uninitialized, {key: 'x', effect: 'NoSchedule'}]})}),
      expected: {action: 'initialize', patch: {providerID: `polycrate://${CLUSTER}/worker-1`, labels: regionLabels('fsn1'), taints: [other, {key: 'x', effect: 'NoSchedule'}]}, warnings: []},
    },
    {
      name: 'our own providerID already set (a retry after a partial write) → not patched again, no warning',
      input: ready({node: node({providerID: `polycrate://${CLUSTER}/worker-1`})}),
      expected: {action: 'initialize', patch: {labels: regionLabels('fsn1'), taints: []}, warnings: []},
    },
    {
      name: 'no taint → nothing to do (never re-initialized, never deleted)',
      input: ready({node: node({taints: []})}),
      expected: {action: 'done'},
    },
    {
      name: 'no taint even without Host or PoP → nothing to do',
      input: {node: node({taints: [other]})},
      expected: {action: 'done'},
    },
  ]
  for (const testCase of cases) {
    it(testCase.name, () => {
      const plan = planNodeInit(testCase.input)
      if (typeof testCase.expected === 'function') testCase.expected(plan)
      else assert.deepEqual(plan, testCase.expected)
    })
  }

  // Malformed or incomplete inputs: each gives a reason (an Event) and keeps the taint.
  const waits: Array<{name: string; input: NodeInitInput; reason: string; requeue: boolean; mentions: RegExp[]}> = [
    {name: 'no Host CR', input: ready({host: undefined}), reason: 'HostNotSynced', requeue: false, mentions: [/no Host CR/, /node_discovery/, /taint .* stays/]},
    {name: 'Host not synced, with its message', input: ready({host: {synced: false, message: 'Sync failed: 503'}}), reason: 'HostNotSynced', requeue: false, mentions: [/Sync failed: 503/]},
    {name: 'cluster unknown in the API', input: ready({clusterId: undefined}), reason: 'NoLocalCluster', requeue: false, mentions: [/local_cluster\.enabled/]},
    {name: 'no PoP → requeue, taint stays', input: ready({popName: undefined}), reason: 'NoPoP', requeue: true, mentions: [/status\.agent\.pop_name is empty/, /keeps the taint node\.cloudprovider\.kubernetes\.io\/uninitialized/]},
    {name: 'empty PoP → same as none', input: ready({popName: ''}), reason: 'NoPoP', requeue: true, mentions: [/no PoP/]},
    {name: 'PoP that is no label value', input: ready({popName: 'Falkenstein 1'}), reason: 'InvalidPoP', requeue: true, mentions: [/"Falkenstein 1" is not a valid label value/]},
    {name: 'PoP longer than 63 characters', input: ready({popName: 'p'.repeat(64)}), reason: 'InvalidPoP', requeue: true, mentions: [/at most 63/]},
  ]
  for (const testCase of waits) {
    it(`waits: ${testCase.name} → ${testCase.reason}`, () => {
      const plan = planNodeInit(testCase.input)
      assert.equal(plan.action, 'wait')
      if (plan.action !== 'wait') return
      assert.equal(plan.reason, testCase.reason)
      assert.equal(plan.requeue, testCase.requeue)
      for (const pattern of testCase.mentions) assert.match(plan.message, pattern)
    })
  }

  it('a providerID set by someone else is never overwritten: the rest goes on, with a ProviderIDConflict warning', () => {
    for (const foreign of ['hcloud://4242', `polycrate://other-cluster/worker-1`, `polycrate://${CLUSTER}/worker-2`]) {
      const plan = planNodeInit(ready({node: node({providerID: foreign})}))
      assert.equal(plan.action, 'initialize')
      if (plan.action !== 'initialize') return
      assert.equal(plan.patch.providerID, undefined, foreign)
      assert.deepEqual(plan.patch.labels, regionLabels('fsn1'))
      assert.deepEqual(plan.patch.taints, [])
      assert.equal(plan.warnings.length, 1)
      assert.equal(plan.warnings[0]!.reason, 'ProviderIDConflict')
      assert.ok(plan.warnings[0]!.message.includes(foreign))
    }
  })

  it('the plan does not alias the input taints (the caller may patch them)', () => {
    const input = ready({node: node({taints: [other, uninitialized]})})
    const plan = planNodeInit(input)
    assert.equal(plan.action, 'initialize')
    if (plan.action !== 'initialize') return
    plan.patch.taints[0]!.value = 'changed'
    assert.equal(other.value, 'db')
  })

  it('label values', () => {
    for (const good of ['fsn1', 'eu-central-1', 'a.b_c', 'x', 'p'.repeat(63)]) assert.ok(isLabelValue(good), good)
    for (const bad of ['-fsn1', 'fsn1-', 'a b', 'ümlaut', 'p'.repeat(64), 'a/b']) assert.ok(!isLabelValue(bad), bad)
  })
})
