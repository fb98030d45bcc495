import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../../src/crds/operatorconfig.js'
import {parseExplainTarget, renderExplanation} from '../../../../src/cli/explain-view.js'
import {explainEndpoints, type ExplainContext} from '../../../../src/operator/kinds/endpoint/endpoint.explain.js'
import type {EndpointDiscoverySettings, GatewayLike, HTTPRouteLike, IngressLike} from '../../../../src/operator/kinds/endpoint/endpoint.types.js'

const defaults: EndpointDiscoverySettings = operatorConfigSpec.parse({}).endpoint_discovery
const on = {polycrate_endpoint_monitor: 'true'}
const ingress = (name: string, hosts: Array<string | undefined>, annotations: Record<string, string> = on, extra: Partial<IngressLike['spec']> = {}, created = '2026-01-01T00:00:00Z'): IngressLike => ({
  metadata: {name, namespace: 'apps', uid: `uid-${name}`, creationTimestamp: created, annotations},
  spec: {...extra, rules: hosts.map((host) => (host === undefined ? {} : {host}))},
})
const gateway: GatewayLike = {metadata: {name: 'gw', namespace: 'infra'}, spec: {gatewayClassName: 'eg', listeners: [{name: 'https', protocol: 'HTTPS', port: 8443}]}}
const route = (name: string, hostnames: string[], annotations: Record<string, string> = on): HTTPRouteLike => ({
  metadata: {name, namespace: 'apps', uid: `uid-${name}`, creationTimestamp: '2026-02-01T00:00:00Z', annotations},
  spec: {parentRefs: [{name: 'gw', namespace: 'infra'}], hostnames, rules: [{matches: [{path: {type: 'PathPrefix', value: '/shop'}}]}]},
})
const context = (overrides: Partial<ExplainContext> = {}, settings: Partial<EndpointDiscoverySettings> = {}): ExplainContext => ({
  settings: {...defaults, ...settings}, ingresses: [], routes: [], gateways: new Map([['infra/gw', gateway]]), ...overrides,
})

