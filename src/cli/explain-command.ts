/**
 * `polycrate operator explain`: its argument, flags and what it does, shared by the oclif command and the fast
 * path. The two differ only in how they connect: through client-node's kubeconfig loader, or the light one.
 */
import type {KubeClient} from '../kube/client.js'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'
import type {ExplainReport} from './explain-view.js'
import {outputFlagSpec, type FlagSpecs, type FlagValues} from './flag-spec.js'
import {kubeFlagSpecs} from './kube-flag-specs.js'

export const explainTargetDescription = 'ingress/<name> or httproute/<name>'

export const explainFlags = {
  ...kubeFlagSpecs,
  namespace: {type: 'string', char: 'n', summary: 'Namespace of the object (default: the kubeconfig context\'s, else "default").'},
  'operator-namespace': {
    type: 'string',
    summary: 'Namespace of the OperatorConfig "default" (default: $POD_NAMESPACE, else polycrate).',
    default: process.env.POD_NAMESPACE || 'polycrate',
  },
  output: outputFlagSpec,
} as const satisfies FlagSpecs

/** A client for the kubeconfig's cluster and the namespace of its context. */
export interface ExplainConnection {
  client: KubeClient
  namespace?: string
}

export async function runExplain(
  targetText: string,
  flags: FlagValues<typeof explainFlags>,
  out: CommandOutput,
  connect: () => ExplainConnection | Promise<ExplainConnection>,
): Promise<CommandOutcome<ExplainReport>> {
  const {ExplainError, explainLive, parseExplainTarget, renderExplanation} = await import('./explain-view.js')
  const target = parseExplainTarget(targetText)
  if (!target) throw new CommandFailure(`"${targetText}" is not ${explainTargetDescription}.`, 2)
  const {describeKubeError} = await import('../kube/errors.js')
  let client: KubeClient | undefined
  try {
    const connection = await connect()
    client = connection.client
    const namespace = flags.namespace ?? connection.namespace ?? 'default'
    const report = await explainLive(client, {...target, namespace}, flags['operator-namespace'])
    if (!out.json) out.log(renderExplanation(report))
    return {value: report, exit: 0}
  } catch (error) {
    if (error instanceof ExplainError) throw new CommandFailure(error.message, 1)
    throw new CommandFailure(describeKubeError(error, `explain ${targetText}`), 1)
  } finally {
    client?.close()
  }
}
