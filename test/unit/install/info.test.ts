import assert from 'node:assert/strict'
import {clusterInfo, featureWhy, givenSpec, leafSettings, settingText, valuesInfo} from '../../../src/operator/install/info.js'
import {installPlan} from '../../../src/operator/install/objects.js'
import {parseBlockValues} from '../../../src/operator/install/values.js'
import {validateOperatorConfig, type OperatorConfig} from '../../../src/operator/config/operator-config.js'
import {operatorFeatureSwitches, operatorPermissions} from '../../../src/operator/operator.js'

const defaults = (() => {
  const result = validateOperatorConfig({})
  if (!result.ok) throw new Error('defaults')
  return result.config
})()
const config = (spec: object): OperatorConfig => {
  const result = validateOperatorConfig(spec)
  if (!result.ok) throw new Error(result.problems.join())
  return result.config
}

/** The block README's full example, and a secrets.poly with the token. */
const FULL_EXAMPLE = {
  namespace: 'polycrate',
  deployment: {replicas: 1},
  operator_config: {
    name: 'default',
    api_sync: {enabled: true, api_url: 'https://api.polycrate.io', sync_interval_seconds: 30, credentials: {api_token: 'super-secret-token'}},
    local_cluster: {enabled: true, cluster_name: 'production-cluster'},
    endpoint_discovery: {enabled: true, ignore_namespaces: ['kube-system', 'kube-public'], default_check_interval: 30},
    agent: {enabled: true, check_interval_seconds: 30},
    artifact_discovery: {enabled: true, registry_filter: {include_registries: ['cargo.ayedo.cloud', 'docker.io']}},
  },
}

