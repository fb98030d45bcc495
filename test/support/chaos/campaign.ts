/**
 * The seeded fault campaign: for each workload a reference run, then perturbed runs until the time is up. Every
 * decision comes from the seed (`Prng`); a case id `<workload>:<n>` plus the seed replays one case exactly as far as
 * the campaign decides it (the operator's own timing still varies). What case n is: see `faultFor`; which write points
 * a crash case takes: see `crashPoints`.
 */
import {applyCrd, waitEstablished} from '../../../src/kube/crd-install.js'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {adminClient, ensureCrds, freshNamespace} from '../cluster.js'
import {pointResource, splitWrite, type CrashTarget, type FailKind} from './kube-proxy.js'
import {Prng} from './prng.js'
import {diffStates, runCase, SHORT_FREEZE_MAX_MS, type ApiFaultWindow, type CaseResult, type Fault, type LeadershipReport, type StormInjection} from './runner.js'
import {apiFaultSchedule, type ApiFaultStep} from './api-proxy.js'
import {ignoreNotFound, workloads, type Workload} from './workloads.js'
import {upstreamCrd} from '../upstream-crds.js'
import {allCrds} from '../../../src/crds/index.js'
import {crdResource} from '../../../src/crds/define.js'

/**
 * In the integration run's shared control plane, other test files leave polycrate.io CRs behind, some with a finalizer
 * of ours in a terminating namespace (their operator is gone). A campaign's operator syncs every such CR and releases
 * those being deleted in the middle of a case, and the oracle would take those writes and API deletes for the
 * workload's (a fresh-clone CI saw a reference with 1,054 writes and "an API DELETE the reference never made"). So a
 * campaign there starts from a clean slate: every polycrate.io CR but the OperatorConfigs is released and deleted.
 */
export async function clearLeftoverCrs(): Promise<void> {
  await ensureCrds() // a control plane of this file alone has none yet
  const client = adminClient()
  try {
    for (const definition of allCrds.filter((crd) => crd.kind !== 'OperatorConfig')) {
      const list = await client.get<KubeObject & {items?: KubeObject[]}>(crdResource(definition))
      for (const item of list.items ?? []) {
        const ref = {...crdResource(definition), namespace: item.metadata?.namespace, name: item.metadata!.name!}
        await ignoreNotFound(async () => {
          if ((item.metadata?.finalizers as string[] | undefined)?.length) await client.mergePatch(ref, {metadata: {finalizers: null}})
          await client.delete(ref)
        })
      }
    }
  } finally {
    client.close()
  }
}

/**
 * The Velero, CloudNativePG and cert-manager CRDs the workloads need (the polycrate.io CRDs come from `ensureCrds`);
 * then waits until the garbage collector collects polycrate.io CRs by their ownerReferences.
 */
export async function installCampaignCrds(): Promise<void> {
  await ensureCrds()
  const client = adminClient()
  try {
    for (const file of ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml', 'cert-manager.io_certificates.yaml']) {
      const crd = upstreamCrd(file)
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    }
    await waitForGarbageCollector(client)
  } finally {
    client.close()
  }
}

/**
 * The garbage collector watches a new CRD's objects only after its next discovery pass (every 30 s): until then an
 * Endpoint CR owned by a deleted Ingress stays, afterwards it goes. A reference taken before would hold what no later
 * run does. So: an Endpoint CR owned by a ConfigMap, the ConfigMap deleted, and wait (at most 90 s) until it is collected.
 */
async function waitForGarbageCollector(client: KubeClient): Promise<void> {
  const namespace = await freshNamespace(client, 'chaos-gc')
  const configMaps: ResourceRef = {group: '', version: 'v1', plural: 'configmaps', namespace}
  const endpoints: ResourceRef = {group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace}
  const owner = await client.create<KubeObject>(configMaps, {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'owner', namespace}})
  await client.create(endpoints, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint',
    metadata: {name: 'owned', namespace, ownerReferences: [{apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid}]},
    spec: {displayName: 'gc.example.com', remoteAddress: 'gc.example.com', remotePort: 443, kind: 'http'},
  })
  await client.delete({...configMaps, name: 'owner'})
  const deadline = Date.now() + 90_000
  while (await client.getOrUndefined({...endpoints, name: 'owned'})) {
    if (Date.now() > deadline) throw new Error('the garbage collector did not collect an Endpoint CR whose owner was deleted within 90 s')
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  await client.delete({group: '', version: 'v1', plural: 'namespaces', name: namespace}).catch(() => {})
}

