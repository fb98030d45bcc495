import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {editDistance, nearest} from '../../../src/lib/suggest.js'
import {loadBlockValues} from '../../../src/operator/install/values-file.js'
import {defaultImage, parseBlockValues, selectBlockConfig, ValuesError} from '../../../src/operator/install/values.js'
import {operatorVersion} from '../../../src/version.js'

const problemsOf = (input: unknown): string[] => {
  try {
    parseBlockValues(input)
  } catch (error) {
    if (error instanceof ValuesError) return error.problems
    throw error
  }
  assert.fail('expected a ValuesError')
}

describe('operator block values (pure)', () => {
  it('no values: the block\'s defaults', () => {
    const values = parseBlockValues(undefined)
    assert.equal(values.namespace, 'polycrate')
    assert.equal(values.image, `cargo.ayedo.cloud/library/polycrate:${operatorVersion()}`)
    assert.equal(values.image, defaultImage())
    assert.deepEqual(values.deployment, {replicas: 1, resources: {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '1000m', memory: '1Gi'}}})
    assert.deepEqual(values.imageCredentials, {enabled: false, name: 'polycrate-registry', registry: 'cargo.ayedo.cloud', username: '', password: ''})
    assert.deepEqual(values.metrics, {enabled: true, alerts: false, dashboard: false, secure: true, readers: []})
    assert.deepEqual(values.externalDnsWebhook, {}, 'the webhook open to every namespace, as the operator reference has it')
    assert.deepEqual(values.security, {addCapabilities: []})
    assert.deepEqual(values.operatorConfig, {name: 'default', spec: {}})
    assert.deepEqual(values.apiSync, {enabled: false, secretName: 'polycrate-api-token', tokenKey: 'token'})
  })

  const cases: Array<{name: string; input: Record<string, unknown>; check: (values: ReturnType<typeof parseBlockValues>) => void}> = [
    {
      name: 'image_registry / image_name / image_tag make the image; a numeric tag is a tag',
      input: {image_registry: 'registry.example.com', image_name: 'ops/polycrate', image_tag: 1.2},
      check: (values) => assert.equal(values.image, 'registry.example.com/ops/polycrate:1.2'),
    },
    {
      name: 'a partial resources section keeps the other defaults; numbers are quantities',
      input: {deployment: {replicas: 2, resources: {limits: {memory: '2Gi', cpu: 2}}}},
      check: (values) => assert.deepEqual(values.deployment, {replicas: 2, resources: {requests: {cpu: '100m', memory: '256Mi'}, limits: {cpu: '2', memory: '2Gi'}}}),
    },
    {
      name: 'api_token goes to the Secret, never into the OperatorConfig; credentials become credentials_ref',
      input: {operator_config: {api_sync: {enabled: true, api_url: 'https://api.polycrate.io', credentials: {secret_name: 's', token_key: 'k', api_token: 'tok-123'}}}},
      check: (values) => {
        assert.deepEqual(values.apiSync, {enabled: true, secretName: 's', tokenKey: 'k', apiToken: 'tok-123'})
        assert.deepEqual(values.operatorConfig.spec, {api_sync: {enabled: true, api_url: 'https://api.polycrate.io', credentials_ref: {secret_name: 's', token_key: 'k'}}})
        assert.ok(!JSON.stringify(values.operatorConfig).includes('tok-123'))
      },
    },
    {
      name: 'credentials_ref wins over the credentials alias; an empty api_token is no token',
      input: {operator_config: {api_sync: {credentials_ref: {secret_name: 'canonical'}, credentials: {secret_name: 'alias', api_token: ''}}}},
      check: (values) => {
        assert.equal(values.apiSync.secretName, 'canonical')
        assert.equal(values.apiSync.apiToken, undefined)
      },
    },
    {
      name: 'every OperatorConfig section passes through as written; the name is not in the spec',
      input: {operator_config: {name: 'default', endpoint_discovery: {ignore_namespaces: ['kube-system']}, agent: {enabled: true, http_check_defaults: {timeout_seconds: 5}}, cleanup: {enabled: false}}},
      check: (values) => {
        assert.deepEqual(values.operatorConfig.spec, {endpoint_discovery: {ignore_namespaces: ['kube-system']}, agent: {enabled: true, http_check_defaults: {timeout_seconds: 5}}, cleanup: {enabled: false}})
        assert.equal(values.effectiveSpec.agent.http_check_defaults.follow_redirects, true, 'the effective spec has the defaults')
      },
    },
    {
      name: 'image_credentials, metrics and security',
      input: {image_credentials: {enabled: true, username: 'u', password: 'p'}, metrics: {enabled: false}, security: {add_capabilities: ['NET_RAW', 'NET_RAW']}},
      check: (values) => {
        assert.deepEqual(values.imageCredentials, {enabled: true, name: 'polycrate-registry', registry: 'cargo.ayedo.cloud', username: 'u', password: 'p'})
        assert.deepEqual(values.metrics, {enabled: false, alerts: false, dashboard: false, secure: true, readers: []})
        assert.deepEqual(values.security.addCapabilities, ['NET_RAW'])
      },
    },
    {
      name: 'metrics.alerts, metrics.dashboard and where the runbooks are',
      input: {metrics: {alerts: true, dashboard: true, runbook_base_url: 'https://git.example.com/ops/polycrate-operator/README.md'}},
      check: (values) => {
        assert.deepEqual(values.metrics, {enabled: true, alerts: true, dashboard: true, runbookBaseUrl: 'https://git.example.com/ops/polycrate-operator/README.md', secure: true, readers: []})
      },
    },
    {
      name: 'metrics.secure, metrics.readers (subjects as written) and metrics.allowed_from',
      input: {metrics: {secure: false, readers: [{kind: 'ServiceAccount', namespace: 'monitoring', name: 'vmagent'}, {kind: 'User', name: 'alice'}], allowed_from: [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'monitoring'}}}]}},
      check: (values) => {
        assert.equal(values.metrics.secure, false)
        assert.deepEqual(values.metrics.readers, [{kind: 'ServiceAccount', namespace: 'monitoring', name: 'vmagent'}, {kind: 'User', name: 'alice'}])
        assert.deepEqual(values.metrics.allowedFrom, [{namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'monitoring'}}}])
      },
    },
    {
      name: 'external_dns_webhook.allowed_from: namespace and pod selectors, an empty list (nothing reaches it)',
      input: {external_dns_webhook: {allowed_from: [{namespaceSelector: {matchLabels: {team: 'dns'}}, podSelector: {matchExpressions: [{key: 'app.kubernetes.io/name', operator: 'In', values: ['external-dns']}]}}]}},
      check: (values) => {
        assert.deepEqual(values.externalDnsWebhook.allowedFrom, [{namespaceSelector: {matchLabels: {team: 'dns'}}, podSelector: {matchExpressions: [{key: 'app.kubernetes.io/name', operator: 'In', values: ['external-dns']}]}}])
        assert.deepEqual(parseBlockValues({external_dns_webhook: {allowed_from: []}}).externalDnsWebhook, {allowedFrom: []})
      },
    },
  ]
  for (const c of cases) it(c.name, () => c.check(parseBlockValues(c.input)))

  const invalid: Array<{name: string; input: unknown; problems: RegExp[]}> = [
    {name: 'an unknown top-level key names the nearest one', input: {namspace: 'x'}, problems: [/^config\.namspace: unknown setting \(did you mean "namespace"\?\)$/]},
    {name: 'an unknown nested key with its path', input: {deployment: {resources: {limit: {}}}}, problems: [/^config\.deployment\.resources\.limit: unknown setting \(did you mean "limits"\?\)$/]},
    {name: 'an unknown key inside an OperatorConfig section', input: {operator_config: {artifact_discovery: {registry_filter: {exclude_registry: []}}}}, problems: [/^config\.operator_config\.artifact_discovery\.registry_filter\.exclude_registry: unknown setting \(did you mean "exclude_registries"\?\)$/]},
    {name: 'a misspelt metrics setting names the nearest one', input: {metrics: {alert: true}}, problems: [/^config\.metrics\.alert: unknown setting \(did you mean "alerts"\?\)$/]},
    {name: 'metrics.dashboard must be a boolean', input: {metrics: {dashboard: 'yes'}}, problems: [/^config\.metrics\.dashboard: expected a boolean, got the string "yes"$/]},
    {name: 'a key far from every known one lists them', input: {security: {zzz: 1}}, problems: [/^config\.security\.zzz: unknown setting; known here: add_capabilities$/]},
    {name: 'a wrong type names the path and the expected type', input: {deployment: {replicas: 'two'}}, problems: [/^config\.deployment\.replicas: expected a number, got the string "two"$/]},
    {name: 'a fraction where an integer is needed', input: {deployment: {replicas: 1.5}}, problems: [/^config\.deployment\.replicas: expected an integer/]},
    {name: 'a list where a map is needed', input: {operator_config: {agent: []}}, problems: [/^config\.operator_config\.agent: expected a map, got a list$/]},
    {name: 'an invalid quantity', input: {deployment: {resources: {requests: {memory: 'lots'}}}}, problems: [/^config\.deployment\.resources\.requests\.memory: not a Kubernetes quantity/]},
    {name: 'the OperatorConfig\'s own checks, at the values path', input: {operator_config: {api_sync: {enabled: true}}}, problems: [/^config\.operator_config\.api_sync\.api_url: must be set when api_sync\.enabled is true$/]},
    {name: 'another OperatorConfig name is refused (the operator reads "default")', input: {operator_config: {name: 'main'}}, problems: [/^config\.operator_config\.name: the operator reads the OperatorConfig named "default" only/]},
    {name: 'image_credentials enabled without username or password', input: {image_credentials: {enabled: true}}, problems: [/^config\.image_credentials: enabled is true, so username and password must be set$/]},
    {name: 'a capability with CAP_ or lower case', input: {security: {add_capabilities: ['cap_net_raw']}}, problems: [/^config\.security\.add_capabilities\[0\]: must be a Linux capability name/]},
    {name: 'a metrics reader ServiceAccount without its namespace', input: {metrics: {readers: [{kind: 'ServiceAccount', name: 'vmagent'}]}}, problems: [/^config\.metrics\.readers\[0\]: a ServiceAccount needs its namespace/]},
    {name: 'a metrics reader in the old namespace/name form', input: {metrics: {readers: ['monitoring/vmagent']}}, problems: [/^config\.metrics\.readers\[0\]/]},
    {name: 'an empty NetworkPolicy peer (it would mean nothing)', input: {external_dns_webhook: {allowed_from: [{}]}}, problems: [/^config\.external_dns_webhook\.allowed_from\[0\]: a peer needs namespaceSelector, podSelector or ipBlock/]},
    {name: 'a misspelt peer selector names the nearest one', input: {metrics: {allowed_from: [{namespaceSelecter: {}}]}}, problems: [/^config\.metrics\.allowed_from\[0\]\.namespaceSelecter: unknown setting \(did you mean "namespaceSelector"\?\)$/, /a peer needs/]},
    {name: 'a selector operator Kubernetes does not know', input: {external_dns_webhook: {allowed_from: [{podSelector: {matchExpressions: [{key: 'a', operator: 'Equals'}]}}]}}, problems: [/^config\.external_dns_webhook\.allowed_from\[0\]\.podSelector\.matchExpressions\[0\]\.operator: /]},
    {name: 'a namespace that is no DNS label', input: {namespace: 'Polycrate_Ops'}, problems: [/^config\.namespace: "Polycrate_Ops" is not a valid namespace name/]},
    {name: 'a registry that is no host', input: {image_registry: 'Not A Registry'}, problems: [/^config\.image_registry: "Not A Registry" is not a registry host/]},
    {name: 'a tag with a space', input: {image_tag: 'a b'}, problems: [/^config\.image_tag: "a b" is not an image tag/]},
    {name: 'an image name with upper case', input: {image_name: 'Library/Polycrate'}, problems: [/^config\.image_name: "Library\/Polycrate" is not a repository path/]},
    {name: '0 replicas (the same rule as --replicas)', input: {deployment: {replicas: 0}}, problems: [/^config\.deployment\.replicas: 0: at least 1 replica/]},
    {name: 'every problem at once', input: {replicas: 2, deployment: {replicas: -1}}, problems: [/^config\.replicas: unknown setting/, /^config\.deployment\.replicas: /]},
    {name: 'not a map', input: ['a'], problems: [/^config: expected a map of settings, got a list$/]},
  ]
  for (const c of invalid) {
    it(`refuses ${c.name}`, () => {
      const problems = problemsOf(c.input)
      assert.equal(problems.length, c.problems.length, problems.join('\n'))
      c.problems.forEach((pattern, index) => assert.match(problems[index]!, pattern))
    })
  }

  it('never repeats a secret value in a type error', () => {
    const problems = problemsOf({image_credentials: {password: 123456789}, operator_config: {api_sync: {credentials: {api_token: 987654321}}}})
    assert.equal(problems.length, 2, problems.join('\n'))
    for (const problem of problems) assert.doesNotMatch(problem, /123456789|987654321/)
    assert.match(problems.join('\n'), /password: expected a string, got a number/)
  })
})

