import assert from 'node:assert/strict'
import type {KubeObject} from '../../../src/kube/client.js'
import {createCertificate} from '../../../src/lib/x509.js'
import {installPlan} from '../../../src/operator/install/objects.js'
import {makeMetricsTlsSecret, metricsTlsPlan, metricsTlsProblem} from '../../../src/operator/install/metrics-tls.js'
import {installedPostureInput, opensToEveryNamespace, postureOfPlan, postureWarnings, type PostureInput} from '../../../src/operator/install/posture.js'
import {supersededObjects} from '../../../src/operator/install/superseded.js'
import {parseBlockValues} from '../../../src/operator/install/values.js'
import type {NetworkPolicyPeer} from '../../../src/operator/manifests.js'
import {operatorPermissions} from '../../../src/operator/operator.js'

const WEBHOOK = /^The external-dns webhook in polycrate \(port 8888\) accepts calls from every namespace, without authentication: any Pod in the cluster can change DNS records/
const input = (extra: Partial<PostureInput> = {}): PostureInput => ({
  namespace: 'polycrate', addCapabilities: [], externalDnsWebhook: {enabled: true, port: 8888}, metrics: {secure: true, port: 8080}, ...extra,
})

describe('posture warnings (pure)', () => {
  const externalDns: NetworkPolicyPeer = {namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}
  const cases: Array<{name: string; input: PostureInput; warnings: RegExp[]}> = [
    {name: 'the defaults: the webhook open to every namespace, said in one line', input: input(), warnings: [WEBHOOK]},
    {name: 'the webhook narrowed to external-dns\' namespace: nothing to say', input: input({externalDnsWebhook: {enabled: true, port: 8888, allowedFrom: [externalDns]}}), warnings: []},
    {name: 'the webhook narrowed to nobody', input: input({externalDnsWebhook: {enabled: true, port: 8888, allowedFrom: []}}), warnings: []},
    {name: 'the webhook disabled: its port serves nothing', input: input({externalDnsWebhook: {enabled: false, port: 8888}}), warnings: []},
    {name: 'a peer with empty namespace and pod selectors is every namespace', input: input({externalDnsWebhook: {enabled: true, port: 9999, allowedFrom: [externalDns, {namespaceSelector: {}, podSelector: {}}]}}), warnings: [/^The external-dns webhook in polycrate \(port 9999\)/]},
    {name: 'ipBlock 0.0.0.0/0 is every namespace and more', input: input({externalDnsWebhook: {enabled: true, port: 8888, allowedFrom: [{ipBlock: {cidr: '0.0.0.0/0'}}]}}), warnings: [WEBHOOK]},
    {name: 'metrics.secure false', input: input({externalDnsWebhook: {enabled: false, port: 8888}, metrics: {secure: false, port: 8080}}), warnings: [/^metrics\.secure is false: \/metrics \(port 8080\) is plain HTTP without authentication/]},
    {
      name: 'NET_RAW: out of restricted, the namespace install creates enforces privileged; ICMP needs no NET_RAW',
      input: input({externalDnsWebhook: {enabled: false, port: 8888}, addCapabilities: ['NET_RAW']}),
      warnings: [/^security\.add_capabilities \(NET_RAW\) takes the operator's Pod out of the restricted Pod Security profile \(it meets privileged, which namespace polycrate then enforces\)\. ICMP checks need no NET_RAW: the Pod sets net\.ipv4\.ping_group_range\.$/],
    },
    {name: 'CHOWN: baseline', input: input({externalDnsWebhook: {enabled: false, port: 8888}, addCapabilities: ['CHOWN']}), warnings: [/\(CHOWN\) takes .* \(it meets baseline, which namespace polycrate then enforces\)\.$/]},
    {name: 'NET_BIND_SERVICE stays restricted', input: input({externalDnsWebhook: {enabled: false, port: 8888}, addCapabilities: ['NET_BIND_SERVICE']}), warnings: []},
    {
      name: 'a namespace install did not create, enforcing baseline, while the Pod meets restricted',
      input: input({externalDnsWebhook: {enabled: false, port: 8888}, namespaceEnforces: 'baseline'}),
      warnings: [/^Namespace polycrate enforces the baseline Pod Security profile, not restricted, which the operator's Pod meets: `kubectl label --overwrite namespace polycrate pod-security\.kubernetes\.io\/enforce=restricted`/],
    },
    {name: 'a namespace that enforces restricted', input: input({externalDnsWebhook: {enabled: false, port: 8888}, namespaceEnforces: 'restricted'}), warnings: []},
    {name: 'everything at once, most serious first', input: input({metrics: {secure: false, port: 8080}, addCapabilities: ['NET_RAW'], namespaceEnforces: 'privileged'}), warnings: [WEBHOOK, /^metrics\.secure is false/, /^security\.add_capabilities \(NET_RAW\) .*\(it meets privileged\)\./]},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const warnings = postureWarnings(c.input)
      assert.equal(warnings.length, c.warnings.length, warnings.join('\n'))
      c.warnings.forEach((pattern, index) => assert.match(warnings[index]!, pattern))
      for (const warning of warnings) assert.ok(!warning.includes('\n'), 'one line each')
    })
  }

  const peers: Array<[string, NetworkPolicyPeer[], boolean]> = [
    ['every namespace', [{namespaceSelector: {}}], true],
    ['a labelled namespace', [{namespaceSelector: {matchLabels: {a: 'b'}}}], false],
    ['a pod selector alone (the policy\'s own namespace)', [{podSelector: {}}], false],
    ['every namespace, but only some Pods', [{namespaceSelector: {}, podSelector: {matchLabels: {app: 'external-dns'}}}], false],
    ['a namespace expression', [{namespaceSelector: {matchExpressions: [{key: 'team', operator: 'Exists'}]}}], false],
    ['a private block', [{ipBlock: {cidr: '10.0.0.0/8'}}], false],
    ['::/0', [{ipBlock: {cidr: '::/0'}}], true],
    ['nobody', [], false],
  ]
  for (const [name, list, open] of peers) it(`opensToEveryNamespace: ${name} → ${open}`, () => assert.equal(opensToEveryNamespace(list), open))
})

