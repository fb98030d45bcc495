/**
 * `polycrate operator status --watch`: the report again whenever something it shows changes. Watches, not polling:
 * one metadata-only informer (list + watch, src/operator/runtime/informer.ts) per resource the report reads — the
 * polycrate.io kinds shown and the OperatorConfig, and for the "held" list the Ingresses, HTTPRoutes, Services and CRs
 * being deleted. A watch event makes the report be read again (coalesced: events during a read make one more read,
 * not one each) and printed when it differs from the last one printed (ages aside, which move with the clock).
 */
import {setMaxListeners} from 'node:events'
import {crdResource, type CrdDefinition} from '../crds/define.js'
import {allCrds} from '../crds/index.js'
import {KubeApiError, resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../kube/client.js'
import {resources} from '../kube/resources.js'
import {heartbeatLease, LEADER_LEASE_NAME, OPERATOR_SELECTOR} from '../operator/conventions.js'
import {Informer} from '../operator/runtime/informer.js'
import {FINALIZED_SOURCES} from '../operator/install/uninstall.js'
import type {StatusReport} from './status-view.js'

export interface WatchedResource {
  kind: string
  resource: ResourceRef
  /** Only objects being deleted matter (the sources of the held list): other changes do not change the report. */
  deletionsOnly?: boolean
  labelSelector?: string
  fieldSelector?: string
}

const LEASES: ResourceRef = {group: 'coordination.k8s.io', version: 'v1', plural: 'leases'}

const operatorConfigCrd = allCrds.find((def) => def.kind === 'OperatorConfig')!

/** What the report of these kinds (in `namespace`, or all) reads, as resources to watch. */
export function statusWatchResources(kinds: readonly CrdDefinition[], namespace?: string): WatchedResource[] {
  const shown = new Set([operatorConfigCrd, ...kinds])
  const scoped = (resource: ResourceRef, namespaced: boolean) => ({...resource, ...(namespaced && namespace ? {namespace} : {})})
  return [
    ...allCrds.map((def) => ({
      kind: def.kind,
      resource: scoped(crdResource(def), def.scope === 'Namespaced'),
      // A kind not shown still counts for the held list (its CRs being deleted).
      ...(shown.has(def) ? {} : {deletionsOnly: true}),
    })),
    ...FINALIZED_SOURCES.map(({kind, ...resource}) => ({kind, resource: scoped(resource, true), deletionsOnly: true})),
    {kind: 'Service', resource: scoped(resources.services, true), deletionsOnly: true},
    // What runs (presence.ts): the operator's Deployments and Pods, its leader and heartbeat Leases.
    {kind: 'Deployment', resource: resources.deployments, labelSelector: OPERATOR_SELECTOR},
    {kind: 'Pod', resource: resources.pods, labelSelector: OPERATOR_SELECTOR},
    {kind: 'Lease', resource: LEASES, fieldSelector: `metadata.name=${LEADER_LEASE_NAME}`},
    {kind: 'Lease', resource: LEASES, labelSelector: `${heartbeatLease.roleLabel}=${heartbeatLease.roleValue}`},
  ]
}

/** Whether a watch event of this resource can change the report (pure). */
export function relevantChange(watched: WatchedResource, before: KubeObject | undefined, after: KubeObject | undefined): boolean {
  if (!watched.deletionsOnly) return true
  const deleting = (object: KubeObject | undefined) => Boolean(object?.metadata?.deletionTimestamp)
  return deleting(before) || deleting(after)
}

/** What decides "changed": the report without the ages (they move with the clock, not with the cluster). */
export function reportKey(report: StatusReport): string {
  return JSON.stringify({...report, resources: report.resources.map(({age: _age, ...row}) => row)})
}

/**
 * Runs `read` once, then again after every `trigger()`; triggers while a read runs make exactly one more read after
 * it. `settled()` resolves when no read runs or is due (for tests and for a clean stop).
 */
export class CoalescingRefresh {
  private running = false
  private due = false
  private idle: Array<() => void> = []

  constructor(private readonly read: () => Promise<void>) {}

  trigger(): void {
    if (this.running) {
      this.due = true
      return
    }
    this.running = true
    void this.loop()
  }

  settled(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => this.idle.push(resolve))
  }

  private async loop(): Promise<void> {
    do {
      this.due = false
      await this.read()
    } while (this.due)
    this.running = false
    for (const resolve of this.idle.splice(0)) resolve()
  }
}

