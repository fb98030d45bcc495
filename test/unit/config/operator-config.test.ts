import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import {apiSyncSection} from '../../../src/operator/config/operator-config-controller.js'
import {
  credentialsSecret,
  ignoredOperatorConfigStatus,
  isLabelSelector,
  operatorConfigStatus,
  statusChanged,
  validateOperatorConfig,
} from '../../../src/operator/config/operator-config.js'

describe('OperatorConfig', () => {
  describe('defaults (parse of an empty spec)', () => {
    const config = operatorConfigSpec.parse({})
    const cases: Array<[string, unknown, unknown]> = [
      ['api_sync.enabled', config.api_sync.enabled, false],
      ['api_sync.sync_interval_seconds', config.api_sync.sync_interval_seconds, 60],
      ['api_sync.credentials_ref', config.api_sync.credentials_ref, {secret_name: 'polycrate-api-token', token_key: 'token'}],
      ['local_cluster.enabled', config.local_cluster.enabled, false],
      ['endpoint_discovery.enabled', config.endpoint_discovery.enabled, true],
      ['endpoint_discovery.mode', config.endpoint_discovery.mode, 'annotation'],
      ['endpoint_discovery.ignore_namespaces', config.endpoint_discovery.ignore_namespaces, ['kube-system', 'kube-public']],
      ['endpoint_discovery.default_check_interval', config.endpoint_discovery.default_check_interval, 60],
      ['endpoint_discovery.stale_cleanup_minutes', config.endpoint_discovery.stale_cleanup_minutes, 10],
      ['app_discovery.label_discovery_enabled', config.app_discovery.label_discovery_enabled, true],
      ['backup_discovery.velero_namespace', config.backup_discovery.velero_namespace, 'velero'],
      ['backup_discovery.cnpg_enabled', config.backup_discovery.cnpg_enabled, true],
      ['certificate_discovery.ignore_namespaces', config.certificate_discovery.ignore_namespaces, ['kube-system', 'cert-manager']],
      ['artifact_discovery.registry_filter.exclude_registries', config.artifact_discovery.registry_filter.exclude_registries, ['registry.k8s.io', 'k8s.gcr.io']],
      ['artifact_discovery.stale_cleanup_minutes', config.artifact_discovery.stale_cleanup_minutes, 60],
      ['agent.enabled', config.agent.enabled, false],
      ['agent.http_check_defaults.user_agent', config.agent.http_check_defaults.user_agent, 'Polycrate-Operator-Agent/1.0'],
      ['s3_bucket_provisioning.enabled', config.s3_bucket_provisioning.enabled, true],
      ['cloud_controller.enabled', config.cloud_controller.enabled, false],
      ['cloud_controller.load_balancer.service_scope', config.cloud_controller.load_balancer.service_scope, 'all'],
      ['dns01_webhook', config.dns01_webhook, {enabled: false, group_name: 'webhook.dns.polycrate.io', solver_name: 'polycrate', port: 10250}],
      ['external_dns_webhook', config.external_dns_webhook, {enabled: true, port: 8888}],
    ]
    for (const [path, actual, expected] of cases) it(`${path} = ${JSON.stringify(expected)}`, () => assert.deepEqual(actual, expected))
  })

  describe('validateOperatorConfig', () => {
    const invalid: Array<[string, unknown, RegExp]> = [
      ['wrong type', {api_sync: {sync_interval_seconds: 'often'}}, /^spec\.api_sync\.sync_interval_seconds: /],
      ['unknown mode', {endpoint_discovery: {mode: 'everything'}}, /^spec\.endpoint_discovery\.mode: /],
      ['api_url missing while enabled', {api_sync: {enabled: true}}, /^spec\.api_sync\.api_url: must be set when api_sync\.enabled is true$/],
      ['api_url not a URL', {api_sync: {enabled: true, api_url: 'api.polycrate.io'}}, /^spec\.api_sync\.api_url: "api\.polycrate\.io" is not an http\(s\) URL$/],
      ['bad namespace name', {app_discovery: {ignore_namespaces: ['ok', 'Not OK']}}, /^spec\.app_discovery\.ignore_namespaces\[1\]: "Not OK" is not a valid namespace name$/],
      ['bad label selector', {node_discovery: {label_selector: 'role in (a,b'}}, /^spec\.node_discovery\.label_selector: "role in \(a,b" is not a valid label selector$/],
      ['interval below 1', {endpoint_discovery: {default_check_interval: 0}}, /^spec\.endpoint_discovery\.default_check_interval: /],
      ['port out of range', {external_dns_webhook: {port: 70000}}, /^spec\.external_dns_webhook\.port: /],
    ]
    for (const [name, spec, problem] of invalid) {
      it(`rejects ${name}, naming the field`, () => {
        const result = validateOperatorConfig(spec)
        assert.equal(result.ok, false)
        if (!result.ok) assert.ok(result.problems.some((p) => problem.test(p)), result.problems.join(' | '))
      })
    }
    it('accepts the defaults and a realistic config', () => {
      assert.equal(validateOperatorConfig(undefined).ok, true)
      const result = validateOperatorConfig({
        api_sync: {enabled: true, api_url: 'https://api.polycrate.io'},
        node_discovery: {label_selector: 'node-role.kubernetes.io/worker,!excluded,zone in (a, b),tier!=db'},
        endpoint_discovery: {watch_namespaces: ['prod', 'staging']},
      })
      assert.equal(result.ok, true, result.ok ? '' : result.problems.join())
    })
  })

  describe('isLabelSelector', () => {
    const cases: Array<[string, boolean]> = [
      ['app=web', true], ['app==web', true], ['app!=web', true], ['!app', true], ['app', true], ['a.b/c=d', true],
      ['env in (prod,staging)', true], ['env notin (dev)', true], ['a=b,c!=d,e', true],
      ['a in (b', false], ['a=b)', false], ['a b', false], ['=b', false], ['a=b,', false],
    ]
    for (const [selector, valid] of cases) it(`${JSON.stringify(selector)} → ${valid}`, () => assert.equal(isLabelSelector(selector), valid))
  })

  describe('credentialsSecret', () => {
    it('credentials_ref by default', () => {
      assert.deepEqual(credentialsSecret(operatorConfigSpec.parse({api_sync: {credentials_ref: {secret_name: 's', token_key: 'k'}}})), {secret_name: 's', token_key: 'k'})
    })
    it('the block README\'s `credentials` alias when credentials_ref is left at its defaults', () => {
      assert.deepEqual(credentialsSecret(operatorConfigSpec.parse({api_sync: {credentials: {secret_name: 'legacy'}}})), {secret_name: 'legacy', token_key: 'token'})
    })
    it('credentials_ref wins when both are set', () => {
      const config = operatorConfigSpec.parse({api_sync: {credentials_ref: {secret_name: 'new'}, credentials: {secret_name: 'old'}}})
      assert.equal(credentialsSecret(config).secret_name, 'new')
    })
  })

  describe('status', () => {
    it('an invalid spec → phase Error, Valid=False with the problems, Ready=False; fixed → Ready; same input → no write', () => {
      const invalid = operatorConfigStatus(undefined, 3, {ok: false, problems: ['spec.a: bad']}, [], 't1')
      assert.equal(invalid.phase, 'Error')
      assert.equal(invalid.observed_generation, 3)
      assert.match(invalid.conditions!.find((c) => c.type === 'Valid')!.message!, /spec\.a: bad/)
      assert.equal(invalid.conditions!.find((c) => c.type === 'Ready')!.status, 'False')
      const valid = operatorConfigStatus(invalid, 4, {ok: true, config: operatorConfigSpec.parse({})}, [{name: 'x', enabled: true, running: true, reason: 'Running'}], 't2')
      assert.equal(valid.phase, 'Ready')
      assert.equal(valid.message, undefined)
      assert.match(valid.conditions!.find((c) => c.type === 'Ready')!.message!, /Running: x\./)
      const again = operatorConfigStatus(valid, 4, {ok: true, config: operatorConfigSpec.parse({})}, [{name: 'x', enabled: true, running: true, reason: 'Running'}], 't3')
      assert.equal(statusChanged(valid, again), false)
    })

    it('an invalid change with a last valid configuration → Valid=False names the field and says it stays in force; Ready=True on it, phase Degraded', () => {
      const controllers = [{name: 'host-discovery', enabled: true, running: true, reason: 'Running'}]
      const status = operatorConfigStatus(undefined, 5, {ok: false, problems: ['spec.node_discovery.label_selector: "a b=c!!" is not a valid label selector']}, controllers, 't', new Map(), {lastValidGeneration: 4})
      const valid = status.conditions!.find((c) => c.type === 'Valid')!
      assert.deepEqual([status.phase, valid.status, valid.reason], ['Degraded', 'False', 'InvalidSpec'])
      assert.match(valid.message!, /spec\.node_discovery\.label_selector: .*the last valid configuration \(generation 4\) stays in force/)
      const ready = status.conditions!.find((c) => c.type === 'Ready')!
      assert.deepEqual([ready.status, ready.reason], ['True', 'LastValidConfigInForce'])
      assert.match(ready.message!, /host-discovery/)
      const never = operatorConfigStatus(undefined, 1, {ok: false, problems: ['spec.a: bad']}, [], 't', new Map(), {apiSyncOnly: true})
      assert.equal(never.phase, 'Error')
      assert.match(never.conditions!.find((c) => c.type === 'Valid')!.message!, /API sync runs/)
    })

    it('apiSyncSection: the api_sync (and local_cluster) sections alone, when valid by themselves', () => {
      const spec = {api_sync: {enabled: true, api_url: 'https://api.example.com'}, local_cluster: {enabled: true, cluster_name: 'c'}, node_discovery: {label_selector: 'a b=c!!'}}
      const config = apiSyncSection(spec as never)!
      assert.deepEqual([config.api_sync.api_url, config.local_cluster.cluster_name, config.node_discovery.label_selector], ['https://api.example.com', 'c', ''])
      assert.equal(apiSyncSection({api_sync: {enabled: true, api_url: 'not a url'}} as never), undefined)
      assert.equal(apiSyncSection({api_sync: {enabled: true, api_url: 'https://a.example'}, local_cluster: {enabled: 'yes'}} as never)?.local_cluster.enabled, false, 'a bad local_cluster is left out')
    })

    it('only owns its fields and conditions: api_sync and the APIConnected condition belong to API sync', () => {
      const previous = {api_sync: {workspace_id: 'w'}, conditions: [{type: 'APIConnected', status: 'True' as const}]}
      const next = operatorConfigStatus(previous, 1, {ok: true, config: operatorConfigSpec.parse({})}, [], 't')
      assert.equal('api_sync' in next, false)
      assert.deepEqual(next.conditions!.map((c) => c.type), ['Valid', 'Ready'])
      assert.equal(statusChanged({...previous, ...next, conditions: [...previous.conditions, ...next.conditions!]}, next), false)
    })

    it('a feature that could not start (port in use) → phase Degraded, Ready=False FeatureFailed naming it and why; started → Ready', () => {
      const config = operatorConfigSpec.parse({})
      const failed = [{name: 'external-dns-webhook', enabled: true, running: false, reason: 'Failed: could not start: bind address [::]:8888 is in use: use a free port (OperatorConfig external_dns_webhook.port)'}]
      const degraded = operatorConfigStatus(undefined, 1, {ok: true, config}, failed, 't1')
      assert.equal(degraded.phase, 'Degraded')
      const ready = degraded.conditions!.find((c) => c.type === 'Ready')!
      assert.equal(ready.status, 'False')
      assert.equal(ready.reason, 'FeatureFailed')
      assert.equal(ready.message, 'Not running: external-dns-webhook (could not start: bind address [::]:8888 is in use: use a free port (OperatorConfig external_dns_webhook.port)).')
      const fixed = operatorConfigStatus(degraded, 2, {ok: true, config}, [{name: 'external-dns-webhook', enabled: true, running: true, reason: 'Running'}], 't2')
      assert.equal(fixed.phase, 'Ready')
    })

    it('an own CRD missing → phase Degraded, Ready=False naming the CRD, its features and the install command; back → Ready', () => {
      const config = operatorConfigSpec.parse({})
      const controllers = [{name: 'endpoint-discovery', enabled: true, running: false, reason: 'CRDsMissing: endpoints.polycrate.io'}]
      const missing = new Map([['endpoints.polycrate.io', ['endpoint-discovery', 'endpoint-sync']]])
      const degraded = operatorConfigStatus(undefined, 1, {ok: true, config}, controllers, 't1', missing)
      assert.equal(degraded.phase, 'Degraded')
      const ready = degraded.conditions!.find((c) => c.type === 'Ready')!
      assert.equal(ready.status, 'False')
      assert.equal(ready.reason, 'CRDsMissing')
      assert.match(ready.message!, /endpoints\.polycrate\.io \(needed by endpoint-discovery, endpoint-sync\)/)
      assert.match(ready.message!, /polycrate operator install-crds/)
      assert.match(ready.message!, /polycrate operator crds \| kubectl apply -f -/)
      assert.equal(degraded.message, ready.message)
      const back = operatorConfigStatus(degraded, 1, {ok: true, config}, [{...controllers[0]!, running: true, reason: 'Running'}], 't2')
      assert.equal(back.phase, 'Ready')
      assert.equal(back.conditions!.find((c) => c.type === 'Ready')!.status, 'True')
    })

    describe('an ignored OperatorConfig says that it is ignored and why', () => {
      const operator = {name: 'default', namespace: 'polycrate'}
      const cases: Array<[string, {name: string; namespace: string}, RegExp]> = [
        ['another namespace (other/default)', {name: 'default', namespace: 'other'}, /reads its OperatorConfig from its own namespace polycrate, not other/],
        ['another name (polycrate/main)', {name: 'main', namespace: 'polycrate'}, /only the OperatorConfig named "default" is read, not "main"/],
      ]
      for (const [name, object, why] of cases) {
        it(name, () => {
          const status = ignoredOperatorConfigStatus(undefined, {...object, generation: 2}, operator, 't')
          assert.equal(status.phase, 'Ignored')
          assert.match(status.message!, why)
          assert.match(status.message!, /move its settings to OperatorConfig polycrate\/default/)
          assert.deepEqual(status.conditions!.map((c) => [c.type, c.status, c.reason]), [['Ready', 'False', 'Ignored']])
          assert.equal(statusChanged(status, ignoredOperatorConfigStatus(status, {...object, generation: 2}, operator, 't2')), false)
        })
      }
    })
  })
})
