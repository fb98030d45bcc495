/**
 * An hour of churn: one operator process (a real `bin/run.js operator run`, leader election on) with every feature the
 * bench can drive, on a control plane of its own, against the Polycrate API simulator, under a steady stream of user
 * changes, with an API brown-out and a close of every watch every few minutes. Not a pass/fail test: it samples the
 * operator once a minute and writes bench/results/soak.json.
 *
 *   npm run bench:soak -- --minutes M [--rate R] [--warmup W] [--fault-every F] [--brown-out-seconds B] [--seed S]
 *                         [--bin DIR/bin/run.js] [--operator-log FILE] [--output FILE] [--heap-snapshots DIR]
 *                         [--heap-snapshot-every N]
 *
 * Defaults: 60 minutes, R = 30 changes a minute, a warm-up of 10 minutes (runs under 30 minutes: a fifth of the run),
 * F = 5 (a brown-out of B = 30 s at 1/5 of every F minutes, a watch close at 3/5), seed 1. Run `npm run build` first
 * (the operator runs from dist/ through bin/run.js).
 *
 * The operator's OperatorConfig turns on API sync (10 s interval) and local-cluster registration, discovery of
 * Ingresses and HTTPRoutes, apps (meta Secrets and pods), Nodes, Velero and CloudNativePG backups, cert-manager
 * Certificates, artifacts (stale after 5 minutes, so their number levels off within the warm-up) and volumes, S3
 * buckets, the cloud controller with LoadBalancer Services, the external-dns webhook and the endpoint monitoring agent
 * (HTTP checks of 20 endpoints against a loopback server, and of the discovered hosts, which do not resolve). Its
 * Kubernetes traffic goes through the campaign's fault proxy (test/support/chaos/kube-proxy.ts), which counts its
 * writes and closes its watches.
 *
 * The churn, from a seeded PRNG, R changes a minute evenly spaced, each one user operation: an Ingress or an
 * HTTPRoute created, edited (hosts or the path annotation) or deleted (20–40 Ingresses, 8–16 HTTPRoutes); an app in
 * one of 10 namespaces created (meta Secret and two Running pods), its meta Secret edited (version), a pod replaced
 * (another of three image tags) or the app deleted (4–8 apps); a Velero backup of a schedule made or the oldest
 * deleted (up to 12). The populations stay within those bounds, so memory that grows with time is a leak, not more
 * objects. Static besides: a Node, a LoadBalancer Service, an S3Bucket, a Certificate, a PV, a CNPG schedule and
 * backup.
 *
 * Every minute (minute 0 = before the churn): RSS and the V8 heap after two forced full GCs, the event-loop delay
 * p99 and max since the minute before, active handles and timers (process.getActiveResourcesInfo) and open sockets
 * (/proc/<pid>/fd), through the bench-only preload bench/heap-probe.cjs (--expose-gc, SIGUSR2); the changes, the
 * operator's Kubernetes writes (fault proxy) and API writes (the simulator's log, the health report excluded) of the
 * minute; and the warning/error log lines a healthy run should not have: those not within a fault or its 60 s after.
 * soak.json: the settings, `samples`, least-squares slopes after the warm-up (`rssSlopeMiBPerHour`,
 * `heapAfterGcSlopeMiBPerHour`), `eventLoopDelayP99Ms` (median and max of the minutes'), `handles`, `timers` and
 * `sockets` (start and end), `writesPerChange` (kube and API, overall and by halves), `errorLines` (with up to 20 of them), the
 * goals of issue 33 (heap ≤ 1 MiB/h, RSS ≤ 2 MiB/h after the warm-up, handles and sockets flat, writes per change flat,
 * no error line) and the machine's load. Each sample also has `jitMiB`, the compiled code in the heap (machine code
 * and bytecode with their metadata), and the summary splits the heap slope into `jitSlopeMiBPerHour` (V8 optimizing
 * more functions as they run long enough, which levels off) and `heapWithoutJitSlopeMiBPerHour` (data, and V8's
 * feedback metadata that grows with the optimized code: heap snapshots tell them apart).
 *
 * `--heap-snapshots DIR` writes a V8 heap snapshot of the operator at the end of the warm-up and at the end
 * (`--heap-snapshot-every N`: also every N minutes after the warm-up); compare them in Chrome DevTools or with
 * `node --import tsx bench/heap-diff.ts A B …` (what the heap gained in between). Each blocks the operator for a
 * moment, which shows in that minute's event-loop delay, and leaves its RSS higher (the RSS slope of a run with
 * snapshots means nothing).
 */
