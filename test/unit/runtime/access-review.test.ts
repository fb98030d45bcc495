import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import type {Logger} from '../../../src/lib/logger.js'
import {operatorConfigStatus, validateOperatorConfig, type OperatorConfig} from '../../../src/operator/config/operator-config.js'
import {operatorPermissions} from '../../../src/operator/operator.js'
import {roleRules, type Permission} from '../../../src/operator/permissions.js'
import {readiness} from '../../../src/operator/config/readiness.js'
import {accessChecks, checkKey, describeCheck, forbiddenReason, SelfAccessReviewer, type AccessCheck} from '../../../src/operator/runtime/access-review.js'
import type {CrdGate} from '../../../src/operator/runtime/crd-gate.js'
import {FeatureSet, featureState, type Feature} from '../../../src/operator/runtime/feature.js'
import type {Manager} from '../../../src/operator/runtime/manager.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'
import {FakeTimers} from '../../support/fake-timers.js'

/** What /readyz answers for a FeatureSet (operator.ts). */
const probe = (set: FeatureSet<OperatorConfig>) => readiness({config: {kind: 'valid'}, missingOwnCrds: set.missingOwnCrds, failed: set.failed(), forbidden: set.forbiddenFeatures(), running: []})

describe('access checks of a feature\'s permissions (pure)', () => {
  const cases: Array<{name: string; permissions: Permission[]; checks: string[]}> = [
    {
      name: 'one per verb, cluster-wide by default',
      permissions: [{group: 'polycrate.io', resource: 's3buckets', verbs: ['get', 'patch']}],
      checks: ['get s3buckets.polycrate.io cluster-wide', 'patch s3buckets.polycrate.io cluster-wide'],
    },
    {
      name: 'a subresource is split off; scope namespace is the operator\'s namespace; a fixed namespace wins',
      permissions: [
        {group: 'polycrate.io', resource: 'operatorconfigs/status', verbs: ['patch'], scope: 'namespace'},
        {group: '', resource: 'configmaps', verbs: ['get'], namespace: 'kube-system', names: ['extension-apiserver-authentication'], scope: 'namespace'},
      ],
      checks: ['patch operatorconfigs/status.polycrate.io in ops', 'get configmaps extension-apiserver-authentication in kube-system'],
    },
    {
      name: 'each name its own check; the same check from two permissions once',
      permissions: [
        {group: '', resource: 'secrets', verbs: ['get', 'watch'], names: ['a', 'b'], watchesByName: true, scope: 'namespace'},
        {group: '', resource: 'secrets', verbs: ['get'], names: ['a'], scope: 'namespace'},
      ],
      checks: ['get secrets a in ops', 'get secrets b in ops', 'watch secrets a in ops', 'watch secrets b in ops'],
    },
  ]
  for (const c of cases) it(c.name, () => assert.deepEqual(accessChecks(c.permissions, 'ops').map(describeCheck), c.checks))

  it('a subresource check carries it apart, as SelfSubjectAccessReview wants it', () => {
    assert.deepEqual(accessChecks([{group: '', resource: 'services/status', verbs: ['patch']}], 'ops'), [{group: '', resource: 'services', subresource: 'status', verb: 'patch'}])
  })

  it('the reason names at most three denied checks and what to do', () => {
    const denied = accessChecks([{group: '', resource: 'secrets', verbs: ['get', 'list', 'watch', 'create', 'patch']}], 'ops')
    assert.equal(forbiddenReason(denied), 'Forbidden: the operator may not get secrets cluster-wide, list secrets cluster-wide, watch secrets cluster-wide and 2 more; '
      + 'the installed RBAC lacks this feature\'s rules: run `polycrate operator install` again with it enabled in the values (or apply `polycrate operator manifests --all-features`)')
    assert.equal(featureState(forbiddenReason(denied), false), 'forbidden')
  })

  it('the OperatorConfig: Ready=False FeatureForbidden, Degraded, the feature and the reason in the message', () => {
    const reason = forbiddenReason(accessChecks([{group: '', resource: 'secrets', verbs: ['create']}], 'ops'))
    const validation = validateOperatorConfig({})
    const status = operatorConfigStatus(undefined, 1, validation, [{name: 'endpoint-discovery', enabled: true, running: true, reason: 'Running'}, {name: 's3-bucket-provisioning', enabled: true, running: false, reason}], '2027-01-01T00:00:00Z')
    const ready = status.conditions!.find((c) => c.type === 'Ready')!
    assert.deepEqual([status.phase, ready.status, ready.reason], ['Degraded', 'False', 'FeatureForbidden'])
    assert.equal(ready.message, `Not running: s3-bucket-provisioning (${reason}).`)
  })
})

