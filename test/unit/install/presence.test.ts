import assert from 'node:assert/strict'
import {otherOperatorProblem} from '../../../src/operator/install/install.js'
import {formatAgo, imageVersion, instanceText, operatorPresence, podView, type DeploymentObject, type PodObject} from '../../../src/operator/install/presence.js'
import {notInstalledMessage, otherOperators} from '../../../src/operator/install/uninstall.js'
import type {Lease} from '../../../src/operator/runtime/leader-election.js'

const NOW = Date.parse('2026-03-01T12:00:00Z')
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString().replace('Z', '000Z').replace(/\.(\d{3})000000Z$/, '.$1000Z')

const deployment = (namespace: string, desired: number, ready = desired): DeploymentObject => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'polycrate-operator', namespace},
  spec: {replicas: desired, template: {spec: {containers: [{name: 'operator', image: 'cargo.ayedo.cloud/library/polycrate:0.1.0'}]}}},
  status: {readyReplicas: ready, updatedReplicas: desired, availableReplicas: ready},
})
const pod = (namespace: string, name: string, options: {ready?: boolean; phase?: string; leader?: boolean; restarts?: number; waiting?: string} = {}): PodObject => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: {name, namespace, creationTimestamp: ago(600), labels: {'app.kubernetes.io/name': 'polycrate-operator', ...(options.leader === undefined ? {} : {'polycrate.io/leader': String(options.leader)})}},
  spec: {nodeName: 'node-1', containers: [{name: 'operator', image: 'cargo.ayedo.cloud/library/polycrate:0.1.0'}]},
  status: {
    phase: options.phase ?? 'Running',
    conditions: [{type: 'Ready', status: options.ready === false ? 'False' : 'True'}],
    containerStatuses: [{name: 'operator', ready: options.ready !== false, restartCount: options.restarts ?? 0, ...(options.waiting ? {state: {waiting: {reason: options.waiting}}} : {})}],
  },
})
const leader = (namespace: string, holder: string | undefined, renewedSecondsAgo: number, duration = 15): Lease => ({
  apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: 'polycrate-operator-leader', namespace},
  spec: {...(holder ? {holderIdentity: holder} : {}), leaseDurationSeconds: duration, renewTime: ago(renewedSecondsAgo)},
})
const heartbeat = (namespace: string, host: string, holder: string | undefined, renewedSecondsAgo: number): Lease => ({
  apiVersion: 'coordination.k8s.io/v1', kind: 'Lease',
  metadata: {name: `polycrate-operator-run-${host}`, namespace, labels: {'polycrate.io/lease-role': 'heartbeat'}, annotations: {'polycrate.io/host': host, 'polycrate.io/pid': '4242'}},
  spec: {...(holder ? {holderIdentity: holder} : {}), leaseDurationSeconds: 15, renewTime: ago(renewedSecondsAgo)},
})

describe('presence: where the operator runs', () => {
  it('a Deployment with a leader and a standby: both Pods, the leader Lease held by a Pod, fresh', () => {
    const presence = operatorPresence({
      deployments: [deployment('polycrate', 2)],
      pods: [pod('polycrate', 'polycrate-operator-a', {leader: true}), pod('polycrate', 'polycrate-operator-b', {leader: false, restarts: 2})],
      leases: [leader('polycrate', 'polycrate-operator-a_1234', 3)],
    }, NOW)
    assert.equal(presence.instances.length, 1)
    const [instance] = presence.instances
    assert.equal(instance!.running, true)
    assert.deepEqual(instance!.deployment, {name: 'polycrate-operator', desired: 2, ready: 2, updated: 2, available: 2, images: ['cargo.ayedo.cloud/library/polycrate:0.1.0']})
    assert.equal(instance!.leader?.pod, 'polycrate-operator-a')
    assert.equal(instance!.leader?.fresh, true)
    assert.equal(instance!.leader?.renewedAgoMs, 3000)
    assert.deepEqual(instance!.outside, [])
    assert.deepEqual(instance!.pods.map((p) => [p.name, p.restarts, p.leaderLabel, p.version]), [['polycrate-operator-a', 0, true, '0.1.0'], ['polycrate-operator-b', 2, false, '0.1.0']])
    assert.equal(instanceText(instance!), 'namespace polycrate (Deployment polycrate-operator 2/2 ready; Lease polycrate-operator-leader held by Pod polycrate-operator-a, renewed 3s ago)')
  })

  const cases: Array<{name: string; snapshot: Parameters<typeof operatorPresence>[0]; running: boolean; outside?: number}> = [
    {name: 'nothing at all', snapshot: {deployments: [], pods: [], leases: []}, running: false},
    {name: 'a Deployment at 0/1 (no Node): installed, not running', snapshot: {deployments: [deployment('polycrate', 1, 0)], pods: [pod('polycrate', 'p', {phase: 'Pending', ready: false})], leases: []}, running: false},
    {name: 'a laptop process: fresh heartbeat', snapshot: {deployments: [], pods: [], leases: [heartbeat('polycrate', 'laptop', 'laptop_1', 2)]}, running: true, outside: 1},
    {name: 'a laptop process stopped gracefully: released heartbeat', snapshot: {deployments: [], pods: [], leases: [heartbeat('polycrate', 'laptop', undefined, 30)]}, running: false},
    {name: 'a laptop process killed: expired heartbeat', snapshot: {deployments: [], pods: [], leases: [heartbeat('polycrate', 'laptop', 'laptop_1', 16)]}, running: false},
    {name: 'a laptop process with --leader-elect: the leader Lease held outside the cluster', snapshot: {deployments: [], pods: [], leases: [leader('polycrate', 'laptop_99', 1)]}, running: true, outside: 1},
    {name: 'an uninstalled operator: a released leader Lease', snapshot: {deployments: [], pods: [], leases: [leader('polycrate', undefined, 100)]}, running: false},
    {name: 'a terminating Pod does not run', snapshot: {deployments: [], pods: [{...pod('polycrate', 'p'), metadata: {...pod('polycrate', 'p').metadata, deletionTimestamp: ago(1)}}], leases: []}, running: false},
  ]
  for (const c of cases) {
    it(`${c.name}: ${c.running ? 'runs' : 'does not run'}`, () => {
      const presence = operatorPresence(c.snapshot, NOW)
      assert.equal(presence.instances.some((instance) => instance.running), c.running)
      assert.equal(presence.instances.flatMap((instance) => instance.outside).length, c.outside ?? 0)
    })
  }

  it('running namespaces first, then by name', () => {
    const presence = operatorPresence({deployments: [deployment('a', 1, 0)], pods: [], leases: [heartbeat('b', 'laptop', 'laptop_1', 1)]}, NOW)
    assert.deepEqual(presence.instances.map((i) => i.namespace), ['b', 'a'])
  })

  it('a Pod that is not ready says why; versions from tags and digests', () => {
    assert.equal(podView(pod('x', 'p', {ready: false, phase: 'Pending', waiting: 'ImagePullBackOff'})).reason, 'ImagePullBackOff')
    assert.equal(imageVersion('r.io/a/b:1.2.3'), '1.2.3')
    assert.equal(imageVersion('localhost:5000/a'), 'latest')
    assert.equal(imageVersion(`r.io/a@sha256:${'a'.repeat(64)}`), 'sha256:aaaaaaaaaaaa')
    assert.equal(formatAgo(3_400), '3s')
    assert.equal(formatAgo(125_000), '2m 5s')
    assert.equal(formatAgo(3 * 3600_000 + 60_000), '3h 1m')
  })
})

