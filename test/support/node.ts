/**
 * A test cluster with a real Node: the control plane of control-plane.ts in its `node` mode (ServiceAccount
 * admission, all default controllers, an apiserver Pods reach), plus kube-scheduler, kube-proxy (iptables), Debian's
 * containerd + runc + CNI plugins (a bridge `polycrate0`, 10.244.0.0/24) and a kubelet, all built from the same Go
 * modules as the control plane (test/controlplane/build.sh --node). Images come from archives imported into containerd
 * (`loadImage`); the sandbox (pause) image and a tiny HTTP server image are built here (test/node/images/build.sh).
 *
 * One such cluster per machine (the bridge, iptables and /var/lib/kubelet are global): a second start fails while the
 * first one's process lives, and cleans up after it when it died. `stop()` leaves nothing behind (processes, mounts,
 * the bridge, iptables chains, sysctls, directories); a watchdog process does the same when the process that started
 * the cluster dies without stopping it. Needs root: see `nodeUnsupportedReason()`.
 */
import {execFile, spawn} from 'node:child_process'
import {closeSync, existsSync, openSync} from 'node:fs'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'
import yaml from 'js-yaml'
import {KubeClient, type KubeObject} from '../../src/kube/client.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {ensureBinaries, firstAddress, freePort, startControlPlane, type ControlPlane} from './control-plane.js'
import {writeKubeconfig} from './kubeconfig-file.js'
import {eventually} from './helpers.js'
import {
  alive, BRIDGE, cleanupNode, CNI_NETWORK, containerdSocket, createBridge, ctr, HOST_IP, NODE_BASE, NODE_NAME,
  nodeUnsupportedReason, POD_CIDR, readState, SERVICE_CIDR, snapshotHost, writeState,
} from './node-host.js'

export {canDropTables, hostTraces, nodeUnsupportedReason} from './node-host.js'

const run = promisify(execFile)
const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../..')
const imagesScript = path.resolve(here, '../node/images/build.sh')

export interface NodeCluster extends ControlPlane {
  /** The Node's name (`polycrate-node`). */
  nodeName: string
  /** Where Pods reach the host: the bridge's address (10.244.0.1), also the Node's InternalIP and the apiserver's
   * advertised address. Host servers Pods must reach (the API simulator, webhooks run in the test process) bind
   * there or on 0.0.0.0; the address exists from the start on. */
  hostIP: string
  /** The Pods' addresses (10.244.0.0/24) and the Services' (10.0.0.0/24; 10.0.0.1 is `kubernetes`). */
  podCIDR: string
  serviceCIDR: string
  /** Images built here and already loaded: the sandbox image and a tiny HTTP server (test/node/images/echo). */
  images: {pause: string; echo: string}
  /** containerd's socket (for `ctr --address … --namespace k8s.io`). */
  containerdSocket: string
  /** Imports an image archive (OCI layout or docker-save tarball) into the Node's containerd; returns the names it
   * carried. Pods use them with `imagePullPolicy: IfNotPresent` (a tag other than `latest`) or `Never`. */
  loadImage(archivePath: string): Promise<string[]>
  /** Stops everything and removes every trace on the host. */
  stop(): Promise<void>
}

export interface NodeClusterOptions {
  log?: (line: string) => void
  /** How long to wait for the Node to become Ready. Default 180 s. */
  readyTimeoutMs?: number
}