import {mkdir, mkdtemp, readdir, readFile, readlink, stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parseArgs} from 'node:util'
import Table from 'cli-table3'
import {KubeApiError, KubeClient, type KubeObject, type ResourceRef} from '../src/kube/client.js'
import {installCrds} from '../src/kube/crd-install.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'
import {ApiSimulator} from '../test/support/api-simulator/index.js'
import {operatorNamespaceFor} from '../test/support/api-setup.js'
import {writesByKind} from '../test/support/api-writes.js'
import {isWrite, startKubeFaultProxy, type KubeFaultProxy} from '../test/support/chaos/kube-proxy.js'
import {Prng} from '../test/support/chaos/prng.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {writeKubeconfig} from '../test/support/kubeconfig-file.js'
import {startHttpTarget} from '../test/support/monitoring-targets.js'
import {startOperator, type OperatorProcess} from '../test/support/operator-process.js'
import {upstreamCrd} from '../test/support/upstream-crds.js'
import {benchNodeOptions, ensureCrdsWith, heapProbe, namespaceNamed} from './setup.js'
import {classifyLogLines, defaultWarmup, faultSchedule, summarize, type FaultWindow, type LogLine, type SoakSample} from './soak-stats.js'

// ---------------------------------------------------------------------------------------------------------------
// flags

const {values: flags} = parseArgs({
  args: process.argv.slice(2),
  options: {
    minutes: {type: 'string', default: '60'},
    rate: {type: 'string', default: '30'},
    warmup: {type: 'string'},
    'fault-every': {type: 'string', default: '5'},
    'brown-out-seconds': {type: 'string', default: '30'},
    seed: {type: 'string', default: '1'},
    bin: {type: 'string'},
    'operator-log': {type: 'string'},
    output: {type: 'string'},
    'heap-snapshots': {type: 'string'},
    'heap-snapshot-every': {type: 'string'},
  },
  strict: true,
})

function positive(name: string, text: string | undefined, options: {integer?: boolean; zero?: boolean} = {}): number {
  const value = Number(text)
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !options.zero) || (options.integer && !Number.isInteger(value))) {
    console.error(`--${name} must be a positive ${options.integer ? 'whole ' : ''}number, got ${JSON.stringify(text)}`)
    process.exit(2)
  }
  return value
}

const minutes = positive('minutes', flags.minutes)
const rate = positive('rate', flags.rate)
const warmupMinutes = flags.warmup === undefined ? defaultWarmup(minutes) : positive('warmup', flags.warmup, {zero: true})
const faultEvery = positive('fault-every', flags['fault-every'])
const brownOutSeconds = positive('brown-out-seconds', flags['brown-out-seconds'])
const seed = positive('seed', flags.seed, {integer: true, zero: true})
const snapshotEvery = flags['heap-snapshot-every'] === undefined ? undefined : positive('heap-snapshot-every', flags['heap-snapshot-every'], {integer: true})
if (snapshotEvery !== undefined && !flags['heap-snapshots']) {
  console.error('--heap-snapshot-every needs --heap-snapshots DIR')
  process.exit(2)
}
const output = path.resolve(flags.output ?? path.join(import.meta.dirname, 'results', 'soak.json'))
/** After a fault ends, its retries and relists may still log this long. */
const FAULT_GRACE_MS = 60_000

// ---------------------------------------------------------------------------------------------------------------
// helpers

const startedAt = Date.now()
const progress = (message: string) => process.stderr.write(`[soak ${((Date.now() - startedAt) / 60_000).toFixed(2).padStart(6)} min] ${message}\n`)
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())))
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits
const MiB = (bytes: number) => round(bytes / 1024 ** 2, 2)

const ref = (group: string, version: string, plural: string, namespace?: string, name?: string): ResourceRef => ({group, version, plural, namespace, name})
const refs = {
  ingresses: (namespace: string, name?: string) => ref('networking.k8s.io', 'v1', 'ingresses', namespace, name),
  httproutes: (namespace: string, name?: string) => ref('gateway.networking.k8s.io', 'v1', 'httproutes', namespace, name),
  gateways: (namespace: string) => ref('gateway.networking.k8s.io', 'v1', 'gateways', namespace),
  secrets: (namespace: string, name?: string) => ref('', 'v1', 'secrets', namespace, name),
  pods: (namespace: string, name?: string) => ref('', 'v1', 'pods', namespace, name),
  services: (namespace: string) => ref('', 'v1', 'services', namespace),
  nodes: () => ref('', 'v1', 'nodes'),
  pvs: () => ref('', 'v1', 'persistentvolumes'),
  velero: (plural: string, namespace: string, name?: string) => ref('velero.io', 'v1', plural, namespace, name),
  cnpg: (plural: string, namespace: string, name?: string) => ref('postgresql.cnpg.io', 'v1', plural, namespace, name),
  certificates: (namespace: string, name?: string) => ref('cert-manager.io', 'v1', 'certificates', namespace, name),
  s3buckets: (namespace: string) => ref('polycrate.io', 'v1alpha1', 's3buckets', namespace),
  operatorConfig: (namespace: string) => ref('polycrate.io', 'v1alpha1', 'operatorconfigs', namespace, 'default'),
}

