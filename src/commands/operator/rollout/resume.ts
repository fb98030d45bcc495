import {RolloutActionCommand, rolloutActionExamples} from '../../../cli/rollout-action-command.js'

export default class RolloutResume extends RolloutActionCommand {
  static override summary = 'Undo pause (or force) for one cluster: it follows the normal rollout gating again.'
  static override description =
    'POST /api/v1/operator-rollout/{cluster}/resume/ (platform-admin only). Clears both the pause and the force-update ' +
    'flag, so the cluster waits for its turn under the rollout percentage like every other cluster. ' +
    'Prints one line of what changed; --json prints the cluster\'s updated dashboard row.'

  static override examples = rolloutActionExamples

  protected readonly action = 'resume' as const
}