export interface Violation {
  caseId: string
  fault: Fault
  message: string
  replay: string
}

export interface Coverage {
  workload: string
  /** write point → writes of it seen in the reference run. */
  writePoints: Map<string, number>
  /** write point → the k of each crash that happened there. */
  crashed: Map<string, Set<number>>
  faults: Record<string, number>
  /** Stale LISTs served (time travel) and watch closes that coalesced events, over all cases. */
  staleLists: number
  coalesced: number
  /** Crash targets carried into a later case (see `withCarried`). */
  carried: number
  cases: number
  ordering?: string
  /** The cases with two replicas (pause, handover): what the oracle found about who wrote when. */
  leadership: Array<{caseId: string; kind: 'pause' | 'handover'; report: LeadershipReport}>
  /** API faults that happened: `<class> <collection>` → count, over all cases. */
  apiFaults: Record<string, number>
}

export interface CampaignOptions {
  seed: number
  minutes: number
  feature?: string
  /** Only these workloads (by name). */
  workloads?: string[]
  /** At most this many rounds of cases after the references (the time bound still applies). */
  rounds?: number
  /** Only this case (`<workload>:<n>`), for replays. */
  caseId?: string
  /** Crash targets carried into that case from earlier ones (see `withCarried`), as its replay command gives them. */
  carry?: CrashTarget[]
  log?: (line: string) => void
}

export interface CampaignResult {
  coverage: Coverage[]
  violations: Violation[]
  seconds: number
}

/** The write points every workload's operator has: the API agent's, the OperatorConfig status, Events. */
const COMMON = /^\S+ (api-sync|operatorconfig) |^kube runtime \S+ core\/events$/

/**
 * The workloads that own common write points and take turns at handovers: fixed, so that a workload added later
 * changes nothing an earlier seed's replay decides (a new workload crashes its own points; its common points are
 * crashed by these).
 */
export const OWNERS = ['backup-backup-first', 'backup-present', 'backup-schedule-first', 'certificate', 'cnpg-backup-first', 'cnpg-present', 'cnpg-scheduled-first', 'endpoint', 'endpoint-toggle',
  'host', 'k8sapp-pods-first', 'k8sapp-present', 'k8sapp-secret-first', 'k8scluster', 'loadbalancer', 's3bucket', 'volume']

const hashOf = (text: string): number => {
  let hash = 0
  for (const c of text) hash = (hash * 31 + c.charCodeAt(0)) >>> 0
  return hash
}

/**
 * The workload that crashes a common write point early: one per point, fixed by the point's name over `OWNERS`
 * (pure and independent of which workloads a run selects, so replays make the same decisions).
 */
export function ownerOf(point: string): string {
  return OWNERS[hashOf(point) % OWNERS.length]!
}

/** A workload's place in the handover turns (its index among OWNERS; a later workload's from its name). */
const placeOf = (name: string): number => (OWNERS.includes(name) ? OWNERS.indexOf(name) : hashOf(name))

/**
 * The crash points of a reference run of `workload` (`point#k` for every write, see `writePoint`), in the order the
 * campaign crashes them: the first write of every write point, then every second write, and so on (round robin, so a
 * short campaign crashes at every point once). Within a round, the workload's own points come first (its controllers,
 * and the common points it owns, see `ownerOf`), the other common points after them. The workloads of an ordering
 * group share their own points: each starts at another place in the list, so together they cover it sooner.
 */
