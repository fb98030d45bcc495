/**
 * The operator under exactly the RBAC that `polycrate operator manifests` generates: a ServiceAccount token bound
 * to the generated ClusterRole and Roles, one scenario per feature (Ingress → Endpoint, Node → Host and its cloud
 * initialization, PersistentVolume → K8sVolume, Velero Backup → Backup, cert-manager Certificate → Certificate, each
 * synced to the API; a meta secret → K8sApp, its pod → pod status and an Artifact; a LoadBalancer Service; an
 * S3Bucket and its credentials Secret; a K8sCluster probe; both DNS webhooks serving; the monitoring agent; the leader
 * label on its own Pod) → not one 403; and the same token cannot write outside what was declared.
 */
import assert from 'node:assert/strict'
import {mkdtemp, readFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {KubeApiError, KubeClient, type KubeObject, type ResourceRef} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {LEADER_POD_LABEL, OPERATOR_NAME} from '../../src/operator/conventions.js'
import {operatorManifests} from '../../src/operator/manifests.js'
import {operatorPermissions} from '../../src/operator/operator.js'
import {validateOperatorConfig, type OperatorConfig} from '../../src/operator/config/operator-config.js'
import type {Permission} from '../../src/operator/permissions.js'
import {operatorNamespaceFor} from '../support/api-setup.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'
import {eventually} from '../support/helpers.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'
import {parsePromText} from '../support/prom-text.js'
import {upstreamCrd} from '../support/upstream-crds.js'

/** The OperatorConfig operatorNamespaceFor writes with these sections, parsed with its defaults. */
function effectiveConfig(spec: Record<string, unknown>): OperatorConfig {
  const checked = validateOperatorConfig({api_sync: {enabled: true, api_url: 'http://127.0.0.1:1', sync_interval_seconds: 2}, local_cluster: {enabled: true, cluster_name: 'x'}, ...spec})
  if (!checked.ok) throw new Error(checked.problems.join('; '))
  return checked.config
}

const RBAC_PLURALS: Record<string, string> = {ServiceAccount: 'serviceaccounts', ClusterRole: 'clusterroles', ClusterRoleBinding: 'clusterrolebindings', Role: 'roles', RoleBinding: 'rolebindings'}

/**
 * The ServiceAccount and roles `manifests` generates for `permissions`, applied in `namespace`; a kubeconfig with the
 * ServiceAccount's token. `clusterSuffix`: cluster-wide roles under their own names (the default ones are shared by
 * the run: the binding alone gets this namespace's name).
 */
async function applyGeneratedRbac(admin: KubeClient, namespace: string, permissions: Permission[], options: {clusterSuffix?: string} = {}): Promise<string> {
  const objects = operatorManifests({namespace, image: 'unused', replicas: 1, externalDnsWebhookPort: 8888, metricsPort: 8080, healthPort: 8081, vmServiceScrape: false, metrics: {secure: false}}, permissions)
  // The base role and the role of each feature `permissions` hold (polycrate-operator:<feature>), bound to the ServiceAccount.
  const roleNames = new Set([OPERATOR_NAME, ...permissions.flatMap((permission) => (permission.feature ? [`${OPERATOR_NAME}:${permission.feature}`] : []))])
  for (const object of objects.filter((o) => roleNames.has(o.metadata?.name ?? '') && RBAC_PLURALS[o.kind!])) {
    const {group, version} = refOf(object)
    const clusterScoped = object.kind!.startsWith('Cluster')
    const own = object.metadata!.name!
    let named = object
    if (clusterScoped && options.clusterSuffix) {
      const name = `${own}-${options.clusterSuffix}`
      named = {...object, metadata: {...object.metadata, name}, ...(object.kind === 'ClusterRoleBinding' ? {roleRef: {...(object as {roleRef: object}).roleRef, name}} : {})} as KubeObject
    } else if (object.kind === 'ClusterRoleBinding') {
      named = {...object, metadata: {...object.metadata, name: `${own}-${namespace}`}}
    }
    await admin.apply({group, version, plural: RBAC_PLURALS[object.kind!]!, namespace: clusterScoped ? undefined : object.metadata?.namespace, name: named.metadata!.name}, named)
  }
  const token = await admin.request<{status: {token: string}}>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${OPERATOR_NAME}/token`,
    body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {expirationSeconds: 3600}},
  })
  const dir = await mkdtemp(path.join(tmpdir(), 'least-privilege-'))
  return writeKubeconfig(path.join(dir, 'kubeconfig'), controlPlane().server, token.status.token)
}

const refOf = (object: KubeObject): ResourceRef => {
  const [group, version] = object.apiVersion!.includes('/') ? object.apiVersion!.split('/') as [string, string] : ['', object.apiVersion!]
  const plural = `${object.kind!.toLowerCase()}s`.replace(/ys$/, 'ies')
  return {group, version, plural, namespace: object.metadata?.namespace}
}
type Synced = KubeObject & {spec?: Record<string, unknown>; status?: {phase?: string; api_id?: string; apiID?: string}}

describe('least privilege: the operator under the generated RBAC', function () {
  this.timeout(600_000)
  let admin: KubeClient
  let sim: ApiSimulator
  let namespace: string
  let operator: OperatorProcess | undefined
  let tokenKubeconfig: string
  const suffix = Math.random().toString(36).slice(2, 8)
  const names = {node: `lp-node-${suffix}`, pv: `lp-pv-${suffix}`, pod: `polycrate-operator-${suffix}`}

  const syncedIn = (plural: string, where: string, predicate: (cr: Synced) => boolean = () => true) => eventually(async () => {
    const {items} = await admin.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${where}/${plural}`})
    return items.find((cr) => cr.status?.phase === 'Synced' && (cr.status.api_id ?? cr.status.apiID) && predicate(cr))
  }, 60_000, `a synced ${plural} CR in ${where}`)

  before(async () => {
    await ensureCrds()
    admin = adminClient()
    for (const file of ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'cert-manager.io_certificates.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(admin, crd)
      await waitEstablished(admin, crd.metadata.name)
    }
    sim = await ApiSimulator.start()
    const veleroNamespace = await freshNamespace(admin, 'lp-velero')
    sim.cloud.popName = 'fsn1'
    const spec = {
      backup_discovery: {velero_namespace: veleroNamespace},
      node_discovery: {enabled: true},
      volume_discovery: {enabled: true},
      cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all' as const}},
      external_dns_webhook: {enabled: true, port: await freePort()},
      dns01_webhook: {enabled: true, port: await freePort()},
      agent: {enabled: true},
    }
    ;({namespace} = await operatorNamespaceFor(admin, sim, spec))
    // The generated RBAC of the features this OperatorConfig enables (what `install` grants), applied as an admin would.
    tokenKubeconfig = await applyGeneratedRbac(admin, namespace, operatorPermissions(effectiveConfig(spec)))

    // One source per feature, before the operator starts (the initial sync) — more follow while it runs.
    // A node as a kubelet with --cloud-provider=external registers it: tainted until the cloud controller initializes it.
    await admin.create({group: '', version: 'v1', plural: 'nodes'}, {
      apiVersion: 'v1', kind: 'Node', metadata: {name: names.node},
      spec: {taints: [{key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule'}]},
      status: {
        addresses: [{type: 'InternalIP', address: '10.99.0.1'}],
        conditions: [{type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'set by the test', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString()}],
      },
    })
    await admin.create({group: '', version: 'v1', plural: 'persistentvolumes'}, {
      apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name: names.pv},
      spec: {capacity: {storage: '1Gi'}, accessModes: ['ReadWriteOnce'], hostPath: {path: '/data/lp'}, persistentVolumeReclaimPolicy: 'Retain'},
    })
    await admin.create({group: 'velero.io', version: 'v1', plural: 'backups', namespace: veleroNamespace}, {
      apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: 'lp-backup', namespace: veleroNamespace},
      spec: {ttl: '720h0m0s', includedNamespaces: ['shop'], storageLocation: 'default'},
    })
    // The operator's own Pod, as the Deployment makes it: the process keeps its leader label (POD_NAME as there).
    await eventually(() => admin.create({group: '', version: 'v1', plural: 'pods', namespace}, {
      apiVersion: 'v1', kind: 'Pod', metadata: {name: names.pod, namespace, labels: {'app.kubernetes.io/name': OPERATOR_NAME}},
      spec: {automountServiceAccountToken: false, containers: [{name: 'operator', image: 'unused'}]},
    }).then(() => true), 30_000, 'the operator\'s Pod created')
    operator = await startOperator({kubeconfig: tokenKubeconfig, namespace, env: {POD_NAME: names.pod}})
    await syncedIn('backups', veleroNamespace)
  })

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !operator) return
    const problems = operator.logs().filter((line) => line.level === 'warn' || line.level === 'error')
    process.stderr.write(`operator warnings and errors:\n${problems.slice(-30).map((line) => JSON.stringify(line)).join('\n')}\n`)
    const config = await admin.request<{status?: unknown}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/operatorconfigs/default`})
    process.stderr.write(`OperatorConfig status: ${JSON.stringify(config.status)}\n`)
    const events = await admin.request<{items: Array<{reason: string; message: string; involvedObject: {kind: string; name: string}}>}>({path: '/api/v1/events'})
    process.stderr.write(`${events.items.filter((e) => e.involvedObject.name.includes(suffix)).map((e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`).join('\n')}\n`)
  })

  after(async () => {
    await operator?.stop()
    for (const [plural, name] of [['nodes', names.node], ['persistentvolumes', names.pv]] as const) {
      await admin.delete({group: '', version: 'v1', plural, name}).catch(() => {})
      await admin.mergePatch({group: '', version: 'v1', plural, name}, {metadata: {finalizers: null}}).catch(() => {})
    }
    admin?.close()
    await sim?.close()
  })

  it('runs every feature to Synced with not one 403', async () => {
    const ingressNamespace = await freshNamespace(admin, 'lp-ing')
    await admin.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ingressNamespace}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'shop', namespace: ingressNamespace, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: `shop-${suffix}.example.com`, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]},
    })
    const certNamespace = await freshNamespace(admin, 'lp-cert')
    await admin.create({group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace: certNamespace}, {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'shop-tls', namespace: certNamespace},
      spec: {secretName: 'shop-tls', dnsNames: [`shop-${suffix}.example.com`], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
    })
    const service = await admin.create<KubeObject>({group: '', version: 'v1', plural: 'services', namespace: ingressNamespace}, {
      apiVersion: 'v1', kind: 'Service', metadata: {name: 'shop-lb', namespace: ingressNamespace},
      spec: {type: 'LoadBalancer', selector: {app: 'shop'}, ports: [{name: 'http', port: 80, targetPort: 8080}]},
    })
    const bucket = `lp-${suffix}`
    await admin.create({group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: bucket, namespace}, spec: {name: bucket, region: 'fsn1', reclaim_policy: 'delete'},
    })
    // A K8sCluster probing the test cluster itself with the admin token.
    await admin.create({group: '', version: 'v1', plural: 'secrets', namespace}, {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'probe-token', namespace}, stringData: {token: controlPlane().token}})
    await admin.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sclusters', namespace}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sCluster', metadata: {name: 'probe', namespace},
      spec: {apiServer: controlPlane().server, authentication: {serviceAccountToken: {secretRef: {name: 'probe-token', key: 'token'}}}, caCertificate: await readFile(path.join(controlPlane().dir, 'certs', 'apiserver.crt'), 'utf8')},
    })

    // A deployed block's meta secret → K8sApp; a pod of it → pod status and an Artifact.
    const app = `lp-app-${suffix}`
    const meta = ['block:', `  name: ${app}`, '  version: "1.0.0"', '  kind: helm', 'workspace:', '  name: production', '  organization: acme', 'action:', '  name: install', '  status: success'].join('\n')
    await admin.create({group: '', version: 'v1', plural: 'secrets', namespace: ingressNamespace}, {apiVersion: 'v1', kind: 'Secret', metadata: {name: `${app}.poly`, namespace: ingressNamespace}, stringData: {meta}})
    const image = `registry.example.com/lp/${suffix}:1.0`
    await admin.create({group: '', version: 'v1', plural: 'pods', namespace: ingressNamespace}, {
      apiVersion: 'v1', kind: 'Pod', metadata: {name: 'web', namespace: ingressNamespace}, spec: {containers: [{name: 'web', image}]},
    })

    await syncedIn('endpoints', ingressNamespace)
    await syncedIn('k8sapps', ingressNamespace, (cr) => cr.metadata?.name === app)
    await eventually(async () => {
      const {items} = await admin.request<{items: Array<KubeObject & {spec?: {image?: string}}>}>({path: '/apis/polycrate.io/v1alpha1/artifacts'})
      return items.some((artifact) => JSON.stringify(artifact.spec).includes(`lp/${suffix}`))
    }, 60_000, 'the Artifact of the pod\'s image')
    await eventually(async () => {
      const config = await admin.get<KubeObject & {status?: {monitoring?: unknown}}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: 'default'})
      return config.status?.monitoring !== undefined
    }, 60_000, 'the monitoring agent\'s summary in the OperatorConfig status')
    await syncedIn('certificates', certNamespace)
    await syncedIn('hosts', namespace, (cr) => (cr.spec as {name?: string} | undefined)?.name === names.node)
    await syncedIn('k8svolumes', namespace, (cr) => (cr.spec as {name?: string} | undefined)?.name === names.pv)
    await eventually(async () => {
      const node = await admin.get<KubeObject & {spec: {providerID?: string; taints?: Array<{key: string}>}}>({group: '', version: 'v1', plural: 'nodes', name: names.node})
      // (kube-apiserver's TaintNodesByCondition admission adds node.kubernetes.io/not-ready: not ours to remove.)
      return node.spec.providerID?.startsWith('polycrate://') && !(node.spec.taints ?? []).some((taint) => taint.key === 'node.cloudprovider.kubernetes.io/uninitialized')
    }, 60_000, 'the node initialized by the cloud controller')
    await eventually(async () => {
      const current = await admin.get<KubeObject & {status?: {loadBalancer?: {ingress?: unknown[]}}}>({group: '', version: 'v1', plural: 'services', namespace: ingressNamespace, name: service.metadata!.name!})
      return (current.status?.loadBalancer?.ingress ?? []).length > 0
    }, 60_000, 'the LoadBalancer Service has its IP')
    for (const [plural, name] of [['s3buckets', bucket], ['k8sclusters', 'probe']] as const) {
      await eventually(async () => (await admin.get<KubeObject & {status?: {phase?: string}}>({group: 'polycrate.io', version: 'v1alpha1', plural, namespace, name})).status?.phase === 'Ready', 60_000, `${plural}/${name} Ready`)
    }
    assert.ok(await admin.getOrUndefined({group: '', version: 'v1', plural: 'secrets', namespace, name: `s3-${bucket}-credentials`}), 'the S3 credentials Secret written')
    await admin.delete({group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace, name: bucket})
    await eventually(async () => (await admin.getOrUndefined({group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace, name: bucket})) === undefined, 60_000, 'the S3Bucket gone (its finalizer released)')
    await admin.delete({group: '', version: 'v1', plural: 'services', namespace: ingressNamespace, name: 'shop-lb'})
    await eventually(async () => (await admin.getOrUndefined({group: '', version: 'v1', plural: 'services', namespace: ingressNamespace, name: 'shop-lb'})) === undefined, 60_000, 'the Service gone (its finalizer released)')
    const ingressRef = {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ingressNamespace, name: 'shop'}
    // Deleting a source exercises the finalizer release and the CR deletion.
    await admin.delete(ingressRef)
    await eventually(async () => (await admin.getOrUndefined(ingressRef)) === undefined, 60_000, 'the Ingress gone (its finalizer released)')

    await eventually(async () => (await admin.get<KubeObject>({group: '', version: 'v1', plural: 'pods', namespace, name: names.pod})).metadata?.labels?.[LEADER_POD_LABEL] === 'true', 30_000, 'the operator\'s Pod labelled leader')

    const metrics = parsePromText(await (await fetch(operator!.metricsUrl)).text())
    const requests = metrics.get('rest_client_requests_total')?.samples ?? []
    assert.ok(requests.some((sample) => sample.labels.code === '201'), 'the operator created objects (the metric counts its requests)')
    const forbidden = requests.filter((sample) => sample.labels.code === '403' && sample.value > 0)
    assert.deepEqual(forbidden, [], 'no request of the operator was forbidden')
    // A status or code field of 403, or "forbidden" anywhere (not any 403: CI once saw `durationMs: 403`).
    const complaints = operator!.logs().filter((line) => /forbidden/i.test(JSON.stringify(line))
      || Object.entries(line).some(([key, value]) => /status|code/i.test(key) && String(value) === '403'))
    assert.deepEqual(complaints, [], 'no log line mentions a forbidden request')
    const errors = (await admin.request<{items: Array<{type: string; message: string}>}>({path: `/api/v1/namespaces/${namespace}/events`})).items
      .filter((event) => event.type === 'Warning' && /forbidden/i.test(event.message))
    assert.deepEqual(errors, [])
  })

  it('the whole of `manifests --dns01-webhook` passes the apiserver\'s validation (server-side dry run)', async () => {
    const objects = operatorManifests({
      namespace, image: 'registry.example.com/polycrate-operator:1.0.0', replicas: 2, externalDnsWebhookPort: 8888, metricsPort: 8080, healthPort: 8081, vmServiceScrape: false,
      dns01: {groupName: 'acme.example.com', solverName: 'polycrate', port: 10250, certManagerServiceAccount: {namespace: 'cert-manager', name: 'cert-manager'}},
    }, operatorPermissions()).filter((object) => object.kind !== 'Issuer') // the only kind whose CRD this cluster lacks
    assert.ok(objects.some((object) => object.kind === 'Deployment') && objects.some((object) => object.kind === 'APIService'))
    for (const object of objects) {
      const ref = refOf(object)
      const clusterScoped = ['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'APIService'].includes(object.kind!)
      await admin.apply({...ref, namespace: clusterScoped ? undefined : object.metadata?.namespace, name: object.metadata!.name}, object, {dryRun: true})
    }
  })

  it('refuses what was not declared: the token is not cluster-admin in disguise', async () => {
    const operatorClient = KubeClient.from(loadKubeConfig({kubeconfig: tokenKubeconfig}))
    const refused = async (what: string, call: () => Promise<unknown>) => {
      await assert.rejects(call, (error: unknown) => error instanceof KubeApiError && error.status === 403, what)
    }
    try {
      await refused('create a Deployment', () => operatorClient.create({group: 'apps', version: 'v1', plural: 'deployments', namespace}, {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'intruder', namespace},
        spec: {selector: {matchLabels: {a: 'b'}}, template: {metadata: {labels: {a: 'b'}}, spec: {containers: [{name: 'c', image: 'busybox'}]}}},
      }))
      await refused('delete a Node', () => operatorClient.delete({group: '', version: 'v1', plural: 'nodes', name: names.node}))
      await refused('delete a Secret', () => operatorClient.delete({group: '', version: 'v1', plural: 'secrets', namespace, name: 'polycrate-api-token'}))
      await refused('create a ConfigMap', () => operatorClient.create({group: '', version: 'v1', plural: 'configmaps', namespace}, {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'intruder', namespace}}))
      await refused('change a ClusterRole (escalate)', () => operatorClient.mergePatch({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', name: OPERATOR_NAME}, {rules: []}))
      await refused('label a Pod outside its namespace', () => operatorClient.mergePatch({group: '', version: 'v1', plural: 'pods', namespace: 'default', name: 'any'}, {metadata: {labels: {[LEADER_POD_LABEL]: 'true'}}}))
      await refused('delete its own Pod', () => operatorClient.delete({group: '', version: 'v1', plural: 'pods', namespace, name: names.pod}))
      await refused('delete a CRD', () => operatorClient.delete({group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'endpoints.polycrate.io'}))
      // …while what it declared works with the same client.
      const list = await operatorClient.request<{items: unknown[]}>({path: '/apis/polycrate.io/v1alpha1/endpoints'})
      assert.ok(Array.isArray(list.items))
    } finally {
      operatorClient.close()
    }
  })
})

