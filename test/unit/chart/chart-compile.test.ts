import assert from 'node:assert/strict'
import yaml from 'js-yaml'
import {buildChart, chartModel, goLiteral, valuesJsonSchema, valuesYaml} from '../../../src/operator/chart/chart.js'
import {compileObjects, differences, mergeListBranches, substitute, type Dimension} from '../../../src/operator/chart/compile.js'
import {emitDocument} from '../../../src/operator/chart/emit-yaml.js'
import {ABSENT, stringParts, toTemplate, type Placeholders} from '../../../src/operator/chart/template-tree.js'
import {blockValuesSchema, parseBlockValues} from '../../../src/operator/install/values.js'
import {schemaLeaves} from '../../../src/operator/chart/schema-leaves.js'
import type {KubeObject} from '../../../src/kube/client.js'

const placeholders: Placeholders = {
  strings: new Map([['zq1qz', '$ns'], ['zq2qz', '$user']]),
  numbers: new Map([[40007, '$port']]),
  lists: [{items: ['ZQ3QZ', 'ZQ4QZ'], go: '$caps'}],
}

describe('chart template tree (pure)', () => {
  const cases: Array<[string, string, unknown]> = [
    ['literal text', 'plain', [{lit: 'plain'}]],
    ['a token inside text', 'svc.zq1qz.local', [{lit: 'svc.'}, {go: '(toString $ns)'}, {lit: '.local'}]],
    ['a sentinel number inside text', ':40007', [{lit: ':'}, {go: '(toString $port)'}]],
    ['base64 of text with a token', Buffer.from('u=zq2qz').toString('base64'), [{go: '(print "u=" (toString $user) | b64enc)'}]],
    ['a JSON document with a token (strings escaped by toRawJson)', JSON.stringify({a: 'x-zq1qz', n: 40007, k: [1]}), [{lit: '{"a":'}, {go: '(print "x-" (toString $ns) | toRawJson)'}, {lit: ',"n":'}, {go: '(toRawJson $port)'}, {lit: ',"k":[1]}'}]],
    ['indented JSON keeps its layout', JSON.stringify({a: 'zq1qz'}, null, 2), [{lit: '{\n  "a": '}, {go: '((toString $ns) | toRawJson)'}, {lit: '\n}'}]],
    ['base64 without a token stays literal', Buffer.from('hello').toString('base64'), [{lit: Buffer.from('hello').toString('base64')}]],
  ]
  for (const [name, text, expected] of cases) {
    it(`string parts: ${name}`, () => assert.deepEqual(stringParts(text, placeholders), expected))
  }

  it('a list setting inside a list becomes concat of its literal neighbours and the setting', () => {
    assert.deepEqual(toTemplate(['ALL', 'ZQ3QZ', 'ZQ4QZ'], placeholders), {t: 'splice', before: ['ALL'], go: '$caps', after: []})
    const lines = emitDocument({t: 'map', entries: [[[{lit: 'add'}], toTemplate(['ALL', 'ZQ3QZ', 'ZQ4QZ'], placeholders), 'add']]})
    assert.deepEqual(lines, ['add: {{ concat (list "ALL") $caps | toJson }}'])
  })

  it('writes text holding template delimiters as a Go string Helm prints as it is', () => {
    const lines = emitDocument(toTemplate({description: 'in {{ $labels.namespace }}', port: 40007, name: 'zq1qz'}, placeholders))
    assert.deepEqual(lines, [
      'description: {{ "in {{ $labels.namespace }}" | toJson }}',
      'port: {{ $port }}',
      'name: {{ toString $ns | toJson }}',
    ])
  })

  it('writes branches as {{- if }} / {{- else }} lines, leaving out branches that write nothing', () => {
    const node = toTemplate({spec: {a: 1}}, placeholders)
    const withBranch = {t: 'map' as const, entries: [[[{lit: 'spec'}], {t: 'map' as const, entries: [
      [[{lit: 'a'}], {t: 'lit' as const, value: 1}, 'a'] as [never, never, string],
      [[{lit: 'b'}], {t: 'cond' as const, branches: [{cond: '$x', node: {t: 'lit' as const, value: true}}, {cond: 'not $x', node: ABSENT}]}, 'b'] as [never, never, string],
    ]}, 'spec'] as [never, never, string]]}
    assert.ok(node.t === 'map')
    assert.deepEqual(emitDocument(withBranch), ['spec:', '  a: 1', '  {{- if $x }}', '  b: true', '  {{- end }}'])
  })

  it('differences: key presence, list length, scalars — the smallest differing paths', () => {
    assert.deepEqual(differences({a: {b: 1, c: [1, 2]}}, {a: {b: 2, c: [1, 2, 3]}}), [['a', 'b'], ['a', 'c']])
    assert.deepEqual(differences({a: [{x: 1}]}, {a: [{x: 1, y: 2}]}), [['a', 0, 'y']])
    assert.deepEqual(differences({a: 1}, {a: 1}), [])
    assert.deepEqual(substitute({'k-zq1qz': ['zq1qz', 40007]}, 'zq1qz', 'ns'), {'k-ns': ['ns', 40007]})
  })

  it('list branches become one list with conditional items (each branch\'s items in order)', () => {
    const list = (...items: string[]) => ({t: 'list' as const, items: items.map((value) => ({t: 'lit' as const, value}))})
    const merged = mergeListBranches([{cond: '$a', node: list('x', 'w', 'z')}, {cond: 'not $a', node: list('x', 'z')}])
    assert.deepEqual(emitDocument({t: 'map', entries: [[[{lit: 'l'}], merged, 'l']]}), ['l:', '  - x', '  {{- if $a }}', '  - w', '  {{- end }}', '  - z'])
    const three = mergeListBranches([{cond: 'c1', node: list('a', 'b')}, {cond: 'c2', node: list('a', 'c')}, {cond: 'c3', node: list('c')}])
    assert.deepEqual(emitDocument({t: 'map', entries: [[[{lit: 'l'}], three, 'l']]}), ['l:', '  {{- if (or c1 c2) }}', '  - a', '  {{- end }}', '  {{- if c1 }}', '  - b', '  {{- end }}', '  {{- if (or c2 c3) }}', '  - c', '  {{- end }}'])
    const absent = mergeListBranches([{cond: 'c1', node: list('a')}, {cond: 'c2', node: ABSENT}])
    assert.equal(absent.t, 'cond', 'a branch without the list stays a branch')
  })

  it('goLiteral: defaults as Go template literals', () => {
    assert.equal(goLiteral(undefined), 'nil')
    assert.equal(goLiteral('a"b'), '"a\\"b"')
    assert.equal(goLiteral(['x', 1]), '(list "x" 1)')
    assert.equal(goLiteral({a: {b: true}}), '(dict "a" (dict "b" true))')
    assert.equal(goLiteral([]), 'list')
  })
})