export function crashPoints(writes: string[], workload?: Workload): Array<[string, number]> {
  const max = new Map<string, number>()
  for (const {point, k} of writes.map(splitWrite)) max.set(point, Math.max(max.get(point) ?? 0, k))
  const distinct = [...max.keys()].sort()
  const own = distinct.filter((point) => !COMMON.test(point) || ownerOf(point) === workload?.name)
  const group = workload?.orderingGroup ? workloads.filter((w) => w.orderingGroup === workload.orderingGroup).map((w) => w.name).sort() : []
  const shift = own.length ? (Math.max(0, group.indexOf(workload?.name ?? '')) * GROUP_OFFSET) % own.length : 0
  const ordered = [...own.slice(shift), ...own.slice(0, shift), ...distinct.filter((point) => !own.includes(point))]
  const points: Array<[string, number]> = []
  const longest = Math.max(0, ...max.values())
  for (let k = 1; k <= longest; k++) for (const point of ordered) if (k <= max.get(point)!) points.push([point, k])
  return points
}

/** Crash targets per crash case: the operator is killed after each in turn (and restarted each time). */
export const CRASHES_PER_CASE = 8
/** How many points apart the members of an ordering group start in their shared crash points. */
const GROUP_OFFSET = 5

/** The freezes of a paused-leader case: longer than the lease, shorter than the renew deadline, in between. */
export const FREEZES = {long: [17_000, 25_000], short: [2000, SHORT_FREEZE_MAX_MS], between: [11_000, 14_000]} as const

/**
 * The fault of case n (n ≥ 1) of a workload; pure in (seed, workload, n, reference).
 * Workloads with a plan of their own: `pause` (paused-leader): every case freezes the leader — n ≡ 1 (mod 3) longer
 * than the lease (17–25 s: the standby takes over, the frozen one must not write on waking), n ≡ 2 shorter than the
 * renew deadline (2–7 s: it keeps leading), n ≡ 0 in between (11–14 s: it steps down on waking, before anybody took
 * over) — before a seeded step, the steps going on during the freeze; `api` (api-faults, k8scluster-created): odd n
 * the crash points (and a storm) with the API fault proxy's seeded schedule at the same time, even n the schedule
 * alone. The others:
 * - odd n: the next eight crash points, with a storm of stale LISTs and watch closes meanwhile (only the storm, with a
 *   window of API faults every other time, once the crash points are used up);
 * - n = 2, 6, 10, …: one seeded fault (stale LIST, coalesced watch close, held watch, injected failure, refused
 *   connections) before a seeded user operation;
 * - n = 4, 8, 12, …: for one workload in three (by its place among all workloads, turning each time) a leader
 *   handover: two replicas, the leader cut off from the apiserver for 11–15 s (past its renew deadline of 10 s), so the
 *   standby takes over; for the others a storm with a window of API faults (errors, 429, dropped connections);
 * - n = 6, 14, 22, …: the API fault proxy's seeded schedule instead of the single fault.
 * The campaign adds the targets earlier crash cases lost (`withCarried`), so a case's crashes depend on that history
 * too: a replay gives them with `--carry`.
 */
