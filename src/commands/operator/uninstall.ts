import * as Flags from '@oclif/core/flags'
import {checkFlags, countOutcomes, progress, readValues, resultLine} from '../../cli/install-view.js'
import {CommandFailure} from '../../cli/command-outcome.js'
import {JsonAwareCommand, outputFlag} from '../../cli/json-aware-command.js'
import {confirmUninstall} from '../../cli/uninstall-confirm.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {assertKubernetes} from '../../kube/server-check.js'
import {loadKube} from '../../kube/load.js'
import {FIELD_MANAGER} from '../../operator/conventions.js'
import {operatorPermissions} from '../../operator/operator.js'
import {installPlan} from '../../operator/install/objects.js'
import {uninstallOperator, UninstallRefusedError, type UninstallReport} from '../../operator/install/uninstall.js'

export default class Uninstall extends JsonAwareCommand {
  static override summary = 'Remove the operator from a cluster; first stop it, then release every finalizer it put on users\' objects.'
  static override description =
    'The operator block\'s uninstall action. First it checks that the namespace holds an install of the operator (its ' +
    'Deployment, ServiceAccount, OperatorConfig or a lease): with none there it changes nothing, names where an ' +
    'operator does run, and exits 1 — a mistyped --namespace never strips a running operator.\n\n' +
    'Then, in this order: scale the Deployment to 0 and wait until its Pods are gone (so no replica adds a finalizer ' +
    'again); remove the operator\'s finalizers from Ingresses and HTTPRoutes in every namespace, and ' +
    'service.kubernetes.io/load-balancer-cleanup from the LoadBalancer Services its cloud controller manages (the load ' +
    'balancers stay in the Polycrate API); delete the alerting rules, the dashboard ConfigMap, the VMServiceScrape, the generated manifests in reverse order, the ' +
    'leader and heartbeat Leases, and the token and image pull Secrets if install created them; last the Namespace, ' +
    'only if install created it and nothing else lives in it.\n\n' +
    'The finalizers are shared by every operator instance in the cluster: while another one runs (a fresh leader or ' +
    'heartbeat Lease elsewhere, a Deployment of ours with replicas, a local `operator run` in the same namespace) they ' +
    'stay, and a line says which instance and why; run uninstall again once it is stopped.\n\n' +
    'The polycrate.io objects (the OperatorConfig too) and the CRDs stay, so a later install picks them up, but ' +
    'without the operator\'s finalizers (nothing would release them; nothing is deleted in the Polycrate API). --crds ' +
    'also deletes the CRDs (and with them every polycrate.io object), waiting until they are gone; refused while ' +
    'another operator instance runs. Running it again is harmless. Pass the same --values (and --namespace) as ' +
    'install, so that the names match. --orphaned releases the finalizers an operator left when it was removed ' +
    'without uninstall (only when no operator is installed or runs anywhere). ' +
    '--release-only stops the operator and releases its finalizers and deletes nothing (the Helm chart\'s pre-delete hook).\n\n' +
    'On a terminal it first lists what it will remove (the Deployment it scales down, how many objects of each kind ' +
    'it releases finalizers from, what it deletes) and asks; --yes skips the question. Without a terminal (a script, ' +
    'CI) it refuses unless --yes is given (exit 2); a "no" exits 1, having changed nothing.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --values workspace.poly --yes',
    '<%= config.bin %> <%= command.id %> --namespace polycrate-dev --crds',
    '<%= config.bin %> <%= command.id %> --orphaned',
    '<%= config.bin %> <%= command.id %> --release-only   # before helm or a GitOps tool deletes the objects',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    output: outputFlag,
    values: Flags.file({summary: 'The values install was given (for the namespace and Secret names); repeatable.', multiple: true}),
    namespace: Flags.string({char: 'n', summary: 'Namespace instead of the values\' namespace (default polycrate).'}),
    'allow-empty': Flags.boolean({summary: 'Accept a --values file that is empty or holds only comments (the block\'s defaults); without it such a file is an error (a secrets.poly that failed to decrypt looks like that).'}),
    crds: Flags.boolean({summary: 'Also delete the polycrate.io CRDs (and so every polycrate.io object; nothing is deleted in the Polycrate API).', exclusive: ['release-only']}),
    orphaned: Flags.boolean({summary: 'No operator is installed or runs anywhere, but objects still carry its finalizers (it was removed without uninstall): release them.'}),
    'release-only': Flags.boolean({summary: 'Only stop the operator and release its finalizers; delete nothing (the Helm chart\'s pre-delete hook runs this; run it before a GitOps tool prunes the objects).'}),
    timeout: Flags.integer({summary: 'Seconds to wait for the operator\'s Pods to go, and for the CRDs to go.', default: 300, min: 1}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask: on a terminal uninstall lists what it will remove and asks first; elsewhere --yes is required.'}),
  }

  async run(): Promise<UninstallReport> {
    const {flags} = await this.parse(Uninstall)
    checkFlags({namespace: flags.namespace}, (message) => this.error(message, {exit: 2}))
    const values = readValues(flags.values, (message) => this.error(message, {exit: 2}), {allowEmpty: flags['allow-empty']})
    // The DNS01 webhook's objects go whether or not the values enable it now (an earlier install may have made them).
    const dns01 = values.effectiveSpec.dns01_webhook
    const plan = installPlan(values, operatorPermissions(), {
      namespace: flags.namespace,
      overrides: {dns01: {groupName: dns01.group_name, solverName: dns01.solver_name, port: dns01.port, certManagerServiceAccount: {namespace: 'cert-manager', name: 'cert-manager'}}},
    })
    if (!flags.yes) {
      try {
        await confirmUninstall({kubeconfig: flags.kubeconfig, context: flags.context, plan, crds: flags.crds, releaseOnly: flags['release-only']})
      } catch (error) {
        if (error instanceof CommandFailure) this.error(error.message, {exit: error.exit})
        throw error
      }
    }
    const json = this.jsonEnabled()
    const {spinner, colour, line, warn} = progress({json, log: (text) => this.log(text), logToStderr: (text) => this.logToStderr(text)})
    let client: KubeClient | undefined
    try {
      const loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
      client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
      await assertKubernetes(client, loaded.server)
      line(`Uninstalling the Polycrate operator from namespace ${plan.namespace} on ${loaded.server}${flags.crds ? ' (with its CRDs)' : ''}`)
      spinner?.start('…')
      const report = await uninstallOperator(client, {
        plan, crds: flags.crds, orphaned: flags.orphaned, releaseOnly: flags['release-only'], timeoutMs: flags.timeout * 1000,
        onResult: (result) => line(resultLine(result, colour)),
        onStep: (message) => {
          if (spinner) spinner.text = message
        },
        onWarning: warn,
      })
      spinner?.stop()
      if (flags['release-only']) line(`Released: ${countOutcomes(report.results)}. The operator is stopped (0 replicas); its objects stay for helm or your GitOps tool to delete.`)
      else line(`Uninstalled: ${countOutcomes(report.results)}.${flags.crds ? '' : ' The polycrate.io CRDs and objects stay (--crds removes them).'}`)
      return report
    } catch (error) {
      spinner?.fail()
      if (error instanceof UninstallRefusedError) return this.error(error.message, {exit: 1})
      return this.error(describeKubeError(error, 'uninstall the operator (cluster-scoped RBAC, finalizers in every namespace)'), {exit: 1})
    } finally {
      client?.close()
    }
  }
}
