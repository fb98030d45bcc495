import {Command, Flags} from '@oclif/core'
import {kubeFlags} from '../../cli/kube-flags.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {loadKube} from '../../kube/load.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../../operator/conventions.js'
import {createLogger, type LogFormat, type LogLevel} from '../../lib/logger.js'
import {createOperator} from '../../operator/operator.js'
import {parseBindAddress} from '../../operator/runtime/http-servers.js'
import {DEFAULT_MAX_CONCURRENT_SYNCS} from '../../operator/runtime/manager.js'

export default class Run extends Command {
  static override summary = 'Run the operator: every controller, in this process, until SIGTERM or SIGINT.'
  static override description =
    'Watches the cluster, reconciles the polycrate.io resources and (when configured) syncs them with the Polycrate ' +
    'API. Serves Prometheus metrics and /healthz + /readyz. With --leader-elect only one replica reconciles at a time. ' +
    'On SIGTERM it stops taking new work, lets in-flight reconciles finish (up to --graceful-shutdown-timeout), ' +
    'releases the leader lease and exits 0.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> --kubeconfig ~/.kube/config',
    '<%= config.bin %> <%= command.id %> --leader-elect',
    '<%= config.bin %> <%= command.id %> --metrics-bind-address :8080 --health-probe-bind-address :8081',
  ]

  static override flags = {
    ...kubeFlags,
    namespace: Flags.string({
      char: 'n',
      summary: 'Namespace of the operator: its OperatorConfig, token Secret and leader lease live here.',
      env: 'POD_NAMESPACE',
      default: DEFAULT_NAMESPACE,
    }),
    'leader-elect': Flags.boolean({summary: 'Use a Lease so that only one replica reconciles (for HA deployments).', default: false}),
    'pod-name': Flags.string({
      summary: 'This replica\'s Pod in --namespace: its label polycrate.io/leader is kept "true" while it leads, else "false" (the webhook Service selects the leader).',
      env: 'POD_NAME',
    }),
    'metrics-bind-address': Flags.string({summary: 'Address of the Prometheus /metrics endpoint; 0 disables it.', default: ':8080'}),
    'health-probe-bind-address': Flags.string({summary: 'Address of /healthz and /readyz; 0 disables them.', default: ':8081'}),
    'max-concurrent-reconciles': Flags.integer({summary: 'Workers per controller.', default: 4, min: 1}),
    'max-concurrent-syncs': Flags.integer({
      summary: 'Workers per I/O-bound controller: discovery (Ingress → Endpoint CR, …) and API sync (Endpoint CR → Polycrate API); more than --max-concurrent-reconciles.',
      default: DEFAULT_MAX_CONCURRENT_SYNCS,
      min: 1,
    }),
    'graceful-shutdown-timeout': Flags.integer({summary: 'Seconds in-flight reconciles may take to finish on shutdown.', default: 30, min: 0}),
    'log-level': Flags.option({options: ['debug', 'info', 'warn', 'error'] as const, default: 'info', summary: 'Least severe level to log.'})(),
    'log-format': Flags.option({options: ['json', 'text'] as const, summary: 'json (default when not on a terminal) or text.'})(),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Run)
    for (const flag of ['metrics-bind-address', 'health-probe-bind-address'] as const) {
      try {
        parseBindAddress(flags[flag], `--${flag}`)
      } catch (error) {
        this.error((error as Error).message, {exit: 2})
      }
    }
    const logger = createLogger({level: flags['log-level'] as LogLevel, format: flags['log-format'] as LogFormat | undefined})
    let loaded
    try {
      loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
    } catch (error) {
      this.error(describeKubeError(error), {exit: 1})
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
      version: this.config.version,
      server: loaded.server,
      kubeconfig: loaded.source,
      namespace: flags.namespace,
      identity: operator.manager.identity,
      leaderElect: flags['leader-elect'],
    })
    try {
      await operator.run(stop.signal)
    } catch (error) {
      // Startup problems (a port in use) end here; cluster outages never do: the loops retry.
      this.error(describeKubeError(error), {exit: 1})
    } finally {
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
      client.close()
    }
  }
}
