/**
 * Who wrote what when the operator runs as two replicas (a leader handover): each process behind its own kube fault
 * proxy, API writes told apart by the process that owns the connection; and the oracle's check on it, never two
 * leaders writing.
 */
import {readdirSync, readFileSync, readlinkSync} from 'node:fs'
import {isWrite, type KubeFaultProxy, type Verb} from './kube-proxy.js'

/** A write the apiserver answered with success. */
export const wrote = (entry: {verb: Verb; status: number}): boolean => isWrite(entry.verb) && entry.status > 0 && entry.status < 400

interface Instance {
  proxy: KubeFaultProxy
  pid: number
  /** Replica and generation: `a0`, its restart `a1`, the standby `b0`. */
  label: string
  from: number
}

export interface LabelledWrite {
  at: number
  instance: string
  what: string
}

/** Every operator process of a case, with its proxy and start time, and the API writes of each. */
export class ReplicaLedger {
  private readonly instances: Instance[] = []
  /** The API writes of each replica (told apart by the process that owns the connection). */
  private readonly apiWrites: LabelledWrite[] = []
  /** When the leader was cut off from the apiserver (0: not yet). */
  partitionedAt = 0

  /** A process started through `via` as `replica` (`a`, `b`): labelled with its generation (`a0`, `a1`, …). */
  started(via: KubeFaultProxy, replica: string, pid: number): void {
    this.instances.push({proxy: via, label: `${replica}${this.instances.filter((i) => i.proxy === via).length}`, from: Date.now(), pid})
  }

  /** An API write whose connection came from local port `port`, labelled with the process that owns it. */
  apiWrite(port: number, what: string): void {
    const pid = pidOfLocalPort(port, this.instances.map((i) => i.pid))
    const instance = this.instances.find((i) => i.pid === pid)
    if (instance) this.apiWrites.push({at: Date.now(), instance: instance.label, what})
  }

  /** The successful writes of every replica, but the lease and Events (a candidate writes those as it campaigns). */
  writes(): LabelledWrite[] {
    return this.instances.length === 0 ? [] : [...this.apiWrites, ...this.proxies().flatMap((via) => via.log
      .filter((e) => wrote(e) && !/leases|events/.test(e.resource))
      .map((e) => ({at: e.at, instance: this.instanceAt(via, e.at), what: `${e.verb} ${e.resource} ${e.namespace ?? ''}/${e.name ?? ''}`})))]
  }

  /** A replica other than the first wrote the lease after the partition. */
  leaseTakenOver(): boolean {
    return this.partitionedAt > 0 && this.proxies().some((via) => via.log
      .some((e) => e.resource === 'coordination.k8s.io/leases' && wrote(e) && e.at > this.partitionedAt && this.instanceAt(via, e.at) !== 'a0'))
  }

  /** A replica other than the first wrote something but the lease and Events after the partition. */
  handedOver(): boolean {
    return this.partitionedAt > 0 && this.writes().some((w) => w.at > this.partitionedAt && w.instance !== 'a0')
  }

  private proxies(): KubeFaultProxy[] {
    return [...new Set(this.instances.map((i) => i.proxy))]
  }

  /** The process a proxy served at time `at`: the last one started through it before then. */
  private instanceAt(via: KubeFaultProxy, at: number): string {
    return this.instances.filter((i) => i.proxy === via && i.from <= at).at(-1)?.label ?? this.instances.find((i) => i.proxy === via)!.label
  }
}

/**
 * Which of `pids` owns the TCP connection whose local port is `port` on this machine (Linux: the socket's inode from
 * /proc/net/tcp, then the process whose file descriptors include it). Test support: the API simulator tells the
 * replicas' requests apart this way (both replicas call one API URL).
 */
export function pidOfLocalPort(port: number, pids: number[]): number | undefined {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`
  let inode: string | undefined
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const row = readFileSync(table, 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/)).find((fields) => fields[1]?.endsWith(hex))
    if (row) {
      inode = row[9]
      break
    }
  }
  if (!inode) return undefined
  for (const pid of pids) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSafe(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`)) return pid
    } catch {
      // the process is gone
    }
  }
  return undefined
}

function readlinkSafe(file: string): string | undefined {
  try {
    return readlinkSync(file)
  } catch {
    return undefined
  }
}

/**
 * Never two leaders writing: in time order, the writers form blocks, one process after another; a process that writes
 * again after another one wrote had leadership taken from it and still wrote (pure; undefined when none).
 */
export function twoLeaders(writes: LabelledWrite[]): string | undefined {
  const done = new Set<string>()
  let current: LabelledWrite | undefined
  for (const write of [...writes].sort((a, b) => a.at - b.at)) {
    if (write.instance === current?.instance) {
      current = write
      continue
    }
    if (done.has(write.instance)) return `two leaders writing: ${write.instance} wrote (${write.what}) after ${current!.instance} had taken over (${current!.what})`
    if (current) done.add(current.instance)
    current = write
  }
  return undefined
}