export function faultFor(seed: number, workload: Workload, n: number, points: Array<[string, number]>, listResources: string[], apiRequests = {writes: 0, reads: 0}): Fault {
  const random = new Prng(seed * 7919 + n * 104_729 + [...workload.name].reduce((sum, c) => sum + c.charCodeAt(0), 0))
  const stepCount = workload.steps.length
  const atStep = random.int(stepCount + 1)
  if (workload.plan === 'pause') {
    const [low, high] = n % 3 === 1 ? FREEZES.long : n % 3 === 2 ? FREEZES.short : FREEZES.between
    return {kind: 'pause', ms: low + random.int(high - low + 1), atStep: Math.min(atStep, stepCount - 1)}
  }
  // Stale lists and closes aim at what the workload touches: its sources and the resources the operator wrote.
  const touched = new Set([...workload.sources, ...points.filter(([point]) => point.startsWith('kube ')).map(([point]) => pointResource(point).replace(/\/status$/, ''))])
  const lists = listResources.filter((r) => !/leases|events|operatorconfigs/.test(r))
  const syncLists = lists.some((r) => touched.has(r)) ? lists.filter((r) => touched.has(r)) : lists
  if (workload.plan === 'api') {
    const schedule = apiFaultSchedule(random, apiRequests.writes, apiRequests.reads)
    const index = (n - 1) / 2
    const targets = n % 2 === 1 ? points.slice(index * CRASHES_PER_CASE, (index + 1) * CRASHES_PER_CASE) : []
    if (targets.length) return {kind: 'crash', targets: targets.map(([point, k]) => ({point, k})), storm: storm(random, syncLists, false).injections, apiSchedule: schedule}
    return {kind: 'api', schedule}
  }
  if (n % 2 === 1) {
    const index = (n - 1) / 2
    const targets = points.slice(index * CRASHES_PER_CASE, (index + 1) * CRASHES_PER_CASE)
    if (targets.length) return {kind: 'crash', targets: targets.map(([point, k]) => ({point, k})), storm: storm(random, syncLists, false).injections}
    return storm(random, syncLists, n % 4 === 3)
  }
  // 6, 14, 22, …: the API fault proxy's seeded schedule (every workload's kinds get answers lost after the write).
  if (n % 8 === 6) return {kind: 'api', schedule: apiFaultSchedule(random, apiRequests.writes, apiRequests.reads)}
  // A handover before a user operation (at least one comes after it, for a former leader to act on).
  const place = placeOf(workload.name)
  if (n % 4 === 0 && (n / 4 + place) % 3 === 0) return {kind: 'handover', partitionMs: 11_000 + random.int(4000), atStep: Math.min(atStep, stepCount - 1)}
  if (n % 4 === 0) return storm(random, syncLists, true)
  const kinds = ['stale', 'coalesce', 'hold', 'fail', 'refuse'] as const
  const kind = random.pick(kinds)
  switch (kind) {
    case 'stale':
      if (syncLists.length) return {kind: 'stale', resource: random.pick(syncLists), atStep}
      return {kind: 'coalesce', atStep}
    case 'coalesce':
      return {kind: 'coalesce', resource: syncLists.length && random.next() < 0.5 ? random.pick(syncLists) : undefined, atStep}
    case 'hold':
      return {kind: 'hold', ms: 500 + random.int(2500), atStep}
    case 'fail': {
      const failure = random.pick([409, 410, 429, 500, 503, 'timeout'] as FailKind[])
      const verb = failure === 410 ? 'watch' as const : random.pick(['create', 'patch', 'update', 'list'] as const)
      return {kind: 'fail', failure, verb, times: 1 + random.int(3), atStep}
    }
    case 'refuse':
      return {kind: 'refuse', ms: 500 + random.int(3000), atStep}
  }
}

function storm(random: Prng, lists: string[], withApiFaults: boolean): Extract<Fault, {kind: 'storm'}> {
  const injections: StormInjection[] = []
  let afterMs = 0
  const count = 10 + random.int(11)
  for (let i = 0; i < count; i++) {
    afterMs += 300 + random.int(900)
    if (lists.length && random.next() < 0.5) injections.push({afterMs, kind: 'stale', resource: random.pick(lists)})
    else injections.push({afterMs, kind: 'coalesce', resource: lists.length && random.next() < 0.7 ? random.pick(lists) : undefined})
  }
  if (!withApiFaults) return {kind: 'storm', injections}
  const outcome = random.pick(['error', 'rate-limit', 'drop'] as const)
  return {kind: 'storm', injections, api: {outcome, rate: 0.3 + random.int(5) / 10, afterMs: random.int(afterMs), ms: 1000 + random.int(4000)}}
}

/**
 * Case n's fault with the crash targets earlier cases could not crash (`carried`, see `CarriedTargets`) added: a crash
 * case takes them first, a storm becomes a crash case with that storm (and its API faults); a single fault or a
 * handover leaves them for a later case. A target gets lost when its write is answered while the last crashed
 * process is dying: it then moves to the point's next write, which the case may not have.
 */
export function withCarried(fault: Fault, carried: CrashTarget[]): Fault {
  if (carried.length === 0) return fault
  if (fault.kind === 'crash') return {...fault, targets: [...carried, ...fault.targets.filter((t) => !carried.some((c) => c.point === t.point && c.k === t.k))]}
  if (fault.kind === 'storm') return {kind: 'crash', targets: carried, storm: fault.injections, ...(fault.api ? {api: fault.api} : {})}
  if (fault.kind === 'api') return {kind: 'crash', targets: carried, apiSchedule: fault.schedule}
  return fault
}

