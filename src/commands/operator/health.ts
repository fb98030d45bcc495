import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {healthFlags, runHealth, type HealthReport} from '../../cli/health-command.js'
import {oclifFlags} from '../../cli/oclif-flags.js'

export default class Health extends JsonAwareCommand {
  static override summary = 'Ask a running operator whether it is alive and ready (/healthz and /readyz).'
  static override description =
    'Fetches /healthz?verbose and /readyz?verbose from the operator\'s health probe address and prints the result. ' +
    'Exit code 0 when both pass, 1 when the operator answers but a check fails, 2 when it cannot be reached.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --url http://10.0.0.12:8081',
    'kubectl -n polycrate port-forward deploy/polycrate-operator 8081 & <%= config.bin %> <%= command.id %> --json',
  ]

  static override enableJsonFlag = true

  static override flags = oclifFlags(healthFlags)

  async run(): Promise<HealthReport> {
    const {flags} = await this.parse(Health)
    return this.runShared((out) => runHealth(flags, out))
  }
}
