import {crdsFlags, runCrds} from '../../cli/crds-command.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {oclifFlags} from '../../cli/oclif-flags.js'

export default class Crds extends JsonAwareCommand {
  static override summary = 'Print the operator\'s CustomResourceDefinitions as YAML.'
  static override description =
    'Generated from the TypeScript schemas of the operator. Pipe into `kubectl apply -f -` (as the operator ' +
    'reference does; `kubectl apply --server-side -f -` works too), or write one file per CRD with --output-dir for GitOps.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> | kubectl apply -f -',
    '<%= config.bin %> <%= command.id %> | kubectl apply --server-side -f -',
    '<%= config.bin %> <%= command.id %> --kind OperatorConfig',
    '<%= config.bin %> <%= command.id %> --output-dir ./crds/',
    '<%= config.bin %> <%= command.id %> --list',
  ]

  static override enableJsonFlag = true

  static override flags = oclifFlags(crdsFlags)

  /** The CRDs print as YAML; with --list or --output-dir, -o yaml is the document --json prints. */
  protected override yamlIsText(): boolean {
    return !this.argv.some((arg) => arg === '--list' || arg === '--output-dir' || arg.startsWith('--output-dir='))
  }

  async run(): Promise<unknown> {
    const {flags} = await this.parse(Crds)
    return this.runShared((out) => runCrds(flags, out))
  }
}
