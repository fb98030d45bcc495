import assert from 'node:assert/strict'
import {crdsFlags} from '../../../src/cli/crds-command.js'
import {explainFlags} from '../../../src/cli/explain-command.js'
import {parseFlags} from '../../../src/cli/fast-path.js'
import type {FlagSpecs} from '../../../src/cli/flag-spec.js'
import {healthFlags} from '../../../src/cli/health-command.js'
import {oclifFlags} from '../../../src/cli/oclif-flags.js'
import {runFlags} from '../../../src/cli/run-command.js'

describe('the fast path\'s flag parser (parseFlags): oclif\'s values, or undefined for anything oclif should see', () => {
  const cases: Array<{specs: FlagSpecs; argv: string[]; flags?: Record<string, unknown>; positionals?: string[]; json?: boolean}> = [
    {specs: healthFlags, argv: [], flags: {url: 'http://127.0.0.1:8081', timeout: 5, output: undefined}},
    {specs: healthFlags, argv: ['--url', 'http://x:1', '--timeout', '3', '--json'], flags: {url: 'http://x:1', timeout: 3, output: undefined}, json: true},
    {specs: healthFlags, argv: ['--url=http://x:1', '--timeout=12'], flags: {url: 'http://x:1', timeout: 12, output: undefined}},
    {specs: healthFlags, argv: ['-o', 'yaml'], flags: {url: 'http://127.0.0.1:8081', timeout: 5, output: 'yaml'}},
    {specs: healthFlags, argv: ['--output=json'], flags: {url: 'http://127.0.0.1:8081', timeout: 5, output: 'json'}},
    {specs: healthFlags, argv: ['-o', 'table']}, // not one of the options,
    {specs: healthFlags, argv: ['--timeout', '0']}, // below min
    {specs: healthFlags, argv: ['--timeout', '1.5']},
    {specs: healthFlags, argv: ['--timeout', 'soon']},
    {specs: healthFlags, argv: ['--url=']}, // empty value
    {specs: healthFlags, argv: ['--url', 'a', '--url', 'b']}, // repeated, not multiple
    {specs: healthFlags, argv: ['--url']}, // no value
    {specs: healthFlags, argv: ['--json', '--json']},
    {specs: crdsFlags, argv: ['--list'], flags: {output: undefined, kind: undefined, list: true, 'output-dir': undefined}},
    {specs: crdsFlags, argv: ['-k', 'ep', '--kind', 'oc', '--kind=Host'], flags: {output: undefined, kind: ['ep', 'oc', 'Host'], list: false, 'output-dir': undefined}},
    {specs: crdsFlags, argv: ['-kep']}, // oclif reads the short form its own way
    {specs: crdsFlags, argv: ['--list', '--output-dir', 'x']}, // exclusive
    {specs: crdsFlags, argv: ['--list=true']},
    {specs: crdsFlags, argv: ['--no-list']},
    {specs: crdsFlags, argv: ['--kind', '--list']}, // a value that looks like a flag
    {specs: crdsFlags, argv: ['--', '--list']},
    {specs: crdsFlags, argv: ['extra'], flags: {output: undefined, kind: undefined, list: false, 'output-dir': undefined}, positionals: ['extra']},
    {specs: crdsFlags, argv: ['--list', '-o', 'json'], flags: {output: 'json', kind: undefined, list: true, 'output-dir': undefined}},
    {specs: explainFlags, argv: ['ingress/web', '-n', 'apps', '--kubeconfig', 'k.yaml'], positionals: ['ingress/web'],
      flags: {kubeconfig: 'k.yaml', context: undefined, namespace: 'apps', 'operator-namespace': explainFlags['operator-namespace'].default, output: undefined}},
  ]
  const runDefaults = {
    kubeconfig: undefined, context: undefined, namespace: 'polycrate', 'leader-elect': false, 'pod-name': undefined,
    // The addresses have no flag default: unset, run-command.ts picks them by where the process runs (listenAddresses).
    'metrics-bind-address': undefined, 'metrics-secure': false, 'metrics-cert-dir': undefined, 'health-probe-bind-address': undefined,
    'external-dns-webhook-host': undefined, 'max-concurrent-reconciles': 4,
    'max-concurrent-syncs': 16, 'graceful-shutdown-timeout': 30, 'log-level': 'info', 'log-format': undefined,
  }
  cases.push(
    {specs: runFlags, argv: [], flags: runDefaults},
    {specs: runFlags, argv: ['-n', 'ops', '--leader-elect', '--log-level', 'debug', '--log-format=text', '--graceful-shutdown-timeout', '0'],
      flags: {...runDefaults, namespace: 'ops', 'leader-elect': true, 'log-level': 'debug', 'log-format': 'text', 'graceful-shutdown-timeout': 0}},
    {specs: runFlags, argv: ['--log-level', 'trace']}, // not one of the options
    {specs: runFlags, argv: ['--log-format', 'yaml']},
    {specs: runFlags, argv: ['--max-concurrent-reconciles', '0']},
  )
  for (const c of cases) {
    it(`${Object.keys(c.specs).join('/')}: ${c.argv.join(' ') || '(none)'}`, () => {
      const parsed = parseFlags(c.specs, c.argv, {})
      if (!c.flags) return assert.equal(parsed, undefined)
      assert.deepEqual(parsed, {flags: c.flags, positionals: c.positionals ?? [], json: c.json ?? false})
    })
  }

  it('a flag not given takes its environment variable (as oclif does), an empty one goes to oclif', () => {
    const env = {POD_NAMESPACE: 'from-env', POD_NAME: 'op-0'}
    assert.deepEqual(parseFlags(runFlags, [], env)?.flags, {...runDefaults, namespace: 'from-env', 'pod-name': 'op-0'})
    assert.equal(parseFlags(runFlags, ['-n', 'given'], env)?.flags.namespace, 'given')
    assert.equal(parseFlags(runFlags, [], {POD_NAMESPACE: ''}), undefined)
  })

  it('oclifFlags derives the oclif definitions from the same specs', () => {
    const crds = oclifFlags(crdsFlags)
    assert.equal(crds.kind.char, 'k')
    assert.equal(crds.kind.multiple, true)
    assert.equal(crds.list.type, 'boolean')
    assert.deepEqual(crds['output-dir'].exclusive, ['list'])
    const health = oclifFlags(healthFlags)
    assert.equal(health.timeout.default, 5)
    assert.equal(health.url.summary, healthFlags.url.summary)
    const run = oclifFlags(runFlags)
    assert.equal(run.namespace.env, 'POD_NAMESPACE')
    assert.deepEqual(run['log-level'].options, ['debug', 'info', 'warn', 'error'])
  })
})
