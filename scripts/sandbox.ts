/**
 * `npm start`: the operator's main job on a local sandbox. Starts a real control plane (built on first use),
 * installs the polycrate.io and Gateway API CRDs, starts the Polycrate API simulator, runs `polycrate operator run`
 * from the TypeScript sources (bin/dev.js: no build needed) against both, applies the seeds' example Ingresses and
 * HTTPRoute, and shows `polycrate operator status` (computed in this process, with the command's code) every
 * --interval seconds until Ctrl-C, which tears everything down, the temporary directory included.
 *
 *   npm start [-- --interval 5] [--no-examples] [--logs] [--smoke [--smoke-timeout 240]]
 *
 * Every port it uses is a free one (metrics, probes, the external-dns webhook, the API simulator, the control plane),
 * so a port taken by something else (8888: Jupyter) never makes it Degraded. The operator runs in a process of its own
 * that a watchdog ends when the sandbox goes, however it went (kill -KILL too). See `usage` for the flags.
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
import {collectPresence, operatorPresence, operatorStatus} from '../src/operator/install/presence.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {smokeVerdict, type SmokeEndpoint, type SmokeHealth} from './sandbox-smoke.js'
import {upstreamCrd} from '../test/support/upstream-crds.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const usage = `Usage: npm start [-- [--interval SECONDS] [--no-examples] [--logs] [--smoke [--smoke-timeout SECONDS]]]

A local sandbox: a real control plane, the polycrate.io and Gateway API CRDs, the Polycrate API simulator and
\`polycrate operator run\` from the sources, the seeds' example Ingresses and HTTPRoute, and what
\`polycrate operator status\` shows, refreshed until Ctrl-C (which removes everything it started).

  --interval SECONDS        refresh the status every SECONDS (default 5; 1 to 3600)
  --no-examples             apply no example Ingress or HTTPRoute (an empty cluster to try things on)
  --logs                    also show the last lines of the operator's log (the file the banner names)
  --smoke                   no screen: exit 0 once the examples are synced to the API and the operator is Ready
                            (OperatorConfig phase Ready, /readyz 200), 1 with the reason otherwise (CI runs this)
  --smoke-timeout SECONDS   how long --smoke waits (default 240; at least 10)
  -h, --help                this text`
const say = (line: string) => console.error(`[sandbox] ${line}`)
const usageError = (message: string): never => {
  console.error(`sandbox: ${message}\n\n${usage}`)
  process.exit(2)
}
let parsed
try {
  parsed = parseArgs({options: {
    interval: {type: 'string', default: '5'},
    'no-examples': {type: 'boolean', default: false},
    logs: {type: 'boolean', default: false},
    smoke: {type: 'boolean', default: false},
    'smoke-timeout': {type: 'string', default: '240'},
    help: {type: 'boolean', short: 'h', default: false},
  }, strict: true, allowPositionals: false})
} catch (error) {
  usageError((error as Error).message)
}
const {values} = parsed!
if (values.help) {
  console.log(usage)
  process.exit(0)
}
const intervalSeconds = Number(values.interval)
if (!(intervalSeconds >= 1 && intervalSeconds <= 3600)) usageError(`--interval "${values.interval}" is not a number of seconds from 1 to 3600`)
const smokeTimeoutSeconds = Number(values['smoke-timeout'])
if (!(Number.isInteger(smokeTimeoutSeconds) && smokeTimeoutSeconds >= 10)) usageError(`--smoke-timeout "${values['smoke-timeout']}" is not a whole number of seconds, at least 10`)
// With the output piped (`npm start | tee …`), Ctrl-C ends the reader too: a failed write must not end this
// process before the control plane is stopped and its temporary directory removed.
process.stdout.on('error', () => {})
process.stderr.on('error', () => {})
if (values.smoke && values['no-examples']) usageError('--smoke waits for the examples to sync; it cannot be combined with --no-examples')

say('starting etcd + kube-apiserver + kube-controller-manager (the first run builds them from Go modules: several minutes)…')
const controlPlane = await startControlPlane({log: (line) => say(line)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const operatorLogPath = path.join(controlPlane.dir, 'operator.log')
let operator: ChildProcess | undefined
let sim: ApiSimulator | undefined
let [metricsPort, probePort, webhookPort] = [0, 0, 0]
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

/** Ends the operator once this process is gone, whatever way it went: SIGTERM, then SIGKILL after its grace period. */
function operatorWatchdog(pid: number): void {
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 10; kill -KILL ${pid} 2>/dev/null; true`
  spawn('bash', ['-c', script], {detached: true, stdio: 'ignore'}).unref()
}

function logTail(lines: number): string {
  try {
    return readFileSync(operatorLogPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log yet)'
  }
}

/** The operator's own verdict: its OperatorConfig's phase and message, and what /readyz answers. */
async function operatorHealth(): Promise<SmokeHealth> {
  const config = await client.getOrUndefined<KubeObject & {status?: {phase?: string; message?: string}}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: DEFAULT_NAMESPACE, name: 'default'}).catch(() => undefined)
  const readyz = await fetch(`http://127.0.0.1:${probePort}/readyz?verbose`).then(async (response) => ({status: response.status, body: await response.text()}), () => ({status: 0, body: 'not answering'}))
  return {phase: config?.status?.phase, message: config?.status?.message, readyz: readyz.status, readyzBody: readyz.body}
}

