import assert from 'node:assert/strict'
import {
  desiredLoadBalancer,
  ingressUpToDate,
  loadBalancerName,
  loadBalancerUpToDate,
  nodeAddress,
  ownsInstance,
  serviceManagement,
  type LbNode,
  type LbService,
  type ServiceScope,
} from '../../../src/operator/cloud/load-balancer.js'

const UID = '0b7a6c3e-1f2d-4e5a-8b9c-0d1e2f3a4b5c'
const CLUSTER = 'c1c1c1c1-0000-4000-8000-000000000001'

function service(options: {
  type?: string
  annotation?: string
  lbClass?: string
  ports?: LbService['spec'] extends infer S ? S extends {ports?: infer P} ? P : never : never
  loadBalancerIP?: string
  sourceRanges?: string[]
  ingress?: Array<{ip?: string; hostname?: string}>
} = {}): LbService {
  return {
    metadata: {name: 'web', namespace: 'shop', uid: UID, ...(options.annotation !== undefined ? {annotations: {'polycrate.io/loadbalancer': options.annotation}} : {})},
    spec: {
      type: options.type ?? 'LoadBalancer',
      ports: options.ports ?? [{name: 'http', protocol: 'TCP', port: 80, nodePort: 30080}, {name: 'https', protocol: 'TCP', port: 443, nodePort: 30443}],
      ...(options.lbClass ? {loadBalancerClass: options.lbClass} : {}),
      ...(options.loadBalancerIP ? {loadBalancerIP: options.loadBalancerIP} : {}),
      ...(options.sourceRanges ? {loadBalancerSourceRanges: options.sourceRanges} : {}),
    },
    ...(options.ingress ? {status: {loadBalancer: {ingress: options.ingress}}} : {}),
  }
}

function node(name: string, options: {ready?: boolean; addresses?: Array<{type: string; address: string}>; labels?: Record<string, string>} = {}): LbNode {
  return {
    metadata: {name, ...(options.labels ? {labels: options.labels} : {})},
    status: {
      addresses: options.addresses ?? [{type: 'InternalIP', address: `10.0.0.${name.slice(-1)}`}],
      conditions: [{type: 'Ready', status: options.ready === false ? 'False' : 'True'}],
    },
  }
}

describe('cloud controller: which Services are managed (serviceManagement)', () => {
  const cases: Array<{name: string; svc: LbService; scope: ServiceScope; managed: boolean; problems?: string[]}> = [
    {name: 'LoadBalancer, scope all, no annotation', svc: service(), scope: 'all', managed: true},
    {name: 'LoadBalancer, scope all, ignore', svc: service({annotation: 'ignore'}), scope: 'all', managed: false},
    {name: 'LoadBalancer, scope all, managed', svc: service({annotation: 'managed'}), scope: 'all', managed: true},
    {name: 'LoadBalancer, scope opt-in, no annotation', svc: service(), scope: 'opt-in', managed: false},
    {name: 'LoadBalancer, scope opt-in, managed', svc: service({annotation: 'managed'}), scope: 'opt-in', managed: true},
    {name: 'LoadBalancer, scope opt-in, ignore', svc: service({annotation: 'ignore'}), scope: 'opt-in', managed: false},
    {name: 'ClusterIP is never managed, even with managed', svc: service({type: 'ClusterIP', annotation: 'managed'}), scope: 'all', managed: false},
    {name: 'NodePort is never managed', svc: service({type: 'NodePort'}), scope: 'all', managed: false},
    {name: 'unknown annotation value, scope all → managed, with a problem', svc: service({annotation: 'yes'}), scope: 'all', managed: true, problems: ['InvalidLoadBalancerAnnotation']},
    {name: 'unknown annotation value, scope opt-in → not managed, with a problem', svc: service({annotation: 'Managed'}), scope: 'opt-in', managed: false, problems: ['InvalidLoadBalancerAnnotation']},
    {name: 'empty annotation value → a problem', svc: service({annotation: ''}), scope: 'all', managed: true, problems: ['InvalidLoadBalancerAnnotation']},
    {name: 'another loadBalancerClass → not ours', svc: service({lbClass: 'metallb.io/metallb'}), scope: 'all', managed: false},
    {name: 'managed + another loadBalancerClass → conflict, not managed', svc: service({annotation: 'managed', lbClass: 'metallb.io/metallb'}), scope: 'opt-in', managed: false, problems: ['ConflictingLoadBalancerSettings']},
    {name: 'ignore + another loadBalancerClass → no conflict', svc: service({annotation: 'ignore', lbClass: 'metallb.io/metallb'}), scope: 'all', managed: false},
  ]
  for (const testCase of cases) {
    it(`${testCase.name} (scope ${testCase.scope})`, () => {
      const result = serviceManagement(testCase.svc, testCase.scope)
      assert.equal(result.managed, testCase.managed)
      assert.deepEqual(result.problems.map((p) => p.reason), testCase.problems ?? [])
      for (const problem of result.problems) assert.match(problem.message, /shop\/web/)
    })
  }
  it('the invalid-annotation message names the value and the accepted ones', () => {
    const [problem] = serviceManagement(service({annotation: 'yes'}), 'all').problems
    assert.match(problem!.message, /polycrate\.io\/loadbalancer="yes" is neither "managed" nor "ignore"/)
  })
})

