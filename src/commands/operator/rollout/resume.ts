import {Args} from '@oclif/core'
import type {RolloutCluster} from '../../../api/index.js'
import {ApiCommand, apiFlags, type ApiErrorDescriber} from '../../../cli/api-flags.js'
import {describeAction, resolveCluster, rolloutErrorMessage} from '../../../cli/rollout-view.js'

export default class RolloutResume extends ApiCommand {
  static override summary = 'Undo pause (or force) for one cluster: it follows the normal rollout gating again.'
  static override description =
    'POST /api/v1/operator-rollout/{cluster}/resume/ (platform-admin only). Clears both the pause and the force-update ' +
    'flag, so the cluster waits for its turn under the rollout percentage like every other cluster. ' +
    'Prints one line of what changed; --json prints the cluster\'s updated dashboard row.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> prod-eu',
    '<%= config.bin %> <%= command.id %> 3f6c1a52-8d0e-4d0b-9a57-2f1d1f3f7c10 --json',
    'POLYCRATE_API_URL=https://app.ayedo.cloud POLYCRATE_API_TOKEN=… <%= config.bin %> <%= command.id %> prod-eu',
  ]

  static override enableJsonFlag = true

  static override args = {
    cluster: Args.string({
      description: 'The cluster: its id, or its name as `polycrate operator rollout status` shows it (an ambiguous name needs the id).',
      required: true,
    }),
  }

  static override flags = {...apiFlags}

  async run(): Promise<RolloutCluster> {
    const {args, flags} = await this.parse(RolloutResume)
    const client = this.apiClient(flags)
    const describe: ApiErrorDescriber = (error, apiUrl) => rolloutErrorMessage(error, {apiUrl, clusterReference: args.cluster})
    const dashboard = await this.callApi(client, () => client.operatorRollout.status(), describe)
    const found = resolveCluster(dashboard.clusters, args.cluster)
    if ('message' in found) this.error(found.message, {exit: 1})
    const after = await this.callApi(client, () => client.operatorRollout.resume(found.row.id), describe)
    this.log(describeAction('resume', found.row, after))
    return after
  }
}
