import assert from 'node:assert/strict'
import {annotations} from '../../../src/operator/conventions.js'
import {
  desiredOfOneSource,
  planDiscovery,
  sameRef,
  statusDiffers,
  upToDate,
  type Action,
  type CurrentObject,
  type CurrentSource,
  type DesiredObject,
  type DesiredState,
  type ObjectRef,
  type PlanInput,
  type SourceDecision,
  type SourceKnowledge,
} from '../../../src/operator/discovery/plan.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers: small factories for the planner's inputs

const SOURCE_FINALIZER = 'test.polycrate.io/source-cleanup'
const SYNC_FINALIZER = 'test.polycrate.io/sync-cleanup'
const NOW = Date.parse('2025-06-01T12:00:00.000Z')
const THRESHOLD = 10 * 60_000
const iso = (ms: number) => new Date(ms).toISOString()

/** An Ingress (whose kind has a source finalizer) or a Node (whose kind has none). */
function ref(name: string, kind = 'Ingress'): ObjectRef {
  return {kind, apiVersion: kind === 'Ingress' ? 'networking.k8s.io/v1' : 'v1', namespace: kind === 'Ingress' ? 'ns' : undefined, name, uid: `uid-${name}`}
}

/** A CR discovery wants, from the source `ing` unless told otherwise. */
function want(name: string, overrides: Partial<DesiredObject> = {}): DesiredObject {
  const source = overrides.source ?? ref('ing')
  return {
    name,
    namespace: 'ns',
    labels: {polycrate_discovered: 'true', app: name},
    annotations: {note: `for ${name}`},
    ownerReferences: [{apiVersion: source.apiVersion ?? 'v1', kind: source.kind, name: source.name, uid: source.uid ?? ''}],
    spec: {host: `${name}.example.com`, port: 443},
    source,
    ...overrides,
  }
}

/** The cached CR exactly as `wanted` would make it (plus whatever `overrides` changes). */
function have(wanted: DesiredObject, overrides: Partial<CurrentObject> = {}): CurrentObject {
  return {
    name: wanted.name,
    namespace: wanted.namespace,
    resourceVersion: '1',
    labels: {...wanted.labels},
    annotations: {...wanted.annotations},
    ownerUids: (wanted.ownerReferences ?? []).map((owner) => owner.uid),
    finalizers: [],
    deleting: false,
    spec: structuredClone(wanted.spec),
    ...(wanted.status ? {status: structuredClone(wanted.status)} : {}),
    source: wanted.source,
    ...overrides,
  }
}

/** A cached CR nobody wants any more (its source `ing` by default). */
function leftover(name: string, overrides: Partial<CurrentObject> = {}): CurrentObject {
  return have(want(name), overrides)
}

function sourceState(name: string, overrides: Partial<CurrentSource> & {kind?: string} = {}): CurrentSource {
  const {kind, ...rest} = overrides
  return {ref: ref(name, kind), resourceVersion: '7', finalizers: [], deleting: false, ...rest}
}

interface Scenario {
  objects?: DesiredObject[]
  sources?: SourceDecision[]
  current?: CurrentObject[]
  handingOver?: CurrentObject[]
  /** Cached source states, by source name. */
  cached?: CurrentSource[]
  /** sourceKnowledge by source name (default 'unknown'). */
  knowledge?: Record<string, SourceKnowledge>
  sync?: PlanInput['syncFinalizer']
  stale?: Partial<PlanInput['stale']>
  alreadyApplied?: PlanInput['alreadyApplied']
}

function input(scenario: Scenario = {}): PlanInput {
  const cached = scenario.cached ?? []
  return {
    desired: {objects: scenario.objects ?? [], problems: [], sources: scenario.sources ?? []},
    current: scenario.current ?? [],
    handingOver: scenario.handingOver,
    sourceState: (r) => cached.find((state) => sameRef(state.ref, r)),
    sourceKnowledge: (r) => scenario.knowledge?.[r.name] ?? 'unknown',
    sourceFinalizer: (kind) => (kind === 'Ingress' ? SOURCE_FINALIZER : undefined),
    syncFinalizer: scenario.sync,
    stale: {enabled: true, thresholdMs: THRESHOLD, ...scenario.stale},
    now: NOW,
    alreadyApplied: scenario.alreadyApplied,
  }
}

const managed = (name: string, migration?: SourceDecision['migration']): SourceDecision => ({ref: ref(name), managed: true, ...(migration ? {migration} : {})})
const unmanaged = (name: string, kind?: string): SourceDecision => ({ref: ref(name, kind), managed: false})

