/**
 * What a running discovery remembers between reconciles (it used to live in startDiscovery's closures): the CRs it
 * applied (echo suppression, and the plan's `alreadyApplied`), the source deletions it saw, and the problems it
 * reported per source. Each is a small class with the one question the discovery asks of it.
 */
import type {EventRecorder} from '../../kube/events.js'
import type {KubeObject} from '../../kube/client.js'
import {sameRef, upToDate, type CurrentObject, type DesiredObject, type DesiredState, type ObjectRef} from './plan.js'

/** How long a source deletion seen by this process counts as "seen" (its CRs are deleted long before). */
export const SEEN_DELETED_TTL_MS = 60 * 60 * 1000

/** A source's key in the memories (`kind/namespace/name`). */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`
}

/** A CR's cache key (`namespace/name`, as objectKey makes it). */
export function crKey(object: {namespace?: string; name: string}): string {
  return object.namespace ? `${object.namespace}/${object.name}` : object.name
}

/** What this process last applied per CR key, and the cached resourceVersion it replaced. */
export class AppliedMemo {
  private readonly entries = new Map<string, {json: string; wanted: DesiredObject & {finalizers?: string[]}; before: string | undefined}>()

  /** An apply of `object` succeeded; the cache showed `before` when it was sent. */
  remember(object: DesiredObject & {finalizers?: string[]}, before: string | undefined): void {
    this.entries.set(crKey(object), {json: JSON.stringify(object), wanted: object, before})
  }

  /** The CR is gone: nothing to suppress for it any more. */
  forget(key: string): void {
    this.entries.delete(key)
  }

  /** An event of the CR `key` showing `current()` is the echo of our own apply: it needs no new pass. */
  isEcho(key: string, current: () => CurrentObject): boolean {
    const memo = this.entries.get(key)
    if (memo === undefined) return false
    const object = current()
    return !object.deleting && upToDate(object, memo.wanted)
  }

  /** The plan's question: this very object was applied over this very resourceVersion already. */
  alreadyApplied(object: DesiredObject, current: CurrentObject | undefined): boolean {
    const memo = this.entries.get(crKey(object))
    return memo !== undefined && memo.json === JSON.stringify(object) && memo.before === current?.resourceVersion
  }
}

/** Sources whose deletion this process saw (`kind/namespace/name` → when), kept for `ttlMs`. */
export class SeenDeletions {
  private readonly seen = new Map<string, number>()

  constructor(private readonly ttlMs = SEEN_DELETED_TTL_MS) {}

  /** The source `ref` was deleted at `now`; entries older than the TTL are dropped on the way. */
  see(ref: ObjectRef, now: number): void {
    for (const [key, at] of this.seen) if (now - at > this.ttlMs) this.seen.delete(key)
    this.seen.set(refKey(ref), now)
  }

  has(ref: ObjectRef): boolean {
    return this.seen.has(refKey(ref))
  }
}

/** The problems of `desired` to report now: those of each source whose set of problems changed since `reported`. */
export function problemsToReport(desired: DesiredState, reported: ReadonlyMap<string, string>): Array<{key: string; fingerprint: string; problems: DesiredState['problems']}> {
  const changes: Array<{key: string; fingerprint: string; problems: DesiredState['problems']}> = []
  const latest = new Map(reported)
  for (const decision of desired.sources) {
    const problems = desired.problems.filter((problem) => sameRef(problem.source, decision.ref))
    const key = refKey(decision.ref)
    const fingerprint = JSON.stringify(problems.map(({type, reason, message}) => [type, reason, message]))
    if ((latest.get(key) ?? '[]') === fingerprint) continue
    latest.set(key, fingerprint)
    changes.push({key, fingerprint, problems})
  }
  return changes
}

/** Problems last reported per source, so each change of a source's problems is one set of Events. */
export class ReportedProblems {
  private readonly reported = new Map<string, string>()

  /** The source is gone: a source of that name made later starts afresh. */
  forget(ref: ObjectRef): void {
    this.reported.delete(refKey(ref))
  }

  /** Problems → Events on their source, once per change of that source's set of problems. */
  async report(recorder: Pick<EventRecorder, 'record'>, desired: DesiredState, sourceObject: (ref: ObjectRef) => KubeObject): Promise<void> {
    for (const {key, fingerprint, problems} of problemsToReport(desired, this.reported)) {
      this.reported.set(key, fingerprint)
      for (const problem of problems) await recorder.record(sourceObject(problem.source), problem.type ?? 'Warning', problem.reason, problem.message)
    }
  }
}