describe('cloud controller: the load balancer instance of a Service (desiredLoadBalancer)', () => {
  const nodes = [node('node-2'), node('node-1'), node('node-3', {ready: false})]

  it('each TCP port → port with target_port = nodePort; backends = ready nodes by name; name from the UID', () => {
    const {desired, problems} = desiredLoadBalancer(service(), nodes, CLUSTER)
    assert.deepEqual(problems, [])
    assert.deepEqual(desired, {
      name: `a${UID.replace(/-/g, '')}`.slice(0, 32),
      display_name: 'shop/web',
      ports: [{port: 80, name: 'http', protocol: 'tcp', target_port: 30080}, {port: 443, name: 'https', protocol: 'tcp', target_port: 30443}],
      config: JSON.stringify({frontends: [
        {port: 80, protocol: 'tcp', backends: ['10.0.0.1:30080', '10.0.0.2:30080']},
        {port: 443, protocol: 'tcp', backends: ['10.0.0.1:30443', '10.0.0.2:30443']},
      ]}),
      consumer_meta: {kind: 'Service', namespace: 'shop', name: 'web', uid: UID, k8s_cluster: CLUSTER},
    })
  })

  it('the same inputs in another order give the same instance (no spurious updates)', () => {
    const a = desiredLoadBalancer(service(), nodes, CLUSTER)
    const b = desiredLoadBalancer(service(), [...nodes].reverse(), CLUSTER)
    assert.deepEqual(a, b)
  })

  it('a node added, a node leaving Ready, a port changed → a different config', () => {
    const base = desiredLoadBalancer(service(), nodes, CLUSTER).desired!
    const added = desiredLoadBalancer(service(), [...nodes, node('node-4')], CLUSTER).desired!
    assert.notEqual(added.config, base.config)
    assert.match(added.config, /10\.0\.0\.4:30080/)
    const notReady = desiredLoadBalancer(service(), [node('node-1'), node('node-2', {ready: false})], CLUSTER).desired!
    assert.doesNotMatch(notReady.config, /10\.0\.0\.2/)
    const changed = desiredLoadBalancer(service({ports: [{name: 'http', protocol: 'TCP', port: 8080, nodePort: 30080}]}), nodes, CLUSTER).desired!
    assert.deepEqual(changed.ports, [{port: 8080, name: 'http', protocol: 'tcp', target_port: 30080}])
  })

  it('ExternalIP before InternalIP, IPv4 before IPv6; IPv6 backends are bracketed; excluded nodes left out', () => {
    assert.equal(nodeAddress(node('n1', {addresses: [{type: 'InternalIP', address: '10.0.0.9'}, {type: 'ExternalIP', address: '2001:db8::1'}, {type: 'ExternalIP', address: '198.51.100.7'}]})), '198.51.100.7')
    assert.equal(nodeAddress(node('n1', {addresses: [{type: 'Hostname', address: 'n1'}, {type: 'InternalIP', address: 'fd00::5'}]})), 'fd00::5')
    const v6 = desiredLoadBalancer(service({ports: [{port: 80, nodePort: 30080}]}), [node('n1', {addresses: [{type: 'InternalIP', address: 'fd00::5'}]})], CLUSTER).desired!
    assert.match(v6.config, /"\[fd00::5\]:30080"/)
    const excluded = desiredLoadBalancer(service(), [node('node-1'), node('node-2', {labels: {'node.kubernetes.io/exclude-from-external-load-balancers': ''}})], CLUSTER).desired!
    assert.doesNotMatch(excluded.config, /10\.0\.0\.2/)
  })

  // Malformed inputs: each gives a problem (→ a Warning Event) that names what to fix.
  const malformed: Array<{name: string; svc: LbService; nodes?: LbNode[]; reasons: string[]; ensured: boolean; mentions?: RegExp}> = [
    {name: 'no ports', svc: service({ports: []}), reasons: ['NoUsablePorts'], ensured: false, mentions: /has no ports/},
    {name: 'the only port has no nodePort', svc: service({ports: [{name: 'http', port: 80}]}), reasons: ['NodePortMissing', 'NoUsablePorts'], ensured: false, mentions: /no nodePort/},
    {name: 'one of two ports has no nodePort', svc: service({ports: [{name: 'http', port: 80, nodePort: 30080}, {name: 'metrics', port: 9090}]}), reasons: ['NodePortMissing'], ensured: true, mentions: /"metrics"/},
    {name: 'UDP port', svc: service({ports: [{name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053}, {name: 'http', port: 80, nodePort: 30080}]}), reasons: ['UnsupportedProtocol'], ensured: true, mentions: /UDP/},
    {name: 'SCTP only', svc: service({ports: [{protocol: 'SCTP', port: 3868, nodePort: 30868}]}), reasons: ['UnsupportedProtocol', 'NoUsablePorts'], ensured: false},
    {name: 'port number missing', svc: service({ports: [{name: 'broken', nodePort: 30001}, {port: 80, nodePort: 30080}]}), reasons: ['InvalidPort'], ensured: true},
    {name: 'the same port twice', svc: service({ports: [{port: 80, nodePort: 30080}, {name: 'again', port: 80, nodePort: 30081}]}), reasons: ['DuplicatePort'], ensured: true},
    {name: 'loadBalancerIP requested', svc: service({loadBalancerIP: '198.51.100.1'}), reasons: ['LoadBalancerIPUnsupported'], ensured: true, mentions: /198\.51\.100\.1/},
    {name: 'source ranges', svc: service({sourceRanges: ['10.0.0.0/8']}), reasons: ['SourceRangesUnsupported'], ensured: true},
    {name: 'no ready node', svc: service(), nodes: [node('node-1', {ready: false})], reasons: ['UnAvailableLoadBalancer'], ensured: true, mentions: /no available nodes/},
    {name: 'a ready node without an address', svc: service(), nodes: [node('node-1'), node('node-9', {addresses: [{type: 'Hostname', address: 'node-9'}]})], reasons: ['NodeWithoutAddress'], ensured: true, mentions: /node-9/},
    {name: 'the only node has no address', svc: service(), nodes: [node('node-9', {addresses: []})], reasons: ['NodeWithoutAddress', 'UnAvailableLoadBalancer'], ensured: true},
  ]
  for (const testCase of malformed) {
    it(`malformed: ${testCase.name} → ${testCase.reasons.join(', ')}`, () => {
      const {desired, problems} = desiredLoadBalancer(testCase.svc, testCase.nodes ?? nodes, CLUSTER)
      assert.deepEqual(problems.map((p) => p.reason), testCase.reasons)
      assert.equal(desired !== undefined, testCase.ensured)
      if (testCase.mentions) assert.ok(problems.some((p) => testCase.mentions!.test(p.message)), JSON.stringify(problems))
    })
  }

  it('the upstream load balancer name: "a" + UID without dashes, 32 characters', () => {
    assert.equal(loadBalancerName(UID), 'a0b7a6c3e1f2d4e5a8b9c0d1e2f3a4b5')
    assert.equal(loadBalancerName(UID).length, 32)
  })

  it('loadBalancerUpToDate compares ports and config only; API defaults (null name, missing protocol) are tolerated', () => {
    const desired = desiredLoadBalancer(service(), nodes, CLUSTER).desired!
    assert.ok(loadBalancerUpToDate({ports: desired.ports, config: desired.config}, desired))
    assert.ok(loadBalancerUpToDate({ports: desired.ports.map((p) => ({...p, protocol: null})), config: desired.config}, desired))
    assert.ok(!loadBalancerUpToDate({ports: [], config: desired.config}, desired))
    assert.ok(!loadBalancerUpToDate({ports: desired.ports, config: '{}'}, desired))
    assert.ok(!loadBalancerUpToDate({ports: [...desired.ports].reverse(), config: desired.config}, desired))
    const unnamed = desiredLoadBalancer(service({ports: [{port: 80, nodePort: 30080}]}), nodes, CLUSTER).desired!
    assert.ok(loadBalancerUpToDate({ports: [{port: 80, name: null, protocol: 'tcp', target_port: 30080}], config: unnamed.config}, unnamed))
  })

  it('ownsInstance: by the upstream name, else by consumer_meta.uid; never for another Service or without a UID', () => {
    assert.ok(ownsInstance({name: loadBalancerName(UID)}, UID))
    assert.ok(ownsInstance({name: 'renamed-by-the-api', consumer_meta: {kind: 'Service', uid: UID}}, UID))
    assert.ok(!ownsInstance({name: 'other', consumer_meta: {uid: 'ffffffff-0000-4000-8000-000000000000'}}, UID))
    assert.ok(!ownsInstance({name: 'other', consumer_meta: 'not an object'}, UID))
    assert.ok(!ownsInstance({name: 'other', consumer_meta: null}, UID))
    assert.ok(!ownsInstance({name: 'a', consumer_meta: {uid: ''}}, ''))
  })

  it('ingressUpToDate', () => {
    assert.ok(ingressUpToDate(service(), undefined))
    assert.ok(!ingressUpToDate(service(), '203.0.113.2'))
    assert.ok(ingressUpToDate(service({ingress: [{ip: '203.0.113.2'}]}), '203.0.113.2'))
    assert.ok(!ingressUpToDate(service({ingress: [{ip: '203.0.113.2'}]}), '203.0.113.3'))
    assert.ok(!ingressUpToDate(service({ingress: [{ip: '203.0.113.2'}]}), undefined))
  })
})