/**
 * The RBAC of a smaller feature set (API sync, endpoint discovery and the other defaults): not one 403 under it;
 * then the cloud controller enabled in the OperatorConfig without its rules: its two features report Forbidden (the
 * controllers' reasons, the Ready condition, /readyz, the feature state) and start nothing, everything else goes on;
 * once an admin applies the rules (install again), they start without a restart.
 */
describe('least privilege: a feature enabled after install, without its rules', function () {
  this.timeout(300_000)
  let admin: KubeClient
  let sim: ApiSimulator
  let operator: OperatorProcess | undefined
  let namespace: string
  const suffix = Math.random().toString(36).slice(2, 8)

  before(async () => {
    await ensureCrds()
    admin = adminClient()
    sim = await ApiSimulator.start()
    const spec = {external_dns_webhook: {enabled: false}}
    ;({namespace} = await operatorNamespaceFor(admin, sim, spec))
    const kubeconfig = await applyGeneratedRbac(admin, namespace, operatorPermissions(effectiveConfig(spec)), {clusterSuffix: suffix})
    operator = await startOperator({kubeconfig, namespace})
  })

  after(async () => {
    await operator?.stop()
    // The base role's and every feature role's cluster-wide objects under this suffix.
    for (const plural of ['clusterrolebindings', 'clusterroles']) {
      const {items} = await admin.request<{items: KubeObject[]}>({path: `/apis/rbac.authorization.k8s.io/v1/${plural}`})
      for (const name of items.map((item) => item.metadata!.name!).filter((name) => name.startsWith(OPERATOR_NAME) && name.endsWith(`-${suffix}`))) {
        await admin.delete({group: 'rbac.authorization.k8s.io', version: 'v1', plural, name}).catch(() => {})
      }
    }
    admin?.close()
    await sim?.close()
  })

  type Config = KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason?: string}>; conditions?: Array<{type: string; status: string; reason: string; message: string}>}}
  const config = () => admin.get<Config>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: 'default'})
  const readyz = async () => {
    const response = await fetch(`${operator!.probeUrl}/readyz?verbose`)
    return {status: response.status, body: await response.text()}
  }
  const forbiddenRequests = async () => {
    const metrics = parsePromText(await (await fetch(operator!.metricsUrl)).text())
    return (metrics.get('rest_client_requests_total')?.samples ?? []).filter((sample) => sample.labels.code === '403' && sample.value > 0)
  }

  it('its own features run with not one 403; the cloud controller enabled later reports Forbidden and nothing else stops; granted, it starts', async () => {
    const ingressNamespace = await freshNamespace(admin, 'lp2-ing')
    const ingress = (name: string) => admin.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ingressNamespace}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name, namespace: ingressNamespace, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: `${name}-${suffix}.example.com`}]},
    })
    const synced = (name: string) => eventually(async () => {
      const {items} = await admin.request<{items: Array<KubeObject & {status?: {phase?: string}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ingressNamespace}/endpoints`})
      return items.some((cr) => cr.metadata?.name?.includes(name) && cr.status?.phase === 'Synced')
    }, 60_000, `the Endpoint of ${name} synced`)
    await ingress('before')
    await synced('before')
    await eventually(async () => (await readyz()).status === 200, 30_000, '/readyz 200')
    assert.deepEqual(await forbiddenRequests(), [])

    await admin.mergePatch({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: 'default'}, {spec: {cloud_controller: {enabled: true}}})
    const refused = await eventually(async () => {
      const current = await config()
      const cloud = (current.status?.controllers ?? []).filter((c) => c.name.startsWith('cloud-'))
      return cloud.length === 2 && cloud.every((c) => c.reason?.startsWith('Forbidden: ')) ? current : undefined
    }, 60_000, 'the cloud controller\'s features Forbidden')
    const cloudNode = refused.status!.controllers!.find((c) => c.name === 'cloud-node')!
    assert.equal(cloudNode.running, false)
    assert.match(cloudNode.reason!, /^Forbidden: the operator may not .*nodes.* cluster-wide.*; the installed RBAC lacks this feature's rules: run `polycrate operator install` again with it enabled in the values/)
    const ready = refused.status!.conditions!.find((c) => c.type === 'Ready')!
    assert.deepEqual([ready.status, ready.reason], ['False', 'FeatureForbidden'])
    assert.match(ready.message, /cloud-node \(Forbidden: /)
    const probe = await readyz()
    assert.equal(probe.status, 500)
    assert.match(probe.body, /cloud-node: Forbidden: /)
    // Nothing else stopped: an Ingress created now still syncs; the refused features sent no request that was refused.
    await ingress('during')
    await synced('during')
    assert.deepEqual(await forbiddenRequests(), [], 'the review asked first: no 403')
    const states = parsePromText(await (await fetch(operator!.metricsUrl)).text()).get('polycrate_operator_feature_status')!.samples
    assert.deepEqual(states.filter((s) => s.labels.feature === 'cloud-node' && s.value === 1).map((s) => s.labels.state), ['forbidden'])

    // An admin grants the union (what `install` with cloud_controller enabled, or `manifests --all-features`, applies).
    const granted = Date.now()
    await applyGeneratedRbac(admin, namespace, operatorPermissions(), {clusterSuffix: suffix})
    await eventually(async () => {
      const cloud = ((await config()).status?.controllers ?? []).filter((c) => c.name.startsWith('cloud-'))
      return cloud.length === 2 && cloud.every((c) => c.running)
    }, 60_000, 'the cloud controller\'s features running once granted')
    process.stderr.write(`      [least-privilege] Forbidden → Running ${((Date.now() - granted) / 1000).toFixed(1)} s after the rules were applied (checked again every 30 s)\n`)
    await eventually(async () => (await readyz()).status === 200, 30_000, '/readyz 200 again')
    assert.deepEqual(await forbiddenRequests(), [])
  })
})
