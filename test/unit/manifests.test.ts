import assert from 'node:assert/strict'
import type {KubeObject} from '../../src/kube/client.js'
import {GRACEFUL_SHUTDOWN_SECONDS, operatorManifests, PRE_STOP_SLEEP_SECONDS} from '../../src/operator/manifests.js'
import {operatorPermissions} from '../../src/operator/operator.js'
import {CORE_PERMISSIONS, policyRules, roleRules, type Permission} from '../../src/operator/permissions.js'

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

  it('binds the ServiceAccount to the generated ClusterRole and the namespace Role', () => {
    const objects = operatorManifests(base, permissions)
    const [role] = find(objects, 'ClusterRole', 'polycrate-operator') as Array<KubeObject & {rules: unknown}>
    assert.deepEqual(role!.rules, roleRules(operatorPermissions()).cluster)
    const binding = find(objects, 'ClusterRoleBinding', 'polycrate-operator')[0] as unknown as {subjects: unknown; roleRef: {name: string}}
    assert.deepEqual(binding.subjects, [{kind: 'ServiceAccount', name: 'polycrate-operator', namespace: 'polycrate'}])
    const roleBinding = find(objects, 'RoleBinding', 'polycrate-operator')[0]
    assert.equal(roleBinding?.metadata?.namespace, 'polycrate')
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

  it('adds a VMServiceScrape for the metrics port only when asked', () => {
    assert.deepEqual(find(operatorManifests(base, permissions), 'VMServiceScrape'), [])
    const scrape = find(operatorManifests({...base, vmServiceScrape: true}, permissions), 'VMServiceScrape')[0] as unknown as {spec: {endpoints: unknown}}
    assert.deepEqual(scrape.spec.endpoints, [{port: 'metrics', path: '/metrics'}])
  })
})
