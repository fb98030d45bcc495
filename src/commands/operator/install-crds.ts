import * as Flags from '@oclif/core/flags'
import chalk from 'chalk'
import ora from 'ora'
import {colourEnabled} from '../../cli/colour.js'
import {JsonAwareCommand, outputFlag} from '../../cli/json-aware-command.js'
import {kubeFlags} from '../../cli/kube-flags.js'
import {allCrds} from '../../crds/index.js'
import {customResourceDefinitions} from '../../crds/render.js'
import {KubeClient} from '../../kube/client.js'
import {installCrds, type InstallResult} from '../../kube/crd-install.js'
import {describeKubeError} from '../../kube/errors.js'
import {assertKubernetes} from '../../kube/server-check.js'
import {loadKubeConfig} from '../../kube/kubeconfig.js'
import {FIELD_MANAGER} from '../../operator/conventions.js'

export default class InstallCrds extends JsonAwareCommand {
  static override summary = 'Install or update the operator\'s CRDs in a cluster (server-side apply).'
  static override description =
    'Applies every polycrate.io CustomResourceDefinition with field manager polycrate-operator and waits until ' +
    'each is Established. --dry-run shows what would be created or changed without writing anything.'

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --kubeconfig ~/.kube/admin.yaml',
    '<%= config.bin %> <%= command.id %> --dry-run',
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...kubeFlags,
    output: outputFlag,
    'dry-run': Flags.boolean({summary: 'Show what would be installed or changed; write nothing (server-side dry run).'}),
    timeout: Flags.integer({summary: 'Seconds to wait for each CRD to become Established.', default: 60, min: 1}),
  }

  async run(): Promise<{dryRun: boolean; results: InstallResult[]}> {
    const {flags} = await this.parse(InstallCrds)
    const dryRun = flags['dry-run']
    let client: KubeClient | undefined
    const interactive = Boolean(process.stderr.isTTY) && !this.jsonEnabled()
    const colour = interactive && colourEnabled(process.stdout)
    const spinner = interactive ? ora({stream: process.stderr, color: colourEnabled(process.stderr) ? 'cyan' : false}) : undefined
    try {
      const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
      client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
      await assertKubernetes(client, loaded.server)
      const crds = customResourceDefinitions(allCrds)
      if (!this.jsonEnabled()) {
        this.log(`${dryRun ? 'Checking' : 'Installing'} ${crds.length} CRDs on ${loaded.server}${dryRun ? ' (dry run)' : ''}`)
      }
      spinner?.start(dryRun ? 'comparing with the cluster…' : 'applying…')
      const results = await installCrds(client, crds, {
        dryRun,
        timeoutMs: flags.timeout * 1000,
        onResult: (result) => {
          if (this.jsonEnabled()) return
          const line = `${outcomeLabel(result, dryRun, colour)} ${result.name}`
          if (spinner) spinner.stopAndPersist({symbol: ' ', text: line}).start()
          else this.log(line)
        },
      })
      spinner?.stop()
      if (!this.jsonEnabled()) this.log(summary(results, dryRun))
      return {dryRun, results}
    } catch (error) {
      spinner?.fail()
      return this.error(describeKubeError(error, 'install CustomResourceDefinitions'), {exit: 1})
    } finally {
      client?.close()
    }
  }
}

function outcomeLabel(result: InstallResult, dryRun: boolean, colour: boolean): string {
  const text = dryRun && result.outcome !== 'unchanged' ? `would be ${result.outcome}` : result.outcome
  const padded = text.padEnd(dryRun ? 16 : 9)
  if (!colour) return padded
  return result.outcome === 'unchanged' ? chalk.dim(padded) : chalk.green(padded)
}

export function summary(results: InstallResult[], dryRun: boolean): string {
  const count = (outcome: InstallResult['outcome']) => results.filter((r) => r.outcome === outcome).length
  const parts = `${count('created')} created, ${count('updated')} updated, ${count('unchanged')} unchanged`
  return dryRun
    ? `Dry run: ${parts} (nothing was written).`
    : `${results.length} CRDs Established: ${parts}.`
}
