import * as Flags from '@oclif/core/flags'
import chalk from 'chalk'
import {checkFlags, readValues} from '../../cli/install-view.js'
import {renderInfo} from '../../cli/info-view.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {toYaml} from '../../crds/render.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {loadKube} from '../../kube/load.js'
import {resources} from '../../kube/resources.js'
import {assertKubernetes} from '../../kube/server-check.js'
import {DEFAULT_NAMESPACE, OPERATOR_CONFIG_NAME, OPERATOR_NAME} from '../../operator/conventions.js'
import {clusterInfo, valuesInfo, type InfoDeployment, type OperatorInfo} from '../../operator/install/info.js'
import {collectPresence, operatorPresence, operatorStatus} from '../../operator/install/presence.js'
import {operatorFeatureSwitches} from '../../operator/operator.js'
import {systemClock} from '../../lib/clock.js'

export default class Info extends JsonAwareCommand {
  static override summary = 'Show the operator\'s configuration in force: install settings, every OperatorConfig setting with its source, features and endpoints.'

  static override description =
    'The operator block\'s info action ("Show Operator configuration"). From the cluster: the install as its ' +
    'Deployment holds it (image and version, replicas, resources, leader election, pull Secret, capabilities) and every ' +
    'setting of the OperatorConfig, each with FROM `set` (given in the spec) or `default`; then each feature on or ' +
    'off with the settings that decide it (and what the operator last reported about it), and the endpoints it serves ' +
    '(ports, paths, who may call them and what checks that). Secrets are never shown (the token and passwords live in ' +
    'Secrets; their values print as "(redacted)").\n\n' +
    'The namespace is where an operator runs or is installed (--namespace names it). With --values FILE, no cluster ' +
    'is read: what `install` would apply with those values (the block\'s config:, as `install --values` reads it).'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -n polycrate -o yaml',
    '<%= config.bin %> <%= command.id %> --values workspace.poly --values secrets.poly',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    namespace: Flags.string({char: 'n', summary: `The operator's namespace (default: where one runs or is installed, else ${DEFAULT_NAMESPACE}).`}),
    values: Flags.file({summary: 'Show what install would apply with these values instead of reading the cluster; repeatable, later files win.', multiple: true}),
    'allow-empty': Flags.boolean({summary: 'Accept a --values file that is empty or holds only comments (the block\'s defaults).'}),
    output: Flags.option({char: 'o', options: ['table', 'json', 'yaml'] as const, default: 'table' as const, summary: 'Output format.'})(),
  }

  async run(): Promise<OperatorInfo> {
    const {flags} = await this.parse(Info)
    checkFlags({namespace: flags.namespace}, (message) => this.error(message, {exit: 2}))
    let info: OperatorInfo
    let state: string | undefined
    if (flags.values) {
      const values = readValues(flags.values, (message) => this.error(message, {exit: 2}), {allowEmpty: flags['allow-empty']})
      info = valuesInfo(flags.namespace ? {...values, namespace: flags.namespace} : values, operatorFeatureSwitches(), `the values ${flags.values.join(' + ')} (what install would apply)`)
    } else {
      let client: KubeClient | undefined
      try {
        const loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
        client = KubeClient.from(loaded)
        await assertKubernetes(client, loaded.server)
        const operator = operatorStatus(operatorPresence(await collectPresence(client, {namespace: flags.namespace}), systemClock.now()), {operatorNamespace: flags.namespace, defaultNamespace: DEFAULT_NAMESPACE})
        const namespace = operator.namespace
        state = operator.running ? operator.summary : `${operator.summary.replace(/^nothing runs/, 'NOTHING RUNS')} — this is the configuration an operator would run with`
        const deployment = await client.getOrUndefined<InfoDeployment>({...resources.deployments, namespace, name: OPERATOR_NAME})
        const operatorConfig = await client.getOrUndefined({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: OPERATOR_CONFIG_NAME})
        info = clusterInfo({namespace, deployment, operatorConfig, features: operatorFeatureSwitches()})
      } catch (error) {
        return this.error(describeKubeError(error, 'read the operator\'s Deployment and OperatorConfig'), {exit: 1})
      } finally {
        client?.close()
      }
    }
    if (this.jsonEnabled()) return info
    switch (flags.output) {
      case 'json':
        this.log(JSON.stringify(info, null, 2))
        break
      case 'yaml':
        this.log(toYaml(info).trimEnd())
        break
      default:
        this.log(renderInfo(info, {colour: Boolean(process.stdout.isTTY) && chalk.level > 0, state}))
    }
    return info
  }
}
