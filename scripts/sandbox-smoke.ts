/** The verdict of `npm start -- --smoke`: are the seeds' examples synced to the Polycrate API? Pure, unit-tested. */

export interface SmokeEndpoint {
  metadata?: {name?: string; namespace?: string}
  status?: {phase?: string; syncStatus?: string; apiID?: string; message?: string}
}

/** The operator's own verdict: its OperatorConfig's phase (and message) and /readyz's status code and text. */
export interface SmokeHealth {
  phase?: string
  message?: string
  readyz: number
  readyzBody?: string
}

export interface SmokeVerdict {
  ok: boolean
  reason: string
}

/**
 * Synced means: the local cluster is registered, every namespace the examples were applied to has Endpoint CRs,
 * every Endpoint CR is Synced with an API ID, and the API holds exactly as many (live) endpoints as there are CRs. And
 * the operator is Ready by its own word: its OperatorConfig in phase Ready (not Degraded: a feature that could not
 * start) and /readyz answering 200.
 */
export function smokeVerdict(
  endpoints: readonly SmokeEndpoint[],
  apiEndpoints: number,
  apiClusters: number,
  exampleNamespaces: readonly string[],
  health: SmokeHealth,
): SmokeVerdict {
  if (health.phase !== 'Ready') {
    return {ok: false, reason: `the operator is ${health.phase ?? 'not reporting'} (OperatorConfig phase${health.message ? `: ${health.message}` : ''})`}
  }
  if (health.readyz !== 200) {
    const failing = (health.readyzBody ?? '').split('\n').filter((line) => line.startsWith('[-]')).join('; ')
    return {ok: false, reason: `the operator is not ready: /readyz answered ${health.readyz || 'nothing'}${failing ? ` (${failing})` : ''}`}
  }
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