/**
 * The crash targets that crash cases lost so far (see `withCarried`), until some case crashes their point. A workload's
 * own points stay with it; the points every workload has (the API agent's, the OperatorConfig status, Events) go to a
 * pool that any workload whose reference saw them takes from (k at most its reference's count), as the workload that
 * lost one may have no crash case left in the time.
 */
export class CarriedTargets {
  private readonly own = new Map<string, CrashTarget[]>()
  private common: CrashTarget[] = []
  /** What a case of `workload` takes: its reference saw `writePoints` (point → writes); `crashed` says which points are done. */
  take(workload: string, writePoints: Map<string, number>, crashed: (point: string) => boolean): CrashTarget[] {
    const own = (this.own.get(workload) ?? []).filter((t) => !crashed(t.point))
    const common = this.common.filter((t) => !crashed(t.point) && writePoints.has(t.point))
    return [...own, ...common.map((t) => ({point: t.point, k: Math.min(t.k, writePoints.get(t.point)!)}))]
  }
  /** After a crash case of `workload` with `targets`: those whose point no case crashed are carried. */
  settle(workload: string, targets: CrashTarget[], crashed: (point: string) => boolean): void {
    const lost = targets.filter((t) => !crashed(t.point))
    this.own.set(workload, lost.filter((t) => !COMMON.test(t.point)))
    const common = this.common.filter((t) => !crashed(t.point))
    this.common = [...common, ...lost.filter((t) => COMMON.test(t.point) && !common.some((c) => c.point === t.point))]
  }
}

export function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'none': return 'none'
    case 'crash': return `crash after ${fault.targets.map((t) => `${t.point}#${t.k}`).join(', then after ')}${fault.storm ? `; ${fault.storm.length} stale LISTs and watch closes meanwhile` : ''}${fault.api ? `; ${describeApi(fault.api)}` : ''}${fault.apiSchedule ? `; ${describeSchedule(fault.apiSchedule)}` : ''}`
    case 'storm': {
      const stale = fault.injections.filter((i) => i.kind === 'stale').length
      const api = fault.api ? `; ${describeApi(fault.api)}` : ''
      return `storm: ${stale} stale LISTs and ${fault.injections.length - stale} watch closes over ${(fault.injections.at(-1)!.afterMs / 1000).toFixed(1)} s${api}`
    }
    case 'stale': return `stale LIST of ${fault.resource} before step ${fault.atStep}`
    case 'coalesce': return `watches of ${fault.resource ?? 'every resource'} closed (410 → relist) before step ${fault.atStep}`
    case 'hold': return `watch events held ${fault.ms} ms from step ${fault.atStep}`
    case 'fail': return `${fault.times}× ${fault.failure} on ${fault.verb ?? 'any'} from step ${fault.atStep}`
    case 'refuse': return `connections refused ${fault.ms} ms from step ${fault.atStep}`
    case 'handover': return `two replicas; the leader cut off from the apiserver for ${fault.partitionMs} ms before step ${fault.atStep}`
    case 'pause': return `two replicas; the leader frozen (SIGSTOP) for ${fault.ms} ms from step ${fault.atStep}, the steps going on, then resumed`
    case 'api': return describeSchedule(fault.schedule)
  }
}

function describeSchedule(schedule: ApiFaultStep[]): string {
  return `API fault proxy: ${schedule.map((step) => `${step.kind} on ${step.on} ${step.nth}`).join(', ')}`
}

/** The label a case's fault counts under in the coverage ("faults by kind"). */
export function faultLabel(fault: Fault): string {
  if (fault.kind === 'fail') return `fail ${fault.failure}`
  if (fault.kind === 'pause') return `pause ${fault.ms >= FREEZES.long[0] ? 'past the lease' : fault.ms <= SHORT_FREEZE_MAX_MS ? 'short' : 'past the deadline'}`
  if (fault.kind === 'crash' && fault.apiSchedule) return 'crash + API schedule'
  if ((fault.kind === 'storm' || fault.kind === 'crash') && fault.api) return `${fault.kind} + API ${fault.api.outcome}`
  return fault.kind === 'api' ? 'API schedule' : fault.kind
}

function describeApi(api: ApiFaultWindow): string {
  return `API ${api.outcome} at ${api.rate * 100} % for ${api.ms} ms from ${api.afterMs} ms`
}