/** Starts a cluster with a real Node and waits until the Node is Ready and kube-proxy serves the `kubernetes` Service. */
export async function startCluster(options: NodeClusterOptions = {}): Promise<NodeCluster> {
  const log = options.log ?? (() => {})
  const unsupported = nodeUnsupportedReason()
  if (unsupported) throw new Error(unsupported)
  const started = Date.now()
  const step = (what: string) => log(`[node] ${what} (${((Date.now() - started) / 1000).toFixed(1)}s)`)
  const bin = await ensureBinaries(log, {node: true})
  const imagesDir = await buildImages(log)
  const images = {
    pause: (await readFile(path.join(imagesDir, 'pause.ref'), 'utf8')).trim(),
    echo: (await readFile(path.join(imagesDir, 'echo.ref'), 'utf8')).trim(),
  }
  step('binaries and images ready')

  await claimHost(log)
  const state = await snapshotHost(process.pid)
  await writeState(state)
  const watchdog = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'node-watchdog.ts'), String(process.pid)], {
    cwd: repoRoot, detached: true, stdio: 'ignore',
  })
  watchdog.unref()
  state.watchdogPid = watchdog.pid
  await writeState(state)

  let controlPlane: ControlPlane | undefined
  const stop = async () => {
    await cleanupNode(log)
    await controlPlane?.stop()
    if (alive(state.watchdogPid)) process.kill(state.watchdogPid!, 'SIGKILL')
  }

  try {
    await createBridge()
    controlPlane = await startControlPlane({
      log,
      node: {advertiseAddress: HOST_IP, nodeName: NODE_NAME, clusterCidr: POD_CIDR, serviceClusterIpRange: SERVICE_CIDR},
    })
    step(`control plane ready at ${controlPlane.server}`)
    const dirs = {
      logs: path.join(NODE_BASE, 'logs'), containerd: path.join(NODE_BASE, 'containerd'), cni: path.join(NODE_BASE, 'cni'),
      kubelet: path.join(NODE_BASE, 'kubelet'), config: path.join(NODE_BASE, 'config'),
    }
    for (const dir of Object.values(dirs)) await mkdir(dir, {recursive: true})
    const daemon = async (name: string, command: string, args: string[]) => {
      const out = openSync(path.join(dirs.logs, `${name}.log`), 'a')
      const child = spawn(command, args, {detached: true, stdio: ['ignore', out, out]})
      closeSync(out)
      child.unref()
      state.pids[name] = child.pid!
      await writeState(state)
      return child
    }
    const exitedEarly = (name: string, child: ReturnType<typeof spawn>) =>
      new Promise<never>((_, reject) => child.once('exit', async (code, signal) => {
        const tail = (await readFile(path.join(dirs.logs, `${name}.log`), 'utf8').catch(() => '')).split('\n').slice(-25).join('\n')
        reject(new Error(`${name} exited (${code ?? signal}) while the Node started:\n${tail}`))
      }))

    // containerd: its own root, state and socket; the locally built sandbox image; overlayfs; our CNI config.
    await writeFile(path.join(dirs.config, 'containerd.toml'), containerdConfig(dirs, images.pause))
    const containerd = await daemon('containerd', 'containerd', ['--config', path.join(dirs.config, 'containerd.toml')])
    await Promise.race([eventually(() => ctr('version').then(() => true, () => false), 30_000, 'containerd'), exitedEarly('containerd', containerd)])
    for (const name of ['pause', 'echo']) await importImage(path.join(imagesDir, `${name}.tar`))
    step('containerd running, images imported')

    await mkdir(path.join(dirs.cni, 'net.d'), {recursive: true})
    await writeFile(path.join(dirs.cni, 'net.d', '10-polycrate.conflist'), JSON.stringify(cniConfig(dirs.cni), null, 2))
    const ca = controlPlane.clusterCa!
    const nodeKubeconfig = await writeKubeconfig(path.join(dirs.config, 'kubelet.kubeconfig'), controlPlane.server, controlPlane.nodeToken!, ca.cert)
    const adminKubeconfig = await writeKubeconfig(path.join(dirs.config, 'admin.kubeconfig'), controlPlane.server, controlPlane.token, ca.cert)
    await writeFile(path.join(dirs.config, 'kubelet.yaml'), yaml.dump(kubeletConfig(dirs, ca.file)))
    const kubelet = await daemon('kubelet', path.join(bin, 'kubelet'), [
      '--config', path.join(dirs.config, 'kubelet.yaml'), '--kubeconfig', nodeKubeconfig,
      '--root-dir', dirs.kubelet, '--cert-dir', path.join(dirs.kubelet, 'pki'),
      '--hostname-override', NODE_NAME, '--node-ip', HOST_IP, '-v', '1',
    ])
    const proxy = await daemon('kube-proxy', path.join(bin, 'kube-proxy'), [
      '--kubeconfig', adminKubeconfig, '--proxy-mode', 'iptables', '--cluster-cidr', POD_CIDR, '--hostname-override', NODE_NAME,
      '--conntrack-max-per-core', '0', '--conntrack-tcp-timeout-established', '0', '--conntrack-tcp-timeout-close-wait', '0',
      '--metrics-bind-address', '127.0.0.1:10249', '--healthz-bind-address', '127.0.0.1:10256', '-v', '1',
    ])
    const scheduler = await daemon('kube-scheduler', path.join(bin, 'kube-scheduler'), [
      '--kubeconfig', adminKubeconfig, '--leader-elect=false', '--bind-address', '127.0.0.1', '--secure-port', String(await freePort()), '-v', '1',
    ])
    step('kubelet, kube-proxy, kube-scheduler started')

    const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}))
    try {
      const timeout = options.readyTimeoutMs ?? 180_000
      await Promise.race([
        eventually(() => nodeReady(client), timeout, `Node ${NODE_NAME} Ready (see kubelet.log)`),
        exitedEarly('kubelet', kubelet), exitedEarly('kube-scheduler', scheduler), exitedEarly('kube-proxy', proxy),
      ])
      step(`Node ${NODE_NAME} Ready`)
      const serviceIp = firstAddress(SERVICE_CIDR)
      await Promise.race([
        eventually(() => connects(serviceIp, 443), 60_000, `kube-proxy to serve ${serviceIp}:443`),
        exitedEarly('kube-proxy', proxy),
      ])
      step(`kube-proxy serves the kubernetes Service at ${serviceIp}:443`)
    } finally {
      client.close()
    }
  } catch (error) {
    // the logs go with the clean-up: keep a copy to read why the start failed
    const kept = `/tmp/polycrate-node-logs-${new Date().toISOString().replace(/[:.]/g, '-')}`
    const copied = await run('cp', ['-r', path.join(NODE_BASE, 'logs'), kept]).then(() => true, () => false)
    await stop().catch((cleanupError: Error) => log(`clean-up after a failed start: ${cleanupError.message}`))
    if (copied && error instanceof Error) error.message += `\n(the Node's logs: ${kept})`
    throw error
  }

  return {
    ...controlPlane,
    nodeName: NODE_NAME,
    hostIP: HOST_IP,
    podCIDR: POD_CIDR,
    serviceCIDR: SERVICE_CIDR,
    images,
    containerdSocket,
    loadImage: importImage,
    stop,
  }
}

