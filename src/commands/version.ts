import * as Flags from '@oclif/core/flags'
import type {PolycrateApiClient} from '../api/client.js'
import {apiClientFromFlags, apiFlags} from '../cli/api-flags.js'
import {colourEnabled} from '../cli/colour.js'
import {JsonAwareCommand, outputFlag} from '../cli/json-aware-command.js'
import {kubeFlags} from '../cli/kube-flags.js'
import {apiErrorMessage, apiVersionOf, clientVersion, renderVersion, type ApiVersion, type ClusterVersion, type VersionReport} from '../cli/version-view.js'
import {KubeClient} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {loadKube} from '../kube/load.js'
import {DEFAULT_NAMESPACE} from '../operator/conventions.js'
import {readOperatorInstances} from '../operator/install/replicas.js'
import {operatorVersion} from '../version.js'
import {systemClock} from '../lib/clock.js'

export default class Version extends JsonAwareCommand {
  static override summary = 'Print the version of the CLI and Node, the operator running in the cluster, and the Polycrate API.'
  static override description =
    'The client: this CLI\'s version, Node\'s version and the platform. The cluster (unless --client): the API server and ' +
    'its Kubernetes version, and for each namespace where the operator runs its Deployment (ready/desired), one line ' +
    'per Pod (the version its image tag names, ready, restarts, age, image) and which one leads — the holder of the ' +
    'Lease polycrate-operator-leader (a holder that is no Pod, such as `operator run` on a laptop, is named as such; ' +
    'an expired lease is marked) — and the version the leader reported to the Polycrate API. Pods are found by the ' +
    'label app.kubernetes.io/name=polycrate-operator in every namespace, or in --namespace. With --api-url and --token ' +
    '(or POLYCRATE_API_URL and POLYCRATE_API_TOKEN): the API\'s version from /api/v1/system/status/ and, for a ' +
    'platform-admin token, the operator version it wants (SystemConfig OPERATOR_BLOCK_VERSION).\n\n' +
    'Exit code 0, or 1 when the cluster or the API cannot be read (what could be read is printed all the same).'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --client -o json',
    '<%= config.bin %> <%= command.id %> --context production -n polycrate',
    'POLYCRATE_API_URL=https://app.ayedo.cloud POLYCRATE_API_TOKEN=… <%= config.bin %> <%= command.id %> -o yaml',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    output: outputFlag,
    client: Flags.boolean({summary: 'Only the client\'s version: do not connect to the cluster (or the API).'}),
    namespace: Flags.string({char: 'n', summary: 'Look for the operator in this namespace only (default: every namespace).'}),
    ...apiFlags,
  }

  async run(): Promise<VersionReport> {
    const {flags} = await this.parse(Version)
    const report: VersionReport = {client: clientVersion(operatorVersion())}
    const wantsApi = !flags.client && (flags['api-url'] !== undefined || flags.token !== undefined)
    const api = wantsApi ? apiClientFromFlags(flags) : undefined
    if (api && 'problem' in api) this.error(api.problem, {exit: 2})
    const now = systemClock.now()
    if (!flags.client) {
      const [cluster, apiVersion] = await Promise.all([
        this.clusterVersion(flags, now),
        api ? this.apiVersion(api.client) : undefined,
      ])
      report.cluster = cluster
      if (apiVersion) report.api = apiVersion
    }
    if (!this.jsonEnabled()) this.log(renderVersion(report, {now, colour: colourEnabled(process.stdout)}))
    const failed = (report.cluster && 'error' in report.cluster) || (report.api && 'error' in report.api)
    if (failed) {
      if (this.jsonEnabled()) this.logJson(report)
      this.exit(1)
    }
    return report
  }

  private async clusterVersion(flags: {kubeconfig?: string; context?: string; namespace?: string}, now: number): Promise<ClusterVersion> {
    let server: string | null = null
    let client: KubeClient | undefined
    try {
      const loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
      server = loaded.server
      client = KubeClient.from(loaded)
      const [version, operators] = await Promise.all([
        client.request<{gitVersion?: string}>({path: '/version'}),
        readOperatorInstances(client, {namespace: flags.namespace, defaultNamespace: DEFAULT_NAMESPACE, now}),
      ])
      return {server, kubernetesVersion: version.gitVersion ?? null, operators}
    } catch (error) {
      return {server, error: describeKubeError(error, 'read the operator\'s Pods, Deployment and Lease')}
    } finally {
      client?.close()
    }
  }

  private async apiVersion(client: PolycrateApiClient): Promise<ApiVersion> {
    try {
      const status = await client.systemStatus.get()
      // The desired operator version is for platform admins; anyone else gets 403 and no such line.
      const config = await client.systemConfig.get().catch(() => undefined)
      return {url: client.baseUrl, version: apiVersionOf(status), desiredOperatorVersion: config?.OPERATOR_BLOCK_VERSION ?? null}
    } catch (error) {
      return {url: client.baseUrl, error: apiErrorMessage(error, client.baseUrl)}
    }
  }
}
