/**
 * `polycrate operator install` / `uninstall` against the real apiserver. The shared control plane has no Node, so the
 * Deployment makes no Pods: install runs with --no-wait, and uninstall finds no Pods to wait for. KCM's namespace
 * and garbage-collector controllers run, so namespace deletions finish (or hang on a finalizer) as in a cluster.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import {allCrds} from '../../src/crds/index.js'
import {customResourceDefinitions} from '../../src/crds/render.js'
import type {KubeClient, KubeObject, ResourceRef} from '../../src/kube/client.js'
import {applyCrd, installCrds, waitEstablished} from '../../src/kube/crd-install.js'
import {finalizers, installedBy} from '../../src/operator/conventions.js'
import type {ObjectResult} from '../../src/operator/install/cluster-objects.js'
import {installOperator} from '../../src/operator/install/install.js'
import {PRE_STOP_SLEEP_SECONDS} from '../../src/operator/manifests.js'
import {installPlan} from '../../src/operator/install/objects.js'
import {alertRuleGroups} from '../../src/operator/install/alerts.js'
import {operatorPermissions} from '../../src/operator/operator.js'
import {parseBlockValues} from '../../src/operator/install/values.js'
import {adminClient, controlPlane, freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/helpers.js'
import {upstreamCrd} from '../support/upstream-crds.js'

const VM_CRD = 'vmservicescrapes.operator.victoriametrics.com'
/** Stand-ins for the VictoriaMetrics and Prometheus operators' rule CRDs (their group, version and names). */
const RULE_CRDS = [
  {group: 'operator.victoriametrics.com', version: 'v1beta1', kind: 'VMRule', plural: 'vmrules'},
  {group: 'monitoring.coreos.com', version: 'v1', kind: 'PrometheusRule', plural: 'prometheusrules'},
] as const
const TOKEN = 'agent-token-that-must-stay-secret'

const ref = (group: string, version: string, plural: string, namespace?: string, name?: string): ResourceRef => ({group, version, plural, namespace, name})
const refs = {
  deployment: (ns: string) => ref('apps', 'v1', 'deployments', ns, 'polycrate-operator'),
  secret: (ns: string, name: string) => ref('', 'v1', 'secrets', ns, name),
  namespace: (name: string) => ref('', 'v1', 'namespaces', undefined, name),
  operatorConfig: (ns: string) => ref('polycrate.io', 'v1alpha1', 'operatorconfigs', ns, 'default'),
  scrape: (ns: string) => ref('operator.victoriametrics.com', 'v1beta1', 'vmservicescrapes', ns, 'polycrate-operator'),
  vmRule: (ns: string) => ref('operator.victoriametrics.com', 'v1beta1', 'vmrules', ns, 'polycrate-operator'),
  prometheusRule: (ns: string) => ref('monitoring.coreos.com', 'v1', 'prometheusrules', ns, 'polycrate-operator'),
  dashboard: (ns: string) => ref('', 'v1', 'configmaps', ns, 'polycrate-operator-dashboard'),
  ingress: (ns: string, name?: string) => ref('networking.k8s.io', 'v1', 'ingresses', ns, name),
  route: (ns: string, name?: string) => ref('gateway.networking.k8s.io', 'v1', 'httproutes', ns, name),
  service: (ns: string, name?: string) => ref('', 'v1', 'services', ns, name),
  endpoint: (ns: string, name?: string) => ref('polycrate.io', 'v1alpha1', 'endpoints', ns, name),
  crd: (name: string) => ref('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', undefined, name),
}

type Deployment = KubeObject & {spec: {replicas: number; template: {spec: {imagePullSecrets?: Array<{name: string}>; terminationGracePeriodSeconds: number; containers: Array<{image: string; securityContext: {capabilities: {add?: string[]; drop: string[]}}; resources: unknown; lifecycle: unknown}>}}}}