export interface WatchStatusOptions {
  client: KubeClient
  watched: readonly WatchedResource[]
  /** Reads the report (as `status` does). */
  read: () => Promise<StatusReport>
  /** A report that differs from the last one emitted (the first one always). */
  emit: (report: StatusReport) => void
  /** A read that failed (the watch goes on; the next change reads again). */
  onError: (error: unknown) => void
  signal: AbortSignal
}

/** Whether the server serves this resource (a CRD not installed, or a kind this identity may not list: not watched). */
async function served(client: KubeClient, resource: ResourceRef): Promise<boolean> {
  try {
    await client.request({path: resourcePath(resource), query: {limit: 1}})
    return true
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 404 || error.status === 403)) return false
    throw error
  }
}

/**
 * Watches until `signal` aborts: informers first (synced before the first read, so no change between the read and
 * the watch is missed), then a read, then a read per relevant change. Resolves once everything is stopped.
 */
export async function watchStatus(options: WatchStatusOptions): Promise<void> {
  const {client, signal} = options
  const available = await Promise.all(options.watched.map(async (watched) => ((await served(client, watched.resource)) ? watched : undefined)))
  const informers: Informer[] = []
  let lastKey: string | undefined
  const refresh = new CoalescingRefresh(async () => {
    if (signal.aborted) return
    try {
      const report = await options.read()
      const key = reportKey(report)
      if (key !== lastKey && !signal.aborted) {
        lastKey = key
        options.emit(report)
      }
    } catch (error) {
      if (!signal.aborted) options.onError(error)
    }
  })
  let live = false
  for (const watched of available) {
    if (!watched) continue
    const informer = new Informer({client, resource: watched.resource, kind: watched.kind, metadataOnly: true, labelSelector: watched.labelSelector, fieldSelector: watched.fieldSelector})
    informer.addHandler({
      onAdd: (object) => live && relevantChange(watched, undefined, object) && refresh.trigger(),
      onUpdate: (before, after) => live && relevantChange(watched, before, after) && refresh.trigger(),
      onDelete: (object) => live && relevantChange(watched, object, undefined) && refresh.trigger(),
    })
    informers.push(informer)
    informer.start()
  }
  // One abort listener per informer waiting for its sync: more than EventTarget's default of 10.
  const syncing = new AbortController()
  setMaxListeners(informers.length + 1, syncing.signal)
  const abortSyncing = () => syncing.abort()
  signal.addEventListener('abort', abortSyncing, {once: true})
  try {
    await Promise.all(informers.map((informer) => informer.waitForSync(syncing.signal)))
    if (signal.aborted) return
    live = true
    refresh.trigger()
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve()
      else signal.addEventListener('abort', () => resolve(), {once: true})
    })
  } finally {
    signal.removeEventListener('abort', abortSyncing)
    await Promise.all(informers.map((informer) => informer.stop()))
    await refresh.settled()
  }
}

/** How one report is printed by --watch. */
export interface FrameOptions {
  format: 'table' | 'json' | 'yaml'
  /** stdout is a terminal: the table replaces the previous one (cleared screen) instead of following it. */
  terminal: boolean
  now: number
  namespace?: string
  colour: boolean
}

/**
 * One report as --watch prints it: -o json one compact JSON document per line (NDJSON), -o yaml one YAML document
 * (`---`), the table on a terminal after clearing it (with the time and how to stop), elsewhere followed by a blank line.
 */
export function statusFrame(report: StatusReport, options: FrameOptions, render: {table: (report: StatusReport) => string; yaml: (report: StatusReport) => string}): string {
  if (options.format === 'json') return `${JSON.stringify(report)}\n`
  if (options.format === 'yaml') return `---\n${render.yaml(report)}`
  const table = render.table(report)
  if (!options.terminal) return `${table}\n\n`
  const time = new Date(options.now).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
  return `\u001B[H\u001B[2J${table}\n\nWatching for changes (as of ${time}); Ctrl-C to stop.\n`
}
