import assert from 'node:assert/strict'
import {frameGroup, summarize} from '../../../bench/cpu-profile-summary.js'

describe('bench/cpu-profile-summary', () => {
  const groups: Array<[string, string, string]> = [
    ['file:///work/main/dist/operator/runtime/informer.js', 'apply', 'ours'],
    ['file:///work/main/src/kube/client.ts', 'request', 'ours'],
    ['file:///work/main/node_modules/zod/v4/core/schemas.js', 'parse', 'dep:zod'],
    ['file:///work/main/node_modules/@kubernetes/client-node/dist/watch.js', 'watch', 'dep:@kubernetes/client-node'],
    ['node:internal/streams/readable', 'push', 'node'],
    ['', '(garbage collector)', '(garbage collector)'],
    ['', '(idle)', '(idle)'],
    ['', 'JSONParse', 'node (native)'],
  ]
  for (const [url, name, group] of groups) {
    it(`${name} ${url || '(no url)'} → ${group}`, () => assert.equal(frameGroup(url, name), group))
  }

  it('charges each sample\'s time delta to the frame it hit, and sums frames by group', () => {
    const frame = (id: number, functionName: string, url: string, lineNumber = 0) => ({id, callFrame: {functionName, url, lineNumber}})
    const summary = summarize({
      nodes: [frame(1, '(root)', ''), frame(2, 'reconcile', 'file:///p/dist/operator/sync/reconciler.js', 9), frame(3, 'parse', 'file:///p/node_modules/zod/index.js'), frame(4, '(garbage collector)', '')],
      startTime: 0, endTime: 10_000,
      samples: [2, 3, 2, 4, 2],
      timeDeltas: [1000, 2000, 3000, 500, 500],
    })
    assert.equal(summary.totalMs, 7)
    assert.deepEqual(summary.frames.map(({frame, group, ms}) => [frame, group, ms]), [
      ['reconcile dist/operator/sync/reconciler.js:10', 'ours', 4.5],
      ['parse node_modules/zod/index.js:1', 'dep:zod', 2],
      ['(garbage collector)', '(garbage collector)', 0.5],
    ])
    assert.deepEqual(summary.groups.map(({group, share}) => [group, Math.round(share * 100)]), [['ours', 64], ['dep:zod', 29], ['(garbage collector)', 7]])
  })
})
