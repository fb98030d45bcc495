import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient, type ResourceRef} from '../../../src/kube/client.js'
import {silentLogger} from '../../../src/lib/logger.js'
import {alreadyDone, describeFailure, execute, failureError, statusWrite, type ExecuteContext, type Failure} from '../../../src/operator/discovery/executor.js'
import {AppliedMemo, crKey, problemsToReport, ReportedProblems, SeenDeletions} from '../../../src/operator/discovery/memory.js'
import type {Action, CurrentObject, CurrentSource, DesiredObject, DesiredState, ObjectRef} from '../../../src/operator/discovery/plan.js'
import {DiscoveryReconciler, type DiscoveryReconcilerOptions} from '../../../src/operator/discovery/reconciler.js'
import {FakeTimers} from '../../support/fake-timers.js'
import {validateOperatorConfig, type OperatorConfig} from '../../../src/operator/config/operator-config.js'
import {artifactDiscovery} from '../../../src/operator/kinds/artifact/artifact.discovery.js'
import {endpointDiscovery} from '../../../src/operator/kinds/endpoint/endpoint.discovery.js'
import {k8sAppDiscovery} from '../../../src/operator/kinds/k8sapp/k8sapp.discovery.js'

const ingress = (name: string): ObjectRef => ({kind: 'Ingress', namespace: 'ns', name})
const desiredObject = (name: string, extra: Partial<DesiredObject> = {}): DesiredObject => ({name, namespace: 'ns', labels: {a: '1'}, spec: {x: name}, source: ingress(name), ...extra})
const current = (name: string, extra: Partial<CurrentObject> = {}): CurrentObject => ({
  name, namespace: 'ns', resourceVersion: '5', labels: {a: '1'}, annotations: {}, ownerUids: [], finalizers: [], deleting: false, spec: {x: name}, ...extra,
})
const source = (name: string): CurrentSource => ({ref: ingress(name), resourceVersion: '3', finalizers: ['other'], deleting: false})
const conflict = new KubeApiError(409, 'Conflict', 'modified')
const notFound = new KubeApiError(404, 'NotFound', 'gone')