/**
 * Waits until the serviceaccount controller has made a namespace's ServiceAccount (`default`): with the
 * ServiceAccount admission plugin on, Pods are refused until it exists.
 */
export async function waitForServiceAccount(client: KubeClient, namespace: string, name = 'default', timeoutMs = 60_000): Promise<void> {
  await eventually(async () =>
    (await client.getOrUndefined({group: '', version: 'v1', plural: 'serviceaccounts', namespace, name}).catch(() => undefined)) !== undefined, timeoutMs, `ServiceAccount ${namespace}/${name}`)
}

/** Builds (or reuses) the pause and echo images; returns their directory. */
export async function buildImages(log: (line: string) => void = () => {}): Promise<string> {
  const {stdout, stderr} = await run('bash', [imagesScript], {maxBuffer: 16 * 1024 * 1024})
  if (stderr.trim()) log(stderr.trimEnd())
  const dir = stdout.trim().split('\n').pop()
  if (!dir) throw new Error('test/node/images/build.sh printed no directory')
  return dir
}

async function importImage(archivePath: string): Promise<string[]> {
  const {stdout} = await ctr('images', 'import', archivePath)
  return [...stdout.matchAll(/^unpacking (\S+) \(/gm)].map((m) => m[1]!)
}

/** Takes the host for this process: fails while another live process has a Node, cleans up after a dead one. */
async function claimHost(log: (line: string) => void): Promise<void> {
  const previous = await readState()
  if (previous && previous.ownerPid !== process.pid && alive(previous.ownerPid)) {
    throw new Error(`a cluster with a real Node already runs on this machine (process ${previous.ownerPid}, ${NODE_BASE}); stop it first — there can be one at a time`)
  }
  if (previous?.watchdogPid && alive(previous.watchdogPid)) {
    // the watchdog of a run that died is cleaning up right now
    await eventually(async () => !alive(previous.watchdogPid), 120_000, 'the previous run\'s clean-up')
  }
  const leftovers = previous !== undefined || existsSync(NODE_BASE) || (await run('ip', ['link', 'show', BRIDGE]).then(() => true, () => false))
  if (leftovers) {
    log(`[node] cleaning up after a previous run that did not stop (${NODE_BASE}, ${BRIDGE})`)
    await cleanupNode(log)
  }
  await mkdir(NODE_BASE, {recursive: true})
}

function containerdConfig(dirs: {containerd: string; cni: string}, sandboxImage: string): string {
  const q = JSON.stringify
  return `version = 2
root = ${q(path.join(dirs.containerd, 'root'))}
state = ${q(path.join(dirs.containerd, 'state'))}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = ${q(containerdSocket)}

[ttrpc]
  address = ${q(`${containerdSocket}.ttrpc`)}

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(path.join(dirs.containerd, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(sandboxImage)}
  # this machine has no CAP_SYS_RESOURCE: a negative oom_score_adj makes every sandbox fail in runc
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${q(path.join(dirs.containerd, 'runc'))}

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${q(path.join(dirs.cni, 'net.d'))}
    max_conf_num = 1
`
}

function cniConfig(cniDir: string): object {
  return {
    cniVersion: '0.4.0',
    name: CNI_NETWORK,
    plugins: [
      {
        type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: true, hairpinMode: true,
        ipam: {type: 'host-local', ranges: [[{subnet: POD_CIDR, gateway: HOST_IP}]], routes: [{dst: '0.0.0.0/0'}], dataDir: path.join(cniDir, 'ipam')},
      },
      {type: 'portmap', capabilities: {portMappings: true}},
    ],
  }
}

/** The settings this machine needs (a shared CI host): cgroup v1 with cgroupfs, no QoS cgroups, no swap
 * check, image GC and eviction that never fire on a shared disk. */
function kubeletConfig(dirs: {kubelet: string; logs: string}, caFile: string): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    containerRuntimeEndpoint: `unix://${containerdSocket}`,
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: {'memory.available': '1Mi', 'nodefs.available': '1%', 'nodefs.inodesFree': '1%', 'imagefs.available': '1%'},
    address: HOST_IP,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: caFile}},
    authorization: {mode: 'Webhook'},
    clusterDomain: 'cluster.local',
    volumePluginDir: path.join(dirs.kubelet, 'volume-plugins'),
    podLogsDir: path.join(NODE_BASE, 'pod-logs'),
    serializeImagePulls: false,
    hairpinMode: 'hairpin-veth',
    protectKernelDefaults: false,
    rotateCertificates: false,
    serverTLSBootstrap: false,
  }
}

type Node = KubeObject & {spec?: {taints?: Array<{key: string}>}; status?: {conditions?: Array<{type: string; status: string}>}}

async function nodeReady(client: KubeClient): Promise<boolean> {
  const node = await client.getOrUndefined<Node>({group: '', version: 'v1', plural: 'nodes', name: NODE_NAME}).catch(() => undefined)
  const ready = node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false
  // the node lifecycle controller lifts the not-ready taint once the kubelet reports Ready; Pods need both
  return ready && !(node?.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/not-ready')
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({host, port, timeout: 2000})
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
  })
}
