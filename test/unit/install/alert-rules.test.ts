/**
 * The alerting rules with Prometheus' own tool: `promtool check rules` on the generated rule file, and `promtool
 * test rules` on the recorded series of test/fixtures/alerts (one file per rule group; each alert must fire where the
 * fixture says and nowhere else). A rule file whose alerts can never fire must fail those tests, so they test the rules.
 */
import assert from 'node:assert/strict'
import {cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {execa} from 'execa'
import yaml from 'js-yaml'
import {alertRuleGroups, ruleFile, runbookAnchor, type RuleGroup} from '../../../src/operator/install/alerts.js'

const fixtures = path.resolve('test/fixtures/alerts')
const PREFIX = 'polycrate-operator.'

interface PromtoolTest {
  alert_rule_test?: Array<{alertname: string; exp_alerts: unknown[]}>
}

async function promtool(args: string[], cwd: string) {
  const which = await execa('which', ['promtool'], {reject: false})
  assert.equal(which.exitCode, 0, 'promtool is missing: install Debian\'s prometheus package (.ci/run does)')
  return execa('promtool', args, {cwd, reject: false, all: true})
}

describe('alerting rules (promtool)', function () {
  this.timeout(60_000)
  const groups = alertRuleGroups({namespace: 'polycrate'})
  const testFiles = readdirSync(fixtures).filter((name) => name.endsWith('.test.yaml')).sort()
  let dir: string

  /** A directory with `rules.yaml` (the given groups) and the fixtures beside it, as their rule_files expect. */
  const workdir = (rules: readonly RuleGroup[]) => {
    const where = mkdtempSync(path.join(tmpdir(), 'alert-rules-'))
    writeFileSync(path.join(where, 'rules.yaml'), yaml.dump(ruleFile(rules), {lineWidth: -1}))
    for (const file of testFiles) cpSync(path.join(fixtures, file), path.join(where, file))
    return where
  }

  before(() => {
    dir = workdir(groups)
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  it('the generated rule file passes `promtool check rules`', async () => {
    const result = await promtool(['check', 'rules', 'rules.yaml'], dir)
    assert.equal(result.exitCode, 0, result.all)
    const count = groups.flatMap((group) => group.rules).length
    assert.match(result.all ?? '', new RegExp(`SUCCESS: ${count} rules found`))
  })

  it('each group has a test file, each alert fires in one and stays quiet in another, with a runbook in the README', () => {
    assert.deepEqual(testFiles, groups.map((group) => `${group.name.slice(PREFIX.length)}.test.yaml`).sort())
    const readme = readFileSync('README.md', 'utf8')
    for (const group of groups) {
      const file = yaml.load(readFileSync(path.join(fixtures, `${group.name.slice(PREFIX.length)}.test.yaml`), 'utf8')) as {tests: PromtoolTest[]}
      const checks = file.tests.flatMap((test) => test.alert_rule_test ?? [])
      for (const rule of group.rules) {
        const own = checks.filter((check) => check.alertname === rule.alert)
        assert.ok(own.some((check) => check.exp_alerts.length > 0), `${rule.alert}: no test where it fires`)
        assert.ok(own.some((check) => check.exp_alerts.length === 0), `${rule.alert}: no test where it stays quiet`)
        assert.equal(rule.annotations.runbook_url, `README.md#${runbookAnchor(rule.alert)}`)
        assert.ok(readme.includes(`\n#### ${rule.alert}\n`), `README: no runbook section "#### ${rule.alert}"`)
        assert.ok(readme.includes(`\`${rule.expr}\``), `README: ${rule.alert}'s expression is not the generated one`)
      }
    }
  })

  it('`promtool test rules` passes on the recorded series of every group', async () => {
    const result = await promtool(['test', 'rules', ...testFiles], dir)
    assert.equal(result.exitCode, 0, result.all)
    assert.equal((result.all?.match(/^\s+SUCCESS$/gm) ?? []).length, testFiles.length, result.all)
  })

  it('rules that never fire fail those tests, naming every alert', async () => {
    const silenced = groups.map((group) => ({...group, rules: group.rules.map((rule) => ({...rule, expr: 'vector(1) == 0'}))}))
    const where = workdir(silenced)
    try {
      const result = await promtool(['test', 'rules', ...testFiles], where)
      assert.equal(result.exitCode, 1, result.all)
      for (const rule of groups.flatMap((group) => group.rules)) assert.match(result.all ?? '', new RegExp(`alertname: ${rule.alert},`), rule.alert)
    } finally {
      rmSync(where, {recursive: true, force: true})
    }
  })

  it('the namespace narrows every selector of the operator\'s own series', () => {
    for (const rule of alertRuleGroups({namespace: 'ops-monitoring'}).flatMap((group) => group.rules)) {
      assert.ok(!rule.expr.includes('namespace="polycrate"'), rule.alert)
      assert.match(rule.expr, /namespace="ops-monitoring"/, rule.alert)
    }
  })
})
