import * as Flags from '@oclif/core/flags'
import {colourEnabled} from '../../cli/colour.js'
import {CommandFailure} from '../../cli/command-outcome.js'
import {runStatusWatch} from '../../cli/status-watch-command.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {
  CRDS_MISSING,
  missingKindsWarning,
  renderStatus,
  selectKinds,
  unknownKindMessage,
  type StatusReport,
} from '../../cli/status-view.js'
import {checkFlags} from '../../cli/install-view.js'
import {toYaml} from '../../crds/render.js'
import {KubeApiError, KubeClient} from '../../kube/client.js'
import {describeKubeError} from '../../kube/errors.js'
import {loadKubeConfig} from '../../kube/kubeconfig.js'
import {CrdsMissingError} from '../../kube/resources-inventory.js'
import {assertKubernetes} from '../../kube/server-check.js'
import {DEFAULT_NAMESPACE} from '../../operator/conventions.js'
import {readStatus, type StatusRead} from '../../cli/status-read.js'
import {systemClock} from '../../lib/clock.js'

export default class Status extends JsonAwareCommand {
  static override summary =
    'Show whether the operator runs (Deployment, Pods, leader, local processes), its OperatorConfig, and every polycrate.io resource with phase and sync state.'

  static override description =
    'First what runs: the operator\'s Deployment (ready/desired replicas), its Pods (node, ready, leader or standby, ' +
    'restarts, image and version, age), the leader Lease and how long ago it was renewed, and processes outside the ' +
    'cluster (`polycrate operator run` on a laptop: their heartbeat or leader Lease) — or, plainly, that nothing runs. ' +
    'The operator\'s namespace is where one runs (or is installed); --operator-namespace names it. Then the ' +
    'OperatorConfigs of every namespace: when their status was last reported and by whom, marked STALE when no live ' +
    'operator keeps it current (its phase, conditions and controllers are then history, not what runs), the workspace ' +
    'and organization resolved from the agent token, the local cluster, the conditions and controllers. Then the ' +
    'polycrate.io objects of every kind (in the order of `polycrate operator crds --list`), one table per kind with ' +
    'NAMESPACE, NAME, the kind\'s own `kubectl get` columns, PHASE, SYNC, API ID and AGE; kinds without objects are left ' +
    'out. Last the objects whose deletion waits on a finalizer of the operator, with what lets them go.\n\n' +
    'Exit code 0 when the operator runs, 1 when nothing runs (after printing everything, as `health` does), 1 for a ' +
    'cluster that cannot be read. --namespace limits the polycrate.io objects to one namespace (and leaves out the ' +
    'cluster-scoped Artifacts unless asked for with --kind); it does not change where the operator is looked for.\n\n' +
    '-o json / -o yaml (or --json) print one document: {cluster, operator, operatorConfigs, resources, held}; each ' +
    'resource carries its kind\'s columns as `columns` (raw values, dates as timestamps).'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --kind ep --kind app -n production',
    '<%= config.bin %> <%= command.id %> --operator-namespace polycrate-dev',
    '<%= config.bin %> <%= command.id %> -o yaml',
    '<%= config.bin %> <%= command.id %> -o json | jq \'.operator.running\'',
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
      summary: 'Only the polycrate.io objects of this namespace (default: all namespaces); the operator and its OperatorConfig are shown whatever it says.',
      exclusive: ['all-namespaces'],
    }),
    'all-namespaces': Flags.boolean({
      char: 'A',
      summary: 'All namespaces (the default; for kubectl habits).',
      exclusive: ['namespace'],
    }),
    watch: Flags.boolean({
      char: 'w',
      summary: 'Watch: print the report again whenever it changes (watches, not polling), until Ctrl-C; -o json: one JSON document per line.',
    }),
    'operator-namespace': Flags.string({
      summary: `The operator's namespace (default: where an operator runs or is installed, else ${DEFAULT_NAMESPACE}).`,
    }),
  }

  async run(): Promise<StatusReport | undefined> {
    const {flags} = await this.parse(Status)
    const namespace = flags['all-namespaces'] ? undefined : flags.namespace
    checkFlags({namespace, operatorNamespace: flags['operator-namespace']}, (message) => this.error(message, {exit: 2}))
    const selection = selectKinds(flags.kind, namespace)
    if (selection.unknown !== undefined) return this.error(unknownKindMessage(selection.unknown), {exit: 2})
    if (flags.watch) {
      try {
        await runStatusWatch({kubeconfig: flags.kubeconfig, context: flags.context, kinds: selection.kinds, namespace, operatorNamespace: flags['operator-namespace'], format: this.structuredOutput() ?? 'table'})
      } catch (error) {
        if (error instanceof CommandFailure) this.error(error.message, {exit: error.exit})
        throw error
      }
      return undefined
    }

    let client: KubeClient | undefined
    let server: string
    let read: StatusRead
    try {
      const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
      server = loaded.server
      client = KubeClient.from(loaded)
      read = await readStatus(client, server, {kinds: selection.kinds, namespace, operatorNamespace: flags['operator-namespace']})
    } catch (error) {
      if (error instanceof CrdsMissingError) {
        // A server that is not Kubernetes answers 404 to every list too: say which of the two it is.
        await assertKubernetes(client!, server!).catch((notKube: Error) => this.error(describeKubeError(notKube, 'read the cluster'), {exit: 1}))
        return this.error(CRDS_MISSING, {exit: 1})
      }
      if (error instanceof KubeApiError && error.status === 404) {
        await assertKubernetes(client!, server!).catch((notKube: Error) => this.error(describeKubeError(notKube, 'read the cluster'), {exit: 1}))
      }
      return this.error(describeKubeError(error, 'list polycrate.io resources'), {exit: 1})
    } finally {
      client?.close()
    }

    if (read.missing.length > 0) this.logToStderr(`Warning: ${missingKindsWarning(read.missing)}`)
    for (const warning of read.posture) this.logToStderr(`Warning: ${warning}`)
    const {report, operator} = read
    const now = systemClock.now()
    const exit = operator.running ? 0 : 1
    if (this.jsonEnabled()) {
      if (exit !== 0) {
        this.logJson(report)
        this.exit(exit)
      }
      return report
    }
    switch (flags.output) {
      case 'json':
        this.log(JSON.stringify(report, null, 2))
        break
      case 'yaml':
        this.log(toYaml(report).trimEnd())
        break
      default:
        this.log(renderStatus(report, {now, namespace, colour: colourEnabled(process.stdout)}))
    }
    if (exit !== 0) this.exit(exit)
    return report
  }
}
