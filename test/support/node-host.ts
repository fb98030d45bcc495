/**
 * What a cluster with a real Node changes on the host, and how to take all of it back: the processes (kubelet,
 * containerd and its shims, the Pods' processes), mounts, the bridge, iptables chains, sysctls and directories. Every
 * name here is ours (the bridge `polycrate0`, the directory /var/lib/polycrate-node), so a clean-up after a run that
 * died can find what it left by name. Used by node.ts and by node-watchdog.ts.
 */
import {execFile} from 'node:child_process'
import {existsSync, readdirSync} from 'node:fs'
import {mkdir, readFile, readdir, rm, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {promisify} from 'node:util'

const run = promisify(execFile)

/** Everything of the Node lives below this directory (containerd, kubelet, CNI state, logs). */
export const NODE_BASE = '/var/lib/polycrate-node'
export const BRIDGE = 'polycrate0'
export const CNI_NETWORK = 'polycrate'
export const POD_CIDR = '10.244.0.0/24'
/** The bridge's address: where Pods reach the host (and the Node's InternalIP). */
export const HOST_IP = '10.244.0.1'
export const SERVICE_CIDR = '10.0.0.0/24'
export const NODE_NAME = 'polycrate-node'
export const containerdSocket = path.join(NODE_BASE, 'containerd', 'containerd.sock')
const stateFile = path.join(NODE_BASE, 'state.json')

/**
 * Paths outside NODE_BASE that kubelet, containerd or the CNI plugins create although told to use our directories.
 * Removed at the end only when they did not exist before the start.
 */
function foreignPaths(): string[] {
  const hierarchies = existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : []
  return [
    '/var/lib/kubelet', '/var/log/pods', '/var/log/containers', '/var/lib/cni', '/usr/libexec/kubernetes',
    '/run/containerd', '/run/netns', '/run/kubernetes', '/etc/cni', '/opt/cni',
    // util-linux's umount keeps its utab there
    '/run/mount',
    // containerd's cgroups of the containers (cgroup v1, cgroupfs; kubelet runs without QoS cgroups)
    ...hierarchies.flatMap((h) => [`/sys/fs/cgroup/${h}/k8s.io`, `/sys/fs/cgroup/${h}/kubepods`]),
  ]
}

const iptablesTables = ['filter', 'nat', 'mangle', 'raw']

/** Sysctls kubelet, kube-proxy and the CNI bridge plugin set; restored at the end. */
const sysctls = [
  'net/ipv4/ip_forward', 'net/ipv4/conf/all/route_localnet', 'net/bridge/bridge-nf-call-iptables',
  'net/bridge/bridge-nf-call-ip6tables', 'vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes',
]

export interface NodeState {
  /** The process that started the Node (a test run, dev-cluster). */
  ownerPid: number
  watchdogPid?: number
  /** Daemons by name (kubelet, containerd, …). */
  pids: Record<string, number>
  /** foreignPaths that did not exist before the start. */
  created: string[]
  sysctls: Record<string, string>
  /** iptables tables (nf_tables backend: created on first use) that did not exist before the start, per tool. */
  createdTables?: Record<string, string[]>
}

export async function readState(): Promise<NodeState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile, 'utf8')) as NodeState
  } catch {
    return undefined
  }
}

export async function writeState(state: NodeState): Promise<void> {
  await writeFile(stateFile, JSON.stringify(state, null, 2))
}

