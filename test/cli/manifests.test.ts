import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'

type Container = {image: string}
type Obj = {apiVersion: string; kind: string; metadata: {name: string; namespace?: string; labels?: Record<string, string>}; spec?: {template?: {spec: {containers: Container[]}}}; rules?: unknown[]}

describe('polycrate operator manifests', () => {
  it('prints Namespace, ServiceAccount, RBAC, Deployment, Services and NetworkPolicy as multi-document YAML; says on stderr that the webhook is open', async () => {
    const {stdout, stderr, error} = await runCommand(['operator', 'manifests', '--namespace', 'ops', '--image', 'registry.example.com/op:1'])
    assert.equal(error, undefined)
    const objects = yaml.loadAll(stdout).filter(Boolean) as Obj[]
    // The base role, then one ClusterRole per feature the defaults enable; no metrics certificate (the operator makes one).
    const features = ['endpoint-discovery', 'host-discovery', 'volume-discovery', 'velero-backup-discovery', 'velero-schedule-discovery', 'cnpg-backup-discovery',
      'cnpg-schedule-discovery', 'certificate-discovery', 'k8s-cluster', 's3-bucket-provisioning', 'k8sapp-discovery', 'artifact-discovery']
    assert.deepEqual(objects.map((o) => `${o.kind} ${o.metadata.name}`), [
      'Namespace ops',
      'ServiceAccount polycrate-operator', 'ClusterRole polycrate-operator', 'ClusterRoleBinding polycrate-operator', 'Role polycrate-operator', 'RoleBinding polycrate-operator',
      ...features.flatMap((feature) => [`ClusterRole polycrate-operator:${feature}`, `ClusterRoleBinding polycrate-operator:${feature}`]),
      'ClusterRole polycrate-operator-metrics-reader', 'ClusterRoleBinding polycrate-operator-metrics-reader', 'ServiceAccount polycrate-operator-metrics-scraper', 'Secret polycrate-operator-metrics-scraper-token',
      'Deployment polycrate-operator', 'Service polycrate-operator', 'Service polycrate-operator-metrics', 'NetworkPolicy polycrate-operator',
    ])
    // The RBAC of the features the defaults enable: the DNS01 webhook is off, so no Role in kube-system.
    assert.deepEqual(objects.filter((o) => o.kind === 'Role').map((o) => o.metadata.namespace), ['ops'])
    assert.match(stderr, /^Warning: The external-dns webhook in ops \(port 8888\) accepts calls from every namespace/m)
    assert.doesNotMatch(stderr, /holds the Secret/, 'no private key in the output')
    for (const o of objects.filter((o) => !['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind))) assert.equal(o.metadata.namespace, 'ops', o.kind)
    assert.equal(objects.find((o) => o.kind === 'Deployment')!.spec!.template!.spec.containers[0]!.image, 'registry.example.com/op:1')
  })

  it('-o json prints a List; --dns01-webhook and --vm-service-scrape add their objects', async () => {
    const {stdout, error} = await runCommand(['operator', 'manifests', '-o', 'json', '--dns01-webhook', '--vm-service-scrape', '--dns01-group-name', 'acme.example.org'])
    assert.equal(error, undefined)
    const list = JSON.parse(stdout) as {kind: string; items: Obj[]}
    assert.equal(list.kind, 'List')
    const kinds = list.items.map((o) => o.kind)
    for (const kind of ['APIService', 'Issuer', 'Certificate', 'VMServiceScrape']) assert.ok(kinds.includes(kind), kind)
    assert.equal(list.items.find((o) => o.kind === 'APIService')!.metadata.name, 'v1alpha1.acme.example.org')
  })

  it('defaults: the block\'s image and 1 replica; the webhook Service selects every replica', async () => {
    const {stdout, error} = await runCommand(['operator', 'manifests', '-o', 'json'])
    assert.equal(error, undefined)
    const items = (JSON.parse(stdout) as {items: Array<Obj & {spec: {replicas?: number; selector?: Record<string, string>}}>}).items
    const deployment = items.find((o) => o.kind === 'Deployment')!
    assert.match(deployment.spec.template!.spec.containers[0]!.image, /^cargo\.ayedo\.cloud\/library\/polycrate:\d+\.\d+\.\d+/)
    assert.equal(deployment.spec.replicas, 1)
    assert.deepEqual(items.find((o) => o.kind === 'Service' && o.metadata.name === 'polycrate-operator')!.spec.selector, {'app.kubernetes.io/name': 'polycrate-operator'})
    assert.equal(items.some((o) => o.kind === 'OperatorConfig'), false, 'without --values: no OperatorConfig')
    assert.deepEqual(items.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name), ['polycrate-operator-metrics-scraper-token'], 'no credentials, no certificate')
  })

  it('--all-features: the RBAC of every feature (the DNS01 webhook\'s Role in kube-system too), more rules than the defaults\'', async () => {
    // The operator's roles: those bound to its ServiceAccount (not the metrics reader, not cert-manager's solver role).
    const rules = async (args: string[]) => {
      const {stdout} = await runCommand(['operator', 'manifests', '-o', 'json', ...args])
      const items = (JSON.parse(stdout) as {items: Array<Obj & {roleRef?: {kind: string; name: string}; subjects?: Array<{kind: string; name: string}>}>}).items
      const bound = new Set(items.filter((o) => o.subjects?.some((subject) => subject.kind === 'ServiceAccount' && subject.name === 'polycrate-operator'))
        .map((o) => `${o.roleRef!.kind} ${o.roleRef!.kind === 'Role' ? o.metadata.namespace : ''} ${o.roleRef!.name}`))
      const roles = items.filter((o) => ['ClusterRole', 'Role'].includes(o.kind) && bound.has(`${o.kind} ${o.kind === 'Role' ? o.metadata.namespace : ''} ${o.metadata.name}`))
      return {roles: roles.map((o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`), count: roles.reduce((sum, o) => sum + o.rules!.length, 0)}
    }
    const [defaults, all] = [await rules([]), await rules(['--all-features'])]
    assert.equal(defaults.roles.length, 14, defaults.roles.join(', '))
    assert.ok(!defaults.roles.some((role) => role.startsWith('Role kube-system/')), 'the DNS01 webhook is off: no Role in kube-system')
    assert.equal(all.roles.length, 31, all.roles.join(', '))
    for (const role of ['ClusterRole polycrate-operator', 'Role polycrate/polycrate-operator', 'ClusterRole polycrate-operator:cloud-node', 'Role kube-system/polycrate-operator:dns01-webhook']) assert.ok(all.roles.includes(role), role)
    assert.ok(defaults.roles.every((role) => all.roles.includes(role)))
    assert.ok(all.count > defaults.count, `${all.count} > ${defaults.count}`)
    // --dns01-webhook grants what the webhook needs, without --all-features.
    const dns01 = await rules(['--dns01-webhook'])
    assert.deepEqual(dns01.roles.filter((role) => !defaults.roles.includes(role)), ['Role polycrate/polycrate-operator:dns01-webhook', 'Role kube-system/polycrate-operator:dns01-webhook'])
  })

  describe('--values', () => {
    let dir: string
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'manifests-values-'))
    })
    after(() => rm(dir, {recursive: true, force: true}))

    it('prints what install applies: Secrets, OperatorConfig (without the token), VMServiceScrape; warns on stderr about the Secrets', async () => {
      const values = path.join(dir, 'workspace.poly')
      await writeFile(values, [
        'blocks:',
        '  - name: polycrate-operator',
        '    from: cargo.ayedo.cloud/ayedo/k8s/polycrate-operator',
        '    config:',
        '      namespace: ops',
        '      image_tag: "2.0.0"',
        '      deployment: {replicas: 2}',
        '      security: {add_capabilities: [NET_RAW]}',
        '      operator_config:',
        '        api_sync: {enabled: true, api_url: "https://api.polycrate.io", credentials: {api_token: "tok-very-secret"}}',
      ].join('\n'))
      const {stdout, stderr, error} = await runCommand(['operator', 'manifests', '--values', values])
      assert.equal(error, undefined)
      const objects = yaml.loadAll(stdout).filter(Boolean) as Array<Obj & {spec?: unknown; data?: Record<string, string>}>
      const kinds = objects.map((o) => o.kind)
      assert.deepEqual([kinds[0], kinds[1], kinds.at(-2), kinds.at(-1)], ['Namespace', 'Secret', 'OperatorConfig', 'VMServiceScrape'])
      const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'polycrate-api-token')!
      assert.equal(Buffer.from(secret.data!.token!, 'base64').toString(), 'tok-very-secret')
      assert.ok(!JSON.stringify(objects.find((o) => o.kind === 'OperatorConfig')).includes('tok-very-secret'))
      const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as {spec: {replicas: number; template: {spec: {containers: Array<{image: string; securityContext: {capabilities: unknown}}>}}}}
      assert.equal(deployment.spec.replicas, 2)
      assert.equal(deployment.spec.template.spec.containers[0]!.image, 'cargo.ayedo.cloud/library/polycrate:2.0.0')
      assert.deepEqual(deployment.spec.template.spec.containers[0]!.securityContext.capabilities, {drop: ['ALL'], add: ['NET_RAW']})
      assert.match(stderr, /holds the Secret polycrate-api-token with credentials/)
      assert.match(stderr, /^Warning: security\.add_capabilities \(NET_RAW\) takes the operator's Pod out of the restricted Pod Security profile/m)
      assert.equal(objects[0]!.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'privileged')
      assert.ok(!stderr.includes('tok-very-secret'))
      for (const o of objects.filter((o) => !['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind) && o.metadata.namespace !== 'kube-system')) assert.equal(o.metadata.namespace, 'ops', o.kind)

      const {stdout: flagged} = await runCommand(['operator', 'manifests', '--values', values, '--no-vm-service-scrape', '--replicas', '3', '-n', 'other'])
      const again = yaml.loadAll(flagged).filter(Boolean) as Array<Obj & {spec?: {replicas?: number}}>
      assert.equal(again.some((o) => o.kind === 'VMServiceScrape'), false)
      assert.equal(again.find((o) => o.kind === 'Deployment')!.spec!.replicas, 3)
      assert.equal(again.find((o) => o.kind === 'OperatorConfig')!.metadata.namespace, 'other')
    })

    it('metrics.alerts adds the VMRule, metrics.dashboard the dashboard ConfigMap; --prometheus-rule and --no-vm-rule choose the rule kind', async () => {
      const values = path.join(dir, 'observability.yaml')
      await writeFile(values, 'config:\n  namespace: ops\n  metrics:\n    alerts: true\n    dashboard: true\n')
      const {stdout, error} = await runCommand(['operator', 'manifests', '--values', values])
      assert.equal(error, undefined)
      const objects = yaml.loadAll(stdout).filter(Boolean) as Array<Obj & {metadata: {labels?: Record<string, string>}; spec?: {groups?: Array<{name: string}>}; data?: Record<string, string>}>
      assert.deepEqual(objects.slice(-3).map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace}/${o.metadata.name}`), [
        'operator.victoriametrics.com/v1beta1 VMServiceScrape ops/polycrate-operator',
        'operator.victoriametrics.com/v1beta1 VMRule ops/polycrate-operator',
        'v1 ConfigMap ops/polycrate-operator-dashboard',
      ])
      assert.deepEqual(objects.find((o) => o.kind === 'VMRule')!.spec!.groups!.map((g) => g.name), [
        'polycrate-operator.availability', 'polycrate-operator.controllers', 'polycrate-operator.api-sync',
        'polycrate-operator.webhooks', 'polycrate-operator.monitoring', 'polycrate-operator.resources',
      ])
      const dashboard = objects.find((o) => o.kind === 'ConfigMap')!
      assert.equal(dashboard.metadata.labels?.grafana_dashboard, '1')
      assert.equal((JSON.parse(dashboard.data!['polycrate-operator.json']!) as {title: string}).title, 'Polycrate operator')

      const {stdout: prometheus} = await runCommand(['operator', 'manifests', '--values', values, '--prometheus-rule', '--no-vm-rule', '--no-dashboard', '-o', 'json'])
      const kinds = (JSON.parse(prometheus) as {items: Obj[]}).items.map((o) => o.kind)
      assert.ok(kinds.includes('PrometheusRule'))
      assert.equal(kinds.includes('VMRule') || kinds.includes('ConfigMap'), false)

      const {stdout: flagsOnly} = await runCommand(['operator', 'manifests', '--vm-rule', '--dashboard', '-o', 'json'])
      const items = (JSON.parse(flagsOnly) as {items: Obj[]}).items
      assert.deepEqual(items.slice(-2).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`), ['VMRule polycrate/polycrate-operator', 'ConfigMap polycrate/polycrate-operator-dashboard'])
    })

    it('external_dns_webhook.allowed_from narrows the webhook\'s rule and silences the warning', async () => {
      const values = path.join(dir, 'narrow.yaml')
      await writeFile(values, 'config:\n  external_dns_webhook:\n    allowed_from:\n      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: external-dns}}\n')
      const {stdout, stderr, error} = await runCommand(['operator', 'manifests', '--values', values, '-o', 'json'])
      assert.equal(error, undefined)
      const policy = (JSON.parse(stdout) as {items: Array<Obj & {spec: {ingress: Array<{from?: unknown[]; ports: Array<{port: number}>}>}}>}).items.find((o) => o.kind === 'NetworkPolicy')!
      assert.deepEqual(policy.spec.ingress.find((rule) => rule.ports[0]!.port === 8888)!.from, [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}])
      assert.doesNotMatch(stderr, /Warning/)
    })

    it('an unknown key exits 2 and names the nearest valid key', async () => {
      const values = path.join(dir, 'bad.yaml')
      await writeFile(values, 'config:\n  operator_config:\n    endpoint_discovry: {enabled: false}\n')
      const {error} = await runCommand(['operator', 'manifests', '--values', values])
      assert.equal(error?.oclif?.exit, 2)
      assert.match(error!.message, /bad\.yaml: invalid operator block values:\n\s+config\.operator_config\.endpoint_discovry: unknown setting \(did you mean "endpoint_discovery"\?\)/)
    })
  })

  it('a malformed --cert-manager-service-account exits 2 and says the form', async () => {
    const {error} = await runCommand(['operator', 'manifests', '--dns01-webhook', '--cert-manager-service-account', 'cert-manager'])
    assert.equal(error?.oclif?.exit, 2)
    assert.match(error!.message, /namespace\/name/)
  })
})
