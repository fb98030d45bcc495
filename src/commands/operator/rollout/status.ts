import * as Flags from '@oclif/core/flags'
import type {RolloutDashboard} from '../../../api/index.js'
import {ApiCommand, apiFlags} from '../../../cli/api-flags.js'
import {colourEnabled} from '../../../cli/colour.js'
import {outputFlag} from '../../../cli/json-aware-command.js'
import {filterClusters, renderStatus, rolloutErrorMessage, unknownClusterMessage, type RolloutSort} from '../../../cli/rollout-view.js'
import {systemClock} from '../../../lib/clock.js'

export default class RolloutStatus extends ApiCommand {
  static override summary = 'Show the operator rollout: desired version, fleet versions, the current batch and every cluster.'
  static override description =
    'Reads the Operator Rollout Dashboard of the Polycrate API (GET /api/v1/operator-rollout/, platform-admin only). ' +
    'Prints the desired operator version (OPERATOR_BLOCK_VERSION), the rollout percentage (OPERATOR_ROLLOUT_PERCENTAGE), ' +
    'how many clusters run which version ("30 × 0.34.0, 12 × 0.35.0, 2 × 0.36.0"; clusters without an operator as ' +
    '"none"), the size of the current batch, and one row per cluster: installed and desired version, the operator ' +
    'agent\'s state and last heartbeat, active maintenance, paused/forced, whether it is in the current batch, and what ' +
    'blocks it (no agent token, OperatorConfig missing, canary gate).\n\n' +
    'With --json (or -o json|yaml) the dashboard is printed as the API sent it (with --cluster, its "clusters" list holds only the ' +
    'matching rows).'

  static override examples = [
    '<%= config.bin %> <%= command.id %> --api-url https://app.ayedo.cloud --token "$ADMIN_TOKEN"',
    'POLYCRATE_API_URL=https://app.ayedo.cloud POLYCRATE_API_TOKEN=… <%= config.bin %> <%= command.id %> --sort version',
    '<%= config.bin %> <%= command.id %> --cluster prod-eu --cluster prod-us',
    '<%= config.bin %> <%= command.id %> --json | jq \'.batch.cluster_ids\'',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...apiFlags,
    output: outputFlag,
    cluster: Flags.string({
      summary: 'Only this cluster in the table: its id or name (any case); repeatable.',
      multiple: true,
    }),
    sort: Flags.option({
      options: ['name', 'version'] as const,
      default: 'name' as const,
      summary: 'Order of the table: by cluster name, or by installed version (oldest first, no operator last).',
    })(),
  }

  async run(): Promise<RolloutDashboard> {
    const {flags} = await this.parse(RolloutStatus)
    const client = this.apiClient(flags)
    const dashboard = await this.callApi(client, () => client.operatorRollout.status(), (error, apiUrl) => rolloutErrorMessage(error, {apiUrl}))

    let rows = dashboard.clusters
    if (flags.cluster) {
      const filtered = filterClusters(dashboard.clusters, flags.cluster)
      const [unknown] = filtered.unknown
      if (unknown !== undefined) this.error(unknownClusterMessage(unknown), {exit: 1})
      rows = filtered.rows
    }

    if (this.jsonEnabled()) return flags.cluster ? {...dashboard, clusters: rows} : dashboard
    const sort: RolloutSort = flags.sort
    this.log(renderStatus(dashboard, {now: systemClock.now(), sort, colour: colourEnabled(process.stdout)}, rows))
    return dashboard
  }
}