describe('chart compiler (pure): settings found by running the render function', () => {
  // A toy render function: a ConfigMap named by a string setting; a Secret only when a boolean is on; a budget only
  // from 2 replicas on; the items of a list setting, deduplicated.
  const dimensions: Dimension[] = [
    {name: 'name', go: '$name', base: 0, cases: [{label: 'placeholder', value: 'zq1qz', cond: 'true', placeholder: true}]},
    {name: 'secret', go: '$secret', base: 0, cases: [{label: 'false', value: false, cond: 'not $secret'}, {label: 'true', value: true, cond: '$secret'}]},
    {name: 'replicas', go: '$replicas', base: 4, cases: [0, 1, 2, 3].map((count) => ({label: String(count), value: count, cond: `eq (int $replicas) ${count}`})).concat([{label: 'placeholder', value: 40007, cond: 'true', placeholder: true} as never])},
    {name: 'items', go: '$items', base: 1, sampleItems: ['ZQ2QZ', 'ZQ3QZ'], cases: [
      {label: 'empty', value: [], cond: 'empty $items'},
      {label: 'sample', value: ['ZQ2QZ', 'ZQ3QZ'], cond: 'true', placeholder: true},
      {label: 'duplicate', value: ['ZQ2QZ', 'ZQ2QZ', 'ZQ3QZ'], cond: 'false', probe: true},
    ]},
  ]
  const render = (assignment: ReadonlyMap<string, number>): KubeObject[] => {
    const value = (name: string) => dimensions.find((d) => d.name === name)!.cases[assignment.get(name)!]!.value as never
    const name: string = value('name')
    const replicas: number = value('replicas')
    const items: string[] = [...new Set<string>(value('items'))]
    return [
      {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: `cm-${name}`}, data: {replicas: String(replicas)}, ...(items.length ? {items} : {})} as KubeObject,
      {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name}, spec: {replicas, args: ['run', ...items]}} as KubeObject,
      ...(value('secret') ? [{apiVersion: 'v1', kind: 'Secret', metadata: {name}, data: {token: Buffer.from(`t-${name}`).toString('base64')}} as KubeObject] : []),
      ...(replicas >= 2 ? [{apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: {name}, spec: {maxUnavailable: 1}} as KubeObject] : []),
    ]
  }
  const compiled = compileObjects({dimensions, render})
  const byKind = (kind: string) => compiled.find((object) => object.object.kind === kind)!

  it('finds every object, with the settings that decide whether it exists', () => {
    assert.deepEqual(compiled.map((object) => object.object.kind).sort(), ['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Secret'])
    assert.deepEqual(byKind('Secret').presence, ['secret'])
    assert.deepEqual(byKind('PodDisruptionBudget').presence, ['replicas'])
    assert.deepEqual(byKind('Deployment').presence, [])
  })

  it('counts that render like the placeholder join its class: the budget exists unless replicas is 0 or 1', () => {
    const lines = emitDocument(byKind('PodDisruptionBudget').template)
    assert.equal(lines[0], '{{- if not (or (eq (int $replicas) 0) (eq (int $replicas) 1)) }}')
    assert.ok(lines.includes('  name: {{ toString $name | toJson }}'))
  })

  it('a list setting: its items where the list was, deduplicated as the code does (uniq), its key only when not empty', () => {
    assert.deepEqual(byKind('Deployment').branches, [])
    assert.ok(emitDocument(byKind('Deployment').template).includes('  args: {{ concat (list "run") (uniq $items) | toJson }}'))
    const configMap = emitDocument(byKind('ConfigMap').template)
    assert.deepEqual(byKind('ConfigMap').branches, [{path: 'items', settings: ['items']}])
    assert.ok(configMap.includes('{{- if not (empty $items) }}'), configMap.join('\n'))
  })

  it('base64 of a setting: b64enc of the text', () => {
    assert.ok(emitDocument(byKind('Secret').template).includes('  token: {{ print "t-" (toString $name) | b64enc | toJson }}'))
  })

  it('refuses a setting it cannot template (transformed beyond text, JSON and base64: a list joined into text)', () => {
    const joined = (assignment: ReadonlyMap<string, number>) => render(assignment).map((object) => (object.kind === 'ConfigMap' && 'items' in object ? {...object, items: undefined, data: {items: (object as {items: string[]}).items.join(',')}} as KubeObject : object))
    assert.throws(() => compileObjects({dimensions, render: joined}), /the setting items shows up in it in a form the chart compiler cannot template/)
  })
})

