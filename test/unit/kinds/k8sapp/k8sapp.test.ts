import assert from 'node:assert/strict'
import {KubeApiError, type KubeClient, type KubeObject} from '../../../../src/kube/client.js'
import {OPERATOR_NAME} from '../../../../src/operator/conventions.js'
import {artifactName, digestOfImageID, parseImage, registryAllowed} from '../../../../src/lib/image-ref.js'
import {artifactDiscovery, artifactGroupsOf, desiredArtifact, type ArtifactDiscoverySettings} from '../../../../src/operator/kinds/artifact/artifact.discovery.js'
import {
  desiredApps,
  installationStatus,
  invalidAppName,
  k8sAppProblemReasons,
  namespacesOfClaim,
  parseMetaSecret,
  type K8sAppDiscoverySettings,
} from '../../../../src/operator/kinds/k8sapp/k8sapp.mapping.js'
import {k8sAppDiscovery, k8sAppDiscoverySettings} from '../../../../src/operator/kinds/k8sapp/k8sapp.discovery.js'
import {slimAppPod} from '../../../../src/operator/app-pods.js'
import {isJobPod, podContainers, slimPod, type SlimPod} from '../../../../src/kube/pods.js'
import {podStatus} from '../../../../src/operator/kinds/k8sapp/k8sapp.pods.js'
import {sourceCaches} from '../../../support/source-caches.js'
import {configHash} from '../../../../src/operator/sync/hash.js'
import {k8sAppPayload} from '../../../../src/operator/kinds/k8sapp/k8sapp.payload.js'
import {podCountsFor, writePodStatus} from '../../../../src/operator/kinds/k8sapp/k8sapp.pod-status.js'
import {validateOperatorConfig} from '../../../../src/operator/config/operator-config.js'

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')
const goodMeta = 'block:\n  name: web\n  version: "1.2.0"\n  kind: helm\nworkspace: {name: prod, organization: acme}\naction: {name: install, status: success, last_executed_at: "2025-12-20T10:00:00Z"}\n'

const caches = (byId: Record<string, KubeObject[]>) => sourceCaches(byId)
const secret = (namespace: string, name: string): KubeObject => ({apiVersion: 'v1', kind: 'Secret', metadata: {namespace, name, uid: `uid-${name}`}})
const pod = (namespace: string, name: string, input: {app?: string; owner?: string; images?: string[]; ready?: boolean; restarts?: number; terminatedAt?: string; labels?: Record<string, string>} = {}): KubeObject => slimAppPod({
  apiVersion: 'v1', kind: 'Pod',
  metadata: {
    namespace, name, uid: `uid-${name}`,
    ...(input.labels ? {labels: input.labels} : {}),
    ...(input.app !== undefined ? {annotations: {polycrate_k8sapp_name: input.app, 'other/annotation': 'dropped'}} : {}),
    ...(input.owner ? {ownerReferences: [{kind: input.owner, name: 'o', uid: 'u', controller: true, apiVersion: 'x'}]} : {}),
  },
  spec: {containers: (input.images ?? ['docker.io/library/nginx:1']).map((image, i) => ({name: `c${i}`, image, env: [{name: 'BIG', value: 'x'.repeat(1000)}]}))},
  status: {
    phase: 'Running',
    conditions: [{type: 'Ready', status: input.ready === false ? 'False' : 'True'}, {type: 'PodScheduled', status: 'True'}],
    containerStatuses: [{name: 'c0', ready: input.ready !== false, restartCount: input.restarts ?? 0, ...(input.terminatedAt ? {lastState: {terminated: {finishedAt: input.terminatedAt}}} : {})}],
  },
} as KubeObject)
const ingress = (namespace: string, name: string, annotations: Record<string, string>): KubeObject => ({apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {namespace, name, uid: `uid-${name}`, annotations}})
const settings = (overrides: Partial<K8sAppDiscoverySettings> = {}): K8sAppDiscoverySettings => ({
  watch_namespaces: [], ignore_namespaces: ['kube-system'], label_discovery_enabled: true, gatewayApi: false,
  artifacts: {watch_namespaces: [], ignore_namespaces: [], registry_filter: {include_registries: [], exclude_registries: ['registry.k8s.io']}},
  ...overrides,
})