/** One short line per action, so a table row can say exactly which actions it expects (in order). */
function describeAction(action: Action): string {
  switch (action.type) {
    case 'apply':
    case 'applyStatus':
      return `${action.type} ${action.object.namespace ?? ''}/${action.object.name}`
    case 'delete':
    case 'clearOrphanMark':
    case 'releaseSyncFinalizer':
      return `${action.type} ${action.target.namespace ?? ''}/${action.target.name}`
    case 'markOrphan':
      return `markOrphan ${action.target.namespace ?? ''}/${action.target.name} since ${action.since}`
    case 'addSourceFinalizer':
    case 'removeSourceFinalizer':
      return `${action.type} ${action.source.ref.kind}/${action.source.ref.name} ${action.finalizer}`
    case 'migrateSource':
      return `migrateSource ${action.source.kind}/${action.source.name}`
  }
}

function plan(scenario: Scenario): {actions: string[]; requeueAfterMs?: number; raw: Action[]} {
  const result = planDiscovery(input(scenario))
  return {actions: result.actions.map(describeAction), requeueAfterMs: result.requeueAfterMs, raw: result.actions}
}

const a = want('a')
const b = want('b')

// ---------------------------------------------------------------------------------------------------------------

describe('discovery plan: sameRef', () => {
  const base: ObjectRef = {kind: 'Ingress', namespace: 'ns', name: 'web'}
  const rows: Array<[string, ObjectRef, boolean]> = [
    ['the same kind, namespace and name', {kind: 'Ingress', namespace: 'ns', name: 'web'}, true],
    ['apiVersion and uid do not matter', {kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', namespace: 'ns', name: 'web', uid: 'u-1'}, true],
    ['another kind', {kind: 'HTTPRoute', namespace: 'ns', name: 'web'}, false],
    ['another name', {kind: 'Ingress', namespace: 'ns', name: 'web2'}, false],
    ['another namespace', {kind: 'Ingress', namespace: 'other', name: 'web'}, false],
    ['no namespace vs a namespace', {kind: 'Ingress', name: 'web'}, false],
  ]
  for (const [what, other, expected] of rows) {
    it(`${what} → ${expected}`, () => {
      assert.equal(sameRef(base, other), expected)
      assert.equal(sameRef(other, base), expected, 'symmetric')
    })
  }

  it('no namespace equals the empty namespace (cluster-scoped sources)', () => {
    assert.equal(sameRef({kind: 'Node', name: 'n1'}, {kind: 'Node', namespace: '', name: 'n1'}), true)
  })
})

describe('discovery plan: upToDate', () => {
  const wanted = want('a')
  const rows: Array<[string, CurrentObject | undefined, DesiredObject & {finalizers?: string[]}, boolean]> = [
    ['no cached CR', undefined, wanted, false],
    ['exactly what would be applied', have(wanted), wanted, true],
    ['a CR being deleted', have(wanted, {deleting: true}), wanted, false],
    ['a label missing', have(wanted, {labels: {polycrate_discovered: 'true'}}), wanted, false],
    ['a label with another value', have(wanted, {labels: {...wanted.labels, app: 'other'}}), wanted, false],
    ['extra labels someone else set', have(wanted, {labels: {...wanted.labels, team: 'x'}}), wanted, true],
    ['an annotation missing', have(wanted, {annotations: {}}), wanted, false],
    ['an annotation with another value', have(wanted, {annotations: {note: 'edited'}}), wanted, false],
    ['extra annotations someone else set', have(wanted, {annotations: {...wanted.annotations, [annotations.orphanedSince]: iso(NOW)}}), wanted, true],
    ['another owner', have(wanted, {ownerUids: ['uid-other']}), wanted, false],
    ['an extra owner someone else added (owners, like labels, must include ours)', have(wanted, {ownerUids: ['uid-ing', 'uid-other']}), wanted, true],
    ['no owner while one is wanted', have(wanted, {ownerUids: []}), wanted, false],
    ['the same owners in another order', have(want('a', {ownerReferences: [
      {apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u1'}, {apiVersion: 'v1', kind: 'Y', name: 'y', uid: 'u2'},
    ]}), {ownerUids: ['u2', 'u1']}), want('a', {ownerReferences: [
      {apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u1'}, {apiVersion: 'v1', kind: 'Y', name: 'y', uid: 'u2'},
    ]}), true],
    ['another spec', have(wanted, {spec: {host: 'a.example.com', port: 80}}), wanted, false],
    ['a spec field more in the cache', have(wanted, {spec: {host: 'a.example.com', port: 443, extra: 1}}), wanted, false],
    ['a spec with the same fields in another order', have(wanted, {spec: {port: 443, host: 'a.example.com'}}), wanted, true],
    ['an undefined spec field is as good as a missing one', have(wanted), {...wanted, spec: {host: 'a.example.com', port: 443, path: undefined}}, true],
    ['a wanted finalizer missing', have(wanted), {...wanted, finalizers: [SYNC_FINALIZER]}, false],
    ['the wanted finalizer present (among others)', have(wanted, {finalizers: ['other', SYNC_FINALIZER]}), {...wanted, finalizers: [SYNC_FINALIZER]}, true],
    ['a status difference does not count (status is applied separately)', have(wanted, {status: {ready: false}}), {...wanted, status: {ready: true}}, true],
  ]
  for (const [what, current, wantedObject, expected] of rows) {
    it(`${what} → ${expected}`, () => assert.equal(upToDate(current, wantedObject), expected))
  }
})

describe('discovery plan: statusDiffers', () => {
  const rows: Array<[string, Record<string, unknown> | undefined, Record<string, unknown> | undefined, boolean]> = [
    ['no discovery-owned status', {ready: true}, undefined, false],
    ['no discovery-owned status and no cached CR', undefined, undefined, false],
    ['no cached status yet', undefined, {ready: true}, true],
    ['equal', {ready: true}, {ready: true}, false],
    ['a field differs', {ready: false}, {ready: true}, true],
    ['a field is missing in the cache', {}, {ready: true}, true],
    ['fields discovery does not own differ', {ready: true, phase: 'Healthy', lastCheck: 'x'}, {ready: true}, false],
    ['nested values are compared deeply', {addresses: [{type: 'InternalIP', address: '10.0.0.1'}]}, {addresses: [{type: 'InternalIP', address: '10.0.0.1'}]}, false],
    ['a nested value differs', {addresses: [{type: 'InternalIP', address: '10.0.0.1'}]}, {addresses: [{type: 'InternalIP', address: '10.0.0.2'}]}, true],
    ['an undefined wanted field equals a missing one', {}, {reason: undefined}, false],
  ]
  for (const [what, cached, wanted, expected] of rows) {
    it(`${what} → ${expected}`, () => {
      const object = want('a', wanted ? {status: wanted} : {})
      const current = cached === undefined ? undefined : have(want('a'), {status: cached})
      assert.equal(statusDiffers(current, object), expected)
    })
  }

  it('no cached CR at all while a status is wanted → differs', () => {
    assert.equal(statusDiffers(undefined, want('a', {status: {ready: true}})), true)
  })
})

describe('discovery plan: planDiscovery (table)', () => {
  interface Row {
    name: string
    scenario: Scenario
    actions: string[]
    requeueAfterMs?: number
  }
  const orphanedAt = (ms: number) => ({[annotations.orphanedSince]: iso(ms)})
  const rows: Row[] = [
    // ---- desired objects → apply / applyStatus
    {name: 'nothing desired, nothing cached → nothing to do', scenario: {}, actions: []},
    {name: 'a desired CR that is missing → apply', scenario: {objects: [a]}, actions: ['apply ns/a']},
    {name: 'a desired CR that is up to date → no action', scenario: {objects: [a], current: [have(a)]}, actions: []},
    {name: 'a different spec → apply', scenario: {objects: [a], current: [have(a, {spec: {host: 'old'}})]}, actions: ['apply ns/a']},
    {name: 'a different label → apply', scenario: {objects: [a], current: [have(a, {labels: {...a.labels, app: 'old'}})]}, actions: ['apply ns/a']},
    {name: 'different owners → apply', scenario: {objects: [a], current: [have(a, {ownerUids: ['uid-someone-else']})]}, actions: ['apply ns/a']},
    {name: 'a missing annotation → apply', scenario: {objects: [a], current: [have(a, {annotations: {}})]}, actions: ['apply ns/a']},
    {
      name: 'sync enabled and the CR lacks the sync finalizer → apply',
      scenario: {objects: [a], current: [have(a)], sync: {name: SYNC_FINALIZER, enabled: true}},
      actions: ['apply ns/a'],
    },
    {
      name: 'sync enabled and the CR has the sync finalizer → no action',
      scenario: {objects: [a], current: [have(a, {finalizers: [SYNC_FINALIZER]})], sync: {name: SYNC_FINALIZER, enabled: true}},
      actions: [],
    },
    {
      name: 'sync disabled: a CR without the sync finalizer is up to date',
      scenario: {objects: [a], current: [have(a)], sync: {name: SYNC_FINALIZER, enabled: false}},
      actions: [],
    },
    {
      name: 'the cache lags behind what this process applied (alreadyApplied) → no apply',
      scenario: {objects: [a], current: [have(a, {spec: {host: 'old'}})], alreadyApplied: () => true},
      actions: [],
    },
    {
      name: 'alreadyApplied says no → apply',
      scenario: {objects: [a], current: [have(a, {spec: {host: 'old'}})], alreadyApplied: () => false},
      actions: ['apply ns/a'],
    },
    {
      name: 'a discovery-owned status field differs → applyStatus only',
      scenario: {objects: [want('a', {status: {ready: true}})], current: [have(want('a', {status: {ready: false}}))]},
      actions: ['applyStatus ns/a'],
    },
    {
      name: 'a new CR with a status → apply and applyStatus',
      scenario: {objects: [want('a', {status: {ready: true}})]},
      actions: ['apply ns/a', 'applyStatus ns/a'],
    },
    {
      name: 'the status is equal (other fields differ) → no applyStatus',
      scenario: {objects: [want('a', {status: {ready: true}})], current: [have(want('a'), {status: {ready: true, phase: 'Healthy'}})]},
      actions: [],
    },
    {
      name: 'a status differs while alreadyApplied hides the apply → applyStatus still',
      scenario: {objects: [want('a', {status: {ready: true}})], current: [have(want('a'), {spec: {}, status: {ready: false}})], alreadyApplied: () => true},
      actions: ['applyStatus ns/a'],
    },
    // ---- desired objects being deleted / orphan marks
    {
      name: 'a desired CR still being deleted → no apply, requeue 1 s',
      scenario: {objects: [a], current: [have(a, {deleting: true, spec: {host: 'old'}})]},
      actions: [],
      requeueAfterMs: 1000,
    },
    {
      name: 'a desired CR being deleted, with a status and an orphan mark → nothing but the requeue',
      scenario: {objects: [want('a', {status: {ready: true}})], current: [have(want('a'), {deleting: true, annotations: orphanedAt(NOW - 1000)})]},
      actions: [],
      requeueAfterMs: 1000,
    },
    {
      name: 'a desired CR carrying the orphaned-since annotation → clearOrphanMark',
      scenario: {objects: [a], current: [have(a, {annotations: {...a.annotations, ...orphanedAt(NOW - 5000)}})]},
      actions: ['clearOrphanMark ns/a'],
    },
    {
      name: 'a desired CR carrying an unparsable orphaned-since annotation → clearOrphanMark too',
      scenario: {objects: [a], current: [have(a, {annotations: {...a.annotations, [annotations.orphanedSince]: 'yesterday'}})]},
      actions: ['clearOrphanMark ns/a'],
    },
    {
      name: 'a changed desired CR with an orphan mark → apply and clearOrphanMark',
      scenario: {objects: [a], current: [have(a, {spec: {host: 'old'}, annotations: {...a.annotations, ...orphanedAt(NOW - 5000)}})]},
      actions: ['apply ns/a', 'clearOrphanMark ns/a'],
    },
    // ---- CRs nobody wants
    {
      name: 'the source is cached and no longer claims the CR → delete at once',
      scenario: {objects: [a], current: [have(a), leftover('b')], knowledge: {ing: 'present'}},
      actions: ['delete ns/b'],
    },
    {
      name: 'the source was seen deleted → delete at once',
      scenario: {current: [leftover('b')], knowledge: {ing: 'deleted'}},
      actions: ['delete ns/b'],
    },
    {
      name: 'the source is unknown → markOrphan with now, requeue after the threshold',
      scenario: {current: [leftover('b')]},
      actions: [`markOrphan ns/b since ${iso(NOW)}`],
      requeueAfterMs: THRESHOLD,
    },
    {
      name: 'a CR without a source at all is treated as unknown → markOrphan',
      scenario: {current: [leftover('b', {source: undefined})], knowledge: {ing: 'present'}},
      actions: [`markOrphan ns/b since ${iso(NOW)}`],
      requeueAfterMs: THRESHOLD,
    },
    {
      name: 'an orphan younger than the threshold is kept; requeue for the rest',
      scenario: {current: [leftover('b', {annotations: orphanedAt(NOW - 4 * 60_000)})]},
      actions: [],
      requeueAfterMs: THRESHOLD - 4 * 60_000,
    },
    {
      name: 'an orphan exactly as old as the threshold is deleted',
      scenario: {current: [leftover('b', {annotations: orphanedAt(NOW - THRESHOLD)})]},
      actions: ['delete ns/b'],
    },
    {
      name: 'an orphan older than the threshold is deleted',
      scenario: {current: [leftover('b', {annotations: orphanedAt(NOW - THRESHOLD - 60_000)})]},
      actions: ['delete ns/b'],
    },
    {
      name: 'an unparsable orphaned-since annotation is marked anew',
      scenario: {current: [leftover('b', {annotations: {[annotations.orphanedSince]: 'not-a-date'}})]},
      actions: [`markOrphan ns/b since ${iso(NOW)}`],
      requeueAfterMs: THRESHOLD,
    },
    {
      name: 'stale cleanup disabled → an unknown-source CR is kept unmarked',
      scenario: {current: [leftover('b')], stale: {enabled: false}},
      actions: [],
    },
    {
      name: 'stale cleanup disabled → even an old orphan is kept',
      scenario: {current: [leftover('b', {annotations: orphanedAt(NOW - 100 * THRESHOLD)})], stale: {enabled: false}},
      actions: [],
    },
    {
      name: 'stale cleanup disabled still deletes CRs whose source is present or deleted',
      scenario: {current: [leftover('b'), leftover('c', {source: ref('gone')})], knowledge: {ing: 'present', gone: 'deleted'}, stale: {enabled: false}},
      actions: ['delete ns/b', 'delete ns/c'],
    },
    {
      name: 'a CR being deleted that nobody wants is not deleted again',
      scenario: {current: [leftover('b', {deleting: true})], knowledge: {ing: 'present'}},
      actions: [],
    },
    // ---- the sync finalizer on CRs being deleted
    {
      name: 'a CR being deleted with the sync finalizer while sync is disabled → releaseSyncFinalizer',
      scenario: {current: [leftover('b', {deleting: true, finalizers: [SYNC_FINALIZER]})], sync: {name: SYNC_FINALIZER, enabled: false}},
      actions: ['releaseSyncFinalizer ns/b'],
    },
    {
      name: 'the same while sync is enabled → left to the sync feature',
      scenario: {current: [leftover('b', {deleting: true, finalizers: [SYNC_FINALIZER]})], sync: {name: SYNC_FINALIZER, enabled: true}},
      actions: [],
    },
    {
      name: 'a CR being deleted without the sync finalizer → nothing to release',
      scenario: {current: [leftover('b', {deleting: true, finalizers: ['someone/else']})], sync: {name: SYNC_FINALIZER, enabled: false}},
      actions: [],
    },
    {
      name: 'no sync feature at all → nothing to release',
      scenario: {current: [leftover('b', {deleting: true, finalizers: [SYNC_FINALIZER]})]},
      actions: [],
    },
    {
      name: 'a desired CR being deleted with the sync finalizer while sync is disabled → release and requeue',
      scenario: {objects: [a], current: [have(a, {deleting: true, finalizers: [SYNC_FINALIZER]})], sync: {name: SYNC_FINALIZER, enabled: false}},
      actions: ['releaseSyncFinalizer ns/a'],
      requeueAfterMs: 1000,
    },
    {
      name: 'a CR not being deleted keeps its sync finalizer while sync is disabled',
      scenario: {objects: [a], current: [have(a, {finalizers: [SYNC_FINALIZER]})], sync: {name: SYNC_FINALIZER, enabled: false}},
      actions: [],
    },
    // ---- source finalizers
    {
      name: 'a managed live source with desired CRs that lacks the finalizer → addSourceFinalizer (before the apply)',
      scenario: {objects: [a], sources: [managed('ing')], cached: [sourceState('ing')]},
      actions: [`addSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`, 'apply ns/a'],
    },
    {
      name: 'a managed source that has the finalizer → nothing',
      scenario: {objects: [a], current: [have(a)], sources: [managed('ing')], cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER]})]},
      actions: [],
    },
    {
      name: 'an unmanaged source is never given the finalizer',
      scenario: {objects: [a], current: [have(a)], sources: [unmanaged('ing')], cached: [sourceState('ing')]},
      actions: [],
    },
    {
      name: 'a managed source being deleted is not given the finalizer',
      scenario: {objects: [a], current: [have(a)], sources: [managed('ing')], cached: [sourceState('ing', {deleting: true})]},
      actions: [],
    },
    {
      name: 'a managed source without desired CRs is not given the finalizer',
      scenario: {objects: [want('x', {source: ref('other')})], current: [have(want('x', {source: ref('other')}))], sources: [managed('ing')], cached: [sourceState('ing')]},
      actions: [],
    },
    {
      name: 'a source that is not cached gets no finalizer action',
      scenario: {objects: [a], current: [have(a)], sources: [managed('ing')], cached: []},
      actions: [],
    },
    {
      name: 'an unmanaged source with the finalizer and no CRs naming it → removeSourceFinalizer',
      scenario: {sources: [unmanaged('ing')], cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER, 'other']})]},
      actions: [`removeSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`],
    },
    {
      name: 'a deleting source with the finalizer and no CRs naming it → removeSourceFinalizer',
      scenario: {sources: [managed('ing')], cached: [sourceState('ing', {deleting: true, finalizers: [SOURCE_FINALIZER]})]},
      actions: [`removeSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`],
    },
    {
      name: 'a managed live source that wants no CRs any more and has none → removeSourceFinalizer',
      scenario: {sources: [managed('ing')], cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER]})]},
      actions: [`removeSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`],
    },
    {
      name: 'a deleting source whose CR still exists → delete the CR, keep the finalizer, requeue 1 s',
      scenario: {current: [leftover('b')], knowledge: {ing: 'present'}, sources: [managed('ing')], cached: [sourceState('ing', {deleting: true, finalizers: [SOURCE_FINALIZER]})]},
      actions: ['delete ns/b'],
      requeueAfterMs: 1000,
    },
    {
      name: 'a source whose CR is itself being deleted keeps its finalizer until the CR is gone',
      scenario: {current: [leftover('b', {deleting: true})], sources: [unmanaged('ing')], cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER]})]},
      actions: [],
      requeueAfterMs: 1000,
    },
    {
      name: 'a deleting source whose CR another source takes over keeps its finalizer while it still owns the CR (else the garbage collector deletes it)',
      scenario: {handingOver: [leftover('b')], sources: [managed('ing')], cached: [sourceState('ing', {deleting: true, finalizers: [SOURCE_FINALIZER]})]},
      actions: [],
      requeueAfterMs: 1000,
    },
    {
      name: 'a CR handed over and owned by the winner alone no longer holds the loser\'s finalizer',
      scenario: {handingOver: [leftover('b', {ownerUids: ['uid-route']})], sources: [managed('ing')], cached: [sourceState('ing', {deleting: true, finalizers: [SOURCE_FINALIZER]})]},
      actions: [`removeSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`],
    },
    {
      name: 'CRs of other sources do not hold a source\'s finalizer',
      scenario: {
        objects: [want('x', {source: ref('other')})],
        current: [have(want('x', {source: ref('other')}))],
        sources: [unmanaged('ing')],
        cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER]})],
      },
      actions: [`removeSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`],
    },
    {
      name: 'an unmanaged source without the finalizer → nothing to remove',
      scenario: {sources: [unmanaged('ing')], cached: [sourceState('ing', {finalizers: ['someone/else']})]},
      actions: [],
    },
    {
      name: 'a source of a kind without a finalizer (Node) is left alone, whatever it carries',
      scenario: {
        objects: [want('n1', {source: ref('n1', 'Node'), namespace: 'polycrate'})],
        sources: [{ref: ref('n1', 'Node'), managed: true}, unmanaged('n2', 'Node')],
        cached: [sourceState('n1', {kind: 'Node'}), sourceState('n2', {kind: 'Node', finalizers: [SOURCE_FINALIZER]})],
      },
      actions: ['apply polycrate/n1'],
    },
    // ---- migrations
    {
      name: 'a managed source with a migration → migrateSource',
      scenario: {objects: [a], current: [have(a)], sources: [managed('ing', {patch: {metadata: {labels: {old: null}}}, description: 'drop old'})]},
      actions: ['migrateSource Ingress/ing'],
    },
    {
      name: 'an unmanaged source with a migration → never written to',
      scenario: {sources: [{...unmanaged('ing'), migration: {patch: {metadata: {labels: {old: null}}}, description: 'drop old'}}]},
      actions: [],
    },
    // ---- requeue is the minimum
    {
      name: 'requeueAfterMs is the minimum: a CR being deleted (1 s) beats a young orphan (30 s left)',
      scenario: {objects: [a], current: [have(a, {deleting: true}), leftover('b', {annotations: orphanedAt(NOW - THRESHOLD + 30_000)})]},
      actions: [],
      requeueAfterMs: 1000,
    },
    {
      name: 'requeueAfterMs is the minimum: an orphan with 200 ms left beats a source waiting 1 s',
      scenario: {
        current: [leftover('b', {annotations: orphanedAt(NOW - THRESHOLD + 200)})],
        sources: [unmanaged('ing')],
        cached: [sourceState('ing', {finalizers: [SOURCE_FINALIZER]})],
      },
      actions: [],
      requeueAfterMs: 200,
    },
    {
      name: 'requeueAfterMs is the minimum: a new mark (threshold) and an older orphan (2 min left)',
      scenario: {current: [leftover('b'), leftover('c', {annotations: orphanedAt(NOW - THRESHOLD + 120_000)})]},
      actions: [`markOrphan ns/b since ${iso(NOW)}`],
      requeueAfterMs: 120_000,
    },
  ]

  for (const row of rows) {
    it(row.name, () => {
      const result = plan(row.scenario)
      assert.deepEqual(result.actions, row.actions)
      assert.equal(result.requeueAfterMs, row.requeueAfterMs, 'requeueAfterMs')
    })
  }
})

