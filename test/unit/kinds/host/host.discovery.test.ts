import assert from 'node:assert/strict'
import type {V1Node} from '@kubernetes/client-node'
import {hostSpec, type HostSpec} from '../../../../src/crds/host.js'
import type {DiscoveryProblem} from '../../../../src/operator/discovery/types.js'
import {apiSlug, isApiSlug} from '../../../../src/lib/api-names.js'
import {
  hostForNode,
  parseOsImage,
  type HostDiscoveryResult,
  type NodeLike,
} from '../../../../src/operator/kinds/host/host.mapping.js'
import {hostPayload} from '../../../../src/operator/kinds/host/host.payload.js'
import {sha8, checkedSpec, checkedProblems, checkedDnsLabel} from '../../../support/helpers.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

type NodeStatus = NonNullable<NodeLike['status']>
interface NodeOptions {
  name?: string | null
  uid?: string | null
  labels?: Record<string, string>
  providerID?: string | null
  addresses?: NodeStatus['addresses'] | null
  capacity?: Record<string, string> | null
  nodeInfo?: NodeStatus['nodeInfo'] | null
  conditions?: NodeStatus['conditions'] | null
}

/** A typical worker; every option replaces one part, null removes it. */
function node(options: NodeOptions = {}): NodeLike {
  const pick = <T>(key: keyof NodeOptions, fallback: T): T | undefined => {
    if (!(key in options)) return fallback
    const value = options[key]
    return value === null ? undefined : value as T
  }
  return {
    metadata: {
      name: pick('name', 'worker-1'),
      uid: pick('uid', 'uid-worker-1'),
      labels: pick('labels', {'kubernetes.io/hostname': 'worker-1', 'kubernetes.io/os': 'linux'}),
    },
    spec: {providerID: pick('providerID', 'hcloud://4711')},
    status: {
      addresses: pick('addresses', [{type: 'InternalIP', address: '10.0.0.2'}, {type: 'Hostname', address: 'worker-1'}]),
      capacity: pick('capacity', {cpu: '4', memory: '16393232Ki', pods: '110', 'ephemeral-storage': '76887544Ki'}),
      nodeInfo: pick('nodeInfo', {architecture: 'amd64', osImage: 'Ubuntu 22.04.4 LTS', operatingSystem: 'linux', kernelVersion: '5.15.0-91-generic'}),
      conditions: pick('conditions', [{type: 'MemoryPressure', status: 'False'}, {type: 'Ready', status: 'True'}]),
    },
  }
}

/** The spec of the typical worker, with changes; `remove` drops fields. */
function spec(overrides: Partial<HostSpec> = {}, remove: Array<keyof HostSpec> = []): HostSpec {
  const full: HostSpec = {
    name: 'worker-1',
    hostname: 'worker-1',
    role: 'k8s-worker',
    default_ipv4: '10.0.0.2',
    resource_cpu_cores: 4,
    resource_cpu_architecture: 'amd64',
    resource_memory: 16009,
    provider_id: 'hcloud://4711',
    provider_image_os_flavor: 'ubuntu',
    provider_image_os_version: '22.04.4',
    provider_image_os_architecture: 'amd64',
    source: {node_name: 'worker-1', node_uid: 'uid-worker-1'},
    ...overrides,
  }
  for (const key of remove) delete full[key]
  return full
}


const addressProblem = (index: number, type: string, address: string, name = 'worker-1'): DiscoveryProblem => ({
  reason: 'InvalidNodeAddress',
  message: `Node "${name}": status.addresses[${index}] (${type}) "${address}" is not an IPv4 or IPv6 address; `
    + 'it is skipped when choosing default_ipv4 / default_ipv6.',
})
const cpuProblem = (value: string): DiscoveryProblem => ({
  reason: 'InvalidNodeCapacity',
  message: `Node "worker-1": status.capacity.cpu "${value}" is not a CPU quantity such as "4" or "3500m" (a non-negative Kubernetes quantity); resource_cpu_cores is left out.`,
})
const memoryProblem = (value: string): DiscoveryProblem => ({
  reason: 'InvalidNodeCapacity',
  message: `Node "worker-1": status.capacity.memory "${value}" is not a memory quantity such as "16Gi", "16393232Ki" or "17179869184" (a non-negative Kubernetes quantity); resource_memory is left out.`,
})

