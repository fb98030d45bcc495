import * as Flags from '@oclif/core/flags'
import {countOutcomes, progress, readValues, resultLine} from '../../cli/install-view.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {loadKube} from '../../kube/load.js'
import {FIELD_MANAGER} from '../../operator/conventions.js'
import {operatorPermissions} from '../../operator/operator.js'
import {installPlan} from '../../operator/install/objects.js'
import {uninstallOperator, type UninstallReport} from '../../operator/install/uninstall.js'

export default class Uninstall extends JsonAwareCommand {
  static override summary = 'Remove the operator from a cluster; first release every finalizer it put on users\' objects.'
  static override description =
    'The operator block\'s uninstall action, in this order: scale the Deployment to 0 and wait until its Pods are gone ' +
    '(so no replica adds a finalizer again); remove the operator\'s finalizers from Ingresses and HTTPRoutes in every ' +
    'namespace, and service.kubernetes.io/load-balancer-cleanup from the LoadBalancer Services its cloud controller ' +
    'manages (the load balancers stay in the Polycrate API); delete the VMServiceScrape, the generated manifests in ' +
    'reverse order, the leader Lease, and the token and image pull Secrets if install created them; last the ' +
    'Namespace, only if install created it and nothing else lives in it.\n\n' +
    'The polycrate.io objects (the OperatorConfig too) and the CRDs stay, so a later install picks them up, but ' +
    'without the operator\'s finalizers (nothing would release them; nothing is deleted in the Polycrate API). --crds ' +
    'also deletes the CRDs (and with them every polycrate.io object), waiting until they are gone. Running it again ' +
    'is harmless. Pass the same --values (and --namespace) as install, so that the names match.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --values workspace.poly',
    '<%= config.bin %> <%= command.id %> --namespace polycrate-dev --crds',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    values: Flags.file({summary: 'The values install was given (for the namespace and Secret names); repeatable.', multiple: true}),
    namespace: Flags.string({char: 'n', summary: 'Namespace instead of the values\' namespace (default polycrate).'}),
    crds: Flags.boolean({summary: 'Also delete the polycrate.io CRDs (and so every polycrate.io object; nothing is deleted in the Polycrate API).'}),
    timeout: Flags.integer({summary: 'Seconds to wait for the operator\'s Pods to go, and for the CRDs to go.', default: 300, min: 1}),
  }

  async run(): Promise<UninstallReport> {
    const {flags} = await this.parse(Uninstall)
    const values = readValues(flags.values, (message) => this.error(message, {exit: 2}))
    // The DNS01 webhook's objects go whether or not the values enable it now (an earlier install may have made them).
    const dns01 = values.effectiveSpec.dns01_webhook
    const plan = installPlan(values, operatorPermissions(), {
      namespace: flags.namespace,
      overrides: {dns01: {groupName: dns01.group_name, solverName: dns01.solver_name, port: dns01.port, certManagerServiceAccount: {namespace: 'cert-manager', name: 'cert-manager'}}},
    })
    const json = this.jsonEnabled()
    const {spinner, colour, line, warn} = progress({json, log: (text) => this.log(text), logToStderr: (text) => this.logToStderr(text)})
    let client: KubeClient | undefined
    try {
      const loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
      client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
      line(`Uninstalling the Polycrate operator from namespace ${plan.namespace} on ${loaded.server}${flags.crds ? ' (with its CRDs)' : ''}`)
      spinner?.start('…')
      const report = await uninstallOperator(client, {
        plan, crds: flags.crds, timeoutMs: flags.timeout * 1000,
        onResult: (result) => line(resultLine(result, colour)),
        onStep: (message) => {
          if (spinner) spinner.text = message
        },
        onWarning: warn,
      })
      spinner?.stop()
      line(`Uninstalled: ${countOutcomes(report.results)}.${flags.crds ? '' : ' The polycrate.io CRDs and objects stay (--crds removes them).'}`)
      return report
    } catch (error) {
      spinner?.fail()
      return this.error(describeKubeError(error, 'uninstall the operator (cluster-scoped RBAC, finalizers in every namespace)'), {exit: 1})
    } finally {
      client?.close()
    }
  }
}
