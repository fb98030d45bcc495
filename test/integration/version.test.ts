/**
 * `polycrate version` against the run's real kube-apiserver: an operator "installed" in a namespace of its own (a
 * Deployment, two Pods whose status the test writes — no kubelet runs here — the leader Lease and an OperatorConfig
 * with the version the leader reported), and the Polycrate API simulator for the API's part.
 */
import assert from 'node:assert/strict'
import {randomUUID} from 'node:crypto'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import type {VersionReport} from '../../src/cli/version-view.js'
import type {KubeClient} from '../../src/kube/client.js'
import type {OperatorInstance} from '../../src/operator/install/replicas.js'
import {ApiSimulator} from '../support/api-simulator/index.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'

const IMAGE = (tag: string) => `cargo.ayedo.cloud/library/polycrate:${tag}`
const labels = {'app.kubernetes.io/name': 'polycrate-operator', 'app.kubernetes.io/part-of': 'polycrate'}
/** A Lease's MicroTime. */
const microTime = (at: number) => new Date(at).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

async function createPod(client: KubeClient, namespace: string, name: string, tag: string, ready: boolean, restarts: number) {
  const ref = {group: '', version: 'v1', plural: 'pods', namespace, name}
  await client.create({...ref, name: undefined}, {
    apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, labels},
    spec: {containers: [{name: 'operator', image: IMAGE(tag)}]},
  })
  await client.mergePatch({...ref, subresource: 'status'}, {
    status: {
      phase: 'Running',
      conditions: [{type: 'Ready', status: ready ? 'True' : 'False'}],
      containerStatuses: [{
        name: 'operator', image: IMAGE(tag), imageID: `cargo.ayedo.cloud/library/polycrate@sha256:${'ab'.repeat(32)}`,
        ready, restartCount: restarts, state: {running: {startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z')}},
      }],
    },
  })
}

describe('polycrate version on a real kube-apiserver', () => {
  let client: KubeClient
  let ns: string
  let sim: ApiSimulator
  let admin: string
  const leaderPod = 'polycrate-operator-6f7c9-leadr'
  const standbyPod = 'polycrate-operator-6f7c9-stdby'
  const version = async (...args: string[]) => {
    const result = await runCommand(['version', '--kubeconfig', controlPlane().kubeconfigPath, ...args])
    return {...result, exit: result.error?.oclif?.exit ?? 0}
  }

  before(async () => {
    await ensureCrds()
    client = adminClient()
    ns = await freshNamespace(client, 'version')
    await client.create({group: 'apps', version: 'v1', plural: 'deployments', namespace: ns}, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'polycrate-operator', namespace: ns, labels},
      spec: {
        replicas: 2, selector: {matchLabels: {'app.kubernetes.io/name': 'polycrate-operator'}},
        template: {metadata: {labels}, spec: {containers: [{name: 'operator', image: IMAGE('0.2.0')}]}},
      },
    })
    await client.mergePatch({group: 'apps', version: 'v1', plural: 'deployments', namespace: ns, name: 'polycrate-operator', subresource: 'status'},
      {status: {replicas: 2, readyReplicas: 1, updatedReplicas: 1}})
    await createPod(client, ns, leaderPod, '0.1.0', true, 0)
    await createPod(client, ns, standbyPod, '0.2.0', false, 2)
    await client.create({group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: ns}, {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: 'polycrate-operator-leader', namespace: ns},
      spec: {holderIdentity: `${leaderPod}_${randomUUID()}`, leaseDurationSeconds: 3600, renewTime: microTime(Date.now()), acquireTime: microTime(Date.now())},
    })
    const config = {group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: ns, name: 'default'}
    await client.create({...config, name: undefined}, {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: ns}, spec: {}})
    await client.mergePatch({...config, subresource: 'status'}, {status: {agent: {version: '0.1.0'}}})
    sim = await ApiSimulator.start()
    admin = sim.issueToken({kind: 'platform-admin'})
    sim.systemStatus = {status: 'ok', version: '2.7.1'}
    sim.systemConfig.OPERATOR_BLOCK_VERSION = '0.2.0'
  })
  after(async () => {
    client.close()
    await sim.close()
  })

  it('-o json: the Kubernetes version, the Deployment, each Pod\'s version and the leader (the Lease holder)', async () => {
    const {stdout, exit} = await version('-n', ns, '-o', 'json')
    assert.equal(exit, 0)
    const report = JSON.parse(stdout) as VersionReport
    assert.equal(report.client.node, process.version)
    assert.ok(report.cluster && !('error' in report.cluster))
    assert.match(report.cluster.kubernetesVersion ?? '', /^v1\.\d+\.\d+/)
    assert.equal(report.cluster.server, controlPlane().server)
    assert.equal(report.api, undefined, 'no API without --api-url/--token')
    const [instance, ...others] = report.cluster.operators
    assert.equal(others.length, 0)
    assert.ok(Math.abs(Date.parse(instance!.leader!.renewTime ?? '') - Date.now()) < 600_000, 'renewTime is the Lease\'s')
    assert.deepEqual(instance, {
      namespace: ns,
      deployment: {name: 'polycrate-operator', desired: 2, ready: 1, updated: 1, image: IMAGE('0.2.0')},
      leader: {holder: instance!.leader!.holder, pod: leaderPod, renewTime: instance!.leader!.renewTime, fresh: true},
      reportedVersion: '0.1.0',
      replicas: instance!.replicas,
    } satisfies OperatorInstance)
    assert.match(instance!.leader!.holder, new RegExp(`^${leaderPod}_[0-9a-f-]{36}$`))
    assert.deepEqual(instance!.replicas.map((r) => [r.pod, r.version, r.ready, r.restarts, r.leader, r.phase]), [
      [leaderPod, '0.1.0', true, 0, true, 'Running'],
      [standbyPod, '0.2.0', false, 2, false, 'Running'],
    ])
  })

  it('text: one line per Pod under the Operator line; -o yaml the same document; every namespace by default', async () => {
    const text = await version('-n', ns)
    assert.equal(text.exit, 0)
    assert.match(text.stdout, new RegExp(`^Operator: namespace ${ns}: Deployment polycrate-operator 1/2 ready, leader ${leaderPod}, renewed \\d+s ago$`, 'm'))
    assert.match(text.stdout, new RegExp(`^ {10}${leaderPod} +0\\.1\\.0 +true +0 +\\S+ +yes +${IMAGE('0.1.0').replaceAll('.', '\\.')}$`, 'm'))
    assert.match(text.stdout, new RegExp(`^ {10}${standbyPod} +0\\.2\\.0 +false \\(Running\\) +2 +\\S+ +${IMAGE('0.2.0').replaceAll('.', '\\.')}$`, 'm'))
    const asYaml = yaml.load((await version('-n', ns, '-o', 'yaml')).stdout) as VersionReport
    assert.ok(asYaml.cluster && 'operators' in asYaml.cluster)
    assert.equal(asYaml.cluster.operators[0]!.leader?.pod, leaderPod)
    const all = JSON.parse((await version('--json')).stdout) as VersionReport
    assert.ok(all.cluster && 'operators' in all.cluster)
    assert.ok(all.cluster.operators.some((instance) => instance.namespace === ns), 'found without -n')
  })

  it('a namespace without the operator: "not running"', async () => {
    const empty = await freshNamespace(client, 'version-empty')
    const {stdout, exit} = await version('-n', empty)
    assert.equal(exit, 0)
    assert.match(stdout, /^Operator: not running in this cluster/m)
  })

  it('with the API: its version and the operator version it wants; a rejected token exits 1, the rest printed', async () => {
    const {stdout, exit} = await version('-n', ns, '--api-url', sim.url, '--token', admin, '-o', 'json')
    assert.equal(exit, 0)
    assert.deepEqual((JSON.parse(stdout) as VersionReport).api, {url: sim.url, version: '2.7.1', desiredOperatorVersion: '0.2.0'})
    const wrong = await version('-n', ns, '--api-url', sim.url, '--token', 'not-a-token')
    assert.equal(wrong.exit, 1)
    assert.match(wrong.stdout, /^Operator: namespace /m)
    assert.match(wrong.stdout, /^API: +http:\/\/127\.0\.0\.1:\d+: the Polycrate API rejected the token \(401\)/m)
    assert.doesNotMatch(wrong.stdout + wrong.stderr, /not-a-token/)
  })
})