describe('the polycrate-operator chart (pure)', () => {
  it('values.yaml: the block\'s keys with its defaults (parsed: the same values as none); operator_config {} with its defaults as comments', () => {
    const text = valuesYaml('0.1.0')
    const values = yaml.load(text) as Record<string, unknown>
    // `given` is what the file wrote (info tells given from default); what is in force is the same.
    const inForce = (parsed: ReturnType<typeof parseBlockValues>) => ({...parsed, given: undefined})
    assert.deepEqual(inForce(parseBlockValues(values)), inForce(parseBlockValues({})))
    assert.deepEqual(values.operator_config, {})
    assert.match(text, /^# {3}dns01_webhook:\n# {5}enabled: false$/m)
    assert.match(text, /^ {2}replicas: 1$/m)
  })

  it('values.schema.json: the zod schema of the values, every object closed to unknown keys', () => {
    const schema = valuesJsonSchema()
    const open: string[] = []
    const walk = (node: Record<string, unknown>, at: string) => {
      if (node.properties) {
        if (node.additionalProperties !== false) open.push(at)
        for (const [key, child] of Object.entries(node.properties as Record<string, Record<string, unknown>>)) walk(child, `${at}.${key}`)
      }
    }
    walk(schema, '')
    assert.deepEqual(open, [])
    const leaves = schemaLeaves(blockValuesSchema).map((leaf) => leaf.path.join('.'))
    assert.ok(leaves.includes('deployment.replicas') && leaves.includes('operator_config.dns01_webhook.port'))
  })

  it('every setting of the values is a dimension of the compiler but the three it leaves to the spec helper', () => {
    const {dimensions} = chartModel('0.1.0')
    const names = new Set(dimensions.map((dimension) => dimension.name))
    const missing = schemaLeaves(blockValuesSchema).map((leaf) => leaf.path.join('.')).filter((name) => !names.has(name))
    assert.deepEqual(missing, ['operator_config.api_sync.credentials.secret_name', 'operator_config.api_sync.credentials.token_key', 'operator_config.name'])
  })

  it('templates: one per object, the optional ones under the conditions of their settings', () => {
    const chart = buildChart({version: '0.1.0'})
    const template = (name: string) => chart.files.get(`templates/${name}`)!
    assert.match(template('vmservicescrape-polycrate-operator.yaml'), /^\{\{- if and \(dig "metrics" "enabled" true \$v\) \(\$\.Capabilities\.APIVersions\.Has "operator\.victoriametrics\.com\/v1beta1\/VMServiceScrape"\) \}\}$/m)
    assert.match(template('apiservice-v1alpha1.group-name.yaml'), /^\{\{- if \(dig "dns01_webhook" "enabled" false \$spec\) \}\}$/m)
    assert.match(template('operatorconfig-default.yaml'), /^spec: \{\{ \$spec \| toJson \}\}$/m)
    assert.match(template('job-polycrate-operator-release.yaml'), /helm\.sh\/hook: pre-delete/)
    assert.ok([...chart.files.keys()].filter((file) => file.startsWith('crds/')).length >= 10)
  })
})