describe('posture of what is installed, read from its objects (pure)', () => {
  it('the plan of the default values: webhook open, metrics secure, restricted', () => {
    const plan = installPlan(parseBlockValues({}), operatorPermissions())
    assert.deepEqual(postureOfPlan(plan), {namespace: 'polycrate', addCapabilities: [], externalDnsWebhook: {enabled: true, port: 8888, allowedFrom: [{namespaceSelector: {}}]}, metrics: {secure: true, port: 8080}})
    assert.equal(postureWarnings(postureOfPlan(plan)).length, 1)
  })

  it('values that narrow the webhook, turn metrics.secure off and add NET_RAW; a namespace install did not create', () => {
    const plan = installPlan(parseBlockValues({
      external_dns_webhook: {allowed_from: [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}]},
      metrics: {secure: false}, security: {add_capabilities: ['NET_RAW']}, operator_config: {external_dns_webhook: {port: 9000}},
    }), operatorPermissions())
    const posture = postureOfPlan(plan, {metadata: {name: 'polycrate', labels: {'pod-security.kubernetes.io/enforce': 'baseline'}}})
    assert.deepEqual(posture.externalDnsWebhook, {enabled: true, port: 9000, allowedFrom: [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}]})
    assert.deepEqual([posture.metrics.secure, posture.addCapabilities, posture.namespaceEnforces], [false, ['NET_RAW'], 'baseline'])
    assert.equal(postureOfPlan(installPlan(parseBlockValues({operator_config: {external_dns_webhook: {enabled: false}}}), operatorPermissions())).externalDnsWebhook.enabled, false)
  })

  it('no NetworkPolicy, or a rule without `from`: open; no Deployment: nothing to say', () => {
    const deployment = {spec: {template: {spec: {containers: [{name: 'operator', args: [], ports: [{name: 'dns-webhook', containerPort: 8888}]}]}}}} as KubeObject
    assert.deepEqual(installedPostureInput({namespace: 'p', deployment})?.externalDnsWebhook.allowedFrom, [{namespaceSelector: {}}])
    const policy = {spec: {ingress: [{ports: [{port: 8888}]}]}} as KubeObject
    assert.ok(opensToEveryNamespace(installedPostureInput({namespace: 'p', deployment, networkPolicy: policy})!.externalDnsWebhook.allowedFrom!))
    assert.equal(installedPostureInput({namespace: 'p'}), undefined)
    assert.equal(installedPostureInput({namespace: 'p', deployment, namespaceObject: {metadata: {name: 'p'}}})?.namespaceEnforces, 'privileged', 'no label: the admission default')
  })
})

