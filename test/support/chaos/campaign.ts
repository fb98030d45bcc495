/**
 * The seeded fault campaign: for each workload a reference run, then perturbed runs until the time is up. Every
 * decision comes from the seed (`Prng`); a case id `<workload>:<n>` plus the seed replays one case exactly as far as
 * the campaign decides it (the operator's own timing still varies).
 *
 * Case n of a workload: crash points in order (every write point the reference run saw, round robin over the
 * resources), and every third case (2, 5, 8, …) one seeded non-crash fault (stale LIST, coalesced watch close, held
 * watch, injected failure, refused connections); once the crash points are used up, only those.
 */
import {readFileSync} from 'node:fs'
import path from 'node:path'
import yaml from 'js-yaml'
import {applyCrd, waitEstablished} from '../../../src/kube/crd-install.js'
import {adminClient, ensureCrds} from '../cluster.js'
import type {FailKind} from './kube-proxy.js'
import {Prng} from './prng.js'
import {diffStates, runCase, type CaseResult, type Fault} from './runner.js'
import {workloads, type Workload} from './workloads.js'

const crdDir = path.resolve(import.meta.dirname, '../../../../shared/fixtures/crds')

/** The Velero, CloudNativePG and cert-manager CRDs the workloads need (the polycrate.io CRDs come from `ensureCrds`). */
export async function installCampaignCrds(): Promise<void> {
  await ensureCrds()
  const client = adminClient()
  try {
    for (const file of ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml', 'cert-manager.io_certificates.yaml']) {
      const crd = yaml.load(readFileSync(path.join(crdDir, file), 'utf8')) as {metadata: {name: string}}
      await applyCrd(client, crd)
      await waitEstablished(client, crd.metadata.name)
    }
  } finally {
    client.close()
  }
}

export interface Violation {
  caseId: string
  fault: Fault
  message: string
  replay: string
}

export interface Coverage {
  workload: string
  /** resource → write points seen in the reference run. */
  writePoints: Map<string, number>
  /** resource → crash points covered (the crash happened). */
  crashed: Map<string, Set<number>>
  faults: Record<string, number>
  cases: number
  ordering?: string
}

export interface CampaignOptions {
  seed: number
  minutes: number
  feature?: string
  /** Only these workloads (by name). */
  workloads?: string[]
  /** Only this case (`<workload>:<n>`), for replays. */
  caseId?: string
  log?: (line: string) => void
}

export interface CampaignResult {
  coverage: Coverage[]
  violations: Violation[]
  seconds: number
}

/** The crash points of a reference run: `[resource, k]` for every write, in order of resource then k. */
export function crashPoints(writePoints: string[]): Array<[string, number]> {
  const max = new Map<string, number>()
  for (const point of writePoints) {
    const at = point.lastIndexOf('#')
    max.set(point.slice(0, at), Math.max(max.get(point.slice(0, at)) ?? 0, Number(point.slice(at + 1))))
  }
  // Leases and Events are the operator's bookkeeping, not its sync: crashing there is covered, but last.
  const resources = [...max.keys()].sort((a, b) => Number(/leases|events/.test(a)) - Number(/leases|events/.test(b)) || a.localeCompare(b))
  // Round robin over the resources (write 1 of each, then write 2 of each, …), so a short campaign crashes in every one.
  const points: Array<[string, number]> = []
  const longest = Math.max(0, ...max.values())
  for (let k = 1; k <= longest; k++) for (const resource of resources) if (k <= max.get(resource)!) points.push([resource, k])
  return points
}

/** The fault of case n (n ≥ 1) of a workload; pure in (seed, workload, n, reference). */
export function faultFor(seed: number, workload: Workload, n: number, points: Array<[string, number]>, listResources: string[]): Fault {
  const random = new Prng(seed * 7919 + n * 104_729 + [...workload.name].reduce((sum, c) => sum + c.charCodeAt(0), 0))
  const stepCount = workload.steps.length
  const atStep = random.int(stepCount + 1)
  // Cases 1, 3, 4, 6, 7, … crash; cases 2, 5, 8, … draw another fault (so even a short campaign has one of each).
  const crashIndex = n - 1 - Math.floor((n + 1) / 3)
  if (n % 3 !== 2 && crashIndex < points.length) {
    const [resource, k] = points[crashIndex]!
    return {kind: 'crash', resource, k}
  }
  // Stale lists and closes aim at what the workload touches: its sources and the resources the operator wrote.
  const touched = new Set([...workload.sources, ...points.map(([resource]) => resource.replace(/\/status$/, ''))])
  const lists = listResources.filter((r) => !/leases|events|operatorconfigs/.test(r))
  const syncLists = lists.some((r) => touched.has(r)) ? lists.filter((r) => touched.has(r)) : lists
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

export function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'none': return 'none'
    case 'crash': return `crash after ${fault.resource}#${fault.k}`
    case 'stale': return `stale LIST of ${fault.resource} before step ${fault.atStep}`
    case 'coalesce': return `watches of ${fault.resource ?? 'every resource'} closed (410 → relist) before step ${fault.atStep}`
    case 'hold': return `watch events held ${fault.ms} ms from step ${fault.atStep}`
    case 'fail': return `${fault.times}× ${fault.failure} on ${fault.verb ?? 'any'} from step ${fault.atStep}`
    case 'refuse': return `connections refused ${fault.ms} ms from step ${fault.atStep}`
  }
}

