import type {FlagSpecs} from './flag-spec.js'

/** The flags every command that talks to a cluster shares (oclif's in kube-flags.ts). */
export const kubeFlagSpecs = {
  kubeconfig: {
    type: 'string',
    path: 'file',
    summary: 'Path to the kubeconfig (default: $KUBECONFIG, then the in-cluster service account in a Pod, then ~/.kube/config).',
  },
  context: {type: 'string', summary: 'Kubeconfig context to use (default: its current context).'},
} as const satisfies FlagSpecs