describe('discovery plan: planDiscovery (details)', () => {
  it('the applied object carries the sync finalizer only while sync is enabled', () => {
    const enabled = plan({objects: [a], sync: {name: SYNC_FINALIZER, enabled: true}}).raw[0]
    assert.equal(enabled?.type, 'apply')
    assert.deepEqual(enabled.type === 'apply' && enabled.object.finalizers, [SYNC_FINALIZER])

    for (const sync of [{name: SYNC_FINALIZER, enabled: false}, undefined]) {
      const applied = plan({objects: [a], sync}).raw[0]
      assert.equal(applied?.type, 'apply')
      assert.equal(applied.type === 'apply' && 'finalizers' in applied.object, false, `sync ${JSON.stringify(sync)}: no finalizers field`)
    }
  })

  it('the applied object is the desired one (plus the finalizer); applyStatus gets the desired object without finalizers', () => {
    const wanted = want('a', {status: {ready: true}})
    const actions = plan({objects: [wanted], sync: {name: SYNC_FINALIZER, enabled: true}}).raw
    const apply = actions.find((action) => action.type === 'apply')
    const status = actions.find((action) => action.type === 'applyStatus')
    assert.ok(apply?.type === 'apply' && status?.type === 'applyStatus')
    assert.deepEqual(apply.object, {...wanted, finalizers: [SYNC_FINALIZER]})
    assert.equal(status.object, wanted)
  })

  it('alreadyApplied is asked with the object as it would be applied and the cached CR', () => {
    const calls: Array<[unknown, unknown]> = []
    const cached = have(a, {spec: {host: 'old'}})
    plan({objects: [a], current: [cached], sync: {name: SYNC_FINALIZER, enabled: true}, alreadyApplied: (object, current) => {
      calls.push([object, current])
      return true
    }})
    assert.deepEqual(calls, [[{...a, finalizers: [SYNC_FINALIZER]}, cached]])
  })

  it('alreadyApplied is asked with undefined for a CR not in the cache', () => {
    const calls: unknown[] = []
    const result = plan({objects: [a], alreadyApplied: (_object, current) => {
      calls.push(current)
      return true
    }})
    assert.deepEqual(result.actions, [])
    assert.deepEqual(calls, [undefined])
  })

  it('delete says why; markOrphan targets the cached CR', () => {
    const b1 = leftover('b')
    const c1 = leftover('c', {source: ref('gone')})
    const d1 = leftover('d', {source: ref('unknown'), annotations: {[annotations.orphanedSince]: iso(NOW - 2 * THRESHOLD)}})
    const e1 = leftover('e', {source: ref('unknown')})
    const {raw} = plan({current: [b1, c1, d1, e1], knowledge: {ing: 'present', gone: 'deleted'}})
    const whys = raw.flatMap((action) => (action.type === 'delete' ? [[action.target.name, action.why]] : []))
    assert.deepEqual(whys.map(([name]) => name), ['b', 'c', 'd'])
    assert.match(whys[0]![1]!, /no longer claims/)
    assert.match(whys[1]![1]!, /deleted/)
    assert.match(whys[2]![1]!, new RegExp(`orphaned since ${iso(NOW - 2 * THRESHOLD).replace(/\./g, '\\.')}`))
    const mark = raw.find((action) => action.type === 'markOrphan')
    assert.ok(mark?.type === 'markOrphan')
    assert.equal(mark.target, e1)
    assert.equal(mark.since, iso(NOW))
  })

  it('sourceKnowledge is asked with the CR\'s own source', () => {
    const asked: ObjectRef[] = []
    const other = ref('other-ingress')
    planDiscovery({...input({current: [leftover('b', {source: other})]}), sourceKnowledge: (r) => {
      asked.push(r)
      return 'present'
    }})
    assert.deepEqual(asked, [other])
  })

  it('the source finalizer actions carry the cached source state and the finalizer of its kind', () => {
    const state = sourceState('ing')
    const add = plan({objects: [a], sources: [managed('ing')], cached: [state]}).raw[0]
    assert.deepEqual(add, {type: 'addSourceFinalizer', source: state, finalizer: SOURCE_FINALIZER})
    const holding = sourceState('ing', {finalizers: [SOURCE_FINALIZER]})
    const remove = plan({sources: [unmanaged('ing')], cached: [holding]}).raw[0]
    assert.deepEqual(remove, {type: 'removeSourceFinalizer', source: holding, finalizer: SOURCE_FINALIZER})
  })

  it('migrateSource carries the ref, the patch and the description', () => {
    const migration = {patch: {metadata: {labels: {'k8sapps.polycrate.io/name': null}, annotations: {polycrate_k8sapp_name: 'shop'}}}, description: 'move it'}
    const {raw} = plan({sources: [managed('ing', migration)]})
    assert.deepEqual(raw, [{type: 'migrateSource', source: ref('ing'), ...migration}])
  })

  it('several groups of rules at once, each action on its own', () => {
    const result = plan({
      objects: [a, b],
      current: [
        have(a, {spec: {host: 'old'}}),
        leftover('gone-now', {source: ref('other')}),
        leftover('stale', {source: ref('lost'), annotations: {[annotations.orphanedSince]: iso(NOW - THRESHOLD - 1)}}),
      ],
      knowledge: {other: 'present'},
      sources: [managed('ing'), unmanaged('other')],
      cached: [sourceState('ing'), sourceState('other', {finalizers: [SOURCE_FINALIZER]})],
    })
    assert.deepEqual(result.actions, [
      `addSourceFinalizer Ingress/ing ${SOURCE_FINALIZER}`,
      'apply ns/a',
      'apply ns/b',
      'delete ns/gone-now',
      'delete ns/stale',
    ])
    // `other` still has a CR (being deleted in this very plan): its finalizer waits.
    assert.equal(result.requeueAfterMs, 1000)
  })

  it('cluster-scoped CRs (no namespace) are matched by name', () => {
    const node = want('n1', {namespace: undefined, source: ref('n1', 'Node')})
    assert.deepEqual(plan({objects: [node], current: [have(node)]}).actions, [])
    assert.deepEqual(plan({objects: [node], current: [have(node, {namespace: ''})]}).actions, [], 'undefined and empty namespace are the same')
  })

  it('planning is pure: the inputs are not changed', () => {
    const scenario: Scenario = {
      objects: [a, want('s', {status: {ready: true}})],
      current: [have(a, {spec: {host: 'old'}}), leftover('b')],
      sources: [managed('ing', {patch: {metadata: {labels: {x: null}}}, description: 'x'})],
      cached: [sourceState('ing')],
      sync: {name: SYNC_FINALIZER, enabled: true},
    }
    const before = structuredClone(scenario)
    plan(scenario)
    plan(scenario)
    assert.deepEqual(scenario, before)
  })
})

