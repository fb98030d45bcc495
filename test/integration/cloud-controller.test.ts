import assert from 'node:assert/strict'
import {randomBytes, randomInt} from 'node:crypto'
import type {HostStatus} from '../../src/crds/host.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import type {ApiSimulator} from '../support/api-simulator/index.js'
import {freshNamespace} from '../support/cluster.js'
import {configRef, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized'
const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup'
const ANNOTATION = 'polycrate.io/loadbalancer'

interface Taint {key: string; value?: string; effect: string}
type NodeObject = KubeObject & {spec?: {providerID?: string; taints?: Taint[]}; metadata: {name: string; labels?: Record<string, string>}}
type ServiceObject = KubeObject & {
  metadata: {name: string; namespace: string; uid: string; finalizers?: string[]; annotations?: Record<string, string>}
  spec: {type: string; ports: Array<{name?: string; port: number; nodePort?: number; protocol?: string}>}
  status?: {loadBalancer?: {ingress?: Array<{ip?: string; ipMode?: string}>}}
}
type Instance = Record<string, unknown> & {id: string; name: string; ip_address?: string | null; config?: string; ports?: Array<{port: number; target_port: number}>}
interface EventObject {type: string; reason: string; message: string; involvedObject: {name?: string}}

const nodes = {group: '', version: 'v1', plural: 'nodes'}
const servicesIn = (namespace: string) => ({group: '', version: 'v1', plural: 'services', namespace})
const hostsIn = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'hosts', namespace})

