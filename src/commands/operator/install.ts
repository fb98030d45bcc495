import * as Flags from '@oclif/core/flags'
import {runInstallPreview, type InstallPreviewOutput} from '../../cli/install-preview.js'
import {checkFlags, countOutcomes, progress, readValues, resultLine} from '../../cli/install-view.js'
import {JsonAwareCommand, outputFlag} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {renderStatus, statusReport, type StatusReport} from '../../cli/status-view.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {assertKubernetes} from '../../kube/server-check.js'
import {loadKube} from '../../kube/load.js'
import {collectInventory} from '../../kube/resources-inventory.js'
import {FIELD_MANAGER} from '../../operator/conventions.js'
import type {ObjectResult} from '../../operator/install/cluster-objects.js'
import {installOperator, waitForRollout, type RolloutState} from '../../operator/install/install.js'
import {operatorPermissions} from '../../operator/operator.js'
import {installPlan} from '../../operator/install/objects.js'
import {collectPresence, operatorPresence, operatorStatus} from '../../operator/install/presence.js'
import {systemClock} from '../../lib/clock.js'

export interface InstallOutput {
  namespace: string
  image: string
  results: ObjectResult[]
  warnings: string[]
  /** The finished rollout; null with --no-wait. */
  rollout: RolloutState | null
  status: StatusReport
}