describe('superseded objects of an earlier install (pure)', () => {
  const object = (kind: string, name: string, namespace?: string, extra: Record<string, unknown> = {}): KubeObject => ({kind, metadata: {name, ...(namespace ? {namespace} : {})}, ...extra})
  const ours = {subjects: [{kind: 'ServiceAccount', name: 'polycrate-operator', namespace: 'polycrate'}]}
  const planned = [object('ClusterRole', 'polycrate-operator'), object('Role', 'polycrate-operator', 'polycrate'), object('RoleBinding', 'polycrate-operator', 'polycrate', ours)]
  const cases: Array<{name: string; found: KubeObject[]; superseded: string[]}> = [
    {name: 'what is planned stays', found: planned, superseded: []},
    {
      name: 'the DNS01 webhook turned off: its Role and binding in kube-system, the solver ClusterRole, the APIService go',
      found: [...planned, object('Role', 'polycrate-operator', 'kube-system'), object('RoleBinding', 'polycrate-operator', 'kube-system', ours), object('ClusterRole', 'polycrate-operator:dns01-solver'), object('APIService', 'v1alpha1.acme.example.com')],
      superseded: ['Role kube-system/polycrate-operator', 'RoleBinding kube-system/polycrate-operator', 'ClusterRole polycrate-operator:dns01-solver', 'APIService v1alpha1.acme.example.com'],
    },
    {name: 'replicas 2 → 1: the PodDisruptionBudget goes', found: [...planned, object('PodDisruptionBudget', 'polycrate-operator', 'polycrate')], superseded: ['PodDisruptionBudget polycrate/polycrate-operator']},
    {
      name: 'a Role pair elsewhere that binds another install\'s ServiceAccount is not ours',
      found: [...planned, object('Role', 'polycrate-operator', 'kube-system'), object('RoleBinding', 'polycrate-operator', 'kube-system', {subjects: [{kind: 'ServiceAccount', name: 'polycrate-operator', namespace: 'other'}]})],
      superseded: [],
    },
    {name: 'objects in another namespace (another install) are not ours', found: [...planned, object('PodDisruptionBudget', 'polycrate-operator', 'other'), object('Secret', 'polycrate-operator-metrics-tls', 'other')], superseded: []},
  ]
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(supersededObjects(c.found, planned, 'polycrate').map((o) => `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`), c.superseded))
  }
})

describe('the metrics serving certificate install makes', () => {
  const plan = metricsTlsPlan('ops')
  const now = new Date('2027-01-01T00:00:00Z')
  const days = (n: number) => new Date(now.getTime() + n * 86_400_000)
  let secret: Awaited<ReturnType<typeof makeMetricsTlsSecret>>
  before(async () => {
    secret = await makeMetricsTlsSecret(plan, now)
  })
  const pem = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString()

  it('a kubernetes.io/tls Secret with tls.crt, tls.key and the CA that signed them, for the metrics Service\'s names', async () => {
    assert.equal(secret.type, 'kubernetes.io/tls')
    assert.deepEqual(Object.keys(secret.data!).sort(), ['ca.crt', 'tls.crt', 'tls.key'])
    assert.equal(secret.metadata?.labels?.['app.kubernetes.io/managed-by'], 'polycrate-operator-manifests')
    const {X509Certificate} = await import('node:crypto')
    const certificate = new X509Certificate(pem('tls.crt'))
    assert.ok(certificate.verify(new X509Certificate(pem('ca.crt')).publicKey))
    assert.equal(certificate.subjectAltName, 'DNS:polycrate-operator-metrics, DNS:polycrate-operator-metrics.ops, DNS:polycrate-operator-metrics.ops.svc, DNS:polycrate-operator-metrics.ops.svc.cluster.local')
  })

  it('kept while usable; made anew when missing, torn, for other names, not signed by its CA, or within a year of its end', async () => {
    const other = await createCertificate({commonName: 'x', dnsNames: plan.dnsNames, now})
    const withData = (data: Record<string, string>) => ({...secret, data: {...secret.data, ...data}})
    const b64 = (text: string) => Buffer.from(text).toString('base64')
    const cases: Array<[string, Parameters<typeof metricsTlsProblem>[0], Date, RegExp | undefined]> = [
      ['usable', secret, now, undefined],
      ['two years on: still usable', secret, days(729), undefined],
      ['within a year of the certificate\'s end', secret, days(731), /^tls\.crt expires 2029-12-31$/],
      ['missing', undefined, now, /^missing$/],
      ['no ca.crt', {...secret, data: {'tls.crt': secret.data!['tls.crt']!, 'tls.key': secret.data!['tls.key']!}}, now, /ca\.crt missing/],
      ['a key of another certificate', withData({'tls.key': b64(other.key)}), now, /^tls\.key is not the key of tls\.crt$/],
      ['a certificate its CA did not sign', withData({'tls.crt': b64(other.cert), 'tls.key': b64(other.key)}), now, /^tls\.crt is not signed by ca\.crt$/],
    ]
    for (const [name, candidate, at, problem] of cases) {
      const found = metricsTlsProblem(candidate, plan, at)
      if (problem) assert.match(found ?? '', problem, name)
      else assert.equal(found, undefined, name)
    }
    assert.match(metricsTlsProblem(secret, metricsTlsPlan('elsewhere'), now)!, /^made for other names \(not polycrate-operator-metrics\.elsewhere/)
  })
})