export function alive(pid: number | undefined): boolean {
  if (!pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Whether `nft` is there to delete the iptables tables a run created (nf_tables backend). */
export const canDropTables = (): boolean => ['/usr/sbin/nft', '/sbin/nft'].some((p) => existsSync(p))

/** Why a Node cannot run here, or undefined when it can. */
export function nodeUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux') return 'a real Node needs Linux'
  if (process.getuid?.() !== 0) return 'a real Node needs root (kubelet, containerd, iptables, mounts)'
  const missing = [
    ['containerd', '/usr/bin/containerd'], ['ctr', '/usr/bin/ctr'], ['runc', '/usr/sbin/runc'],
    ['containerd-shim-runc-v2', '/usr/bin/containerd-shim-runc-v2'],
    ['iptables', '/usr/sbin/iptables'], ['conntrack', '/usr/sbin/conntrack'], ['ip', '/usr/sbin/ip', '/sbin/ip', '/bin/ip'],
    ['CNI bridge plugin', '/usr/lib/cni/bridge'], ['CNI host-local plugin', '/usr/lib/cni/host-local'], ['CNI portmap plugin', '/usr/lib/cni/portmap'],
  ].filter(([, ...paths]) => !paths.some((p) => existsSync(p))).map(([name]) => name)
  if (missing.length > 0) {
    return `a real Node needs ${missing.join(', ')}: apt-get install -y containerd runc containernetworking-plugins iptables conntrack`
  }
  return undefined
}

/** The state a start begins with: which foreign paths exist, the sysctls' values. */
export async function snapshotHost(ownerPid: number): Promise<NodeState> {
  const values: Record<string, string> = {}
  for (const name of sysctls) {
    const value = await readFile(`/proc/sys/${name}`, 'utf8').catch(() => undefined)
    if (value !== undefined) values[name] = value.trim()
  }
  const createdTables: Record<string, string[]> = {}
  for (const tool of ['iptables', 'ip6tables']) {
    const saved = await run(`${tool}-save`).then((r) => r.stdout, () => '')
    createdTables[tool] = iptablesTables.filter((t) => !saved.split('\n').includes(`*${t}`))
  }
  return {ownerPid, pids: {}, created: foreignPaths().filter((p) => !existsSync(p)), sysctls: values, createdTables}
}

/** The bridge with the host's address, and the Service range routed to it (host → ClusterIP before kube-proxy's DNAT). */
export async function createBridge(): Promise<void> {
  await run('ip', ['link', 'add', BRIDGE, 'type', 'bridge'])
  await run('ip', ['addr', 'add', `${HOST_IP}/${POD_CIDR.split('/')[1]}`, 'dev', BRIDGE])
  await run('ip', ['link', 'set', BRIDGE, 'up'])
  await run('ip', ['route', 'add', SERVICE_CIDR, 'dev', BRIDGE, 'src', HOST_IP])
}

export async function ensureDir(dir: string): Promise<void> {
  await mkdir(dir, {recursive: true})
}

/**
 * Takes back everything a Node changed: stops its processes (and every container through containerd while it still
 * runs), unmounts what is mounted below our directories, deletes the bridge and its veths, every iptables chain named
 * KUBE-* or CNI-* (and the rules that jump to them), restores the sysctls, removes the directories. Idempotent; works
 * from the state file when there is one and by our names when there is none.
 */
export async function cleanupNode(log: (line: string) => void = () => {}): Promise<void> {
  const state = await readState()
  const pids = state?.pids ?? {}
  // 1. no new Pods, no new rules
  for (const name of ['kube-scheduler', 'kubelet', 'kube-proxy']) await stopPid(pids[name])
  // 2. every container, while containerd can still clean up after them (runc delete: cgroups, rootfs mounts)
  if (existsSync(containerdSocket)) await removeContainers(log)
  await stopPid(pids.containerd)
  // 3. what is left: shims of our containerd and their descendants (the Pods' processes)
  await killStragglers(log)
  // 4. mounts below our directories (netns, rootfs, volumes), deepest first
  await unmountBelow([NODE_BASE, ...(state?.created ?? []).filter((p) => !p.startsWith('/sys/'))], log)
  // 5. network: veths on the bridge, the bridge (and its route), chains
  await deleteBridge(log)
  for (const tool of ['iptables', 'ip6tables']) {
    await sweepIptables(tool, log)
    await dropEmptyTables(tool, state?.createdTables?.[tool] ?? [])
  }
  await run('conntrack', ['-D', '-s', POD_CIDR]).catch(() => {})
  await run('conntrack', ['-D', '-d', SERVICE_CIDR]).catch(() => {})
  // 6. sysctls and directories
  for (const [name, value] of Object.entries(state?.sysctls ?? {})) await writeFile(`/proc/sys/${name}`, `${value}\n`).catch(() => {})
  for (const dir of state?.created ?? []) {
    if (dir.startsWith('/sys/fs/cgroup/')) await removeCgroup(dir)
    else await rm(dir, {recursive: true, force: true}).catch((error: Error) => log(`could not remove ${dir}: ${error.message}`))
  }
  await rm(NODE_BASE, {recursive: true, force: true}).catch((error: Error) => log(`could not remove ${NODE_BASE}: ${error.message}`))
}

async function stopPid(pid: number | undefined, graceMs = 5000): Promise<void> {
  if (!alive(pid)) return
  try {
    process.kill(pid!, 'SIGTERM')
  } catch {
    return
  }
  const deadline = Date.now() + graceMs
  while (alive(pid) && Date.now() < deadline) await sleep(100)
  if (alive(pid)) {
    try {
      process.kill(pid!, 'SIGKILL')
    } catch {
      // gone
    }
    while (alive(pid)) await sleep(50)
  }
}

export function ctr(...args: string[]): Promise<{stdout: string; stderr: string}> {
  return run('ctr', ['--address', containerdSocket, '--namespace', 'k8s.io', ...args], {maxBuffer: 16 * 1024 * 1024, timeout: 120_000})
}

async function removeContainers(log: (line: string) => void): Promise<void> {
  const ids = await ctr('containers', 'list', '--quiet').then((r) => r.stdout.split('\n').filter(Boolean), () => [] as string[])
  await Promise.all(ids.map(async (id) => {
    await ctr('tasks', 'kill', '--all', '--signal', 'SIGKILL', id).catch(() => {})
    // delete waits for nothing: retry while the task is still stopping
    for (let attempt = 0; attempt < 50; attempt++) {
      const deleted = await ctr('tasks', 'delete', '--force', id).then(() => true, (error: {stderr?: string}) => /not found/.test(error.stderr ?? ''))
      if (deleted) break
      await sleep(100)
    }
    await ctr('containers', 'delete', id).catch((error: {stderr?: string}) => log(`ctr containers delete ${id}: ${error.stderr?.trim()}`))
  }))
}

interface Proc {
  pid: number
  ppid: number
  cmdline: string
}

async function processes(): Promise<Proc[]> {
  const list: Proc[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).replaceAll('\0', ' ')
      list.push({pid: Number(entry), ppid, cmdline})
    } catch {
      // exited meanwhile
    }
  }
  return list
}