describe('what a values file may hold (selectBlockConfig)', () => {
  const config = {namespace: 'ops'}
  const cases: Array<{name: string; document: unknown; expected: unknown}> = [
    {name: 'the config: map itself', document: config, expected: config},
    {name: 'a block entry / block.poly with config:', document: {name: 'polycrate-operator', from: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator', config}, expected: config},
    {name: 'a workspace with blocks: (by from)', document: {name: 'ws', config: {other: 1}, blocks: [{name: 'x', from: 'cargo.ayedo.cloud/ayedo/k8s/other'}, {name: 'op', from: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator:0.57.1', config}]}, expected: config},
    {name: 'a secrets.poly entry (by name), merged with a second entry', document: {blocks: [{name: 'cargo.ayedo.cloud/ayedo/k8s/polycrate-operator', config: {namespace: 'a', deployment: {replicas: 2}}}, {name: 'polycrate-operator', config: {deployment: {replicas: 3}}}]}, expected: {namespace: 'a', deployment: {replicas: 3}}},
    {name: 'an empty file', document: null, expected: {}},
  ]
  for (const c of cases) it(c.name, () => assert.deepEqual(selectBlockConfig(c.document), c.expected))

  it('a workspace without the operator block says which blocks it found', () => {
    assert.throws(() => selectBlockConfig({blocks: [{name: 'a', from: 'cargo.ayedo.cloud/ayedo/k8s/other'}]}, 'ws.poly'), (error: unknown) => error instanceof ValuesError && /ws\.poly: .*no entry .* found: cargo\.ayedo\.cloud\/ayedo\/k8s\/other/s.test(error.message))
  })
})

describe('values files (loadBlockValues)', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'values-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  it('merges workspace.poly and secrets.poly; the token comes from the second', () => {
    const workspace = path.join(dir, 'workspace.poly')
    const secrets = path.join(dir, 'secrets.poly')
    writeFileSync(workspace, 'blocks:\n  - name: polycrate-operator\n    from: cargo.ayedo.cloud/ayedo/k8s/polycrate-operator\n    config:\n      operator_config:\n        api_sync:\n          enabled: true\n          api_url: https://api.polycrate.io\n          credentials:\n            secret_name: polycrate-api-token\n')
    writeFileSync(secrets, 'blocks:\n  - name: cargo.ayedo.cloud/ayedo/k8s/polycrate-operator\n    config:\n      operator_config:\n        api_sync:\n          credentials:\n            api_token: "from-secrets"\n')
    const values = loadBlockValues([workspace, secrets])
    assert.deepEqual(values.apiSync, {enabled: true, secretName: 'polycrate-api-token', tokenKey: 'token', apiToken: 'from-secrets'})
  })

  it('a missing file and a YAML syntax error name the file', () => {
    assert.throws(() => loadBlockValues([path.join(dir, 'nope.yaml')]), /nope\.yaml: .*cannot read the file: ENOENT/s)
    const broken = path.join(dir, 'broken.yaml')
    writeFileSync(broken, 'namespace: [a\n')
    assert.throws(() => loadBlockValues([broken]), /broken\.yaml: .*not valid YAML/s)
  })
})

describe('the block README\'s own examples (seed 003)', () => {
  const fixtures = path.resolve(import.meta.dirname, '../../fixtures')
  it('the full example: its operator_config is the OperatorConfig of seed-examples/operatorconfig-block-readme.yaml', () => {
    const values = loadBlockValues([path.join(fixtures, 'block-values/block-readme-example.poly')])
    const cr = yaml.load(readFileSync(path.join(fixtures, 'seed-examples/operatorconfig-block-readme.yaml'), 'utf8')) as {metadata: {name: string}; spec: unknown}
    assert.equal(values.operatorConfig.name, cr.metadata.name)
    assert.deepEqual(values.operatorConfig.spec, cr.spec)
    assert.equal(values.deployment.replicas, 1)
  })

  it('its snippets and secrets.poly together: defaults unchanged, the token from secrets.poly', () => {
    const values = loadBlockValues([path.join(fixtures, 'block-values/block-readme-snippets.poly'), path.join(fixtures, 'block-values/block-readme-secrets.poly')])
    assert.deepEqual(values.deployment, parseBlockValues({}).deployment)
    assert.deepEqual(values.apiSync, {enabled: true, secretName: 'polycrate-api-token', tokenKey: 'token', apiToken: 'your-api-token-here'})
    assert.equal(values.effectiveSpec.agent.http_check_defaults.timeout_seconds, 5)
  })
})

describe('did you mean (suggest)', () => {
  const cases: Array<[string, string, number]> = [['replica', 'replicas', 1], ['namspace', 'namespace', 1], ['lmiits', 'limits', 1], ['abc', 'abc', 0], ['', 'ab', 2]]
  for (const [a, b, distance] of cases) it(`${JSON.stringify(a)} → ${JSON.stringify(b)}: ${distance}`, () => assert.equal(editDistance(a, b), distance))
  it('picks the nearest near-enough candidate, or none', () => {
    assert.equal(nearest('enabeld', ['enabled', 'name']), 'enabled')
    assert.equal(nearest('Image_Tag', ['image_tag', 'image_name']), 'image_tag')
    assert.equal(nearest('zzz', ['enabled', 'name']), undefined)
  })
})
