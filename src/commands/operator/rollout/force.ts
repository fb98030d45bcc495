import {RolloutActionCommand, rolloutActionExamples} from '../../../cli/rollout-action-command.js'

export default class RolloutForce extends RolloutActionCommand {
  static override summary = 'Force one cluster into the next operator rollout batch, regardless of the canary gate.'
  static override description =
    'POST /api/v1/operator-rollout/{cluster}/force-update/ (platform-admin only). The cluster joins the next batch even when ' +
    'the rollout percentage would leave it out and even when its operator agent is CRITICAL; forcing lifts a pause. ' +
    'Prints one line of what changed; --json prints the cluster\'s updated dashboard row.'

  static override examples = rolloutActionExamples

  protected readonly action = 'force' as const
}