async function killStragglers(log: (line: string) => void): Promise<void> {
  const all = await processes()
  const roots = all.filter((p) => p.pid !== process.pid && p.cmdline.includes(NODE_BASE))
  const doomed = new Set(roots.map((p) => p.pid))
  let grew = true
  while (grew) {
    grew = false
    for (const p of all) {
      if (doomed.has(p.ppid) && !doomed.has(p.pid)) {
        doomed.add(p.pid)
        grew = true
      }
    }
  }
  doomed.delete(process.pid)
  if (doomed.size === 0) return
  log(`killing ${doomed.size} leftover process(es) of the Node: ${[...doomed].join(' ')}`)
  for (const pid of doomed) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
  const deadline = Date.now() + 10_000
  while ([...doomed].some(alive) && Date.now() < deadline) await sleep(100)
}

/** Mount points (from /proc/self/mountinfo) below the given directories, deepest first. */
export async function mountsBelow(dirs: readonly string[]): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8')
  const points = info.split('\n').filter(Boolean).map((line) => line.split(' ')[4]!.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
  return points.filter((p) => dirs.some((d) => p === d || p.startsWith(`${d}/`))).sort((a, b) => b.length - a.length)
}

async function unmountBelow(dirs: readonly string[], log: (line: string) => void): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const points = await mountsBelow(dirs)
    if (points.length === 0) return
    for (const point of points) {
      await run('umount', [point]).catch(() => run('umount', ['--lazy', point])).catch((error: Error) => log(`umount ${point}: ${error.message}`))
    }
  }
}

async function deleteBridge(log: (line: string) => void): Promise<void> {
  const {stdout} = await run('ip', ['-o', 'link', 'show', 'master', BRIDGE]).catch(() => ({stdout: ''}))
  for (const line of stdout.split('\n').filter(Boolean)) {
    const name = line.split(':')[1]?.trim().split('@')[0]
    if (name) await run('ip', ['link', 'delete', name]).catch(() => {})
  }
  const exists = await run('ip', ['link', 'show', BRIDGE]).then(() => true, () => false)
  if (exists) await run('ip', ['link', 'delete', BRIDGE]).catch((error: Error) => log(`ip link delete ${BRIDGE}: ${error.message}`))
}

const ours = /^(KUBE|CNI)-/

