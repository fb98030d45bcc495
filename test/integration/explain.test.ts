import assert from 'node:assert/strict'
import {runCommand} from '@oclif/test'
import type {ExplainReport} from '../../src/cli/explain-view.js'
import type {KubeClient} from '../../src/kube/client.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'

describe('polycrate operator explain (live objects and OperatorConfig, no operator running)', function () {
  this.timeout(60_000)
  let client: KubeClient
  let apps: string
  let operatorNamespace: string
  const kubeconfig = () => controlPlane().kubeconfigPath

  before(async () => {
    await ensureCrds()
    client = adminClient()
    apps = await freshNamespace(client, 'explain')
    operatorNamespace = await freshNamespace(client, 'explainop')
    await client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: operatorNamespace}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: operatorNamespace},
      spec: {endpoint_discovery: {default_check_interval: 45, ingress_classes: ['nginx']}},
    })
    const ingress = (name: string, hosts: string[], annotations: Record<string, string>, ingressClassName = 'nginx') =>
      client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: apps}, {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name, namespace: apps, annotations},
        spec: {ingressClassName, rules: hosts.map((host) => ({host}))},
      })
    await ingress('first', ['shared.example.com'], {polycrate_endpoint_monitor: 'true'})
    await new Promise((resolve) => setTimeout(resolve, 1100)) // a later creationTimestamp (whole seconds)
    await ingress('web', ['shared.example.com', 'web.example.com', '*.example.com'], {
      polycrate_endpoint_monitor: 'true', 'endpoints.polycrate.io/path': '/healthz', polycrate_endpoint_host_config: '{"web.example.com": {"timeout": 12}}',
    })
    await ingress('traefik-one', ['t.example.com'], {polycrate_endpoint_monitor: 'true'}, 'traefik')
  })
  after(() => client.close())

  const explain = (...args: string[]) => runCommand(['operator', 'explain', ...args, '--kubeconfig', kubeconfig(), '--operator-namespace', operatorNamespace])

  it('--json: per host monitored or why not, each setting with its origin, the problems', async () => {
    const {stdout, error} = await explain('ingress/web', '-n', apps, '--json')
    assert.equal(error, undefined, error?.message)
    const report = JSON.parse(stdout) as ExplainReport
    assert.deepEqual(report.operatorConfig, {namespace: operatorNamespace, name: 'default', found: true})
    assert.equal(report.monitored, true)
    const byHost = new Map(report.hosts.map((h) => [h.host, h]))
    assert.match(byHost.get('shared.example.com')!.reason!, new RegExp(`^claimed by Ingress ${apps}/first: .*the older source wins`))
    assert.match(byHost.get('*.example.com')!.reason!, /wildcard/i)
    const web = byHost.get('web.example.com')!
    assert.equal(web.endpoint, `${apps}/web-example-com`)
    assert.deepEqual(web.settings!.path, {value: '/healthz', from: 'deprecated annotation endpoints.polycrate.io/path (use polycrate_endpoint_path)'})
    assert.deepEqual(web.settings!.timeout, {value: 12, from: 'host_config (polycrate_endpoint_host_config)'})
    assert.deepEqual(web.settings!.interval, {value: 45, from: 'OperatorConfig endpoint_discovery.default_check_interval'})
    assert.deepEqual(report.problems.map((p) => p.reason).sort(), ['HostClaimedElsewhere', 'WildcardHost'])
  })

  it('text: the class filter of the live OperatorConfig', async () => {
    const {stdout, error} = await explain('ingress/traefik-one', '-n', apps)
    assert.equal(error, undefined, error?.message)
    assert.match(stdout, new RegExp(`^Ingress ${apps}/traefik-one`))
    assert.match(stdout, /ingress class:\s+traefik/)
    assert.match(stdout, /t\.example\.com: not monitored — ingress class "traefik" is not in endpoint_discovery\.ingress_classes \(nginx\)/)
  })

  it('a missing object exits 1 saying so; a target that is not ingress/… or httproute/… exits 2', async () => {
    const missing = await explain('ingress/nope', '-n', apps)
    assert.equal(missing.error?.oclif?.exit, 1)
    assert.match(missing.error!.message, new RegExp(`Ingress ${apps}/nope not found`))
    const bad = await explain('service/web', '-n', apps)
    assert.equal(bad.error?.oclif?.exit, 2)
  })
})
