import * as Args from '@oclif/core/args'
import type {RolloutCluster} from '../api/index.js'
import {ApiCommand, apiFlags, type ApiErrorDescriber} from './api-flags.js'
import {outputFlag} from './json-aware-command.js'
import {describeAction, resolveCluster, rolloutErrorMessage, type RolloutAction} from './rollout-view.js'

/** `rollout force|pause|resume <cluster>`: resolve the cluster by id or name, call the action, say what changed. */
export abstract class RolloutActionCommand extends ApiCommand {
  static override enableJsonFlag = true

  static override args = {
    cluster: Args.string({
      description: 'The cluster: its id, or its name as `polycrate operator rollout status` shows it (an ambiguous name needs the id).',
      required: true,
    }),
  }

  static override flags = {...apiFlags, output: outputFlag}

  protected abstract readonly action: RolloutAction

  async run(): Promise<RolloutCluster> {
    const {args, flags} = await this.parse(RolloutActionCommand) // its own statics: oclif spreads the class, so inherited ones would be lost
    const client = this.apiClient(flags)
    const describe: ApiErrorDescriber = (error, apiUrl) => rolloutErrorMessage(error, {apiUrl, clusterReference: args.cluster})
    const dashboard = await this.callApi(client, () => client.operatorRollout.status(), describe)
    const found = resolveCluster(dashboard.clusters, args.cluster)
    if ('message' in found) this.error(found.message, {exit: 1})
    const after = await this.callApi(client, () => client.operatorRollout[this.action](found.row.id), describe)
    this.log(describeAction(this.action, found.row, after))
    return after
  }
}

export const rolloutActionExamples = [
  '<%= config.bin %> <%= command.id %> prod-eu',
  '<%= config.bin %> <%= command.id %> 3f6c1a52-8d0e-4d0b-9a57-2f1d1f3f7c10 --json',
  'POLYCRATE_API_URL=https://app.ayedo.cloud POLYCRATE_API_TOKEN=… <%= config.bin %> <%= command.id %> prod-eu',
]