describe('K8sApp discovery: meta secrets (pure)', () => {
  it('a good meta secret gives the spec maps as written', () => {
    const result = parseMetaSecret('web.poly', {meta: b64(goodMeta)})
    assert.deepEqual(result.problems, [])
    assert.deepEqual(result.spec, {
      block: {name: 'web', version: '1.2.0', kind: 'helm'},
      workspace: {name: 'prod', organization: 'acme'},
      action: {name: 'install', status: 'success', last_executed_at: '2025-12-20T10:00:00Z'},
    })
    assert.deepEqual(parseMetaSecret('web.poly', {'meta.json': b64(JSON.stringify({block: {name: 'web'}}))}).spec, {block: {name: 'web'}})
    assert.deepEqual(parseMetaSecret('web.poly', {'meta.yaml': b64('block: {name: web}')}).spec, {block: {name: 'web'}})
    // An unquoted YAML timestamp (a Date to js-yaml) is kept as RFC 3339 text.
    assert.equal(parseMetaSecret('web.poly', {meta: b64('action: {name: install, status: success, last_executed_at: 2025-12-20T10:00:00Z}')}).spec?.action?.last_executed_at, '2025-12-20T10:00:00.000Z')
  })

  const malformed: Array<[string, Record<string, string> | undefined, string, RegExp, boolean]> = [
    // [case, data, reason, message, spec still made]
    ['no data at all', undefined, k8sAppProblemReasons.invalidMetaSecret, /has no data/, false],
    ['empty data', {}, k8sAppProblemReasons.invalidMetaSecret, /has no data/, false],
    ['no meta key', {values: b64('x: 1')}, k8sAppProblemReasons.invalidMetaSecret, /no key "meta".*1 other key/, false],
    ['not UTF-8', {meta: Buffer.from([0xff, 0xfe, 0x00]).toString('base64')}, k8sAppProblemReasons.invalidMetaSecret, /not UTF-8/, false],
    ['invalid YAML', {meta: b64('block: [unclosed\n  name: x')}, k8sAppProblemReasons.invalidMetaSecret, /not valid YAML or JSON .* at line 2/, false],
    ['a list document', {meta: b64('- a\n- b')}, k8sAppProblemReasons.invalidMetaSecret, /holds a list/, false],
    ['a scalar document', {meta: b64('just text')}, k8sAppProblemReasons.invalidMetaSecret, /holds a string/, false],
    ['an empty document', {meta: b64('')}, k8sAppProblemReasons.invalidMetaSecret, /holds nothing/, false],
    ['block is a list', {meta: b64('block: [1, 2]')}, k8sAppProblemReasons.invalidMetaSecret, /"block" is a list/, false],
    ['workspace is text', {meta: b64('workspace: prod')}, k8sAppProblemReasons.invalidMetaSecret, /"workspace" is a string/, false],
    ['action is a number', {meta: b64('action: 3')}, k8sAppProblemReasons.invalidMetaSecret, /"action" is a number/, false],
    ['a map where text belongs', {meta: b64('block: {name: web, version: {major: 1}}')}, k8sAppProblemReasons.invalidMetaSecret, /block\.version is a map/, true],
    ['a number where text belongs', {meta: b64('block: {name: web, version: 1.20}')}, k8sAppProblemReasons.fieldCoerced, /block\.version is a number \(1\.2\)/, true],
    ['a boolean where text belongs', {meta: b64('block: {name: web, flavor: yes, kind: true}')}, k8sAppProblemReasons.fieldCoerced, /block\.kind is a boolean/, true],
    ['chart is not a map', {meta: b64('block: {name: web, chart: nginx}')}, k8sAppProblemReasons.invalidMetaSecret, /block\.chart is not a map/, true],
    ['last_executed_at no time', {meta: b64('action: {name: install, status: success, last_executed_at: yesterday}')}, k8sAppProblemReasons.invalidMetaSecret, /no RFC 3339 time/, true],
    ['unknown action status', {meta: b64('action: {name: install, status: exploded}')}, k8sAppProblemReasons.unknownActionStatus, /"exploded" is not success, running or failed/, true],
  ]
  for (const [name, data, reason, message, made] of malformed) {
    it(`malformed: ${name} → ${reason}${made ? ' (the app is still made)' : ''}`, () => {
      const result = parseMetaSecret('app.poly', data)
      const problem = result.problems.find((p) => p.reason === reason)
      assert.ok(problem, JSON.stringify(result.problems))
      assert.match(problem.message, message)
      assert.match(problem.message, /app\.poly/, 'names the secret')
      assert.equal(result.spec !== undefined, made)
    })
  }

  it('never quotes the data in a message', () => {
    const secretish = 'password: hunter2-very-secret'
    for (const text of [`block: [${secretish}`, `- ${secretish}`, secretish]) {
      for (const problem of parseMetaSecret('x.poly', {meta: b64(text)}).problems) assert.doesNotMatch(problem.message, /hunter2/)
    }
  })

  it('installation status follows the action table; other actions say nothing', () => {
    const rows: Array<[string | undefined, string | undefined, string | undefined]> = [
      ['install', 'success', 'installed'],
      ['install', 'running', 'installation_running'],
      ['install', 'failed', 'installation_failed'],
      ['uninstall', 'success', 'uninstalled'],
      ['uninstall', 'running', 'uninstallation_running'],
      ['uninstall', 'failed', 'uninstallation_failed'],
      ['upgrade', 'success', undefined],
      ['install', 'exploded', undefined],
      [undefined, undefined, undefined],
    ]
    for (const [name, status, flag] of rows) {
      const result = installationStatus(name === undefined ? undefined : {name, status})
      if (!flag) {
        assert.equal(result, undefined, `${name}/${status}`)
        continue
      }
      assert.deepEqual(Object.entries(result!).filter(([, v]) => v).map(([k]) => k), [flag], `${name}/${status}`)
    }
  })

  it('app names: a CR name (DNS-1123 subdomain, ≤ 253)', () => {
    assert.equal(invalidAppName('web'), undefined)
    assert.equal(invalidAppName('web.v2'), undefined)
    assert.match(invalidAppName('x'.repeat(254))!, /254 characters/)
    assert.ok(invalidAppName('Web'))
    assert.ok(invalidAppName('web_1'))
    assert.ok(invalidAppName('-web'))
    assert.ok(invalidAppName(''))
  })
})