/** The spec passes the CRD schema unchanged and has no undefined keys (deep-equal to its JSON round trip). */
function checked(result: HostDiscoveryResult): HostDiscoveryResult {
  if (result.host) {
    checkedSpec(hostSpec, result.host.spec)
    assert.ok(isApiSlug(checkedDnsLabel(result.host.spec.name)), `slug ${result.host.spec.name}`)
  }
  checkedProblems(result.problems)
  return result
}

const longName = 'ip-10-0-0-1.eu-central-1.compute.internal.with-a-much-too-long-suffix-for-an-api-slug'
const longSlug = `ip-10-0-0-1-eu-central-1-compute-internal-with-a-much-${sha8(longName)}`

// ---------------------------------------------------------------------------------------------------------------

describe('host discovery (pure)', () => {
  describe('hostForNode', () => {
    const ready = {node_ready: true}
    const cases: Array<{name: string; node: NodeLike; expected: HostDiscoveryResult}> = [
      {
        name: 'a typical worker: InternalIP, cpu, memory in Ki, Ubuntu',
        node: node(),
        expected: {host: {name: 'worker-1', spec: spec(), status: ready}, problems: []},
      },
      {
        name: 'no addresses at all: both IP fields absent, no problem',
        node: node({addresses: null}),
        expected: {host: {name: 'worker-1', spec: spec({}, ['default_ipv4']), status: ready}, problems: []},
      },
      {
        name: 'an empty address list and only a Hostname address: no IP, no problem',
        node: node({addresses: [{type: 'Hostname', address: 'worker-1'}, {type: 'InternalDNS', address: 'worker-1.internal'}]}),
        expected: {host: {name: 'worker-1', spec: spec({}, ['default_ipv4']), status: ready}, problems: []},
      },
      {
        name: 'IPv6-only node: ExternalIP wins over InternalIP, no IPv4',
        node: node({addresses: [{type: 'InternalIP', address: 'fd00::2'}, {type: 'ExternalIP', address: '2001:db8:1::5'}]}),
        expected: {host: {name: 'worker-1', spec: spec({default_ipv6: '2001:db8:1::5'}, ['default_ipv4']), status: ready}, problems: []},
      },
      {
        name: 'dual stack: the first ExternalIP of each family, InternalIPs only as fallback',
        node: node({addresses: [
          {type: 'InternalIP', address: '10.0.0.2'},
          {type: 'InternalIP', address: 'fd00::2'},
          {type: 'ExternalIP', address: '203.0.113.7'},
          {type: 'ExternalIP', address: '203.0.113.8'},
          {type: 'ExternalIP', address: '2001:db8::7'},
        ]}),
        expected: {host: {name: 'worker-1', spec: spec({default_ipv4: '203.0.113.7', default_ipv6: '2001:db8::7'}), status: ready}, problems: []},
      },
      {
        name: 'ExternalIP IPv6 only, InternalIP IPv4 only: each family falls back on its own',
        node: node({addresses: [{type: 'ExternalIP', address: '2001:db8::7'}, {type: 'InternalIP', address: '10.0.0.9'}]}),
        expected: {host: {name: 'worker-1', spec: spec({default_ipv4: '10.0.0.9', default_ipv6: '2001:db8::7'}), status: ready}, problems: []},
      },
      {
        name: 'an ExternalIP that is not an IP and an empty InternalIP are skipped with problems',
        node: node({addresses: [
          {type: 'ExternalIP', address: 'not-an-ip'},
          {type: 'Hostname', address: 'not-an-ip-either'},
          {type: 'InternalIP', address: ''},
          {type: 'InternalIP', address: '10.0.0.2'},
          {type: 'ExternalIP', address: '300.1.2.3'},
        ]}),
        expected: {
          host: {name: 'worker-1', spec: spec(), status: ready},
          problems: [addressProblem(0, 'ExternalIP', 'not-an-ip'), addressProblem(2, 'InternalIP', ''), addressProblem(4, 'ExternalIP', '300.1.2.3')],
        },
      },
      {
        name: 'memory in Mi',
        node: node({capacity: {cpu: '2', memory: '2048Mi'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 2, resource_memory: 2048}), status: ready}, problems: []},
      },
      {
        name: 'memory in Gi',
        node: node({capacity: {cpu: '8', memory: '16Gi'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 8, resource_memory: 16384}), status: ready}, problems: []},
      },
      {
        name: 'memory in plain bytes, rounded down',
        node: node({capacity: {cpu: '8', memory: '17179869183'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 8, resource_memory: 16383}), status: ready}, problems: []},
      },
      {
        name: 'memory in decimal G (binary MB, rounded down)',
        node: node({capacity: {cpu: '8', memory: '16G'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 8, resource_memory: 15258}), status: ready}, problems: []},
      },
      {
        name: 'cpu in millicores: 3500m → 3',
        node: node({capacity: {cpu: '3500m', memory: '4Gi'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 3, resource_memory: 4096}), status: ready}, problems: []},
      },
      {
        name: 'cpu below one core: 500m → 1',
        node: node({capacity: {cpu: '500m', memory: '512Mi'}}),
        expected: {host: {name: 'worker-1', spec: spec({resource_cpu_cores: 1, resource_memory: 512}), status: ready}, problems: []},
      },
      {
        name: 'unparsable capacity: both fields absent, one problem each naming field and value',
        node: node({capacity: {cpu: 'four', memory: '16 Gi'}}),
        expected: {
          host: {name: 'worker-1', spec: spec({}, ['resource_cpu_cores', 'resource_memory']), status: ready},
          problems: [cpuProblem('four'), memoryProblem('16 Gi')],
        },
      },
      {
        name: 'negative capacity is a problem too',
        node: node({capacity: {cpu: '-2', memory: '-1Gi'}}),
        expected: {
          host: {name: 'worker-1', spec: spec({}, ['resource_cpu_cores', 'resource_memory']), status: ready},
          problems: [cpuProblem('-2'), memoryProblem('-1Gi')],
        },
      },
      {
        name: 'no capacity at all: fields absent, no problem',
        node: node({capacity: null}),
        expected: {host: {name: 'worker-1', spec: spec({}, ['resource_cpu_cores', 'resource_memory']), status: ready}, problems: []},
      },
      {
        name: 'control-plane label (empty value) → k8s-controlplane',
        node: node({labels: {'node-role.kubernetes.io/control-plane': ''}}),
        expected: {host: {name: 'worker-1', spec: spec({role: 'k8s-controlplane'}), status: ready}, problems: []},
      },
      {
        name: 'legacy master label → k8s-controlplane, whatever its value',
        node: node({labels: {'node-role.kubernetes.io/master': 'false'}}),
        expected: {host: {name: 'worker-1', spec: spec({role: 'k8s-controlplane'}), status: ready}, problems: []},
      },
      {
        name: 'worker role label → k8s-worker',
        node: node({labels: {'node-role.kubernetes.io/worker': 'true'}}),
        expected: {host: {name: 'worker-1', spec: spec(), status: ready}, problems: []},
      },
      {
        name: 'a look-alike label is not a control plane (node.kubernetes.io/control-plane)',
        node: node({labels: {'node.kubernetes.io/control-plane': ''}}),
        expected: {host: {name: 'worker-1', spec: spec(), status: ready}, problems: []},
      },
      {
        name: 'very long node name (> 63): the slug is cut and gets a hash of the full name',
        node: node({name: longName}),
        expected: {
          host: {name: longName, spec: spec({name: longSlug, hostname: longName, source: {node_name: longName, node_uid: 'uid-worker-1'}}), status: ready},
          problems: [],
        },
      },
      {
        name: 'node name with dots and upper case: slug lower-cased with dashes and a hash of the name; hostname and CR name as is',
        node: node({name: 'Node-A.Example.COM'}),
        expected: {
          host: {
            name: 'Node-A.Example.COM',
            spec: spec({name: `node-a-example-com-${sha8('Node-A.Example.COM')}`, hostname: 'Node-A.Example.COM', source: {node_name: 'Node-A.Example.COM', node_uid: 'uid-worker-1'}}),
            status: ready,
          },
          problems: [],
        },
      },
      {
        name: 'no Ready condition → node_ready false',
        node: node({conditions: [{type: 'MemoryPressure', status: 'False'}]}),
        expected: {host: {name: 'worker-1', spec: spec(), status: {node_ready: false}}, problems: []},
      },
      {
        name: 'Ready=Unknown (kubelet stopped posting) → node_ready false',
        node: node({conditions: [{type: 'Ready', status: 'Unknown'}]}),
        expected: {host: {name: 'worker-1', spec: spec(), status: {node_ready: false}}, problems: []},
      },
      {
        name: 'Debian image, arm64, no providerID',
        node: node({providerID: null, nodeInfo: {architecture: 'arm64', osImage: 'Debian GNU/Linux 12 (bookworm)'}}),
        expected: {
          host: {
            name: 'worker-1',
            spec: spec({resource_cpu_architecture: 'arm64', provider_image_os_architecture: 'arm64', provider_image_os_flavor: 'debian', provider_image_os_version: '12'}, ['provider_id']),
            status: ready,
          },
          problems: [],
        },
      },
      {
        name: 'Flatcar image; empty providerID is absent',
        node: node({providerID: '', nodeInfo: {architecture: 'amd64', osImage: 'Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)'}}),
        expected: {
          host: {name: 'worker-1', spec: spec({provider_image_os_flavor: 'flatcar', provider_image_os_version: '3815.2.0'}, ['provider_id']), status: ready},
          problems: [],
        },
      },
      {
        name: 'an osImage without a version: flavor and version absent',
        node: node({nodeInfo: {architecture: 'amd64', osImage: 'Container-Optimized OS from Google'}}),
        expected: {
          host: {name: 'worker-1', spec: spec({}, ['provider_image_os_flavor', 'provider_image_os_version']), status: ready},
          problems: [],
        },
      },
      {
        name: 'no nodeInfo: architecture and OS fields absent',
        node: node({nodeInfo: null}),
        expected: {
          host: {
            name: 'worker-1',
            spec: spec({}, ['resource_cpu_architecture', 'provider_image_os_architecture', 'provider_image_os_flavor', 'provider_image_os_version']),
            status: ready,
          },
          problems: [],
        },
      },
      {
        name: 'a node without uid: source has only node_name',
        node: node({uid: null}),
        expected: {host: {name: 'worker-1', spec: spec({source: {node_name: 'worker-1'}}), status: ready}, problems: []},
      },
      {
        name: 'a node with only a name: the bare minimum, not ready',
        node: {metadata: {name: 'bare'}},
        expected: {
          host: {name: 'bare', spec: {name: 'bare', hostname: 'bare', role: 'k8s-worker', source: {node_name: 'bare'}}, status: {node_ready: false}},
          problems: [],
        },
      },
      {
        name: 'no name: no host, a problem',
        node: node({name: null}),
        expected: {
          problems: [{
            reason: 'MissingName',
            message: 'The node has no metadata.name: there is nothing to name the Host after, so no Host is created for it.',
          }],
        },
      },
      {
        name: 'an empty object: no host, a problem',
        node: {},
        expected: {
          problems: [{
            reason: 'MissingName',
            message: 'The node has no metadata.name: there is nothing to name the Host after, so no Host is created for it.',
          }],
        },
      },
    ]
    for (const {name, node: input, expected} of cases) {
      it(name, () => assert.deepEqual(checked(hostForNode(input)), expected))
    }

    it('is deterministic and does not touch its input', () => {
      const input = node({addresses: [{type: 'ExternalIP', address: 'not-an-ip'}]})
      const before = structuredClone(input)
      assert.deepEqual(hostForNode(input), hostForNode(input))
      assert.deepEqual(input, before)
    })

    it('accepts a typed V1Node of @kubernetes/client-node', () => {
      const typed: V1Node = {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {name: 'cp-1', uid: 'u1', labels: {'node-role.kubernetes.io/control-plane': ''}},
        spec: {providerID: 'aws:///eu-central-1a/i-0abc'},
        status: {
          addresses: [{type: 'ExternalIP', address: '198.51.100.1'}],
          capacity: {cpu: '2', memory: '3977432Ki'},
          conditions: [{type: 'Ready', status: 'True'}],
        },
      }
      assert.deepEqual(checked(hostForNode(typed)), {
        host: {
          name: 'cp-1',
          spec: {
            name: 'cp-1',
            hostname: 'cp-1',
            role: 'k8s-controlplane',
            default_ipv4: '198.51.100.1',
            resource_cpu_cores: 2,
            resource_memory: 3884,
            provider_id: 'aws:///eu-central-1a/i-0abc',
            source: {node_name: 'cp-1', node_uid: 'u1'},
          },
          status: {node_ready: true},
        },
        problems: [],
      })
    })
  })

  describe('apiSlug', () => {
    const cases: Array<[string, string]> = [
      ['worker-1', 'worker-1'],
      ['node-1', 'node-1'],
      ['a1-b2-c3', 'a1-b2-c3'],
      ['Node-A.Example.COM', `node-a-example-com-${sha8('Node-A.Example.COM')}`],
      ['ip-10-0-0-1.ec2.internal', `ip-10-0-0-1-ec2-internal-${sha8('ip-10-0-0-1.ec2.internal')}`],
      ['Worker-1', `worker-1-${sha8('Worker-1')}`],
      ['my__node..1', `my-node-1-${sha8('my__node..1')}`],
      ['--edge--', `edge-${sha8('--edge--')}`],
      ['-edge', `edge-${sha8('-edge')}`],
      ['edge-', `edge-${sha8('edge-')}`],
      ['a---b', `a-b-${sha8('a---b')}`],
      ['ÄÖÜ-node', `node-${sha8('ÄÖÜ-node')}`],
      ['x'.repeat(63), 'x'.repeat(63)],
      ['x'.repeat(64), `${'x'.repeat(54)}-${sha8('x'.repeat(64))}`],
      [longName, longSlug],
      // a cut that ends on a dash does not leave "--" before the hash
      [`${'a'.repeat(53)}.b${'c'.repeat(20)}`, `${'a'.repeat(53)}-${sha8(`${'a'.repeat(53)}.b${'c'.repeat(20)}`)}`],
      ['...', sha8('...')],
      ['', sha8('')],
    ]
    for (const [name, expected] of cases) {
      it(`${JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name)} → ${expected}`, () => {
        const slug = apiSlug(name)
        assert.equal(slug, expected)
        assert.ok(slug.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(slug))
      })
    }

    it('two long names with the same first 63 characters stay distinct', () => {
      assert.notEqual(apiSlug(`${longName}-a`), apiSlug(`${longName}-b`))
    })

    it('names that read the same once slugged get different slugs: X-node.zone1 vs X-node-zone1', () => {
      const dotted = apiSlug('X-node.zone1')
      const dashed = apiSlug('X-node-zone1')
      assert.equal(dotted, `x-node-zone1-${sha8('X-node.zone1')}`)
      assert.equal(dashed, `x-node-zone1-${sha8('X-node-zone1')}`)
      assert.notEqual(dotted, dashed)
      // and neither takes the slug of the lower-case name, which is a slug of its own
      assert.equal(apiSlug('x-node-zone1'), 'x-node-zone1')
      assert.equal(new Set([dotted, dashed, apiSlug('x-node-zone1'), apiSlug('x-node_zone1'), apiSlug('x-node--zone1')]).size, 5)
    })

    it('a name that already is a slug stays as is: node-1', () => {
      assert.equal(apiSlug('node-1'), 'node-1')
    })

    it('a 70-character lower-case name is cut to 63 with the hash of the full name', () => {
      const name = `node-${'abcdefghij'.repeat(6)}-xyzw`
      assert.equal(name.length, 70)
      const slug = apiSlug(name)
      assert.equal(slug, `${name.slice(0, 54)}-${sha8(name)}`)
      assert.equal(slug.length, 63)
    })

    it('ip-10-0-0-1.ec2.internal → ip-10-0-0-1-ec2-internal-<hash8>', () => {
      assert.equal(apiSlug('ip-10-0-0-1.ec2.internal'), `ip-10-0-0-1-ec2-internal-${sha8('ip-10-0-0-1.ec2.internal')}`)
    })

    it('two different nodes whose names slug alike get two Host specs with different API names', () => {
      const a = hostForNode(node({name: 'X-node.zone1'})).host!.spec.name
      const b = hostForNode(node({name: 'X-node-zone1'})).host!.spec.name
      assert.notEqual(a, b)
    })
  })

  describe('parseOsImage', () => {
    const cases: Array<[string | undefined, {flavor: string; version: string} | undefined]> = [
      ['Ubuntu 22.04.4 LTS', {flavor: 'ubuntu', version: '22.04.4'}],
      ['Debian GNU/Linux 12 (bookworm)', {flavor: 'debian', version: '12'}],
      ['Flatcar Container Linux by Kinvolk 3815.2.0', {flavor: 'flatcar', version: '3815.2.0'}],
      ['Talos (v1.7.0)', {flavor: 'talos', version: '1.7.0'}],
      ['Red Hat Enterprise Linux CoreOS 414.92.202402051952-0 (Plow)', {flavor: 'red', version: '414.92.202402051952'}],
      ['Bottlerocket OS 1.19.2 (aws-k8s-1.29)', {flavor: 'bottlerocket', version: '1.19.2'}],
      ['Amazon Linux 2', {flavor: 'amazon', version: '2'}],
      ['Container-Optimized OS from Google', undefined],
      ['Ubuntu', undefined],
      ['22.04 Ubuntu', undefined],
      ['', undefined],
      ['   ', undefined],
      [undefined, undefined],
    ]
    for (const [osImage, expected] of cases) {
      it(`${JSON.stringify(osImage)}`, () => assert.deepEqual(parseOsImage(osImage), expected))
    }
  })

  describe('hostPayload', () => {
    it('a discovered spec: every API field, no source, cluster and component set', () => {
      const discovered = hostForNode(node({addresses: [{type: 'ExternalIP', address: '203.0.113.7'}, {type: 'ExternalIP', address: '2001:db8::7'}]})).host!.spec
      assert.deepEqual(hostPayload(discovered, 'cluster-uuid'), {
        name: 'worker-1',
        hostname: 'worker-1',
        role: 'k8s-worker',
        default_ipv4: '203.0.113.7',
        default_ipv6: '2001:db8::7',
        resource_cpu_cores: 4,
        resource_cpu_architecture: 'amd64',
        resource_memory: 16009,
        provider_id: 'hcloud://4711',
        provider_image_os_flavor: 'ubuntu',
        provider_image_os_version: '22.04.4',
        provider_image_os_architecture: 'amd64',
        display_name: null,
        k8s_cluster: 'cluster-uuid',
        created_by_component: 'operator',
      })
    })

    it('a node that lost its IPv6 address and providerID: both sent as null, so the PATCH clears them', () => {
      const before = hostForNode(node({addresses: [{type: 'InternalIP', address: '10.0.0.2'}, {type: 'InternalIP', address: 'fd00::2'}]})).host!.spec
      assert.equal(hostPayload(before, 'c1').default_ipv6, 'fd00::2')
      const after = hostPayload(hostForNode(node({providerID: null})).host!.spec, 'c1')
      assert.equal(after.default_ipv4, '10.0.0.2')
      assert.ok('default_ipv6' in after && after.default_ipv6 === null)
      assert.ok('provider_id' in after && after.provider_id === null)
      assert.deepEqual(JSON.parse(JSON.stringify(after)), after, 'the nulls survive JSON')
    })

    it('a node without any IP: default_ipv4 and default_ipv6 both null', () => {
      const payload = hostPayload(hostForNode(node({addresses: null})).host!.spec, 'c1')
      assert.equal(payload.default_ipv4, null)
      assert.equal(payload.default_ipv6, null)
    })

    const cases: Array<{name: string; spec: HostSpec; expected: object}> = [
      {
        name: 'the minimum: name and hostname only; the nullable fields sent as null, the others left out',
        spec: {name: 'bare', hostname: 'bare', source: {node_name: 'bare'}},
        expected: {name: 'bare', hostname: 'bare', default_ipv4: null, default_ipv6: null, provider_id: null, display_name: null, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'display_name, kind and the hand-set fields go along when set',
        spec: {
          name: 'db-1', hostname: 'db-1.internal', display_name: 'Database 1', kind: 'bare_metal', role: 'generic',
          resource_cpu_type: 'EPYC', resource_disk: 960, provider_type: 'AX41', provider_location: 'fsn1', description: 'racked',
        },
        expected: {
          name: 'db-1', hostname: 'db-1.internal', display_name: 'Database 1', kind: 'bare_metal', role: 'generic',
          resource_cpu_type: 'EPYC', resource_disk: 960, provider_type: 'AX41', provider_location: 'fsn1', description: 'racked',
          default_ipv4: null, default_ipv6: null, provider_id: null,
          k8s_cluster: 'c1', created_by_component: 'operator',
        },
      },
      {
        name: 'a valid API slug with upper case and underscore is kept as is',
        spec: {name: 'My_Host-1', hostname: 'my-host-1'},
        expected: {name: 'My_Host-1', hostname: 'my-host-1', default_ipv4: null, default_ipv6: null, provider_id: null, display_name: null, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'a hand-written name that is no API slug is slugged (with the hash of the name)',
        spec: {name: 'db.example.com', hostname: 'db.example.com'},
        expected: {name: `db-example-com-${sha8('db.example.com')}`, hostname: 'db.example.com', default_ipv4: null, default_ipv6: null, provider_id: null, display_name: null, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
      {
        name: 'an empty role is sent (the API accepts "")',
        spec: {name: 'h', hostname: 'h', role: ''},
        expected: {name: 'h', hostname: 'h', role: '', default_ipv4: null, default_ipv6: null, provider_id: null, display_name: null, k8s_cluster: 'c1', created_by_component: 'operator'},
      },
    ]
    for (const {name, spec: input, expected} of cases) {
      it(name, () => {
        const payload = hostPayload(input, 'c1')
        assert.deepEqual(payload, expected)
        assert.ok(Object.values(payload).every((v) => v !== undefined), 'no undefined keys')
      })
    }
  })
})
