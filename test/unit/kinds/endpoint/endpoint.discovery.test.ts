import assert from 'node:assert/strict'
import type {V1Ingress} from '@kubernetes/client-node'
import {endpointSpec, type EndpointSpec} from '../../../../src/crds/endpoint.js'
import {operatorConfigSpec} from '../../../../src/crds/operatorconfig.js'
import {
  endpointName,
  endpointNameWithHash,
  endpointsForHTTPRoute,
  endpointsForIngress,
  resolveHostClaims,
  type DesiredEndpoint,
  type EndpointDiscoverySettings,
  type GatewayLike,
  type HTTPRouteLike,
  type IngressLike,
  type SourceResult,
} from '../../../../src/operator/kinds/endpoint/endpoint.sources.js'
import {checkedProblems} from '../../../support/helpers.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

const defaults: EndpointDiscoverySettings = operatorConfigSpec.parse({}).endpoint_discovery

function settings(overrides: Partial<EndpointDiscoverySettings> = {}): EndpointDiscoverySettings {
  return {...defaults, ...overrides}
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Every Endpoint must be accepted by the CRD schema unchanged, and its name must be a valid object name. */
function checked(result: SourceResult): SourceResult {
  for (const endpoint of result.endpoints) assertValidEndpoint(endpoint)
  checkedProblems(result.problems, {messages: true})
  return result
}

function assertValidEndpoint(endpoint: DesiredEndpoint): void {
  assert.deepEqual(endpointSpec.parse(endpoint.spec), endpoint.spec, 'the spec passes the CRD schema without change')
  assert.ok(endpoint.name.length <= 253 && dnsSubdomain.test(endpoint.name), `name ${endpoint.name} is a DNS-1123 subdomain`)
}

type Source = {kind: 'Ingress' | 'HTTPRoute'; name: string; namespace: string}

/** The spec of an Ingress-discovered endpoint with the documented defaults. */
function spec(host: string, source: Source, overrides: Partial<EndpointSpec> = {}): EndpointSpec {
  return {
    displayName: host,
    remoteAddress: host,
    remotePort: 443,
    kind: 'http',
    tls: true,
    path: '/',
    timeout: 5,
    interval: 60,
    expectedStatusCodes: [200],
    ...overrides,
    source,
  }
}

function ingress(
  name: string,
  namespace: string,
  annotations: Record<string, string | undefined>,
  hosts: Array<string | undefined>,
  extra: {tls?: string[]; ingressClassName?: string; labels?: Record<string, string>; creationTimestamp?: string | Date; deletionTimestamp?: string} = {},
): IngressLike {
  const clean = Object.fromEntries(Object.entries(annotations).filter(([, v]) => v !== undefined)) as Record<string, string>
  return {
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      annotations: clean,
      labels: extra.labels,
      creationTimestamp: extra.creationTimestamp ?? '2024-01-01T00:00:00Z',
      deletionTimestamp: extra.deletionTimestamp,
    },
    spec: {
      ingressClassName: extra.ingressClassName,
      tls: extra.tls ? [{hosts: extra.tls}] : undefined,
      rules: hosts.map((host) => (host === undefined ? {} : {host})),
    },
  }
}

const specsByHost = (result: SourceResult) => Object.fromEntries(result.endpoints.map((e) => [e.host, e.spec]))

// ---------------------------------------------------------------------------------------------------------------
// the seeds' Ingress examples 1–9, copied as plain objects

const backend = (name: string, port: number) => ({service: {name, port: {number: port}}})
const rule = (host: string, service: string, port: number) =>
  ({host, http: {paths: [{path: '/', pathType: 'Prefix', backend: backend(service, port)}]}})

const example1 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {name: 'webapp', namespace: 'production', annotations: {polycrate_endpoint_monitor: 'true'}},
  spec: {ingressClassName: 'nginx', rules: [rule('app.example.com', 'webapp', 80)]},
}
const example2 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {name: 'api-service', namespace: 'production', annotations: {polycrate_endpoint_monitor: 'true', polycrate_endpoint_path: '/api/health'}},
  spec: {ingressClassName: 'nginx', tls: [{hosts: ['api.example.com'], secretName: 'api-tls'}], rules: [rule('api.example.com', 'api', 8080)]},
}
const example3 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'payment-gateway',
    namespace: 'production',
    annotations: {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/health/ready',
      polycrate_endpoint_interval: '30',
      polycrate_endpoint_timeout: '10',
      polycrate_endpoint_expected_status: '200',
    },
  },
  spec: {ingressClassName: 'nginx', tls: [{hosts: ['pay.example.com'], secretName: 'payment-tls'}], rules: [rule('pay.example.com', 'payment-api', 443)]},
}
const example4 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'database-api',
    namespace: 'production',
    annotations: {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/health/deep',
      polycrate_endpoint_expected_status: '200',
      'endpoints.polycrate.io/expected-body': '"database":"connected"',
    },
  },
  spec: {ingressClassName: 'nginx', tls: [{hosts: ['db-api.example.com'], secretName: 'db-api-tls'}], rules: [rule('db-api.example.com', 'db-api', 8080)]},
}
const example5 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {name: 'internal-admin', namespace: 'kube-system', annotations: {polycrate_endpoint_monitor: 'false'}},
  spec: {ingressClassName: 'nginx', rules: [rule('admin.internal.local', 'admin-dashboard', 80)]},
}
const example6 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'report-generator',
    namespace: 'production',
    annotations: {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/api/health',
      polycrate_endpoint_timeout: '120',
      polycrate_endpoint_interval: '300',
    },
  },
  spec: {ingressClassName: 'nginx', tls: [{hosts: ['reports.example.com'], secretName: 'reports-tls'}], rules: [rule('reports.example.com', 'report-service', 8080)]},
}
const example7 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'legacy-app',
    namespace: 'production',
    annotations: {polycrate_endpoint_monitor: 'true', polycrate_endpoint_path: '/', polycrate_endpoint_expected_status: '302'},
  },
  spec: {ingressClassName: 'nginx', rules: [rule('legacy.example.com', 'legacy-app', 80)]},
}
const example8 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'main-api',
    namespace: 'production',
    labels: {app: 'main-api', environment: 'production'},
    annotations: {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/api/v1/health',
      polycrate_endpoint_timeout: '15',
      polycrate_endpoint_interval: '30',
      polycrate_endpoint_expected_status: '200',
      'nginx.ingress.kubernetes.io/proxy-body-size': '50m',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '60',
      'cert-manager.io/cluster-issuer': 'letsencrypt-prod',
    },
  },
  spec: {
    ingressClassName: 'nginx',
    tls: [{hosts: ['api.mycompany.com'], secretName: 'api-tls-cert'}],
    rules: [{
      host: 'api.mycompany.com',
      http: {paths: [
        {path: '/api', pathType: 'Prefix', backend: backend('api-service', 8080)},
        {path: '/docs', pathType: 'Prefix', backend: backend('docs-service', 80)},
      ]},
    }],
  },
}
const example9 = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'multi-service-platform',
    namespace: 'production',
    annotations: {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/health',
      polycrate_endpoint_expected_status: '200',
      // a YAML block scalar (`|`) keeps the newlines
      polycrate_endpoint_host_config: `{
  "api.example.com": {
    "path": "/api/health",
    "expected_status": [200]
  },
  "events.example.com": {
    "path": "/health",
    "expected_status": [202]
  },
  "data.example.com": {
    "path": "/readyz",
    "expected_status": [200],
    "timeout": 10
  }
}
`,
    },
  },
  spec: {
    ingressClassName: 'nginx',
    tls: [{hosts: ['api.example.com', 'events.example.com', 'data.example.com', 'booking.example.com'], secretName: 'platform-tls'}],
    rules: [
      rule('api.example.com', 'api-service', 8080),
      rule('events.example.com', 'events-service', 80),
      rule('data.example.com', 'data-service', 8080),
      rule('booking.example.com', 'booking-service', 80),
    ],
  },
}
// "Endpoint–K8sApp association" and "Bring-your-own-App"
const associationExample = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {name: 'my-app-ingress', namespace: 'prod', annotations: {polycrate_endpoint_monitor: 'true', polycrate_k8sapp_name: 'my-app'}},
  spec: {rules: [rule('my-app.example.com', 'my-app', 80)]},
}
const byoaIngressExample = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'acme-shop',
    namespace: 'acme-shop',
    annotations: {polycrate_endpoint_monitor: 'true', polycrate_k8sapp_name: 'acme-shop', polycrate_k8sapp_byoa: 'true'},
  },
  spec: {rules: [rule('shop.acme.example', 'acme-shop', 8080)]},
}

