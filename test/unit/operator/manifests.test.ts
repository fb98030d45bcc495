import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import type {KubeObject} from '../../../src/kube/client.js'
import {GRACEFUL_SHUTDOWN_SECONDS, OPERATOR_NODE_OPTIONS, operatorManifests, PRE_STOP_SLEEP_SECONDS, type ManifestOptions} from '../../../src/operator/manifests.js'
import {METRICS_AUTH_PERMISSIONS} from '../../../src/operator/runtime/secure-metrics.js'
import {operatorPermissions} from '../../../src/operator/operator.js'
import {CORE_PERMISSIONS, policyRules, roleRules, type Permission} from '../../../src/operator/permissions.js'

const base = {namespace: 'polycrate', image: 'registry.example.com/polycrate-operator:1.2.3', replicas: 2, externalDnsWebhookPort: 8888, metricsPort: 8080, healthPort: 8081, vmServiceScrape: false}
const find = (objects: KubeObject[], kind: string, name?: string) => objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name))

describe('permissions → RBAC rules (pure)', () => {
  const cases: Array<{name: string; permissions: Permission[]; cluster: unknown; namespaced?: Record<string, unknown>}> = [
    {
      name: 'resources with the same verbs share a rule; verbs are merged and ordered',
      permissions: [
        {group: '', resource: 'nodes', verbs: ['watch', 'get']},
        {group: '', resource: 'nodes', verbs: ['list']},
        {group: '', resource: 'persistentvolumes', verbs: ['get', 'list', 'watch']},
      ],
      cluster: [{apiGroups: [''], resources: ['nodes', 'persistentvolumes'], verbs: ['get', 'list', 'watch']}],
    },
    {
      name: 'groups stay apart; different verb sets stay apart',
      permissions: [
        {group: 'networking.k8s.io', resource: 'ingresses', verbs: ['get', 'list', 'watch', 'patch']},
        {group: 'polycrate.io', resource: 'endpoints', verbs: ['get', 'list', 'watch']},
      ],
      cluster: [
        {apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list', 'watch', 'patch']},
        {apiGroups: ['polycrate.io'], resources: ['endpoints'], verbs: ['get', 'list', 'watch']},
      ],
    },
    {
      name: 'named objects keep their own rule',
      permissions: [
        {group: '', resource: 'namespaces', verbs: ['get'], names: ['kube-system']},
        {group: '', resource: 'nodes', verbs: ['get']},
      ],
      cluster: [
        {apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: ['kube-system']},
        {apiGroups: [''], resources: ['nodes'], verbs: ['get']},
      ],
    },
    {
      name: 'operator-namespace and fixed-namespace permissions become Roles',
      permissions: [
        {group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'], scope: 'namespace'},
        {group: '', resource: 'configmaps', verbs: ['get'], namespace: 'kube-system', names: ['extension-apiserver-authentication']},
      ],
      cluster: [],
      namespaced: {
        '': [{apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update']}],
        'kube-system': [{apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['extension-apiserver-authentication']}],
      },
    },
  ]
  for (const c of cases) {
    it(c.name, () => {
      const roles = roleRules(c.permissions)
      assert.deepEqual(roles.cluster, c.cluster)
      assert.deepEqual(Object.fromEntries(roles.namespaced), c.namespaced ?? {})
    })
  }

  it('refuses list/watch limited to names, unless the client selects by name (Kubernetes authorizes those by name only then)', () => {
    assert.throws(() => policyRules([{group: '', resource: 'secrets', verbs: ['list'], names: ['token']}]), /list and watch cannot be limited/)
    // A client that lists and watches with fieldSelector=metadata.name=token is authorized by name.
    assert.deepEqual(policyRules([{group: '', resource: 'secrets', verbs: ['get', 'list', 'watch'], names: ['token'], watchesByName: true}]),
      [{apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'], resourceNames: ['token']}])
  })
})

describe('the operator\'s own permissions', () => {
  const permissions = operatorPermissions()
  const rules = roleRules(permissions)
  const all = [...rules.cluster, ...[...rules.namespaced.values()].flat()]

  it('has no wildcard group, resource or verb', () => {
    for (const rule of all) {
      assert.ok(!rule.apiGroups.includes('*') && !rule.resources.includes('*') && !rule.verbs.includes('*' as never), JSON.stringify(rule))
    }
  })

  it('never deletes Secrets, Nodes or CRDs, and never writes RBAC or workloads', () => {
    const clusterVerbs = (group: string, resource: string) => rules.cluster.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs)
    assert.ok(!clusterVerbs('', 'secrets').includes('delete'))
    assert.deepEqual(clusterVerbs('apiextensions.k8s.io', 'customresourcedefinitions'), ['get', 'list', 'watch'])
    assert.ok(!clusterVerbs('', 'nodes').some((verb) => ['create', 'delete', 'update'].includes(verb)))
    for (const group of ['rbac.authorization.k8s.io', 'apps']) assert.deepEqual(all.filter((r) => r.apiGroups.includes(group)), [])
  })

  it('derives discovery rights from the declarations: sources read, finalizer sources patched, targets owned', () => {
    const verbs = (group: string, resource: string) => new Set(permissions.filter((p) => p.group === group && p.resource === resource).flatMap((p) => p.verbs))
    assert.ok(verbs('networking.k8s.io', 'ingresses').has('patch'), 'Ingress finalizer')
    assert.ok(!verbs('cert-manager.io', 'certificates').has('patch'), 'cert-manager Certificates are only read')
    for (const verb of ['create', 'patch', 'delete'] as const) assert.ok(verbs('polycrate.io', 'endpoints').has(verb))
    assert.ok(verbs('polycrate.io', 'endpoints/status').has('patch'))
    for (const core of CORE_PERMISSIONS) assert.ok(permissions.includes(core))
  })
})

describe('operatorManifests (pure)', () => {
  const permissions = operatorPermissions()

  it('binds the ServiceAccount to the base ClusterRole and namespace Role, and to one ClusterRole (and Roles) per feature', () => {
    const objects = operatorManifests(base, permissions)
    const [role] = find(objects, 'ClusterRole', 'polycrate-operator') as Array<KubeObject & {rules: unknown}>
    // The base role: what every feature set needs; secure metrics (the default) add the TokenReview and
    // SubjectAccessReview the metrics filter sends.
    assert.deepEqual(role!.rules, roleRules([...CORE_PERMISSIONS, ...METRICS_AUTH_PERMISSIONS]).cluster)
    const binding = find(objects, 'ClusterRoleBinding', 'polycrate-operator')[0] as unknown as {subjects: unknown; roleRef: {name: string}}
    assert.deepEqual(binding.subjects, [{kind: 'ServiceAccount', name: 'polycrate-operator', namespace: 'polycrate'}])
    const roleBinding = find(objects, 'RoleBinding', 'polycrate-operator')[0]
    assert.equal(roleBinding?.metadata?.namespace, 'polycrate')
    // Each feature's role holds exactly its rules, bound to the same ServiceAccount.
    const features = [...new Set(permissions.map((permission) => permission.feature).filter((feature) => feature !== undefined))]
    assert.ok(features.length > 10)
    for (const feature of features) {
      const rules = roleRules(permissions.filter((permission) => permission.feature === feature))
      const name = `polycrate-operator:${feature}`
      assert.deepEqual((find(objects, 'ClusterRole', name)[0] as unknown as {rules: unknown} | undefined)?.rules, rules.cluster.length > 0 ? rules.cluster : undefined, name)
      for (const [where, namespaced] of rules.namespaced) {
        const namespaceRole = find(objects, 'Role', name).find((object) => object.metadata?.namespace === (where || 'polycrate')) as unknown as {rules: unknown}
        assert.deepEqual(namespaceRole.rules, namespaced, `${name} in ${where || 'polycrate'}`)
      }
      for (const kind of ['ClusterRoleBinding', 'RoleBinding']) {
        for (const each of find(objects, kind, name) as unknown as Array<{subjects: unknown; roleRef: {name: string}}>) {
          assert.deepEqual([each.roleRef.name, each.subjects], [name, [{kind: 'ServiceAccount', name: 'polycrate-operator', namespace: 'polycrate'}]])
        }
      }
    }
  })

  it('the roles together grant what one role of every permission would (grants = resources × verbs × names)', () => {
    const grants = (rules: Array<{apiGroups?: string[]; resources?: string[]; verbs: string[]; resourceNames?: string[]}>, where: string) =>
      rules.flatMap((rule) => (rule.apiGroups ?? []).flatMap((group) => (rule.resources ?? []).flatMap((resource) => rule.verbs.flatMap((verb) => (rule.resourceNames ?? ['*']).map((name) => `${where}|${group}|${resource}|${verb}|${name}`)))))
    const objects = operatorManifests(base, permissions) as unknown as Array<KubeObject & {rules: Array<{apiGroups?: string[]; resources?: string[]; verbs: string[]; resourceNames?: string[]}>}>
    const granted = new Set(objects.filter((object) => (object.kind === 'ClusterRole' || object.kind === 'Role') && !String(object.metadata?.name).includes('metrics-reader'))
      .flatMap((object) => grants(object.rules, object.kind === 'Role' ? object.metadata!.namespace! : '*')))
    const merged = roleRules([...permissions, ...METRICS_AUTH_PERMISSIONS])
    const expected = new Set([...grants(merged.cluster, '*'), ...[...merged.namespaced].flatMap(([where, rules]) => grants(rules, where || 'polycrate'))])
    assert.deepEqual([...granted].sort(), [...expected].sort())
  })

  it('runs two leader-electing, non-root replicas with a read-only root filesystem and probes on the health port', () => {
    const deployment = find(operatorManifests(base, permissions), 'Deployment')[0] as unknown as {spec: {replicas: number; template: {spec: {securityContext: {runAsNonRoot: boolean}; containers: Array<{image: string; args: string[]; securityContext: Record<string, unknown>; livenessProbe: {httpGet: unknown}; readinessProbe: {httpGet: unknown}; resources: {limits: Record<string, string>; requests: Record<string, string>}}>}}}}
    assert.equal(deployment.spec.replicas, 2)
    const container = deployment.spec.template.spec.containers[0]!
    assert.equal(container.image, base.image)
    assert.ok(container.args.includes('--leader-elect'))
    assert.equal(deployment.spec.template.spec.securityContext.runAsNonRoot, true)
    assert.equal(container.securityContext.readOnlyRootFilesystem, true)
    assert.equal(container.securityContext.allowPrivilegeEscalation, false)
    assert.deepEqual([container.livenessProbe.httpGet, container.readinessProbe.httpGet], [{path: '/healthz', port: 'health'}, {path: '/readyz', port: 'health'}])
    assert.ok(container.resources.limits.memory && container.resources.requests.cpu)
  })

  it('opens the external-dns webhook port to the whole cluster (the seed\'s NetworkPolicy) and serves it', () => {
    const objects = operatorManifests({...base, externalDnsWebhookPort: 9999}, permissions)
    const policy = find(objects, 'NetworkPolicy')[0] as unknown as {spec: {ingress: Array<{from?: unknown; ports: Array<{port: number}>}>}}
    assert.ok(policy.spec.ingress.some((rule) => JSON.stringify(rule.from) === '[{"namespaceSelector":{}}]' && rule.ports.some((port) => port.port === 9999)))
    const service = find(objects, 'Service', 'polycrate-operator')[0] as unknown as {spec: {ports: Array<{name: string; port: number}>}}
    assert.deepEqual(service.spec.ports.map((p) => [p.name, p.port]), [['dns-webhook', 9999]])
  })

  it('routes the webhooks and metrics to every replica (webhooks serve on each), which learn their Pod name', () => {
    const objects = operatorManifests({...base, vmServiceScrape: true}, permissions)
    type Service = {metadata: {labels: Record<string, string>}; spec: {selector: Record<string, string>; ports: Array<{name: string}>}}
    const [webhooks] = find(objects, 'Service', 'polycrate-operator') as unknown as Service[]
    const [metrics] = find(objects, 'Service', 'polycrate-operator-metrics') as unknown as Service[]
    assert.deepEqual(webhooks!.spec.selector, {'app.kubernetes.io/name': 'polycrate-operator'})
    assert.deepEqual(metrics!.spec.selector, {'app.kubernetes.io/name': 'polycrate-operator'})
    assert.deepEqual(metrics!.spec.ports.map((p) => p.name), ['metrics'])
    const scrape = find(objects, 'VMServiceScrape')[0] as unknown as {spec: {selector: {matchLabels: Record<string, string>}}}
    // The scrape selects the metrics Service and not the webhook one.
    const selects = (labels: Record<string, string>) => Object.entries(scrape.spec.selector.matchLabels).every(([k, v]) => labels[k] === v)
    assert.deepEqual([selects(metrics!.metadata.labels), selects(webhooks!.metadata.labels)], [true, false])
    const deployment = find(objects, 'Deployment')[0] as unknown as {spec: {template: {metadata: {labels: Record<string, string>}; spec: {containers: Array<{env: Array<{name: string; valueFrom: unknown}>}>}}}}
    assert.deepEqual(deployment.spec.template.spec.containers[0]!.env.find((e) => e.name === 'POD_NAME')?.valueFrom, {fieldRef: {fieldPath: 'metadata.name'}})
    assert.equal((deployment.spec.template.spec.containers[0]!.env.find((e) => e.name === 'NODE_OPTIONS') as {value?: string} | undefined)?.value, OPERATOR_NODE_OPTIONS)
    // The template does not carry the label, so a rollout never fights the running leader over it.
    assert.equal(deployment.spec.template.metadata.labels['polycrate.io/leader'], undefined)
    const role = find(objects, 'Role', 'polycrate-operator').find((r) => r.metadata?.namespace === 'polycrate') as unknown as {rules: Array<{apiGroups: string[]; resources: string[]; verbs: string[]}>}
    assert.ok(role.rules.some((rule) => rule.apiGroups[0] === '' && rule.resources.includes('pods') && rule.verbs.includes('patch')), 'patch on pods in the operator namespace')
  })

  it('adds the DNS01 APIService, its serving certificate and cert-manager\'s right to call the solver only when asked', () => {
    assert.deepEqual(find(operatorManifests(base, permissions), 'APIService'), [])
    const objects = operatorManifests({...base, dns01: {groupName: 'acme.example.com', solverName: 'polycrate', port: 10250, certManagerServiceAccount: {namespace: 'cert-manager', name: 'cert-manager'}}}, permissions)
    const service = find(objects, 'APIService')[0] as unknown as {metadata: {name: string; annotations: Record<string, string>}; spec: {group: string; version: string; service: unknown}}
    assert.equal(service.metadata.name, 'v1alpha1.acme.example.com')
    assert.deepEqual([service.spec.group, service.spec.version, service.spec.service], ['acme.example.com', 'v1alpha1', {name: 'polycrate-operator', namespace: 'polycrate', port: 443}])
    assert.equal(service.metadata.annotations['cert-manager.io/inject-ca-from'], 'polycrate/polycrate-operator-dns01-webhook')
    const solver = find(objects, 'ClusterRole', 'polycrate-operator:dns01-solver')[0] as unknown as {rules: unknown}
    assert.deepEqual(solver.rules, [{apiGroups: ['acme.example.com'], resources: ['polycrate'], verbs: ['create']}])
    assert.equal(find(objects, 'Certificate').length, 1)
  })

  it('stops gracefully: preStop sleep, then a grace period longer than sleep + graceful shutdown; defaults without values', () => {
    type Pod = {terminationGracePeriodSeconds: number; imagePullSecrets?: unknown; containers: Array<{lifecycle: unknown; resources: unknown; securityContext: {capabilities: unknown}}>}
    const pod = (find(operatorManifests(base, permissions), 'Deployment')[0] as unknown as {spec: {template: {spec: Pod}}}).spec.template.spec
    assert.deepEqual(pod.containers[0]!.lifecycle, {preStop: {sleep: {seconds: PRE_STOP_SLEEP_SECONDS}}})
    assert.ok(pod.terminationGracePeriodSeconds > PRE_STOP_SLEEP_SECONDS + GRACEFUL_SHUTDOWN_SECONDS, String(pod.terminationGracePeriodSeconds))
    assert.deepEqual(pod.containers[0]!.resources, {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '1000m', memory: '1Gi'}})
    assert.deepEqual(pod.containers[0]!.securityContext.capabilities, {drop: ['ALL']})
    assert.equal(pod.imagePullSecrets, undefined)
  })

  it('adds a VMServiceScrape for the metrics port only when asked: https with the scraper\'s token and the CA, or plain with metrics.secure false', () => {
    assert.deepEqual(find(operatorManifests(base, permissions), 'VMServiceScrape'), [])
    const scrape = find(operatorManifests({...base, vmServiceScrape: true}, permissions), 'VMServiceScrape')[0] as unknown as {spec: {endpoints: unknown}}
    assert.deepEqual(scrape.spec.endpoints, [{
      port: 'metrics', path: '/metrics', scheme: 'https',
      bearerTokenSecret: {name: 'polycrate-operator-metrics-scraper-token', key: 'token'},
      tlsConfig: {ca: {secret: {name: 'polycrate-operator-metrics-tls', key: 'ca.crt'}}, serverName: 'polycrate-operator-metrics.polycrate.svc'},
    }])
    const plain = find(operatorManifests({...base, vmServiceScrape: true, metrics: {secure: false}}, permissions), 'VMServiceScrape')[0] as unknown as {spec: {endpoints: unknown}}
    assert.deepEqual(plain.spec.endpoints, [{port: 'metrics', path: '/metrics'}])
  })
})

type PodSpec = {
  securityContext: Record<string, unknown>; topologySpreadConstraints?: unknown[]
  containers: Array<{args: string[]; securityContext: {capabilities: unknown}; volumeMounts: Array<{name: string; mountPath: string}>}>
  volumes: Array<{name: string; secret?: {secretName: string}}>
}
const podOf = (objects: KubeObject[]) => (find(objects, 'Deployment')[0] as unknown as {spec: {template: {spec: PodSpec}}}).spec.template.spec
const labelsOf = (objects: KubeObject[]) => find(objects, 'Namespace')[0]!.metadata!.labels!
const one = {...base, replicas: 1}
const allPermissions = operatorPermissions()

describe('the restricted Pod Security profile (pure)', () => {
  const cases: Array<{name: string; add?: string[]; enforce: string}> = [
    {name: 'no capability added: restricted', enforce: 'restricted'},
    {name: 'NET_BIND_SERVICE (restricted allows it): restricted', add: ['NET_BIND_SERVICE'], enforce: 'restricted'},
    {name: 'CHOWN: baseline', add: ['CHOWN'], enforce: 'baseline'},
    {name: 'NET_RAW (not even baseline allows it): privileged', add: ['NET_RAW'], enforce: 'privileged'},
    {name: 'SYS_ADMIN: privileged', add: ['SYS_ADMIN', 'CHOWN'], enforce: 'privileged'},
  ]
  for (const c of cases) {
    it(`${c.name}; pinned to v1.35, warn and audit at restricted on latest`, () => {
      assert.deepEqual(Object.fromEntries(Object.entries(labelsOf(operatorManifests({...base, addCapabilities: c.add}, allPermissions))).filter(([key]) => key.startsWith('pod-security'))), {
        'pod-security.kubernetes.io/enforce': c.enforce, 'pod-security.kubernetes.io/enforce-version': 'v1.35',
        'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/warn-version': 'latest',
        'pod-security.kubernetes.io/audit': 'restricted', 'pod-security.kubernetes.io/audit-version': 'latest',
      })
    })
  }

  it('the Pod meets restricted: non-root, RuntimeDefault seccomp, no escalation, ALL dropped; ICMP by net.ipv4.ping_group_range, not NET_RAW', () => {
    const pod = podOf(operatorManifests(base, allPermissions))
    assert.deepEqual(pod.securityContext, {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: {type: 'RuntimeDefault'}, sysctls: [{name: 'net.ipv4.ping_group_range', value: '0 2147483647'}]})
    assert.deepEqual(pod.containers[0]!.securityContext.capabilities, {drop: ['ALL']})
    assert.deepEqual(pod.volumes.map((volume) => Object.keys(volume).find((key) => key !== 'name')), ['emptyDir', 'secret'])
  })
})

describe('replicas: a PodDisruptionBudget and a spread over nodes from 2 on (pure)', () => {
  for (const replicas of [1, 2, 3]) {
    it(`${replicas} replica${replicas > 1 ? 's' : ''}`, () => {
      const objects = operatorManifests({...base, replicas}, allPermissions)
      const budgets = find(objects, 'PodDisruptionBudget') as unknown as Array<{metadata: {namespace: string}; spec: unknown}>
      const spread = podOf(objects).topologySpreadConstraints
      if (replicas < 2) {
        assert.deepEqual([budgets, spread], [[], undefined])
        return
      }
      assert.deepEqual(budgets.map((budget) => [budget.metadata.namespace, budget.spec]), [['polycrate', {maxUnavailable: 1, selector: {matchLabels: {'app.kubernetes.io/name': 'polycrate-operator'}}, unhealthyPodEvictionPolicy: 'AlwaysAllow'}]])
      assert.deepEqual(spread, [{maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: {matchLabels: {'app.kubernetes.io/name': 'polycrate-operator'}}, matchLabelKeys: ['pod-template-hash']}])
    })
  }
})

describe('secure metrics in the manifests (pure)', () => {
  type Binding = {subjects: Array<{kind: string; namespace: string; name: string}>; roleRef: {name: string}}

  it('--metrics-secure with the install\'s certificate mounted; the operator may send the reviews; a metrics-reader ClusterRole bound to the scraper and the readers', () => {
    const objects = operatorManifests({...one, metrics: {secure: true, readers: [{kind: 'ServiceAccount', namespace: 'monitoring', name: 'vmagent'}, {kind: 'Group', name: 'monitoring-readers'}]}}, allPermissions)
    const pod = podOf(objects)
    assert.deepEqual(pod.containers[0]!.args.slice(-3), ['--metrics-secure', '--metrics-cert-dir', '/etc/polycrate/metrics-tls'])
    assert.deepEqual(pod.containers[0]!.volumeMounts.find((mount) => mount.name === 'metrics-tls'), {name: 'metrics-tls', mountPath: '/etc/polycrate/metrics-tls', readOnly: true})
    assert.equal(pod.volumes.find((volume) => volume.name === 'metrics-tls')?.secret?.secretName, 'polycrate-operator-metrics-tls')
    const operatorRole = find(objects, 'ClusterRole', 'polycrate-operator')[0] as unknown as {rules: Array<{apiGroups: string[]; resources: string[]; verbs: string[]}>}
    for (const resource of ['tokenreviews', 'subjectaccessreviews']) assert.ok(operatorRole.rules.some((rule) => rule.resources.includes(resource) && rule.verbs.join() === 'create'), resource)
    assert.deepEqual((find(objects, 'ClusterRole', 'polycrate-operator-metrics-reader')[0] as unknown as {rules: unknown}).rules, [{nonResourceURLs: ['/metrics'], verbs: ['get']}])
    const binding = find(objects, 'ClusterRoleBinding', 'polycrate-operator-metrics-reader')[0] as unknown as Binding
    assert.equal(binding.roleRef.name, 'polycrate-operator-metrics-reader')
    assert.deepEqual(binding.subjects, [{kind: 'ServiceAccount', name: 'polycrate-operator-metrics-scraper', namespace: 'polycrate'}])
    const readers = find(objects, 'ClusterRoleBinding', 'polycrate-operator-metrics-readers')[0] as unknown as Binding
    assert.deepEqual([readers.roleRef.name, readers.subjects], ['polycrate-operator-metrics-reader', [
      {kind: 'ServiceAccount', namespace: 'monitoring', name: 'vmagent'},
      {kind: 'Group', name: 'monitoring-readers'},
    ]])
    assert.deepEqual(find(operatorManifests({...one, metrics: {secure: true}}, allPermissions), 'ClusterRoleBinding', 'polycrate-operator-metrics-readers'), [])
    const token = find(objects, 'Secret', 'polycrate-operator-metrics-scraper-token')[0] as unknown as {type: string; metadata: {annotations: Record<string, string>}}
    assert.deepEqual([token.type, token.metadata.annotations], ['kubernetes.io/service-account-token', {'kubernetes.io/service-account.name': 'polycrate-operator-metrics-scraper'}])
    assert.equal((find(objects, 'ServiceAccount', 'polycrate-operator-metrics-scraper')[0] as unknown as {automountServiceAccountToken: boolean}).automountServiceAccountToken, false)
  })

  it('metrics.secure false: today\'s plain endpoint, no reader objects, no review rights, no certificate', () => {
    const objects = operatorManifests({...one, metrics: {secure: false, readers: [{kind: 'ServiceAccount', namespace: 'monitoring', name: 'vmagent'}]}}, allPermissions)
    const pod = podOf(objects)
    assert.ok(!pod.containers[0]!.args.includes('--metrics-secure'))
    assert.deepEqual(pod.volumes.map((volume) => volume.name), ['tmp'])
    assert.deepEqual([...find(objects, 'ClusterRole', 'polycrate-operator-metrics-reader'), ...find(objects, 'ServiceAccount', 'polycrate-operator-metrics-scraper'), ...find(objects, 'Secret')], [])
    const operatorRole = find(objects, 'ClusterRole', 'polycrate-operator')[0] as unknown as {rules: Array<{resources: string[]}>}
    assert.ok(!operatorRole.rules.some((rule) => rule.resources.includes('tokenreviews')))
  })
})

describe('the NetworkPolicy: who reaches the webhook and /metrics (pure)', () => {
  type Rule = {from?: unknown[]; ports: Array<{port: number}>}
  const rulesFor = (options: Partial<ManifestOptions>) => {
    const policy = find(operatorManifests({...one, ...options}, allPermissions), 'NetworkPolicy')[0] as unknown as {spec: {ingress: Rule[]}}
    return Object.fromEntries(policy.spec.ingress.map((rule) => [rule.ports.map((port) => port.port).join(), rule.from ?? 'anywhere']))
  }
  const monitoring = {namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'monitoring'}}}
  const externalDns = {namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}, podSelector: {matchLabels: {'app.kubernetes.io/name': 'external-dns'}}}
  const cases: Array<{name: string; options: Partial<ManifestOptions>; rules: Record<string, unknown>}> = [
    {name: 'defaults: the webhook and metrics open to every namespace (the reference), probes from the cluster', options: {}, rules: {8888: [{namespaceSelector: {}}], 8080: [{namespaceSelector: {}}], 8081: [{namespaceSelector: {}}]}},
    {name: 'external_dns_webhook.allowed_from replaces the whole-cluster rule', options: {externalDnsWebhookAllowedFrom: [externalDns]}, rules: {8888: [externalDns], 8080: [{namespaceSelector: {}}], 8081: [{namespaceSelector: {}}]}},
    {name: 'metrics.allowed_from narrows the metrics port only; the probes stay', options: {metrics: {secure: true, allowedFrom: [monitoring]}}, rules: {8888: [{namespaceSelector: {}}], 8080: [monitoring], 8081: [{namespaceSelector: {}}]}},
    {name: 'an empty list: no rule for the port (`from: []` would let everything in)', options: {externalDnsWebhookAllowedFrom: [], metrics: {secure: true, allowedFrom: []}}, rules: {8081: [{namespaceSelector: {}}]}},
    {name: 'the DNS01 port for the aggregator, from anywhere', options: {dns01: {groupName: 'g', solverName: 's', port: 10250, certManagerServiceAccount: {namespace: 'cert-manager', name: 'cert-manager'}}}, rules: {8888: [{namespaceSelector: {}}], 8080: [{namespaceSelector: {}}], 8081: [{namespaceSelector: {}}], 10250: 'anywhere'}},
  ]
  for (const c of cases) it(c.name, () => assert.deepEqual(rulesFor(c.options), c.rules))
})

describe('the container\'s V8 settings (OPERATOR_NODE_OPTIONS)', () => {
  // A burst of allocations that survive, as a watch burst: with Node's defaults the young generation grows to 2 × 16
  // MiB and stays committed; with the container's settings it stays at 2 × 4 MiB. Node refuses an option that
  // NODE_OPTIONS may not carry (the container would not start): the exit code tells.
  const newSpaceAfterBurst = (nodeOptions: string) => {
    const result = spawnSync(process.execPath, ['-e', `
      const kept = []; for (let i = 0; i < 2e6; i++) kept.push({i})
      const space = require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')
      console.log(space.space_size)`], {env: {...process.env, NODE_OPTIONS: nodeOptions}, encoding: 'utf8'})
    assert.equal(result.status, 0, result.stderr)
    return Number(result.stdout.trim()) / 1024 ** 2
  }

  it('are accepted in NODE_OPTIONS and keep the young generation at 8 MiB after a burst (Node\'s default grows it past that)', () => {
    assert.ok(newSpaceAfterBurst(OPERATOR_NODE_OPTIONS) <= 8, 'young generation ≤ 2 × 4 MiB')
    assert.ok(newSpaceAfterBurst('') > 8, 'the default grows past it: the setting is what keeps it small')
  })
})