/** --smoke: waits until the examples are synced and the operator is Ready (see smokeVerdict), then exits 0; on timeout exits 1 with why. */
async function smoke(api: ApiSimulator): Promise<never> {
  const deadline = Date.now() + smokeTimeoutSeconds * 1000
  let verdict = {ok: false, reason: 'nothing checked yet'}
  let synced = false
  while (Date.now() < deadline) {
    const listed = await client.request<{items: SmokeEndpoint[]}>({path: '/apis/polycrate.io/v1alpha1/endpoints'})
      .catch((error: Error) => ({items: [], error}))
    const live = api.list('endpoints').filter((e) => !(e as {is_deleted?: boolean}).is_deleted).length
    verdict = 'error' in listed
      ? {ok: false, reason: `cannot list Endpoints: ${listed.error.message}`}
      : smokeVerdict(listed.items, live, api.list('kubernetes/clusters').length, exampleNamespaces, await operatorHealth())
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
  // Every port free: the external-dns webhook's too (its default 8888 is Jupyter's; taken, the operator is Degraded).
  webhookPort = await freePort()
  await create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: DEFAULT_NAMESPACE}, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: DEFAULT_NAMESPACE},
    spec: {
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 30},
      local_cluster: {enabled: true, cluster_name: 'sandbox'},
      external_dns_webhook: {enabled: true, port: webhookPort},
    },
  })

  ;[metricsPort, probePort] = [await freePort(), await freePort()]
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
  // However the sandbox goes (kill -KILL too), the operator goes with it: a watchdog as the control plane's.
  operatorWatchdog(operator.pid!)
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
    `operator         metrics http://127.0.0.1:${metricsPort}/metrics, health http://127.0.0.1:${probePort}, external-dns webhook http://127.0.0.1:${webhookPort}`,
    `operator log     ${operatorLogPath}    (tail -f it, or npm start -- --logs)`,
    'Ctrl-C stops everything.',
  ].join('\n')
  if (values.smoke) {
    say(`operator log: ${operatorLogPath}`)
    await smoke(sim)
  }
  const interval = intervalSeconds * 1000
  const {server} = loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath})
  while (!stopping) {
    // What `polycrate operator status` prints, computed here with its code: no process (and no tsx) per refresh.
    const status = await Promise.all([collectInventory(client, {operatorConfigsEverywhere: true}), collectPresence(client, {namespace: DEFAULT_NAMESPACE})]).then(([inventory, snapshot]) => {
      const now = Date.now()
      const operator = operatorStatus(operatorPresence(snapshot, now), {operatorNamespace: DEFAULT_NAMESPACE, defaultNamespace: DEFAULT_NAMESPACE})
      return renderStatus(statusReport(server, inventory, now, [], operator), {now, colour: Boolean(process.stdout.isTTY)})
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
