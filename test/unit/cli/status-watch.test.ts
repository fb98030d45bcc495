import assert from 'node:assert/strict'
import type {StatusReport} from '../../../src/cli/status-view.js'
import {CoalescingRefresh, relevantChange, reportKey, statusFrame, statusWatchResources} from '../../../src/cli/status-watch.js'
import {allCrds} from '../../../src/crds/index.js'

const report = (age: string, phase = 'Synced'): StatusReport => ({
  cluster: 'https://k8s',
  operatorConfigs: [],
  resources: [{kind: 'Endpoint', namespace: 'a', name: 'e', columns: {}, phase, syncStatus: 'synced', apiID: '1', age, creationTimestamp: '2026-12-01T00:00:00Z'}],
  held: [],
})

describe('status --watch: what it watches and when it prints', () => {
  it('every polycrate.io kind (those not shown: only deletions, for the held list), Ingress, HTTPRoute, Service', () => {
    const endpoint = allCrds.find((def) => def.kind === 'Endpoint')!
    const watched = statusWatchResources([endpoint], 'apps')
    const byKind = new Map(watched.map((entry) => [entry.kind, entry]))
    assert.equal(byKind.get('Endpoint')!.deletionsOnly, undefined)
    assert.equal(byKind.get('OperatorConfig')!.deletionsOnly, undefined, 'the OperatorConfig is always shown')
    assert.equal(byKind.get('Host')!.deletionsOnly, true)
    for (const kind of ['Ingress', 'HTTPRoute', 'Service']) assert.equal(byKind.get(kind)!.deletionsOnly, true, kind)
    assert.equal(byKind.get('Endpoint')!.resource.namespace, 'apps')
    assert.equal(byKind.get('Artifact')!.resource.namespace, undefined, 'cluster-scoped')
    assert.equal(statusWatchResources([endpoint]).find((entry) => entry.kind === 'Ingress')!.resource.namespace, undefined)
  })

  it('relevantChange: any change of a shown kind; of the others only deletions', () => {
    const shown = {kind: 'Endpoint', resource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints'}}
    const source = {...shown, kind: 'Ingress', deletionsOnly: true}
    const plain = {metadata: {name: 'x'}}
    const deleting = {metadata: {name: 'x', deletionTimestamp: '2026-12-05T00:00:00Z'}}
    assert.equal(relevantChange(shown, plain, plain), true)
    assert.equal(relevantChange(source, undefined, plain), false)
    assert.equal(relevantChange(source, plain, plain), false)
    assert.equal(relevantChange(source, plain, deleting), true)
    assert.equal(relevantChange(source, deleting, undefined), true, 'a held object that finally goes')
  })

  it('reportKey ignores ages, not phases', () => {
    assert.equal(reportKey(report('5s')), reportKey(report('2m')))
    assert.notEqual(reportKey(report('5s')), reportKey(report('5s', 'Error')))
  })

  it('frames: NDJSON, YAML documents, the table cleared on a terminal, followed by a blank line elsewhere', () => {
    const render = {table: () => 'TABLE', yaml: () => 'cluster: x\n'}
    const base = {now: Date.parse('2026-12-05T08:30:00Z'), colour: false}
    const json = statusFrame(report('1s'), {...base, format: 'json', terminal: true}, render)
    assert.equal(json.split('\n').length, 2, 'one line')
    assert.deepEqual(JSON.parse(json), report('1s'))
    assert.equal(statusFrame(report('1s'), {...base, format: 'yaml', terminal: false}, render), '---\ncluster: x\n')
    assert.equal(statusFrame(report('1s'), {...base, format: 'table', terminal: false}, render), 'TABLE\n\n')
    assert.equal(statusFrame(report('1s'), {...base, format: 'table', terminal: true}, render),
      '\u001B[H\u001B[2JTABLE\n\nWatching for changes (as of 2026-12-05 08:30:00 UTC); Ctrl-C to stop.\n')
  })
})

describe('CoalescingRefresh: triggers during a read make one more read, not one each', () => {
  it('three triggers during a read → two reads in all', async () => {
    let reads = 0
    let release!: () => void
    const refresh = new CoalescingRefresh(async () => {
      reads++
      if (reads === 1) await new Promise<void>((resolve) => (release = resolve))
    })
    refresh.trigger()
    refresh.trigger()
    refresh.trigger()
    refresh.trigger()
    assert.equal(reads, 1)
    release()
    await refresh.settled()
    assert.equal(reads, 2)
    refresh.trigger()
    await refresh.settled()
    assert.equal(reads, 3)
  })
})
