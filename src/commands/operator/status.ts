import * as Flags from '@oclif/core/flags'
import chalk from 'chalk'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {
  CRDS_MISSING,
  missingKindsWarning,
  renderStatus,
  selectKinds,
  statusReport,
  unknownKindMessage,
  type StatusReport,
} from '../../cli/status-view.js'
import {toYaml} from '../../crds/render.js'
import {KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {loadKubeConfig} from '../../kube/kubeconfig.js'
import {collectInventory, CrdsMissingError} from '../../kube/resources-inventory.js'
import {heldObjects, type HeldObject} from '../../operator/held.js'

export default class Status extends JsonAwareCommand {
  static override summary =
    'Show every polycrate.io resource in the cluster with phase and sync state, plus the OperatorConfig status.'

  static override description =
    'Lists the polycrate.io objects of every kind (in the order of `polycrate operator crds --list`), one table per ' +
    'kind with NAMESPACE, NAME, the kind\'s own `kubectl get` columns (e.g. ISSUER, READY, STATUS for Certificates; ' +
    'dates as ages), PHASE, SYNC (status.syncStatus / status.sync_status), API ID (status.apiID / status.api_id) and ' +
    'AGE; kinds without objects are left out. Before them, the OperatorConfig: its phase, the workspace and ' +
    'organization resolved from the agent token, the local cluster, its conditions and controllers. After them, the ' +
    'objects whose deletion waits on a finalizer of the operator (users\' Ingresses, HTTPRoutes and Services, and ' +
    'polycrate.io objects), with what lets them go.\n\n' +
    '-o json / -o yaml (or --json) print one document: {cluster, operatorConfigs, resources, held}; each resource carries ' +
    'its kind\'s columns as `columns` (raw values, dates as timestamps). With --namespace only that namespace is ' +
    'read, and the cluster-scoped Artifacts are left out unless asked for with --kind.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --kind ep --kind app -n production',
    '<%= config.bin %> <%= command.id %> -o yaml',
    '<%= config.bin %> <%= command.id %> -o json | jq \'.resources[] | select(.syncStatus == "error")\'',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    output: Flags.option({
      char: 'o',
      options: ['table', 'json', 'yaml'] as const,
      default: 'table' as const,
      summary: 'Output format.',
    })(),
    kind: Flags.string({
      char: 'k',
      summary: 'Only this kind (kind, plural or short name, any case); repeatable.',
      multiple: true,
    }),
    namespace: Flags.string({
      char: 'n',
      summary: 'Only this namespace (default: all namespaces).',
      exclusive: ['all-namespaces'],
    }),
    'all-namespaces': Flags.boolean({
      char: 'A',
      summary: 'All namespaces (the default; for kubectl habits).',
      exclusive: ['namespace'],
    }),
  }

  async run(): Promise<StatusReport> {
    const {flags} = await this.parse(Status)
    const namespace = flags['all-namespaces'] ? undefined : flags.namespace
    const selection = selectKinds(flags.kind, namespace)
    if (selection.unknown !== undefined) return this.error(unknownKindMessage(selection.unknown), {exit: 2})

    let client: KubeClient | undefined
    let server: string
    let inventory: Awaited<ReturnType<typeof collectInventory>>
    let held: HeldObject[]
    try {
      const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
      server = loaded.server
      client = KubeClient.from(loaded)
      inventory = await collectInventory(client, {kinds: selection.kinds, namespace})
      held = await heldObjects(client, {namespace})
    } catch (error) {
      if (error instanceof CrdsMissingError) return this.error(CRDS_MISSING, {exit: 1})
      return this.error(describeKubeError(error, 'list polycrate.io resources'), {exit: 1})
    } finally {
      client?.close()
    }

    if (inventory.missing.length > 0) this.logToStderr(`Warning: ${missingKindsWarning(inventory.missing)}`)
    const now = Date.now()
    const report = statusReport(server, inventory, now, held)
    if (this.jsonEnabled()) return report
    switch (flags.output) {
      case 'json':
        this.log(JSON.stringify(report, null, 2))
        break
      case 'yaml':
        this.log(toYaml(report).trimEnd())
        break
      default:
        this.log(renderStatus(report, {now, namespace, colour: Boolean(process.stdout.isTTY) && chalk.level > 0}))
    }
    return report
  }
}
