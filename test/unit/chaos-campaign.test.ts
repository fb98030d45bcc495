import assert from 'node:assert/strict'
import {crashPoints, faultFor} from '../support/chaos/campaign.js'
import {Prng} from '../support/chaos/prng.js'
import {diffStates, normalise} from '../support/chaos/runner.js'
import {workloads} from '../support/chaos/workloads.js'

describe('chaos campaign: decisions and the oracle\'s normalisation', () => {
  it('the PRNG is a pure function of its seed', () => {
    const a = new Prng(42)
    const b = new Prng(42)
    const first = Array.from({length: 5}, () => a.next())
    assert.deepEqual(Array.from({length: 5}, () => b.next()), first)
    assert.notDeepEqual(Array.from({length: 5}, () => new Prng(43).next()), first)
    assert.ok(first.every((x) => x >= 0 && x < 1))
  })

  it('crash points: every write point of the reference, round robin over resources, leases and Events last', () => {
    const points = crashPoints(['core/events#1', 'polycrate.io/endpoints#1', 'polycrate.io/endpoints#2', 'networking.k8s.io/ingresses#1'])
    assert.deepEqual(points, [['networking.k8s.io/ingresses', 1], ['polycrate.io/endpoints', 1], ['core/events', 1], ['polycrate.io/endpoints', 2]])
  })

  it('faults: the same (seed, workload, n) gives the same fault; crash points, and another fault in cases 2, 5, 8, …', () => {
    const workload = workloads.find((w) => w.name === 'endpoint')!
    const points = crashPoints(['polycrate.io/endpoints#1', 'polycrate.io/endpoints#2', 'polycrate.io/endpoints#3'])
    const lists = ['polycrate.io/endpoints', 'networking.k8s.io/ingresses']
    assert.deepEqual(faultFor(9, workload, 3, points, lists), faultFor(9, workload, 3, points, lists))
    assert.deepEqual(faultFor(9, workload, 1, points, lists), {kind: 'crash', resource: 'polycrate.io/endpoints', k: 1})
    assert.notEqual(faultFor(9, workload, 2, points, lists).kind, 'crash')
    assert.deepEqual(faultFor(9, workload, 3, points, lists), {kind: 'crash', resource: 'polycrate.io/endpoints', k: 2})
    assert.deepEqual(faultFor(9, workload, 4, points, lists), {kind: 'crash', resource: 'polycrate.io/endpoints', k: 3})
    assert.notEqual(faultFor(9, workload, 5, points, lists).kind, 'crash')
    assert.notEqual(faultFor(9, workload, 6, points, lists).kind, 'crash', 'every crash point used: other faults')
  })

  it('normalise drops identities and times, replaces the case names, and keeps the rest', () => {
    const value = normalise({id: 'x', name: 'ns-1-p7-a', created_at: 't', k8s_cluster: '3f2a0c1e-0000-4000-8000-000000000000', spec: {uid: 'u', hosts: ['p7-a.example.com'], note: 'see 3f2a0c1e-0000-4000-8000-000000000000'}},
      [['ns-1', '<ns>'], ['p7', '<P>']])
    assert.deepEqual(value, {name: '<ns>-<P>-a', spec: {hosts: ['<P>-a.example.com'], note: 'see <id>'}})
  })

  it('normalise replaces load balancer instance names (a + the uid without dashes, 32 characters) and the simulator\'s S3 keys', () => {
    const value = normalise({name: 'a0123456789abcdef0123456789abcde', credential: {api_user: `SIMS3AK${'0A'.repeat(10)}`}, note: `sim_s3sk_${'0a'.repeat(20)}`, other: 'a0123'},
      [])
    assert.deepEqual(value, {credential: {api_user: '<s3-key>'}, name: '<lb-name>', note: '<s3-key>', other: 'a0123'})
  })

  it('diffStates names missing, extra and differing objects', () => {
    assert.deepEqual(diffStates([{key: 'a', value: 1}], [{key: 'a', value: 1}]), [])
    const lines = diffStates([{key: 'a', value: 1}, {key: 'b', value: 2}], [{key: 'a', value: 3}, {key: 'c', value: 4}])
    assert.deepEqual(lines.map((l) => l.split(' ')[0]), ['differs', 'missing', 'extra'])
    assert.deepEqual(diffStates([{key: 'o', value: {a: 1, b: {c: 2}, d: 'same'}}], [{key: 'o', value: {a: 1, b: {c: 3}, d: 'same', e: true}}]),
      ['differs o: b: expected {"c":2} got {"c":3}; e: expected undefined got true'])
  })
})