// the seeds' HTTPRoute example's parent: Gateway acme-shop-https with an https listener on 443
const envoyGateway: GatewayLike = {
  metadata: {name: 'acme-shop-https', namespace: 'envoy-gateway-system'},
  spec: {gatewayClassName: 'envoy', listeners: [{name: 'http', port: 80, protocol: 'HTTP'}, {name: 'https', port: 443, protocol: 'HTTPS'}]},
}

const production = (name: string): Source => ({kind: 'Ingress', name, namespace: 'production'})

describe('endpoint discovery (pure)', () => {
  describe('the seeds\' Ingress examples', () => {
    const cases: Array<{example: string; ingress: IngressLike; endpoints: Array<{name: string; spec: EndpointSpec}>}> = [
      {example: '1 (timeout 5 s by default, TLS on by default → https :443)', ingress: example1, endpoints: [
        {name: 'app-example-com', spec: spec('app.example.com', production('webapp'))},
      ]},
      {example: '2', ingress: example2, endpoints: [
        {name: 'api-example-com', spec: spec('api.example.com', production('api-service'), {path: '/api/health'})},
      ]},
      {example: '3', ingress: example3, endpoints: [
        {name: 'pay-example-com', spec: spec('pay.example.com', production('payment-gateway'), {path: '/health/ready', interval: 30, timeout: 10})},
      ]},
      {example: '4', ingress: example4, endpoints: [
        {name: 'db-api-example-com', spec: spec('db-api.example.com', production('database-api'), {path: '/health/deep', expectedBody: '"database":"connected"'})},
      ]},
      {example: '6', ingress: example6, endpoints: [
        {name: 'reports-example-com', spec: spec('reports.example.com', production('report-generator'), {path: '/api/health', timeout: 120, interval: 300})},
      ]},
      {example: '7 (302; no spec.tls, TLS stays on → https :443)', ingress: example7, endpoints: [
        {name: 'legacy-example-com', spec: spec('legacy.example.com', production('legacy-app'), {expectedStatusCodes: [302]})},
      ]},
      {example: '8', ingress: example8, endpoints: [
        {name: 'api-mycompany-com', spec: spec('api.mycompany.com', production('main-api'), {path: '/api/v1/health', timeout: 15, interval: 30})},
      ]},
      {example: '9 (four endpoints, the table\'s values)', ingress: example9, endpoints: [
        {name: 'api-example-com', spec: spec('api.example.com', production('multi-service-platform'), {path: '/api/health'})},
        {name: 'events-example-com', spec: spec('events.example.com', production('multi-service-platform'), {path: '/health', expectedStatusCodes: [202]})},
        {name: 'data-example-com', spec: spec('data.example.com', production('multi-service-platform'), {path: '/readyz', timeout: 10})},
        {name: 'booking-example-com', spec: spec('booking.example.com', production('multi-service-platform'), {path: '/health'})},
      ]},
      {example: 'Endpoint–K8sApp association', ingress: associationExample, endpoints: [
        {name: 'my-app-example-com', spec: spec('my-app.example.com', {kind: 'Ingress', name: 'my-app-ingress', namespace: 'prod'}, {k8sAppName: 'my-app'})},
      ]},
      {example: 'Bring-your-own-App (Ingress)', ingress: byoaIngressExample, endpoints: [
        {name: 'shop-acme-example', spec: spec('shop.acme.example', {kind: 'Ingress', name: 'acme-shop', namespace: 'acme-shop'}, {k8sAppName: 'acme-shop', byoa: true})},
      ]},
    ]
    for (const c of cases) {
      it(`Example ${c.example}`, () => {
        const result = checked(endpointsForIngress(c.ingress, defaults))
        assert.equal(result.monitored, true)
        assert.deepEqual(result.problems, [])
        assert.equal(result.skipReason, undefined)
        assert.deepEqual(result.endpoints.map((e) => ({name: e.name, spec: e.spec})), c.endpoints)
        for (const e of result.endpoints) {
          assert.equal(e.namespace, e.spec.source?.namespace)
          assert.equal(e.host, e.spec.remoteAddress)
        }
      })
    }

    it('Example 5 gives nothing: kube-system is ignored by default, and monitor "false" excludes in both modes', () => {
      const ignored = checked(endpointsForIngress(example5, defaults))
      assert.equal(ignored.monitored, false)
      assert.match(ignored.skipReason ?? '', /namespace "kube-system" is not watched/)
      for (const mode of ['annotation', 'auto'] as const) {
        const optedOut = checked(endpointsForIngress(example5, settings({mode, ignore_namespaces: []})))
        assert.equal(optedOut.monitored, false, mode)
        assert.deepEqual(optedOut.endpoints, [])
        assert.deepEqual(optedOut.problems, [])
        assert.match(optedOut.skipReason ?? '', /opted out \(polycrate_endpoint_monitor: "false"\)/)
      }
    })

    it('the seeds\' HTTPRoute example: TLS and port from the https listener of acme-shop-https', () => {
      const route: HTTPRouteLike = {
        metadata: {
          name: 'acme-shop',
          namespace: 'acme-shop',
          annotations: {
            polycrate_endpoint_monitor: 'true',
            polycrate_endpoint_path: '/readyz',
            polycrate_k8sapp_name: 'acme-shop',
            polycrate_k8sapp_byoa: 'true',
          },
        },
        spec: {
          parentRefs: [{name: 'acme-shop-https', namespace: 'envoy-gateway-system', sectionName: 'https'}],
          hostnames: ['shop.acme.example'],
          rules: [{matches: [{path: {type: 'PathPrefix', value: '/'}}], backendRefs: [{name: 'acme-shop', port: 8080}]} as {matches: Array<{path: {type: string; value: string}}>}],
        },
      }
      const result = checked(endpointsForHTTPRoute(route, gatewayMap(envoyGateway), classOf, defaults))
      assert.deepEqual(result.problems, [])
      assert.deepEqual(result.endpoints.map((e) => ({name: e.name, namespace: e.namespace, spec: e.spec})), [{
        name: 'shop-acme-example',
        namespace: 'acme-shop',
        spec: spec('shop.acme.example', {kind: 'HTTPRoute', name: 'acme-shop', namespace: 'acme-shop'}, {path: '/readyz', k8sAppName: 'acme-shop', byoa: true}),
      }])
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('scope: mode, classes, namespaces', () => {
    const hosts = ['app.example.com']
    const modeCases: Array<[string, Record<string, string>, EndpointDiscoverySettings['mode'], boolean]> = [
      ['annotation mode, no annotation → skipped', {}, 'annotation', false],
      ['annotation mode, monitor "true" → monitored', {polycrate_endpoint_monitor: 'true'}, 'annotation', true],
      ['annotation mode, monitor "TRUE" (any letter case) → monitored', {polycrate_endpoint_monitor: 'TRUE'}, 'annotation', true],
      ['annotation mode, monitor "false" → skipped', {polycrate_endpoint_monitor: 'false'}, 'annotation', false],
      ['auto mode, no annotation → monitored', {}, 'auto', true],
      ['auto mode, monitor "true" → monitored', {polycrate_endpoint_monitor: 'true'}, 'auto', true],
      ['auto mode, monitor "false" → skipped', {polycrate_endpoint_monitor: 'false'}, 'auto', false],
      ['annotation mode, monitor "" (blank = not set) → skipped', {polycrate_endpoint_monitor: ''}, 'annotation', false],
      ['deprecated endpoints.polycrate.io/enabled "true" opts in', {'endpoints.polycrate.io/enabled': 'true'}, 'annotation', true],
      ['deprecated endpoints.polycrate.io/ignore "true" opts out', {'endpoints.polycrate.io/ignore': 'true'}, 'auto', false],
      ['deprecated endpoints.polycrate.io/enabled "false" opts out', {'endpoints.polycrate.io/enabled': 'false'}, 'auto', false],
      ['deprecated ignore "false" does not opt in', {'endpoints.polycrate.io/ignore': 'false'}, 'annotation', false],
      ['deprecated enabled "true" + ignore "true": opting out wins', {'endpoints.polycrate.io/enabled': 'true', 'endpoints.polycrate.io/ignore': 'true'}, 'annotation', false],
      ['canonical "false" wins over deprecated enabled "true"', {polycrate_endpoint_monitor: 'false', 'endpoints.polycrate.io/enabled': 'true'}, 'auto', false],
      ['canonical "true" wins over deprecated ignore "true"', {polycrate_endpoint_monitor: 'true', 'endpoints.polycrate.io/ignore': 'true'}, 'annotation', true],
    ]
    for (const [title, annotations, mode, monitored] of modeCases) {
      it(title, () => {
        const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, hosts), settings({mode})))
        assert.equal(result.monitored, monitored)
        assert.equal(result.endpoints.length, monitored ? 1 : 0)
        assert.equal(result.skipReason === undefined, monitored)
        assert.deepEqual(result.problems, [])
      })
    }

    const classCases: Array<[string, string[], {ingressClassName?: string; annotation?: string}, boolean]> = [
      ['empty list: every class', [], {ingressClassName: 'traefik'}, true],
      ['empty list: no class passes too', [], {}, true],
      ['listed spec.ingressClassName', ['nginx'], {ingressClassName: 'nginx'}, true],
      ['unlisted spec.ingressClassName', ['nginx'], {ingressClassName: 'traefik'}, false],
      ['listed class from the deprecated kubernetes.io/ingress.class annotation', ['nginx'], {annotation: 'nginx'}, true],
      ['unlisted class from the deprecated annotation', ['nginx'], {annotation: 'traefik'}, false],
      ['spec.ingressClassName wins over the deprecated annotation', ['nginx'], {ingressClassName: 'nginx', annotation: 'traefik'}, true],
      ['no class with a non-empty list', ['nginx'], {}, false],
    ]
    for (const [title, classes, cls, monitored] of classCases) {
      it(`ingress_classes: ${title}`, () => {
        const annotations: Record<string, string> = {polycrate_endpoint_monitor: 'true'}
        if (cls.annotation) annotations['kubernetes.io/ingress.class'] = cls.annotation
        const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, hosts, {ingressClassName: cls.ingressClassName}), settings({ingress_classes: classes})))
        assert.equal(result.monitored, monitored)
        assert.equal(result.endpoints.length, monitored ? 1 : 0)
        if (!monitored) assert.match(result.skipReason ?? '', /endpoint_discovery\.ingress_classes/)
      })
    }

    const namespaceCases: Array<[string, Partial<EndpointDiscoverySettings>, string, boolean]> = [
      ['default ignore list skips kube-public', {}, 'kube-public', false],
      ['empty watch list = all namespaces', {}, 'apps', true],
      ['a watch list limits to its namespaces', {watch_namespaces: ['production']}, 'apps', false],
      ['a namespace on the watch list', {watch_namespaces: ['production']}, 'production', true],
      ['ignore wins over watch', {watch_namespaces: ['production'], ignore_namespaces: ['production']}, 'production', false],
    ]
    for (const [title, scope, namespace, monitored] of namespaceCases) {
      it(`namespace filter: ${title}`, () => {
        const result = checked(endpointsForIngress(ingress('web', namespace, {polycrate_endpoint_monitor: 'true'}, hosts), settings(scope)))
        assert.equal(result.monitored, monitored)
        assert.equal(result.endpoints.length, monitored ? 1 : 0)
      })
    }

    it('no problems are reported for sources out of scope, even with bad annotations', () => {
      const bad = {polycrate_endpoint_monitor: 'true', polycrate_endpoint_timeout: 'soon'}
      assert.deepEqual(endpointsForIngress(ingress('web', 'kube-system', bad, hosts), defaults).problems, [])
      assert.deepEqual(endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_timeout: 'soon'}, hosts), defaults).problems, [])
    })

    it('endpoint_discovery.enabled: false → nothing', () => {
      const result = endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true'}, hosts), settings({enabled: false}))
      assert.equal(result.monitored, false)
      assert.match(result.skipReason ?? '', /disabled/)
    })

    it('a source being deleted claims nothing', () => {
      const result = endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true'}, hosts, {deletionTimestamp: '2024-05-01T00:00:00Z'}), defaults)
      assert.equal(result.monitored, false)
      assert.deepEqual(result.endpoints, [])
      assert.match(result.skipReason ?? '', /being deleted/)
    })

    it('the typed objects of @kubernetes/client-node fit (Date timestamps become RFC 3339 strings)', () => {
      const typed: V1Ingress = {
        metadata: {name: 'web', namespace: 'apps', uid: 'u1', creationTimestamp: new Date('2024-03-04T05:06:07Z'), annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: [{host: 'app.example.com'}]},
      }
      const result = checked(endpointsForIngress(typed, defaults))
      assert.deepEqual(result.source, {kind: 'Ingress', name: 'web', namespace: 'apps', uid: 'u1', creationTimestamp: '2024-03-04T05:06:07Z'})
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('malformed annotations: a clear problem, the field falls back, the rest is unaffected', () => {
    const baseAnnotations: Record<string, string> = {
      polycrate_endpoint_monitor: 'true',
      polycrate_endpoint_path: '/health',
      polycrate_endpoint_timeout: '7',
      polycrate_endpoint_interval: '30',
      polycrate_endpoint_expected_status: '200,204',
    }
    const hosts = ['a.example.com', 'b.example.com']
    const source: Source = {kind: 'Ingress', name: 'web', namespace: 'apps'}
    const baseline = (overrides: Partial<EndpointSpec> = {}, only?: string) => hosts.map((host) =>
      spec(host, source, {path: '/health', timeout: 7, interval: 30, expectedStatusCodes: [200, 204], ...(only === undefined || only === host ? overrides : {})}))

    interface MalformedCase {
      title: string
      annotations: Record<string, string | undefined>
      mode?: EndpointDiscoverySettings['mode']
      reason: string
      mentions: Array<string | RegExp>
      expected: EndpointSpec[]
    }
    const cases: MalformedCase[] = [
      {title: 'host_config that is not JSON', annotations: {polycrate_endpoint_host_config: '{"a.example.com": {"path": "/a"'},
        reason: 'MalformedHostConfig', mentions: ['polycrate_endpoint_host_config', 'not valid JSON', 'overrides are ignored'], expected: baseline()},
      {title: 'host_config that is not an object', annotations: {polycrate_endpoint_host_config: '["a.example.com"]'},
        reason: 'MalformedHostConfig', mentions: ['an array', 'not a JSON object'], expected: baseline()},
      {title: 'host_config field of the wrong type (only that field is ignored)', annotations: {polycrate_endpoint_host_config: '{"a.example.com": {"timeout": "10", "path": "/a"}}'},
        reason: 'MalformedHostConfig', mentions: ['["a.example.com"].timeout', '"10" (a string)', 'whole JSON number from 1 to 300', 'field is ignored'],
        expected: baseline({path: '/a'}, 'a.example.com')},
      {title: 'host_config tls as a string', annotations: {polycrate_endpoint_host_config: '{"b.example.com": {"tls": "false", "port": 8443}}'},
        reason: 'MalformedHostConfig', mentions: ['.tls', 'JSON boolean'], expected: baseline({remotePort: 8443}, 'b.example.com')},
      {title: 'host_config expected_status out of range', annotations: {polycrate_endpoint_host_config: '{"a.example.com": {"expected_status": [200, 999]}}'},
        reason: 'MalformedHostConfig', mentions: ['expected_status', '100–599'], expected: baseline()},
      {title: 'host_config entry that is not an object', annotations: {polycrate_endpoint_host_config: '{"a.example.com": "fast"}'},
        reason: 'MalformedHostConfig', mentions: ['"fast" (a string)', 'entry is ignored'], expected: baseline()},
      {title: 'host_config with an unknown field', annotations: {polycrate_endpoint_host_config: '{"a.example.com": {"expected_statuses": [201]}}'},
        reason: 'MalformedHostConfig', mentions: ['unknown field "expected_statuses"'], expected: baseline()},
      {title: 'host_config for a host the source does not have', annotations: {polycrate_endpoint_host_config: '{"c.example.com": {"path": "/c"}}'},
        reason: 'UnknownHostInHostConfig', mentions: ['"c.example.com"', 'a.example.com, b.example.com', 'typo'], expected: baseline()},
      {title: 'non-numeric interval', annotations: {polycrate_endpoint_interval: 'often'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_interval "often"', 'whole number of seconds', 'default 60'], expected: baseline({interval: 60})},
      {title: 'interval 0', annotations: {polycrate_endpoint_interval: '0'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_interval "0"', 'from 1 to 86400'], expected: baseline({interval: 60})},
      {title: 'status code 999', annotations: {polycrate_endpoint_expected_status: '999'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_expected_status "999"', 'from 100 to 599', '"200,301"'], expected: baseline({expectedStatusCodes: [200]})},
      {title: 'status list with garbage', annotations: {polycrate_endpoint_expected_status: '200,ok,301'},
        reason: 'InvalidAnnotation', mentions: ['"200,ok,301"', 'comma-separated'], expected: baseline({expectedStatusCodes: [200]})},
      {title: 'negative timeout', annotations: {polycrate_endpoint_timeout: '-5'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_timeout "-5"', 'from 1 to 300', 'default 5'], expected: baseline({timeout: 5})},
      {title: 'timeout above the maximum of 300 s', annotations: {polycrate_endpoint_timeout: '301'},
        reason: 'InvalidAnnotation', mentions: ['"301"'], expected: baseline({timeout: 5})},
      {title: 'tls "yes"', annotations: {polycrate_endpoint_tls: 'yes'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_tls "yes"', '"true" or "false"', 'TLS on'], expected: baseline()},
      {title: 'port 70000', annotations: {polycrate_endpoint_port: '70000'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_port "70000"', 'from 1 to 65535'], expected: baseline()},
      {title: 'port 0', annotations: {polycrate_endpoint_port: '0'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_port "0"'], expected: baseline()},
      {title: 'path without leading slash', annotations: {polycrate_endpoint_path: 'healthz'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_path "healthz"', 'starting with "/"', 'default "/"'], expected: baseline({path: '/'})},
      {title: 'monitor "maybe" (auto mode: treated as not set → monitored)', annotations: {polycrate_endpoint_monitor: 'maybe'}, mode: 'auto',
        reason: 'InvalidAnnotation', mentions: ['polycrate_endpoint_monitor "maybe"', '"true"', '"false"', 'mode is auto'], expected: baseline()},
      {title: 'byoa without a K8sApp name', annotations: {polycrate_k8sapp_byoa: 'true'},
        reason: 'ByoaWithoutK8sApp', mentions: ['polycrate_k8sapp_byoa', 'polycrate_k8sapp_name'], expected: baseline()},
      {title: 'byoa "yes"', annotations: {polycrate_k8sapp_name: 'shop', polycrate_k8sapp_byoa: 'yes'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_k8sapp_byoa "yes"'], expected: baseline({k8sAppName: 'shop'})},
      {title: 'K8sApp name that is not a DNS name', annotations: {polycrate_k8sapp_name: 'My App'},
        reason: 'InvalidAnnotation', mentions: ['polycrate_k8sapp_name "My App"', 'DNS-1123'], expected: baseline()},
      {title: 'a malformed deprecated alias names the deprecated key', annotations: {polycrate_endpoint_timeout: undefined, 'endpoints.polycrate.io/timeout': 'ten'},
        reason: 'InvalidAnnotation', mentions: ['endpoints.polycrate.io/timeout "ten"'], expected: baseline({timeout: 5})},
    ]
    for (const c of cases) {
      it(c.title, () => {
        const annotations = {...baseAnnotations, ...c.annotations}
        const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, hosts), settings({mode: c.mode ?? 'annotation'})))
        assert.equal(result.monitored, true)
        assert.equal(result.problems.length, 1, JSON.stringify(result.problems))
        const [p] = result.problems
        assert.equal(p?.reason, c.reason)
        for (const m of c.mentions) {
          if (typeof m === 'string') assert.ok(p?.message.includes(m), `"${p?.message}" mentions ${m}`)
          else assert.match(p?.message ?? '', m)
        }
        assert.deepEqual(result.endpoints.map((e) => e.spec), c.expected)
      })
    }

    it('monitor "maybe" in annotation mode: a problem, and the source is not monitored', () => {
      const result = checked(endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'maybe'}, hosts), defaults))
      assert.equal(result.monitored, false)
      assert.deepEqual(result.problems.map((p) => p.reason), ['InvalidAnnotation'])
      assert.match(result.problems[0]?.message ?? '', /not monitored \(endpoint_discovery\.mode is annotation\)/)
    })

    it('several bad annotations give one problem each', () => {
      const annotations = {...baseAnnotations, polycrate_endpoint_timeout: 'x', polycrate_endpoint_port: '-1', polycrate_endpoint_tls: 'on'}
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, hosts), defaults))
      assert.deepEqual(result.problems.map((p) => p.message.split(' ')[0]), ['polycrate_endpoint_timeout', 'polycrate_endpoint_tls', 'polycrate_endpoint_port'])
      assert.deepEqual(result.endpoints.map((e) => e.spec), baseline({timeout: 5}))
    })

    it('blank values count as not set, without a problem; values are trimmed', () => {
      const annotations = {...baseAnnotations, polycrate_endpoint_timeout: '  ', polycrate_endpoint_interval: ' 45 ', polycrate_endpoint_expected_status: '200, 301,'}
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, hosts), defaults))
      assert.deepEqual(result.problems, [])
      assert.deepEqual(result.endpoints.map((e) => e.spec), baseline({timeout: 5, interval: 45, expectedStatusCodes: [200, 301]}))
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('hosts', () => {
    const on = {polycrate_endpoint_monitor: 'true'}
    const hostCases: Array<{title: string; hosts: Array<string | undefined>; endpoints: string[]; reasons: string[]; mention?: string}> = [
      {title: 'one Endpoint per distinct host, in rule order', hosts: ['b.example.com', 'a.example.com', 'b.example.com'], endpoints: ['b.example.com', 'a.example.com'], reasons: []},
      {title: 'a rule without host gives nothing, silently', hosts: [undefined, 'a.example.com'], endpoints: ['a.example.com'], reasons: []},
      {title: 'an empty host string is skipped with a problem', hosts: ['', 'a.example.com'], endpoints: ['a.example.com'], reasons: ['EmptyHost'], mention: 'spec.rules[0].host is empty'},
      {title: 'a wildcard host gives no Endpoint', hosts: ['*.example.com', 'a.example.com'], endpoints: ['a.example.com'], reasons: ['WildcardHost'], mention: 'spec.rules[0].host "*.example.com" is a wildcard host'},
      {title: 'an invalid host name', hosts: ['a.example.com', 'bad_host.example.com'], endpoints: ['a.example.com'], reasons: ['InvalidHost'], mention: '"bad_host.example.com" is not a valid host name'},
      {title: 'a host with a port', hosts: ['a.example.com:8443'], endpoints: [], reasons: ['InvalidHost'], mention: 'no port'},
      {title: 'upper-case hosts are lower-cased and deduplicated', hosts: ['App.Example.COM', 'app.example.com'], endpoints: ['app.example.com'], reasons: []},
    ]
    for (const c of hostCases) {
      it(c.title, () => {
        const result = checked(endpointsForIngress(ingress('web', 'apps', on, c.hosts), defaults))
        assert.deepEqual(result.endpoints.map((e) => e.host), c.endpoints)
        assert.deepEqual(result.problems.map((p) => p.reason), c.reasons)
        if (c.mention) assert.ok(result.problems[0]?.message.includes(c.mention), result.problems[0]?.message)
      })
    }

    it('a monitored Ingress with no usable host says why it has no endpoints', () => {
      const onlyWildcard = checked(endpointsForIngress(ingress('web', 'apps', on, ['*.example.com']), defaults))
      assert.equal(onlyWildcard.monitored, true)
      assert.deepEqual(onlyWildcard.endpoints, [])
      assert.match(onlyWildcard.skipReason ?? '', /none of the hosts/)
      const catchAll = checked(endpointsForIngress(ingress('web', 'apps', on, [undefined]), defaults))
      assert.match(catchAll.skipReason ?? '', /no rule of the Ingress has a host/)
      assert.deepEqual(catchAll.problems.map((p) => [p.type, p.reason]), [['Normal', 'NothingToMonitor']])
      // the wildcard's Warning already explains the empty result: no second Event
      assert.deepEqual(onlyWildcard.problems.map((p) => p.reason), ['WildcardHost'])
    })

    it('a monitored Ingress with no rules at all gets a Normal event saying there is nothing to monitor', () => {
      const noRules = checked(endpointsForIngress({metadata: {name: 'web', namespace: 'apps', uid: 'u1', annotations: on}, spec: {}}, defaults))
      assert.equal(noRules.monitored, true)
      assert.deepEqual(noRules.problems.map((p) => [p.type, p.reason]), [['Normal', 'NothingToMonitor']])
      assert.equal(noRules.problems[0]!.message, 'Ingress apps/web is monitored, but there is nothing to monitor: the Ingress has no rules (at most a default backend), so it has no host to check.')
      // not monitored → nothing said
      const off = endpointsForIngress({metadata: {name: 'web', namespace: 'apps', uid: 'u1'}, spec: {}}, defaults)
      assert.deepEqual(off.problems, [])
    })

    it('host_config may name a wildcard host of the source without being called a typo', () => {
      const annotations = {...on, polycrate_endpoint_host_config: '{"*.example.com": {"path": "/x"}}'}
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, ['*.example.com', 'a.example.com']), defaults))
      assert.deepEqual(result.problems.map((p) => p.reason), ['WildcardHost'])
    })

    it('host_config keys match hosts case-insensitively', () => {
      const annotations = {...on, polycrate_endpoint_host_config: '{"A.Example.com": {"path": "/a"}}'}
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, ['a.example.com']), defaults))
      assert.deepEqual(result.problems, [])
      assert.equal(result.endpoints[0]?.spec.path, '/a')
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('TLS and port of Ingress hosts', () => {
    const source: Source = {kind: 'Ingress', name: 'web', namespace: 'apps'}
    const cases: Array<[string, Record<string, string>, string[] | undefined, Partial<EndpointSpec>]> = [
      ['TLS on by default, port 443', {}, undefined, {}],
      ['a host in spec.tls is TLS', {}, ['a.example.com'], {}],
      ['polycrate_endpoint_tls "false" → http on 80', {polycrate_endpoint_tls: 'false'}, undefined, {tls: false, remotePort: 80}],
      ['explicit "false" wins even for a host in spec.tls', {polycrate_endpoint_tls: 'false'}, ['a.example.com'], {tls: false, remotePort: 80}],
      ['host_config "tls": false wins for a host in spec.tls', {polycrate_endpoint_host_config: '{"a.example.com": {"tls": false}}'}, ['a.example.com'], {tls: false, remotePort: 80}],
      ['host_config "tls": true wins over the annotation "false"', {polycrate_endpoint_tls: 'false', polycrate_endpoint_host_config: '{"a.example.com": {"tls": true}}'}, undefined, {}],
      ['polycrate_endpoint_port overrides the default', {polycrate_endpoint_port: '8443'}, undefined, {remotePort: 8443}],
      ['host_config port wins over the annotation', {polycrate_endpoint_port: '8443', polycrate_endpoint_host_config: '{"a.example.com": {"port": 9443}}'}, undefined, {remotePort: 9443}],
      ['tls "false" with a port keeps the port', {polycrate_endpoint_tls: 'false', polycrate_endpoint_port: '8080'}, undefined, {tls: false, remotePort: 8080}],
    ]
    for (const [title, annotations, tlsHosts, expected] of cases) {
      it(title, () => {
        const result = checked(endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true', ...annotations}, ['a.example.com'], {tls: tlsHosts}), defaults))
        assert.deepEqual(result.problems, [])
        assert.deepEqual(result.endpoints.map((e) => e.spec), [spec('a.example.com', source, expected)])
      })
    }

    it('interval defaults to endpoint_discovery.default_check_interval', () => {
      const result = endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true'}, ['a.example.com']), settings({default_check_interval: 120}))
      assert.equal(result.endpoints[0]?.spec.interval, 120)
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('deprecated aliases', () => {
    const source: Source = {kind: 'Ingress', name: 'web', namespace: 'apps'}
    it('endpoints.polycrate.io/* are used when the canonical annotation is absent', () => {
      const annotations = {
        polycrate_endpoint_monitor: 'true',
        'endpoints.polycrate.io/path': '/old',
        'endpoints.polycrate.io/timeout': '9',
        'endpoints.polycrate.io/interval': '90',
        'endpoints.polycrate.io/expected-status': '204',
        'endpoints.polycrate.io/tls': 'false',
        'endpoints.polycrate.io/port': '8080',
      }
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, ['a.example.com']), defaults))
      assert.deepEqual(result.problems, [])
      assert.deepEqual(specsByHost(result)['a.example.com'],
        spec('a.example.com', source, {path: '/old', timeout: 9, interval: 90, expectedStatusCodes: [204], tls: false, remotePort: 8080}))
    })

    it('the canonical annotation wins when both are set', () => {
      const annotations = {
        polycrate_endpoint_monitor: 'true',
        'endpoints.polycrate.io/path': '/old',
        polycrate_endpoint_path: '/new',
        'endpoints.polycrate.io/timeout': 'garbage',
        polycrate_endpoint_timeout: '3',
      }
      const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, ['a.example.com']), defaults))
      assert.deepEqual(result.problems, [], 'the shadowed deprecated value is not even parsed')
      assert.equal(result.endpoints[0]?.spec.path, '/new')
      assert.equal(result.endpoints[0]?.spec.timeout, 3)
    })

    const labelCases: Array<[string, Record<string, string>, string | undefined, boolean]> = [
      ['the deprecated label k8sapps.polycrate.io/name is read and flagged', {polycrate_endpoint_monitor: 'true'}, 'legacy-app', true],
      ['the annotation polycrate_k8sapp_name wins over the label (still flagged)', {polycrate_endpoint_monitor: 'true', polycrate_k8sapp_name: 'new-app'}, 'new-app', true],
    ]
    for (const [title, annotations, app, flagged] of labelCases) {
      it(title, () => {
        const result = checked(endpointsForIngress(ingress('web', 'apps', annotations, ['a.example.com'], {labels: {'k8sapps.polycrate.io/name': 'legacy-app'}}), defaults))
        assert.equal(result.endpoints[0]?.spec.k8sAppName, app)
        assert.equal(result.deprecatedLabelPresent, flagged)
      })
    }

    it('the label is not flagged on a source the operator does not manage', () => {
      const result = endpointsForIngress(ingress('web', 'apps', {}, ['a.example.com'], {labels: {'k8sapps.polycrate.io/name': 'x'}}), defaults)
      assert.equal(result.monitored, false)
      assert.equal(result.deprecatedLabelPresent, false)
    })

    it('without the label nothing is flagged', () => {
      assert.equal(endpointsForIngress(example1, defaults).deprecatedLabelPresent, false)
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('HTTPRoute', () => {
    const route = (
      annotations: Record<string, string>,
      parentRefs: NonNullable<HTTPRouteLike['spec']>['parentRefs'],
      hostnames: string[] = ['shop.example.com'],
      rules?: NonNullable<HTTPRouteLike['spec']>['rules'],
      meta: {name?: string; namespace?: string; creationTimestamp?: string} = {},
    ): HTTPRouteLike => ({
      metadata: {name: meta.name ?? 'shop', namespace: meta.namespace ?? 'shop', uid: `uid-${meta.name ?? 'shop'}`, creationTimestamp: meta.creationTimestamp ?? '2024-06-01T00:00:00Z',
        annotations: {polycrate_endpoint_monitor: 'true', ...annotations}},
      spec: {parentRefs, hostnames, rules},
    })
    const gw: GatewayLike = {
      metadata: {name: 'gw', namespace: 'shop'},
      spec: {gatewayClassName: 'eg', listeners: [
        {name: 'http', port: 8080, protocol: 'HTTP'},
        {name: 'https', port: 8443, protocol: 'HTTPS'},
        {name: 'tcp', port: 5432, protocol: 'TCP'},
      ]},
    }
    const plainOnly: GatewayLike = {metadata: {name: 'plain', namespace: 'shop'}, spec: {gatewayClassName: 'eg', listeners: [{name: 'web', port: 8000, protocol: 'HTTP'}]}}
    const other: GatewayLike = {metadata: {name: 'other', namespace: 'infra'}, spec: {gatewayClassName: 'istio', listeners: [{name: 'https', port: 443, protocol: 'HTTPS'}]}}
    const gateways = gatewayMap(gw, plainOnly, other)
    const source: Source = {kind: 'HTTPRoute', name: 'shop', namespace: 'shop'}

    const cases: Array<{title: string; route: HTTPRouteLike; settings?: Partial<EndpointDiscoverySettings>; expected: Partial<EndpointSpec> | undefined; reasons?: string[]; skip?: RegExp}> = [
      {title: 'no sectionName: the first HTTPS listener (even after an HTTP one)', route: route({}, [{name: 'gw'}]), expected: {remotePort: 8443}},
      {title: 'sectionName selects the HTTP listener → plain http', route: route({}, [{name: 'gw', sectionName: 'http'}]), expected: {tls: false, remotePort: 8080}},
      {title: 'no HTTPS listener: the first HTTP listener', route: route({}, [{name: 'plain'}]), expected: {tls: false, remotePort: 8000}},
      {title: 'parentRef port narrows the listeners', route: route({}, [{name: 'gw', port: 8080}]), expected: {tls: false, remotePort: 8080}},
      {title: 'parentRef namespace defaults to the route\'s; a cross-namespace ref works', route: route({}, [{name: 'other', namespace: 'infra'}]), expected: {remotePort: 443}},
      {title: 'annotation tls "false" overrides an HTTPS listener (port then 80)', route: route({polycrate_endpoint_tls: 'false'}, [{name: 'gw'}]), expected: {tls: false, remotePort: 80}},
      {title: 'annotation port overrides the listener port', route: route({polycrate_endpoint_port: '9000'}, [{name: 'gw'}]), expected: {remotePort: 9000}},
      {title: 'host_config port and tls override the listener', route: route({polycrate_endpoint_host_config: '{"shop.example.com": {"port": 81, "tls": false}}'}, [{name: 'gw'}]), expected: {tls: false, remotePort: 81}},
      {title: 'timeout / interval / status annotations apply as on an Ingress', route: route({polycrate_endpoint_timeout: '12', polycrate_endpoint_interval: '20', polycrate_endpoint_expected_status: '200,401'}, [{name: 'gw'}]),
        expected: {remotePort: 8443, timeout: 12, interval: 20, expectedStatusCodes: [200, 401]}},
      {title: 'path: the first PathPrefix match', route: route({}, [{name: 'gw'}], undefined, [{matches: [{path: {type: 'Exact', value: '/exact'}}, {path: {type: 'PathPrefix', value: '/api'}}]}]),
        expected: {remotePort: 8443, path: '/api'}},
      {title: 'path: the annotation wins over the rules', route: route({polycrate_endpoint_path: '/healthz'}, [{name: 'gw'}], undefined, [{matches: [{path: {type: 'PathPrefix', value: '/api'}}]}]),
        expected: {remotePort: 8443, path: '/healthz'}},
      {title: 'path: only Exact/RegularExpression matches → "/"', route: route({}, [{name: 'gw'}], undefined, [{matches: [{path: {type: 'Exact', value: '/x'}}]}]),
        expected: {remotePort: 8443, path: '/'}},
      {title: 'a parentRef of another kind is ignored', route: route({}, [{name: 'svc', kind: 'Service', group: ''}, {name: 'gw'}]), expected: {remotePort: 8443}},
      {title: 'two parents, one missing: endpoints through the other, a problem for the missing one', route: route({}, [{name: 'gone'}, {name: 'gw'}]),
        expected: {remotePort: 8443}, reasons: ['GatewayNotFound']},
      {title: 'gateway_classes: the parent\'s class is listed', route: route({}, [{name: 'gw'}]), settings: {gateway_classes: ['eg']}, expected: {remotePort: 8443}},
      {title: 'gateway_classes: the first parent of a listed class decides', route: route({}, [{name: 'other', namespace: 'infra'}, {name: 'gw'}]), settings: {gateway_classes: ['eg']}, expected: {remotePort: 8443}},
      {title: 'gateway_classes: no parent of a listed class → not in scope', route: route({}, [{name: 'other', namespace: 'infra'}]), settings: {gateway_classes: ['eg']},
        expected: undefined, skip: /GatewayClass in endpoint_discovery\.gateway_classes \(eg\)/},
      {title: 'gateway_classes: a missing parent is still reported', route: route({}, [{name: 'gone'}]), settings: {gateway_classes: ['eg']}, expected: undefined, reasons: ['GatewayNotFound'], skip: /could be resolved/},
      {title: 'missing parent Gateway → a problem and no endpoints', route: route({}, [{name: 'gone', namespace: 'elsewhere'}]), expected: undefined, reasons: ['GatewayNotFound'], skip: /could be resolved/},
      {title: 'sectionName of a listener that does not exist', route: route({}, [{name: 'gw', sectionName: 'httpz'}]), expected: undefined, reasons: ['ListenerNotFound'], skip: /could be resolved/},
      {title: 'sectionName of a TCP listener', route: route({}, [{name: 'gw', sectionName: 'tcp'}]), expected: undefined, reasons: ['ListenerNotFound']},
      {title: 'no Gateway parent at all → a Normal "nothing to monitor"', route: route({}, []), expected: undefined, reasons: ['NothingToMonitor'], skip: /no parentRef of kind Gateway/},
      {title: 'empty spec.hostnames → no endpoint, a Normal "nothing to monitor"', route: route({}, [{name: 'gw'}], []), expected: undefined, reasons: ['NothingToMonitor'], skip: /spec\.hostnames is empty/},
      {title: 'a wildcard hostname', route: route({}, [{name: 'gw'}], ['*.example.com']), expected: undefined, reasons: ['WildcardHost'], skip: /none of the hostnames/},
      {title: 'not opted in (annotation mode)', route: {...route({}, [{name: 'gw'}]), metadata: {name: 'shop', namespace: 'shop'}}, expected: undefined, skip: /does not have polycrate_endpoint_monitor: "true"/},
    ]
    for (const c of cases) {
      it(c.title, () => {
        const result = checked(endpointsForHTTPRoute(c.route, gateways, classOf, settings(c.settings)))
        assert.deepEqual(result.problems.map((p) => p.reason), c.reasons ?? [])
        assert.deepEqual(result.endpoints.map((e) => e.spec), c.expected ? [spec('shop.example.com', source, c.expected)] : [])
        if (c.skip) assert.match(result.skipReason ?? '', c.skip)
        else if (c.expected) assert.equal(result.skipReason, undefined)
      })
    }

    it('the missing-Gateway problem names the Gateway', () => {
      const result = endpointsForHTTPRoute(route({}, [{name: 'gone', namespace: 'elsewhere'}]), gateways, classOf, defaults)
      assert.match(result.problems[0]?.message ?? '', /parent Gateway elsewhere\/gone does not exist/)
    })

    it('the ListenerNotFound problem lists the listeners', () => {
      const result = endpointsForHTTPRoute(route({}, [{name: 'gw', sectionName: 'httpz'}]), gateways, classOf, defaults)
      assert.match(result.problems[0]?.message ?? '', /no listener named "httpz" \(its listeners: http, https, tcp\)/)
    })

    it('the same malformed-annotation handling as an Ingress', () => {
      const result = checked(endpointsForHTTPRoute(route({polycrate_endpoint_tls: 'yes', polycrate_endpoint_path: 'x'}, [{name: 'gw'}]), gateways, classOf, defaults))
      assert.deepEqual(result.problems.map((p) => p.reason), ['InvalidAnnotation', 'InvalidAnnotation'])
      assert.match(result.problems[0]?.message ?? '', /first PathPrefix/)
      assert.match(result.problems[1]?.message ?? '', /TLS setting of the Gateway listener/)
      assert.deepEqual(result.endpoints.map((e) => e.spec), [spec('shop.example.com', source, {remotePort: 8443})])
    })

    it('a namespace outside the filter is skipped before its Gateways are looked at', () => {
      const result = endpointsForHTTPRoute(route({}, [{name: 'gone'}], undefined, undefined, {namespace: 'kube-system'}), gateways, classOf, defaults)
      assert.equal(result.monitored, false)
      assert.deepEqual(result.problems, [])
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('resolveHostClaims', () => {
    const on = {polycrate_endpoint_monitor: 'true'}
    const oldIngress = endpointsForIngress(ingress('old', 'apps', on, ['shared.example.com', 'old.example.com'], {creationTimestamp: '2023-01-01T00:00:00Z'}), defaults)
    const newIngress = endpointsForIngress(ingress('new', 'apps', on, ['shared.example.com', 'new.example.com'], {creationTimestamp: '2024-01-01T00:00:00Z'}), defaults)
    const newestRoute = endpointsForHTTPRoute({
      metadata: {name: 'route', namespace: 'apps', creationTimestamp: '2025-01-01T00:00:00Z', annotations: on},
      spec: {parentRefs: [{name: 'acme-shop-https', namespace: 'envoy-gateway-system'}], hostnames: ['shared.example.com']},
    }, gatewayMap(envoyGateway), classOf, defaults)
    const elsewhere = endpointsForIngress(ingress('new', 'other', on, ['shared.example.com'], {creationTimestamp: '2022-01-01T00:00:00Z'}), defaults)

    const owner = (endpoints: DesiredEndpoint[], namespace: string, host: string) =>
      endpoints.find((e) => e.namespace === namespace && e.host === host)?.source.name

    it('HTTPRoute beats Ingress regardless of age', () => {
      const {endpoints, conflicts} = resolveHostClaims([oldIngress, newestRoute])
      assert.equal(owner(endpoints, 'apps', 'shared.example.com'), 'route')
      assert.equal(endpoints.find((e) => e.host === 'shared.example.com')?.spec.source?.kind, 'HTTPRoute')
      assert.deepEqual(conflicts.map((c) => [c.loser.name, c.winner.name, c.host, c.problem.reason]), [['old', 'route', 'shared.example.com', 'HostClaimedElsewhere']])
      assert.match(conflicts[0]?.problem.message ?? '', /already monitored through HTTPRoute apps\/route \(an HTTPRoute takes precedence/)
    })

    it('the older Ingress beats the newer', () => {
      const {endpoints, conflicts} = resolveHostClaims([newIngress, oldIngress])
      assert.equal(owner(endpoints, 'apps', 'shared.example.com'), 'old')
      assert.deepEqual(endpoints.map((e) => e.host).sort(), ['new.example.com', 'old.example.com', 'shared.example.com'])
      assert.deepEqual(conflicts.map((c) => [c.loser.name, c.winner.name]), [['new', 'old']])
      assert.match(conflicts[0]?.problem.message ?? '', /Ingress apps\/old \(the older source wins: it was created 2023-01-01T00:00:00Z, this one 2024-01-01T00:00:00Z\)/)
    })

    it('same age: the name decides', () => {
      const a = endpointsForIngress(ingress('a', 'apps', on, ['x.example.com']), defaults)
      const b = endpointsForIngress(ingress('b', 'apps', on, ['x.example.com']), defaults)
      assert.equal(owner(resolveHostClaims([b, a]).endpoints, 'apps', 'x.example.com'), 'a')
    })

    it('input order does not matter', () => {
      const inputs = [oldIngress, newIngress, newestRoute, elsewhere]
      const expected = resolveHostClaims(inputs)
      for (const order of permutations(inputs)) assert.deepEqual(resolveHostClaims(order), expected)
      for (const e of expected.endpoints) assertValidEndpoint(e)
    })

    it('different namespaces do not conflict', () => {
      const {endpoints, conflicts} = resolveHostClaims([newIngress, elsewhere])
      assert.deepEqual(conflicts, [])
      assert.equal(owner(endpoints, 'apps', 'shared.example.com'), 'new')
      assert.equal(owner(endpoints, 'other', 'shared.example.com'), 'new')
    })

    it('a source being deleted claims nothing, so the other keeps the host', () => {
      const deleting = endpointsForIngress(ingress('old', 'apps', on, ['shared.example.com'], {creationTimestamp: '2020-01-01T00:00:00Z', deletionTimestamp: '2024-05-01T00:00:00Z'}), defaults)
      const {endpoints, conflicts} = resolveHostClaims([deleting, newIngress])
      assert.equal(owner(endpoints, 'apps', 'shared.example.com'), 'new')
      assert.deepEqual(conflicts, [])
    })

    it('two different hosts with the same CR name both get an Endpoint (the later one with a hash suffix)', () => {
      const a = endpointsForIngress(ingress('a', 'apps', on, ['a-b.example.com'], {creationTimestamp: '2023-01-01T00:00:00Z'}), defaults)
      const b = endpointsForIngress(ingress('b', 'apps', on, ['a.b-example.com'], {creationTimestamp: '2024-01-01T00:00:00Z'}), defaults)
      const {endpoints, conflicts} = resolveHostClaims([b, a])
      assert.deepEqual(conflicts, [])
      assert.deepEqual(endpoints.map((e) => [e.host, e.name]), [
        ['a-b.example.com', 'a-b-example-com'],
        ['a.b-example.com', endpointNameWithHash('a.b-example.com')],
      ])
      assert.match(endpoints[1]?.name ?? '', /^a-b-example-com-[0-9a-f]{8}$/)
    })
  })

  // -------------------------------------------------------------------------------------------------------------
  describe('Endpoint CR names', () => {
    const cases: Array<[string, string]> = [
      ['app.example.com', 'app-example-com'],
      ['APP.Example.Com', 'app-example-com'],
      ['my-app.example.com', 'my-app-example-com'],
      ['xn--bcher-kva.example', 'xn--bcher-kva-example'],
      ['localhost', 'localhost'],
    ]
    for (const [host, name] of cases) it(`${host} → ${name}`, () => assert.equal(endpointName(host), name))

    it('the longest valid host (253 characters) gives a valid name of the same length', () => {
      const host = [...Array(4)].map((_, i) => `${String(i)}${'a'.repeat(62)}`).join('.').slice(0, 253)
      const result = checked(endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true'}, [host]), defaults))
      assert.equal(result.endpoints[0]?.name, host.replace(/\./g, '-'))
      assert.equal(result.endpoints[0]?.name.length, 253)
    })

    it('a host over 253 characters is an invalid host, and its name would still be valid with a hash suffix', () => {
      const host = `${'a'.repeat(60)}.`.repeat(5) + 'example.com'
      const result = checked(endpointsForIngress(ingress('web', 'apps', {polycrate_endpoint_monitor: 'true'}, [host]), defaults))
      assert.deepEqual(result.problems.map((p) => p.reason), ['InvalidHost'])
      const name = endpointName(host)
      assert.ok(name.length <= 253 && dnsSubdomain.test(name), name)
      assert.match(name, /-[0-9a-f]{8}$/)
      assert.notEqual(endpointName(`${host}x`), name, 'different hosts, different hashes')
    })

    it('characters that are not allowed are replaced, with a hash suffix', () => {
      const name = endpointName('_weird_.Example.com.')
      assert.ok(dnsSubdomain.test(name), name)
      assert.match(name, /^weird--example-com-[0-9a-f]{8}$/)
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------

function gatewayMap(...gateways: GatewayLike[]): ReadonlyMap<string, GatewayLike> {
  return new Map(gateways.map((g) => [`${g.metadata?.namespace}/${g.metadata?.name}`, g]))
}

function classOf(gateway: GatewayLike): string | undefined {
  return gateway.spec?.gatewayClassName
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]]
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]))
}
