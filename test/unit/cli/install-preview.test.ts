import assert from 'node:assert/strict'
import {PassThrough} from 'node:stream'
import {diffName, entryDiff, previewLine, previewSummary} from '../../../src/cli/install-preview.js'
import {askYesNo, renderUninstallListing} from '../../../src/cli/uninstall-confirm.js'
import type {KubeObject} from '../../../src/kube/client.js'
import {comparable, maskSecretValues, previewChanges, previewEntry, type PreviewEntry} from '../../../src/operator/install/preview.js'

const deployment = (replicas: number, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'polycrate-operator', namespace: 'polycrate', labels: {app: 'x'},
    uid: 'u-1', resourceVersion: '42', generation: 3, creationTimestamp: '2026-12-01T00:00:00Z',
    managedFields: [{manager: 'polycrate-operator', operation: 'Apply'}],
    annotations: {'deployment.kubernetes.io/revision': '3'},
  },
  spec: {replicas, strategy: {type: 'RollingUpdate'}},
  status: {readyReplicas: 1},
  ...extra,
} as KubeObject)

describe('comparable: an object without the server\'s bookkeeping', () => {
  it('drops managedFields, resourceVersion, generation, uid, creationTimestamp, status and server annotations', () => {
    assert.deepEqual(comparable(deployment(1)), {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: {name: 'polycrate-operator', namespace: 'polycrate', labels: {app: 'x'}},
      spec: {replicas: 1, strategy: {type: 'RollingUpdate'}},
    })
  })
  it('keeps the other annotations', () => {
    const object = {...deployment(1), metadata: {name: 'a', annotations: {'deployment.kubernetes.io/revision': '1', mine: 'yes'}}}
    assert.deepEqual(comparable(object).metadata, {name: 'a', annotations: {mine: 'yes'}})
  })
})

describe('maskSecretValues: which keys change, never what they hold', () => {
  const secret = (data: Record<string, string>): KubeObject => ({apiVersion: 'v1', kind: 'Secret', metadata: {name: 's'}, data} as KubeObject)
  it('equal values ***, changed (before)/(after), new and removed keys', () => {
    const {live, planned} = maskSecretValues(secret({token: 'b2xk', same: 'eA==', gone: 'eQ=='}), secret({token: 'bmV3', same: 'eA==', added: 'eg=='}))
    assert.deepEqual((live as {data: unknown}).data, {token: '*** (before)', same: '***', gone: '*** (before)'})
    assert.deepEqual((planned as {data: unknown}).data, {token: '*** (after)', same: '***', added: '*** (after)'})
    assert.doesNotMatch(JSON.stringify({live, planned}), /b2xk|bmV3|eA==|eQ==|eg==/)
  })
  it('not a Secret: as it is', () => {
    const object = deployment(1)
    assert.equal(maskSecretValues(object, undefined).live, object)
  })
})

describe('previewEntry: create, change or unchanged from the live object and the server\'s dry-run answer', () => {
  it('no live object: create', () => assert.equal(previewEntry(deployment(1), undefined, deployment(1)).action, 'create'))
  it('only bookkeeping differs: unchanged', () => {
    const after = deployment(1)
    after.metadata = {...after.metadata, resourceVersion: '43', managedFields: [{manager: 'other'}]}
    assert.equal(previewEntry(deployment(1), deployment(1), after).action, 'unchanged')
  })
  it('the spec differs: change, and the unified diff shows it', () => {
    const entry = previewEntry(deployment(1), deployment(1), deployment(2, {metadata: {...deployment(2).metadata, generation: 4}}))
    assert.equal(entry.action, 'change')
    assert.equal(entryDiff(entry), [
      '--- live/apps.v1.Deployment.polycrate.polycrate-operator',
      '+++ planned/apps.v1.Deployment.polycrate.polycrate-operator',
      '@@ -6,6 +6,6 @@',
      '   labels:',
      '     app: x',
      ' spec:',
      '-  replicas: 1',
      '+  replicas: 2',
      '   strategy:',
      '     type: RollingUpdate',
      '',
    ].join('\n'))
  })
  it('a Secret whose token changes: the diff names the key, masked', () => {
    const secret = (token: string) => ({apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace: 'polycrate'}, type: 'Opaque', data: {token}} as KubeObject)
    const diff = entryDiff(previewEntry(secret('b2xk'), secret('b2xk'), secret('bmV3')))!
    assert.match(diff, /^- {2}token: '\*\*\* \(before\)'$/m)
    assert.match(diff, /^\+ {2}token: '\*\*\* \(after\)'$/m)
    assert.doesNotMatch(diff, /b2xk|bmV3/)
  })
  it('unchanged, kept and skipped entries have no diff', () => {
    for (const action of ['unchanged', 'keep', 'skip'] as const) {
      assert.equal(entryDiff({kind: 'X', apiVersion: 'v1', name: 'x', action}), undefined)
    }
  })
  it('a delete: every line removed', () => {
    const entry: PreviewEntry = {kind: 'ConfigMap', apiVersion: 'v1', name: 'd', namespace: 'p', action: 'delete', live: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'd'}}}
    assert.match(entryDiff(entry)!, /^--- live\/v1\.ConfigMap\.p\.d\n\+\+\+ planned\/v1\.ConfigMap\.p\.d\n@@ -1,4 \+0,0 @@\n-apiVersion: v1\n-kind: ConfigMap\n/)
  })
})

