/**
 * `npm start`: the operator's main job on a local sandbox. Starts a real control plane (built on first use),
 * installs the polycrate.io and Gateway API CRDs, starts the Polycrate API simulator, runs `polycrate operator run`
 * from the TypeScript sources (bin/dev.js: no build needed) against both, applies the seeds' example Ingresses and
 * HTTPRoute, and shows `polycrate operator status` (computed in this process, with the command's code) every
 * --interval seconds until Ctrl-C, which tears everything down, the temporary directory included.
 *
 *   npm start [-- --interval 5] [--no-examples] [--logs] [--smoke [--smoke-timeout 240]]
 *
 *   --logs    also show the last lines of the operator's log (the file the banner names) under the status
 *   --smoke   no screen: exit 0 once the examples are synced to the API, 1 with the reason otherwise (CI runs this)
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {openSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import yaml from 'js-yaml'
import {renderStatus, statusReport} from '../src/cli/status-view.js'
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import {KubeClient, type KubeObject} from '../src/kube/client.js'
import {applyCrd, installCrds, waitEstablished} from '../src/kube/crd-install.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {collectInventory} from '../src/kube/resources-inventory.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {smokeVerdict, type SmokeEndpoint} from './sandbox-smoke.js'
import {upstreamCrd} from '../test/support/upstream-crds.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({options: {
  interval: {type: 'string', default: '5'},
  'no-examples': {type: 'boolean', default: false},
  logs: {type: 'boolean', default: false},
  smoke: {type: 'boolean', default: false},
  'smoke-timeout': {type: 'string', default: '240'},
}})
// With the output piped (`npm start | tee …`), Ctrl-C ends the reader too: a failed write must not end this
// process before the control plane is stopped and its temporary directory removed.
process.stdout.on('error', () => {})
process.stderr.on('error', () => {})
const say = (line: string) => console.error(`[sandbox] ${line}`)
if (values.smoke && values['no-examples']) {
  say('--smoke waits for the examples to sync; it cannot be combined with --no-examples')
  process.exit(2)
}

say('starting etcd + kube-apiserver + kube-controller-manager (the first run builds them from Go modules: several minutes)…')
const controlPlane = await startControlPlane({log: (line) => say(line)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const operatorLogPath = path.join(controlPlane.dir, 'operator.log')
let operator: ChildProcess | undefined
let sim: ApiSimulator | undefined
let stopping = false
/** Where the examples went: 'production' (the Ingresses), 'acme-shop' (the HTTPRoute, if the Gateway API CRDs are in). */
const exampleNamespaces: string[] = []

