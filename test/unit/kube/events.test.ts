import assert from 'node:assert/strict'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {EventRecorder} from '../../../src/kube/events.js'
import {FakeTimers} from '../../support/fake-timers.js'

const WINDOW = 10 * 60 * 1000

/** A recorder over a fake client that logs `create name` / `patch name count`, and a clock the test moves. */
function make() {
  const calls: string[] = []
  const clock = new FakeTimers()
  const client = {
    create: async (_ref: ResourceRef, body: {metadata: {name: string}}) => { calls.push(`create ${body.metadata.name.split('.')[0]}`) },
    mergePatch: async (ref: ResourceRef, patch: {count: number}) => { calls.push(`patch ${ref.name!.split('.')[0]} ${patch.count}`) },
  } as unknown as KubeClient
  const recorder = new EventRecorder({client, component: 'test', foldWindowMs: WINDOW, clock})
  return {recorder, calls, advance: (ms: number) => clock.stepWall(ms)}
}

const object = (name: string): KubeObject => ({apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace: 'ns', uid: `uid-${name}`}})

describe('EventRecorder', () => {
  it('folds a repeat within the window into a count; after the window a repeat is a new Event', async () => {
    const {recorder, calls, advance} = make()
    await recorder.record(object('a'), 'Warning', 'Bad', 'it is bad')
    advance(WINDOW - 1)
    await recorder.record(object('a'), 'Warning', 'Bad', 'it is bad')
    await recorder.record(object('a'), 'Warning', 'Bad', 'another message')
    advance(WINDOW)
    await recorder.record(object('a'), 'Warning', 'Bad', 'it is bad')
    assert.deepEqual(calls, ['create a', 'patch a 2', 'create a', 'create a'])
  })

  it('forgets what it can no longer fold: distinct events (unique names, varying messages) do not pile up', async () => {
    const {recorder, advance} = make()
    for (let i = 0; i < 50; i++) {
      await recorder.record(object(`app-${i}`), 'Warning', 'APIUnavailable', `retry in ${i} s`)
      advance(WINDOW / 10)
    }
    // 50 events over five windows: only those of the last two windows at most are kept.
    assert.ok(recorder.size <= 20, `kept ${recorder.size}`)
    advance(2 * WINDOW)
    await recorder.record(object('last'), 'Normal', 'Done', 'done')
    assert.equal(recorder.size, 1)
  })
})