describe('polycrate operator install / uninstall (real apiserver)', function () {
  this.timeout(300_000)
  let client: KubeClient
  let dir: string
  let api: http.Server
  let apiCalls = 0
  const namespace = `op-install-${Math.random().toString(36).slice(2, 8)}`
  let valuesFile: string

  before(async () => {
    client = adminClient()
    dir = mkdtempSync(path.join(tmpdir(), 'install-values-'))
    // Stands in for the Polycrate API: uninstall --crds must not call it.
    api = http.createServer((_request, response) => {
      apiCalls++
      response.writeHead(500).end()
    })
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
    valuesFile = path.join(dir, 'workspace.poly')
    writeFileSync(valuesFile, yaml.dump({
      name: 'acme',
      blocks: [{
        name: 'polycrate-operator',
        from: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator:0.57.1',
        config: {
          namespace,
          deployment: {replicas: 2, resources: {limits: {memory: '2Gi'}}},
          image_credentials: {enabled: true, username: 'robot', password: 'pull-secret-password'},
          security: {add_capabilities: ['NET_RAW']},
          operator_config: {
            api_sync: {enabled: true, api_url: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, credentials: {secret_name: 'polycrate-api-token', token_key: 'token', api_token: TOKEN}},
            cloud_controller: {enabled: true},
            agent: {enabled: true},
          },
        },
      }],
    }))
  })

  after(async () => {
    // Other test files share this apiserver and install the polycrate.io CRDs only once per run.
    await installCrds(client, customResourceDefinitions(allCrds))
    await client.delete(refs.crd(VM_CRD)).catch(() => undefined)
    for (const crd of RULE_CRDS) await client.delete(refs.crd(`${crd.plural}.${crd.group}`)).catch(() => undefined)
    client.close()
    rmSync(dir, {recursive: true, force: true})
    await new Promise((resolve) => api.close(resolve))
  })

  const install = async (...extra: string[]) => {
    const {stdout, error} = await runCommand(['operator', 'install', '--values', valuesFile, '--kubeconfig', controlPlane().kubeconfigPath, '--no-wait', '--json', ...extra])
    assert.equal(error, undefined, error?.message)
    return JSON.parse(stdout) as {results: ObjectResult[]; warnings: string[]; rollout: unknown; status: {operatorConfigs: unknown[]}}
  }
  const uninstall = async (...extra: string[]) => {
    const {stdout, error} = await runCommand(['operator', 'uninstall', '--values', valuesFile, '--kubeconfig', controlPlane().kubeconfigPath, '--json', '--yes', ...extra])
    assert.equal(error, undefined, error?.message)
    return JSON.parse(stdout) as {results: ObjectResult[]; warnings: string[]}
  }
  /** The last outcome of an object (uninstall scales the Deployment, then deletes it). */
  const outcome = (results: ObjectResult[], kind: string, name: string) => results.findLast((r) => r.kind === kind && r.name === name)?.outcome

  it('install --no-wait applies every object with the values; a second run changes nothing', async () => {
    const first = await install()
    for (const [kind, name] of [['Namespace', namespace], ['Secret', 'polycrate-api-token'], ['Secret', 'polycrate-registry'], ['ServiceAccount', 'polycrate-operator'],
      ['ClusterRole', 'polycrate-operator'], ['Deployment', 'polycrate-operator'], ['Service', 'polycrate-operator'], ['Service', 'polycrate-operator-metrics'],
      ['NetworkPolicy', 'polycrate-operator'], ['OperatorConfig', 'default']]) {
      assert.equal(outcome(first.results, kind!, name!), 'created', `${kind} ${name}`)
    }
    assert.equal(first.rollout, null)
    assert.equal(outcome(first.results, 'VMServiceScrape', 'polycrate-operator'), 'skipped', 'no VictoriaMetrics CRD: the scrape is skipped')
    assert.ok(first.status.operatorConfigs.length >= 1, 'ends with what status shows')

    const deployment = await client.get<Deployment>(refs.deployment(namespace))
    const pod = deployment.spec.template.spec
    assert.equal(deployment.spec.replicas, 2)
    assert.deepEqual(pod.imagePullSecrets, [{name: 'polycrate-registry'}])
    assert.deepEqual(pod.containers[0]!.securityContext.capabilities, {drop: ['ALL'], add: ['NET_RAW']})
    assert.deepEqual(pod.containers[0]!.resources, {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '1', memory: '2Gi'}})
    assert.deepEqual(pod.containers[0]!.lifecycle, {preStop: {sleep: {seconds: PRE_STOP_SLEEP_SECONDS}}})
    assert.ok(pod.terminationGracePeriodSeconds >= PRE_STOP_SLEEP_SECONDS + 30)

    const token = await client.get<KubeObject & {data: Record<string, string>}>(refs.secret(namespace, 'polycrate-api-token'))
    assert.equal(Buffer.from(token.data.token!, 'base64').toString(), TOKEN)
    assert.equal(token.metadata?.labels?.[installedBy.label], installedBy.value)
    const pull = await client.get<KubeObject & {type: string; data: Record<string, string>}>(refs.secret(namespace, 'polycrate-registry'))
    assert.equal(pull.type, 'kubernetes.io/dockerconfigjson')
    assert.equal(JSON.parse(Buffer.from(pull.data['.dockerconfigjson']!, 'base64').toString()).auths['cargo.ayedo.cloud'].username, 'robot')
    const config = await client.get<KubeObject & {spec: {api_sync: Record<string, unknown>}}>(refs.operatorConfig(namespace))
    assert.ok(!JSON.stringify(config).includes(TOKEN), 'the token is not in the OperatorConfig')
    assert.deepEqual(config.spec.api_sync.credentials_ref, {secret_name: 'polycrate-api-token', token_key: 'token'})
    assert.equal((await client.get<KubeObject>(refs.namespace(namespace))).metadata?.labels?.[installedBy.label], installedBy.value)

    // The namespace install created enforces what the Pod meets: NET_RAW leaves restricted (said), warn/audit stay at it.
    const labels = (await client.get<KubeObject>(refs.namespace(namespace))).metadata?.labels ?? {}
    assert.deepEqual([labels['pod-security.kubernetes.io/enforce'], labels['pod-security.kubernetes.io/enforce-version'], labels['pod-security.kubernetes.io/warn']], ['privileged', 'v1.35', 'restricted'])
    assert.equal(first.warnings.length, 2, first.warnings.join('\n'))
    assert.match(first.warnings[0]!, new RegExp(`^The external-dns webhook in ${namespace} \\(port 8888\\) accepts calls from every namespace`))
    assert.match(first.warnings[1]!, /^security\.add_capabilities \(NET_RAW\) takes the operator's Pod out of the restricted Pod Security profile/)
    // Secure metrics: the certificate install made (with its CA), the reader role, the scraper's token Secret; 2 replicas: a PodDisruptionBudget.
    for (const [kind, name] of [['Secret', 'polycrate-operator-metrics-tls'], ['ClusterRole', 'polycrate-operator-metrics-reader'], ['ClusterRoleBinding', 'polycrate-operator-metrics-reader'],
      ['ServiceAccount', 'polycrate-operator-metrics-scraper'], ['Secret', 'polycrate-operator-metrics-scraper-token'], ['PodDisruptionBudget', 'polycrate-operator']]) {
      assert.equal(outcome(first.results, kind!, name!), 'created', `${kind} ${name}`)
    }
    const tls = await client.get<KubeObject & {type: string; data: Record<string, string>}>(refs.secret(namespace, 'polycrate-operator-metrics-tls'))
    assert.deepEqual([tls.type, Object.keys(tls.data).sort()], ['kubernetes.io/tls', ['ca.crt', 'tls.crt', 'tls.key']])

    const second = await install()
    const changed = second.results.filter((r) => !['unchanged', 'skipped'].includes(r.outcome))
    assert.deepEqual(changed, [], 'a second install changes nothing')
    assert.deepEqual((await client.get<KubeObject & {data: Record<string, string>}>(refs.secret(namespace, 'polycrate-operator-metrics-tls'))).data, tls.data, 'the certificate is kept')

    // `status` says it too, from what runs: the NetworkPolicy, the Deployment, the namespace.
    const {stderr} = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath])
    assert.match(stderr, new RegExp(`^Warning: The external-dns webhook in ${namespace} \\(port 8888\\) accepts calls from every namespace`, 'm'))
    assert.match(stderr, /^Warning: security\.add_capabilities \(NET_RAW\) takes the operator's Pod out of the restricted Pod Security profile \(it meets privileged\)\./m)
  })

  it('other values: what they no longer render goes (superseded), the RBAC follows the features, the namespace the capabilities; the certificate is renewed when broken', async () => {
    for (const file of ['cert-manager.io_certificates.yaml', 'cert-manager.io_issuers.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    }
    const document = yaml.load(readFileSync(valuesFile, 'utf8')) as {blocks: Array<{config: {operator_config: Record<string, unknown>} & Record<string, unknown>}>}
    const config = document.blocks[0]!.config
    const withValues = (change: (config: Record<string, unknown>) => Record<string, unknown>) => {
      const values = parseBlockValues(change(structuredClone(config)))
      return eventually(() => installOperator(client, {values, plan: installPlan(values, operatorPermissions(values.effectiveSpec))}), 30_000, 'installed')
    }
    // The operator's ClusterRoles: the base role and one per enabled feature (not the metrics reader, not cert-manager's solver role).
    const clusterRoleRules = async () => (await client.request<{items: Array<KubeObject & {rules?: Array<{resources?: string[]; verbs: string[]}>}>}>({method: 'GET', path: '/apis/rbac.authorization.k8s.io/v1/clusterroles'})).items
      .filter((role) => role.metadata?.name === 'polycrate-operator' || (role.metadata?.name?.startsWith('polycrate-operator:') && role.metadata.name !== 'polycrate-operator:dns01-solver'))
      .flatMap((role) => role.rules ?? [])
    const kubeSystemRole = ref('rbac.authorization.k8s.io', 'v1', 'roles', 'kube-system', 'polycrate-operator:dns01-webhook')
    const group = `${namespace}.example.com`

    const dns01 = await withValues((c) => ({...c, operator_config: {...(c.operator_config as object), dns01_webhook: {enabled: true, group_name: group}}}))
    for (const [kind, name] of [['Role', 'polycrate-operator:dns01-webhook'], ['APIService', `v1alpha1.${group}`], ['Issuer', 'polycrate-operator-dns01-selfsigned'], ['ClusterRole', 'polycrate-operator:dns01-solver']]) {
      assert.equal(outcome(dns01.results, kind!, name!), 'created', `${kind} ${name}`)
    }
    assert.ok(await client.getOrUndefined(kubeSystemRole), 'the DNS01 webhook reads the front-proxy CA in kube-system')
    const withCloud = await clusterRoleRules()
    assert.ok(withCloud.some((rule) => rule.resources?.includes('nodes') && rule.verbs.includes('patch')), 'cloud_controller: patch on nodes')

    const narrowing = (c: Record<string, unknown>) => ({
      ...c, deployment: {replicas: 1}, security: {add_capabilities: []}, metrics: {secure: false},
      operator_config: {...(c.operator_config as object), cloud_controller: {enabled: false}, s3_bucket_provisioning: {enabled: false}},
    })
    const narrower = await withValues(narrowing)
    const superseded = narrower.results.filter((r) => r.outcome === 'deleted').map((r) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`).sort()
    assert.deepEqual(superseded, [
      `APIService v1alpha1.${group}`,
      `Certificate ${namespace}/polycrate-operator-dns01-webhook`,
      'ClusterRole polycrate-operator-metrics-reader',
      // The roles of the features these values switch off (each feature's own ClusterRole and Roles).
      'ClusterRole polycrate-operator:cloud-load-balancer',
      'ClusterRole polycrate-operator:cloud-node',
      'ClusterRole polycrate-operator:dns01-solver',
      'ClusterRole polycrate-operator:s3-bucket-provisioning',
      'ClusterRoleBinding polycrate-operator-metrics-reader',
      'ClusterRoleBinding polycrate-operator:cloud-load-balancer',
      'ClusterRoleBinding polycrate-operator:cloud-node',
      'ClusterRoleBinding polycrate-operator:dns01-solver',
      'ClusterRoleBinding polycrate-operator:s3-bucket-provisioning',
      `Issuer ${namespace}/polycrate-operator-dns01-selfsigned`,
      `PodDisruptionBudget ${namespace}/polycrate-operator`,
      'Role kube-system/polycrate-operator:dns01-webhook',
      `Role ${namespace}/polycrate-operator:dns01-webhook`,
      'RoleBinding kube-system/polycrate-operator:dns01-webhook',
      `RoleBinding ${namespace}/polycrate-operator:dns01-webhook`,
      `Secret ${namespace}/polycrate-operator-metrics-scraper-token`,
      `Secret ${namespace}/polycrate-operator-metrics-tls`,
      `ServiceAccount ${namespace}/polycrate-operator-metrics-scraper`,
    ])
    assert.ok(narrower.results.filter((r) => r.outcome === 'deleted').every((r) => /^superseded/.test(r.note ?? '')))
    const narrowed = await clusterRoleRules()
    assert.ok(!narrowed.some((rule) => rule.resources?.includes('nodes') && rule.verbs.includes('patch')), 'no patch on nodes without the cloud controller')
    assert.ok(!narrowed.some((rule) => rule.resources?.includes('secrets') && rule.verbs.some((verb) => ['create', 'patch'].includes(verb))), 'no Secret writes without S3 bucket provisioning')
    assert.ok(!narrowed.some((rule) => rule.resources?.includes('tokenreviews')), 'no reviews without secure metrics')
    assert.equal((await client.get<KubeObject>(refs.namespace(namespace))).metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted')
    assert.deepEqual(narrower.warnings.map((w) => w.slice(0, 24)), ['The external-dns webhook', 'metrics.secure is false:'])

    // The webhook narrowed: the NetworkPolicy's rule and status's silence.
    await withValues((c) => ({...narrowing(c), external_dns_webhook: {allowed_from: [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}]}}))
    const policy = await client.get<KubeObject & {spec: {ingress: Array<{from?: unknown[]; ports: Array<{port: number}>}>}}>(ref('networking.k8s.io', 'v1', 'networkpolicies', namespace, 'polycrate-operator'))
    assert.deepEqual(policy.spec.ingress.find((rule) => rule.ports[0]!.port === 8888)!.from, [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'external-dns'}}}])
    const {stderr} = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath])
    assert.doesNotMatch(stderr, new RegExp(`webhook in ${namespace} `))

    // Back to the file's values: made again, a new certificate; a broken one is renewed, saying why.
    const back = await install()
    assert.equal(outcome(back.results, 'Secret', 'polycrate-operator-metrics-tls'), 'created')
    assert.equal(outcome(back.results, 'PodDisruptionBudget', 'polycrate-operator'), 'created')
    await client.mergePatch(refs.secret(namespace, 'polycrate-operator-metrics-tls'), {data: {'ca.crt': Buffer.from('not a certificate').toString('base64')}})
    const renewed = await install()
    const [tlsResult] = renewed.results.filter((r) => r.kind === 'Secret' && r.name === 'polycrate-operator-metrics-tls')
    assert.equal(tlsResult?.outcome, 'updated')
    assert.match(tlsResult?.note ?? '', /^new CA and certificate: not PEM: /)
  })

  it('info -n <namespace> reads what install made: the Deployment\'s settings and each OperatorConfig setting with its source, no secret', async () => {
    const {stdout, error} = await runCommand(['operator', 'info', '-n', namespace, '--kubeconfig', controlPlane().kubeconfigPath, '--json'])
    assert.equal(error, undefined, error?.message)
    assert.ok(!stdout.includes(TOKEN) && !stdout.includes('pull-secret-password'), 'no secret in the output')
    const info = JSON.parse(stdout) as {install: Array<{path: string; value: string; from: string}>; operatorConfig: {found: boolean; settings: Array<{path: string; value: string; from: string}>}; features: Array<{name: string; on: boolean; why: string}>}
    const install = Object.fromEntries(info.install.map((s) => [s.path, s]))
    assert.deepEqual([install['deployment.replicas']?.value, install['deployment.replicas']?.from], ['2', 'set'])
    assert.deepEqual([install['deployment.resources.limits.memory']?.value, install['deployment.resources.limits.memory']?.from], ['2Gi', 'set'])
    assert.equal(install['deployment.resources.requests.cpu']?.from, 'default')
    assert.equal(install['image_credentials']?.value, 'polycrate-registry')
    const settings = Object.fromEntries(info.operatorConfig.settings.map((s) => [s.path, s]))
    assert.deepEqual([settings['cloud_controller.enabled']?.value, settings['cloud_controller.enabled']?.from], ['true', 'set'], 'given in the values (server-side apply owns it)')
    assert.deepEqual([settings['node_discovery.enabled']?.value, settings['node_discovery.enabled']?.from], ['true', 'default'], 'filled in by the CRD\'s default')
    assert.deepEqual(info.features.find((f) => f.name === 'cloud-node'), {name: 'cloud-node', on: true, why: 'cloud_controller.enabled: true (set)'})
  })

  it('VMServiceScrape: applied once its CRD exists, removed when metrics are disabled', async () => {
    await applyCrd(client, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: {name: VM_CRD},
      spec: {
        group: 'operator.victoriametrics.com', scope: 'Namespaced',
        names: {kind: 'VMServiceScrape', plural: 'vmservicescrapes', singular: 'vmservicescrape', listKind: 'VMServiceScrapeList'},
        versions: [{name: 'v1beta1', served: true, storage: true, schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}}}],
      },
    } as never)
    await waitEstablished(client, VM_CRD)
    const withMetrics = await install()
    assert.equal(outcome(withMetrics.results, 'VMServiceScrape', 'polycrate-operator'), 'created')
    assert.ok(await client.getOrUndefined(refs.scrape(namespace)))

    // The same values with metrics disabled, through the exported function (what the end-to-end test calls).
    const document = yaml.load(readFileSync(valuesFile, 'utf8')) as {blocks: Array<{config: Record<string, unknown>}>}
    const values = parseBlockValues({...document.blocks[0]!.config, metrics: {enabled: false}})
    const report = await installOperator(client, {values, plan: installPlan(values, operatorPermissions())})
    assert.equal(outcome(report.results, 'VMServiceScrape', 'polycrate-operator'), 'deleted')
    assert.equal(await client.getOrUndefined(refs.scrape(namespace)), undefined)
  })

  it('metrics.alerts: VMRule and PrometheusRule once their CRDs exist; metrics.dashboard: the ConfigMap; removed when turned off', async () => {
    const document = yaml.load(readFileSync(valuesFile, 'utf8')) as {blocks: Array<{config: Record<string, unknown>}>}
    const withMetrics = (metrics: Record<string, unknown>) => {
      const values = parseBlockValues({...document.blocks[0]!.config, metrics})
      return installOperator(client, {values, plan: installPlan(values, operatorPermissions())})
    }
    const before = await withMetrics({alerts: true, dashboard: true})
    assert.equal(outcome(before.results, 'VMRule', 'polycrate-operator'), 'skipped', 'no VictoriaMetrics CRD: skipped')
    assert.equal(outcome(before.results, 'PrometheusRule', 'polycrate-operator'), 'skipped', 'no Prometheus operator CRD: skipped')
    assert.equal(outcome(before.results, 'ConfigMap', 'polycrate-operator-dashboard'), 'created')

    for (const crd of RULE_CRDS) {
      await applyCrd(client, {
        apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: {name: `${crd.plural}.${crd.group}`},
        spec: {
          group: crd.group, scope: 'Namespaced',
          names: {kind: crd.kind, plural: crd.plural, singular: crd.kind.toLowerCase(), listKind: `${crd.kind}List`},
          versions: [{name: crd.version, served: true, storage: true, schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}}}],
        },
      } as never)
      await waitEstablished(client, `${crd.plural}.${crd.group}`)
    }
    const rules = await eventually(async () => {
      const report = await withMetrics({alerts: true, dashboard: true})
      return outcome(report.results, 'VMRule', 'polycrate-operator') === 'created' ? report : undefined
    }, 30_000, 'the VMRule created')
    assert.equal(outcome(rules.results, 'PrometheusRule', 'polycrate-operator'), 'created')
    assert.equal(outcome(rules.results, 'ConfigMap', 'polycrate-operator-dashboard'), 'unchanged')
    const expected = alertRuleGroups({namespace})
    for (const objectRef of [refs.vmRule(namespace), refs.prometheusRule(namespace)]) {
      const stored = await client.get<KubeObject & {spec: {groups: unknown}}>(objectRef)
      assert.deepEqual(stored.spec.groups, expected, objectRef.plural)
    }
    const configMap = await client.get<KubeObject & {data: Record<string, string>}>(refs.dashboard(namespace))
    assert.equal(configMap.metadata?.labels?.grafana_dashboard, '1')
    assert.equal((JSON.parse(configMap.data['polycrate-operator.json']!) as {uid: string}).uid, 'polycrate-operator')

    const off = await withMetrics({alerts: false, dashboard: false})
    for (const [kind, name] of [['VMRule', 'polycrate-operator'], ['PrometheusRule', 'polycrate-operator'], ['ConfigMap', 'polycrate-operator-dashboard']]) {
      assert.equal(outcome(off.results, kind!, name!), 'deleted', `${kind} ${name}`)
    }
    for (const objectRef of [refs.vmRule(namespace), refs.prometheusRule(namespace), refs.dashboard(namespace)]) assert.equal(await client.getOrUndefined(objectRef), undefined)
    // On again for the uninstall below, which removes them whatever its values say.
    await withMetrics({alerts: true, dashboard: true})
  })

  it('uninstall --release-only (the chart\'s pre-delete hook): the operator stopped, its finalizers released, nothing deleted', async () => {
    const users = await freshNamespace(client, 'release')
    await client.create(refs.ingress(users), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'web', namespace: users, finalizers: [finalizers.ingressDiscovery, 'example.com/keep']},
      spec: {rules: [{host: 'web.example.com'}]},
    })
    const report = await uninstall('--release-only')
    assert.equal(report.results.find((r) => r.kind === 'Deployment')?.outcome, 'scaled')
    assert.equal(outcome(report.results, 'Ingress', 'web'), 'released')
    assert.deepEqual(report.results.filter((r) => r.outcome === 'deleted'), [], 'nothing deleted')
    assert.equal((await client.get<KubeObject & {spec: {replicas: number}}>(refs.deployment(namespace))).spec.replicas, 0)
    assert.deepEqual((await client.get<KubeObject>(refs.ingress(users, 'web'))).metadata?.finalizers, ['example.com/keep'])
    await client.mergePatch(refs.ingress(users, 'web'), {metadata: {finalizers: null}})
    // The operator back at its replicas, as the tests after this one expect it.
    await client.mergePatch(refs.deployment(namespace), {spec: {replicas: 2}})
  })

  it('uninstall releases the operator\'s finalizers on users\' objects, whose deletes then finish; CRs and CRDs stay; a second run is harmless', async () => {
    for (const file of ['gateway.networking.k8s.io_gateways.yaml', 'gateway.networking.k8s.io_httproutes.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    }
    const users = await freshNamespace(client, 'users')
    const elsewhere = await freshNamespace(client, 'crs')
    await client.create(refs.ingress(users), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'shop', namespace: users, finalizers: [finalizers.ingressDiscovery]},
      spec: {rules: [{host: 'shop.example.com', http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'shop', port: {number: 80}}}}]}}]},
    })
    // Established comes a moment before the apiserver serves a new CRD's resource.
    await eventually(() => client.create(refs.route(users), {
      apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: {name: 'shop', namespace: users, finalizers: [finalizers.httpRouteDiscovery, 'example.com/keep']},
      spec: {parentRefs: [{name: 'gw'}], hostnames: ['shop.example.com']},
    }).then(() => true, (error: {status?: number}) => (error.status === 404 ? false : Promise.reject(error))), 30_000, 'HTTPRoute created')
    const lbService = (name: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: 'v1', kind: 'Service', metadata: {name, namespace: users, finalizers: [finalizers.loadBalancerCleanup]},
      spec: {type: 'LoadBalancer', ports: [{port: 80}], selector: {app: name}, ...extra},
    })
    await client.create(refs.service(users), lbService('managed'))
    await client.create(refs.service(users), lbService('other-class', {loadBalancerClass: 'example.com/other'}))
    await client.create(refs.endpoint(elsewhere), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name: 'shop', namespace: elsewhere, finalizers: [finalizers.endpointSync]},
      spec: {remoteAddress: 'shop.example.com'},
    })

    const report = await uninstall()
    assert.equal(report.results.find((r) => r.kind === 'Deployment')?.outcome, 'scaled', 'the operator is stopped first')
    assert.equal(outcome(report.results, 'Ingress', 'shop'), 'released')
    assert.equal(outcome(report.results, 'HTTPRoute', 'shop'), 'released')
    assert.equal(outcome(report.results, 'Service', 'managed'), 'released')
    assert.equal(outcome(report.results, 'Service', 'other-class'), undefined, 'another controller\'s load balancer keeps its finalizer')
    for (const [kind, name] of [['Deployment', 'polycrate-operator'], ['ClusterRole', 'polycrate-operator'], ['ServiceAccount', 'polycrate-operator'], ['Secret', 'polycrate-api-token'], ['Secret', 'polycrate-registry'],
      ['VMRule', 'polycrate-operator'], ['PrometheusRule', 'polycrate-operator'], ['ConfigMap', 'polycrate-operator-dashboard']]) {
      assert.equal(outcome(report.results, kind!, name!), 'deleted', `${kind} ${name}`)
    }
    assert.match(outcome(report.results, 'Namespace', namespace) ?? '', /kept/, 'the namespace holds the OperatorConfig, which stays')
    assert.equal(outcome(report.results, 'Endpoint', 'shop'), 'released', 'a CR keeps no sync finalizer nobody would release')
    assert.equal(await client.getOrUndefined(refs.deployment(namespace)), undefined)
    assert.deepEqual((await client.get<KubeObject>(refs.route(users, 'shop'))).metadata?.finalizers, ['example.com/keep'], 'a finalizer of someone else stays')

    // The users' deletes finish without an operator.
    await client.mergePatch(refs.route(users, 'shop'), {metadata: {finalizers: null}})
    await client.mergePatch(refs.service(users, 'other-class'), {metadata: {finalizers: null}})
    await client.delete(refs.namespace(users))
    await eventually(async () => (await client.getOrUndefined(refs.namespace(users))) === undefined, 60_000, `namespace ${users} deleted`)

    // CRs and CRDs stay, without the operator's finalizers: deleting one finishes.
    assert.ok(await client.getOrUndefined(refs.operatorConfig(namespace)))
    assert.equal((await client.get<KubeObject>(refs.endpoint(elsewhere, 'shop'))).metadata?.finalizers, undefined)

    const again = await uninstall()
    assert.deepEqual(again.results.filter((r) => r.outcome !== 'kept'), [], 'a second uninstall finds nothing to do')
  })

  it('into a namespace and with a token Secret a person made: both are used, neither is labelled nor deleted', async () => {
    const own = await freshNamespace(client, 'own')
    await client.create(ref('', 'v1', 'secrets', own), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace: own}, stringData: {token: 'made-by-hand'}})
    const values = path.join(dir, 'no-token.yaml')
    writeFileSync(values, yaml.dump({config: {operator_config: {api_sync: {enabled: true, api_url: 'https://api.example.com'}, dns01_webhook: {enabled: false}}}}))
    const kubeconfig = controlPlane().kubeconfigPath
    const {stdout, error} = await runCommand(['operator', 'install', '--values', values, '--namespace', own, '--kubeconfig', kubeconfig, '--no-wait', '--json'])
    assert.equal(error, undefined, error?.message)
    const installed = JSON.parse(stdout) as {results: ObjectResult[]; warnings: string[]}
    assert.equal(outcome(installed.results, 'Namespace', own), 'updated')
    assert.equal(outcome(installed.results, 'Secret', 'polycrate-api-token'), 'kept')
    // Besides the open webhook: the namespace install did not create keeps its (no) Pod Security labels, said once.
    assert.equal(installed.warnings.length, 2, installed.warnings.join('\n'))
    assert.match(installed.warnings[1]!, new RegExp(`^Namespace ${own} enforces the privileged Pod Security profile, not restricted`))
    const ownLabels = (await client.get<KubeObject>(refs.namespace(own))).metadata?.labels ?? {}
    assert.equal(ownLabels[installedBy.label], undefined)
    assert.deepEqual(Object.keys(ownLabels).filter((key) => key.startsWith('pod-security.kubernetes.io/')), [])

    const {stdout: out, error: uninstallError} = await runCommand(['operator', 'uninstall', '--values', values, '--namespace', own, '--kubeconfig', kubeconfig, '--json', '--yes'])
    assert.equal(uninstallError, undefined, uninstallError?.message)
    const removed = JSON.parse(out) as {results: ObjectResult[]}
    assert.equal(outcome(removed.results, 'Secret', 'polycrate-api-token'), 'kept')
    assert.equal(outcome(removed.results, 'Namespace', own), 'kept')
    const secret = await client.get<KubeObject & {data: Record<string, string>}>(refs.secret(own, 'polycrate-api-token'))
    assert.equal(Buffer.from(secret.data.token!, 'base64').toString(), 'made-by-hand')
    await client.delete(refs.namespace(own))
  })

  it('uninstall --crds releases the CRs\' finalizers without calling the Polycrate API, deletes the CRDs, then the empty namespace', async () => {
    const elsewhere = await freshNamespace(client, 'crs')
    await client.create(refs.endpoint(elsewhere), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name: 'api', namespace: elsewhere, finalizers: [finalizers.endpointSync]},
      spec: {remoteAddress: 'api.example.com'},
    })
    const report = await uninstall('--crds')
    assert.ok(report.results.some((r) => r.kind === 'Endpoint' && r.name === 'api' && r.outcome === 'released'))
    for (const def of allCrds) assert.equal(await client.getOrUndefined(refs.crd(`${def.plural}.polycrate.io`)), undefined, def.kind)
    assert.equal(outcome(report.results, 'Namespace', namespace), 'deleted')
    await eventually(async () => (await client.getOrUndefined(refs.namespace(namespace))) === undefined, 60_000, `namespace ${namespace} deleted`)
    await client.delete(refs.namespace(elsewhere))
    await eventually(async () => (await client.getOrUndefined(refs.namespace(elsewhere))) === undefined, 60_000, `namespace ${elsewhere} deleted`)
    assert.equal(apiCalls, 0, 'no request reached the Polycrate API')
  })
})
