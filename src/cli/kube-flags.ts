import * as Flags from '@oclif/core/flags'

/** The flags every command that talks to a cluster shares. */
export const kubeFlags = {
  kubeconfig: Flags.file({
    summary: 'Path to the kubeconfig (default: in-cluster service account, then $KUBECONFIG, then ~/.kube/config).',
    exists: false,
  }),
  context: Flags.string({summary: 'Kubeconfig context to use (default: its current context).'}),
}