export default class Install extends JsonAwareCommand {
  static override summary = 'Install or update the operator in a cluster: CRDs, Namespace, Secrets, RBAC, Deployment, Services, OperatorConfig.'
  static override description =
    'The operator block\'s install action. Server-side applies (field manager polycrate-operator), in this order: the ' +
    'polycrate.io CRDs (waiting until each is Established), the Namespace, the token Secret (from ' +
    'api_sync.credentials.api_token; without a token an existing Secret of that name is used), the image pull Secret ' +
    '(image_credentials), ServiceAccount, RBAC, Deployment, Services and NetworkPolicy (what `polycrate operator ' +
    'manifests` prints), the OperatorConfig (operator_config), and a VMServiceScrape when metrics.enabled and the ' +
    'CRD vmservicescrapes.operator.victoriametrics.com exists (a stale one is removed when metrics are disabled), then ' +
    'with metrics.alerts the alerting rules as a VMRule and a PrometheusRule where their CRDs exist, and with ' +
    'metrics.dashboard the Grafana dashboard ConfigMap (each removed again when its value is turned off). Then it waits for the Deployment\'s rollout (--no-wait skips that) and shows what `polycrate operator status` shows.\n\n' +
    '--values FILE takes the block\'s `config:` as the block README writes it — the map itself, a block entry, or a ' +
    'workspace.poly / secrets.poly with `blocks:` (the entry whose name or from ends in polycrate-operator); repeat ' +
    'it to merge files (later wins). Without it, the block\'s defaults. Running install again updates what changed.\n\n' +
    '--dry-run and --diff write nothing: every object install would apply is sent as a server-side apply with ' +
    'dryRun=All (so the API server defaults, validates and merges it), and compared with the live object. --dry-run ' +
    'prints one line per object (would create, would change, unchanged, would delete, kept, skipped); --diff prints a ' +
    'unified diff per object that would change, as `kubectl diff` does (managedFields, resourceVersion, status and ' +
    'other server bookkeeping left out, Secret values masked), and exits 0 without changes, 1 with changes, 2 on an ' +
    'error. Objects in a namespace install would create first (or of a CRD it would create first) cannot be checked ' +
    'by the server yet: they are shown as would create, with a note.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --values workspace.poly --values secrets.poly',
    '<%= config.bin %> <%= command.id %> --values operator-values.yaml --context production --timeout 600',
    '<%= config.bin %> <%= command.id %> --image registry.example.com/polycrate:0.1.0 --namespace polycrate-dev --no-wait',
    '<%= config.bin %> <%= command.id %> --values workspace.poly --values secrets.poly --diff',
    '<%= config.bin %> <%= command.id %> --values operator-values.yaml --dry-run -o yaml',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    output: outputFlag,
    values: Flags.file({summary: 'The operator block\'s config: (or a block entry / workspace file with blocks:); repeatable, later files win.', multiple: true}),
    image: Flags.string({summary: 'Container image instead of image_registry/image_name:image_tag of the values.'}),
    namespace: Flags.string({char: 'n', summary: 'Namespace instead of the values\' namespace (default polycrate).'}),
    'allow-empty': Flags.boolean({summary: 'Accept a --values file that is empty or holds only comments (the block\'s defaults); without it such a file is an error (a secrets.poly that failed to decrypt looks like that).'}),
    wait: Flags.boolean({summary: 'Wait for the Deployment\'s rollout (default; --no-wait returns after applying).', default: true, allowNo: true}),
    timeout: Flags.integer({summary: 'Seconds to wait for the CRDs and for the rollout.', default: 300, min: 1}),
    'dry-run': Flags.boolean({summary: 'Write nothing: server-side dry run of every object, one line each (would create, would change, unchanged, …).', exclusive: ['diff']}),
    diff: Flags.boolean({summary: 'Write nothing: a unified diff of each live object against what install would apply (as kubectl diff; exit 0 no change, 1 changes, 2 error).', exclusive: ['dry-run']}),
  }

  async run(): Promise<InstallOutput | InstallPreviewOutput> {
    const {flags} = await this.parse(Install)
    checkFlags({image: flags.image, namespace: flags.namespace}, (message) => this.error(message, {exit: 2}))
    const values = readValues(flags.values, (message) => this.error(message, {exit: 2}), {allowEmpty: flags['allow-empty']})
    const plan = installPlan(values, operatorPermissions(values.effectiveSpec), {image: flags.image, namespace: flags.namespace})
    if (flags['dry-run'] || flags.diff) {
      const mode = flags.diff ? 'diff' : 'dry-run'
      return this.runShared((out) => runInstallPreview({mode, kubeconfig: flags.kubeconfig, context: flags.context, values, plan, warn: (text) => this.logToStderr(`Warning: ${text}`)}, out))
    }
    const image = flags.image ?? values.image
    const json = this.jsonEnabled()
    const {spinner, colour, line, warn} = progress({json, log: (text) => this.log(text), logToStderr: (text) => this.logToStderr(text)})
    let client: KubeClient | undefined
    try {
      const loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
      client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
      await assertKubernetes(client, loaded.server)
      line(`Installing the Polycrate operator (${image}, ${values.deployment.replicas} replica${values.deployment.replicas === 1 ? '' : 's'}) into namespace ${plan.namespace} on ${loaded.server}`)
      spinner?.start('applying…')
      const report = await installOperator(client, {
        values, plan, crdTimeoutMs: flags.timeout * 1000,
        onResult: (result) => line(resultLine(result, colour)),
        onWarning: warn,
      })
      spinner?.stop()
      line(`Applied: ${countOutcomes(report.results)}.`)
      let rollout: RolloutState | null = null
      if (flags.wait) {
        spinner?.start('waiting for the rollout…')
        if (!spinner) line('Waiting for the rollout…')
        rollout = await waitForRollout(client, plan.namespace, {
          timeoutMs: flags.timeout * 1000,
          onProgress: (message) => {
            if (spinner) spinner.text = `waiting for the rollout: ${message}`
            else line(`  ${message}`)
          },
        })
        spinner?.succeed(`Deployment ${plan.namespace}/polycrate-operator rolled out: ${rollout.message}`)
        if (!spinner) line(`Rolled out: ${rollout.message}.`)
      }
      const inventory = await collectInventory(client, {operatorConfigsEverywhere: true})
      const now = systemClock.now()
      const presence = operatorPresence(await collectPresence(client, {namespace: plan.namespace}), now)
      const status = statusReport(loaded.server, inventory, now, [], operatorStatus(presence, {operatorNamespace: plan.namespace, defaultNamespace: plan.namespace, installed: true}))
      if (!json) this.log(`\n${renderStatus(status, {now, colour})}`)
      return {namespace: plan.namespace, image, results: report.results, warnings: report.warnings, rollout, status}
    } catch (error) {
      spinner?.fail()
      return this.error(describeKubeError(error, 'install the operator (cluster-scoped RBAC, CRDs, a Namespace)'), {exit: 1})
    } finally {
      client?.close()
    }
  }
}
