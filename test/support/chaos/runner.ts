/**
 * One case of the fault campaign: a workload against the shared control plane and a fresh API simulator, with the
 * operator as a real process behind the kube fault proxy, optionally one fault; then the differential oracle.
 *
 * Oracle: the end state is the polycrate.io CRs of the case's namespaces (name, labels, finalizers, spec) and the live
 * API objects of the synced collections, plus what the workload observes (`Workload.observe`: a credentials Secret, a
 * Service's status), normalised (ids, uids, times, resourceVersions dropped or replaced, the case
 * prefix and namespaces replaced by placeholders, sorted). A perturbed run must reach the reference end state within
 * 60 s of its last fault (liveness). Safety, checked on every snapshot and at the end: no two live API objects with
 * one natural key; no API DELETE of an object the reference run never deleted (its source still exists); no source
 * left terminating (a finalizer of ours kept on a deleted source); the operator never exits unless the campaign
 * killed it or it lost its lease; in a leader handover or a paused leader (two replicas), never two writers: no
 * write, kube or API, by a replica after another took the lease (`leadershipFacts`; the proxies tag each connection
 * with the process that opened it), and never two leaders writing (`twoLeaders`); with the API fault proxy's
 * schedule, no API object created more often than in the reference (a create whose answer was lost and that was
 * made again instead of found by its natural key).
 *
 * The operator reaches the API simulator through the API fault proxy (api-proxy.ts) in every case; a case of kind
 * `api` (or a crash case with `apiSchedule`) arms its seeded schedule.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {randomBytes} from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {operatorNamespaceFor} from '../api-setup.js'
import {ApiSimulator, S3_KEY_PATTERN} from '../api-simulator/index.js'
import {adminClient, controlPlane, freshNamespace} from '../cluster.js'
import {writeKubeconfig} from '../kubeconfig-file.js'
import {startOperator, type OperatorProcess} from '../operator-process.js'
import {splitWrite, startKubeFaultProxy, writePoint, type CrashTarget, type FailKind, type FaultCounts, type KubeFaultProxy} from './kube-proxy.js'
import {emptyCaseNamespace, uncoveredKinds} from './cleanup.js'
import {leadershipFacts, ReplicaLedger, twoLeaders, wrote} from './replicas.js'
import {requestClass, startApiFaultProxy, type ApiFaultProxy, type ApiFaultStep} from './api-proxy.js'
import type {Workload, WorkloadContext} from './workloads.js'

export type Fault =
  | {kind: 'none'}
  | {kind: 'crash'; targets: CrashTarget[]; storm?: StormInjection[]; api?: ApiFaultWindow; apiSchedule?: ApiFaultStep[]}
  | {kind: 'storm'; injections: StormInjection[]; api?: ApiFaultWindow}
  | {kind: 'stale'; resource: string; atStep: number}
  | {kind: 'coalesce'; resource?: string; atStep: number}
  | {kind: 'hold'; ms: number; atStep: number}
  | {kind: 'fail'; failure: FailKind; verb?: 'list' | 'watch' | 'create' | 'patch' | 'update' | 'delete'; resource?: string; times: number; atStep: number}
  | {kind: 'refuse'; ms: number; atStep: number}
  | {kind: 'handover'; partitionMs: number; atStep: number}
  /** Two replicas; the leader's process frozen (SIGSTOP) for `ms` before step `atStep` while the steps go on, then resumed (SIGCONT). */
  | {kind: 'pause'; ms: number; atStep: number}
  /** The API fault proxy's seeded schedule (answers lost after the write, refused before it, slow, reset mid-body). */
  | {kind: 'api'; schedule: ApiFaultStep[]}

/** One injection of a storm, `afterMs` after the first user operation. */
export interface StormInjection {
  afterMs: number
  /** stale: the next LIST of `resource` answers with an old body, and its watches are cut so it relists now; coalesce: its watches are cut (410 → relist). */
  kind: 'stale' | 'coalesce'
  /** Every resource's watches when omitted (coalesce only). */
  resource?: string
}

/** A window in which the API simulator fails a share of requests (errors 500/502/503, 429 with Retry-After, or dropped connections). */
export interface ApiFaultWindow {
  outcome: 'error' | 'rate-limit' | 'drop'
  rate: number
  afterMs: number
  ms: number
}

export interface NormalisedObject {
  key: string
  value: unknown
}

