/** The verdict of `npm start -- --smoke`: are the seeds' examples synced to the Polycrate API? Pure, unit-tested. */

export interface SmokeEndpoint {
  metadata?: {name?: string; namespace?: string}
  status?: {phase?: string; syncStatus?: string; apiID?: string; message?: string}
}

export interface SmokeVerdict {
  ok: boolean
  reason: string
}

/**
 * Synced means: the local cluster is registered, every namespace the examples were applied to has Endpoint CRs,
 * every Endpoint CR is Synced with an API ID, and the API holds exactly as many (live) endpoints as there are CRs.
 */
export function smokeVerdict(
  endpoints: readonly SmokeEndpoint[],
  apiEndpoints: number,
  apiClusters: number,
  exampleNamespaces: readonly string[],
): SmokeVerdict {
  if (apiClusters === 0) return {ok: false, reason: 'the local cluster is not registered in the Polycrate API (no K8sCluster there)'}
  const missing = exampleNamespaces.filter((ns) => !endpoints.some((e) => e.metadata?.namespace === ns))
  if (missing.length > 0) return {ok: false, reason: `no Endpoint CR in namespace(s) ${missing.join(', ')}, where examples were applied`}
  const unsynced = endpoints.filter((e) => e.status?.phase !== 'Synced' || !e.status.apiID)
  if (unsynced.length > 0) {
    const shown = unsynced.slice(0, 5).map((e) => {
      const {phase = 'no phase', syncStatus, message} = e.status ?? {}
      return `${e.metadata?.namespace}/${e.metadata?.name}: ${phase}${syncStatus ? ` (${syncStatus})` : ''}${message ? `: ${message}` : ''}`
    })
    return {ok: false, reason: `${unsynced.length} of ${endpoints.length} Endpoint CRs not synced: ${shown.join('; ')}${unsynced.length > 5 ? '; …' : ''}`}
  }
  if (apiEndpoints !== endpoints.length) {
    return {ok: false, reason: `${endpoints.length} synced Endpoint CRs but ${apiEndpoints} endpoints in the Polycrate API`}
  }
  return {ok: true, reason: `${endpoints.length} Endpoint CRs synced to ${apiEndpoints} API endpoints; the local cluster is registered`}
}