describe('the RBAC of the enabled features (operatorPermissions)', () => {
  const rulesFor = (spec: object | undefined) => {
    const roles = roleRules(operatorPermissions(spec === undefined ? undefined : (validateOperatorConfig(spec) as {config: OperatorConfig}).config))
    return [...roles.cluster, ...[...roles.namespaced.values()].flat()]
  }
  const writesSecretsClusterWide = (spec: object | undefined) => roleRules(operatorPermissions(spec === undefined ? undefined : (validateOperatorConfig(spec) as {config: OperatorConfig}).config)).cluster
    .some((rule) => rule.resources.includes('secrets') && rule.verbs.some((verb) => ['create', 'patch'].includes(verb)))

  it('S3 bucket provisioning off: no create or patch on Secrets in every namespace; on (its default): granted', () => {
    assert.equal(writesSecretsClusterWide({s3_bucket_provisioning: {enabled: false}}), false)
    assert.equal(writesSecretsClusterWide({}), true)
  })

  it('every feature set is within the union (--all-features), which has the most rules', () => {
    const all = rulesFor(undefined)
    const key = (rule: object) => JSON.stringify(rule)
    for (const spec of [{}, {api_sync: {enabled: true, api_url: 'https://api.example.com'}}, {dns01_webhook: {enabled: true}, cloud_controller: {enabled: true}}]) {
      const rules = rulesFor(spec)
      assert.ok(rules.length <= all.length, JSON.stringify(spec))
      // Each permission of the smaller set is granted by the union's roles (verbs may merge into other rules).
      const granted = (rule: {apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[]}) =>
        rule.resources.every((resource) => rule.verbs.every((verb) => all.some((r) => r.apiGroups[0] === rule.apiGroups[0] && r.resources.includes(resource) && r.verbs.includes(verb as never) && key(r.resourceNames ?? []) === key(rule.resourceNames ?? []))))
      assert.ok(rules.every(granted), JSON.stringify(spec))
    }
  })
})