/** CPU seconds (user + system) of a process so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Open socket file descriptors of a process. */
async function openSockets(pid: number): Promise<number> {
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])
  let sockets = 0
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')
    if (target.startsWith('socket:')) sockets++
  }
  return sockets
}

/** Runs `call`; a 404 or 409 (the object is already gone or there, after a retry) is no failure of the bench. */
async function tolerant(call: () => Promise<unknown>): Promise<void> {
  try {
    await call()
  } catch (error) {
    if (!(error instanceof KubeApiError && (error.status === 404 || error.status === 409))) throw error
  }
}

// ---------------------------------------------------------------------------------------------------------------
// the churn: user operations, populations kept within bounds

const APP_SLOTS = 10
const IMAGE_TAGS = ['1.0', '1.1', '1.2']

class Churn {
  readonly counts: Record<string, number> = {}
  private readonly ingresses = new Map<string, {hosts: string[]; edits: number}>()
  private readonly routes = new Map<string, {edits: number}>()
  private readonly apps = new Map<number, {version: number; pods: string[]}>()
  private readonly backups: string[] = []
  private serial = 0

  constructor(private readonly client: KubeClient, private readonly prng: Prng, private readonly namespace: string, private readonly appNamespace: (slot: number) => string) {}

  /** One user operation; returns its name (`ingress create`, …). */
  async step(): Promise<string> {
    const kind = this.pickWeighted([['ingress', 4], ['httproute', 2], ['app', 3], ['backup', 1]])
    const name = kind === 'ingress' ? await this.ingress() : kind === 'httproute' ? await this.route() : kind === 'app' ? await this.app() : await this.backup()
    this.counts[name] = (this.counts[name] ?? 0) + 1
    return name
  }

  /** The population now (for the result). */
  population() {
    return {ingresses: this.ingresses.size, httproutes: this.routes.size, apps: this.apps.size, pods: [...this.apps.values()].reduce((n, app) => n + app.pods.length, 0), backups: this.backups.length}
  }

  private pickWeighted<T extends string>(choices: Array<[T, number]>): T {
    let r = this.prng.next() * choices.reduce((sum, [, weight]) => sum + weight, 0)
    for (const [choice, weight] of choices) {
      if ((r -= weight) < 0) return choice
    }
    return choices.at(-1)![0]
  }

  /** create below `low`, delete from `high` on, else one of create / edit / delete. */
  private action(size: number, low: number, high: number): 'create' | 'edit' | 'delete' {
    if (size < low) return 'create'
    if (size >= high) return 'delete'
    return this.pickWeighted([['create', 3], ['edit', 4], ['delete', 3]])
  }

  private freeSlot(used: (slot: number) => boolean, slots: number): number {
    const free = Array.from({length: slots}, (_, i) => i).filter((slot) => !used(slot))
    return this.prng.pick(free)
  }

