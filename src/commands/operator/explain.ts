import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import type {ExplainReport} from '../../cli/explain-view.js'

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
    target: Args.string({description: 'ingress/<name> or httproute/<name>', required: true}),
  }

  static override flags = {
    ...kubeFlags,
    namespace: Flags.string({char: 'n', summary: 'Namespace of the object (default: the kubeconfig context\'s, else "default").'}),
    'operator-namespace': Flags.string({
      summary: 'Namespace of the OperatorConfig "default" (default: $POD_NAMESPACE, else polycrate).',
      default: process.env.POD_NAMESPACE || 'polycrate',
    }),
  }

  async run(): Promise<ExplainReport> {
    const {args, flags} = await this.parse(Explain)
    // Loaded here, not at the top: `--help` and argument errors need none of it.
    const {ExplainError, explainLive, parseExplainTarget, renderExplanation} = await import('../../cli/explain-view.js')
    const target = parseExplainTarget(args.target)
    if (!target) return this.error(`"${args.target}" is not ingress/<name> or httproute/<name>.`, {exit: 2})
    const [{KubeClient}, {loadKubeConfig}, {describeKubeError}] = await Promise.all([
      import('../../kube/client.js'), import('../../kube/kubeconfig.js'), import('../../kube/errors.js'),
    ])
    let client: InstanceType<typeof KubeClient> | undefined
    try {
      const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
      const namespace = flags.namespace ?? loaded.kubeConfig.getContextObject(loaded.kubeConfig.getCurrentContext())?.namespace ?? 'default'
      client = KubeClient.from(loaded)
      const report = await explainLive(client, {...target, namespace}, flags['operator-namespace'])
      if (!this.jsonEnabled()) this.log(renderExplanation(report))
      return report
    } catch (error) {
      if (error instanceof ExplainError) return this.error(error.message, {exit: 1})
      return this.error(describeKubeError(error, `explain ${args.target}`), {exit: 1})
    } finally {
      client?.close()
    }
  }
}