describe('SelfAccessReviewer', () => {
  const check = (verb: AccessCheck['verb'], resource = 'secrets'): AccessCheck => ({group: '', resource, verb})

  /** The checks the apiserver denies, in their order. */
  const deniedBy = async (reviewer: SelfAccessReviewer, checks: AccessCheck[]) => {
    const answers = reviewer.review(checks)
    const allowed = await Promise.all(checks.map((c) => answers.get(checkKey(c))!))
    return checks.filter((_, i) => !allowed[i])
  }

  it('sends one SelfSubjectAccessReview per check, at most 8 at a time, in order; answers each by its key', async () => {
    let inFlight = 0
    let most = 0
    const bodies: Array<{spec: {resourceAttributes: Record<string, unknown>}}> = []
    const reviewer = new SelfAccessReviewer({
      async create(ref, body) {
        assert.deepEqual(ref, {group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectaccessreviews'})
        bodies.push(body as never)
        most = Math.max(most, ++inFlight)
        await new Promise((resolve) => setImmediate(resolve))
        inFlight--
        const {verb, resource} = (body as {spec: {resourceAttributes: {verb: string; resource: string}}}).spec.resourceAttributes
        return {status: {allowed: !(verb === 'create' || resource === 'nodes')}}
      },
    })
    const checks = [...(['get', 'list', 'watch', 'create', 'patch'] as const).map((verb) => check(verb)), ...(['get', 'list', 'watch', 'patch', 'update', 'delete'] as const).map((verb) => check(verb, 'nodes'))]
    const denied = await deniedBy(reviewer, checks)
    assert.deepEqual(denied.map(describeCheck), ['create secrets cluster-wide', ...['get', 'list', 'watch', 'patch', 'update', 'delete'].map((verb) => `${verb} nodes cluster-wide`)])
    assert.equal(bodies.length, 11)
    assert.equal(most, 8)
    assert.deepEqual(bodies[0]!.spec.resourceAttributes, {group: '', resource: 'secrets', subresource: undefined, verb: 'get', namespace: undefined, name: undefined})
  })

  it('a review that cannot be made does not stop the feature (its own requests will tell)', async () => {
    const reviewer = new SelfAccessReviewer({create: async () => Promise.reject(new Error('connect ECONNREFUSED'))})
    assert.deepEqual(await deniedBy(reviewer, [check('create')]), [])
  })
})

describe('FeatureSet with an access reviewer', () => {
  const silent = {debug() {}, info() {}, warn() {}, error() {}, child() { return silent }}
  const gate = {isEstablished: () => true} as unknown as CrdGate
  const config = (spec: object = {}): OperatorConfig => operatorConfigSpec.parse(spec)

  it('a feature whose rules are missing is not started and says Forbidden (states, /readyz, metrics); the others run; once granted it starts on the next check', async () => {
    const timers = new FakeTimers()
    const metrics = new OperatorMetrics({processMetrics: false})
    const manager = {metrics, namespace: 'ops', clock: timers} as unknown as Manager
    const started: string[] = []
    const feature = (name: string, permissions: Permission[]): Feature<OperatorConfig> => ({
      name, permissions, enabled: () => true, settings: () => ({}),
      start: () => {
        started.push(name)
        return {stop: async () => {}}
      },
    })
    const secretsWriter = feature('s3-bucket-provisioning', [{group: '', resource: 'secrets', verbs: ['get', 'create']}])
    const reader = feature('endpoint-discovery', [{group: '', resource: 'secrets', verbs: ['get']}, {group: 'networking.k8s.io', resource: 'ingresses', verbs: ['get']}])
    let granted = new Set([checkKey({group: '', resource: 'secrets', verb: 'get'}), checkKey({group: 'networking.k8s.io', resource: 'ingresses', verb: 'get'})])
    const asked: string[][] = []
    const reviewer = {
      review(checks: readonly AccessCheck[]) {
        asked.push(checks.map(describeCheck))
        return new Map(checks.map((c) => [checkKey(c), Promise.resolve(granted.has(checkKey(c)))]))
      },
    }
    const set = new FeatureSet(manager, gate, [secretsWriter, reader], silent as unknown as Logger, {reviewer, forbiddenRecheckMs: 30_000})
    let changes = 0
    set.onChange(() => changes++)

    const states = await set.apply(config())
    assert.deepEqual(asked, [['get secrets cluster-wide', 'create secrets cluster-wide', 'get ingresses.networking.k8s.io cluster-wide']], 'each check once for both features')
    assert.deepEqual(started, ['endpoint-discovery'])
    const reason = forbiddenReason([{group: '', resource: 'secrets', verb: 'create'}])
    assert.deepEqual(states, [
      {name: 's3-bucket-provisioning', enabled: true, running: false, reason},
      {name: 'endpoint-discovery', enabled: true, running: true, reason: 'Running'},
    ])
    assert.deepEqual(set.forbiddenFeatures(), [{name: 's3-bucket-provisioning', reason}])
    assert.deepEqual(probe(set).checks.features, {ok: false, message: `s3-bucket-provisioning: ${reason}`}, '/readyz names it')
    const series = (await metrics.featureStatus.get()).values.filter((s) => s.labels.feature === 's3-bucket-provisioning' && s.value === 1)
    assert.deepEqual(series.map((s) => s.labels.state), ['forbidden'])

    // install adds the rules; the set checks again after 30 s (the OperatorConfig controller applies).
    granted = new Set([...granted, checkKey({group: '', resource: 'secrets', verb: 'create'})])
    await timers.advance(29_999)
    assert.equal(changes, 0)
    await timers.advance(1)
    assert.equal(changes, 1)
    const after = await set.apply(config())
    assert.deepEqual(after.map((s) => `${s.name} ${s.reason}`), ['s3-bucket-provisioning Running', 'endpoint-discovery Running'])
    assert.deepEqual(started, ['endpoint-discovery', 's3-bucket-provisioning'])
    assert.deepEqual(asked.at(-1), ['get secrets cluster-wide', 'create secrets cluster-wide'], 'only the feature that starts is checked')
    assert.deepEqual(set.forbiddenFeatures(), [])
    assert.deepEqual(probe(set).checks.features, {ok: true})
    await timers.advance(60_000)
    assert.equal(changes, 1, 'no more checks once nothing is refused')
    await set.stopAll()
  })
  it('a feature starts as soon as its own checks are answered, while a later feature\'s reviews are still out', async () => {
    const manager = {metrics: new OperatorMetrics({processMetrics: false}), namespace: 'ops', clock: new FakeTimers()} as unknown as Manager
    const started: string[] = []
    const feature = (name: string, resource: string): Feature<OperatorConfig> => ({
      name, permissions: [{group: '', resource, verbs: ['get']}], enabled: () => true, settings: () => ({}),
      start: () => {
        started.push(name)
        return {stop: async () => {}}
      },
    })
    let answerNodes!: (allowed: boolean) => void
    const nodesAnswer = new Promise<boolean>((resolve) => (answerNodes = resolve))
    const reviewer = {
      review: (checks: readonly AccessCheck[]) => new Map(checks.map((c) => [checkKey(c), c.resource === 'nodes' ? nodesAnswer : Promise.resolve(true)])),
    }
    const set = new FeatureSet(manager, gate, [feature('api-sync', 'secrets'), feature('host-discovery', 'nodes')], silent as unknown as Logger, {reviewer})
    const applied = set.apply(config())
    for (let i = 0; i < 10 && started.length === 0; i++) await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(started, ['api-sync'], 'started before the nodes review is answered')
    answerNodes(true)
    assert.deepEqual((await applied).map((s) => `${s.name} ${s.reason}`), ['api-sync Running', 'host-discovery Running'])
    assert.deepEqual(started, ['api-sync', 'host-discovery'])
    await set.stopAll()
  })
})
