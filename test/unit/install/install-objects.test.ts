import assert from 'node:assert/strict'
import {countOutcomes, resultLine} from '../../../src/cli/install-view.js'
import type {KubeObject} from '../../../src/kube/client.js'
import {finalizers} from '../../../src/operator/conventions.js'
import {rolloutPodFailure, rolloutPodsProgress, rolloutState} from '../../../src/operator/install/install.js'
import {dockerConfigJson, installPlan, planObjects} from '../../../src/operator/install/objects.js'
import {operatorPermissions} from '../../../src/operator/operator.js'
import {operatorFinalizers, ownsLoadBalancerFinalizer} from '../../../src/operator/install/uninstall.js'
import {parseBlockValues} from '../../../src/operator/install/values.js'
import {METRICS_JOB, OPERATOR_CONTAINER} from '../../../src/operator/install/alerts.js'

type Container = {image: string; resources: unknown; securityContext: {capabilities: {add?: string[]; drop: string[]}}}
type Deployment = {spec: {replicas: number; template: {spec: {imagePullSecrets?: Array<{name: string}>; containers: Container[]}}}}
const deploymentOf = (objects: KubeObject[]) => objects.find((o) => o.kind === 'Deployment') as unknown as Deployment

describe('install plan from block values (pure)', () => {
  const values = parseBlockValues({
    namespace: 'ops',
    image_tag: '9.9.9',
    deployment: {replicas: 3, resources: {requests: {cpu: '200m'}, limits: {memory: '4Gi'}}},
    image_credentials: {enabled: true, name: 'pull', registry: 'registry.example.com', username: 'robot', password: 'pw'},
    security: {add_capabilities: ['NET_RAW']},
    metrics: {enabled: true},
    operator_config: {
      api_sync: {enabled: true, api_url: 'https://api.example.com', credentials: {secret_name: 'tok', token_key: 'key', api_token: 'secret-token'}},
      external_dns_webhook: {port: 9999},
    },
  })
  const plan = installPlan(values, operatorPermissions())

  it('the Deployment takes image, replicas, resources, pull Secret and capabilities (drop ALL stays)', () => {
    const deployment = deploymentOf(plan.workload)
    const container = deployment.spec.template.spec.containers[0]!
    assert.equal(container.image, 'cargo.ayedo.cloud/library/polycrate:9.9.9')
    assert.equal(deployment.spec.replicas, 3)
    assert.deepEqual(container.resources, {requests: {cpu: '200m', memory: '256Mi'}, limits: {cpu: '1000m', memory: '4Gi'}})
    assert.deepEqual(deployment.spec.template.spec.imagePullSecrets, [{name: 'pull'}])
    assert.deepEqual(container.securityContext.capabilities, {drop: ['ALL'], add: ['NET_RAW']})
  })

  it('the token Secret under credentials.secret_name / token_key; the OperatorConfig without the token', () => {
    const secret = plan.tokenSecret as KubeObject & {data: Record<string, string>; type: string}
    assert.deepEqual([secret.metadata?.name, secret.metadata?.namespace, secret.type], ['tok', 'ops', 'Opaque'])
    assert.equal(Buffer.from(secret.data.key!, 'base64').toString(), 'secret-token')
    assert.equal(plan.operatorConfig.metadata?.name, 'default')
    assert.equal(plan.operatorConfig.metadata?.namespace, 'ops')
    assert.ok(!JSON.stringify(plan.operatorConfig).includes('secret-token'))
    assert.deepEqual((plan.operatorConfig as unknown as {spec: {api_sync: unknown}}).spec.api_sync, {enabled: true, api_url: 'https://api.example.com', credentials_ref: {secret_name: 'tok', token_key: 'key'}})
  })

  it('the image pull Secret is a kubernetes.io/dockerconfigjson for the registry', () => {
    const secret = plan.pullSecret as KubeObject & {data: Record<string, string>; type: string}
    assert.equal(secret.type, 'kubernetes.io/dockerconfigjson')
    const config = JSON.parse(Buffer.from(secret.data['.dockerconfigjson']!, 'base64').toString())
    assert.deepEqual(config, {auths: {'registry.example.com': {username: 'robot', password: 'pw', auth: Buffer.from('robot:pw').toString('base64')}}})
    assert.equal(dockerConfigJson('r', 'a', 'b'), '{"auths":{"r":{"username":"a","password":"b","auth":"YTpi"}}}')
  })

  it('ports from operator_config; every object in the values\' namespace; the order install applies', () => {
    const service = plan.workload.find((o) => o.kind === 'Service' && o.metadata?.name === 'polycrate-operator') as unknown as {spec: {ports: Array<{port: number}>}}
    assert.deepEqual(service.spec.ports.map((p) => p.port), [9999])
    const objects = planObjects(plan, {vmServiceScrape: true})
    assert.deepEqual(objects.map((o) => o.kind).filter((kind, i, all) => all.indexOf(kind) === i),
      ['Namespace', 'Secret', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment', 'PodDisruptionBudget', 'Service', 'NetworkPolicy', 'OperatorConfig', 'VMServiceScrape'])
    assert.deepEqual(planObjects(plan, {vmServiceScrape: false}).filter((o) => o.kind === 'VMServiceScrape'), [])
    for (const object of objects.filter((o) => !['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind!) && o.metadata?.namespace !== 'kube-system')) {
      assert.equal(object.metadata?.namespace, 'ops', `${object.kind} ${object.metadata?.name}`)
    }
  })

  it('the rules and the dashboard: in the values\' namespace, after the VMServiceScrape; the rules select what the manifests make', () => {
    const objects = planObjects(plan, {vmServiceScrape: true, vmRule: true, prometheusRule: true, dashboard: true})
    assert.deepEqual(objects.slice(-4).map((o) => `${o.apiVersion} ${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`), [
      'operator.victoriametrics.com/v1beta1 VMServiceScrape ops/polycrate-operator',
      'operator.victoriametrics.com/v1beta1 VMRule ops/polycrate-operator',
      'monitoring.coreos.com/v1 PrometheusRule ops/polycrate-operator',
      'v1 ConfigMap ops/polycrate-operator-dashboard',
    ])
    assert.deepEqual(planObjects(plan, {vmServiceScrape: false}).filter((o) => ['VMRule', 'PrometheusRule', 'ConfigMap'].includes(o.kind!)), [])
    const rules = objects.find((o) => o.kind === 'VMRule') as unknown as {spec: {groups: Array<{rules: Array<{expr: string}>}>}}
    assert.ok(rules.spec.groups.flatMap((g) => g.rules).every((r) => r.expr.includes('namespace="ops"')))
    // The job label is the metrics Service's name; cAdvisor's container label is the Deployment's container.
    assert.ok(plan.workload.some((o) => o.kind === 'Service' && o.metadata?.name === METRICS_JOB), `no Service ${METRICS_JOB}`)
    assert.equal((deploymentOf(plan.workload).spec.template.spec.containers[0] as unknown as {name: string}).name, OPERATOR_CONTAINER)
    const withBase = installPlan(parseBlockValues({metrics: {alerts: true, runbook_base_url: 'https://git.example.com/ops/README.md'}}), operatorPermissions())
    const first = (withBase.monitoring.prometheusRule as unknown as {spec: {groups: Array<{rules: Array<{annotations: {runbook_url: string}}>}>}}).spec.groups[0]!.rules[0]!
    assert.equal(first.annotations.runbook_url, 'https://git.example.com/ops/README.md#polycrateoperatordown')
  })

  it('without token or credentials: no Secrets; flags override image and namespace', () => {
    const bare = installPlan(parseBlockValues({}), operatorPermissions(), {image: 'registry.example.com/x:1', namespace: 'elsewhere'})
    assert.equal(bare.tokenSecret, undefined)
    assert.equal(bare.pullSecret, undefined)
    assert.deepEqual([bare.tokenSecretName, bare.pullSecretName], ['polycrate-api-token', 'polycrate-registry'])
    assert.equal(deploymentOf(bare.workload).spec.template.spec.containers[0]!.image, 'registry.example.com/x:1')
    assert.equal(deploymentOf(bare.workload).spec.template.spec.imagePullSecrets, undefined)
    assert.equal(bare.namespace, 'elsewhere')
  })

  it('metrics.secure (default): the certificate\'s Secret for install to make, never among the printed objects', () => {
    assert.deepEqual(plan.metricsTls, {namespace: 'ops', secretName: 'polycrate-operator-metrics-tls', dnsNames: ['polycrate-operator-metrics', 'polycrate-operator-metrics.ops', 'polycrate-operator-metrics.ops.svc', 'polycrate-operator-metrics.ops.svc.cluster.local']})
    const objects = planObjects(plan, {vmServiceScrape: true})
    assert.deepEqual(objects.filter((o) => o.metadata?.name === 'polycrate-operator-metrics-tls'), [])
    assert.equal(installPlan(parseBlockValues({metrics: {secure: false}}), operatorPermissions()).metricsTls, undefined)
  })

  it('dns01_webhook.enabled adds the DNS01 objects', () => {
    const withDns01 = installPlan(parseBlockValues({operator_config: {dns01_webhook: {enabled: true, group_name: 'acme.example.com'}}}), operatorPermissions())
    assert.ok(withDns01.workload.some((o) => o.kind === 'APIService' && o.metadata?.name === 'v1alpha1.acme.example.com'))
    assert.ok(!plan.workload.some((o) => o.kind === 'APIService'))
  })
})

describe('rollout state (pure)', () => {
  const deployment = (replicas: number, status: Record<string, unknown>, generation = 2) => ({metadata: {generation}, spec: {replicas}, status}) as never
  const cases: Array<{name: string; input: unknown; done: boolean; message: RegExp; failed?: boolean}> = [
    {name: 'missing', input: undefined, done: false, message: /does not exist/},
    {name: 'generation not yet observed', input: deployment(2, {observedGeneration: 1, updatedReplicas: 2, replicas: 2, availableReplicas: 2}), done: false, message: /observe/},
    {name: 'updating', input: deployment(2, {observedGeneration: 2, updatedReplicas: 1, replicas: 2}), done: false, message: /1 of 2 replicas updated/},
    {name: 'old replicas terminating', input: deployment(2, {observedGeneration: 2, updatedReplicas: 2, replicas: 3, availableReplicas: 2}), done: false, message: /1 old replicas/},
    {name: 'not yet available', input: deployment(2, {observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 1}), done: false, message: /1 of 2 updated replicas available/},
    {name: 'done', input: deployment(2, {observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 2}), done: true, message: /2 of 2 replicas available/},
    {name: 'progress deadline exceeded', input: deployment(2, {observedGeneration: 2, conditions: [{type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.'}]}), done: false, failed: true, message: /timed out/},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const state = rolloutState(c.input as never)
      assert.equal(state.done, c.done)
      assert.equal(state.failed ?? false, c.failed ?? false)
      assert.match(state.message, c.message)
    })
  }
})

describe('rollout: Pods that will not come up by waiting (pure)', () => {
  type Container = {name: string; ready?: boolean; restartCount?: number; state?: object; lastState?: object}
  const pod = (name: string, containers: Container[], conditions: Array<{type: string; status: string; reason?: string; message?: string}> = []) =>
    ({metadata: {name, namespace: 'polycrate'}, status: {phase: 'Pending', containerStatuses: containers, conditions}}) as KubeObject
  const waiting = (reason: string, message?: string): Container => ({name: 'operator', ready: false, state: {waiting: {reason, ...(message ? {message} : {})}}})
  const cases: Array<{name: string; pods: KubeObject[]; failure: RegExp | undefined}> = [
    {name: 'no Pods yet', pods: [], failure: undefined},
    {name: 'ContainerCreating', pods: [pod('a', [waiting('ContainerCreating')])], failure: undefined},
    {name: 'running, not ready yet', pods: [pod('a', [{name: 'operator', ready: false, state: {running: {}}}])], failure: undefined},
    {name: 'Pending without a scheduler verdict', pods: [pod('a', [])], failure: undefined},
    {name: 'ErrImagePull with the kubelet\'s message', pods: [pod('a', [waiting('ErrImagePull', 'failed to pull "r.io/p:typo": not found')])], failure: /^Pod a: container operator is in ErrImagePull: failed to pull "r\.io\/p:typo": not found$/},
    {name: 'ImagePullBackOff', pods: [pod('a', [waiting('ContainerCreating')]), pod('b', [waiting('ImagePullBackOff', 'Back-off pulling image')])], failure: /^Pod b: container operator is in ImagePullBackOff: Back-off pulling image$/},
    {name: 'InvalidImageName', pods: [pod('a', [waiting('InvalidImageName')])], failure: /InvalidImageName/},
    {name: 'CreateContainerConfigError (a missing Secret)', pods: [pod('a', [waiting('CreateContainerConfigError', 'secret "x" not found')])], failure: /CreateContainerConfigError: secret "x" not found/},
    {
      name: 'CrashLoopBackOff with the last exit and how to read the log',
      pods: [pod('a', [{name: 'operator', ready: false, restartCount: 2, state: {waiting: {reason: 'CrashLoopBackOff'}}, lastState: {terminated: {reason: 'Error', exitCode: 1, message: 'boom\nError: no kubeconfig'}}}])],
      failure: /^Pod a: container operator is in CrashLoopBackOff after 2 restart\(s\) \(last exit: Error, code 1: Error: no kubeconfig\)\. Its log: `kubectl -n polycrate logs a -c operator --previous`$/,
    },
    {name: 'Unschedulable with the scheduler\'s message', pods: [pod('a', [], [{type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.'}])], failure: /^Pod a cannot be scheduled \(Unschedulable\): 0\/1 nodes are available: 1 Insufficient memory\.$/},
    {name: 'a terminating Pod is not judged', pods: [{...pod('a', [waiting('ImagePullBackOff')]), metadata: {name: 'a', deletionTimestamp: '2026-01-01T00:00:00Z'}} as KubeObject], failure: undefined},
  ]
  for (const c of cases) {
    it(`${c.name}: ${c.failure ? 'fails at once' : 'waits'}`, () => {
      const failure = rolloutPodFailure(c.pods as never)
      if (c.failure) assert.match(failure ?? '', c.failure)
      else assert.equal(failure, undefined)
    })
  }

  it('the progress line names the new Pods that are not ready', () => {
    assert.equal(rolloutPodsProgress([pod('a', [waiting('ContainerCreating')]), pod('b', [{name: 'operator', ready: false, state: {running: {}}}])] as never),
      'new Pod a: ContainerCreating, new Pod b: running, not ready yet')
  })
})

describe('uninstall: whose finalizers (pure)', () => {
  it('every finalizer of conventions.ts and its deprecated spellings, but not the upstream load-balancer one', () => {
    const ours = operatorFinalizers()
    for (const name of Object.values(finalizers)) assert.equal(ours.has(name), name !== finalizers.loadBalancerCleanup, name)
    assert.ok(ours.has('polycrate.io/s3bucket-finalizer'))
  })

  const cloud = (extra: Record<string, unknown> = {}) => ({spec: {cloud_controller: {enabled: true, ...extra}}})
  const service = (spec: Record<string, unknown>, annotations: Record<string, string> = {}) => ({metadata: {name: 's', namespace: 'n', annotations}, spec}) as never
  const cases: Array<{name: string; config: unknown; service: unknown; owns: boolean}> = [
    {name: 'no OperatorConfig: another cloud controller\'s', config: undefined, service: service({type: 'LoadBalancer'}), owns: false},
    {name: 'cloud controller disabled', config: {spec: {cloud_controller: {enabled: false}}}, service: service({type: 'LoadBalancer'}), owns: false},
    {name: 'load_balancer disabled', config: cloud({load_balancer: {enabled: false}}), service: service({type: 'LoadBalancer'}), owns: false},
    {name: 'managed LoadBalancer Service (scope all)', config: cloud(), service: service({type: 'LoadBalancer'}), owns: true},
    {name: 'a loadBalancerClass of another controller', config: cloud(), service: service({type: 'LoadBalancer', loadBalancerClass: 'example.com/lb'}), owns: false},
    {name: 'opted out', config: cloud(), service: service({type: 'LoadBalancer'}, {'polycrate.io/loadbalancer': 'ignore'}), owns: false},
    {name: 'opt-in scope without the annotation', config: cloud({load_balancer: {service_scope: 'opt-in'}}), service: service({type: 'LoadBalancer'}), owns: false},
    {name: 'opt-in scope with the annotation', config: cloud({load_balancer: {service_scope: 'opt-in'}}), service: service({type: 'LoadBalancer'}, {'polycrate.io/loadbalancer': 'managed'}), owns: true},
    {name: 'no longer a LoadBalancer, finalizer still there', config: cloud(), service: service({type: 'ClusterIP'}), owns: true},
  ]
  for (const c of cases) it(c.name, () => assert.equal(ownsLoadBalancerFinalizer(c.config as never, c.service as never), c.owns))
})

describe('install / uninstall lines', () => {
  it('one line per object, notes in brackets; counts of what happened', () => {
    assert.equal(resultLine({kind: 'Deployment', name: 'polycrate-operator', namespace: 'ops', outcome: 'created'}), 'created   Deployment ops/polycrate-operator')
    assert.equal(resultLine({kind: 'ClusterRole', name: 'polycrate-operator', outcome: 'unchanged'}), 'unchanged ClusterRole polycrate-operator')
    assert.equal(resultLine({kind: 'Namespace', name: 'ops', outcome: 'kept', note: 'not created by install'}), 'kept      Namespace ops (not created by install)')
    assert.equal(countOutcomes([{kind: 'A', name: 'a', outcome: 'deleted'}, {kind: 'B', name: 'b', outcome: 'created'}, {kind: 'C', name: 'c', outcome: 'deleted'}]), '1 created, 2 deleted')
    assert.equal(countOutcomes([]), 'nothing to do')
  })
})
