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

/** A lease write that went through: who wrote it and when (the proxy's clock, as every write here). */
export interface LeaseWrite {
  at: number
  instance: string
}

/** What the oracle found about the leadership of a case with two replicas (see `leadershipFacts`). */
export interface LeadershipFacts {
  /** Writes (but the Lease) by a replica while another held the lease it took last: must be none. */
  afterTakeover: LabelledWrite[]
  /** Lease takeovers: a lease write by another replica than the one that wrote the lease before. */
  takeovers: Array<{at: number; from: string; to: string}>
  /** The first write (but the Lease) of each replica. */
  firstWrite: Map<string, number>
}

/**
 * Never two writers (pure): the lease writes say who held the lease from when (the replica that wrote it last); every
 * other write must come from that holder. A write by a replica after another one took the lease over is counted,
 * whatever the replica believed. Writes before the first lease write count against nobody.
 */
export function leadershipFacts(leaseWrites: LeaseWrite[], writes: LabelledWrite[]): LeadershipFacts {
  const leases = [...leaseWrites].sort((a, b) => a.at - b.at)
  const takeovers: LeadershipFacts['takeovers'] = []
  for (let i = 1; i < leases.length; i++) {
    if (leases[i]!.instance !== leases[i - 1]!.instance) takeovers.push({at: leases[i]!.at, from: leases[i - 1]!.instance, to: leases[i]!.instance})
  }
  const holderAt = (at: number) => leases.filter((lease) => lease.at <= at).at(-1)?.instance
  const afterTakeover: LabelledWrite[] = []
  const firstWrite = new Map<string, number>()
  for (const write of [...writes].sort((a, b) => a.at - b.at)) {
    if (!firstWrite.has(write.instance)) firstWrite.set(write.instance, write.at)
    const holder = holderAt(write.at)
    if (holder !== undefined && holder !== write.instance) afterTakeover.push(write)
  }
  return {afterTakeover, takeovers, firstWrite}
}

/** Every operator process of a case, with its proxy and start time, and the API writes of each. */
export class ReplicaLedger {
  private readonly instances: Instance[] = []
  /** The API writes of each replica (told apart by the process that owns the connection). */
  private readonly apiWrites: LabelledWrite[] = []
  /** When the leader was cut off from the apiserver or frozen (0: not yet). */
  partitionedAt = 0

  /** A process started through `via` as `replica` (`a`, `b`): labelled with its generation (`a0`, `a1`, …). */
  started(via: KubeFaultProxy, replica: string, pid: number): void {
    this.instances.push({proxy: via, label: `${replica}${this.instances.filter((i) => i.proxy === via).length}`, from: Date.now(), pid})
  }

  /** The label of the process that owns the client end of a connection from local port `port` (proxies tag connections with it). */
  processOf(port: number): string | undefined {
    const pid = pidOfLocalPort(port, this.instances.map((i) => i.pid))
    return this.instances.find((i) => i.pid === pid)?.label
  }

  /** The process of `label`. */
  pidOf(label: string): number | undefined {
    return this.instances.find((i) => i.label === label)?.pid
  }

  /** An API write whose connection came from local port `port`, labelled with the process that owns it. */
  apiWrite(port: number, what: string): void {
    const label = this.processOf(port)
    if (label) this.apiWrites.push({at: Date.now(), instance: label, what})
  }

  /** An API write already labelled (the API fault proxy tags its connections). */
  apiWriteBy(instance: string, at: number, what: string): void {
    this.apiWrites.push({at, instance, what})
  }

  /** The successful writes of every replica, but the Lease. */
  writes(): LabelledWrite[] {
    return this.instances.length === 0 ? [] : [...this.apiWrites, ...this.proxies().flatMap((via) => via.log
      .filter((e) => wrote(e) && !isLease(e.resource))
      .map((e) => ({at: e.at, instance: e.process ?? this.instanceAt(via, e.at), what: `${e.verb} ${e.resource} ${e.namespace ?? ''}/${e.name ?? ''}`})))]
  }

  /** Every lease write that went through, by whom. */
  leaseWrites(): LeaseWrite[] {
    return this.proxies().flatMap((via) => via.log.filter((e) => isLease(e.resource) && wrote(e)).map((e) => ({at: e.at, instance: e.process ?? this.instanceAt(via, e.at)})))
  }

  /** Who holds the lease now: the replica that wrote it last. */
  holder(): string | undefined {
    return this.leaseWrites().sort((a, b) => a.at - b.at).at(-1)?.instance
  }

  /** A replica other than the first wrote the lease after the partition. */
  leaseTakenOver(): boolean {
    return this.partitionedAt > 0 && this.leaseWrites().some((e) => e.at > this.partitionedAt && e.instance !== 'a0')
  }

  /** A replica other than the first wrote something but the Lease after the partition. */
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

const isLease = (resource: string): boolean => resource === 'coordination.k8s.io/leases'

/**
 * Which of `pids` owns the TCP connection whose local port is `port` on this machine (Linux: the socket's inode from
 * /proc/net/tcp, then the process whose file descriptors include it). Test support: the API simulator tells the
 * replicas' requests apart this way (both replicas call one API URL).
 */
export function pidOfLocalPort(port: number, pids: number[]): number | undefined {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`
  // Every socket bound to that local port (another address, or a closed one in TIME_WAIT, whose inode is 0, can share it).
  const sockets = new Set<string>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const fields of readFileSync(table, 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/))) {
      if (fields[1]?.endsWith(hex) && fields[9] && fields[9] !== '0') sockets.add(`socket:[${fields[9]}]`)
    }
  }
  if (sockets.size === 0) return undefined
  for (const pid of pids) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => sockets.has(readlinkSafe(`/proc/${pid}/fd/${fd}`) ?? ''))) return pid
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