describe('K8sApp discovery: which namespaces a change concerns (pure)', () => {
  const all = caches({
    ingress: [ingress('prod', 'claims-shop', {polycrate_k8sapp_name: 'shop'}), ingress('stage', 'claims-shop-too', {polycrate_k8sapp_name: 'shop'})],
    pod: [],
  })
  const rows: Array<[string, KubeObject, string[]]> = [
    ['an Ingress without an app claim concerns no namespace (its apps do not depend on it)', ingress('prod', 'plain', {}), []],
    ['an Ingress claiming an app: its namespace and every other claiming that name', ingress('prod', 'x', {polycrate_k8sapp_name: 'shop'}), ['prod', 'stage']],
    ['a pod without an app claim: its namespace (every pod counts for the artifacts of its apps)', pod('prod', 'p'), ['prod']],
    ['a pod claiming an app', pod('dev', 'p', {app: 'solo'}), ['dev']],
  ]
  for (const [what, object, expected] of rows) {
    it(what, () => {
      assert.deepEqual(namespacesOfClaim(object, all, settings()).sort(), expected)
    })
  }
})

describe('K8sApp discovery: desired state of a namespace (pure)', () => {
  const loaded = (entries: Record<string, string>) => new Map(Object.entries(entries).map(([name, meta]) => [name, {data: {meta: b64(meta)}}]))

  it('a meta secret → the K8sApp with the seed labels, owner reference, spec, kind, status flags', () => {
    const state = desiredApps('prod', caches({secret: [secret('prod', 'web.poly'), secret('prod', 'not-meta')]}), settings(), loaded({'web.poly': goodMeta}))
    assert.equal(state.objects.length, 1)
    const [app] = state.objects
    assert.equal(app!.name, 'web')
    assert.deepEqual(app!.labels, {
      'k8sapps.polycrate.io/block': 'web', 'k8sapps.polycrate.io/kind': 'helm', 'k8sapps.polycrate.io/discovery-source': 'secret',
      polycrate_discovered: 'true', polycrate_managed_by: 'operator',
    })
    assert.deepEqual(app!.ownerReferences, [{apiVersion: 'v1', kind: 'Secret', name: 'web.poly', uid: 'uid-web.poly'}])
    assert.equal((app!.spec as {kind: string}).kind, 'helm')
    assert.equal(app!.status?.installed, true)
  })

  it('label values stay ≤ 63 characters', () => {
    const long = 'b'.repeat(100)
    const state = desiredApps('prod', caches({secret: [secret('prod', 'web.poly')]}), settings(), loaded({'web.poly': `block: {name: ${long}, type: ${long}}`}))
    for (const value of Object.values(state.objects[0]!.labels)) assert.ok(value.length <= 63)
  })

  it('an unreadable meta secret keeps the existing K8sApp exactly; none is made when none exists', () => {
    const existing = {apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sApp', metadata: {namespace: 'prod', name: 'web', labels: {a: 'b'}, ownerReferences: [{apiVersion: 'v1', kind: 'Secret', name: 'web.poly', uid: 'u1'}]}, spec: {kind: 'helm', block: {name: 'web'}}} as KubeObject
    const bad = loaded({'web.poly': '{{{'})
    const kept = desiredApps('prod', caches({secret: [secret('prod', 'web.poly')], k8sapp: [existing]}), settings(), bad)
    assert.deepEqual(kept.objects.map((o) => [o.name, o.spec, o.labels, o.status]), [['web', {kind: 'helm', block: {name: 'web'}}, {a: 'b'}, undefined]])
    assert.equal(kept.problems[0]!.reason, 'InvalidMetaSecret')
    assert.equal(desiredApps('prod', caches({secret: [secret('prod', 'web.poly')]}), settings(), bad).objects.length, 0)
    // A read error (403) likewise.
    const denied = desiredApps('prod', caches({secret: [secret('prod', 'web.poly')], k8sapp: [existing]}), settings(), new Map([['web.poly', {error: 'forbidden'}]]))
    assert.equal(denied.objects.length, 1)
    assert.match(denied.problems[0]!.message, /could not be read: forbidden/)
    // A secret that arrived after the load: kept, no problem yet.
    const late = desiredApps('prod', caches({secret: [secret('prod', 'web.poly')], k8sapp: [existing]}), settings(), new Map())
    assert.equal(late.objects.length, 1)
    assert.equal(late.problems.length, 0)
  })

  it('status.artifacts is a function of the namespace\'s pods alone (no Artifact CR is read): one pod of two → the same artifact_count, a smaller pod_count', () => {
    // The K8sApp's figures are recomputed on every pod event of its namespace, independently of the Artifact
    // controller; a reader that waits on artifact_count alone can see the state of before the second pod.
    const nginx = 'cargo.ayedo.cloud/library/nginx:1.25.3'
    const p1 = pod('shop', 'p1', {images: [nginx, 'localhost:5000/team/app', `busybox@sha256:${'b'.repeat(64)}`]})
    const p2 = pod('shop', 'p2', {images: [nginx, 'registry.k8s.io/pause:3.9']})
    const loadedShop = loaded({'shop.poly': goodMeta})
    const status = (pods: KubeObject[]) => desiredApps('shop', caches({secret: [secret('shop', 'shop.poly')], pod: pods}), settings(), loadedShop).objects[0]!.status as {artifact_count: number; artifacts: Array<{name: string; pod_count: number}>}
    const first = status([p1])
    const both = status([p1, p2])
    assert.deepEqual([first.artifact_count, both.artifact_count], [3, 3])
    assert.deepEqual([first, both].map((s) => s.artifacts.find((a) => a.name === 'cargo-ayedo-cloud-library-nginx-1-25-3')?.pod_count), [1, 2])
  })

  it('annotated pods → one external app per name; Job pods make none; label_discovery_enabled false → none', () => {
    const pods = [pod('a', 'w1', {app: 'web', owner: 'ReplicaSet'}), pod('a', 'w2', {app: 'web'}), pod('a', 'j', {app: 'job-app', owner: 'Job'}), pod('a', 'x')]
    const state = desiredApps('a', caches({pod: pods}), settings(), new Map())
    assert.deepEqual(state.objects.map((o) => [o.name, o.spec]), [['web', {kind: 'external', source: {kind: 'Pod', name: 'web', namespace: 'a'}}]])
    assert.equal(state.objects[0]!.source.kind, 'Namespace', 'cleanup when the last pod goes: the namespace is the source')
    assert.equal(desiredApps('a', caches({pod: pods}), settings({label_discovery_enabled: false}), new Map()).objects.length, 0)
  })

  it('watch_namespaces / ignore_namespaces', () => {
    const pods = [pod('a', 'w1', {app: 'web'}), pod('kube-system', 'k', {app: 'sys'})]
    assert.equal(desiredApps('kube-system', caches({pod: pods}), settings(), new Map()).objects.length, 0)
    assert.equal(desiredApps('a', caches({pod: pods}), settings({watch_namespaces: ['b']}), new Map()).objects.length, 0)
    assert.equal(desiredApps('a', caches({pod: pods}), settings({watch_namespaces: ['a']}), new Map()).objects.length, 1)
    assert.equal(desiredApps('a', caches({pod: pods}), settings({watch_namespaces: ['a'], ignore_namespaces: ['a']}), new Map()).objects.length, 0)
  })

  it('cross-namespace conflict: ignored with a Warning on each side; an ignored namespace does not conflict', () => {
    const pods = [pod('a', 'p1', {app: 'dup'}), pod('b', 'p2', {app: 'dup'}), pod('kube-system', 'p3', {app: 'solo'}), pod('a', 'p4', {app: 'solo'})]
    for (const [ns, other] of [['a', 'b'], ['b', 'a']] as const) {
      const state = desiredApps(ns, caches({pod: pods}), settings(), new Map())
      assert.deepEqual(state.objects.map((o) => o.name), ns === 'a' ? ['solo'] : [])
      assert.equal(state.problems.length, 1)
      assert.equal(state.problems[0]!.reason, 'K8sAppNameConflict')
      assert.match(state.problems[0]!.message, new RegExp(`namespace\\(s\\) ${other}`))
      assert.equal(state.problems[0]!.source.kind, 'Pod')
    }
    // A meta secret of that name in another namespace: the annotation side is ignored too.
    const withSecret = desiredApps('a', caches({pod: [pod('a', 'p1', {app: 'web'})], secret: [secret('b', 'web.poly')]}), settings(), new Map())
    assert.equal(withSecret.objects.length, 0)
    assert.match(withSecret.problems[0]!.message, /namespace\(s\) b/)
  })

  it('the meta secret wins over annotations in its namespace', () => {
    const state = desiredApps('a', caches({pod: [pod('a', 'p', {app: 'web'})], ingress: [ingress('a', 'i', {polycrate_k8sapp_name: 'web'})], secret: [secret('a', 'web.poly')]}), settings(), loaded({'web.poly': goodMeta}))
    assert.deepEqual(state.objects.map((o) => [o.name, o.labels['k8sapps.polycrate.io/discovery-source']]), [['web', 'secret']])
  })

  it('BYOA: an Ingress claim wins over pods; byoa only with polycrate_k8sapp_byoa "true"; HTTPRoute before Ingress', () => {
    const byoa = desiredApps('a', caches({pod: [pod('a', 'p', {app: 'shop'})], ingress: [ingress('a', 'i', {polycrate_k8sapp_name: 'shop', polycrate_k8sapp_byoa: 'true'})]}), settings(), new Map())
    assert.deepEqual(byoa.objects[0]!.spec, {kind: 'external', byoa: true, source: {kind: 'Ingress', name: 'i', namespace: 'a'}})
    assert.equal(byoa.objects[0]!.labels['k8sapps.polycrate.io/discovery-source'], 'ingress')
    const plain = desiredApps('a', caches({ingress: [ingress('a', 'i', {polycrate_k8sapp_name: 'shop', polycrate_k8sapp_byoa: 'yes'})]}), settings(), new Map())
    assert.equal((plain.objects[0]!.spec as {byoa?: boolean}).byoa, undefined)
    const route = {...ingress('a', 'r', {polycrate_k8sapp_name: 'shop'}), kind: 'HTTPRoute'}
    const both = desiredApps('a', caches({ingress: [ingress('a', 'i', {polycrate_k8sapp_name: 'shop'})], httproute: [route]}), settings({gatewayApi: true}), new Map())
    assert.equal(both.objects[0]!.labels['k8sapps.polycrate.io/discovery-source'], 'httproute')
    // The deprecated label still claims.
    const legacy = desiredApps('a', caches({ingress: [{...ingress('a', 'i', {}), metadata: {namespace: 'a', name: 'i', labels: {'k8sapps.polycrate.io/name': 'old'}}}]}), settings(), new Map())
    assert.deepEqual(legacy.objects.map((o) => o.name), ['old'])
  })

  it('malformed annotations: empty and invalid names → Warnings, other apps unaffected', () => {
    const state = desiredApps('a', caches({pod: [pod('a', 'e', {app: ' '}), pod('a', 'l', {app: 'y'.repeat(300)}), pod('a', 'u', {app: 'Bad_Name'}), pod('a', 'ok', {app: 'ok'})]}), settings(), new Map())
    assert.deepEqual(state.objects.map((o) => o.name), ['ok'])
    assert.deepEqual(state.problems.map((p) => [p.source.name, p.reason]), [['e', 'EmptyK8sAppName'], ['l', 'InvalidK8sAppName'], ['u', 'InvalidK8sAppName']])
    assert.ok(state.problems[1]!.message.length < 400, 'a long name is cut in the message')
  })

  it('status.artifacts: images of the app\'s pods (registry filter applied); none when artifact discovery is off', () => {
    const pods = [pod('a', 'p1', {app: 'web', images: ['nginx:1', 'registry.k8s.io/pause:3.9']}), pod('a', 'p2', {app: 'web', images: ['nginx:1']}), pod('a', 'p3', {images: ['redis:7']})]
    const state = desiredApps('a', caches({pod: pods}), settings(), new Map())
    assert.deepEqual(state.objects[0]!.status, {artifacts: [{name: 'nginx-1', image: 'nginx:1', pod_count: 2}], artifact_count: 1})
    assert.deepEqual(desiredApps('a', caches({pod: pods}), settings({artifacts: undefined}), new Map()).objects[0]!.status, {})
  })
})

describe('Pods (pure)', () => {
  it('slimPod keeps only what discovery needs', () => {
    const slim = pod('a', 'p', {app: 'web', owner: 'Job'})
    assert.deepEqual(Object.keys(slim.metadata!.annotations!), ['polycrate_k8sapp_name'])
    assert.equal(JSON.stringify(slim).includes('BIG'), false, 'env dropped')
    assert.equal(isJobPod(slim), true)
    assert.equal(isJobPod(pod('a', 'q', {owner: 'ReplicaSet'})), false)
    assert.equal(isJobPod(pod('a', 'r')), false, 'bare pods count')
  })

  it('kube/pods.ts slimPod keeps only the annotations named; podContainers lists init containers first', () => {
    const full = {metadata: {name: 'p', namespace: 'a', annotations: {polycrate_k8sapp_name: 'web', 'other/annotation': 'x', kept: 'y'}},
      spec: {initContainers: [{name: 'init', image: 'busybox'}], containers: [{name: 'main', image: 'nginx:1'}]},
      status: {conditions: [{type: 'Ready', status: 'True'}]}}
    assert.equal(slimPod(full).metadata.annotations, undefined, 'none named: none kept')
    assert.deepEqual(slimPod(full, ['kept', 'absent']).metadata.annotations, {kept: 'y'})
    assert.equal(slimPod(full).status.ready, true)
    assert.deepEqual(podContainers(slimPod(full) as SlimPod).map((c) => c.image), ['busybox', 'nginx:1'])
  })

  it('podStatus counts, restarts within the hour, and a hash that only moves with the figures', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    const pods = [
      pod('a', 'p1', {restarts: 3, terminatedAt: '2026-01-01T11:30:00Z'}),
      pod('a', 'p2', {ready: false, restarts: 1, terminatedAt: '2026-01-01T10:00:00Z'}),
    ]
    const status = podStatus(pods, now, configHash)
    assert.deepEqual({...status, pods_status_hash: undefined}, {
      pods_total: 2, pods_ready: 1, pods_available: 1, pods_unavailable: 1, pods_restart_count_total: 4, pods_restart_count_last_hour: 1,
      pods_details: [{name: 'p1', phase: 'Running', ready: true, restarts: 3}, {name: 'p2', phase: 'Running', ready: false, restarts: 1}],
      pods_status_hash: undefined,
    })
    assert.equal(podStatus([...pods].reverse(), now, configHash).pods_status_hash, status.pods_status_hash, 'order does not matter')
    assert.notEqual(podStatus([pods[0]!], now, configHash).pods_status_hash, status.pods_status_hash)
  })

  it('which pods count for an app: secret apps all non-Job pods of the namespace, external apps only matching ones', () => {
    const secretApp = {apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sApp', metadata: {namespace: 'a', name: 'web'}, spec: {kind: 'helm' as const, source: {kind: 'Secret', name: 'web.poly'}}}
    const externalApp = {...secretApp, spec: {kind: 'external' as const, source: {kind: 'Pod', name: 'web'}}}
    assert.equal(podCountsFor(secretApp, pod('a', 'x')), true)
    assert.equal(podCountsFor(secretApp, pod('b', 'x')), false)
    assert.equal(podCountsFor(secretApp, pod('a', 'j', {owner: 'Job'})), false)
    assert.equal(podCountsFor(externalApp, pod('a', 'x')), false)
    assert.equal(podCountsFor(externalApp, pod('a', 'y', {app: 'web'})), true)
    assert.equal(podCountsFor(externalApp, pod('a', 'z', {app: 'web', owner: 'Job'})), false)
  })
})

describe('K8sApp payload (pure)', () => {
  const object = (spec: Record<string, unknown>, name = 'web') => ({metadata: {name, namespace: 'prod'}, spec})
  it('block app: kind, installed_version, flags, block id only when resolved', () => {
    const body = k8sAppPayload(object({kind: 'helm', block: {name: 'web', version: '1.2.0', display_name: 'Web'}, action: {name: 'install', status: 'success'}, source: {kind: 'Secret', name: 'web.poly'}}), 'c1', 'b1')
    assert.deepEqual(body, {
      name: 'web', namespace: 'prod', kind: 'helm', k8s_cluster: 'c1', created_by_component: 'operator', display_name: 'Web', block: 'b1', byoa: false, installed_version: '1.2.0', source: 'secret',
      installed: true, installation_running: false, installation_failed: false, uninstalled: false, uninstallation_running: false, uninstallation_failed: false, active: true,
    })
    assert.equal('block' in k8sAppPayload(object({block: {name: 'web'}}), 'c1'), false, 'an unresolved block is not sent as null')
  })
  it('an app with a CR is active and not uninstalled (an app marked uninstalled comes back); only an uninstall action says otherwise', () => {
    const external = k8sAppPayload(object({kind: 'external', source: {kind: 'Pod', name: 'web'}}), 'c1')
    assert.deepEqual([external.uninstalled, external.active, 'installed' in external], [false, true, false])
    const gone = k8sAppPayload(object({kind: 'helm', action: {name: 'uninstall', status: 'success'}}), 'c1')
    assert.deepEqual([gone.uninstalled, 'active' in gone], [true, false])
    assert.equal(k8sAppPayload(object({kind: 'helm', action: {name: 'uninstall', status: 'running'}}), 'c1').active, true)
  })
  it('byoa is always sent, true only for an external BYOA app; the operator\'s own app never sends installed_version', () => {
    assert.equal(k8sAppPayload(object({kind: 'external', byoa: true}), 'c1').byoa, true)
    assert.equal(k8sAppPayload(object({kind: 'external'}), 'c1').byoa, false)
    // An app first seen as external (byoa false) or BYOA that becomes a block's app must not keep the old flag.
    assert.equal(k8sAppPayload(object({kind: 'helm'}), 'c1').byoa, false)
    assert.equal(k8sAppPayload(object({kind: 'helm', byoa: true}), 'c1').byoa, false)
    assert.equal(k8sAppPayload(object({block: {name: OPERATOR_NAME, version: '9'}}, OPERATOR_NAME), 'c1').installed_version, undefined)
  })
})

describe('Artifacts (pure)', () => {
  const rows: Array<[string, {registry: string; repository: string; tag?: string; digest?: string} | undefined, string | undefined]> = [
    ['cargo.ayedo.cloud/library/nginx:1.25.3', {registry: 'cargo.ayedo.cloud', repository: 'library/nginx', tag: '1.25.3'}, 'cargo-ayedo-cloud-library-nginx-1-25-3'],
    ['nginx', {registry: 'docker.io', repository: 'library/nginx', tag: 'latest'}, 'nginx'],
    ['nginx:1.27', {registry: 'docker.io', repository: 'library/nginx', tag: '1.27'}, 'nginx-1-27'],
    ['bitnami/redis:7', {registry: 'docker.io', repository: 'bitnami/redis', tag: '7'}, 'bitnami-redis-7'],
    ['index.docker.io/library/nginx:1', {registry: 'docker.io', repository: 'library/nginx', tag: '1'}, 'index-docker-io-library-nginx-1'],
    ['localhost:5000/team/app', {registry: 'localhost:5000', repository: 'team/app', tag: 'latest'}, 'localhost-5000-team-app'],
    ['localhost/app:2', {registry: 'localhost', repository: 'app', tag: '2'}, 'localhost-app-2'],
    ['registry.example.com:8443/a/b/c:v1.0', {registry: 'registry.example.com:8443', repository: 'a/b/c', tag: 'v1.0'}, 'registry-example-com-8443-a-b-c-v1-0'],
    [`busybox@sha256:${'b'.repeat(64)}`, {registry: 'docker.io', repository: 'library/busybox', digest: `sha256:${'b'.repeat(64)}`}, `busybox-sha256-${'b'.repeat(64)}`],
    [`quay.io/x/y:1@sha256:${'c'.repeat(64)}`, {registry: 'quay.io', repository: 'x/y', tag: '1', digest: `sha256:${'c'.repeat(64)}`}, `quay-io-x-y-1-sha256-${'c'.repeat(64)}`],
    ['Example.COM/Team/App:TAG', {registry: 'example.com', repository: 'Team/App', tag: 'TAG'}, 'example-com-team-app-tag'],
    ['', undefined, undefined],
    ['   ', undefined, undefined],
    ['nginx:', undefined, 'nginx'],
    ['a//b', undefined, 'a-b'],
    ['nginx@notadigest', undefined, 'nginx-notadigest'],
    ['with space:1', undefined, 'with-space-1'],
  ]
  for (const [image, parts, name] of rows) {
    it(`"${image.slice(0, 50)}" → ${parts ? `${parts.registry} ${parts.repository}` : 'not a reference'} / ${name ?? 'no name'}`, () => {
      const parsed = parseImage(image)
      if (!parts) assert.equal(parsed, undefined)
      else assert.deepEqual({...parsed, image: undefined}, {image: undefined, ...parts})
      assert.equal(artifactName(image), name)
    })
  }
  it('long references are cut to 253 with a hash suffix, distinct per reference', () => {
    const a = artifactName(`r.io/${'x'.repeat(300)}:1`)!
    const b = artifactName(`r.io/${'x'.repeat(300)}:2`)!
    assert.equal(a.length, 253)
    assert.notEqual(a, b)
    assert.match(a, /-[0-9a-f]{10}$/)
  })
  it('digest from imageID; registry filters', () => {
    assert.equal(digestOfImageID(`docker-pullable://nginx@sha256:${'d'.repeat(64)}`), `sha256:${'d'.repeat(64)}`)
    assert.equal(digestOfImageID('docker://abc'), undefined)
    assert.equal(registryAllowed('docker.io', {include_registries: [], exclude_registries: []}), true)
    assert.equal(registryAllowed('registry.k8s.io', {include_registries: [], exclude_registries: ['registry.k8s.io']}), false)
    assert.equal(registryAllowed('quay.io', {include_registries: ['docker.io'], exclude_registries: []}), false)
    assert.equal(registryAllowed('docker.io', {include_registries: ['index.docker.io'], exclude_registries: []}), true)
    assert.equal(registryAllowed('Docker.io', {include_registries: ['docker.io'], exclude_registries: ['docker.io']}), false, 'exclude wins')
  })

  const artSettings = (overrides: Partial<ArtifactDiscoverySettings> = {}): ArtifactDiscoverySettings => ({
    watch_namespaces: [], ignore_namespaces: ['kube-system'], registry_filter: {include_registries: [], exclude_registries: []}, pod_label_selector: '', staleMinutes: 60, ...overrides,
  })
  it('desiredArtifact: usage from pods in scope, k8s_apps, and the stale clock', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    const app = {apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sApp', metadata: {namespace: 'a', name: 'web'}, spec: {source: {kind: 'Pod'}}} as KubeObject
    const pods = [pod('a', 'p1', {app: 'web', images: ['nginx:1']}), pod('b', 'p2', {images: ['nginx:1']}), pod('kube-system', 'p3', {images: ['nginx:1']})]
    const used = desiredArtifact('nginx-1', caches({pod: pods, k8sapp: [app]}), artSettings(), now)
    assert.deepEqual(used.objects[0]!.spec, {image: 'nginx:1', registry: 'docker.io', repository: 'library/nginx', tag: '1', usage: {namespaces: ['a', 'b'], pod_count: 2, k8s_apps: [{name: 'web', namespace: 'a'}]}})
    assert.deepEqual(artifactGroupsOf(pods[0]!), ['nginx-1'])
    // No pods any more: kept since last_seen_at for staleMinutes, then gone.
    const current = {apiVersion: 'polycrate.io/v1alpha1', kind: 'Artifact', metadata: {name: 'nginx-1', labels: {polycrate_discovered: 'true'}}, spec: used.objects[0]!.spec} as KubeObject
    // An Artifact someone made by hand (not labelled as discovered) is not this discovery's: nothing to keep or stamp.
    const handMade = {...current, metadata: {name: 'nginx-1'}} as KubeObject
    assert.deepEqual(desiredArtifact('nginx-1', caches({artifact: [handMade]}), artSettings(), now).objects, [])
    const fresh = desiredArtifact('nginx-1', caches({artifact: [current]}), artSettings(), now)
    assert.equal(fresh.objects[0]!.status?.last_seen_at, new Date(now).toISOString())
    assert.equal(fresh.requeueAfterMs, 60 * 60_000)
    const marked = {...current, status: {last_seen_at: new Date(now).toISOString()}} as KubeObject
    assert.equal(desiredArtifact('nginx-1', caches({artifact: [marked]}), artSettings(), now + 59 * 60_000).objects.length, 1)
    assert.equal(desiredArtifact('nginx-1', caches({artifact: [marked]}), artSettings(), now + 60 * 60_000).objects.length, 0)
    assert.equal(desiredArtifact('nginx-1', caches({artifact: [marked]}), artSettings({staleMinutes: 5}), now + 5 * 60_000).objects.length, 0)
    // A registry the filter stops admitting: removed at once.
    assert.equal(desiredArtifact('nginx-1', caches({artifact: [marked]}), artSettings({registry_filter: {include_registries: ['quay.io'], exclude_registries: []}}), now).objects.length, 0)
  })
  it('a pod with an image that names no artifact → InvalidImageReference on the pod', () => {
    const bad = pod('a', 'bad', {images: ['', 'nginx:1']})
    const groups = artifactGroupsOf(bad)
    assert.deepEqual(groups, ['pod:a/bad', 'nginx-1'])
    const state = desiredArtifact('pod:a/bad', caches({pod: [bad]}), artSettings(), 0)
    assert.deepEqual(state.problems.map((p) => [p.source.name, p.reason]), [['bad', 'InvalidImageReference']])
  })
})

describe('K8sApp and Artifact settings (every setting has an effect)', () => {
  const config = (spec: Record<string, unknown>) => {
    const result = validateOperatorConfig(spec)
    assert.ok(result.ok)
    return result.config
  }
  it('artifact_discovery: pod_label_selector selects the pod informer, cache_ttl_minutes is the recompute interval, stale_cleanup_minutes the removal age', () => {
    const c = config({artifact_discovery: {pod_label_selector: 'team=a', cache_ttl_minutes: 7, stale_cleanup_minutes: 90}})
    const s = artifactDiscovery.settings(c, () => true)
    assert.equal(artifactDiscovery.sources(s).find((source) => source.id === 'pod')!.request.labelSelector, 'team=a')
    assert.equal(artifactDiscovery.sources(artifactDiscovery.settings(config({}), () => true)).find((source) => source.id === 'pod')!.request.labelSelector, undefined)
    assert.equal(artifactDiscovery.staleCleanupMinutes(c), 7)
    assert.equal(s.staleMinutes, 90)
    assert.equal(artifactDiscovery.enabled(config({artifact_discovery: {enabled: false}})), false)
  })
  it('app_discovery: enabled, stale_cleanup_minutes, label_discovery_enabled, namespaces; artifact_discovery.enabled decides status.artifacts', () => {
    const declaration = k8sAppDiscovery()
    const c = config({app_discovery: {stale_cleanup_minutes: 3, label_discovery_enabled: false, watch_namespaces: ['x']}, artifact_discovery: {enabled: false}})
    assert.equal(declaration.staleCleanupMinutes(c), 3)
    assert.equal(declaration.enabled(config({app_discovery: {enabled: false}})), false)
    const s = k8sAppDiscoverySettings(c, () => false)
    assert.equal(s.label_discovery_enabled, false)
    assert.deepEqual(s.watch_namespaces, ['x'])
    assert.equal(s.artifacts, undefined)
    assert.equal(declaration.sources(s).find((source) => source.id === 'secret')!.request.metadataOnly, true, 'Secrets are watched metadata-only')
  })
})

describe('K8sApp pod status: its status write', () => {
  const ref = {group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps', namespace: 'shop', name: 'shop', subresource: 'status'}
  const client = (failure?: Error) => {
    const patches: unknown[] = []
    return {patches, mergePatch: async (_ref: unknown, patch: unknown) => {
      patches.push(patch)
      if (failure) throw failure
      return {}
    }} as unknown as {patches: unknown[]} & Pick<KubeClient, 'mergePatch'>
  }
  const cases: Array<[string, Error | undefined, boolean]> = [
    ['written', undefined, false],
    ['the K8sApp gone meanwhile (404): nothing left to record, no failure', new KubeApiError(404, 'NotFound', 'k8sapps.polycrate.io "shop" not found'), false],
    ['any other error fails the reconcile (retried)', new KubeApiError(409, 'Conflict', 'modified'), true],
  ]
  for (const [name, failure, throws] of cases) {
    it(name, async () => {
      const fake = client(failure)
      const writing = writePodStatus(fake, ref, {pods_total: 0})
      if (throws) await assert.rejects(writing)
      else await writing
      assert.deepEqual(fake.patches, [{apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sApp', status: {pods_total: 0}}])
    })
  }
})