describe('Cloud controller: node initialization and LoadBalancer Services (in-process operator, real apiserver, simulator)', function () {
  this.timeout(300_000)
  const run = randomBytes(3).toString('hex')
  const selector = `polycrate-test/cloud=${run}`
  /** Our nodes' addresses: the shared control plane may hold other files' nodes. */
  const ipPrefix = `10.${randomInt(100, 250)}.${randomInt(0, 250)}.`
  let appNamespace: string
  const createdNodes = new Set<string>()
  const harness = inProcessOperator({
    spec: {
      node_discovery: {enabled: true, label_selector: selector},
      cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all'}},
    },
    setup: async ({client, sim}) => {
      sim.cloud.loadBalancerAddressDelayMs = 1_500
      appNamespace = await freshNamespace(client, 'lb')
    },
    cleanup: async ({client, sim}) => {
      sim.faults.clear()
      for (const name of createdNodes) await client.delete({...nodes, name}).catch(() => {})
      // Services still holding our finalizer (a failed test) must not stay behind once the operator is gone.
      const left = (await client.request<{items: ServiceObject[]}>({path: `/api/v1/namespaces/${appNamespace}/services`}).catch(() => ({items: []}))).items
      for (const service of left) {
        await client.mergePatch({...servicesIn(appNamespace), name: service.metadata.name}, {metadata: {finalizers: null}}).catch(() => {})
        await client.delete({...servicesIn(appNamespace), name: service.metadata.name}).catch(() => {})
      }
    },
  })
  let client: KubeClient
  let sim: ApiSimulator
  let namespace: string
  let workspaceId: string
  before(() => {
    ;({client, sim, namespace, workspaceId} = harness)
  })

  // -- helpers ---------------------------------------------------------------------------------------------------

  const createNode = async (suffix: string, options: {ip: number; taints?: Taint[]; providerID?: string; ready?: boolean}) => {
    const name = `cloud-${run}-${suffix}`
    createdNodes.add(name)
    await client.create(nodes, {
      apiVersion: 'v1', kind: 'Node',
      metadata: {name, labels: {'polycrate-test/cloud': run}},
      spec: {...(options.providerID ? {providerID: options.providerID} : {}), taints: options.taints ?? [{key: TAINT, value: 'true', effect: 'NoSchedule'}]},
      status: {
        addresses: [{type: 'InternalIP', address: `${ipPrefix}${options.ip}`}, {type: 'Hostname', address: name}],
        capacity: {cpu: '2', memory: '4Gi'},
        conditions: [readyCondition(options.ready ?? true)],
      },
    })
    return name
  }
  const readyCondition = (ready: boolean) => ({
    type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'KubeletReady' : 'KubeletNotReady', message: 'set by the test',
    lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString(),
  })
  const getNode = (name: string) => client.get<NodeObject>({...nodes, name})
  const getService = (name: string) => client.getOrUndefined<ServiceObject>({...servicesIn(appNamespace), name})
  const createService = async (name: string, options: {annotation?: string; ports?: Array<Record<string, unknown>>; spec?: Record<string, unknown>} = {}) =>
    client.create<ServiceObject>(servicesIn(appNamespace), {
      apiVersion: 'v1', kind: 'Service',
      metadata: {name, namespace: appNamespace, ...(options.annotation !== undefined ? {annotations: {[ANNOTATION]: options.annotation}} : {})},
      spec: {type: 'LoadBalancer', selector: {app: name}, ports: options.ports ?? [{name: 'http', port: 80, targetPort: 8080}], ...options.spec},
    })
  const lbName = (uid: string) => `a${uid.replace(/-/g, '')}`.slice(0, 32)
  const instancesFor = (uid: string) => (sim.list('loadbalancers/instances') as Instance[])
    .filter((i) => i.name === lbName(uid) || (i.consumer_meta as {uid?: string} | undefined)?.uid === uid)
  const backends = (instance: Instance, port: number) => {
    const frontend = (JSON.parse(instance.config ?? '{}') as {frontends?: Array<{port: number; backends: string[]}>}).frontends?.find((f) => f.port === port)
    return (frontend?.backends ?? []).filter((b) => b.startsWith(ipPrefix)).sort()
  }
  const eventsAbout = async (eventNamespace: string, name: string) =>
    (await client.request<{items: EventObject[]}>({path: `/api/v1/namespaces/${eventNamespace}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items
  const waitForEvent = (eventNamespace: string, name: string, reason: string, timeoutMs = 60_000) =>
    eventually(async () => (await eventsAbout(eventNamespace, name)).find((e) => e.reason === reason), timeoutMs, `Event ${reason} on ${name}`)
  const clusterId = () => String(sim.list('kubernetes/clusters')[0]!.id)
  /** Ensured: finalizer on, one API instance, its IP in the Service's status. */
  const ensured = (name: string, timeoutMs = 60_000) => eventually(async () => {
    const service = await getService(name)
    if (!service?.metadata.finalizers?.includes(FINALIZER)) return undefined
    const found = instancesFor(service.metadata.uid)
    const ip = service.status?.loadBalancer?.ingress?.[0]?.ip
    return found.length === 1 && ip && found[0]!.ip_address === ip ? {service, instance: found[0]!} : undefined
  }, timeoutMs, `load balancer of Service ${name} ensured with its IP`)
  const gone = (name: string, uid: string, timeoutMs = 60_000) => eventually(async () =>
    (await getService(name)) === undefined && instancesFor(uid).length === 0, timeoutMs, `Service ${name} and its instance gone`)
  const assertNoDuplicates = () => {
    const byName = new Map<string, number>()
    for (const instance of sim.list('loadbalancers/instances') as Instance[]) byName.set(instance.name, (byName.get(instance.name) ?? 0) + 1)
    assert.deepEqual([...byName].filter(([, count]) => count > 1), [], 'no two instances for one Service')
  }

  const patchConfig = (spec: Record<string, unknown>) => client.mergePatch(configRef(namespace), {spec})
  const controllerRunning = (name: string, want: boolean) => eventually(async () => {
    const config = await client.get<KubeObject & {status?: {controllers?: Array<{name: string; running?: boolean}>}}>(configRef(namespace))
    return config.status?.controllers?.find((c) => c.name === name)?.running === want
  }, 30_000, `controller ${name} running=${want}`)

  // -- nodes -----------------------------------------------------------------------------------------------------

  it('without a PoP the node keeps the taint and an Event says why; once the agent has a PoP it is initialized per the table', async () => {
    const other: Taint = {key: 'dedicated', value: 'db', effect: 'NoExecute'}
    const name = await createNode('a', {ip: 1, taints: [other, {key: TAINT, value: 'true', effect: 'NoSchedule'}]})
    await eventually(async () => {
      const host = await client.getOrUndefined<KubeObject & {status?: HostStatus}>({...hostsIn(namespace), name})
      return host?.status?.phase === 'Synced' && host.status.api_id
    }, 30_000, 'Host synced')

    const event = await waitForEvent('default', name, 'NoPoP')
    assert.equal(event.type, 'Warning')
    assert.match(event.message, /no PoP/)
    assert.match(event.message, /keeps the taint node\.cloudprovider\.kubernetes\.io\/uninitialized/)
    let node = await getNode(name)
    assert.ok(node.spec?.taints?.some((t) => t.key === TAINT), 'taint stays')
    assert.equal(node.spec?.providerID, undefined)
    assert.equal(node.metadata.labels?.['topology.kubernetes.io/region'], undefined)

    sim.cloud.popName = 'fsn1'
    node = await eventually(async () => {
      const current = await getNode(name)
      return current.spec?.taints?.some((t) => t.key === TAINT) ? undefined : current
    }, 60_000, 'taint removed once the PoP is known')
    assert.equal(node.spec?.providerID, `polycrate://${clusterId()}/${name}`)
    assert.equal(node.metadata.labels?.['topology.kubernetes.io/region'], 'fsn1')
    assert.equal(node.metadata.labels?.['failure-domain.beta.kubernetes.io/region'], 'fsn1')
    // The apiserver's admission adds node.kubernetes.io/not-ready to a new node; that one is not ours to judge.
    assert.deepEqual(node.spec?.taints?.filter((t) => t.key !== 'node.kubernetes.io/not-ready'), [other], 'other taints kept')
    await waitForEvent('default', name, 'NodeInitialized')
    const host = await eventually(async () => {
      const current = await client.getOrUndefined<KubeObject & {status?: HostStatus}>({...hostsIn(namespace), name})
      return current?.status?.cloud_initialized ? current : undefined
    }, 30_000, 'Host status cloud_initialized')
    assert.equal(host.status?.pop_name, 'fsn1')
  })

  it('a providerID set by someone else is never overwritten (Event); a node without the taint is left alone; nodes are never deleted', async () => {
    const untainted = await createNode('c', {ip: 3, taints: []})
    const foreign = await createNode('b', {ip: 2, providerID: 'hcloud://4242'})
    const event = await waitForEvent('default', foreign, 'ProviderIDConflict')
    assert.match(event.message, /hcloud:\/\/4242/)
    const node = await eventually(async () => {
      const current = await getNode(foreign)
      return current.spec?.taints?.some((t) => t.key === TAINT) ? undefined : current
    }, 30_000, 'foreign node initialized')
    assert.equal(node.spec?.providerID, 'hcloud://4242')
    assert.equal(node.metadata.labels?.['topology.kubernetes.io/region'], 'fsn1')
    // Host c was synced before b was initialized (b's reconcile came after c's): c is untouched.
    await eventually(async () => {
      const host = await client.getOrUndefined<KubeObject & {status?: HostStatus}>({...hostsIn(namespace), name: untainted})
      return host?.status?.phase === 'Synced'
    }, 30_000, 'Host c synced')
    const c = await getNode(untainted)
    assert.equal(c.spec?.providerID, undefined)
    assert.equal(c.metadata.labels?.['topology.kubernetes.io/region'], undefined)
    for (const name of createdNodes) assert.ok(await getNode(name), `node ${name} still there`)
  })

  // -- load balancers ----------------------------------------------------------------------------------------------

  it('LoadBalancer Service → API instance forwarding each port to NodeIP:NodePort of the ready nodes; IP in status.loadBalancer.ingress; Events like upstream', async () => {
    const created = await createService('web', {ports: [{name: 'http', port: 80, targetPort: 8080}, {name: 'https', port: 443, targetPort: 8443}]})
    const {service, instance} = await ensured('web')
    const nodePorts = Object.fromEntries(service.spec.ports.map((p) => [p.port, p.nodePort!]))
    assert.equal(instance.name, lbName(created.metadata.uid))
    assert.equal(instance.display_name, `${appNamespace}/web`)
    assert.equal(instance.workspace, workspaceId)
    assert.deepEqual(instance.ports?.map((p) => [p.port, p.target_port]), [[80, nodePorts[80]], [443, nodePorts[443]]])
    assert.deepEqual(backends(instance, 80), [1, 2, 3].map((n) => `${ipPrefix}${n}:${nodePorts[80]}`))
    assert.deepEqual(backends(instance, 443), [1, 2, 3].map((n) => `${ipPrefix}${n}:${nodePorts[443]}`))
    assert.match(String(instance.ip_address), /^203\.0\.113\.\d+$/)
    const reasons = (await eventsAbout(appNamespace, 'web')).map((e) => e.reason)
    for (const reason of ['EnsuringLoadBalancer', 'EnsuredLoadBalancer']) assert.ok(reasons.includes(reason), `${reason} in ${reasons.join(', ')}`)
  })

  it('a node added or leaving Ready, a port changed → the instance is updated (same instance)', async () => {
    const {service, instance} = await ensured('web')
    const port80 = service.spec.ports.find((p) => p.port === 80)!.nodePort!
    await createNode('d', {ip: 4, taints: []})
    const withD = await eventually(async () => {
      const current = instancesFor(service.metadata.uid)
      return current.length === 1 && backends(current[0]!, 80).includes(`${ipPrefix}4:${port80}`) ? current[0] : undefined
    }, 30_000, 'node d in the backends')
    assert.equal(withD.id, instance.id)
    await waitForEvent(appNamespace, 'web', 'UpdatedLoadBalancer')

    await client.mergePatch({...nodes, name: `cloud-${run}-c`, subresource: 'status'}, {status: {conditions: [readyCondition(false)]}})
    await eventually(async () => {
      const current = instancesFor(service.metadata.uid)
      return current.length === 1 && !backends(current[0]!, 80).some((b) => b.startsWith(`${ipPrefix}3:`))
    }, 30_000, 'node c (not Ready) out of the backends')

    await client.mergePatch({...servicesIn(appNamespace), name: 'web'}, {spec: {ports: [{name: 'http', port: 8080, targetPort: 8080, nodePort: port80}, service.spec.ports[1]]}})
    const updated = await eventually(async () => {
      const current = instancesFor(service.metadata.uid)
      return current.length === 1 && current[0]!.ports?.[0]?.port === 8080 ? current[0] : undefined
    }, 30_000, 'port 80 → 8080 in the instance')
    assert.equal(updated.id, instance.id)
    assert.deepEqual(backends(updated, 8080), [1, 2, 4].map((n) => `${ipPrefix}${n}:${port80}`))
    assert.equal((await getService('web'))?.status?.loadBalancer?.ingress?.[0]?.ip, instance.ip_address)
  })

  it('ignore annotation respected; an existing instance for the Service is adopted, not duplicated; malformed Services get an Event each', async () => {
    const ignored = await createService('ignored', {annotation: 'ignore'})
    const adopted = await createService('adopted', {annotation: 'ignore'})
    const organization = String((sim.get('workspaces', workspaceId) as {organization: string}).organization)
    // One instance carries the Service's name, one (named by someone else) names the Service in consumer_meta.
    const preexisting = sim.insert('loadbalancers/instances', {name: lbName(adopted.metadata.uid), workspace: workspaceId, organization, ports: []})
    await client.mergePatch({...servicesIn(appNamespace), name: 'adopted'}, {metadata: {annotations: {[ANNOTATION]: null}}})
    const {instance} = await ensured('adopted')
    assert.equal(instance.id, preexisting.id, 'the existing instance was adopted')
    assert.equal(instance.ports?.length, 1)
    const byMeta = await createService('adopted-by-meta', {annotation: 'ignore'})
    const legacy = sim.insert('loadbalancers/instances', {name: 'legacy-lb', workspace: workspaceId, organization, consumer_meta: {kind: 'Service', uid: byMeta.metadata.uid}})
    await client.mergePatch({...servicesIn(appNamespace), name: 'adopted-by-meta'}, {metadata: {annotations: {[ANNOTATION]: 'managed'}}})
    const adoptedByMeta = await ensured('adopted-by-meta')
    assert.equal(adoptedByMeta.instance.id, legacy.id, 'the instance naming the Service in consumer_meta was adopted')
    assert.equal(adoptedByMeta.instance.name, lbName(byMeta.metadata.uid), 'and renamed to the Service\'s name')

    const malformed: Array<{name: string; reason: string; annotation?: string; ports?: Array<Record<string, unknown>>; spec?: Record<string, unknown>}> = [
      {name: 'bad-annotation', reason: 'InvalidLoadBalancerAnnotation', annotation: 'yes'},
      {name: 'no-nodeports', reason: 'NodePortMissing', spec: {allocateLoadBalancerNodePorts: false}},
      {name: 'udp-only', reason: 'UnsupportedProtocol', ports: [{name: 'dns', port: 53, protocol: 'UDP'}]},
      {name: 'conflict', reason: 'ConflictingLoadBalancerSettings', annotation: 'managed', spec: {loadBalancerClass: 'example.com/other-lb'}},
      {name: 'fixed-ip', reason: 'LoadBalancerIPUnsupported', spec: {loadBalancerIP: '198.51.100.9'}},
    ]
    for (const testCase of malformed) await createService(testCase.name, testCase)
    for (const testCase of malformed) {
      const event = await waitForEvent(appNamespace, testCase.name, testCase.reason)
      assert.equal(event.type, 'Warning')
    }
    const noPorts = await waitForEvent(appNamespace, 'no-nodeports', 'NoUsablePorts')
    assert.match(noPorts.message, /no port a load balancer can forward/)
    for (const name of ['no-nodeports', 'udp-only', 'conflict']) {
      const service = (await getService(name))!
      assert.equal(instancesFor(service.metadata.uid).length, 0, `${name}: no instance`)
    }
    // bad-annotation counts as absent (scope all): ensured; fixed-ip is ensured with the API's IP.
    await ensured('bad-annotation')
    await ensured('fixed-ip')
    // The ignored Service was created before all of these were reconciled: still no finalizer, no instance.
    const current = (await getService('ignored'))!
    assert.equal(current.metadata.finalizers, undefined)
    assert.equal(instancesFor(ignored.metadata.uid).length, 0)
    assert.equal(current.status?.loadBalancer?.ingress, undefined)
    assertNoDuplicates()
  })

  it('changed away from LoadBalancer or deleted → instance deleted, ingress cleared, finalizer released (DeletingLoadBalancer)', async () => {
    const {service: fixedIp} = await ensured('fixed-ip')
    await client.mergePatch({...servicesIn(appNamespace), name: 'fixed-ip'}, {spec: {type: 'ClusterIP', loadBalancerIP: null}})
    const changed = await eventually(async () => {
      const current = await getService('fixed-ip')
      return current && !current.metadata.finalizers?.includes(FINALIZER) && instancesFor(fixedIp.metadata.uid).length === 0 ? current : undefined
    }, 30_000, 'instance of fixed-ip deleted and finalizer released')
    assert.equal(changed.status?.loadBalancer?.ingress, undefined, 'ingress cleared')

    const {service: adopted} = await ensured('adopted')
    await client.delete({...servicesIn(appNamespace), name: 'adopted'})
    await gone('adopted', adopted.metadata.uid)
    const reasons = (await eventsAbout(appNamespace, 'adopted')).map((e) => e.reason)
    assert.ok(reasons.includes('DeletingLoadBalancer'), reasons.join(', '))
  })

  it('service_scope opt-in: only Services annotated managed', async () => {
    await patchConfig({cloud_controller: {load_balancer: {service_scope: 'opt-in'}}})
    // Under opt-in an unannotated Service is no longer the operator's: its instance goes, its finalizer too.
    const {service: web} = await ensured('web')
    await eventually(async () => {
      const current = await getService('web')
      return !current?.metadata.finalizers?.includes(FINALIZER) && instancesFor(web.metadata.uid).length === 0
    }, 60_000, 'web released under opt-in')
    const plain = await createService('plain-opt-in')
    await createService('opted-in', {annotation: 'managed'})
    await ensured('opted-in')
    const current = (await getService('plain-opt-in'))!
    assert.equal(current.metadata.finalizers, undefined)
    assert.equal(instancesFor(plain.metadata.uid).length, 0)
  })

  it('an instance deleted on the API side is created again and the new IP replaces the old one', async () => {
    const {service, instance} = await ensured('opted-in')
    sim.deleteBehindBack('loadbalancers/instances', instance.id)
    const again = await eventually(async () => {
      const current = await ensured('opted-in')
      return current.instance.id !== instance.id ? current : undefined
    }, 30_000, 'instance recreated')
    assert.equal(again.service.metadata.uid, service.metadata.uid)
    assert.notEqual(again.instance.ip_address, instance.ip_address)
  })

  it('API brown-out (50 % 5xx/429) during creates, node changes, a port change, deletes and an operator restart → converges with 0 duplicate instances', async () => {
    sim.faults.set({errorRate: 0.34, errorStatuses: [500, 502, 503], rateLimitRate: 0.25, retryAfterSeconds: 0})
    const requestsBefore = sim.requests.length
    const started = Date.now()
    const names = Array.from({length: 6}, (_, i) => `storm-${i}`)
    for (const name of names) await createService(name, {annotation: 'managed', ports: [{name: 'http', port: 80, targetPort: 8080}]})
    await eventually(async () => (await getService('storm-0'))?.metadata.finalizers?.includes(FINALIZER), 120_000, 'storm-0 picked up')
    await createNode('e', {ip: 5, taints: []})
    const tainted = await createNode('f', {ip: 6})
    const s1 = (await getService('storm-1'))!
    await client.mergePatch({...servicesIn(appNamespace), name: 'storm-1'}, {spec: {ports: [{name: 'http', port: 81, targetPort: 8080, nodePort: s1.spec.ports[0]!.nodePort}]}})
    const deleted = await Promise.all(['storm-4', 'storm-5'].map(async (name) => {
      const service = (await getService(name))!
      await client.delete({...servicesIn(appNamespace), name})
      return service
    }))
    // A restart in the middle: whatever the first operator created, the second adopts.
    await harness.stop()
    harness.start()

    for (const service of deleted) await gone(service.metadata.name, service.metadata.uid, 240_000)
    for (const name of [...names.slice(0, 4), 'opted-in']) {
      const {service} = await ensured(name, 240_000)
      const port = service.spec.ports[0]!
      await eventually(async () => {
        const [current] = instancesFor(service.metadata.uid)
        return current?.ports?.[0]?.port === port.port && backends(current, port.port).includes(`${ipPrefix}5:${port.nodePort}`)
      }, 240_000, `${name}: port and node e in the instance`)
    }
    const initialized = await eventually(async () => {
      const current = await getNode(tainted)
      return current.spec?.taints?.some((t) => t.key === TAINT) ? undefined : current
    }, 240_000, 'node f initialized during the brown-out')
    assert.equal(initialized.spec?.providerID, `polycrate://${clusterId()}/${tainted}`)
    const during = sim.requests.slice(requestsBefore)
    const faulted = during.filter((r) => r.status === 429 || r.status >= 500 || r.status === 0).length
    const instances = sim.list('loadbalancers/instances') as Instance[]
    process.stderr.write(`[cloud brown-out] converged after ${((Date.now() - started) / 1000).toFixed(1)} s; ${faulted} of ${during.length} API requests faulted; `
      + `${instances.length} instances for ${new Set(instances.map((i) => i.name)).size} Services\n`)
    assert.ok(faulted > 0, 'the brown-out did hit requests')
    sim.faults.clear()
    assertNoDuplicates()
    // Managed now: storm-0..3, opted-in, adopted-by-meta (bad-annotation and web were released under opt-in).
    assert.deepEqual(instances.map((i) => String(i.display_name).split('/')[1]).sort(),
      ['adopted-by-meta', 'opted-in', 'storm-0', 'storm-1', 'storm-2', 'storm-3'])
  })

  it('load_balancer.enabled: false stops managing Services; cloud_controller.enabled: false stops node initialization', async () => {
    await patchConfig({cloud_controller: {load_balancer: {enabled: false}}})
    await controllerRunning('cloud-load-balancer', false)
    await createService('while-disabled', {annotation: 'managed'})
    const g = await createNode('g', {ip: 7})
    await eventually(async () => !(await getNode(g)).spec?.taints?.some((t) => t.key === TAINT), 60_000, 'node g initialized (node init still on)')
    assert.equal((await getService('while-disabled'))!.metadata.finalizers, undefined, 'no load balancer while disabled')

    await patchConfig({cloud_controller: {enabled: false}})
    await controllerRunning('cloud-node', false)
    const h = await createNode('h', {ip: 8})
    await eventually(async () => {
      const host = await client.getOrUndefined<KubeObject & {status?: HostStatus}>({...hostsIn(namespace), name: h})
      return host?.status?.phase === 'Synced'
    }, 30_000, 'Host h synced')
    assert.ok((await getNode(h)).spec?.taints?.some((t) => t.key === TAINT), 'node h keeps its taint while the cloud controller is off')

    await patchConfig({cloud_controller: {enabled: true, load_balancer: {enabled: true}}})
    await eventually(async () => !(await getNode(h)).spec?.taints?.some((t) => t.key === TAINT), 60_000, 'node h initialized once on again')
    await ensured('while-disabled')
  })
})
