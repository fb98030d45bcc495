import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import type {KubeClient} from '../../src/kube/client.js'
import {assertBuilt, runCli, words, type CliRun} from '../support/cli-process.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'

/**
 * `polycrate operator explain` as installed (`node bin/run.js`), on the fast path (no oclif, no client-node: its own
 * kubeconfig reader) and through oclif (POLYCRATE_NO_FAST_PATH=1), against the real apiserver: the same stdout, exit
 * code and error message.
 */
describe('polycrate operator explain: the fast path and oclif agree', function () {
  this.timeout(60_000)
  let client: KubeClient
  let apps: string
  let operatorNamespace: string
  let dir: string

  /** A kubeconfig for the test cluster with this user and context namespace. */
  async function kubeconfig(name: string, user: object, options: {namespace?: string; server?: string} = {}): Promise<string> {
    const file = path.join(dir, `${name}.yaml`)
    await writeFile(file, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
      clusters: [{name: 'test', cluster: {server: options.server ?? controlPlane().server, 'insecure-skip-tls-verify': true}}],
      users: [{name: 'user', user}],
      contexts: [{name: 'test', context: {cluster: 'test', user: 'user', ...(options.namespace ? {namespace: options.namespace} : {})}}],
    }))
    return file
  }

  before(async () => {
    assertBuilt()
    dir = await mkdtemp(path.join(tmpdir(), 'explain-fast-'))
    await ensureCrds()
    client = adminClient()
    apps = await freshNamespace(client, 'explainfast')
    operatorNamespace = await freshNamespace(client, 'explainfastop')
    await client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: operatorNamespace}, {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: operatorNamespace},
      spec: {endpoint_discovery: {default_check_interval: 45, ingress_classes: ['nginx']}},
    })
    const ingress = (name: string, hosts: string[], annotations: Record<string, string>) =>
      client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: apps}, {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name, namespace: apps, annotations},
        spec: {ingressClassName: 'nginx', rules: hosts.map((host) => ({host}))},
      })
    await ingress('first', ['shared.example.com'], {polycrate_endpoint_monitor: 'true'})
    await new Promise((resolve) => setTimeout(resolve, 1100)) // a later creationTimestamp (whole seconds)
    await ingress('web', ['shared.example.com', 'web.example.com', '*.example.com'], {
      polycrate_endpoint_monitor: 'true', polycrate_endpoint_host_config: '{"web.example.com": {"timeout": 12}}',
    })
  })
  after(async () => {
    client.close()
    await rm(dir, {recursive: true, force: true})
  })

  async function both(args: string[], expect: {fast: boolean; status: number}): Promise<CliRun> {
    const full = ['operator', 'explain', ...args, '--operator-namespace', operatorNamespace]
    const [fast, oclif] = await Promise.all([runCli(full, {fastPath: true}), runCli(full, {fastPath: false})])
    assert.equal(oclif.loadedOclif, true, 'POLYCRATE_NO_FAST_PATH=1 runs oclif')
    if (expect.fast) assert.equal(fast.loadedOclif || fast.loadedClientNode, false, 'the fast path loads neither oclif nor client-node')
    else assert.equal(fast.loadedOclif, true, 'falls through to oclif')
    assert.equal(fast.status, expect.status, `fast path exit code; stderr: ${fast.stderr}`)
    assert.equal(oclif.status, expect.status, `oclif exit code; stderr: ${oclif.stderr}`)
    assert.equal(fast.stdout, oclif.stdout)
    assert.equal(words(fast.stderr), words(oclif.stderr))
    return fast
  }

  it('text and --json, with a token kubeconfig', async () => {
    const admin = await kubeconfig('admin', {token: controlPlane().token})
    const text = await both(['ingress/web', '-n', apps, '--kubeconfig', admin], {fast: true, status: 0})
    assert.match(text.stdout, new RegExp(`^Ingress ${apps}/web\\n`))
    assert.match(text.stdout, /shared\.example\.com: not monitored — claimed by Ingress/)
    const json = await both(['ingress/web', '--namespace', apps, '--kubeconfig', admin, '--json'], {fast: true, status: 0})
    const report = JSON.parse(json.stdout) as {monitored: boolean; operatorConfig: {found: boolean}}
    assert.equal(report.monitored, true)
    assert.equal(report.operatorConfig.found, true)
  })

  it('the namespace of the kubeconfig context when there is no -n; $KUBECONFIG instead of --kubeconfig', async () => {
    const withNamespace = await kubeconfig('namespaced', {token: controlPlane().token}, {namespace: apps})
    const full = ['operator', 'explain', 'ingress/web', '--operator-namespace', operatorNamespace]
    const [fast, oclif] = await Promise.all([
      runCli(full, {fastPath: true, env: {KUBECONFIG: withNamespace}}), runCli(full, {fastPath: false, env: {KUBECONFIG: withNamespace}}),
    ])
    assert.equal(fast.loadedOclif, false)
    assert.equal(fast.status, 0, fast.stderr)
    assert.equal(fast.stdout, oclif.stdout)
    assert.match(fast.stdout, new RegExp(`^Ingress ${apps}/web\\n`))
  })

  it('errors: a missing object, a bad target, no rights (403), an unreachable server, an unknown context', async () => {
    const admin = await kubeconfig('admin', {token: controlPlane().token})
    const missing = await both(['ingress/nope', '-n', apps, '--kubeconfig', admin], {fast: true, status: 1})
    assert.match(words(missing.stderr), new RegExp(`Error: Ingress ${apps}/nope not found`))
    await both(['ingress/nope', '-n', apps, '--kubeconfig', admin, '--json'], {fast: true, status: 1})
    await both(['service/web', '-n', apps, '--kubeconfig', admin], {fast: true, status: 2})
    const nobody = await kubeconfig('nobody', {token: controlPlane().unprivilegedToken})
    const forbidden = await both(['ingress/web', '-n', apps, '--kubeconfig', nobody], {fast: true, status: 1})
    assert.match(words(forbidden.stderr), /Forbidden \(403\): your identity may not explain ingress\/web/)
    const gone = await kubeconfig('gone', {token: 'x'}, {server: `https://127.0.0.1:${await freePort()}`})
    const unreachable = await both(['ingress/web', '-n', apps, '--kubeconfig', gone], {fast: true, status: 1})
    assert.match(words(unreachable.stderr), /Cannot reach the Kubernetes API server at https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/)
    const context = await both(['ingress/web', '-n', apps, '--kubeconfig', admin, '--context', 'other'], {fast: true, status: 1})
    assert.match(words(context.stderr), /Context "other" is not in .*admin\.yaml; available: test\./)
  })

  it('an exec credential plugin: falls through to oclif and client-node, which run it', async () => {
    const credential = JSON.stringify({apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: {token: controlPlane().token}})
    const exec = await kubeconfig('exec', {exec: {apiVersion: 'client.authentication.k8s.io/v1', command: 'sh', args: ['-c', `echo '${credential}'`], interactiveMode: 'Never'}})
    const run = await both(['ingress/web', '-n', apps, '--kubeconfig', exec], {fast: false, status: 0})
    assert.equal(run.loadedClientNode, true)
    assert.match(run.stdout, new RegExp(`^Ingress ${apps}/web\\n`))
  })
})
