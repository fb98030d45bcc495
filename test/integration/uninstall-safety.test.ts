/**
 * `uninstall` never strips a running operator (issue 31 item 1), on the real apiserver: an operator runs in one
 * namespace (in process, no leader election: its heartbeat Lease says that it runs) with API sync to the simulator;
 * an Ingress of a user carries its discovery finalizer, the Endpoint CR it made carries the sync finalizer.
 *
 * - `uninstall -n <typo>` (a namespace that does not exist) and `uninstall -n <empty>` (one without an install):
 *   exit 1, the message names where the operator runs, nothing released;
 * - `install -n <other>` while it runs: refused, nothing applied;
 * - `uninstall -n <leftover>` (a namespace with an old install, an OperatorConfig and a ServiceAccount): its objects
 *   go, the shared finalizers stay (and the report says why);
 * - after those, deleting the Ingress still deletes its endpoint in the Polycrate API;
 * - once the operator has stopped, `uninstall` of its namespace releases the finalizers.
 */
import assert from 'node:assert/strict'
import {runCommand} from '@oclif/test'
import type {KubeObject} from '../../src/kube/client.js'
import {finalizers, OPERATOR_NAME} from '../../src/operator/conventions.js'
import type {UninstallReport} from '../../src/operator/install/uninstall.js'
import {controlPlane, freshNamespace} from '../support/cluster.js'
import {eventually, ingressRef} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

type Finalized = KubeObject & {status?: {apiID?: string; phase?: string}}
type ApiEndpoint = {id: string; remote_address: string; is_deleted?: boolean}