describe('explain (pure): per host monitored or why not, every setting with its origin', () => {
  describe('why a host is not monitored', () => {
    const cases: Array<{name: string; target: IngressLike; settings?: Partial<EndpointDiscoverySettings>; reason: RegExp}> = [
      {name: 'mode annotation, no monitor annotation', target: ingress('web', ['a.example.com'], {}), reason: /endpoint_discovery\.mode is annotation and the Ingress does not have polycrate_endpoint_monitor: "true"/},
      {name: 'opted out', target: ingress('web', ['a.example.com'], {polycrate_endpoint_monitor: 'false'}), settings: {mode: 'auto'}, reason: /opted out \(polycrate_endpoint_monitor: "false"\)/},
      {name: 'class filter', target: ingress('web', ['a.example.com'], on, {ingressClassName: 'traefik'}), settings: {ingress_classes: ['nginx']}, reason: /ingress class "traefik" is not in endpoint_discovery\.ingress_classes \(nginx\)/},
      {name: 'namespace filter', target: ingress('web', ['a.example.com']), settings: {ignore_namespaces: ['apps']}, reason: /namespace "apps" is not watched/},
      {name: 'discovery disabled', target: ingress('web', ['a.example.com']), settings: {enabled: false}, reason: /endpoint discovery is disabled/},
    ]
    for (const c of cases) {
      it(c.name, () => {
        const explained = explainEndpoints({kind: 'Ingress', object: c.target}, context({}, c.settings))
        assert.equal(explained.monitored, false)
        assert.deepEqual(explained.hosts.map((h) => [h.host, h.monitored]), [['a.example.com', false]])
        assert.match(explained.hosts[0]!.reason!, c.reason)
        assert.match(explained.reason!, c.reason)
      })
    }

    it('a wildcard host is not monitored (with its problem); the other host is', () => {
      const explained = explainEndpoints({kind: 'Ingress', object: ingress('web', ['*.example.com', 'a.example.com'])}, context())
      assert.equal(explained.monitored, true)
      const [wildcard, plain] = explained.hosts
      assert.deepEqual([wildcard!.host, wildcard!.monitored], ['*.example.com', false])
      assert.match(wildcard!.reason!, /wildcard/i)
      assert.deepEqual([plain!.host, plain!.monitored, plain!.endpoint], ['a.example.com', true, 'apps/a-example-com'])
      assert.deepEqual(explained.problems.map((p) => p.reason), ['WildcardHost'])
    })

    it('a host claimed by another source of the namespace (an HTTPRoute wins over an Ingress)', () => {
      const explained = explainEndpoints({kind: 'Ingress', object: ingress('web', ['shop.example.com', 'a.example.com'])}, context({routes: [route('shop', ['shop.example.com'])]}))
      const shop = explained.hosts.find((h) => h.host === 'shop.example.com')!
      assert.equal(shop.monitored, false)
      assert.match(shop.reason!, /^claimed by HTTPRoute apps\/shop: .*an HTTPRoute takes precedence over an Ingress/)
      assert.equal(explained.hosts.find((h) => h.host === 'a.example.com')!.monitored, true)
      assert.deepEqual(explained.problems.map((p) => p.reason), ['HostClaimedElsewhere'])
      // and from the HTTPRoute's side the host is its own
      const fromRoute = explainEndpoints({kind: 'HTTPRoute', object: route('shop', ['shop.example.com'])}, context({ingresses: [ingress('web', ['shop.example.com'])]}))
      assert.deepEqual(fromRoute.hosts.map((h) => [h.host, h.monitored]), [['shop.example.com', true]])
    })

    it('an older Ingress keeps a host; the newer one is told who has it', () => {
      const older = ingress('old', ['a.example.com'], on, {}, '2025-01-01T00:00:00Z')
      const explained = explainEndpoints({kind: 'Ingress', object: ingress('new', ['a.example.com'])}, context({ingresses: [older]}))
      assert.match(explained.hosts[0]!.reason!, /^claimed by Ingress apps\/old: .*the older source wins/)
    })
  })

  it('settings and where they came from: host_config, annotation, deprecated alias, OperatorConfig, default; a bad value falls back', () => {
    const annotations = {
      ...on,
      polycrate_endpoint_path: '/healthz',
      'endpoints.polycrate.io/timeout': '9',
      polycrate_endpoint_expected_status: '20x',
      polycrate_endpoint_host_config: '{"b.example.com": {"port": 8443, "interval": 15}}',
      polycrate_k8sapp_name: 'shop',
    }
    const explained = explainEndpoints({kind: 'Ingress', object: ingress('web', ['a.example.com', 'b.example.com'], annotations)}, context({}, {default_check_interval: 45}))
    const settings = (host: string) => explained.hosts.find((h) => h.host === host)!.settings!
    assert.deepEqual(settings('a.example.com'), {
      path: {value: '/healthz', from: 'annotation polycrate_endpoint_path'},
      tls: {value: true, from: 'default (TLS on)'},
      port: {value: 443, from: 'default (443 with TLS)'},
      timeout: {value: 9, from: 'deprecated annotation endpoints.polycrate.io/timeout (use polycrate_endpoint_timeout)'},
      interval: {value: 45, from: 'OperatorConfig endpoint_discovery.default_check_interval'},
      expectedStatusCodes: {value: [200], from: 'default (200)'},
      k8sAppName: {value: 'shop', from: 'annotation polycrate_k8sapp_name'},
    })
    assert.deepEqual(settings('b.example.com').port, {value: 8443, from: 'host_config (polycrate_endpoint_host_config)'})
    assert.deepEqual(settings('b.example.com').interval, {value: 15, from: 'host_config (polycrate_endpoint_host_config)'})
    assert.deepEqual(explained.problems.map((p) => p.reason), ['InvalidAnnotation'])
    assert.match(explained.problems[0]!.message, /polycrate_endpoint_expected_status "20x" is not valid/)
  })

  it('an HTTPRoute: TLS and port from the Gateway listener, path from its rules', () => {
    const explained = explainEndpoints({kind: 'HTTPRoute', object: route('shop', ['shop.example.com'])}, context())
    const settings = explained.hosts[0]!.settings!
    assert.deepEqual(settings.tls, {value: true, from: 'Gateway listener'})
    assert.deepEqual(settings.port, {value: 8443, from: 'Gateway listener'})
    assert.deepEqual(settings.path, {value: '/shop', from: 'HTTPRoute rules (first PathPrefix match, else "/")'})
    assert.equal(explained.decision.ingressClass, undefined)
  })

  it('renders a readable report', () => {
    const explained = explainEndpoints({kind: 'Ingress', object: ingress('web', ['*.example.com', 'a.example.com'])}, context())
    const text = renderExplanation({...explained, operatorConfig: {namespace: 'polycrate', name: 'default', found: false}})
    assert.match(text, /^Ingress apps\/web\n/)
    assert.match(text, /OperatorConfig:\s+polycrate\/default \(not found: the defaults apply\)/)
    assert.match(text, /monitor:\s+polycrate_endpoint_monitor: "true"/)
    assert.match(text, /a\.example\.com: monitored → Endpoint apps\/a-example-com/)
    assert.match(text, /path\s+\/\s+default \(\/\)/)
    assert.match(text, /\*\.example\.com: not monitored — /)
    assert.match(text, /- WildcardHost: /)
  })

  it('parses ingress/<name> and httproute/<name> (and their plurals)', () => {
    assert.deepEqual(parseExplainTarget('ingress/web'), {kind: 'ingress', name: 'web'})
    assert.deepEqual(parseExplainTarget('Ingresses/web'), {kind: 'ingress', name: 'web'})
    assert.deepEqual(parseExplainTarget('httproute.gateway.networking.k8s.io/shop'), {kind: 'httproute', name: 'shop'})
    assert.equal(parseExplainTarget('service/web'), undefined)
    assert.equal(parseExplainTarget('web'), undefined)
  })
})
