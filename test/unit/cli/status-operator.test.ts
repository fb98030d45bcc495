import assert from 'node:assert/strict'
import {operatorConfigDocument, renderOperator, renderOperatorConfig, renderStatus, statusReport} from '../../../src/cli/status-view.js'
import {operatorPresence, operatorStatus, type DeploymentObject, type PodObject} from '../../../src/operator/install/presence.js'
import type {Lease} from '../../../src/operator/runtime/leader-election.js'

const NOW = Date.parse('2026-03-01T12:00:00Z')
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
const IMAGE = 'cargo.ayedo.cloud/library/polycrate:0.1.0'

const deployment = (namespace: string, desired: number, ready: number): DeploymentObject => ({
  metadata: {name: 'polycrate-operator', namespace},
  spec: {replicas: desired, template: {spec: {containers: [{name: 'operator', image: IMAGE}]}}},
  status: {readyReplicas: ready, updatedReplicas: desired, availableReplicas: ready},
})
const pod = (name: string, leader: boolean | undefined, options: {ready?: boolean; restarts?: number; phase?: string; reason?: string} = {}): PodObject => ({
  metadata: {name, namespace: 'polycrate', creationTimestamp: ago(3600), labels: {...(leader === undefined ? {} : {'polycrate.io/leader': String(leader)})}},
  spec: {nodeName: 'node-1', containers: [{name: 'operator', image: IMAGE}]},
  status: {
    phase: options.phase ?? 'Running',
    conditions: [{type: 'Ready', status: options.ready === false ? 'False' : 'True'}],
    containerStatuses: [{name: 'operator', restartCount: options.restarts ?? 0, ...(options.reason ? {state: {waiting: {reason: options.reason}}} : {})}],
  },
})
const lease = (name: string, holder: string | undefined, renewed: number, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Lease => ({
  metadata: {name, namespace: 'polycrate', labels, annotations},
  spec: {...(holder ? {holderIdentity: holder} : {}), leaseDurationSeconds: 15, renewTime: ago(renewed)},
})
const heartbeat = (holder: string | undefined, renewed: number) => lease('polycrate-operator-run-laptop-1a2b3c4d', holder, renewed, {'polycrate.io/lease-role': 'heartbeat'}, {'polycrate.io/host': 'laptop', 'polycrate.io/pid': '4242', 'polycrate.io/version': '0.1.0'})
const statusOf = (snapshot: Parameters<typeof operatorPresence>[0], operatorNamespace?: string) =>
  operatorStatus(operatorPresence(snapshot, NOW), {operatorNamespace, defaultNamespace: 'polycrate'})

const config = {
  apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig',
  metadata: {name: 'default', namespace: 'polycrate', managedFields: [{manager: 'polycrate-operator-config', subresource: 'status', time: '2026-03-01T11:55:00Z'}]},
  spec: {},
  status: {phase: 'Ready', conditions: [{type: 'Ready', status: 'True', reason: 'ControllersRunning', message: 'Running: endpoint-discovery.'}], controllers: [{name: 'endpoint-discovery', running: true, reason: 'Running'}]},
}

describe('status: what runs', () => {
  it('nothing running: said plainly, how to start it, no "runs with the defaults"; the OperatorConfig is STALE', () => {
    const operator = statusOf({deployments: [], pods: [], leases: []})
    assert.equal(operator.running, false)
    assert.equal(renderOperator(operator, {now: NOW}), [
      'Operator',
      '--------',
      '  Namespace:  polycrate (the default: no operator found in any namespace)',
      '  State:      NOTHING RUNS: no Deployment, Pod or lease of the operator in namespace polycrate',
      '              Start it with `polycrate operator install` (a Deployment in the cluster) or `polycrate operator run` (a process here).',
    ].join('\n'))
    const report = statusReport('https://k8s', {operatorConfigs: [config], listings: []}, NOW, [], operator)
    assert.deepEqual(report.operatorConfigs[0]!.reported, {at: '2026-03-01T11:55:00Z', stale: true, by: null})
    const text = renderStatus(report, {now: NOW})
    assert.match(text, /Reported: +STALE — last reported 5m ago \(2026-03-01T11:55:00Z\); no operator runs to keep it current/)
    assert.match(text, /Phase: +Ready \(as last reported\)/)
    assert.match(text, /Conditions \(as last reported\):/)
    assert.doesNotMatch(renderStatus(statusReport('https://k8s', {operatorConfigs: [], listings: []}, NOW, [], operator), {now: NOW}), /runs with the defaults/)
  })

  it('a Deployment at 0/1 on a cluster without a Node: nothing runs, with the Pod\'s reason', () => {
    const operator = statusOf({deployments: [deployment('polycrate', 1, 0)], pods: [pod('polycrate-operator-x', undefined, {ready: false, phase: 'Pending', reason: 'ContainerCreating'})], leases: []})
    assert.equal(operator.running, false)
    assert.equal(operator.summary, 'nothing runs in namespace polycrate; Deployment polycrate-operator 0/1 ready; Pod polycrate-operator-x ContainerCreating')
  })

  it('a running Deployment with a standby: replicas, Pods with node, role, restarts, image and version; the leader\'s Lease age', () => {
    const operator = statusOf({
      deployments: [deployment('polycrate', 2, 2)],
      pods: [pod('polycrate-operator-6d4f9-a1', true), pod('polycrate-operator-6d4f9-b2', false, {restarts: 1})],
      leases: [lease('polycrate-operator-leader', 'polycrate-operator-6d4f9-a1_5e1f', 2)],
    })
    assert.equal(operator.running, true)
    assert.equal(renderOperator(operator, {now: NOW}), [
      'Operator',
      '--------',
      '  Namespace:  polycrate',
      '  State:      running: Deployment polycrate-operator 2/2 ready; leader Pod polycrate-operator-6d4f9-a1 (Lease renewed 2s ago)',
      `  Deployment: polycrate-operator 2/2 ready, 2 up to date (${IMAGE})`,
      '  Pods:',
      '    NAME                          NODE     READY   ROLE      RESTARTS   IMAGE                                       VERSION   AGE',
      `    polycrate-operator-6d4f9-a1   node-1   true    leader    0          ${IMAGE}   0.1.0     1h`,
      `    polycrate-operator-6d4f9-b2   node-1   true    standby   1          ${IMAGE}   0.1.0     1h`,
    ].join('\n'))
    const report = statusReport('https://k8s', {operatorConfigs: [config], listings: []}, NOW, [], operator)
    assert.deepEqual(report.operatorConfigs[0]!.reported, {at: '2026-03-01T11:55:00Z', stale: false, by: 'the leader, Pod polycrate-operator-6d4f9-a1'})
    assert.match(renderOperatorConfig(report.operatorConfigs[0]!, {now: NOW}), /Reported: +last reported 5m ago \(2026-03-01T11:55:00Z\) by the leader, Pod polycrate-operator-6d4f9-a1; it keeps it current/)
  })

  it('a laptop process: running; stopped: nothing runs, the process shown as stopped; killed: gone without stopping', () => {
    const running = statusOf({deployments: [], pods: [], leases: [heartbeat('laptop_1', 3)]})
    assert.equal(running.running, true)
    assert.match(renderOperator(running, {now: NOW}), /State: +running: a process on host laptop \(pid 4242\), outside the cluster without leader election \(heartbeat renewed 3s ago\)/)
    assert.match(renderOperator(running, {now: NOW}), /laptop +4242 +0\.1\.0 +polycrate-operator-run-laptop-1a2b3c4d +running, renewed 3s ago/)

    const stopped = statusOf({deployments: [], pods: [], leases: [heartbeat(undefined, 125)]})
    assert.equal(stopped.running, false)
    const text = renderOperator(stopped, {now: NOW})
    assert.match(text, /State: +NOTHING RUNS in namespace polycrate; last seen: heartbeat Lease polycrate-operator-run-laptop-1a2b3c4d released 2m 5s ago \(the process stopped\)/)
    assert.match(text, /laptop +4242 +0\.1\.0 +polycrate-operator-run-laptop-1a2b3c4d +stopped 2m 5s ago/)

    const killed = statusOf({deployments: [], pods: [], leases: [heartbeat('laptop_1', 40)]})
    assert.equal(killed.running, false)
    assert.match(renderOperator(killed, {now: NOW}), /gone without stopping \(killed\?\): last renewed 40s ago/)
  })

  it('--operator-namespace looks there; an operator elsewhere is named', () => {
    const operator = statusOf({deployments: [deployment('polycrate', 1, 1)], pods: [], leases: [lease('polycrate-operator-leader', 'p_1', 1)]}, 'ops')
    assert.equal(operator.namespace, 'ops')
    assert.equal(operator.running, false)
    assert.match(renderOperator(operator, {now: NOW}), /Also: +an operator runs in namespace polycrate \(--operator-namespace polycrate shows it\)/)
  })

  it('the monitoring agent\'s "not connected yet" is not repeated once APIConnected is True', () => {
    const doc = operatorConfigDocument({
      metadata: {name: 'default', namespace: 'polycrate'}, spec: {agent: {enabled: true}},
      status: {
        conditions: [{type: 'APIConnected', status: 'True', reason: 'Connected', lastTransitionTime: ago(4)}],
        monitoring: {assigned_endpoints: 0, message: 'Cannot fetch the assigned endpoints: not connected to the Polycrate API yet (see the APIConnected condition)'},
      },
    })
    const text = renderOperatorConfig(doc, {now: NOW})
    assert.doesNotMatch(text, /not connected to the Polycrate API yet/)
    assert.match(text, /the Polycrate API connected 4s ago; the agent fetches its assigned endpoints next/)
  })
})