describe('info: the configuration in force, with where each value comes from', () => {
  it('leaves of the effective config, set where given, lists as leaves', () => {
    const settings = leafSettings({a: {b: 1, c: [1, 2]}, d: {e: true}}, {a: {c: [1, 2]}})
    assert.deepEqual(settings, [
      {path: 'a.b', value: '1', from: 'default'},
      {path: 'a.c', value: '1, 2', from: 'set'},
      {path: 'd.e', value: 'true', from: 'default'},
    ])
  })

  it('secrets never show: passwords and tokens redacted, names of Secrets and keys shown', () => {
    assert.equal(settingText('hunter2', 'image_credentials.password'), '(redacted)')
    assert.equal(settingText('t0k3n', 'api_sync.credentials.api_token'), '(redacted)')
    assert.equal(settingText('', 'image_credentials.password'), '""')
    assert.equal(settingText('polycrate-api-token', 'api_sync.credentials_ref.secret_name'), 'polycrate-api-token')
    assert.equal(settingText('token', 'api_sync.credentials_ref.token_key'), 'token')
  })

  const features = operatorFeatureSwitches()
  const feature = (name: string) => features.find((f) => f.name === name)!
  const whys: Array<[string, object, object, boolean, string]> = [
    ['endpoint-discovery, on by default', {}, {}, true, 'endpoint_discovery.enabled: true (default)'],
    ['certificate-sync: needs API sync and discovery', {api_sync: {enabled: true, api_url: 'https://a'}}, {api_sync: {enabled: true}}, true, 'api_sync.enabled: true (set), certificate_discovery.enabled: true (default)'],
    ['certificate-sync off: API sync off', {}, {}, false, 'api_sync.enabled: false (default)'],
    ['cloud-node off by default', {}, {}, false, 'cloud_controller.enabled: false (default)'],
    ['cnpg backups off by a setting', {backup_discovery: {cnpg_enabled: false}}, {backup_discovery: {cnpg_enabled: false}}, false, 'backup_discovery.cnpg_enabled: false (set)'],
  ]
  const names: Record<string, string> = {'endpoint-discovery': 'endpoint-discovery', 'certificate-sync': 'certificate-sync', 'certificate-sync off': 'certificate-sync', 'cloud-node': 'cloud-node', 'cnpg backups': 'cnpg-backup-discovery'}
  for (const [title, spec, given, on, why] of whys) {
    it(`feature ${title}: ${on ? 'on' : 'off'} because ${why}`, () => {
      const name = Object.entries(names).find(([prefix]) => title.startsWith(prefix))![1]
      assert.deepEqual(featureWhy(feature(name), config(spec), given), {on, why})
    })
  }

  it('given fields: server-side apply\'s field set, kubectl\'s last-applied-configuration, else what differs from the default', () => {
    const ssa = {
      spec: {...defaults, agent: {...defaults.agent, enabled: true}},
      metadata: {managedFields: [
        {manager: 'polycrate-operator', operation: 'Apply', fieldsV1: {'f:spec': {'f:agent': {'f:enabled': {}}}}},
        {manager: 'polycrate-operator-config', operation: 'Apply', subresource: 'status', fieldsV1: {'f:status': {'f:phase': {}}}},
      ]},
    }
    assert.deepEqual(givenSpec(ssa, defaults), {agent: {enabled: true}})
    const kubectlApply = {spec: defaults, metadata: {annotations: {'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({spec: {node_discovery: {enabled: true}}})}, managedFields: [{operation: 'Update', fieldsV1: {'f:spec': {'f:agent': {}}}}]}}
    assert.deepEqual(givenSpec(kubectlApply, defaults), {node_discovery: {enabled: true}})
    const created = {spec: {...defaults, cleanup: {...defaults.cleanup, stale_threshold_minutes: 45}}, metadata: {managedFields: [{operation: 'Update', fieldsV1: {'f:spec': {}}}]}}
    assert.deepEqual(givenSpec(created, defaults), {cleanup: {stale_threshold_minutes: true}})
  })

  it('from the cluster: the Deployment install made with the full example, and its OperatorConfig applied server-side', () => {
    const values = parseBlockValues({...FULL_EXAMPLE, deployment: {replicas: 2}, security: {add_capabilities: ['NET_RAW']}})
    const plan = installPlan(values, operatorPermissions())
    const deployment = plan.workload.find((object) => object.kind === 'Deployment')!
    const spec = config(values.operatorConfig.spec)
    const managedFields = [{manager: 'polycrate-operator', operation: 'Apply', fieldsV1: {'f:spec': Object.fromEntries(Object.keys(values.operatorConfig.spec).map((key) => [`f:${key}`, {}]))}}]
    const info = clusterInfo({
      namespace: 'polycrate',
      deployment: deployment as never,
      operatorConfig: {metadata: {name: 'default', namespace: 'polycrate', managedFields}, spec, status: {controllers: [{name: 'external-dns-webhook', running: false, reason: 'Failed: could not start: port in use'}]}},
      features,
    })
    const install = Object.fromEntries(info.install.map((setting) => [setting.path, setting]))
    assert.equal(install['deployment.replicas']!.value, '2')
    assert.equal(install['deployment.replicas']!.from, 'set')
    assert.equal(install['deployment.resources.limits.cpu']!.from, 'default')
    assert.equal(install['leader election']!.value, 'on (--leader-elect)')
    assert.equal(install['security.add_capabilities']!.value, 'NET_RAW')
    const settings = Object.fromEntries(info.operatorConfig.settings.map((setting) => [setting.path, setting]))
    assert.deepEqual(settings['api_sync.enabled'], {path: 'api_sync.enabled', value: 'true', from: 'set'})
    assert.deepEqual(settings['cleanup.enabled'], {path: 'cleanup.enabled', value: 'true', from: 'default'})
    assert.deepEqual(info.features.find((f) => f.name === 'external-dns-webhook')?.reported, {running: false, reason: 'Failed: could not start: port in use'})
    assert.deepEqual(info.endpoints.map((e) => [e.name, e.port]), [['metrics', 8080], ['health', 8081], ['external-dns webhook', 8888]])
  })

  it('from --values: the block\'s full example with its secrets.poly; the token shows as redacted, nowhere else', () => {
    const values = parseBlockValues(FULL_EXAMPLE)
    const info = valuesInfo(values, features, 'workspace.poly + secrets.poly')
    const settings = Object.fromEntries(info.operatorConfig.settings.map((setting) => [setting.path, setting]))
    assert.deepEqual(settings['api_sync.sync_interval_seconds'], {path: 'api_sync.sync_interval_seconds', value: '30', from: 'set'})
    assert.deepEqual(settings['artifact_discovery.registry_filter.include_registries'], {path: 'artifact_discovery.registry_filter.include_registries', value: 'cargo.ayedo.cloud, docker.io', from: 'set'})
    assert.deepEqual(settings['artifact_discovery.registry_filter.exclude_registries']?.from, 'default')
    assert.deepEqual(settings['api_sync.credentials.api_token'], {path: 'api_sync.credentials.api_token', value: '(redacted)', from: 'set'})
    assert.ok(!JSON.stringify(info).includes('super-secret-token'))
    const install = Object.fromEntries(info.install.map((setting) => [setting.path, setting]))
    assert.equal(install.image!.from, 'default')
    assert.equal(install['deployment.replicas']!.from, 'set')
    assert.equal(info.features.find((f) => f.name === 'endpoint-monitoring-agent')?.why, 'agent.enabled: true (set)')
  })
})
