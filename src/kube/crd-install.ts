/** Server-side apply of CustomResourceDefinitions and waiting until the API server serves them. */
import {isDeepStrictEqual} from 'node:util'
import {poll, systemClock, type Clock} from '../lib/clock.js'
import type {KubeClient, KubeObject, ResourceRef} from './client.js'
import {KubeApiError} from './client.js'
import {resources} from './resources.js'

export type InstallOutcome = 'created' | 'updated' | 'unchanged'

export interface InstallResult {
  name: string
  outcome: InstallOutcome
}

/** The API server refused a CRD (invalid schema, names taken by another CRD, …). */
export class CrdRejectedError extends Error {
  override name = 'CrdRejectedError'
  constructor(
    readonly crdName: string,
    reason: string,
  ) {
    super(`CustomResourceDefinition ${crdName} was rejected: ${reason}`)
  }
}

interface CrdObject extends KubeObject {
  spec?: unknown
  status?: {conditions?: Array<{type: string; status: string; reason?: string; message?: string}>}
}

interface NamedObject {
  metadata: {name: string}
}

const crdRef = (name: string): ResourceRef => ({...resources.customResourceDefinitions, name})

/** Applies one CRD (server-side, our field manager) and says whether that created, changed or kept it. */
export async function applyCrd(client: KubeClient, crd: NamedObject, dryRun = false): Promise<InstallResult> {
  const name = crd.metadata.name
  const existing = await client.getOrUndefined<CrdObject>(crdRef(name))
  let applied: CrdObject
  try {
    applied = await client.apply<CrdObject>(crdRef(name), crd, {dryRun})
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 422 || error.status === 400)) {
      throw new CrdRejectedError(name, error.message)
    }
    throw error
  }
  if (!existing) return {name, outcome: 'created'}
  return {name, outcome: sameDefinition(existing, applied) ? 'unchanged' : 'updated'}
}

function sameDefinition(a: CrdObject, b: CrdObject): boolean {
  return (
    isDeepStrictEqual(a.spec, b.spec) &&
    isDeepStrictEqual(a.metadata?.labels ?? {}, b.metadata?.labels ?? {}) &&
    isDeepStrictEqual(a.metadata?.annotations ?? {}, b.metadata?.annotations ?? {})
  )
}

/** Polls until the CRD is Established; fails fast when its names are not accepted. */
export async function waitEstablished(client: KubeClient, name: string, timeoutMs = 60_000, clock: Clock = systemClock): Promise<void> {
  await poll(clock, {intervalMs: 200, timeoutMs}, async (expired) => {
    const crd = await client.getOrUndefined<CrdObject>(crdRef(name))
    const conditions = crd?.status?.conditions ?? []
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return true
    const names = conditions.find((c) => c.type === 'NamesAccepted' && c.status === 'False')
    if (names) throw new CrdRejectedError(name, names.message ?? names.reason ?? 'names not accepted')
    if (expired) {
      throw new Error(`CustomResourceDefinition ${name} is not Established after ${Math.round(timeoutMs / 1000)}s: check \`kubectl describe crd ${name}\`.`)
    }
    return undefined
  })
}

export interface InstallOptions {
  dryRun?: boolean
  timeoutMs?: number
  /** Called once per CRD as soon as it is applied (and, unless dry run, Established). */
  onResult?: (result: InstallResult) => void
  /** The clock of the wait for Established (the system clock by default). */
  clock?: Clock
}

/** Applies every CRD, then waits for each to be Established (skipped on dry run). */
export async function installCrds(client: KubeClient, crds: readonly NamedObject[], options: InstallOptions = {}): Promise<InstallResult[]> {
  const results: InstallResult[] = []
  for (const crd of crds) {
    const result = await applyCrd(client, crd, options.dryRun)
    if (!options.dryRun) await waitEstablished(client, result.name, options.timeoutMs, options.clock)
    options.onResult?.(result)
    results.push(result)
  }
  return results
}