  private async ingress(): Promise<string> {
    const action = this.action(this.ingresses.size, 20, 40)
    const body = (name: string, hosts: string[], path: string) => ({
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name, namespace: this.namespace, annotations: {polycrate_endpoint_monitor: 'true', polycrate_endpoint_path: path}},
      spec: {rules: hosts.map((host) => ({host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'web', port: {number: 80}}}}]}}))},
    })
    if (action === 'create') {
      const slot = this.freeSlot((i) => this.ingresses.has(`ing-${i}`), 60)
      const name = `ing-${slot}`
      const hosts = [`${name}.soak.invalid`]
      await this.client.create(refs.ingresses(this.namespace), body(name, hosts, '/'))
      this.ingresses.set(name, {hosts, edits: 0})
    } else if (action === 'edit') {
      const name = this.prng.pick([...this.ingresses.keys()])
      const state = this.ingresses.get(name)!
      state.edits++
      // Every other edit a second host comes or goes; the path annotation changes every time.
      if (state.edits % 2 === 0) state.hosts = state.hosts.length === 1 ? [...state.hosts, `www-${name}.soak.invalid`] : state.hosts.slice(0, 1)
      const {metadata, spec} = body(name, state.hosts, `/health/${state.edits % 5}`)
      await this.client.mergePatch(refs.ingresses(this.namespace, name), {metadata: {annotations: metadata.annotations}, spec})
    } else {
      const name = this.prng.pick([...this.ingresses.keys()])
      await tolerant(() => this.client.delete(refs.ingresses(this.namespace, name)))
      this.ingresses.delete(name)
    }
    return `ingress ${action}`
  }

  private async route(): Promise<string> {
    const action = this.action(this.routes.size, 8, 16)
    const annotations = (edits: number) => ({polycrate_endpoint_monitor: 'true', polycrate_endpoint_path: `/ready/${edits % 5}`})
    if (action === 'create') {
      const slot = this.freeSlot((i) => this.routes.has(`route-${i}`), 30)
      const name = `route-${slot}`
      await this.client.create(refs.httproutes(this.namespace), {
        apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: {name, namespace: this.namespace, annotations: annotations(0)},
        spec: {
          parentRefs: [{name: 'soak-gw', sectionName: 'https'}], hostnames: [`${name}.soak.invalid`],
          rules: [{matches: [{path: {type: 'PathPrefix', value: '/'}}], backendRefs: [{name: 'web', port: 8080}]}],
        },
      })
      this.routes.set(name, {edits: 0})
    } else if (action === 'edit') {
      const name = this.prng.pick([...this.routes.keys()])
      const state = this.routes.get(name)!
      state.edits++
      await this.client.mergePatch(refs.httproutes(this.namespace, name), {metadata: {annotations: annotations(state.edits)}})
    } else {
      const name = this.prng.pick([...this.routes.keys()])
      await tolerant(() => this.client.delete(refs.httproutes(this.namespace, name)))
      this.routes.delete(name)
    }
    return `httproute ${action}`
  }

  private async createPod(slot: number, version: number): Promise<string> {
    const namespace = this.appNamespace(slot)
    const name = `app-${slot}-${++this.serial}`
    const image = `registry.soak.example/team/app-${slot}:${IMAGE_TAGS[version % IMAGE_TAGS.length]}`
    await this.client.create(refs.pods(namespace), {
      apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, labels: {app: `app-${slot}`}, annotations: {polycrate_k8sapp_name: `app-${slot}`}},
      spec: {containers: [{name: 'app', image}]},
    })
    // What a kubelet would report: no Node runs here.
    await this.client.mergePatch({...refs.pods(namespace, name), subresource: 'status'}, {status: {
      phase: 'Running', conditions: [{type: 'Ready', status: 'True'}],
      containerStatuses: [{name: 'app', image, imageID: '', ready: true, restartCount: 0, started: true, state: {running: {startedAt: new Date().toISOString()}}}],
    }})
    return name
  }

  private metaSecret(slot: number, version: number) {
    return {
      apiVersion: 'v1', kind: 'Secret', metadata: {name: `app-${slot}.poly`, namespace: this.appNamespace(slot)},
      stringData: {meta: [
        'block:', `  name: app-${slot}`, `  display_name: "App ${slot}"`, `  version: "1.${version}.0"`, '  kind: helm', '  type: app',
        'workspace:', '  name: soak', '  organization: soak',
        'action:', '  name: install', '  status: success', `  last_executed_at: "${new Date().toISOString()}"`,
      ].join('\n')},
    }
  }

  private async app(): Promise<string> {
    const action = this.action(this.apps.size, 4, 8)
    if (action === 'create') {
      const slot = this.freeSlot((i) => this.apps.has(i), APP_SLOTS)
      await this.client.create(refs.secrets(this.appNamespace(slot)), this.metaSecret(slot, 0))
      const pods = [await this.createPod(slot, 0), await this.createPod(slot, 0)]
      this.apps.set(slot, {version: 0, pods})
      return 'app create'
    }
    const slot = this.prng.pick([...this.apps.keys()])
    const app = this.apps.get(slot)!
    const namespace = this.appNamespace(slot)
    if (action === 'delete') {
      for (const pod of app.pods) await tolerant(() => this.client.delete(refs.pods(namespace, pod)))
      await tolerant(() => this.client.delete(refs.secrets(namespace, `app-${slot}.poly`)))
      this.apps.delete(slot)
      return 'app delete'
    }
    app.version++
    if (this.prng.next() < 0.5) {
      await this.client.replace(refs.secrets(namespace, `app-${slot}.poly`), this.metaSecret(slot, app.version))
      return 'app meta edit'
    }
    // A rolling update of one pod: the new one (another tag) first, then the old one goes.
    const old = app.pods.shift()!
    app.pods.push(await this.createPod(slot, app.version))
    await tolerant(() => this.client.delete(refs.pods(namespace, old)))
    return 'app pod replace'
  }

  private async backup(): Promise<string> {
    if (this.backups.length >= 12 || (this.backups.length > 4 && this.prng.next() < 0.4)) {
      const name = this.backups.shift()!
      await tolerant(() => this.client.delete(refs.velero('backups', this.namespace, name)))
      return 'backup delete'
    }
    const schedule = this.prng.pick(['nightly', 'weekly'])
    const name = `${schedule}-${String(++this.serial).padStart(6, '0')}`
    await this.client.create(refs.velero('backups', this.namespace), {
      apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name, namespace: this.namespace, labels: {'velero.io/schedule-name': schedule}},
      spec: {ttl: '720h0m0s', includedNamespaces: ['shop']},
    })
    this.backups.push(name)
    return 'backup create'
  }
}

