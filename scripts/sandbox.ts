/**
 * `npm start`: the operator's main job on a local sandbox. Starts a real control plane (built on first use),
 * installs the polycrate.io and Gateway API CRDs, starts the Polycrate API simulator, runs `polycrate operator run`
 * against both, applies the seeds' example Ingresses and HTTPRoute, and shows `polycrate operator status` until
 * Ctrl-C, which tears everything down.
 *
 *   npm start [-- --interval 5] [--no-examples]
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {execa} from 'execa'
import yaml from 'js-yaml'
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import {KubeClient, type KubeObject} from '../src/kube/client.js'
import {applyCrd, installCrds, waitEstablished} from '../src/kube/crd-install.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({options: {interval: {type: 'string', default: '5'}, 'no-examples': {type: 'boolean', default: false}}})
const say = (line: string) => console.error(`[sandbox] ${line}`)

say('starting etcd + kube-apiserver + kube-controller-manager (the first run builds them from Go modules: several minutes)…')
const controlPlane = await startControlPlane({log: (line) => say(line)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
let operator: ChildProcess | undefined
let sim: ApiSimulator | undefined
let stopping = false

const stop = async (code = 0) => {
  if (stopping) return
  stopping = true
  say('stopping…')
  if (operator && operator.exitCode === null) {
    const exited = new Promise((resolve) => operator!.once('exit', resolve))
    operator.kill('SIGTERM')
    await exited
  }
  client.close()
  await sim?.close()
  await controlPlane.stop()
  process.exit(code)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())

try {
  await installCrds(client, customResourceDefinitions(allCrds))
  const crdDir = path.resolve(root, '../shared/fixtures/crds')
  for (const file of ['gateway.networking.k8s.io_gatewayclasses.yaml', 'gateway.networking.k8s.io_gateways.yaml', 'gateway.networking.k8s.io_httproutes.yaml']) {
    try {
      const crd = yaml.load(readFileSync(path.join(crdDir, file), 'utf8')) as {metadata: {name: string}}
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    } catch (error) {
      say(`Gateway API CRD ${file} not installed (${(error as Error).message}); HTTPRoute discovery stays off`)
    }
  }
  say('CRDs installed')

  sim = await ApiSimulator.start()
  const organization = sim.createOrganization('acme-corp')
  const workspace = sim.createWorkspace({name: 'sandbox', organizationId: organization.id})
  const agentToken = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
  const adminToken = sim.issueToken({kind: 'platform-admin'})
  sim.systemConfig.OPERATOR_BLOCK_VERSION = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version

  const create = (ref: Parameters<KubeClient['create']>[0], body: object) => client.create(ref, body)
  for (const name of [DEFAULT_NAMESPACE, 'production', 'acme-shop', 'envoy-gateway-system']) {
    await create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  }
  await create({group: '', version: 'v1', plural: 'secrets', namespace: DEFAULT_NAMESPACE}, {
    apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace: DEFAULT_NAMESPACE}, stringData: {token: agentToken},
  })
  await create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: DEFAULT_NAMESPACE}, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: DEFAULT_NAMESPACE},
    spec: {api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 30}, local_cluster: {enabled: true, cluster_name: 'sandbox'}},
  })

  const [metricsPort, probePort] = [await freePort(), await freePort()]
  operator = spawn(process.execPath, [
    '--import', 'tsx', path.join(root, 'bin/dev.js'), 'operator', 'run',
    '--kubeconfig', controlPlane.kubeconfigPath,
    '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address', `127.0.0.1:${probePort}`,
    '--log-format', 'text',
  ], {stdio: ['ignore', 'ignore', 'pipe']})
  let operatorLog = ''
  operator.stderr!.on('data', (chunk: Buffer) => {
    operatorLog = (operatorLog + chunk.toString()).slice(-20_000)
  })
  operator.once('exit', (code) => {
    if (!stopping) {
      say(`the operator exited (${code}); its last lines:\n${operatorLog.split('\n').slice(-20).join('\n')}`)
      void stop(1)
    }
  })

  if (!values['no-examples']) {
    const examples = yaml.loadAll(readFileSync(path.join(root, 'test/fixtures/discovery/ingress-examples.yaml'), 'utf8')) as KubeObject[]
    for (const ingress of examples) {
      await create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: 'production'}, {...ingress, metadata: {...ingress.metadata, namespace: 'production'}})
    }
    for (const object of yaml.loadAll(readFileSync(path.join(root, 'test/fixtures/discovery/httproute-example.yaml'), 'utf8')) as KubeObject[]) {
      const plural = object.kind === 'Gateway' ? 'gateways' : 'httproutes'
      await create({group: 'gateway.networking.k8s.io', version: 'v1', plural, namespace: object.metadata!.namespace}, object).catch((error: Error) => say(`${object.kind} not applied: ${error.message}`))
    }
    say(`applied the seeds' ${examples.length} example Ingresses (namespace production) and the HTTPRoute example`)
  }

  const banner = [
    `kubeconfig       ${controlPlane.kubeconfigPath}    (export KUBECONFIG=… to use kubectl)`,
    `Polycrate API    ${sim.url}    agent token in Secret polycrate/polycrate-api-token`,
    `rollout          POLYCRATE_API_URL=${sim.url} POLYCRATE_API_TOKEN=${adminToken} ./bin/dev.js operator rollout status`,
    `operator         metrics http://127.0.0.1:${metricsPort}/metrics, health http://127.0.0.1:${probePort}`,
    'Ctrl-C stops everything.',
  ].join('\n')
  const interval = Math.max(1, Number(values.interval) || 5) * 1000
  for (;;) {
    const status = await execa(process.execPath, ['--import', 'tsx', path.join(root, 'bin/dev.js'), 'operator', 'status', '--kubeconfig', controlPlane.kubeconfigPath], {reject: false, env: {FORCE_COLOR: process.stdout.isTTY ? '1' : '0'}})
    if (process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H')
    console.log(`${banner}\n\n${status.stdout || status.stderr}\n`)
    const apiEndpoints = sim.list('endpoints').length
    console.log(`Polycrate API (simulator): ${apiEndpoints} endpoints, ${sim.list('kubernetes/clusters').length} cluster, ${sim.list('agents').length} agent\n`)
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
} catch (error) {
  say(`failed: ${(error as Error).stack ?? error}`)
  await stop(1)
}
