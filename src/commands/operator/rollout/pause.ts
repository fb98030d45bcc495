import {RolloutActionCommand, rolloutActionExamples} from '../../../cli/rollout-action-command.js'

export default class RolloutPause extends RolloutActionCommand {
  static override summary = 'Keep one cluster out of operator rollouts until it is resumed.'
  static override description =
    'POST /api/v1/operator-rollout/{cluster}/pause/ (platform-admin only). A paused cluster is never in a rollout batch, ' +
    'forced or not; pausing withdraws a force-update. Undo with `polycrate operator rollout resume`. ' +
    'Prints one line of what changed; --json prints the cluster\'s updated dashboard row.'

  static override examples = rolloutActionExamples

  protected readonly action = 'pause' as const
}
