/**
 * `install --dry-run` and `install --diff` (src/operator/install/preview.ts decides; this prints). --dry-run: one line
 * per object, what install would do to it. --diff: a unified diff per object install would create, change or delete
 * (kubectl diff's format: `--- live/<id>`, `+++ planned/<id>`), nothing for the rest; exit 0 without changes, 1 with
 * changes, 2 when it fails (kubectl diff's codes).
 */
import chalk from 'chalk'
import {createTwoFilesPatch} from 'diff'
import {toYaml} from '../crds/render.js'
import {KubeClient, type KubeObject} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {loadKube} from '../kube/load.js'
import {FIELD_MANAGER} from '../operator/conventions.js'
import type {InstallPlan} from '../operator/install/objects.js'
import {previewChanges, previewInstall, type InstallPreview, type PreviewEntry} from '../operator/install/preview.js'
import {InstallPreconditionError} from '../operator/install/install.js'
import type {BlockValues} from '../operator/install/values.js'
import {colourEnabled} from './colour.js'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'

export type PreviewMode = 'dry-run' | 'diff'

/** What -o json|yaml prints: the preview, with each diff as text (--diff). */
export interface InstallPreviewOutput extends InstallPreview {
  mode: PreviewMode
  changes: number
  diffs?: Array<{kind: string; name: string; namespace?: string; diff: string}>
}

const LABELS: Record<PreviewEntry['action'], string> = {
  create: 'would create',
  change: 'would change',
  unchanged: 'unchanged',
  delete: 'would delete',
  keep: 'kept',
  skip: 'skipped',
}

/** `would create  Deployment polycrate/polycrate-operator (note)`; dim when install would leave it as it is. */
export function previewLine(entry: PreviewEntry, colour = false): string {
  const label = LABELS[entry.action].padEnd(12)
  const painted = !colour ? label : ['create', 'change', 'delete'].includes(entry.action) ? chalk.yellow(label) : chalk.dim(label)
  const where = entry.namespace ? `${entry.namespace}/${entry.name}` : entry.name
  return `${painted} ${entry.kind} ${where}${entry.note ? ` (${entry.note})` : ''}`
}

/** kubectl diff's file name of an object: `<group>.<version>.<Kind>.<namespace>.<name>` (`v1.Secret.ns.name` for core). */
export function diffName(entry: Pick<PreviewEntry, 'apiVersion' | 'kind' | 'namespace' | 'name'>): string {
  return [entry.apiVersion.replace('/', '.'), entry.kind, ...(entry.namespace ? [entry.namespace] : []), entry.name].join('.')
}

/** The unified diff of one entry (3 lines of context), or undefined when install leaves it as it is. */
export function entryDiff(entry: PreviewEntry): string | undefined {
  if (!['create', 'change', 'delete'].includes(entry.action)) return undefined
  const text = (object: KubeObject | undefined) => (object ? toYaml(object) : '')
  const name = diffName(entry)
  const patch = createTwoFilesPatch(`live/${name}`, `planned/${name}`, text(entry.live), entry.action === 'delete' ? '' : text(entry.planned), undefined, undefined, {context: 3})
  // jsdiff starts with an `Index:`-less `===` line; kubectl's (diff -u) starts at `---`.
  return patch.split('\n').filter((line) => !line.startsWith('====')).join('\n')
}

/** Colours a unified diff as git does (+ green, - red, @@ cyan). */
export function colourDiff(diff: string): string {
  return diff.split('\n').map((line) => {
    if (line.startsWith('+++') || line.startsWith('---')) return chalk.bold(line)
    if (line.startsWith('+')) return chalk.green(line)
    if (line.startsWith('-')) return chalk.red(line)
    if (line.startsWith('@@')) return chalk.cyan(line)
    return line
  }).join('\n')
}

/** `Dry run: 3 to create, 1 to change, 40 unchanged (nothing was written).` */
export function previewSummary(preview: InstallPreview): string {
  const counts = (['create', 'change', 'delete', 'unchanged', 'keep', 'skip'] as const)
    .map((action) => [action, preview.entries.filter((entry) => entry.action === action).length] as const)
    .filter(([, count]) => count > 0)
    .map(([action, count]) => ({create: `${count} to create`, change: `${count} to change`, delete: `${count} to delete`, unchanged: `${count} unchanged`, keep: `${count} kept`, skip: `${count} skipped`})[action])
  return `Dry run: ${counts.join(', ') || 'nothing'} (nothing was written).`
}

export interface InstallPreviewOptions {
  mode: PreviewMode
  kubeconfig?: string
  context?: string
  values: BlockValues
  plan: InstallPlan
  /** Warnings go here (stderr), not with -o json|yaml. */
  warn(text: string): void
}

/** Runs the preview against the cluster and prints it; the outcome's exit code is kubectl diff's for --diff. */
export async function runInstallPreview(options: InstallPreviewOptions, out: CommandOutput): Promise<CommandOutcome<InstallPreviewOutput>> {
  const failExit = options.mode === 'diff' ? 2 : 1
  let client: KubeClient | undefined
  let preview: InstallPreview
  try {
    const loaded = await loadKube({kubeconfig: options.kubeconfig, context: options.context})
    client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
    preview = await previewInstall(client, {values: options.values, plan: options.plan})
  } catch (error) {
    if (error instanceof InstallPreconditionError) throw new CommandFailure(error.message, failExit)
    throw new CommandFailure(describeKubeError(error, 'preview the install (server-side dry run)'), failExit)
  } finally {
    client?.close()
  }
  const changes = previewChanges(preview)
  const colour = colourEnabled(process.stdout)
  const output: InstallPreviewOutput = {mode: options.mode, changes, ...preview}
  if (!out.json) for (const warning of preview.warnings) options.warn(warning)
  if (options.mode === 'dry-run') {
    if (!out.json) {
      for (const entry of preview.entries) out.log(previewLine(entry, colour))
      out.log(previewSummary(preview))
    }
    return {value: output, exit: 0}
  }
  const diffs = preview.entries.flatMap((entry) => {
    const diff = entryDiff(entry)
    return diff === undefined ? [] : [{kind: entry.kind, name: entry.name, ...(entry.namespace ? {namespace: entry.namespace} : {}), diff}]
  })
  if (!out.json) for (const {diff} of diffs) out.write(`${colour ? colourDiff(diff) : diff}${diff.endsWith('\n') ? '' : '\n'}`)
  return {value: {...output, diffs}, exit: changes > 0 ? 1 : 0}
}
