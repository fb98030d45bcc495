/**
 * `install --dry-run`, `install --diff` and `uninstall`'s question against the real apiserver (no Node: install runs
 * with --no-wait). The dry runs must write nothing; the diff must show what a changed value changes and nothing of the
 * server's bookkeeping, never a Secret's value; uninstall asks on a terminal (a pty from util-linux `script`) and
 * refuses without one unless --yes.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import type {InstallPreviewOutput} from '../../src/cli/install-preview.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {assertBuilt, runCli} from '../support/cli-process.js'
import {adminClient, controlPlane, ensureCrds} from '../support/cluster.js'

const root = path.resolve(import.meta.dirname, '../..')
const TOKEN = 'preview-agent-token-must-not-show'
const NEW_TOKEN = 'rotated-agent-token-must-not-show'

/** Runs `command` on a pty, typing `input` into it. */
function onPty(command: string, input: string): Promise<{output: string; status: number}> {
  return new Promise((resolve) => {
    const env = {...process.env, NO_COLOR: '1'}
    const child = execFile('script', ['-qec', command, '/dev/null'], {env, cwd: root, timeout: 120_000}, (error, stdout) => {
      resolve({output: stdout, status: error ? Number((error as {code?: unknown}).code ?? 1) : 0})
    })
    child.stdin!.end(input)
  })
}