/** Deletes every chain named KUBE-* or CNI-* and every rule of another chain that jumps to one. */
export async function sweepIptables(tool: 'iptables' | 'ip6tables' | string, log: (line: string) => void = () => {}): Promise<void> {
  for (const table of ['filter', 'nat', 'mangle', 'raw']) {
    const saved = await run(`${tool}-save`, ['-t', table]).then((r) => r.stdout, () => '')
    const chains = saved.split('\n').filter((l) => l.startsWith(':')).map((l) => l.slice(1).split(' ')[0]!).filter((c) => ours.test(c))
    const rules = saved.split('\n').filter((l) => l.startsWith('-A ')).map(splitRule)
    // rules of other chains (built-in or not) that jump to ours
    for (const rule of rules) {
      const chain = rule[1]!
      const target = rule[rule.indexOf('-j') + 1] ?? rule[rule.indexOf('-g') + 1]
      if (!ours.test(chain) && target !== undefined && ours.test(target)) {
        await run(tool, ['-w', '-t', table, '-D', ...rule.slice(1)]).catch((error: Error) => log(`${tool} -t ${table} -D ${rule.slice(1).join(' ')}: ${error.message}`))
      }
    }
    for (const chain of chains) await run(tool, ['-w', '-t', table, '-F', chain]).catch(() => {})
    for (const chain of chains) await run(tool, ['-w', '-t', table, '-X', chain]).catch((error: Error) => log(`${tool} -t ${table} -X ${chain}: ${error.message}`))
  }
}

/**
 * With iptables' nf_tables backend, the first use creates the tables: take back those that were not there before
 * and hold no rule now. Needs `nft` (Debian's nftables); without it they stay, empty, with ACCEPT policies.
 */
async function dropEmptyTables(tool: string, created: readonly string[]): Promise<void> {
  if (created.length === 0 || !canDropTables()) return
  const version = await run(tool, ['--version']).then((r) => r.stdout, () => '')
  if (!version.includes('nf_tables')) return
  const family = tool === 'ip6tables' ? 'ip6' : 'ip'
  for (const table of created) {
    const saved = await run(`${tool}-save`, ['-t', table]).then((r) => r.stdout, () => '')
    const empty = !saved.split('\n').some((l) => l.startsWith('-A ') || (l.startsWith(':') && !/^:(PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) /.test(l)))
    if (empty) await run('nft', ['delete', 'table', family, table]).catch(() => {})
  }
}

/** Splits one line of iptables-save into arguments (double quotes group, backslash escapes). */
export function splitRule(line: string): string[] {
  const args: string[] = []
  let current = ''
  let quoted = false
  let has = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === '\\' && i + 1 < line.length) {
      current += line[++i]
      has = true
    } else if (c === '"') {
      quoted = !quoted
      has = true
    } else if (c === ' ' && !quoted) {
      if (has) args.push(current)
      current = ''
      has = false
    } else {
      current += c
      has = true
    }
  }
  if (has) args.push(current)
  return args
}

async function removeCgroup(dir: string): Promise<void> {
  if (!existsSync(dir)) return
  const entries = await readdir(dir, {withFileTypes: true}).catch(() => [])
  for (const entry of entries) if (entry.isDirectory()) await removeCgroup(path.join(dir, entry.name))
  await rm(dir, {recursive: false, force: true}).catch(() => run('rmdir', [dir]).catch(() => {}))
}

/** What a clean-up must leave no trace of, for tests to compare before and after. */
export async function hostTraces(): Promise<{mounts: string[]; links: string[]; chains: string[]; tables: string[]; paths: string[]; processes: string[]}> {
  const mounts = await mountsBelow([NODE_BASE, '/var/lib/kubelet', '/run/containerd', '/run/netns'])
  const links = (await run('ip', ['-o', 'link', 'show']).then((r) => r.stdout, () => ''))
    .split('\n').map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '').filter((n) => n === BRIDGE || n.startsWith('veth'))
  const chains: string[] = []
  const tables: string[] = []
  for (const tool of ['iptables', 'ip6tables']) {
    const saved = await run(`${tool}-save`).then((r) => r.stdout, () => '')
    for (const line of saved.split('\n')) {
      if (/(^:|-j |-g )(KUBE|CNI)-/.test(line)) chains.push(`${tool}: ${line}`)
      if (line.startsWith('*')) tables.push(`${tool}: ${line.slice(1)}`)
    }
  }
  const paths = [NODE_BASE, ...foreignPaths()].filter((p) => existsSync(p))
  const procs = (await processes()).filter((p) => p.pid !== process.pid && p.cmdline.includes(NODE_BASE)).map((p) => `${p.pid} ${p.cmdline}`)
  return {mounts, links, chains, tables, paths, processes: procs}
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
