import * as Args from '@oclif/core/args'
import {explainFlags, explainTargetDescription, runExplain} from '../../cli/explain-command.js'
import type {ExplainReport} from '../../cli/explain-view.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {oclifFlags} from '../../cli/oclif-flags.js'

export default class Explain extends JsonAwareCommand {
  static override summary = 'Explain which Endpoint CRs an Ingress or HTTPRoute gives, host by host, and why.'

  static override description =
    'Runs the operator\'s endpoint discovery locally, against the live object, the other Ingresses and HTTPRoutes of ' +
    'its namespace (hosts are claimed across them) and the live OperatorConfig: for each host, whether it is monitored ' +
    'and why not (mode, ingress/gateway class filter, namespace filter, wildcard, claimed by another source), every ' +
    'check setting with where its value came from (host_config, annotation, deprecated alias, OperatorConfig, Gateway ' +
    'listener, default), and each problem. No running operator is needed.'

  static override examples = [
    '<%= config.bin %> <%= command.id %> ingress/webapp -n production',
    '<%= config.bin %> <%= command.id %> httproute/acme-shop -n acme-shop --json',
  ]

  static override enableJsonFlag = true

  static override args = {
    target: Args.string({description: explainTargetDescription, required: true}),
  }

  static override flags = oclifFlags(explainFlags)

  async run(): Promise<ExplainReport> {
    const {args, flags} = await this.parse(Explain)
    return this.runShared((out) => runExplain(args.target, flags, out, async () => {
      // Loaded here, not at the top: `--help` and argument errors need none of it.
      const [{KubeClient}, {loadKubeConfig}] = await Promise.all([import('../../kube/client.js'), import('../../kube/kubeconfig.js')])
      const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
      const namespace = loaded.kubeConfig.getContextObject(loaded.kubeConfig.getCurrentContext())?.namespace
      return {client: KubeClient.from(loaded), namespace}
    }))
  }
}