describe('install --dry-run / --diff and uninstall\'s question (real apiserver)', function () {
  this.timeout(300_000)
  let client: KubeClient
  let dir: string
  let valuesFile: string
  const namespace = `op-preview-${Math.random().toString(36).slice(2, 8)}`
  const deploymentRef = {group: 'apps', version: 'v1', plural: 'deployments', namespace, name: 'polycrate-operator'}
  const writeValues = (replicas: number, token: string) => writeFileSync(valuesFile, yaml.dump({
    namespace,
    deployment: {replicas},
    image_credentials: {enabled: true, username: 'robot', password: 'pull-password-must-not-show'},
    operator_config: {api_sync: {enabled: true, api_url: 'http://127.0.0.1:9', credentials: {api_token: token}}},
  }))
  const install = (...extra: string[]) => runCommand(['operator', 'install', '--values', valuesFile, '--kubeconfig', controlPlane().kubeconfigPath, ...extra])
  const exitOf = (result: {error?: {oclif?: {exit?: number}}}) => result.error?.oclif?.exit ?? 0

  before(async () => {
    assertBuilt()
    await ensureCrds()
    client = adminClient()
    dir = mkdtempSync(path.join(tmpdir(), 'preview-values-'))
    valuesFile = path.join(dir, 'values.yaml')
    writeValues(1, TOKEN)
  })
  after(() => {
    client.close()
    rmSync(dir, {recursive: true, force: true})
  })

  it('--dry-run on a fresh cluster namespace: everything would be created, nothing is written', async () => {
    const result = await install('--dry-run', '-o', 'json')
    assert.equal(exitOf(result), 0, result.error?.message)
    const preview = JSON.parse(result.stdout) as InstallPreviewOutput
    const entry = (kind: string, name: string) => preview.entries.find((e) => e.kind === kind && e.name === name) ?? assert.fail(`no ${kind} ${name}`)
    assert.equal(entry('Namespace', namespace).action, 'create')
    assert.equal(entry('Deployment', 'polycrate-operator').action, 'create')
    assert.match(entry('Deployment', 'polycrate-operator').note ?? '', /namespace .* is created first: not checked by the server/)
    assert.equal(entry('ClusterRole', 'polycrate-operator').action === 'create' || entry('ClusterRole', 'polycrate-operator').action === 'change' || entry('ClusterRole', 'polycrate-operator').action === 'unchanged', true)
    assert.equal(entry('CustomResourceDefinition', 'endpoints.polycrate.io').action, 'unchanged')
    assert.equal(await client.getOrUndefined({group: '', version: 'v1', plural: 'namespaces', name: namespace}), undefined, 'no namespace written')
    assert.doesNotMatch(result.stdout, new RegExp(`${TOKEN}|pull-password`))

    const text = await install('--dry-run')
    assert.match(text.stdout, new RegExp(`^would create Namespace ${namespace}$`, 'm'))
    assert.match(text.stdout, /^Dry run: \d+ to create, .*\(nothing was written\)\.$/m)
  })

  it('after install: --diff exits 0 and prints nothing; --dry-run says unchanged', async () => {
    const installed = await install('--no-wait', '--json')
    assert.equal(exitOf(installed), 0, installed.error?.message)
    const diff = await install('--diff')
    assert.equal(exitOf(diff), 0, diff.stdout)
    assert.equal(diff.stdout, '')
    const dry = await install('--dry-run')
    assert.doesNotMatch(dry.stdout, /^would /m)
    assert.match(dry.stdout, new RegExp(`^unchanged +Deployment ${namespace}/polycrate-operator$`, 'm'))
  })

  it('a changed value: --diff shows it (exit 1), Secret values masked, no server bookkeeping; nothing is written', async () => {
    writeValues(2, NEW_TOKEN)
    const result = await install('--diff')
    assert.equal(exitOf(result), 1)
    const out = result.stdout
    assert.match(out, new RegExp(`^--- live/apps\\.v1\\.Deployment\\.${namespace}\\.polycrate-operator$`, 'm'))
    assert.match(out, new RegExp(`^\\+\\+\\+ planned/apps\\.v1\\.Deployment\\.${namespace}\\.polycrate-operator$`, 'm'))
    assert.match(out, /^- {2}replicas: 1$/m)
    assert.match(out, /^\+ {2}replicas: 2$/m)
    assert.match(out, new RegExp(`^--- live/v1\\.Secret\\.${namespace}\\.polycrate-api-token$`, 'm'))
    assert.match(out, /^- {2}token: '\*\*\* \(before\)'$/m)
    assert.match(out, /^\+ {2}token: '\*\*\* \(after\)'$/m)
    assert.doesNotMatch(out, /managedFields|resourceVersion|creationTimestamp|^[-+] {2}generation|^[-+]status:/m)
    assert.doesNotMatch(out, new RegExp(`${TOKEN}|${NEW_TOKEN}|pull-password|${Buffer.from(TOKEN).toString('base64')}|${Buffer.from(NEW_TOKEN).toString('base64')}`))
    // Only the two changed objects and the PodDisruptionBudget 2 replicas add.
    assert.deepEqual([...out.matchAll(/^--- live\/(\S+)$/gm)].map((match) => match[1]).sort(),
      [`apps.v1.Deployment.${namespace}.polycrate-operator`, `policy.v1.PodDisruptionBudget.${namespace}.polycrate-operator`, `v1.Secret.${namespace}.polycrate-api-token`])

    const json = await install('--diff', '-o', 'json')
    assert.equal(exitOf(json), 1)
    const document = JSON.parse(json.stdout) as InstallPreviewOutput
    assert.equal(document.changes, 3)
    assert.equal(document.diffs?.length, 3)

    const dry = await install('--dry-run')
    assert.match(dry.stdout, new RegExp(`^would change Deployment ${namespace}/polycrate-operator$`, 'm'))
    assert.match(dry.stdout, new RegExp(`^would change Secret ${namespace}/polycrate-api-token$`, 'm'))
    assert.match(dry.stdout, new RegExp(`^would create PodDisruptionBudget ${namespace}/polycrate-operator$`, 'm'))
    assert.equal((await client.get<KubeObject & {spec: {replicas: number}}>(deploymentRef)).spec.replicas, 1, 'the dry runs wrote nothing')
  })

  it('--diff against an unreachable cluster: exit 2; --dry-run and --diff together are refused', async () => {
    const kubeconfig = path.join(dir, 'down.yaml')
    writeFileSync(kubeconfig, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'x',
      clusters: [{name: 'x', cluster: {server: 'https://127.0.0.1:9'}}], users: [{name: 'x', user: {token: 't'}}],
      contexts: [{name: 'x', context: {cluster: 'x', user: 'x'}}],
    }))
    const down = await runCommand(['operator', 'install', '--values', valuesFile, '--kubeconfig', kubeconfig, '--diff'])
    assert.equal(exitOf(down), 2)
    assert.match(down.error?.message ?? '', /Cannot reach the Kubernetes API server/)
    const both = await install('--diff', '--dry-run')
    assert.match(both.error?.message ?? '', /cannot also be provided/)
  })

  it('uninstall: no terminal and no --yes → refused, exit 2, nothing changed', async () => {
    const run = await runCli(['operator', 'uninstall', '--values', valuesFile, '--kubeconfig', controlPlane().kubeconfigPath], {fastPath: true})
    assert.equal(run.status, 2)
    assert.match(run.stderr.replace(/\s*›\s*/g, ' '), /there is no terminal to ask on: pass --yes to uninstall without asking/)
    assert.ok(await client.getOrUndefined(deploymentRef), 'the Deployment is still there')
  })

  it('uninstall on a terminal: lists what it removes and asks; no → exit 1, nothing changed; yes → uninstalled', async () => {
    const command = `node bin/run.js operator uninstall --values ${valuesFile} --kubeconfig ${controlPlane().kubeconfigPath}`
    const no = await onPty(command, 'n\n')
    assert.equal(no.status, 1, no.output)
    assert.match(no.output, /polycrate operator uninstall will, on https:\/\/127\.0\.0\.1:\d+:/)
    assert.match(no.output, new RegExp(`scale to 0 {2}Deployment ${namespace}/polycrate-operator \\(1 replica now\\)`))
    assert.match(no.output, new RegExp(`delete {6}Deployment ${namespace}/polycrate-operator`))
    assert.match(no.output, new RegExp(`delete {6}Secret ${namespace}/polycrate-api-token \\(install created it\\)`))
    assert.match(no.output, new RegExp(`delete {6}Namespace ${namespace} \\(install created it; only if nothing else lives in it\\)`))
    assert.match(no.output, /Uninstall\? \[y\/N\]/)
    assert.match(no.output, /Uninstall cancelled: nothing was changed\./)
    assert.equal((await client.get<KubeObject & {spec: {replicas: number}}>(deploymentRef)).spec.replicas, 1, 'not even scaled')

    const yes = await onPty(command, 'y\n')
    assert.equal(yes.status, 0, yes.output)
    assert.match(yes.output, /Uninstalled: /)
    assert.equal(await client.getOrUndefined(deploymentRef), undefined)
  })
})