export function replayCommand(seed: number, caseId: string, carried: CrashTarget[] = []): string {
  return `npm run chaos -- --seed ${seed} --case ${caseId}${carried.length ? ` --carry '${carried.map((t) => `${t.point}#${t.k}`).join(';')}'` : ''}`
}

/**
 * The order a campaign runs its workloads in: turned by the seed, so that short campaigns of different seeds start
 * with different workloads (pure).
 */
export function campaignOrder<T>(items: T[], seed: number): T[] {
  if (items.length === 0) return items
  const shift = seed % items.length
  return [...items.slice(shift), ...items.slice(0, shift)]
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => {})
  const started = Date.now()
  const deadline = started + options.minutes * 60_000
  const onlyWorkload = options.caseId?.split(':')[0]
  const selected = campaignOrder(workloads.filter((w) => (!options.feature || w.feature === options.feature) && (!onlyWorkload || w.name === onlyWorkload) && (!options.workloads || options.workloads.includes(w.name))), options.seed)
  if (selected.length === 0) throw new Error(`no workload for --feature ${options.feature ?? ''} / --case ${options.caseId ?? ''}; features: ${[...new Set(workloads.map((w) => w.feature))].join(', ')}`)
  const violations: Violation[] = []
  const coverage: Coverage[] = []
  const record = (caseId: string, fault: Fault, result: CaseResult, carried: CrashTarget[] = []) => {
    for (const message of result.violations) violations.push({caseId, fault, message, replay: replayCommand(options.seed, caseId, carried)})
  }
  const carry = new CarriedTargets()
  const crashedAnywhere = (point: string) => coverage.some((c) => c.crashed.has(point))
  const references = new Map<string, {result: CaseResult; points: Array<[string, number]>}>()
  const onlyN = options.caseId ? Number(options.caseId.split(':')[1]) : undefined

  const reference = async (workload: Workload) => {
    log(`${workload.name}: reference run`)
    const result = await runCase(workload, {kind: 'none'}, {log})
    record(`${workload.name}:0`, {kind: 'none'}, result)
    const points = crashPoints(result.writePoints, workload)
    references.set(workload.name, {result, points})
    const writePoints = new Map<string, number>()
    for (const [point, k] of points) writePoints.set(point, Math.max(writePoints.get(point) ?? 0, k))
    coverage.push({workload: workload.name, writePoints, crashed: new Map(), faults: {}, cases: 0, ordering: workload.ordering, staleLists: 0, coalesced: 0, carried: 0, leadership: [], apiFaults: {}})
    log(`${workload.name}: reference settled in ${result.seconds.toFixed(0)} s, ${points.length} write points, ${result.state.length} objects`)
  }
  const perturbed = async (workload: Workload, n: number) => {
    const ref = references.get(workload.name)!
    const cover = coverage.find((c) => c.workload === workload.name)!
    const carried = onlyN !== undefined ? options.carry ?? [] : carry.take(workload.name, cover.writePoints, crashedAnywhere)
    const fault = withCarried(faultFor(options.seed, workload, n, ref.points, ref.result.listResources, ref.result.apiRequests), carried)
    const caseId = `${workload.name}:${n}`
    log(`${caseId}: ${describeFault(fault)}`)
    const result = await runCase(workload, fault, {reference: {state: ref.result.state, apiDeletes: ref.result.apiDeletes, crDeletes: ref.result.crDeletes, apiCreated: ref.result.apiCreated, writes: ref.result.writePoints.length}, log})
    cover.cases++
    const label = faultLabel(fault)
    cover.staleLists += result.counts.staleLists
    cover.coalesced += result.coalesced
    for (const {point, k} of result.crashed.map(splitWrite)) cover.crashed.set(point, (cover.crashed.get(point) ?? new Set<number>()).add(k))
    if (fault.kind === 'crash') carry.settle(workload.name, fault.targets, crashedAnywhere)
    const key = result.faultApplied ? label : `${label} (not reached)`
    cover.faults[key] = (cover.faults[key] ?? 0) + 1
    for (const [what, count] of Object.entries(result.apiFaults)) cover.apiFaults[what] = (cover.apiFaults[what] ?? 0) + count
    if (result.leadership && (fault.kind === 'pause' || fault.kind === 'handover')) {
      cover.leadership.push({caseId, kind: fault.kind, report: result.leadership})
      const {handoverMs, firstWriteMs, afterTakeover} = result.leadership
      log(`${caseId}: handover ${handoverMs === undefined ? 'none' : `${(handoverMs / 1000).toFixed(1)} s`}, new leader's first write ${firstWriteMs === undefined ? '-' : `${(firstWriteMs / 1000).toFixed(1)} s`}, writes after the takeover ${afterTakeover}`)
    }
    const carriedIn = fault.kind === 'crash' ? carried : [] // withCarried took all of them, or none
    cover.carried += carriedIn.length
    record(caseId, fault, result, carriedIn)
    for (const message of result.violations) log(`  VIOLATION ${caseId}: ${message}`)
    log(`${caseId}: ${result.violations.length ? `${result.violations.length} violation(s)` : 'ok'} in ${result.seconds.toFixed(0)} s`)
  }

  // Each workload's reference, then at once its first perturbed case (so that even a short campaign applies faults);
  // then rounds of cases 2, 3, … over every workload until the time is up.
  const first = onlyN ?? 1
  for (const workload of selected) {
    if (Date.now() > deadline && references.size > 0) break
    await reference(workload)
    if (Date.now() > deadline || (options.rounds !== undefined && options.rounds < first)) continue
    await perturbed(workload, first)
  }
  // Orderings: the workloads of one group differ only in the order of creations, so their references must agree.
  const groups = new Map<string, Workload[]>()
  for (const workload of selected) if (workload.orderingGroup && references.has(workload.name)) groups.set(workload.orderingGroup, [...(groups.get(workload.orderingGroup) ?? []), workload])
  for (const members of groups.values()) {
    const [head, ...rest] = members
    for (const other of rest) {
      const diff = diffStates(references.get(head!.name)!.result.state, references.get(other.name)!.result.state)
      if (diff.length) {
        const caseId = `${other.name}:0`
        violations.push({caseId, fault: {kind: 'none'}, replay: `npm run chaos -- --seed ${options.seed} --feature ${other.feature} --minutes 1`,
          message: `ordering: the end state of ${other.name} differs from ${head!.name}'s:\n      ${diff.slice(0, 8).join('\n      ')}`})
      }
    }
  }
  if (onlyN === undefined) {
    for (let n = first + 1; options.rounds === undefined || n <= options.rounds; n++) {
      let ran = false
      for (const workload of selected) {
        if (!references.has(workload.name) || Date.now() > deadline) continue
        await perturbed(workload, n)
        ran = true
      }
      if (!ran) break
    }
  }
  return {coverage, violations, seconds: (Date.now() - started) / 1000}
}

