import {Command} from '@oclif/core'
import {CommandFailure} from '../../cli/command-outcome.js'
import {oclifFlags} from '../../cli/oclif-flags.js'
import {runFlags, runOperator} from '../../cli/run-command.js'

// `node bin/run.js operator run …` normally starts without oclif (src/cli/run-fast-path.ts); this class serves help,
// flag errors and POLYCRATE_NO_FAST_PATH=1, with the same flags and the same run function.
export default class Run extends Command {
  static override summary = 'Run the operator: every controller, in this process, until SIGTERM or SIGINT.'
  static override description =
    'Watches the cluster, reconciles the polycrate.io resources and (when configured) syncs them with the Polycrate ' +
    'API. Serves Prometheus metrics (over HTTPS to authorized callers with --metrics-secure) and /healthz + /readyz: ' +
    'in a Pod on :8080 and :8081, out of a Pod on loopback only (127.0.0.1), as is the external-dns webhook, unless an ' +
    'address is given. With --leader-elect only one replica reconciles at a time (the leader Lease ' +
    'polycrate-operator-leader); without it the process renews a heartbeat Lease of its own ' +
    '(polycrate-operator-run-<host>), so that `status` and `uninstall` see that it runs. ' +
    'On SIGTERM it stops taking new work, lets in-flight reconciles finish (up to --graceful-shutdown-timeout), ' +
    'releases the leader lease (or clears its heartbeat) and exits 0.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> --kubeconfig ~/.kube/config',
    '<%= config.bin %> <%= command.id %> --leader-elect',
    '<%= config.bin %> <%= command.id %> --metrics-bind-address :8080 --health-probe-bind-address :8081',
    '<%= config.bin %> <%= command.id %> --metrics-secure --metrics-cert-dir /etc/polycrate/metrics-tls',
  ]

  static override flags = oclifFlags(runFlags)

  async run(): Promise<void> {
    const {flags} = await this.parse(Run)
    try {
      await runOperator(flags)
    } catch (error) {
      if (error instanceof CommandFailure) this.error(error.message, {exit: error.exit})
      throw error
    }
  }
}
