import {kubeFlagSpecs} from './kube-flag-specs.js'
import {oclifFlags} from './oclif-flags.js'

/** The flags every command that talks to a cluster shares. */
export const kubeFlags = oclifFlags(kubeFlagSpecs)