describe('uninstall never strips a running operator (real apiserver, in-process operator)', function () {
  this.timeout(180_000)
  const harness = inProcessOperator({waitForCluster: true})
  let users = ''
  const host = `safety-${Math.random().toString(36).slice(2, 8)}.example.com`
  const endpointName = host.replaceAll('.', '-')
  const kubeconfig = () => controlPlane().kubeconfigPath
  const endpointRef = () => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace: users, name: endpointName})
  const liveApiEndpoints = () => (harness.sim.list('endpoints') as ApiEndpoint[]).filter((e) => e.remote_address === host && !e.is_deleted)

  /** The finalizers of the user's Ingress and of its Endpoint CR: what a wrong uninstall would strip. */
  const held = async () => ({
    ingress: (await harness.client.get<KubeObject>(ingressRef(users, 'shop'))).metadata?.finalizers ?? [],
    endpoint: (await harness.client.get<Finalized>(endpointRef())).metadata?.finalizers ?? [],
  })

  before(async () => {
    users = await freshNamespace(harness.client, 'users')
    await harness.client.create(ingressRef(users), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'shop', namespace: users, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'shop', port: {number: 80}}}}]}}]},
    })
    await eventually(async () => {
      const endpoint = await harness.client.getOrUndefined<Finalized>(endpointRef())
      return endpoint?.status?.phase === 'Synced' && liveApiEndpoints().length === 1
    }, 60_000, 'the Endpoint CR synced to the API')
    assert.deepEqual(await held(), {ingress: [finalizers.ingressDiscovery], endpoint: [finalizers.endpointSync]})
    // The positive signal that the operator says it runs: its heartbeat Lease, held.
    await eventually(async () => {
      const leases = await harness.client.request<{items: Array<KubeObject & {spec?: {holderIdentity?: string}}>}>({path: `/apis/coordination.k8s.io/v1/namespaces/${harness.namespace}/leases`})
      return leases.items.some((lease) => lease.metadata?.name?.startsWith('polycrate-operator-run-') && lease.spec?.holderIdentity)
    }, 30_000, 'the heartbeat Lease held')
  })

  it('uninstall -n <a namespace that does not exist>: exit 1, names where the operator runs, releases nothing', async () => {
    const typo = `${harness.namespace}x`
    const {error, stdout} = await runCommand(['operator', 'uninstall', '--yes', '-n', typo, '--kubeconfig', kubeconfig()])
    assert.equal(error?.oclif?.exit, 1, `exit code (stdout: ${stdout})`)
    assert.match(error!.message, new RegExp(`No operator installed in namespace ${typo} \\(namespace ${typo} does not exist\\); nothing was changed`))
    assert.match(error!.message, new RegExp(`The operator runs in namespace ${harness.namespace} \\(heartbeat Lease polycrate-operator-run-\\S+ held by a process on host \\S+ \\(pid \\d+\\), outside the cluster, renewed \\d+s ago\\): run \`polycrate operator uninstall -n ${harness.namespace}\``))
    assert.doesNotMatch(stdout, /released/)
    assert.deepEqual(await held(), {ingress: [finalizers.ingressDiscovery], endpoint: [finalizers.endpointSync]})
  })

  it('uninstall -n <a namespace without an install> (--json): exit 1, nothing released', async () => {
    const empty = await freshNamespace(harness.client, 'empty')
    const {error, stdout} = await runCommand(['operator', 'uninstall', '--yes', '-n', empty, '--kubeconfig', kubeconfig(), '--json'])
    assert.equal(error?.oclif?.exit, 1)
    const printed = JSON.parse(stdout) as {error: {message: string}}
    assert.match(printed.error.message, new RegExp(`No operator installed in namespace ${empty} \\(namespace ${empty} holds no Deployment, ServiceAccount, OperatorConfig or lease of it\\)`))
    assert.match(printed.error.message, new RegExp(`runs in namespace ${harness.namespace}`))
    assert.deepEqual(await held(), {ingress: [finalizers.ingressDiscovery], endpoint: [finalizers.endpointSync]})
    assert.ok(await harness.client.getOrUndefined({group: '', version: 'v1', plural: 'namespaces', name: empty}), 'the namespace stays')
  })

  it('install -n <another namespace> while it runs: refused with where it runs and what to do; nothing applied', async () => {
    const other = `ops-${Math.random().toString(36).slice(2, 8)}`
    const {error} = await runCommand(['operator', 'install', '-n', other, '--kubeconfig', kubeconfig(), '--no-wait'])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, new RegExp(`An operator already runs in namespace ${harness.namespace} \\(`))
    assert.match(error!.message, new RegExp(`polycrate operator install -n ${harness.namespace}`))
    assert.match(error!.message, new RegExp(`polycrate operator uninstall -n ${harness.namespace}`))
    assert.equal(await harness.client.getOrUndefined({group: '', version: 'v1', plural: 'namespaces', name: other}), undefined, 'no namespace created')
  })

  it('uninstall -n <an old install elsewhere>: removes its objects, keeps the shared finalizers and says why', async () => {
    const leftover = await freshNamespace(harness.client, 'old')
    await harness.client.create({group: '', version: 'v1', plural: 'serviceaccounts', namespace: leftover}, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: OPERATOR_NAME, namespace: leftover}})
    await harness.client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: leftover}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: leftover}, spec: {},
    })
    const {error, stdout} = await runCommand(['operator', 'uninstall', '--yes', '-n', leftover, '--kubeconfig', kubeconfig(), '--json'])
    assert.equal(error, undefined, error?.message)
    const report = JSON.parse(stdout) as UninstallReport
    assert.equal(report.finalizers, 'kept')
    assert.match(report.keptBecause ?? '', new RegExp(`another operator instance runs in namespace ${harness.namespace} \\(`))
    assert.ok(report.results.some((r) => r.kind === 'ServiceAccount' && r.outcome === 'deleted'), 'its own objects go')
    assert.ok(!report.results.some((r) => r.outcome === 'released'), 'no finalizer released')
    assert.deepEqual(await held(), {ingress: [finalizers.ingressDiscovery], endpoint: [finalizers.endpointSync]})

    const refused = await runCommand(['operator', 'uninstall', '--yes', '-n', leftover, '--crds', '--kubeconfig', kubeconfig()])
    assert.equal(refused.error?.oclif?.exit, 1)
    assert.match(refused.error!.message, /--crds would delete every polycrate\.io object in the cluster, also under the operator that runs in namespace/)
  })

  it('after the refused uninstalls, an Ingress deleted is still deleted in the Polycrate API', async () => {
    await harness.client.delete(ingressRef(users, 'shop'))
    await eventually(async () => (await harness.client.getOrUndefined(ingressRef(users, 'shop'))) === undefined, 60_000, 'the Ingress gone')
    await eventually(async () => (await harness.client.getOrUndefined(endpointRef())) === undefined, 60_000, 'the Endpoint CR gone')
    await eventually(async () => liveApiEndpoints().length === 0, 60_000, 'the API endpoint deleted')
  })

  it('once the operator has stopped, uninstall of its namespace releases the finalizers', async () => {
    await harness.stop()
    // What a stopped operator leaves: a finalizer on a user's object that nothing releases.
    await harness.client.create(ingressRef(users), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'again', namespace: users, finalizers: [finalizers.ingressDiscovery]},
      spec: {rules: [{host: `again-${host}`, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'shop', port: {number: 80}}}}]}}]},
    })
    const {error, stdout} = await runCommand(['operator', 'uninstall', '--yes', '-n', harness.namespace, '--kubeconfig', kubeconfig(), '--json'])
    assert.equal(error, undefined, error?.message)
    const report = JSON.parse(stdout) as UninstallReport
    assert.equal(report.finalizers, 'released', report.keptBecause)
    assert.ok(report.results.some((r) => r.kind === 'Ingress' && r.name === 'again' && r.outcome === 'released'))
    assert.ok(report.results.some((r) => r.kind === 'Lease' && r.name.startsWith('polycrate-operator-run-') && r.outcome === 'deleted'), 'its stopped heartbeat goes')
    assert.deepEqual((await harness.client.get<KubeObject>(ingressRef(users, 'again'))).metadata?.finalizers, undefined)
  })
})
