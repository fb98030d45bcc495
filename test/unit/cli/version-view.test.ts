import assert from 'node:assert/strict'
import {apiVersionOf, clientVersion, renderVersion, type VersionReport} from '../../../src/cli/version-view.js'
import {holderPod, imageVersion, leaseFresh, operatorInstance, type NamespaceObjects} from '../../../src/operator/install/replicas.js'

const NOW = Date.parse('2026-12-05T12:00:00Z')
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString()

describe('imageVersion: the tag of an image reference', () => {
  const cases: Array<[string, string | null]> = [
    ['cargo.ayedo.cloud/library/polycrate:0.1.0', '0.1.0'],
    ['registry.local:5000/polycrate:0.2.0-rc.1', '0.2.0-rc.1'],
    ['registry.local:5000/polycrate', null], // the port is no tag
    ['polycrate:0.3.0@sha256:abc', '0.3.0'],
    ['polycrate@sha256:abc', null],
    ['polycrate:', null],
    ['', null],
  ]
  for (const [image, expected] of cases) it(`${image || '(empty)'} → ${expected}`, () => assert.equal(imageVersion(image), expected))
})

describe('holderPod: the Pod a lease holder identity (<hostname>_<uuid>) names', () => {
  const pods = ['polycrate-operator-7d9f-abcde', 'polycrate-operator-7d9f-fghij']
  it('the hostname part is a Pod', () => assert.equal(holderPod('polycrate-operator-7d9f-fghij_0b5c2b1e-1111-4222-8333-944445555666', pods), 'polycrate-operator-7d9f-fghij'))
  it('a host that is no Pod (a laptop)', () => assert.equal(holderPod('laptop_0b5c2b1e-1111-4222-8333-944445555666', pods), undefined))
  it('an identity without _ is compared whole', () => assert.equal(holderPod('polycrate-operator-7d9f-abcde', pods), 'polycrate-operator-7d9f-abcde'))
})

describe('leaseFresh: renewed within its duration', () => {
  it('renewed 5 s ago, 15 s lease', () => assert.equal(leaseFresh({spec: {renewTime: ago(5), leaseDurationSeconds: 15}}, NOW), true))
  it('renewed 20 s ago, 15 s lease', () => assert.equal(leaseFresh({spec: {renewTime: ago(20), leaseDurationSeconds: 15}}, NOW), false))
  it('no duration: client-go\'s 15 s', () => assert.equal(leaseFresh({spec: {renewTime: ago(16)}}, NOW), false))
  it('never renewed', () => assert.equal(leaseFresh({spec: {}}, NOW), false))
})

const pod = (name: string, options: {ready?: boolean; image?: string; restarts?: number; leaderLabel?: string} = {}) => ({
  metadata: {name, namespace: 'polycrate', creationTimestamp: ago(600), labels: (options.leaderLabel ? {'polycrate.io/leader': options.leaderLabel} : {}) as Record<string, string>},
  spec: {nodeName: 'node-1', containers: [{name: 'operator', image: options.image ?? 'cargo.ayedo.cloud/library/polycrate:0.1.0'}]},
  status: {
    phase: 'Running',
    conditions: [{type: 'Ready', status: options.ready === false ? 'False' : 'True'}],
    containerStatuses: [{name: 'operator', imageID: 'cargo.ayedo.cloud/library/polycrate@sha256:feed', ready: options.ready !== false, restartCount: options.restarts ?? 0}],
  },
})

describe('operatorInstance: one namespace\'s objects → what runs there', () => {
  const deployment = {
    metadata: {name: 'polycrate-operator'},
    spec: {replicas: 2, template: {spec: {containers: [{name: 'operator', image: 'cargo.ayedo.cloud/library/polycrate:0.1.0'}]}}},
    status: {readyReplicas: 1, updatedReplicas: 2},
  }
  const lease = (holder: string, renewedSecondsAgo = 2) => ({spec: {holderIdentity: holder, renewTime: ago(renewedSecondsAgo), leaseDurationSeconds: 15}})

  it('nothing of the operator: undefined', () => {
    assert.equal(operatorInstance({namespace: 'polycrate', pods: []}, NOW), undefined)
    assert.equal(operatorInstance({namespace: 'polycrate', pods: [], lease: {spec: {}}}, NOW), undefined)
  })

  it('two replicas, the lease holder leads, versions from the tags, sorted by name', () => {
    const objects: NamespaceObjects = {
      namespace: 'polycrate',
      pods: [pod('op-b', {image: 'r/polycrate:0.2.0', ready: false, restarts: 3}), pod('op-a')],
      lease: lease('op-b_1234'),
      deployment,
      operatorConfig: {status: {agent: {version: '0.1.0'}}},
    }
    const instance = operatorInstance(objects, NOW)!
    assert.deepEqual(instance.deployment, {name: 'polycrate-operator', desired: 2, ready: 1, updated: 2, image: 'cargo.ayedo.cloud/library/polycrate:0.1.0'})
    assert.deepEqual(instance.leader, {holder: 'op-b_1234', pod: 'op-b', renewTime: ago(2), fresh: true})
    assert.equal(instance.reportedVersion, '0.1.0')
    assert.deepEqual(instance.replicas.map((r) => [r.pod, r.version, r.ready, r.restarts, r.leader, r.imageID]), [
      ['op-a', '0.1.0', true, 0, false, 'cargo.ayedo.cloud/library/polycrate@sha256:feed'],
      ['op-b', '0.2.0', false, 3, true, 'cargo.ayedo.cloud/library/polycrate@sha256:feed'],
    ])
  })

  it('a holder that is no Pod here: named, no Pod leads; an old renewal is not fresh', () => {
    const instance = operatorInstance({namespace: 'polycrate', pods: [pod('op-a', {leaderLabel: 'true'})], lease: lease('laptop_99', 60)}, NOW)!
    assert.deepEqual(instance.leader, {holder: 'laptop_99', pod: null, renewTime: ago(60), fresh: false})
    assert.equal(instance.replicas[0]!.leader, false, 'the lease decides, not a stale label')
    assert.equal(instance.deployment, null)
  })

  it('no lease holder: the Pod label polycrate.io/leader says who leads (an operator without --leader-elect)', () => {
    const instance = operatorInstance({namespace: 'polycrate', pods: [pod('op-a', {leaderLabel: 'true'}), pod('op-b', {leaderLabel: 'false'})]}, NOW)!
    assert.equal(instance.leader, null)
    assert.deepEqual(instance.replicas.map((r) => r.leader), [true, false])
  })

  it('only a lease (an operator run outside the cluster)', () => {
    const instance = operatorInstance({namespace: 'polycrate', pods: [], lease: lease('laptop_1')}, NOW)!
    assert.deepEqual(instance.replicas, [])
    assert.equal(instance.leader?.pod, null)
  })
})

