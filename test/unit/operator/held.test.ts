import assert from 'node:assert/strict'
import {HELD_HEADING, renderHeld} from '../../../src/cli/status-view.js'
import type {KubeObject} from '../../../src/kube/client.js'
import {heldBy} from '../../../src/operator/held.js'

describe('objects held by a finalizer of the operator', () => {
  const ours = new Set(['endpoints.polycrate.io/discovery-cleanup', 'polycrate.io/endpoint-cleanup'])
  const cases: Array<[string, KubeObject['metadata'], string[]]> = [
    ['not being deleted', {finalizers: ['endpoints.polycrate.io/discovery-cleanup']}, []],
    ['deleted, ours on', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['endpoints.polycrate.io/discovery-cleanup']}, ['endpoints.polycrate.io/discovery-cleanup']],
    ['deleted, ours and another', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x.example.com/keep', 'polycrate.io/endpoint-cleanup']}, ['polycrate.io/endpoint-cleanup']],
    ['deleted, only another', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x.example.com/keep']}, []],
    ['deleted, no finalizers', {deletionTimestamp: '2026-01-01T00:00:00Z'}, []],
  ]
  for (const [name, metadata, expected] of cases) it(`${name} → ${JSON.stringify(expected)}`, () => assert.deepEqual(heldBy({metadata}, ours), expected))

  it('renders a table with the age of the deletion and says what lets them go', () => {
    const now = Date.parse('2026-01-01T00:05:00Z')
    const text = renderHeld([{kind: 'Ingress', namespace: 'shop', name: 'web', finalizers: ['endpoints.polycrate.io/discovery-cleanup'], deletingSince: '2026-01-01T00:00:00Z'}], now)
    const lines = text.split('\n')
    assert.equal(lines[0], HELD_HEADING)
    assert.match(lines[2]!, /^\s+KIND\s+NAMESPACE\s+NAME\s+DELETING FOR\s+FINALIZER$/)
    assert.match(lines[3]!, /^\s+Ingress\s+shop\s+web\s+5m\s+endpoints\.polycrate\.io\/discovery-cleanup$/)
    assert.match(text, /polycrate operator uninstall/)
  })
})
