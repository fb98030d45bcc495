import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import yaml from 'js-yaml'
import type {EndpointSpec} from '../../src/crds/endpoint.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {EndpointDiscoveryReconciler} from '../../src/operator/kinds/endpoint/endpoint.discovery.js'
import {freshNamespace} from '../support/cluster.js'
import {eventually, ingressRef} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {upstreamCrd} from '../support/upstream-crds.js'

const fixtures = path.resolve(import.meta.dirname, '../fixtures/discovery')
const ingressExamples = yaml.loadAll(readFileSync(path.join(fixtures, 'ingress-examples.yaml'), 'utf8')) as KubeObject[]
type EndpointObject = KubeObject & {spec: EndpointSpec}

interface Expected {
  name: string
  host: string
  tls: boolean
  port: number
  path: string
  timeout: number
  interval: number
  status: number[]
  body?: string
}
const https = (name: string, host: string, extra: Partial<Expected> = {}): Expected => ({name, host, tls: true, port: 443, path: '/', timeout: 5, interval: 60, status: [200], ...extra})

/** Each example's expected endpoints (the defaults: timeout 5 s, TLS on). */
const results: Record<string, Expected[]> = {
  webapp: [https('app-example-com', 'app.example.com')],
  'api-service': [https('api-example-com', 'api.example.com', {path: '/api/health'})],
  'payment-gateway': [https('pay-example-com', 'pay.example.com', {path: '/health/ready', interval: 30, timeout: 10})],
  'database-api': [https('db-api-example-com', 'db-api.example.com', {path: '/health/deep', body: '"database":"connected"'})],
  'internal-admin': [],
  'report-generator': [https('reports-example-com', 'reports.example.com', {path: '/api/health', timeout: 120, interval: 300})],
  'legacy-app': [https('legacy-example-com', 'legacy.example.com', {status: [302]})],
  'main-api': [https('api-mycompany-com', 'api.mycompany.com', {path: '/api/v1/health', timeout: 15, interval: 30})],
  'multi-service-platform': [
    https('api-example-com', 'api.example.com', {path: '/api/health'}),
    https('events-example-com', 'events.example.com', {path: '/health', status: [202]}),
    https('data-example-com', 'data.example.com', {path: '/readyz', timeout: 10}),
    https('booking-example-com', 'booking.example.com', {path: '/health'}),
  ],
}

