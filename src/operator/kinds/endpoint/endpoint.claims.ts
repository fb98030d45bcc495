/**
 * Host claims across sources (pure): one Endpoint CR per host and namespace.
 *
 * Within one namespace, when two sources claim the same host: an HTTPRoute wins over an Ingress (regardless of age;
 * once an HTTPRoute has the Endpoint CR, an Ingress does not take it back); otherwise the oldest source wins
 * (creationTimestamp; a source without one counts as newest), then the name, then the uid. The loser gets a
 * HostClaimedElsewhere problem. Different namespaces never conflict (the CRs live in the source's namespace). Sources
 * being deleted claim nothing: endpointsForIngress/endpointsForHTTPRoute return no endpoints for them.
 *
 * Decision where the operator reference is silent: two *different* hosts can map to the same CR name (`a-b.example.com` and
 * `a.b-example.com` → `a-b-example-com`). Both are monitored: the host whose source wins by the rule above (then the
 * host name) keeps the plain name, the other gets the name with a hash suffix of its host (`endpointNameWithHash`).
 *
 * The result is sorted (endpoints by namespace and name, conflicts by namespace, host and loser), so it does not
 * depend on the order of the input.
 */
import {annotations} from '../../conventions.js'
import {problem} from './endpoint.annotations.js'
import {endpointNameWithHash} from './endpoint.hosts.js'
import {discoveryProblemReasons, type DesiredEndpoint, type SourceRef, type SourceResult} from './endpoint.types.js'
import type {DiscoveryProblem} from '../../discovery/types.js'

export interface HostConflict {
  loser: SourceRef
  winner: SourceRef
  host: string
  problem: DiscoveryProblem
}

const kindRank: Record<SourceRef['kind'], number> = {HTTPRoute: 0, Ingress: 1}

function createdAt(source: SourceRef): number {
  const time = source.creationTimestamp === undefined ? Number.NaN : Date.parse(source.creationTimestamp)
  return Number.isNaN(time) ? Number.POSITIVE_INFINITY : time
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Negative when `a` wins over `b` for the same host. */
export function compareClaims(a: SourceRef, b: SourceRef): number {
  const byKind = kindRank[a.kind] - kindRank[b.kind]
  if (byKind !== 0) return byKind
  const [ta, tb] = [createdAt(a), createdAt(b)]
  if (ta !== tb) return ta < tb ? -1 : 1
  return compareText(a.name, b.name) || compareText(a.uid ?? '', b.uid ?? '')
}

/** The same source object (kind, namespace, name). */
export function sameSource(a: SourceRef, b: SourceRef): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.name === b.name
}

function sourceKey(source: SourceRef): string {
  return `${source.kind}/${source.namespace}/${source.name}`
}

function why(winner: SourceRef, loser: SourceRef): string {
  if (winner.kind !== loser.kind) return 'an HTTPRoute takes precedence over an Ingress for the same host in one namespace'
  if (createdAt(winner) !== createdAt(loser)) {
    return `the older source wins: it was created ${winner.creationTimestamp ?? 'earlier'}, this one ${loser.creationTimestamp ?? 'later (no creation time)'}`
  }
  return 'both are equally old, so the name that sorts first wins'
}

function claimedElsewhere(host: string, winner: SourceRef, loser: SourceRef): DiscoveryProblem {
  return problem(
    discoveryProblemReasons.hostClaimedElsewhere,
    `host "${host}" is already monitored through ${winner.kind} ${winner.namespace}/${winner.name} (${why(winner, loser)}); `
      + `this ${loser.kind} gets no Endpoint for it. Remove the host from one of the two, or set ${annotations.endpointMonitor}: "false" on this ${loser.kind}.`,
  )
}

export function resolveHostClaims(results: readonly SourceResult[]): {endpoints: DesiredEndpoint[]; conflicts: HostConflict[]} {
  const byHost = new Map<string, DesiredEndpoint[]>()
  const seen = new Set<string>()
  for (const result of results) {
    for (const endpoint of result.endpoints) {
      const claimKey = `${sourceKey(endpoint.source)}|${endpoint.host}`
      if (seen.has(claimKey)) continue
      seen.add(claimKey)
      const hostKey = `${endpoint.namespace}\u0000${endpoint.host}`
      byHost.set(hostKey, [...(byHost.get(hostKey) ?? []), endpoint])
    }
  }

  const winners: DesiredEndpoint[] = []
  const conflicts: HostConflict[] = []
  for (const claims of byHost.values()) {
    const [winner, ...losers] = [...claims].sort((a, b) => compareClaims(a.source, b.source))
    if (!winner) continue
    winners.push(winner)
    for (const loser of losers) {
      conflicts.push({loser: loser.source, winner: winner.source, host: winner.host, problem: claimedElsewhere(winner.host, winner.source, loser.source)})
    }
  }

  // Different hosts, same CR name in one namespace: the first by precedence keeps the plain name.
  const byName = new Map<string, DesiredEndpoint[]>()
  for (const endpoint of winners) {
    const key = `${endpoint.namespace}\u0000${endpoint.name}`
    byName.set(key, [...(byName.get(key) ?? []), endpoint])
  }
  const endpoints: DesiredEndpoint[] = []
  for (const group of byName.values()) {
    const [first, ...others] = [...group].sort((a, b) => compareClaims(a.source, b.source) || compareText(a.host, b.host))
    if (first) endpoints.push(first)
    for (const other of others) endpoints.push({...other, name: endpointNameWithHash(other.host)})
  }

  endpoints.sort((a, b) => compareText(a.namespace, b.namespace) || compareText(a.name, b.name))
  conflicts.sort((a, b) => compareText(a.loser.namespace, b.loser.namespace) || compareText(a.host, b.host)
    || compareClaims(a.loser, b.loser) || compareText(a.loser.kind, b.loser.kind))
  return {endpoints, conflicts}
}