export function replayCommand(seed: number, caseId: string): string {
  return `npm run chaos -- --seed ${seed} --case ${caseId}`
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => {})
  const started = Date.now()
  const deadline = started + options.minutes * 60_000
  const onlyWorkload = options.caseId?.split(':')[0]
  const selected = workloads.filter((w) => (!options.feature || w.feature === options.feature) && (!onlyWorkload || w.name === onlyWorkload) && (!options.workloads || options.workloads.includes(w.name)))
  if (selected.length === 0) throw new Error(`no workload for --feature ${options.feature ?? ''} / --case ${options.caseId ?? ''}; features: ${[...new Set(workloads.map((w) => w.feature))].join(', ')}`)
  const violations: Violation[] = []
  const coverage: Coverage[] = []
  const record = (caseId: string, fault: Fault, result: CaseResult) => {
    for (const message of result.violations) violations.push({caseId, fault, message, replay: replayCommand(options.seed, caseId)})
  }
  // One reference per workload first (so the time bound still covers every workload), then rounds of cases.
  const references = new Map<string, {result: CaseResult; points: Array<[string, number]>}>()
  for (const workload of selected) {
    if (Date.now() > deadline && references.size > 0) break
    log(`${workload.name}: reference run`)
    const result = await runCase(workload, {kind: 'none'}, {log})
    record(`${workload.name}:0`, {kind: 'none'}, result)
    const points = crashPoints(result.writePoints)
    references.set(workload.name, {result, points})
    const writePoints = new Map<string, number>()
    for (const [resource, k] of points) writePoints.set(resource, Math.max(writePoints.get(resource) ?? 0, k))
    coverage.push({workload: workload.name, writePoints, crashed: new Map(), faults: {}, cases: 0, ordering: workload.ordering})
    log(`${workload.name}: reference settled in ${result.seconds.toFixed(0)} s, ${points.length} write points, ${result.state.length} objects`)
  }
  // Orderings: the workloads of one group differ only in the order of creations, so their references must agree.
  const groups = new Map<string, Workload[]>()
  for (const workload of selected) if (workload.orderingGroup && references.has(workload.name)) groups.set(workload.orderingGroup, [...(groups.get(workload.orderingGroup) ?? []), workload])
  for (const members of groups.values()) {
    const [first, ...rest] = members
    for (const other of rest) {
      const diff = diffStates(references.get(first!.name)!.result.state, references.get(other.name)!.result.state)
      if (diff.length) {
        const caseId = `${other.name}:0`
        violations.push({caseId, fault: {kind: 'none'}, replay: `npm run chaos -- --seed ${options.seed} --feature ${other.feature} --minutes 1`,
          message: `ordering: the end state of ${other.name} differs from ${first!.name}'s:\n      ${diff.slice(0, 8).join('\n      ')}`})
      }
    }
  }
  const onlyN = options.caseId ? Number(options.caseId.split(':')[1]) : undefined
  for (let n = onlyN ?? 1; ; n++) {
    let ran = false
    for (const workload of selected) {
      const reference = references.get(workload.name)
      if (!reference || Date.now() > deadline) continue
      const cover = coverage.find((c) => c.workload === workload.name)!
      const fault = faultFor(options.seed, workload, n, reference.points, reference.result.listResources)
      const caseId = `${workload.name}:${n}`
      log(`${caseId}: ${describeFault(fault)}`)
      const result = await runCase(workload, fault, {reference: {state: reference.result.state, apiDeletes: reference.result.apiDeletes, crDeletes: reference.result.crDeletes}, log})
      ran = true
      cover.cases++
      const label = fault.kind === 'fail' ? `fail ${fault.failure}` : fault.kind
      if (result.faultApplied) {
        cover.faults[label] = (cover.faults[label] ?? 0) + 1
        if (fault.kind === 'crash') {
          const set = cover.crashed.get(fault.resource) ?? new Set<number>()
          set.add(fault.k)
          cover.crashed.set(fault.resource, set)
        }
      } else {
        cover.faults[`${label} (not reached)`] = (cover.faults[`${label} (not reached)`] ?? 0) + 1
      }
      record(caseId, fault, result)
      for (const message of result.violations) log(`  VIOLATION ${caseId}: ${message}`)
      log(`${caseId}: ${result.violations.length ? `${result.violations.length} violation(s)` : 'ok'} in ${result.seconds.toFixed(0)} s`)
    }
    if (!ran || onlyN !== undefined) break
  }
  return {coverage, violations, seconds: (Date.now() - started) / 1000}
}

/** The coverage table and the violations, as printed by `npm run chaos`. */
export function report(result: CampaignResult, seed: number): string {
  const lines: string[] = []
  lines.push(`Fault campaign, seed ${seed}, ${(result.seconds / 60).toFixed(1)} min`)
  lines.push('')
  lines.push('workload                 cases  write points crashed (per resource: crashed/seen)')
  for (const c of result.coverage) {
    const perResource = [...c.writePoints].map(([resource, seen]) => `${resource} ${c.crashed.get(resource)?.size ?? 0}/${seen}`).join(', ')
    const total = [...c.writePoints.values()].reduce((a, b) => a + b, 0)
    const crashed = [...c.crashed.values()].reduce((a, s) => a + s.size, 0)
    lines.push(`${c.workload.padEnd(24)} ${String(c.cases).padStart(5)}  ${crashed}/${total}: ${perResource || '-'}`)
  }
  lines.push('')
  lines.push('faults by kind (applied; "not reached": the run never got there)')
  const totals: Record<string, number> = {}
  for (const c of result.coverage) for (const [kind, n] of Object.entries(c.faults)) totals[kind] = (totals[kind] ?? 0) + n
  for (const [kind, n] of Object.entries(totals).sort()) lines.push(`  ${kind.padEnd(28)} ${n}`)
  lines.push(`  stale LIST (time travel)     ${totals.stale ?? 0}`)
  lines.push(`  coalesced watch closes       ${totals.coalesce ?? 0}`)
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