const stop = async (code = 0): Promise<never> => {
  if (stopping) return new Promise<never>(() => {})
  stopping = true
  say('stopping…')
  if (operator && operator.exitCode === null && operator.signalCode === null) {
    const exited = new Promise((resolve) => operator!.once('exit', resolve))
    operator.kill('SIGTERM')
    await exited
  }
  client.close()
  await sim?.close()
  await controlPlane.stop()
  say(`stopped; ${controlPlane.dir} removed`)
  process.exit(code)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
process.on('SIGHUP', () => void stop())

function logTail(lines: number): string {
  try {
    return readFileSync(operatorLogPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log yet)'
  }
}

/** --smoke: waits until the examples are synced (see smokeVerdict), then exits 0; on timeout exits 1 with why. */
async function smoke(api: ApiSimulator): Promise<never> {
  const deadline = Date.now() + Math.max(10, Number(values['smoke-timeout']) || 240) * 1000
  let verdict = {ok: false, reason: 'nothing checked yet'}
  let synced = false
  while (Date.now() < deadline) {
    const listed = await client.request<{items: SmokeEndpoint[]}>({path: '/apis/polycrate.io/v1alpha1/endpoints'})
      .catch((error: Error) => ({items: [], error}))
    const live = api.list('endpoints').filter((e) => !(e as {is_deleted?: boolean}).is_deleted).length
    verdict = 'error' in listed
      ? {ok: false, reason: `cannot list Endpoints: ${listed.error.message}`}
      : smokeVerdict(listed.items, live, api.list('kubernetes/clusters').length, exampleNamespaces)
    // Synced at two checks in a row, 2 s apart: no example is still on its way.
    if (verdict.ok && synced) {
      say(`smoke: OK — ${verdict.reason}`)
      return stop(0)
    }
    synced = verdict.ok
    await new Promise((resolve) => setTimeout(resolve, 2000))
  }
  say(`smoke: FAILED — ${verdict.reason}. The operator's last log lines:\n${logTail(30)}`)
  return stop(1)
}

try {
  await installCrds(client, customResourceDefinitions(allCrds))
  for (const file of ['gateway.networking.k8s.io_gatewayclasses.yaml', 'gateway.networking.k8s.io_gateways.yaml', 'gateway.networking.k8s.io_httproutes.yaml']) {
    try {
      const crd = upstreamCrd(file)
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
  const operatorLog = openSync(operatorLogPath, 'a')
  // bin/dev.js registers tsx and loads the commands from src/: the operator runs from the sources, no build needed.
  // Its own process group: Ctrl-C reaches the sandbox, which stops the operator first and then the control plane.
  operator = spawn(process.execPath, [
    path.join(root, 'bin/dev.js'), 'operator', 'run',
    '--kubeconfig', controlPlane.kubeconfigPath,
    '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address', `127.0.0.1:${probePort}`,
    '--log-format', 'text',
  ], {stdio: ['ignore', operatorLog, operatorLog], detached: true})
  operator.once('exit', (code) => {
    if (!stopping) {
      say(`the operator exited (${code}); its last lines:\n${logTail(20)}`)
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
      await create({group: 'gateway.networking.k8s.io', version: 'v1', plural, namespace: object.metadata!.namespace}, object).then(
        () => object.kind === 'HTTPRoute' && exampleNamespaces.push(object.metadata!.namespace!),
        (error: Error) => say(`${object.kind} not applied: ${error.message}`),
      )
    }
    exampleNamespaces.push('production')
    say(`applied the seeds' ${examples.length} example Ingresses (namespace production) and the HTTPRoute example`)
  }

  const banner = [
    `kubeconfig       ${controlPlane.kubeconfigPath}    (export KUBECONFIG=… to use kubectl)`,
    `Polycrate API    ${sim.url}    agent token in Secret polycrate/polycrate-api-token`,
    `rollout          POLYCRATE_API_URL=${sim.url} POLYCRATE_API_TOKEN=${adminToken} ./bin/dev.js operator rollout status`,
    `operator         metrics http://127.0.0.1:${metricsPort}/metrics, health http://127.0.0.1:${probePort}`,
    `operator log     ${operatorLogPath}    (tail -f it, or npm start -- --logs)`,
    'Ctrl-C stops everything.',
  ].join('\n')
  if (values.smoke) {
    say(`operator log: ${operatorLogPath}`)
    await smoke(sim)
  }
  const interval = Math.max(1, Number(values.interval) || 5) * 1000
  const {server} = loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath})
  while (!stopping) {
    // What `polycrate operator status` prints, computed here with its code: no process (and no tsx) per refresh.
    const status = await collectInventory(client).then((inventory) => {
      const now = Date.now()
      return renderStatus(statusReport(server, inventory, now), {now, colour: Boolean(process.stdout.isTTY)})
    }, (error: Error) => `status: ${error.message}`)
    if (stopping) break
    if (process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H')
    console.log(`${banner}\n\n${status}\n`)
    console.log(`Polycrate API (simulator): ${sim.list('endpoints').length} endpoints, ${sim.list('kubernetes/clusters').length} cluster, ${sim.list('agents').length} agent\n`)
    if (values.logs) console.log(`operator log (${operatorLogPath}), last lines:\n${logTail(15)}\n`)
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
} catch (error) {
  say(`failed: ${(error as Error).stack ?? error}`)
  await stop(1)
}