describe('renderVersion', () => {
  const client = clientVersion('0.1.0', {version: 'v20.20.2', platform: 'linux', arch: 'x64'})

  it('--client: one line', () => {
    assert.equal(renderVersion({client}, {now: NOW, colour: false}), 'Client:   polycrate 0.1.0 (Node v20.20.2, linux/x64)')
  })

  it('a cluster with two replicas and the API', () => {
    const instance = operatorInstance({
      namespace: 'polycrate',
      pods: [pod('op-a'), pod('op-b')],
      lease: {spec: {holderIdentity: 'op-a_1', renewTime: ago(3), leaseDurationSeconds: 15}},
      deployment: {metadata: {name: 'polycrate-operator'}, spec: {replicas: 2}, status: {readyReplicas: 2}},
      operatorConfig: {status: {agent: {version: '0.1.0'}}},
    }, NOW)!
    const report: VersionReport = {
      client,
      cluster: {server: 'https://127.0.0.1:6443', kubernetesVersion: 'v1.35.1', operators: [instance]},
      api: {url: 'https://api.example', version: '2.4.0', desiredOperatorVersion: '0.2.0'},
    }
    assert.equal(renderVersion(report, {now: NOW, colour: false}), [
      'Client:   polycrate 0.1.0 (Node v20.20.2, linux/x64)',
      'Cluster:  https://127.0.0.1:6443 (Kubernetes v1.35.1)',
      'Operator: namespace polycrate: Deployment polycrate-operator 2/2 ready, leader op-a, renewed 3s ago',
      '          the leader reported version 0.1.0 to the Polycrate API',
      '          POD    VERSION   READY   RESTARTS   AGE   LEADER   IMAGE',
      '          op-a   0.1.0     true    0          10m   yes      cargo.ayedo.cloud/library/polycrate:0.1.0',
      '          op-b   0.1.0     true    0          10m            cargo.ayedo.cloud/library/polycrate:0.1.0',
      'API:      https://api.example, version 2.4.0; operator version wanted (OPERATOR_BLOCK_VERSION): 0.2.0',
    ].join('\n'))
  })

  it('nothing runs; an unreachable cluster; an API that reports no version', () => {
    assert.match(renderVersion({client, cluster: {server: 'https://x', kubernetesVersion: 'v1.35.1', operators: []}}, {now: NOW, colour: false}),
      /\nOperator: not running in this cluster \(no Pod labelled app\.kubernetes\.io\/name=polycrate-operator, no leader Lease\)$/)
    assert.match(renderVersion({client, cluster: {server: 'https://x', error: 'Cannot reach …'}}, {now: NOW, colour: false}), /\nCluster: {2}Cannot reach …$/)
    assert.match(renderVersion({client, api: {url: 'https://api', version: null, desiredOperatorVersion: null}}, {now: NOW, colour: false}), /\nAPI: {6}https:\/\/api, version <not reported>$/)
  })

  it('an expired lease of a process outside the cluster is said so', () => {
    const instance = operatorInstance({namespace: 'polycrate', pods: [], lease: {spec: {holderIdentity: 'laptop_1', renewTime: ago(120), leaseDurationSeconds: 15}}}, NOW)!
    assert.match(renderVersion({client, cluster: {server: 's', kubernetesVersion: null, operators: [instance]}}, {now: NOW, colour: false}),
      /Operator: namespace polycrate: no Deployment polycrate-operator, leader lease of laptop_1 \(not a Pod of this namespace: an operator run outside the cluster\?\) expired: renewed 2m ago$/)
  })

  it('colour only when asked', () => {
    const report: VersionReport = {client, cluster: {server: 's', error: 'down'}}
    // eslint-disable-next-line no-control-regex
    assert.match(renderVersion(report, {now: NOW, colour: true}), /\x1b\[31mdown/)
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(renderVersion(report, {now: NOW, colour: false}), /\x1b\[/)
  })
})

describe('apiVersionOf', () => {
  it('version, else api_version, else null', () => {
    assert.equal(apiVersionOf({version: '1.2.3', api_version: '9'}), '1.2.3')
    assert.equal(apiVersionOf({api_version: '9'}), '9')
    assert.equal(apiVersionOf({version: null}), null)
  })
})