describe('desiredOfOneSource (Hosts from Nodes, K8sVolumes from PVs)', () => {
  const node = (extra: Record<string, unknown> = {}) => ({apiVersion: 'v1', kind: 'Node', metadata: {name: 'n1', uid: 'u1', ...extra}})
  const map = () => ({cr: {name: 'n1', spec: {hostname: 'n1'}, status: {node_ready: true}}, problems: [{reason: 'InvalidNodeCapacity', message: 'bad'}]})
  const cases: Array<[string, Parameters<typeof desiredOfOneSource>[0]['object'], DesiredState]> = [
    ['gone → nothing, and no source to manage', undefined, {objects: [], problems: [], sources: []}],
    ['being deleted → nothing', node({deletionTimestamp: '2026-01-01T00:00:00Z'}), {objects: [], problems: [], sources: []}],
    ['present → its one CR in the operator namespace, owned by the source, labelled discovered; problems on the source', node(), {
      objects: [{
        name: 'n1', namespace: 'op', labels: {polycrate_discovered: 'true', polycrate_managed_by: 'operator'},
        ownerReferences: [{apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1'}],
        spec: {hostname: 'n1'}, status: {node_ready: true},
        source: {kind: 'Node', apiVersion: 'v1', name: 'n1', uid: 'u1'},
      }],
      problems: [{source: {kind: 'Node', apiVersion: 'v1', name: 'n1', uid: 'u1'}, reason: 'InvalidNodeCapacity', message: 'bad'}],
      sources: [{ref: {kind: 'Node', apiVersion: 'v1', name: 'n1', uid: 'u1'}, managed: true}],
    }],
  ]
  for (const [name, object, expected] of cases) {
    it(name, () => assert.deepEqual(desiredOfOneSource({kind: 'Node', apiVersion: 'v1', name: 'n1', object}, 'op', map), expected))
  }
  it('no uid (not yet persisted) → no owner reference', () => {
    const state = desiredOfOneSource({kind: 'Node', apiVersion: 'v1', name: 'n1', object: {metadata: {name: 'n1'}}}, 'op', map)
    assert.equal(state.objects[0]!.ownerReferences, undefined)
  })
})

describe('discovery plan: time-driven desired state', () => {
  it('the desired state\'s own requeue (a certificate turning expiring_soon) is the plan\'s requeue when it is the earliest', () => {
    const base = input({objects: [want('a')], current: [have(want('a'))]})
    assert.equal(planDiscovery({...base, desired: {...base.desired, requeueAfterMs: 42_000}}).requeueAfterMs, 42_000)
    assert.equal(planDiscovery(base).requeueAfterMs, undefined)
  })
  it('an earlier orphan threshold wins; a negative wait counts as now', () => {
    const base = input({current: [leftover('gone', {annotations: {[annotations.orphanedSince]: iso(NOW - THRESHOLD + 5_000)}})]})
    assert.equal(planDiscovery({...base, desired: {...base.desired, requeueAfterMs: 60_000}}).requeueAfterMs, 5_000)
    assert.equal(planDiscovery({...base, desired: {...base.desired, requeueAfterMs: -10}}).requeueAfterMs, 0)
  })
})