describe('discovery: the parts of a running discovery', () => {
  describe('problemsToReport (once per change of a source\'s problems)', () => {
    const state = (problems: Array<[string, string]>, sources = ['a', 'b']): DesiredState => ({
      objects: [], sources: sources.map((name) => ({ref: ingress(name), managed: true})),
      problems: problems.map(([name, reason]) => ({source: ingress(name), reason, message: `${reason}!`})),
    })
    const fingerprint = (reasons: string[]) => JSON.stringify(reasons.map((reason) => [undefined, reason, `${reason}!`]))
    const cases: Array<[string, DesiredState, Record<string, string>, string[]]> = [
      ['nothing reported, no problems: nothing', state([]), {}, []],
      ['a new problem: its source', state([['a', 'Bad']]), {}, ['Ingress/ns/a']],
      ['the same problems again: nothing', state([['a', 'Bad']]), {'Ingress/ns/a': fingerprint(['Bad'])}, []],
      ['problems gone: the source once more (an empty set)', state([]), {'Ingress/ns/a': fingerprint(['Bad'])}, ['Ingress/ns/a']],
      ['a source twice in one state: once', state([['a', 'Bad']], ['a', 'a']), {}, ['Ingress/ns/a']],
    ]
    for (const [name, desired, reported, keys] of cases) {
      it(name, () => assert.deepEqual(problemsToReport(desired, new Map(Object.entries(reported))).map((change) => change.key), keys))
    }

    it('ReportedProblems: Events once; again after forget', async () => {
      const events: string[] = []
      const recorder = {record: async (object: {metadata?: {name?: string}}, _type: string, reason: string) => { events.push(`${object.metadata?.name} ${reason}`) }}
      const reported = new ReportedProblems()
      const sourceObject = (ref: ObjectRef) => ({metadata: {name: ref.name}})
      await reported.report(recorder, state([['a', 'Bad']]), sourceObject)
      await reported.report(recorder, state([['a', 'Bad']]), sourceObject)
      reported.forget(ingress('a'))
      await reported.report(recorder, state([['a', 'Bad']]), sourceObject)
      assert.deepEqual(events, ['a Bad', 'a Bad'])
    })
  })

  it('SeenDeletions: remembered for the TTL, dropped after it', () => {
    const seen = new SeenDeletions(1000)
    seen.see(ingress('a'), 0)
    seen.see(ingress('b'), 500)
    assert.equal(seen.has(ingress('a')), true)
    seen.see(ingress('c'), 1001) // prunes a (older than 1000 ms), keeps b
    assert.deepEqual([seen.has(ingress('a')), seen.has(ingress('b')), seen.has(ingress('c'))], [false, true, true])
  })

  it('a source deletion is remembered only for a kind CRs come from: deleted pods, claims and gateways are not kept', () => {
    const config = (validateOperatorConfig({}) as {config: OperatorConfig}).config
    const declarations = [k8sAppDiscovery(), artifactDiscovery, endpointDiscovery] as Array<Pick<ReturnType<typeof k8sAppDiscovery>, 'name' | 'settings' | 'sources'>>
    const remembered: string[] = []
    for (const declaration of declarations) {
      const seenDeleted = new SeenDeletions()
      const reconciler = new DiscoveryReconciler({seenDeleted, reported: new ReportedProblems(), clock: new FakeTimers()} as unknown as DiscoveryReconcilerOptions<unknown>)
      for (const source of declaration.sources(declaration.settings(config, () => true))) {
        const object = {metadata: {namespace: 'ns', name: `gone-${source.id}`}}
        reconciler.sourceDeleted(source, object)
        if (seenDeleted.has({kind: source.kind, namespace: 'ns', name: `gone-${source.id}`})) remembered.push(`${declaration.name}: ${source.kind}`)
      }
    }
    // What a CR of each names (targetSource): a meta Secret or a namespace, an Artifact, an Ingress or an HTTPRoute.
    assert.deepEqual(remembered, ['k8sapp-discovery: Secret', 'k8sapp-discovery: Namespace', 'artifact-discovery: Artifact', 'endpoint-discovery: Ingress', 'endpoint-discovery: HTTPRoute'])
  })

  describe('AppliedMemo', () => {
    const memo = new AppliedMemo()
    memo.remember(desiredObject('x'), '4')
    const cases: Array<[string, () => boolean, boolean]> = [
      ['alreadyApplied: same object over the same version', () => memo.alreadyApplied(desiredObject('x'), current('x', {resourceVersion: '4'})), true],
      ['alreadyApplied: the cache moved on', () => memo.alreadyApplied(desiredObject('x'), current('x', {resourceVersion: '5'})), false],
      ['alreadyApplied: another object', () => memo.alreadyApplied(desiredObject('x', {spec: {x: 'other'}}), current('x', {resourceVersion: '4'})), false],
      ['isEcho: the cache shows what we applied', () => memo.isEcho(crKey(desiredObject('x')), () => current('x')), true],
      ['isEcho: not while it is being deleted', () => memo.isEcho(crKey(desiredObject('x')), () => current('x', {deleting: true})), false],
      ['isEcho: someone changed the spec', () => memo.isEcho(crKey(desiredObject('x')), () => current('x', {spec: {x: 'edited'}})), false],
      ['isEcho: never applied', () => memo.isEcho('ns/y', () => current('y')), false],
    ]
    for (const [name, ask, answer] of cases) it(`${name} → ${answer}`, () => assert.equal(ask(), answer))
    it('forget: no echo any more', () => {
      const forgetting = new AppliedMemo()
      forgetting.remember(desiredObject('x'), '4')
      forgetting.forget('ns/x')
      assert.equal(forgetting.isEcho('ns/x', () => current('x')), false)
    })
  })

  describe('executor decisions', () => {
    const failure = (error: unknown): Failure => ({error, message: (error as Error).message})
    const errors: Array<[string, Failure[], string | undefined]> = [
      ['none failed → nothing thrown', [], undefined],
      ['only conflicts → the first conflict (retried soon)', [failure(conflict), failure(conflict)], 'modified'],
      ['anything else → one error naming all', [failure(conflict), failure(new Error('boom'))], '2 of 7 discovery writes failed: modified; boom'],
    ]
    for (const [name, failures, message] of errors) it(name, () => assert.equal((failureError(failures, 7) as Error | undefined)?.message, message))

    const done: Array<[string, Action, unknown, boolean]> = [
      ['delete of a CR gone already', {type: 'delete', target: current('x'), why: 'w'}, notFound, true],
      ['sync finalizer of a CR gone already', {type: 'releaseSyncFinalizer', target: current('x')}, notFound, true],
      ['source finalizer of a source gone already', {type: 'removeSourceFinalizer', source: source('x'), finalizer: 'f'}, notFound, true],
      ['status of a CR deleted meanwhile', {type: 'applyStatus', object: desiredObject('x')}, notFound, true],
      ['orphan mark of a CR deleted meanwhile', {type: 'markOrphan', target: current('x'), since: 't'}, notFound, true],
      ['orphan mark cleared on a CR deleted meanwhile', {type: 'clearOrphanMark', target: current('x')}, notFound, true],
      ['status → 409 is a failure', {type: 'applyStatus', object: desiredObject('x')}, conflict, false],
      ['adding a source finalizer → 404 is a failure', {type: 'addSourceFinalizer', source: source('x'), finalizer: 'f'}, notFound, false],
      ['apply → 404 is a failure', {type: 'apply', object: desiredObject('x')}, notFound, false],
      ['delete → 409 is a failure', {type: 'delete', target: current('x'), why: 'w'}, conflict, false],
    ]
    for (const [name, action, error, answer] of done) it(`alreadyDone: ${name} → ${answer}`, () => assert.equal(alreadyDone(action, error), answer))

    const statusWrites: Array<[string, Record<string, unknown> | undefined, ReturnType<typeof statusWrite>]> = [
      ['a field with a value → apply', {last_seen_at: 't'}, {apply: {last_seen_at: 't'}}],
      ['one set, one going → apply (status stays an object)', {node_ready: true, last_seen_at: undefined}, {apply: {node_ready: true, last_seen_at: undefined}}],
      ['every field going → a merge patch of nulls (an apply would leave status: null)', {last_seen_at: undefined}, {mergePatch: {last_seen_at: null}}],
      ['no fields → an empty merge patch', {}, {mergePatch: {}}],
    ]
    for (const [name, status, expected] of statusWrites) it(`statusWrite: ${name}`, () => assert.deepEqual(statusWrite(status), expected))

    const described: Array<[Action, Partial<Failure>]> = [
      [{type: 'apply', object: desiredObject('x')}, {source: ingress('x'), message: 'Could not write Thing x for this Ingress: e'}],
      [{type: 'markOrphan', target: current('x'), since: 't'}, {target: current('x'), message: 'Could not update or delete Thing x: e'}],
      [{type: 'addSourceFinalizer', source: source('x'), finalizer: 'f'}, {source: ingress('x'), message: 'Could not add the finalizer f: e'}],
      [{type: 'migrateSource', source: ingress('x'), patch: {metadata: {}}, description: 'move the label'}, {source: ingress('x'), message: 'Could not move the label: e'}],
    ]
    for (const [action, expected] of described) {
      it(`describeFailure: ${action.type}`, () => {
        const {error: _error, ...rest} = describeFailure(action, new Error('e'), 'Thing')
        assert.deepEqual(rest, expected)
      })
    }
  })

  describe('execute (fake client)', () => {
    const make = (fail: (ref: ResourceRef) => unknown = () => undefined) => {
      const calls: string[] = []
      const written: string[] = []
      const record = (verb: string) => async (ref: ResourceRef) => {
        calls.push(`${verb} ${ref.plural}/${ref.name}${ref.subresource ? `/${ref.subresource}` : ''}`)
        const error = fail(ref)
        if (error) throw error
        return {metadata: {resourceVersion: '9'}}
      }
      const client = {mergePatch: record('patch'), apply: record('apply'), delete: record('delete')} as unknown as KubeClient
      const context: ExecuteContext = {
        client, signal: new AbortController().signal, kind: 'Thing', syncFinalizer: 'sync',
        targetResource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'things'},
        sourceResource: (ref) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ref.namespace, name: ref.name}),
        onApplied: (object, before) => written.push(`applied ${object.name} over ${before}`),
        onWritten: (object, before, after) => written.push(`written ${object.name} ${before} → ${after}`),
        currentVersion: () => '5',
        logger: silentLogger,
      }
      return {calls, written, context}
    }
    const plan: Action[] = [
      {type: 'removeSourceFinalizer', source: source('old'), finalizer: 'f'},
      {type: 'applyStatus', object: desiredObject('x', {status: {ready: true}})},
      {type: 'delete', target: current('gone'), why: 'w'},
      {type: 'apply', object: desiredObject('x')},
      {type: 'addSourceFinalizer', source: source('x'), finalizer: 'f'},
    ]

    it('phases: source finalizers, then CR writes, then status and releases', async () => {
      const {calls, written, context} = make()
      assert.deepEqual(await execute(plan, context), [])
      assert.deepEqual(calls, ['patch ingresses/x', 'delete things/gone', 'apply things/x', 'patch ingresses/old', 'apply things/x/status'])
      assert.deepEqual(written, ['applied x over 5', 'written x 5 → 9', 'written x 5 → 9'])
    })

    it('a status whose every field goes is a merge patch of the status subresource, not an apply', async () => {
      const {calls, written, context} = make()
      assert.deepEqual(await execute([{type: 'applyStatus', object: desiredObject('x', {status: {last_seen_at: undefined}})}], context), [])
      assert.deepEqual(calls, ['patch things/x/status'])
      assert.deepEqual(written, ['written x 5 → 9'])
    })

    it('a failure is collected and holds back nothing; a 404 on delete is none', async () => {
      const {calls, context} = make((ref) => (ref.plural === 'ingresses' && ref.name === 'x' ? conflict : ref.name === 'gone' ? notFound : undefined))
      const failures = await execute(plan, context)
      assert.deepEqual(failures.map((f) => f.message), ['Could not add the finalizer f: modified'])
      assert.equal(calls.length, 5)
    })
  })
})