export interface CaseResult {
  /** The normalised end state. */
  state: NormalisedObject[]
  /** Every successful write (kube and API) until the end state was taken, `point#n` (see `writePoint`), in order. */
  writePoints: string[]
  /** The crashes that happened: `point#k`. */
  crashed: string[]
  /** Watch closes that cut at least one watch (events in between coalesce into the relist). */
  coalesced: number
  /** The LIST resources the proxy cached (candidates for stale lists). */
  listResources: string[]
  /** API objects deleted (collection/name, normalised). */
  apiDeletes: string[]
  /** The polycrate.io CRs the operator deleted (normalised `plural namespace/name`). */
  crDeletes: string[]
  violations: string[]
  counts: FaultCounts
  /** Whether the fault actually happened (a crash point may not be reached). */
  faultApplied: boolean
  seconds: number
  /** The API requests the schedule counts (see api-proxy's requestClass): a reference's are what a schedule spreads over. */
  apiRequests: {writes: number; reads: number}
  /** The API faults that happened: `<class> <collection>` → count (api-proxy's faultClass). */
  apiFaults: Record<string, number>
  /** Normalised natural key → API objects ever created with it in the case (soft-deleted ones included). */
  apiCreated: Record<string, number>
  /** With two replicas (handover, pause): what the oracle found about who wrote when. */
  leadership?: LeadershipReport
}

export interface LeadershipReport {
  /** The freeze (pause) or the partition, ms. */
  faultMs: number
  /** From the freeze (or partition) to the first lease write by another replica (undefined: nobody took over). */
  handoverMs?: number
  /** From the freeze to the new leader's first write but the Lease. */
  firstWriteMs?: number
  /** Writes (kube and API) by a replica after another took the lease: must be 0. */
  afterTakeover: number
  /** Lease takeovers in the case. */
  takeovers: number
  /** Writes by a replica that never held the lease, and by any replica but the first (0 when the leader kept leading). */
  otherWrites: number
  /** Successful writes in the case by every replica (kube and API, the Lease aside). */
  writes: number
  /** Successful writes of the reference run (one process, no Lease): `writes` less this is what the fault cost. */
  referenceWrites?: number
}

const POLYCRATE_PLURALS = ['endpoints', 'hosts', 'k8svolumes', 'backups', 'backupschedules', 'k8sapps', 'certificates', 's3buckets', 'k8sclusters']
const API_COLLECTIONS = ['endpoints', 'hosts', 'kubernetes/volumes', 'backups/backups', 'backups/backup-schedules', 'kubernetes/apps', 'certificates', 's3/buckets', 'kubernetes/clusters', 'loadbalancers/instances']
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
/** A load balancer instance's name: "a" + the Service's uid without dashes, cut to 32 characters (upstream's GetLoadBalancerName). */
const LB_NAME = /\ba[0-9a-f]{31}\b/g
/** The simulator's S3 keys (random per bucket; the Secret's projection says whether they match the API's). */
const S3_KEY = new RegExp(S3_KEY_PATTERN.source, 'g')
/** Keys that differ between two runs of one workload by nature (identities, clocks, versions). */
const VOLATILE_KEY = /^(id|uid|user_id|resourceVersion|creationTimestamp|generation|managedFields|deletionGracePeriodSeconds|api_id|apiID|workspace|organization|k8s_cluster|lastHeartbeatTime|lastTransitionTime|startedAt|timestamp)$|_at$|_time$|Time$/

export function normalise(value: unknown, replace: Array<[string, string]>): unknown {
  if (typeof value === 'string') {
    let text = value
    for (const [from, to] of replace) text = text.split(from).join(to)
    return text.replace(UUID, '<id>').replace(LB_NAME, '<lb-name>').replace(S3_KEY, '<s3-key>')
  }
  if (Array.isArray(value)) return value.map((item) => normalise(item, replace))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      if (VOLATILE_KEY.test(key)) continue
      out[key] = normalise((value as Record<string, unknown>)[key], replace)
    }
    return out
  }
  return value
}

/** Where two values differ: the top-level fields of two objects that differ (each shown up to 200 characters), else both. */
export function fieldDiff(expected: unknown, actual: unknown): string {
  const show = (value: unknown) => (JSON.stringify(value) ?? 'undefined').slice(0, 200)
  if (!expected || !actual || typeof expected !== 'object' || typeof actual !== 'object' || Array.isArray(expected) || Array.isArray(actual)) return `expected ${show(expected)} got ${show(actual)}`
  const a = expected as Record<string, unknown>
  const b = actual as Record<string, unknown>
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]))
  return keys.map((key) => `${key}: expected ${show(a[key])} got ${show(b[key])}`).join('; ')
}

/** Differences between two normalised states, as short lines (empty: equal). */
export function diffStates(reference: NormalisedObject[], actual: NormalisedObject[]): string[] {
  const lines: string[] = []
  const ref = new Map(reference.map((o) => [o.key, JSON.stringify(o.value)]))
  const act = new Map(actual.map((o) => [o.key, JSON.stringify(o.value)]))
  const values = new Map(actual.map((o) => [o.key, o.value]))
  for (const {key, value: expected} of reference) {
    if (!act.has(key)) lines.push(`missing ${key}`)
    else if (act.get(key) !== ref.get(key)) lines.push(`differs ${key}: ${fieldDiff(expected, values.get(key))}`)
  }
  for (const key of act.keys()) if (!ref.has(key)) lines.push(`extra ${key}: ${act.get(key)!.slice(0, 400)}`)
  return lines
}

