import assert from 'node:assert/strict'
import type {Condition} from '../../../src/crds/schema.js'
import {findStatusCondition, isStatusConditionTrue, setStatusCondition} from '../../../src/kube/conditions.js'

describe('status conditions (as apimachinery meta.SetStatusCondition)', () => {
  const ready = (status: Condition['status'], extra: Partial<Condition> = {}): Condition =>
    ({type: 'Ready', status, reason: 'R', message: 'm', lastTransitionTime: 't0', observedGeneration: 1, ...extra})
  const synced: Condition = {type: 'Synced', status: 'True', reason: 'S', lastTransitionTime: 't0'}

  const cases: Array<{name: string; before: Condition[] | undefined; next: Parameters<typeof setStatusCondition>[1]; after: Condition[]}> = [
    {name: 'no list: the condition, at now', before: undefined, next: {type: 'Ready', status: 'True', reason: 'A'},
      after: [{type: 'Ready', status: 'True', reason: 'A', lastTransitionTime: 'now'}]},
    {name: 'a new type is appended after the others', before: [synced], next: {type: 'Ready', status: 'False', reason: 'A', observedGeneration: 2},
      after: [synced, {type: 'Ready', status: 'False', reason: 'A', observedGeneration: 2, lastTransitionTime: 'now'}]},
    {name: 'a new type with its own lastTransitionTime keeps it', before: [], next: {type: 'Ready', status: 'True', lastTransitionTime: 't9'},
      after: [{type: 'Ready', status: 'True', lastTransitionTime: 't9'}]},
    {name: 'same status: lastTransitionTime kept; reason, message, observedGeneration replaced',
      before: [ready('True'), synced], next: {type: 'Ready', status: 'True', reason: 'B', message: 'new', observedGeneration: 5},
      after: [ready('True', {reason: 'B', message: 'new', observedGeneration: 5}), synced]},
    {name: 'same status: a lastTransitionTime in next does not move it', before: [ready('True')], next: {type: 'Ready', status: 'True', reason: 'R', message: 'm', observedGeneration: 1, lastTransitionTime: 't9'},
      after: [ready('True')]},
    {name: 'same status: what next leaves out is dropped (message, observedGeneration)', before: [ready('True')], next: {type: 'Ready', status: 'True', reason: 'R'},
      after: [{type: 'Ready', status: 'True', reason: 'R', lastTransitionTime: 't0'}]},
    {name: 'status changes: lastTransitionTime moves to now, in place', before: [synced, ready('True')], next: {type: 'Ready', status: 'False', reason: 'C', observedGeneration: 2},
      after: [synced, {type: 'Ready', status: 'False', reason: 'C', observedGeneration: 2, lastTransitionTime: 'now'}]},
    {name: 'status changes to Unknown: moves too', before: [ready('False')], next: {type: 'Ready', status: 'Unknown', reason: 'C'},
      after: [{type: 'Ready', status: 'Unknown', reason: 'C', lastTransitionTime: 'now'}]},
    {name: 'status changes with next\'s own lastTransitionTime: that one', before: [ready('True')], next: {type: 'Ready', status: 'False', lastTransitionTime: 't9'},
      after: [{type: 'Ready', status: 'False', lastTransitionTime: 't9'}]},
    {name: 'same status, the old condition had no lastTransitionTime: now (the field is required)', before: [{type: 'Ready', status: 'True'}], next: {type: 'Ready', status: 'True'},
      after: [{type: 'Ready', status: 'True', lastTransitionTime: 'now'}]},
  ]
  for (const {name, before, next, after} of cases) {
    it(name, () => {
      const frozen = before && structuredClone(before)
      assert.deepEqual(setStatusCondition(before, next, 'now'), after)
      assert.deepEqual(before, frozen, 'the list given is not changed')
    })
  }

  it('findStatusCondition and isStatusConditionTrue read by type', () => {
    const list = [synced, ready('False')]
    assert.equal(findStatusCondition(list, 'Ready'), list[1])
    assert.equal(findStatusCondition(list, 'Valid'), undefined)
    assert.equal(findStatusCondition(undefined, 'Ready'), undefined)
    assert.equal(isStatusConditionTrue(list, 'Synced'), true)
    assert.equal(isStatusConditionTrue(list, 'Ready'), false)
    assert.equal(isStatusConditionTrue(list, 'Valid'), false)
  })
})