describe('the dry-run lines and summary', () => {
  const entries: PreviewEntry[] = [
    {kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1', name: 'endpoints.polycrate.io', action: 'unchanged'},
    {kind: 'Namespace', apiVersion: 'v1', name: 'polycrate', action: 'create'},
    {kind: 'Deployment', apiVersion: 'apps/v1', name: 'polycrate-operator', namespace: 'polycrate', action: 'create', note: 'the namespace polycrate is created first: not checked by the server'},
    {kind: 'Secret', apiVersion: 'v1', name: 'polycrate-api-token', namespace: 'polycrate', action: 'keep', note: 'no api_token in the values: the existing Secret is used'},
    {kind: 'VMRule', apiVersion: 'operator.victoriametrics.com/v1beta1', name: 'polycrate-operator', namespace: 'polycrate', action: 'skip', note: 'the CRD vmrules.operator.victoriametrics.com is not installed'},
    {kind: 'ConfigMap', apiVersion: 'v1', name: 'polycrate-operator-dashboard', namespace: 'polycrate', action: 'delete', note: 'metrics.dashboard is false'},
  ]
  it('one line per object', () => {
    assert.deepEqual(entries.map((entry) => previewLine(entry)), [
      'unchanged    CustomResourceDefinition endpoints.polycrate.io',
      'would create Namespace polycrate',
      'would create Deployment polycrate/polycrate-operator (the namespace polycrate is created first: not checked by the server)',
      'kept         Secret polycrate/polycrate-api-token (no api_token in the values: the existing Secret is used)',
      'skipped      VMRule polycrate/polycrate-operator (the CRD vmrules.operator.victoriametrics.com is not installed)',
      'would delete ConfigMap polycrate/polycrate-operator-dashboard (metrics.dashboard is false)',
    ])
  })
  it('the summary and the count of changes (kubectl diff\'s exit code)', () => {
    const preview = {namespace: 'polycrate', entries, warnings: []}
    assert.equal(previewSummary(preview), 'Dry run: 2 to create, 1 to delete, 1 unchanged, 1 kept, 1 skipped (nothing was written).')
    assert.equal(previewChanges(preview), 3)
    assert.equal(previewChanges({...preview, entries: entries.filter((entry) => entry.action === 'unchanged')}), 0)
  })
  it('diffName: kubectl diff\'s file names', () => {
    assert.equal(diffName({apiVersion: 'v1', kind: 'Secret', namespace: 'ns', name: 'a'}), 'v1.Secret.ns.a')
    assert.equal(diffName({apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'r'}), 'rbac.authorization.k8s.io.v1.ClusterRole.r')
  })
})

describe('uninstall\'s question', () => {
  it('lists the Deployment it scales down, the finalizers it releases, what it deletes', () => {
    const text = renderUninstallListing({
      namespace: 'polycrate',
      scale: {kind: 'Deployment', name: 'polycrate-operator', namespace: 'polycrate', replicas: 2},
      release: [{kind: 'Ingress', count: 3}, {kind: 'HTTPRoute', count: 1}, {kind: 'Endpoint', count: 4}],
      delete: [{kind: 'Deployment', name: 'polycrate-operator', namespace: 'polycrate'}, {kind: 'Namespace', name: 'polycrate', note: 'install created it; only if nothing else lives in it'}],
      crds: ['endpoints.polycrate.io'],
    }, {server: 'https://k8s:6443', crds: false})
    assert.equal(text, [
      'polycrate operator uninstall will, on https://k8s:6443:',
      '  scale to 0  Deployment polycrate/polycrate-operator (2 replicas now)',
      '  release     the operator\'s finalizers on 3 Ingresses, 1 HTTPRoute, 4 Endpoints (nothing is deleted in the Polycrate API)',
      '  delete      Deployment polycrate/polycrate-operator',
      '  delete      Namespace polycrate (install created it; only if nothing else lives in it)',
      'The polycrate.io CRDs and objects stay (--crds removes them).',
    ].join('\n'))
  })
  it('--crds lists the CRDs; nothing found says so', () => {
    assert.match(renderUninstallListing({namespace: 'x', release: [], delete: [], crds: ['endpoints.polycrate.io']}, {server: 's', crds: true}),
      /\n {2}delete {6}CustomResourceDefinition endpoints\.polycrate\.io \(and every object of it\)$/)
    assert.match(renderUninstallListing({namespace: 'x', release: [], delete: [], crds: []}, {server: 's', crds: true}), /nothing: no operator objects found in namespace x$/)
  })
  for (const [answer, expected] of [['y', true], ['YES', true], [' yes ', true], ['n', false], ['', false], ['yep', false]] as const) {
    it(`askYesNo: "${answer}" → ${expected}`, async () => {
      const input = new PassThrough()
      const output = new PassThrough()
      const asked = askYesNo('Uninstall? [y/N] ', {input, output})
      input.write(`${answer}\n`)
      assert.equal(await asked, expected)
    })
  }
})