/** The name an API object is known by in the end state (a load balancer instance's own name is the Service's uid). */
function stateName(collection: string, object: Record<string, unknown>): unknown {
  return collection === 'loadbalancers/instances' ? object.display_name : object.name
}

/** The natural key of a live API object: its collection, name and the scope fields it has. */
function naturalKey(collection: string, object: Record<string, unknown>): string {
  return [collection, object.name, object.namespace ?? '', object.k8s_cluster ?? '', object.workspace ?? ''].join('|')
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** SIGCONT to a frozen process (gone already: nothing to do). */
function resume(pid: number): void {
  try {
    process.kill(pid, 'SIGCONT')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

/** A freeze up to this long leaves the leader leading (renew deadline 10 s, less a retry period of up to 2.4 s). */
export const SHORT_FREEZE_MAX_MS = 7000

/** How often a storm's injection that found nothing to act on is tried again (see `driveStorm`). */
export const STORM_RETRY_MS = 200
/** How long the last injection of a storm is tried at most (the others: until the next one is due). */
export const STORM_LAST_RETRY_MS = 1000

/**
 * Runs a storm's injections at their times (`afterMs` from the start). An injection that finds nothing to act on is
 * tried again every STORM_RETRY_MS until it acts or the next one is due (the last one for STORM_LAST_RETRY_MS): in a
 * crash case the operator is restarted up to eight times in the first seconds, and a process just started has kept
 * no list yet (no stale answer to give) and has no watch open (none to cut); those injections used to be lost.
 * `inject` applies one and says whether it acted. Returns how many acted.
 */
export async function driveStorm(injections: StormInjection[], inject: (injection: StormInjection) => boolean, clock: {now: () => number; sleep: (ms: number) => Promise<unknown>}, stopped: () => boolean = () => false): Promise<number> {
  const start = clock.now()
  let acted = 0
  for (const [index, injection] of injections.entries()) {
    const due = injections[index + 1]?.afterMs ?? injection.afterMs + STORM_LAST_RETRY_MS
    const wait = injection.afterMs - (clock.now() - start)
    if (wait > 0) await clock.sleep(wait)
    for (;;) {
      if (stopped()) return acted
      if (inject(injection)) {
        acted++
        break
      }
      if (clock.now() - start + STORM_RETRY_MS >= due) break
      await clock.sleep(STORM_RETRY_MS)
    }
  }
  return acted
}

export interface RunOptions {
  /** The reference end state and deletes; without it the run is the reference (waits for a stable state). */
  reference?: {state: NormalisedObject[]; apiDeletes: string[]; crDeletes: string[]; apiCreated?: Record<string, number>; writes?: number}
  /** Pause between user operations, so the operator acts on intermediate states (same in every run). */
  stepPauseMs?: number
  log?: (line: string) => void
}

export async function runCase(workload: Workload, fault: Fault, options: RunOptions = {}): Promise<CaseResult> {
  const started = Date.now()
  const log = options.log ?? (() => {})
  const client = adminClient()
  const sim = await ApiSimulator.start()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'chaos-'))
  const violations: string[] = []
  let proxy: KubeFaultProxy | undefined
  let operator: OperatorProcess | undefined
  let killing = false
  let faultApplied = false
  let lastFaultAt = 0
  let stopping = false
  let restarting: Promise<void> | undefined
  const crashed: string[] = []
  let coalesced = 0
  let standby: OperatorProcess | undefined
  let standbyProxy: KubeFaultProxy | undefined
  const restarts: Array<Promise<void>> = []
  const replicas = new ReplicaLedger()
  let apiProxy: ApiFaultProxy | undefined
  /** The frozen process, until it is resumed. */
  let frozen: number | undefined
  let pausing: Promise<void> | undefined
  try {
    const leaderElect = fault.kind === 'handover' || fault.kind === 'pause'
    // Two replicas call one API URL: the proxy tells them apart by the process that owns each connection.
    apiProxy = await startApiFaultProxy({upstream: sim.url, processOf: leaderElect ? (port) => replicas.processOf(port) : undefined})
    const schedule = fault.kind === 'api' ? fault.schedule : fault.kind === 'crash' ? fault.apiSchedule : undefined
    if (schedule) apiProxy.schedule(schedule)
    const prefix = `x${randomBytes(3).toString('hex')}`
    const namespace = await freshNamespace(client, `chaos-${prefix}`)
    const ctx: WorkloadContext = {client, prefix, namespace, operatorNamespace: ''}
    // Two replicas on one machine: only one can bind the external-dns webhook's port (no workload uses it).
    const own = workload.config(ctx)
    const config = {
      ...own,
      ...(leaderElect ? {external_dns_webhook: {enabled: false}} : {}),
      api_sync: {enabled: true, api_url: apiProxy.url, sync_interval_seconds: 2, ...(own.api_sync as Record<string, unknown> | undefined)},
    }
    const {namespace: operatorNamespace} = await operatorNamespaceFor(client, sim, config)
    ctx.operatorNamespace = operatorNamespace
    const replace: Array<[string, string]> = [[`cluster-${operatorNamespace}`, '<cluster>'], [operatorNamespace, '<opns>'], [namespace, '<ns>'], [prefix, '<P>']]
    const processOf = leaderElect ? (port: number) => replicas.processOf(port) : undefined
    proxy = await startKubeFaultProxy({upstream: controlPlane().server, token: controlPlane().token, processOf})
    const kubeconfig = await writeKubeconfig(path.join(dir, 'kubeconfig'), proxy.url, 'replaced-by-the-proxy')
    const watchExit = (process: OperatorProcess, restart: () => Promise<void>) => {
      void process.exited.then((code) => {
        if (killing || stopping) return
        // A replica that lost its lease exits so that a restarted process campaigns afresh: allowed, and restarted.
        if (leaderElect && process.rawOutput().includes('lost the leader lease')) {
          log(`a replica lost its lease and exited (${code}); restarting it`)
          restarts.push(restart())
          return
        }
        violations.push(`the operator exited on its own (${code}): ${process.rawOutput().slice(-1500)}`)
      })
    }
    const launch = async (via: KubeFaultProxy, kubeconfigFile: string, replica: string): Promise<OperatorProcess> => {
      via.forgetLists()
      const child = await startOperator({kubeconfig: kubeconfigFile, namespace: operatorNamespace, logLevel: 'info', leaderElect, args: ['--graceful-shutdown-timeout', '5']})
      replicas.started(via, replica, child.pid)
      return child
    }
    const start = async () => {
      operator = await launch(proxy!, kubeconfig, 'a')
      watchExit(operator, start)
    }
    // API writes are write points too: the simulator logs each answer before it sends it.
    sim.onRequest = (entry) => {
      if (!/^(POST|PUT|PATCH|DELETE)$/.test(entry.method) || entry.status === 0 || entry.status >= 400 || !entry.path.startsWith('/api/')) return
      if (proxy!.writes.record(writePoint('api', entry.userAgent, entry.method.toLowerCase(), entry.resource))) proxy!.onCrash?.(proxy!.writes.points.at(-1)!)
    }
    if (fault.kind === 'crash') {
      proxy.crashAfterWrites(fault.targets)
      proxy.onCrash = (point) => {
        // A write answered after the last kill (its process is gone, the next not up yet): nothing to crash now, so
        // the point's next write is the target.
        if (killing || !operator) {
          const {point: missed, k} = splitWrite(point)
          proxy!.writes.add({point: missed, k: k + 1})
          return
        }
        killing = true
        faultApplied = true
        crashed.push(point)
        lastFaultAt = Date.now()
        log(`crash after ${point}`)
        const victim = operator
        victim.child.kill('SIGKILL')
        restarting = victim.exited.then(async () => {
          killing = false
          await start()
        })
      }
    }

    for (const step of workload.before ?? []) await step(ctx)
    await start()
    if (leaderElect) {
      // The first replica leads (its lease write went through), then the second starts as its standby.
      const deadline = Date.now() + 30_000
      while (!proxy.log.some((e) => e.resource === 'coordination.k8s.io/leases' && wrote(e))) {
        if (Date.now() > deadline) throw new Error(`the first replica did not take the lease within 30 s:\n${operator!.rawOutput().slice(-2000)}`)
        await sleep(100)
      }
      standbyProxy = await startKubeFaultProxy({upstream: controlPlane().server, token: controlPlane().token, processOf})
      const standbyKubeconfig = await writeKubeconfig(path.join(dir, 'kubeconfig-b'), standbyProxy.url, 'replaced-by-the-proxy')
      const startStandby = async () => {
        standby = await launch(standbyProxy!, standbyKubeconfig, 'b')
        watchExit(standby, startStandby)
      }
      await startStandby()
    }
    const stepFault = async (index: number) => {
      if (!('atStep' in fault) || fault.atStep !== index) return
      lastFaultAt = Date.now()
      switch (fault.kind) {
        case 'stale':
          // Arm the stale answer, then cut the watches so the informer relists now (and gets the old list).
          faultApplied = proxy!.staleList(fault.resource)
          if (faultApplied) proxy!.closeWatches(fault.resource)
          break
        case 'coalesce':
          faultApplied = proxy!.closeWatches(fault.resource) > 0
          if (faultApplied) coalesced++
          break
        case 'hold':
          proxy!.holdWatches(fault.ms, undefined, fault.ms * 3)
          lastFaultAt = Date.now() + fault.ms * 4 // the last held event is delivered then
          faultApplied = true
          break
        case 'fail':
          proxy!.fail({kind: fault.failure, verb: fault.verb, resource: fault.resource, times: fault.times})
          faultApplied = true
          break
        case 'refuse':
          proxy!.refuseFor(fault.ms)
          faultApplied = true
          break
        case 'handover': {
          // The leader cut off from the apiserver past its renew deadline: it steps down, the standby takes over.
          // The next user operations wait for the new leader, so a former leader still reconciling would write too.
          replicas.partitionedAt = Date.now()
          proxy!.refuseFor(fault.partitionMs)
          lastFaultAt = Date.now() + fault.partitionMs
          const deadline = Date.now() + fault.partitionMs + 30_000
          while (Date.now() < deadline && !replicas.leaseTakenOver()) await sleep(200)
          break
        }
        case 'pause': {
          // The leader's process frozen: no timer, no I/O callback of it runs; the apiserver and the API go on, and
          // so do the users (the next steps run during the freeze). Resumed after `ms`.
          const holder = replicas.holder()
          const pid = holder ? replicas.pidOf(holder) : undefined
          if (pid === undefined) break
          process.kill(pid, 'SIGSTOP')
          frozen = pid
          replicas.partitionedAt = Date.now()
          faultApplied = true
          log(`froze the leader ${holder} (pid ${pid}) for ${fault.ms} ms`)
          lastFaultAt = Date.now() + fault.ms
          pausing = sleep(fault.ms).then(() => {
            if (frozen === pid) resume(pid)
            frozen = undefined
          })
          break
        }
      }
    }
    const injections = fault.kind === 'storm' ? fault.injections : fault.kind === 'crash' ? fault.storm ?? [] : []
    const api = fault.kind === 'storm' || fault.kind === 'crash' ? fault.api : undefined
    const storming = injections.length ? (async () => {
      if (api) {
        const {outcome, rate, afterMs, ms} = api
        setTimeout(() => {
          if (stopping) return
          sim.faults.set(outcome === 'error' ? {errorRate: rate} : outcome === 'rate-limit' ? {rateLimitRate: rate} : {dropRate: rate})
          lastFaultAt = Date.now() + ms
          setTimeout(() => sim.faults.clear(), ms)
        }, afterMs)
      }
      await driveStorm(injections, (injection) => {
        lastFaultAt = Date.now()
        if (injection.kind === 'stale') {
          // Armed: the relist its cut watch makes is answered from the past (counted when served).
          if (!proxy!.staleList(injection.resource!)) return false
          proxy!.closeWatches(injection.resource)
          return true
        }
        if (proxy!.closeWatches(injection.resource) === 0) return false
        coalesced++
        return true
      }, {now: Date.now, sleep}, () => stopping)
      if (api) await sleep(Math.max(0, api.afterMs + api.ms - injections.at(-1)!.afterMs))
    })() : undefined
    for (let index = 0; index < workload.steps.length; index++) {
      await stepFault(index)
      await workload.steps[index]!(ctx)
      await sleep(options.stepPauseMs ?? 1500)
    }
    await stepFault(workload.steps.length)
    if ('atStep' in fault && fault.atStep >= workload.steps.length) await sleep(options.stepPauseMs ?? 1500)
    if (restarting) await restarting
    if (pausing) await pausing
    if (fault.kind === 'pause') {
      // A long freeze: the resumed process finds its fence closed, steps down and exits (restarted as a candidate);
      // wait for that positive signal (or, after a short one, for nothing).
      const deadline = Date.now() + 30_000
      while (Date.now() < deadline && replicas.leaseTakenOver() && restarts.length === 0) await sleep(200)
      await Promise.all(restarts)
    }
    if (fault.kind === 'handover') {
      // Wait for the handover: some replica other than the first writes after the partition (at most 60 s).
      const deadline = Date.now() + 60_000
      while (Date.now() < deadline && !replicas.handedOver()) await sleep(500)
      await Promise.all(restarts)
      faultApplied = replicas.handedOver()
    }
    if (storming) {
      await storming
      if (fault.kind === 'storm') faultApplied = proxy.counts.staleLists + coalesced > 0
    }

    const scope: CaseScope = {client, sim, workload, ctx, prefix, replace, violations}
    const snapshot = () => takeSnapshot(scope)

    let state: NormalisedObject[] = []
    if (options.reference) {
      // Liveness: the reference end state within 60 s of the last fault (or of the last operation).
      const deadline = Math.max(lastFaultAt, Date.now()) + 60_000
      let diff: string[] = []
      for (;;) {
        if (restarting) await restarting
        state = await retrying(snapshot)
        diff = diffStates(options.reference.state, state)
        if (diff.length === 0) break
        if (Date.now() > deadline) {
          violations.push(`liveness: the reference end state not reached within 60 s of the last fault:\n      ${diff.slice(0, 8).join('\n      ')}`)
          break
        }
        await sleep(1000)
      }
    } else {
      // The reference: the same snapshot four times in a row, 2 s apart (at most 120 s).
      const deadline = Date.now() + 120_000
      let previous = ''
      let same = 0
      for (;;) {
        state = await retrying(snapshot)
        const text = JSON.stringify(state)
        same = text === previous ? same + 1 : 0
        previous = text
        if (same >= 3) break
        if (Date.now() > deadline) {
          violations.push('reference: the end state did not settle within 120 s')
          break
        }
        await sleep(2000)
      }
    }

    // The end state is taken: no more crashes, and no more write points (cleanup writes are not part of the case).
    proxy.crashAfterWrites([])
    const writePoints = [...proxy.writes.points]
    const {apiDeletes, crDeletes} = await deleteChecks(scope, proxy, options.reference)
    const apiCreated = createdChecks(scope, options.reference)

    // Never two writers: no write by a replica after another took the lease; never two leaders writing.
    let leadership: LeadershipReport | undefined
    if (leaderElect) {
      for (const entry of apiProxy.log) {
        if (entry.process && requestClass(entry.method, entry.path) !== 'read' && /^(POST|PUT|PATCH|DELETE)$/.test(entry.method) && entry.upstreamStatus >= 200 && entry.upstreamStatus < 400) {
          replicas.apiWriteBy(entry.process, entry.at, `API ${entry.method} ${entry.path}`)
        }
      }
      const writes = replicas.writes()
      if (process.env.CHAOS_DEBUG) log(`writes by replica (fault at ${replicas.partitionedAt}):\n${writes.sort((a, b) => a.at - b.at).map((w) => `${w.at} ${w.instance} ${w.what}`).join('\n')}`)
      const facts = leadershipFacts(replicas.leaseWrites(), writes)
      for (const write of facts.afterTakeover.slice(0, 5)) violations.push(`two writers: ${write.instance} wrote (${write.what}) after another replica had taken the lease`)
      const overlap = twoLeaders(writes)
      if (overlap) violations.push(overlap)
      const from = replicas.partitionedAt
      const takeover = facts.takeovers.find((t) => t.at > from)
      const newLeaderWrite = takeover ? writes.filter((w) => w.instance === takeover.to && w.at > from).sort((a, b) => a.at - b.at)[0] : undefined
      leadership = {
        faultMs: fault.kind === 'pause' ? fault.ms : fault.kind === 'handover' ? fault.partitionMs : 0,
        handoverMs: takeover && from ? takeover.at - from : undefined,
        firstWriteMs: newLeaderWrite && from ? newLeaderWrite.at - from : undefined,
        afterTakeover: facts.afterTakeover.length,
        takeovers: facts.takeovers.length,
        otherWrites: writes.filter((w) => w.instance !== 'a0').length,
        writes: writes.length,
        referenceWrites: options.reference?.writes,
      }
      // A freeze shorter than the renew deadline (less a retry period): the leader keeps leading, nobody else writes.
      if (fault.kind === 'pause' && fault.ms <= SHORT_FREEZE_MAX_MS && (leadership.takeovers > 0 || leadership.otherWrites > 0)) {
        violations.push(`a ${fault.ms} ms freeze (shorter than the renew deadline) cost the leader its lease: ${leadership.takeovers} takeover(s), ${leadership.otherWrites} write(s) by another replica`)
      }
    }
    if (!options.reference && proxy.writes.points.length === 0) violations.push('reference: the operator made no write at all (is it reaching the apiserver through the proxy?)')
    // Remove this case's sources while the operator still runs (it releases its finalizers), so the next case's
    // operator, which discovers cluster-wide, does not find them (cleanup.ts: what must be gone).
    await workload.cleanup?.(ctx)
    const watched = [...proxy.log, ...standbyProxy?.log ?? []].filter((e) => (e.verb === 'list' || e.verb === 'watch') && e.status === 200).map((e) => e.resource)
    const uncovered = uncoveredKinds(watched) // what it listed or watched (a probe of a kind not served is a 404)
    if (uncovered.length) log(`the operator watched ${uncovered.join(', ')}, which cleanup.ts does not empty: waiting for the namespace to be gone`)
    const left = await emptyCaseNamespace(client, namespace, uncovered, Date.now() + 60_000)
    if (left.length) log(`cleanup: still there after 60 s: ${left.slice(0, 5).join(', ')}`)
    if (process.env.CHAOS_DEBUG) log(`end state:\n${state.map((o) => `${o.key} ${JSON.stringify(o.value)}`).join('\n')}`)
    if (process.env.CHAOS_DEBUG) log(`operator output:\n${operator?.rawOutput().slice(-Number(process.env.CHAOS_DEBUG_CHARS ?? 6000))}\nwrites through the proxy:\n${proxy.log.filter(wrote).map((e) => `${e.at} ${e.verb} ${e.resource} ${e.namespace ?? ''}/${e.name ?? ''}`).join('\n')}`)
    const apiRequests = {writes: 0, reads: 0}
    for (const entry of apiProxy.log) {
      const kind = requestClass(entry.method, entry.path)
      if (kind) apiRequests[`${kind}s`]++
    }
    if (schedule) faultApplied ||= apiProxy.counts.size > 0
    return {
      state, writePoints, crashed, coalesced, listResources: proxy.cachedLists(), apiDeletes, crDeletes,
      violations, counts: proxy.counts, faultApplied, seconds: (Date.now() - started) / 1000,
      apiRequests, apiFaults: Object.fromEntries(apiProxy.counts), apiCreated, leadership,
    }
  } finally {
    stopping = true
    if (frozen !== undefined) resume(frozen)
    await pausing?.catch(() => {})
    if (restarting) await restarting.catch(() => {})
    await Promise.all(restarts).catch(() => {})
    await operator?.stop('SIGTERM').catch(() => {})
    await standby?.stop('SIGTERM').catch(() => {})
    await proxy?.close().catch(() => {})
    await standbyProxy?.close().catch(() => {})
    await apiProxy?.close().catch(() => {})
    await sim.close().catch(() => {})
    client.close()
    await rm(dir, {recursive: true, force: true})
  }
}

/** What the oracle's checks of one case work with. */
interface CaseScope {
  client: KubeClient
  sim: ApiSimulator
  workload: Workload
  ctx: WorkloadContext
  prefix: string
  /** Case-specific names → placeholders (see `normalise`). */
  replace: Array<[string, string]>
  /** Where a check adds what it finds. */
  violations: string[]
}

/**
 * The normalised state of a case: the polycrate.io CRs of its namespaces, what the workload observes and the live API
 * objects that are the case's; an API duplicate (two live objects of one natural key) is a violation.
 */
async function takeSnapshot({client, sim, workload, ctx, prefix, replace, violations}: CaseScope): Promise<NormalisedObject[]> {
  const {namespace, operatorNamespace} = ctx
  const objects: NormalisedObject[] = []
  for (const plural of POLYCRATE_PLURALS) {
    for (const ns of [namespace, operatorNamespace]) {
      const ref: ResourceRef = {group: 'polycrate.io', version: 'v1alpha1', plural, namespace: ns}
      const items = (await client.request<{items: KubeObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${ns}/${ref.plural}`})).items
      for (const item of items) {
        const meta = item.metadata ?? {}
        const value = normalise({labels: meta.labels ?? {}, finalizers: meta.finalizers ?? [], spec: (item as {spec?: unknown}).spec ?? {}, deleting: Boolean(meta.deletionTimestamp)}, replace)
        objects.push({key: String(normalise(`cr ${plural} ${ns}/${meta.name}`, replace)), value})
      }
    }
  }
  for (const {key, value} of await workload.observe?.(ctx, sim) ?? []) objects.push({key: String(normalise(`kube ${key}`, replace)), value: normalise(value, replace)})
  const keys = new Map<string, number>()
  for (const collection of API_COLLECTIONS) {
    for (const object of sim.list(collection)) {
      if (object.is_deleted) continue
      // Only this case's objects (earlier cases' sources are being removed while this one starts).
      const text = JSON.stringify(object)
      if (!text.includes(prefix) && !text.includes(namespace)) continue
      const natural = naturalKey(collection, object)
      keys.set(natural, (keys.get(natural) ?? 0) + 1)
      objects.push({key: String(normalise(`api ${collection} ${stateName(collection, object)}`, replace)), value: normalise(object, replace)})
    }
  }
  for (const [natural, n] of keys) {
    if (n > 1) {
      const line = `API duplicate: ${n} live objects with natural key ${normalise(natural, replace)}`
      if (!violations.includes(line)) violations.push(line)
    }
  }
  return objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : JSON.stringify(a.value).localeCompare(JSON.stringify(b.value))))
}

/**
 * Safety at the end of a case: no API DELETE and no CR DELETE the reference never made (a source still exists), no
 * source left terminating (a finalizer of ours on it). Returns the deletes (the reference's are the baseline).
 */
async function deleteChecks({client, sim, ctx, prefix, replace, violations}: CaseScope, proxy: KubeFaultProxy, reference: RunOptions['reference']): Promise<{apiDeletes: string[]; crDeletes: string[]}> {
  const {namespace} = ctx
  // API deletes: which objects (by normalised collection/name) the operator deleted.
  const apiDeletes: string[] = []
  for (const entry of sim.requests) {
    if (entry.method !== 'DELETE' || entry.status >= 400 || entry.status === 0) continue
    const id = entry.path.split('/').filter(Boolean).at(-1)!
    const object = sim.list(entry.resource, {includeDeleted: true}).find((o) => o.id === id)
    apiDeletes.push(String(normalise(`${entry.resource} ${object?.name ?? id}`, replace)))
  }
  if (reference) {
    for (const deleted of new Set(apiDeletes)) {
      if (!reference.apiDeletes.includes(deleted)) violations.push(`API DELETE of ${deleted}, which the reference run never deleted (its source exists)`)
    }
  }
  // CR deletes: a discovered CR deleted and made again under a new uid while its source stayed (a stale view
  // taken for a deletion) is a delete the reference run never made.
  const crDeletes = [...new Set(proxy.deletes.filter((entry) => entry.startsWith('polycrate.io/')).map((entry) => String(normalise(entry.slice('polycrate.io/'.length), replace))))].sort()
  if (reference) {
    for (const deleted of crDeletes) {
      if (!reference.crDeletes.includes(deleted)) violations.push(`CR DELETE of ${deleted}, which the reference run never deleted (its source exists)`)
    }
  }
  // No source left terminating: a finalizer of ours on a deleted source.
  const sources: ResourceRef[] = [
    {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace},
    {group: '', version: 'v1', plural: 'pods', namespace},
    {group: '', version: 'v1', plural: 'secrets', namespace},
    {group: '', version: 'v1', plural: 'nodes'},
    {group: '', version: 'v1', plural: 'persistentvolumes'},
    {group: 'velero.io', version: 'v1', plural: 'backups', namespace},
    {group: 'velero.io', version: 'v1', plural: 'schedules', namespace},
    {group: 'postgresql.cnpg.io', version: 'v1', plural: 'backups', namespace},
    {group: 'postgresql.cnpg.io', version: 'v1', plural: 'scheduledbackups', namespace},
    {group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace},
    {group: '', version: 'v1', plural: 'services', namespace},
    {group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace},
    {group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sclusters', namespace},
  ]
  for (const ref of sources) {
    const items = await listOrEmpty(client, ref)
    for (const item of items) {
      const name = item.metadata?.name ?? ''
      if (!ref.namespace && !name.startsWith(prefix)) continue
      if (item.metadata?.deletionTimestamp) violations.push(`finalizer left on deleted source ${ref.plural} ${normalise(name, replace)}: ${JSON.stringify(item.metadata.finalizers)}`)
    }
  }
  return {apiDeletes: [...new Set(apiDeletes)].sort(), crDeletes}
}

/**
 * Every API object the case ever created (soft-deleted ones included), by normalised natural key; more objects of one
 * key than the reference made is a duplicate, even one deleted again later: a create whose answer was lost must be
 * found again by its natural key (adopted), never made twice.
 */
function createdChecks({sim, ctx, prefix, replace, violations}: CaseScope, reference: RunOptions['reference']): Record<string, number> {
  const created: Record<string, number> = {}
  for (const collection of API_COLLECTIONS) {
    for (const object of sim.list(collection, {includeDeleted: true})) {
      const text = JSON.stringify(object)
      if (!text.includes(prefix) && !text.includes(ctx.namespace)) continue
      const key = String(normalise(naturalKey(collection, object), replace))
      created[key] = (created[key] ?? 0) + 1
    }
  }
  if (reference?.apiCreated) {
    for (const [key, n] of Object.entries(created)) {
      const expected = reference.apiCreated[key] ?? 0
      if (n > expected && expected > 0) violations.push(`API duplicate over time: ${n} objects created with natural key ${key} (the reference created ${expected})`)
    }
  }
  return created
}

/** Retries a read of the apiserver through transient errors (a CRD's storage initialising, a 429) for 30 s. */
async function retrying<T>(read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await read()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(500)
    }
  }
}

async function listOrEmpty(client: KubeClient, ref: ResourceRef): Promise<KubeObject[]> {
  const base = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`
  const at = ref.namespace ? `${base}/namespaces/${ref.namespace}/${ref.plural}` : `${base}/${ref.plural}`
  try {
    return (await client.request<{items: KubeObject[]}>({path: at})).items
  } catch {
    return []
  }
}
