/**
 * The Endpoint Monitoring Agent feature (`agent.enabled`, default false): runs the MonitoringAgent with the API
 * session's client and the operator's agent id, its probe_* metrics on the operator's /metrics, and writes a small
 * summary (assignment, last result per endpoint, failures) into `OperatorConfig.status.monitoring`, which
 * `polycrate operator status` shows. Any change of the `agent` section restarts it.
 */
import {operatorConfigCrd} from '../../crds/operatorconfig.js'
import {API_VERSION} from '../../crds/define.js'
import {operatorAgentId} from '../agent/agent-id.js'
import type {ApiSession} from '../agent/api-session.js'
import {operatorConfigResource} from '../config/operator-config-controller.js'
import {OPERATOR_CONFIG_NAME} from '../conventions.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import type {Manager} from '../runtime/manager.js'
import {MonitoringAgent, type AgentSnapshot} from './agent.js'
import {ProbeMetrics} from './metrics.js'
import {monitoringStatus} from './status.js'

const STATUS_MANAGER = 'polycrate-operator-monitoring'
/** The status is written at most this often (every check changes it). */
const STATUS_EVERY_MS = 10_000
/** On stop (agent disabled, settings changed, operator shutting down): time to finish checks and report them. */
const SHUTDOWN_GRACE_MS = 15_000

export function createMonitoringFeature(session: ApiSession): Feature<OperatorConfig> {
  return {
    name: 'endpoint-monitoring-agent',
    enabled: (config) => config.agent.enabled,
    permissions: [
      // The cluster identity in the agent id, and the agent's summary in OperatorConfig.status.monitoring.
      {group: '', resource: 'namespaces', verbs: ['get'], names: ['kube-system']},
      {group: 'polycrate.io', resource: 'operatorconfigs/status', verbs: ['patch'], scope: 'namespace'},
    ],
    settings: (config) => config.agent,
    start(manager, config) {
      const abort = new AbortController()
      const logger = manager.logger.child({feature: 'endpoint-monitoring-agent'})
      let agentId: string | undefined
      const writer = statusWriter(manager, abort.signal)
      const agent = new MonitoringAgent({
        config: config.agent,
        // The heartbeat's id (api-sync falls back to the OperatorConfig's uid as well).
        agentId: async () => (agentId ??= await operatorAgentId(manager.client, config.agent.agent_id_prefix, async () => {
          const own = await manager.client.getOrUndefined({...operatorConfigResource(manager.namespace), name: OPERATOR_CONFIG_NAME}).catch(() => undefined)
          return own?.metadata?.uid ?? manager.namespace
        })),
        api: () => session.client,
        metrics: ProbeMetrics.for(manager.metrics.registry),
        logger,
        clock: manager.clock,
        onStatus: (snapshot) => writer.update(snapshot),
      })
      agent.start()
      const unsubscribe = session.onChange(() => {
        // Connected (again): fetch the assignment now rather than at the next interval.
        if (session.client) void agent.refresh()
      })
      return {
        async stop() {
          unsubscribe()
          await agent.shutdown(SHUTDOWN_GRACE_MS)
          await writer.close()
          abort.abort()
        },
      }
    },
  }
}

/** Writes the summary server-side (own field manager), at most every STATUS_EVERY_MS, one write at a time. */
function statusWriter(manager: Manager, signal: AbortSignal) {
  let latest: AgentSnapshot | undefined
  let lastWrite = 0
  let timer: unknown
  let writing: Promise<void> = Promise.resolve()
  let closed = false
  const resource = {...operatorConfigResource(manager.namespace), name: OPERATOR_CONFIG_NAME, subresource: 'status'}
  const metadata = {name: OPERATOR_CONFIG_NAME, namespace: manager.namespace}

  const write = (status: unknown) => {
    writing = writing.then(async () => {
      try {
        await manager.client.apply(resource, {apiVersion: API_VERSION, kind: operatorConfigCrd.kind, metadata, status}, {fieldManager: STATUS_MANAGER, signal})
      } catch (error) {
        if (!signal.aborted) manager.logger.debug('monitoring status not written', {error: (error as Error).message})
      }
    })
  }
  const flush = () => {
    timer = undefined
    if (closed || !latest) return
    lastWrite = manager.clock.now()
    write({monitoring: monitoringStatus(latest)})
  }
  return {
    update(snapshot: AgentSnapshot) {
      latest = snapshot
      if (timer || closed) return
      timer = manager.clock.setTimeout(flush, Math.max(0, lastWrite + STATUS_EVERY_MS - manager.clock.now()))
    },
    /** Stops writing and gives the summary up (the agent is off: the status no longer claims it runs). */
    async close() {
      closed = true
      manager.clock.clearTimeout(timer)
      write({})
      await writing
    },
  }
}