const listEndpoints = async (client: KubeClient, namespace: string) =>
  (await client.request<{items: EndpointObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/endpoints`})).items

describe('endpoint discovery (in-process operator, real apiserver)', function () {
  this.timeout(120_000)
  const harness = inProcessOperator({spec: false, features: () => [EndpointDiscoveryReconciler]})

  const sibling = ingressExamples.find((e) => e.metadata!.name === 'webapp')!
  for (const example of ingressExamples) {
    const name = example.metadata!.name!
    it(`seed example ${name} → ${results[name]!.map((e) => e.host).join(', ') || 'no endpoint'}`, async () => {
      const namespace = await freshNamespace(harness.client, 'ex')
      await harness.client.create(ingressRef(namespace), {...example, metadata: {...example.metadata, namespace}})
      const expected = results[name]!
      if (expected.length === 0) {
        // The positive signal: a sibling Ingress created after it has its Endpoint CR, and discovery reconciled both.
        const reconciles = await harness.reconciles('endpoint-discovery')
        await harness.client.create(ingressRef(namespace), {...sibling, metadata: {...sibling.metadata, namespace}})
        await eventually(async () => (await listEndpoints(harness.client, namespace)).some((e) => e.metadata!.labels!['endpoints.polycrate.io/source-ingress'] === 'webapp'), 20_000, 'the sibling\'s Endpoint CR')
        await harness.reconciledSince('endpoint-discovery', reconciles, 2)
        assert.deepEqual((await listEndpoints(harness.client, namespace)).filter((e) => e.metadata!.labels!['endpoints.polycrate.io/source-ingress'] === name), [])
        return
      }
      const endpoints = await eventually(async () => {
        const list = await listEndpoints(harness.client, namespace)
        return list.length === expected.length ? list : undefined
      }, 20_000, `${expected.length} Endpoint CRs`)
      for (const want of expected) {
        const endpoint = endpoints.find((e) => e.metadata!.name === want.name)
        assert.ok(endpoint, `${want.name} missing`)
        assert.deepEqual(
          {host: endpoint.spec.remoteAddress, tls: endpoint.spec.tls, port: endpoint.spec.remotePort, path: endpoint.spec.path, timeout: endpoint.spec.timeout, interval: endpoint.spec.interval, status: endpoint.spec.expectedStatusCodes, body: endpoint.spec.expectedBody},
          {host: want.host, tls: want.tls, port: want.port, path: want.path, timeout: want.timeout, interval: want.interval, status: want.status, body: want.body},
        )
        assert.equal(endpoint.metadata!.labels!.polycrate_discovered, 'true')
        assert.equal(endpoint.metadata!.labels!['endpoints.polycrate.io/source-ingress'], name)
        assert.equal(endpoint.spec.kind, 'http')
      }
      const ingress = await harness.client.get<KubeObject & {metadata: {finalizers?: string[]}}>(ingressRef(namespace, name))
      assert.deepEqual(ingress.metadata.finalizers, ['endpoints.polycrate.io/discovery-cleanup'])
    })
  }

  it('annotation edits propagate; the deprecated label is removed; deleting the Ingress removes its Endpoint CRs and lets it go', async () => {
    const namespace = await freshNamespace(harness.client, 'edit')
    const webapp = ingressExamples[0]!
    await harness.client.create(ingressRef(namespace), {...webapp, metadata: {...webapp.metadata, namespace, labels: {'k8sapps.polycrate.io/name': 'webapp'}}})
    await eventually(async () => (await listEndpoints(harness.client, namespace)).length === 1, 20_000, 'endpoint created')
    await harness.client.mergePatch(ingressRef(namespace, 'webapp'), {metadata: {annotations: {polycrate_endpoint_path: '/api/v2/health'}}})
    const updated = await eventually(async () => {
      const [endpoint] = await listEndpoints(harness.client, namespace)
      return endpoint?.spec.path === '/api/v2/health' ? endpoint : undefined
    }, 20_000, 'path updated')
    assert.equal(updated.spec.k8sAppName, 'webapp', 'the deprecated label is read')
    await eventually(async () => (await harness.client.get<KubeObject>(ingressRef(namespace, 'webapp'))).metadata?.labels?.['k8sapps.polycrate.io/name'] === undefined, 20_000, 'deprecated label removed')

    await harness.client.delete(ingressRef(namespace, 'webapp'))
    await eventually(async () => (await listEndpoints(harness.client, namespace)).length === 0, 20_000, 'Endpoint CR deleted')
    await eventually(async () => (await harness.client.getOrUndefined(ingressRef(namespace, 'webapp'))) === undefined, 20_000, 'Ingress released by the finalizer')
  })

  it('malformed annotations each give a Warning Event on their Ingress and leave the other Ingresses alone', async () => {
    const namespace = await freshNamespace(harness.client, 'bad')
    const ingress = (name: string, host: string, annotations: Record<string, string>) => harness.client.create(ingressRef(namespace), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name, namespace, annotations: {polycrate_endpoint_monitor: 'true', ...annotations}},
      spec: {rules: [{host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]},
    })
    const bad: Array<[name: string, host: string, annotations: Record<string, string>, reason: string, says: RegExp]> = [
      ['bad-json', 'json.example.com', {polycrate_endpoint_host_config: '{"json.example.com": {'}, 'MalformedHostConfig', /polycrate_endpoint_host_config/],
      ['bad-interval', 'interval.example.com', {polycrate_endpoint_interval: 'often'}, 'InvalidAnnotation', /polycrate_endpoint_interval.*often/],
      ['bad-status', 'status.example.com', {polycrate_endpoint_expected_status: '999'}, 'InvalidAnnotation', /polycrate_endpoint_expected_status.*999/],
      ['bad-timeout', 'timeout.example.com', {polycrate_endpoint_timeout: '-5'}, 'InvalidAnnotation', /polycrate_endpoint_timeout.*-5/],
      ['bad-tls', 'tls.example.com', {polycrate_endpoint_tls: 'yes'}, 'InvalidAnnotation', /polycrate_endpoint_tls.*yes/],
      ['bad-port', 'port.example.com', {polycrate_endpoint_port: '70000'}, 'InvalidAnnotation', /polycrate_endpoint_port.*70000/],
      ['bad-path', 'path.example.com', {polycrate_endpoint_path: 'health'}, 'InvalidAnnotation', /polycrate_endpoint_path.*health/],
      ['wildcard', '*.wild.example.com', {}, 'WildcardHost', /\*\.wild\.example\.com/],
      ['byoa-alone', 'byoa.example.com', {polycrate_k8sapp_byoa: 'true'}, 'ByoaWithoutK8sApp', /polycrate_k8sapp_byoa/],
    ]
    for (const [name, host, annotations] of bad) await ingress(name, host, annotations)
    await ingress('good', 'good.example.com', {polycrate_endpoint_path: '/ok'})
    await ingress('late-claim', 'good.example.com', {})

    type Event = {reason: string; type: string; message: string; involvedObject: {name: string}}
    const events = await eventually(async () => {
      const list = (await harness.client.request<{items: Event[]}>({path: `/api/v1/namespaces/${namespace}/events`})).items
      return bad.every(([name, , , reason]) => list.some((e) => e.involvedObject.name === name && e.reason === reason)) &&
        list.some((e) => e.involvedObject.name === 'late-claim' && e.reason === 'HostClaimedElsewhere') ? list : undefined
    }, 20_000, 'one Warning Event per malformed Ingress')
    for (const [name, , , reason, says] of bad) {
      const event = events.find((e) => e.involvedObject.name === name && e.reason === reason)!
      assert.equal(event.type, 'Warning')
      assert.match(event.message, says, `${name}: ${event.message}`)
    }
    const endpoints = await eventually(async () => {
      const list = await listEndpoints(harness.client, namespace)
      return list.length === bad.length ? list : undefined // the wildcard host has none, good.example.com has one
    }, 20_000, 'the other hosts are still discovered, with defaults where a value was bad')
    const good = endpoints.find((e) => e.metadata!.name === 'good-example-com')!
    assert.equal(good.spec.path, '/ok')
    assert.equal(good.metadata!.labels!['endpoints.polycrate.io/source-ingress'], 'good', 'the older Ingress keeps the host')
    assert.equal(endpoints.find((e) => e.metadata!.name === 'interval-example-com')!.spec.interval, 60, 'a bad interval falls back to the default')
    assert.deepEqual(endpoints.find((e) => e.metadata!.name === 'status-example-com')!.spec.expectedStatusCodes, [200])
  })

  it('the stale sweep marks discovered Endpoint CRs whose source is gone, deletes them after cleanup.stale_threshold_minutes, and leaves hand-made ones alone', async () => {
    const namespace = await freshNamespace(harness.client, 'stale')
    const endpoint = (name: string, labels: Record<string, string>, annotations: Record<string, string> = {}) => harness.client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name, namespace, labels, annotations}, spec: {remoteAddress: `${name}.example.com`},
    })
    // Orphaned long ago (the annotation a sweep of an earlier run wrote): past the 30-minute default threshold.
    await endpoint('old-orphan', {polycrate_discovered: 'true', 'endpoints.polycrate.io/source-ingress': 'gone'}, {'polycrate.io/orphaned-since': new Date(Date.now() - 31 * 60_000).toISOString()})
    await endpoint('new-orphan', {polycrate_discovered: 'true', 'endpoints.polycrate.io/source-ingress': 'also-gone'})
    await endpoint('hand-made', {team: 'sre'})
    const marked = await eventually(async () => {
      const list = await listEndpoints(harness.client, namespace)
      const fresh = list.find((e) => e.metadata!.name === 'new-orphan')
      return fresh?.metadata?.annotations?.['polycrate.io/orphaned-since'] ? list : undefined
    }, 20_000, 'the new orphan is marked')
    assert.ok(Date.now() - Date.parse(marked.find((e) => e.metadata!.name === 'new-orphan')!.metadata!.annotations!['polycrate.io/orphaned-since']!) < 60_000)
    await eventually(async () => (await listEndpoints(harness.client, namespace)).map((e) => e.metadata!.name).sort().join() === 'hand-made,new-orphan', 20_000, 'old orphan swept; the new one waits for the threshold; hand-made kept')
  })

  it('one bad source never blocks its namespace: a 100-character name fits the label, a rejected write is a Warning Event on its source, and the others are discovered and released', async () => {
    const namespace = await freshNamespace(harness.client, 'iso')
    await harness.client.mergePatch({group: '', version: 'v1', plural: 'namespaces', name: namespace}, {metadata: {labels: {'polycrate-test/deny': namespace}}})
    // A real rejection by the API server: a ValidatingAdmissionPolicy refuses Endpoint CRs for one host.
    const policy = `deny-${namespace}`
    const admission = (plural: string) => ({group: 'admissionregistration.k8s.io', version: 'v1', plural})
    await harness.client.create(admission('validatingadmissionpolicies'), {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: {name: policy},
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {resourceRules: [{apiGroups: ['polycrate.io'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['endpoints']}]},
        validations: [{expression: "object.spec.remoteAddress != 'denied.example.com'", message: 'denied.example.com may not be monitored here'}],
      },
    })
    await harness.client.create(admission('validatingadmissionpolicybindings'), {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: {name: policy},
      spec: {policyName: policy, validationActions: ['Deny'], matchResources: {namespaceSelector: {matchLabels: {'polycrate-test/deny': namespace}}}},
    })
    try {
      // The policy is in force once a direct create is refused (the positive signal before relying on it).
      await eventually(async () => {
        try {
          await harness.client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace}, {apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name: 'probe', namespace}, spec: {remoteAddress: 'denied.example.com'}})
          await harness.client.delete({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace, name: 'probe'})
          return false
        } catch {
          return true
        }
      }, 30_000, 'the admission policy is in force')

      const longName = `a-very-long-ingress-name-${'x'.repeat(75)}`
      assert.equal(longName.length, 100)
      const ingress = (name: string, host: string) => harness.client.create(ingressRef(namespace), {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
        metadata: {name, namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: [{host}]},
      })
      await ingress('denied', 'denied.example.com')
      await ingress(longName, 'long.example.com')
      await ingress('good', 'good.example.com')

      const endpoints = await eventually(async () => {
        const list = await listEndpoints(harness.client, namespace)
        return list.length === 2 ? list : undefined
      }, 20_000, 'the two allowed hosts are discovered')
      const long = endpoints.find((e) => e.spec.remoteAddress === 'long.example.com')!
      const label = long.metadata!.labels!['endpoints.polycrate.io/source-ingress']!
      assert.ok(label.length <= 63 && label !== longName, `label value ${label}`)
      assert.equal(long.spec.source?.name, longName, 'the full name is in spec.source')

      const events = await eventually(async () => {
        const list = await harness.client.request<{items: Array<{type: string; reason: string; message: string; involvedObject: {name: string; kind: string}}>}>({path: `/api/v1/namespaces/${namespace}/events`})
        return list.items.find((e) => e.involvedObject.kind === 'Ingress' && e.involvedObject.name === 'denied' && e.reason === 'DiscoveryFailed') ? list.items : undefined
      }, 20_000, 'a DiscoveryFailed event on the denied Ingress')
      const failed = events.find((e) => e.involvedObject.name === 'denied' && e.reason === 'DiscoveryFailed')!
      assert.equal(failed.type, 'Warning')
      assert.match(failed.message, /denied\.example\.com may not be monitored here/)
      assert.ok(!events.some((e) => e.reason === 'DiscoveryFailed' && e.involvedObject.name !== 'denied'), 'no other source is blamed')

      // Deleting another Ingress of the same namespace is not held up by the failing one.
      await harness.client.delete(ingressRef(namespace, 'good'))
      await eventually(async () => (await harness.client.getOrUndefined(ingressRef(namespace, 'good'))) === undefined, 20_000, 'the good Ingress is released and gone')
      assert.deepEqual((await listEndpoints(harness.client, namespace)).map((e) => e.spec.remoteAddress), ['long.example.com'])
    } finally {
      await harness.client.delete({...admission('validatingadmissionpolicybindings'), name: policy}).catch(() => {})
      await harness.client.delete({...admission('validatingadmissionpolicies'), name: policy}).catch(() => {})
    }
  })

  it('the deprecated label is moved only on monitored sources: an unmonitored Ingress is never written to', async () => {
    const namespace = await freshNamespace(harness.client, 'legacy')
    const legacy = (name: string, monitor: boolean) => harness.client.create(ingressRef(namespace), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name, namespace, labels: {'k8sapps.polycrate.io/name': 'shop'}, annotations: monitor ? {polycrate_endpoint_monitor: 'true'} : {}},
      spec: {rules: [{host: `${name}.example.com`}]},
    })
    await legacy('unmonitored', false)
    await legacy('monitored', true)
    await eventually(async () => {
      const moved = await harness.client.get<KubeObject>(ingressRef(namespace, 'monitored'))
      return moved.metadata?.labels?.['k8sapps.polycrate.io/name'] === undefined && moved.metadata?.annotations?.polycrate_k8sapp_name === 'shop'
    }, 20_000, 'the monitored Ingress has the label moved into the annotation')
    const untouched = await harness.client.get<KubeObject & {metadata: {finalizers?: string[]; resourceVersion?: string; generation?: number}}>(ingressRef(namespace, 'unmonitored'))
    assert.equal(untouched.metadata.labels?.['k8sapps.polycrate.io/name'], 'shop')
    assert.equal(untouched.metadata.annotations?.polycrate_k8sapp_name, undefined)
    assert.equal(untouched.metadata.finalizers, undefined)
  })

  it('opting out (monitor=false) removes the Endpoint CRs and the finalizer', async () => {
    const namespace = await freshNamespace(harness.client, 'optout')
    const webapp = ingressExamples[0]!
    await harness.client.create(ingressRef(namespace), {...webapp, metadata: {...webapp.metadata, namespace}})
    await eventually(async () => (await listEndpoints(harness.client, namespace)).length === 1, 20_000, 'endpoint created')
    await harness.client.mergePatch(ingressRef(namespace, 'webapp'), {metadata: {annotations: {polycrate_endpoint_monitor: 'false'}}})
    await eventually(async () => (await listEndpoints(harness.client, namespace)).length === 0, 20_000, 'endpoint removed')
    await eventually(async () => ((await harness.client.get<KubeObject & {metadata: {finalizers?: string[]}}>(ingressRef(namespace, 'webapp'))).metadata.finalizers ?? []).length === 0, 20_000, 'finalizer removed')
  })

  it('HTTPRoute discovery starts when the Gateway API CRDs appear; TLS and port come from the listener; HTTPRoute wins the host over an Ingress', async () => {
    for (const file of ['gateway.networking.k8s.io_gatewayclasses.yaml', 'gateway.networking.k8s.io_gateways.yaml', 'gateway.networking.k8s.io_httproutes.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(harness.client, crd)
      await waitEstablished(harness.client, crd.metadata.name)
    }
    const [gateway, route] = yaml.loadAll(readFileSync(path.join(fixtures, 'httproute-example.yaml'), 'utf8')) as KubeObject[]
    const gatewayNamespace = await freshNamespace(harness.client, 'gw')
    const namespace = await freshNamespace(harness.client, 'shop')
    await harness.client.create({group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace: gatewayNamespace}, {...gateway, metadata: {...gateway!.metadata, namespace: gatewayNamespace}})
    // An older Ingress claims the same host first.
    await harness.client.create(ingressRef(namespace), {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'shop-ingress', namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: 'shop.acme.example', http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'shop', port: {number: 80}}}}]}}]},
    })
    const fromIngress = await eventually(async () => {
      const [found] = await listEndpoints(harness.client, namespace)
      return found?.metadata?.labels?.['endpoints.polycrate.io/source-ingress'] === 'shop-ingress' ? found : undefined
    }, 20_000, 'Ingress endpoint')

    const spec = route as KubeObject & {spec: {parentRefs: Array<{namespace: string}>}}
    await harness.client.create({group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', namespace}, {
      ...spec,
      metadata: {...spec.metadata, namespace},
      spec: {...spec.spec, parentRefs: spec.spec.parentRefs.map((ref) => ({...ref, namespace: gatewayNamespace}))},
    })
    const endpoint = await eventually(async () => {
      const [found] = await listEndpoints(harness.client, namespace)
      return found?.metadata?.labels?.['endpoints.polycrate.io/source-httproute'] === 'acme-shop' ? found : undefined
    }, 40_000, 'the HTTPRoute takes the host')
    assert.equal(endpoint.metadata!.name, 'shop-acme-example')
    assert.deepEqual(
      {tls: endpoint.spec.tls, port: endpoint.spec.remotePort, path: endpoint.spec.path, app: endpoint.spec.k8sAppName, byoa: endpoint.spec.byoa, source: endpoint.spec.source},
      {tls: true, port: 443, path: '/readyz', app: 'acme-shop', byoa: true, source: {kind: 'HTTPRoute', name: 'acme-shop', namespace}},
    )
    assert.equal(endpoint.metadata!.labels!['endpoints.polycrate.io/source-ingress'], undefined)
    const events = await harness.client.request<{items: Array<{reason: string; involvedObject: {name: string}; message: string}>}>({path: `/api/v1/namespaces/${namespace}/events`})
    assert.ok(events.items.some((e) => e.involvedObject.name === 'shop-ingress' && e.reason === 'HostClaimedElsewhere'), 'the Ingress is told it lost the host')
    // The CR changed hands: the same object (its API endpoint is updated, never deleted and created anew).
    assert.equal(endpoint.metadata!.uid, fromIngress.metadata!.uid, 'the HTTPRoute took over the Ingress\'s Endpoint CR, not a new one')

    // The route goes: the Ingress takes the host back, again the same CR.
    await harness.client.delete({group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', namespace, name: spec.metadata!.name!})
    const back = await eventually(async () => {
      const [found] = await listEndpoints(harness.client, namespace)
      return found?.spec.source?.kind === 'Ingress' ? found : undefined
    }, 40_000, 'the Ingress takes the host back')
    assert.equal(back.metadata!.uid, fromIngress.metadata!.uid, 'the Ingress took the CR back, not a new one')
    assert.equal(back.metadata!.labels!['endpoints.polycrate.io/source-httproute'], undefined)
    assert.deepEqual((back.metadata!.ownerReferences as Array<{kind: string}>).map((owner) => owner.kind), ['Ingress'])
  })
})