// ---------------------------------------------------------------------------------------------------------------
// the run

progress(`${minutes} min, ${rate} changes/min, warm-up ${warmupMinutes} min, a brown-out (${brownOutSeconds} s) and a watch close every ${faultEvery} min, seed ${seed}; cpus ${os.cpus().length}, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`)
const controlPlane = await startControlPlane({log: (line) => progress(`[control plane] ${line}`)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
const sim = await ApiSimulator.start()
const target = await startHttpTarget()
let proxy: KubeFaultProxy | undefined
let operator: OperatorProcess | undefined
let exitCode = 0
try {
  await ensureCrdsWith(client)
  await installCrds(client, [
    'gateway.networking.k8s.io_gatewayclasses.yaml', 'gateway.networking.k8s.io_gateways.yaml', 'gateway.networking.k8s.io_httproutes.yaml',
    'velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml',
    'cert-manager.io_certificates.yaml',
  ].map((file) => upstreamCrd(file) as KubeObject & {metadata: {name: string}}))

  // ---- the users' side: namespaces and the static objects
  const shop = await namespaceNamed(client, 'soak-shop')
  const appNamespaces = await Promise.all(Array.from({length: APP_SLOTS}, (_, i) => namespaceNamed(client, `soak-app-${i}`)))
  await client.create(refs.gateways(shop), {
    apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: {name: 'soak-gw', namespace: shop},
    spec: {gatewayClassName: 'soak', listeners: [{name: 'http', protocol: 'HTTP', port: 80}, {name: 'https', protocol: 'HTTPS', port: 443, tls: {mode: 'Terminate', certificateRefs: [{name: 'soak-tls'}]}}]},
  })
  await client.create(refs.nodes(), {
    apiVersion: 'v1', kind: 'Node', metadata: {name: 'soak-node', labels: {'kubernetes.io/hostname': 'soak-node'}}, spec: {},
    status: {
      capacity: {cpu: '4', memory: '16Gi', pods: '110'},
      conditions: [{type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'soak', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z'}],
      nodeInfo: {kubeletVersion: 'v1.35.4', osImage: 'Debian GNU/Linux 12', kernelVersion: '6.1.0', containerRuntimeVersion: 'containerd://2.0.0', architecture: 'amd64', operatingSystem: 'linux', machineID: '', systemUUID: '', bootID: '', kubeProxyVersion: ''},
      addresses: [{type: 'InternalIP', address: '10.0.0.21'}],
    },
  })
  await client.create(refs.services(shop), {
    apiVersion: 'v1', kind: 'Service', metadata: {name: 'web', namespace: shop},
    spec: {type: 'LoadBalancer', selector: {app: 'web'}, ports: [{name: 'http', port: 80, targetPort: 8080, protocol: 'TCP'}]},
  })
  await client.create(refs.s3buckets(shop), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'data', namespace: shop}, spec: {name: 'soak-data', region: 'fsn1'}})
  await client.create(refs.certificates(shop), {
    apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'soak-tls', namespace: shop},
    spec: {secretName: 'soak-tls', dnsNames: ['shop.soak.invalid'], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
  })
  await client.mergePatch({...refs.certificates(shop, 'soak-tls'), subresource: 'status'}, {status: {
    conditions: [{type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: '2026-01-01T00:00:00Z'}],
    notBefore: '2026-01-01T00:00:00Z', notAfter: '2036-06-01T00:00:00Z', renewalTime: '2036-01-01T00:00:00Z', revision: 1,
  }})
  await client.create(refs.pvs(), {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name: 'soak-pv'},
    spec: {capacity: {storage: '1Gi'}, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'soak', hostPath: {path: '/data/soak-pv'}},
  })
  for (const schedule of ['nightly', 'weekly']) {
    await client.create(refs.velero('schedules', shop), {
      apiVersion: 'velero.io/v1', kind: 'Schedule', metadata: {name: schedule, namespace: shop},
      spec: {schedule: schedule === 'nightly' ? '0 3 * * *' : '0 4 * * 0', template: {ttl: '720h0m0s', includedNamespaces: ['shop']}},
    })
  }
  await client.create(refs.cnpg('scheduledbackups', shop), {
    apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name: 'pg-nightly', namespace: shop},
    spec: {schedule: '0 0 3 * * *', cluster: {name: 'pg'}, method: 'barmanObjectStore'},
  })
  await client.create(refs.cnpg('backups', shop), {
    apiVersion: 'postgresql.cnpg.io/v1', kind: 'Backup', metadata: {name: 'pg-nightly-20260101030000', namespace: shop, labels: {'cnpg.io/scheduled-backup': 'pg-nightly'}},
    spec: {cluster: {name: 'pg'}, method: 'barmanObjectStore'},
  })

  // ---- the operator: every feature, through the fault proxy, leader election on
  const {namespace: operatorNs, workspaceId} = await operatorNamespaceFor(client, sim, {
    api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 10},
    local_cluster: {enabled: true, cluster_name: 'soak'},
    endpoint_discovery: {enabled: true},
    app_discovery: {enabled: true},
    node_discovery: {enabled: true},
    backup_discovery: {enabled: true, velero_namespace: shop, cnpg_enabled: true},
    certificate_discovery: {enabled: true},
    artifact_discovery: {enabled: true, stale_cleanup_minutes: 5},
    volume_discovery: {enabled: true},
    agent: {enabled: true, icmp_enabled: false, check_interval_seconds: 30},
    cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all'}},
    // on a free port: 8888 may be taken on a shared machine
    external_dns_webhook: {enabled: true, port: await freePort()},
  })
  for (let i = 0; i < 20; i++) {
    sim.insert('endpoints', {
      name: `soak-check-${i}`, kind: 'http', remote_address: '127.0.0.1', remote_port: target.port, workspace: workspaceId,
      spec: {http: {path: '/ok', interval: 30, timeout: 5}},
    })
  }
  proxy = await startKubeFaultProxy({upstream: controlPlane.server, token: controlPlane.token})
  const kubeconfig = await writeKubeconfig(path.join(await mkdtemp(path.join(os.tmpdir(), 'soak-')), 'kubeconfig'), proxy.url, 'replaced-by-the-proxy')
  const snapshotDir = flags['heap-snapshots'] ? path.resolve(flags['heap-snapshots']) : undefined
  if (snapshotDir) await mkdir(snapshotDir, {recursive: true})
  const running = await startOperator({
    kubeconfig, namespace: operatorNs, leaderElect: true, logLevel: 'info',
    env: {NODE_OPTIONS: benchNodeOptions()},
    ...(flags.bin ? {bin: path.resolve(flags.bin)} : {}),
    nodeArgs: snapshotDir ? ['--heapsnapshot-signal=SIGUSR1', `--diagnostic-dir=${snapshotDir}`] : [],
  })
  operator = running
  type ConfigStatus = {phase?: string; controllers?: Array<{name: string; running?: boolean}>}
  for (const deadline = Date.now() + 180_000; ;) {
    if (running.child.exitCode !== null) throw new Error(`operator exited (${running.child.exitCode}):\n${running.rawOutput().slice(-3000)}`)
    const config = await client.getOrUndefined<KubeObject & {status?: ConfigStatus}>(refs.operatorConfig(operatorNs))
    const names = new Set((config?.status?.controllers ?? []).filter((c) => c.running).map((c) => c.name))
    if (config?.status?.phase === 'Ready' && ['endpoint-sync', 'endpoint-discovery', 'k8sapp-sync', 'backup-sync', 'cloud-load-balancer', 'endpoint-monitoring-agent'].every((name) => names.has(name))) break
    if (Date.now() > deadline) throw new Error(`operator not Ready after 180 s: ${JSON.stringify(config?.status)}\n${running.rawOutput().slice(-3000)}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  progress(`operator pid ${running.pid} Ready (every feature running)`)

  // ---- churn, faults and samples
  const churn = new Churn(client, new Prng(seed), shop, (slot) => appNamespaces[slot]!)
  const t0 = Date.now()
  const end = t0 + minutes * 60_000
  let changes = 0
  const churnErrors: string[] = []
  const faults: FaultWindow[] = []
  let watchesCut = 0
  const cpuStart = await cpuSeconds(running.pid)

  const churning = (async () => {
    for (let i = 0; ; i++) {
      const at = t0 + (i * 60_000) / rate
      if (at >= end || running.child.exitCode !== null) return
      await sleepUntil(at)
      try {
        await churn.step()
        changes++
      } catch (error) {
        churnErrors.push((error as Error).message.slice(0, 300))
        if (churnErrors.length <= 5) progress(`a change failed: ${(error as Error).message.slice(0, 300)}`)
      }
    }
  })()

  const faulting = (async () => {
    for (const fault of faultSchedule(minutes, faultEvery, brownOutSeconds)) {
      await sleepUntil(t0 + fault.atMinute * 60_000)
      if (running.child.exitCode !== null) return
      const start = Date.now()
      if (fault.kind === 'brown-out') {
        sim.faults.set({errorRate: 0.6, errorStatuses: [502, 503, 504], rateLimitRate: 0.3, retryAfterSeconds: 2})
        faults.push({kind: fault.kind, start, end: start + fault.forSeconds * 1000})
        await sleepUntil(start + fault.forSeconds * 1000)
        sim.faults.clear()
        progress(`API brown-out of ${fault.forSeconds} s over`)
      } else {
        const n = proxy!.closeWatches()
        watchesCut += n
        faults.push({kind: fault.kind, start, end: start})
        progress(`closed ${n} watches`)
      }
    }
  })()

  const samples: SoakSample[] = []
  const unexpectedLines: LogLine[] = []
  let explainedLines = 0
  let logIndex = 0
  let kubeIndex = 0
  let apiIndex = 0
  let changesBefore = 0
  const sample = async (minute: number): Promise<void> => {
    const probe = await heapProbe(running) as unknown as {rss: number; heapUsed: number; heapTotal: number; external: number; code: {codeAndMetadata: number; bytecodeAndMetadata: number}; eventLoop: {p99Ms: number; maxMs: number}; resources: Record<string, number>}
    const sockets = await openSockets(running.pid)
    const kubeLog = proxy!.log
    let kubeWrites = 0
    for (; kubeIndex < kubeLog.length; kubeIndex++) {
      const entry = kubeLog[kubeIndex]!
      if (isWrite(entry.verb) && entry.status > 0 && entry.status < 400) kubeWrites++
    }
    const apiLog = sim.requests.slice(apiIndex)
    apiIndex += apiLog.length
    const apiWrites = Object.entries(writesByKind(apiLog)).filter(([kind]) => kind !== 'agent/health').reduce((n, [, methods]) => n + Object.values(methods).reduce((a, b) => a + b, 0), 0)
    const lines = running.logs().slice(logIndex) as LogLine[]
    logIndex += lines.length
    // Lines of the last minute whose fault may still be running count as explained if it covers them.
    const {explained, unexpected} = classifyLogLines(lines, faults, FAULT_GRACE_MS)
    explainedLines += explained.length
    unexpectedLines.push(...unexpected)
    const row: SoakSample = {
      minute: round((Date.now() - t0) / 60_000, 2), rssMiB: MiB(probe.rss), heapAfterGcMiB: MiB(probe.heapUsed), heapTotalMiB: MiB(probe.heapTotal),
      jitMiB: MiB(probe.code.codeAndMetadata + probe.code.bytecodeAndMetadata),
      externalMiB: MiB(probe.external), eventLoopP99Ms: probe.eventLoop.p99Ms, eventLoopMaxMs: probe.eventLoop.maxMs,
      handles: Object.entries(probe.resources).filter(([type]) => type !== 'Timeout' && type !== 'Immediate').reduce((n, [, count]) => n + count, 0),
      timers: probe.resources.Timeout ?? 0, sockets,
      changes: changes - changesBefore, kubeWrites, apiWrites, errorLines: unexpected.length,
    }
    changesBefore = changes
    samples.push(row)
    progress(`minute ${minute}: RSS ${row.rssMiB} MiB, heap after GC ${row.heapAfterGcMiB} MiB (JIT ${row.jitMiB}), loop p99 ${row.eventLoopP99Ms} ms, handles ${row.handles}, timers ${row.timers}, sockets ${row.sockets}, changes ${row.changes}, kube writes ${row.kubeWrites}, API writes ${row.apiWrites}, error lines ${row.errorLines}`)
  }

  /** A V8 heap snapshot of the operator (SIGUSR1, --heapsnapshot-signal), once its file is complete. */
  const heapSnapshot = async (dir: string) => {
    const before = new Set(await readdir(dir))
    process.kill(running.pid, 'SIGUSR1')
    for (let size = -1, deadline = Date.now() + 120_000; Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const file = (await readdir(dir)).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'))
      if (!file) continue
      const now = (await stat(path.join(dir, file))).size
      // V8 writes it synchronously: the probe answers only once the process is back, and the size no longer moves.
      if (now > 0 && now === size) {
        await heapProbe(running)
        return progress(`heap snapshot ${path.join(dir, file)}`)
      }
      size = now
    }
    throw new Error('no heap snapshot within 120 s')
  }

  for (let minute = 0; minute <= minutes; minute++) {
    await sleepUntil(t0 + minute * 60_000)
    if (running.child.exitCode !== null) throw new Error(`the operator exited (${running.child.exitCode}) at minute ${minute}:\n${running.rawOutput().slice(-3000)}`)
    await sample(minute)
    // At the end of the warm-up, every --heap-snapshot-every minutes after it, and at the end (after that minute's
    // sample: the snapshot blocks the operator a while).
    const warm = Math.ceil(warmupMinutes)
    if (snapshotDir && (minute === warm || minute === minutes || (snapshotEvery !== undefined && minute > warm && (minute - warm) % snapshotEvery === 0))) await heapSnapshot(snapshotDir)
  }
  await Promise.all([churning, faulting])
  sim.faults.clear()
  const cpuEnd = await cpuSeconds(running.pid)
  const lastProbe = await heapProbe(running) as unknown as {resources: Record<string, number>}

  const summary = summarize(samples, warmupMinutes)
  const atMost = (value: number | null, limit: number) => value !== null && value <= limit
  const result = {
    minutes,
    rate,
    seed,
    faultEveryMinutes: faultEvery,
    brownOutSeconds,
    ...summary,
    goals: {
      heapAfterGcSlopeAtMost1MiBPerHour: atMost(summary.heapAfterGcSlopeMiBPerHour, 1),
      rssSlopeAtMost2MiBPerHour: atMost(summary.rssSlopeMiBPerHour, 2),
      handlesFlat: summary.handles.start !== null && atMost(summary.handles.end, summary.handles.start + 2),
      socketsFlat: summary.sockets.start !== null && atMost(summary.sockets.end, summary.sockets.start + 2),
      noErrorLines: summary.errorLines === 0,
    },
    errorLineSamples: unexpectedLines.slice(0, 20).map((line) => ({ts: line.ts, level: line.level, msg: String(line.msg).slice(0, 200), ...(line.error ? {error: String(line.error).slice(0, 300)} : {})})),
    explainedErrorLines: explainedLines,
    changesByKind: churn.counts,
    churnErrors: churnErrors.length,
    populationAtEnd: churn.population(),
    faults: {brownOuts: faults.filter((f) => f.kind === 'brown-out').length, watchCloses: faults.filter((f) => f.kind === 'watch-close').length, watchesCut},
    handlesAtEndByType: lastProbe.resources,
    operatorCpuSecondsPerMinute: round((cpuEnd - cpuStart) / minutes, 2),
    samples,
    loadAverage: os.loadavg().map((l) => round(l, 2)),
    cpus: os.cpus().length,
  }

  const table = new Table({head: ['min', 'RSS MiB', 'heap MiB', 'loop p99 ms', 'handles', 'timers', 'sockets', 'changes', 'kube w', 'API w', 'errors']})
  for (const s of samples) table.push([s.minute, s.rssMiB, s.heapAfterGcMiB, s.eventLoopP99Ms, s.handles, s.timers, s.sockets, s.changes, s.kubeWrites, s.apiWrites, s.errorLines])
  console.log(table.toString())
  const {samples: _samples, ...shown} = result
  console.log(JSON.stringify(shown, null, 2))
  await mkdir(path.dirname(output), {recursive: true})
  await writeFile(output, JSON.stringify(result, null, 2) + '\n')
  progress(`wrote ${path.relative(process.cwd(), output)}`)
} catch (error) {
  console.error(error)
  exitCode = 1
} finally {
  sim.faults.clear()
  if (operator && flags['operator-log']) await writeFile(flags['operator-log'], operator.rawOutput()).catch(() => {})
  await operator?.stop('SIGTERM').catch(() => {})
  await proxy?.close().catch(() => {})
  await target.close().catch(() => {})
  await sim.close()
  client.close()
  await controlPlane.stop()
}
process.exit(exitCode)
