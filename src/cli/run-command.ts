/**
 * `operator run`: its flags (one spec: the oclif command class derives its flags from it, the fast path of bin/run.js
 * parses argv with it) and what it does, shared by both. The fast path (run-fast-path.ts) starts the operator without
 * loading oclif, which would otherwise stay resident for the life of the process (≈10 MiB RSS, docs/memory.md).
 */
import {CommandFailure} from './command-outcome.js'
import type {FlagSpecs, FlagValues} from './flag-spec.js'
import {kubeFlagSpecs} from './kube-flag-specs.js'
import {KubeClient} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {loadKube} from '../kube/load.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../operator/conventions.js'
import {createLogger, type LogFormat, type LogLevel} from '../lib/logger.js'
import {createOperator} from '../operator/operator.js'
import {parseBindAddress} from '../operator/runtime/http-servers.js'
import {DEFAULT_MAX_CONCURRENT_SYNCS} from '../operator/runtime/manager.js'
import {operatorVersion} from '../version.js'

export const runFlags = {
  ...kubeFlagSpecs,
  namespace: {
    type: 'string',
    char: 'n',
    summary: 'Namespace of the operator: its OperatorConfig, token Secret and leader lease live here.',
    env: 'POD_NAMESPACE',
    default: DEFAULT_NAMESPACE,
  },
  'leader-elect': {type: 'boolean', summary: 'Use a Lease so that only one replica reconciles (for HA deployments).'},
  'pod-name': {
    type: 'string',
    summary: 'This replica\'s Pod in --namespace: its label polycrate.io/leader is kept "true" while it leads, else "false" (the webhook Service selects the leader).',
    env: 'POD_NAME',
  },
  'metrics-bind-address': {type: 'string', summary: 'Address of the Prometheus /metrics endpoint; 0 disables it.', default: ':8080'},
  'health-probe-bind-address': {type: 'string', summary: 'Address of /healthz and /readyz; 0 disables them.', default: ':8081'},
  'max-concurrent-reconciles': {type: 'integer', summary: 'Workers per controller.', default: 4, min: 1},
  'max-concurrent-syncs': {
    type: 'integer',
    summary: 'Workers per I/O-bound controller: discovery (Ingress → Endpoint CR, …) and API sync (Endpoint CR → Polycrate API); more than --max-concurrent-reconciles.',
    default: DEFAULT_MAX_CONCURRENT_SYNCS,
    min: 1,
  },
  'graceful-shutdown-timeout': {type: 'integer', summary: 'Seconds in-flight reconciles may take to finish on shutdown.', default: 30, min: 0},
  'log-level': {type: 'string', options: ['debug', 'info', 'warn', 'error'], default: 'info', summary: 'Least severe level to log.'},
  'log-format': {type: 'string', options: ['json', 'text'], summary: 'json (default when not on a terminal) or text.'},
} as const satisfies FlagSpecs

export type RunFlags = FlagValues<typeof runFlags>

/**
 * Runs the operator until SIGTERM or SIGINT. Throws CommandFailure for what the command reports (exit 2: a bad bind
 * address; exit 1: no kubeconfig, a start-up problem such as a port in use).
 */
export async function runOperator(flags: RunFlags): Promise<void> {
  for (const flag of ['metrics-bind-address', 'health-probe-bind-address'] as const) {
    try {
      parseBindAddress(flags[flag], `--${flag}`)
    } catch (error) {
      throw new CommandFailure((error as Error).message, 2)
    }
  }
  const logger = createLogger({level: flags['log-level'] as LogLevel, format: flags['log-format'] as LogFormat | undefined})
  let loaded
  try {
    loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
  } catch (error) {
    throw new CommandFailure(describeKubeError(error), 1)
  }
  const client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
  const operator = createOperator({
    client,
    namespace: flags.namespace,
    leaderElection: flags['leader-elect'] ? {} : false,
    podName: flags['pod-name'],
    metricsBindAddress: flags['metrics-bind-address'],
    probeBindAddress: flags['health-probe-bind-address'],
    maxConcurrentReconciles: flags['max-concurrent-reconciles'],
    maxConcurrentSyncs: flags['max-concurrent-syncs'],
    shutdownGraceMs: flags['graceful-shutdown-timeout'] * 1000,
    logger,
  })

  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      logger.warn('second signal: exiting without waiting', {signal})
      process.exit(1)
    }
    logger.info('signal received: shutting down', {signal})
    stop.abort()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  logger.info('starting polycrate operator', {
    version: operatorVersion(),
    server: loaded.server,
    kubeconfig: loaded.source,
    namespace: flags.namespace,
    identity: operator.manager.identity,
    leaderElect: flags['leader-elect'] === true,
  })
  try {
    await operator.run(stop.signal)
  } catch (error) {
    // Startup problems (a port in use) end here; cluster outages never do: the loops retry.
    throw new CommandFailure(describeKubeError(error), 1)
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    client.close()
  }
}