/** The coverage table and the violations, as printed by `npm run chaos`. */
export function report(result: CampaignResult, seed: number): string {
  const lines: string[] = []
  lines.push(`Fault campaign, seed ${seed}, ${(result.seconds / 60).toFixed(1)} min`)
  lines.push('')
  lines.push('workload                 cases  write points crashed (distinct points crashed/seen; crashes/writes seen)')
  for (const c of result.coverage) {
    const writes = [...c.writePoints.values()].reduce((a, b) => a + b, 0)
    const crashes = [...c.crashed.values()].reduce((a, set) => a + set.size, 0)
    lines.push(`${c.workload.padEnd(24)} ${String(c.cases).padStart(5)}  ${c.crashed.size}/${c.writePoints.size}; ${crashes}/${writes}`)
  }
  lines.push('')
  lines.push('write points per controller (crashed at least once in some workload / seen in the references)')
  const seen = new Map<string, Set<string>>()
  const crashed = new Set(result.coverage.flatMap((c) => [...c.crashed.keys()]))
  for (const c of result.coverage) {
    for (const point of c.writePoints.keys()) {
      const [side, controller] = point.split(' ')
      const key = `${side} ${controller}`
      seen.set(key, (seen.get(key) ?? new Set()).add(point))
    }
  }
  for (const [key, points] of [...seen].sort(([a], [b]) => a.localeCompare(b))) {
    const missing = [...points].filter((point) => !crashed.has(point))
    const done = points.size - missing.length
    lines.push(`  ${key.padEnd(40)} ${done}/${points.size}${missing.length ? `  not crashed: ${missing.map((p) => p.split(' ').slice(2).join(' ')).join(', ')}` : ''}`)
  }
  lines.push('')
  lines.push('faults by kind (cases; "not reached": the run never got there)')
  const totals: Record<string, number> = {}
  for (const c of result.coverage) for (const [kind, n] of Object.entries(c.faults)) totals[kind] = (totals[kind] ?? 0) + n
  for (const [kind, n] of Object.entries(totals).sort()) lines.push(`  ${kind.padEnd(28)} ${n}`)
  const stale = result.coverage.reduce((a, c) => a + c.staleLists, 0)
  const coalesced = result.coverage.reduce((a, c) => a + c.coalesced, 0)
  lines.push(`  stale LISTs served (time travel)   ${stale}`)
  lines.push(`  coalescing watch closes            ${coalesced}`)
  lines.push(`  stale + coalesced                  ${stale + coalesced}`)
  lines.push(`  crash targets carried over         ${result.coverage.reduce((a, c) => a + c.carried, 0)}`)
  lines.push('')
  const led = result.coverage.flatMap((c) => c.leadership)
  lines.push('leader freezes and handovers (two replicas; "after takeover": writes by a replica after another took the lease, must be 0)')
  if (led.length) {
    lines.push(`  ${'case'.padEnd(26)} ${'fault'.padEnd(22)} ${'handover'.padStart(9)} ${'1st write'.padStart(9)} ${'after takeover'.padStart(14)} ${'takeovers'.padStart(9)} ${'others wrote'.padStart(12)} ${'writes (ref)'.padStart(12)}`)
    const secs = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`)
    for (const {caseId, kind, report: r} of led) {
      const fault = `${kind === 'pause' ? 'frozen' : 'cut off'} ${(r.faultMs / 1000).toFixed(1)} s`
      lines.push(`  ${caseId.padEnd(26)} ${fault.padEnd(22)} ${secs(r.handoverMs).padStart(9)} ${secs(r.firstWriteMs).padStart(9)} ${String(r.afterTakeover).padStart(14)} ${String(r.takeovers).padStart(9)} ${String(r.otherWrites).padStart(12)} ${`${r.writes} (${r.referenceWrites ?? '-'})`.padStart(12)}`)
    }
  } else {
    lines.push('  none')
  }
  lines.push('')
  lines.push('API faults by collection (api fault proxy: applied-then-lost = the API applied the write, the answer was lost)')
  const classes = ['applied-then-lost', 'before', 'slow', 'reset-mid-body', 'read-lost', 'not-applied']
  const byCollection = new Map<string, Record<string, number>>()
  for (const c of result.coverage) {
    for (const [what, n] of Object.entries(c.apiFaults)) {
      const [cls, collection] = what.split(' ') as [string, string]
      const row = byCollection.get(collection) ?? {}
      row[cls] = (row[cls] ?? 0) + n
      byCollection.set(collection, row)
    }
  }
  if (byCollection.size) {
    lines.push(`  ${'collection'.padEnd(28)} ${classes.map((cls) => cls.padStart(17)).join(' ')}`)
    for (const [collection, row] of [...byCollection].sort(([a], [b]) => a.localeCompare(b))) lines.push(`  ${collection.padEnd(28)} ${classes.map((cls) => String(row[cls] ?? 0).padStart(17)).join(' ')}`)
  } else {
    lines.push('  none')
  }
  lines.push(`  API duplicates found (live, or created more often than in the reference): ${result.violations.filter((v) => /^API duplicate/.test(v.message)).length}`)
  lines.push('')
  lines.push('orderings')
  for (const c of result.coverage.filter((c) => c.ordering)) lines.push(`  ${c.ordering!.padEnd(34)} reference + ${c.cases} perturbed`)
  lines.push('')
  lines.push(`violations: ${result.violations.length}`)
  for (const v of result.violations) {
    lines.push(`- ${v.caseId} (${describeFault(v.fault)}): ${v.message}`)
    lines.push(`  replay: ${v.replay}`)
  }
  return lines.join('\n')
}