describe('uninstall and install: which other operator instance counts', () => {
  const running = operatorPresence({deployments: [deployment('polycrate', 1)], pods: [pod('polycrate', 'polycrate-operator-a')], leases: [leader('polycrate', 'polycrate-operator-a_1', 2)]}, NOW)

  it('uninstall -n <typo> names where it runs and what to run', () => {
    const message = notInstalledMessage('polycrat', {namespaceExists: false, objects: []}, running)
    assert.equal(message, 'No operator installed in namespace polycrat (namespace polycrat does not exist); nothing was changed. '
      + 'The operator runs in namespace polycrate (Deployment polycrate-operator 1/1 ready; Lease polycrate-operator-leader held by Pod polycrate-operator-a, renewed 2s ago): '
      + 'run `polycrate operator uninstall -n polycrate`.')
  })

  it('uninstall -n <empty> with nothing anywhere points at --orphaned', () => {
    const message = notInstalledMessage('polycrate', {namespaceExists: true, objects: []}, operatorPresence({deployments: [], pods: [], leases: []}, NOW))
    assert.match(message, /holds no Deployment, ServiceAccount, OperatorConfig or lease of it\); nothing was changed\. No operator runs anywhere in this cluster; .*--orphaned/)
  })

  const others: Array<{name: string; presence: ReturnType<typeof operatorPresence>; namespace: string; ownPods?: string[]; expected: string[]}> = [
    {name: 'its own namespace only, its own Pods: none', presence: running, namespace: 'polycrate', ownPods: ['polycrate-operator-a'], expected: []},
    {name: 'another namespace with a running operator', presence: running, namespace: 'ops', expected: ['polycrate']},
    {name: 'another namespace with a Deployment at 0/1 (would run once scheduled)', presence: operatorPresence({deployments: [deployment('polycrate', 1, 0)], pods: [], leases: []}, NOW), namespace: 'ops', expected: ['polycrate']},
    {name: 'another namespace with a Deployment scaled to 0', presence: operatorPresence({deployments: [deployment('polycrate', 0, 0)], pods: [], leases: []}, NOW), namespace: 'ops', expected: []},
    {name: 'a laptop process in the same namespace', presence: operatorPresence({deployments: [], pods: [], leases: [heartbeat('ops', 'laptop', 'laptop_1', 1)]}, NOW), namespace: 'ops', expected: ['ops']},
    {name: 'a stopped laptop process in another namespace', presence: operatorPresence({deployments: [], pods: [], leases: [heartbeat('polycrate', 'laptop', undefined, 5)]}, NOW), namespace: 'ops', expected: []},
  ]
  for (const c of others) {
    it(`otherOperators: ${c.name}`, () => {
      assert.deepEqual(otherOperators(c.presence, c.namespace, new Set(c.ownPods ?? [])).map((o) => o.instance.namespace), c.expected)
    })
  }

  it('install into a second namespace is refused with where and how to move it; into the same one it is an update', () => {
    assert.equal(otherOperatorProblem(running, 'polycrate'), undefined)
    const problem = otherOperatorProblem(running, 'ops')
    assert.match(problem ?? '', /^An operator already runs in namespace polycrate \(Deployment polycrate-operator 1\/1 ready; /)
    assert.match(problem ?? '', /install there instead \(`polycrate operator install -n polycrate`, which updates it\), or move it: `polycrate operator uninstall -n polycrate`, then `polycrate operator install -n ops`\. Nothing was applied\.$/)
    assert.match(otherOperatorProblem(operatorPresence({deployments: [deployment('polycrate', 1, 0)], pods: [], leases: []}, NOW), 'ops') ?? '', /^An operator is already installed in namespace polycrate/)
  })
})
