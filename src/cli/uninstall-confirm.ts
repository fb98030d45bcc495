/**
 * `uninstall`'s consent: on a terminal it lists what it would remove (uninstall-preview.ts) and asks; `--yes` skips
 * that; without a terminal to ask on and without `--yes` it refuses. The list and the question go to stderr, so that
 * stdout holds only the result (-o json|yaml).
 */
import {createInterface} from 'node:readline/promises'
import {KubeClient} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {loadKube} from '../kube/load.js'
import {FIELD_MANAGER} from '../operator/conventions.js'
import type {InstallPlan} from '../operator/install/objects.js'
import {uninstallListing, type ListedObject, type UninstallListing} from '../operator/install/uninstall-preview.js'
import {CommandFailure} from './command-outcome.js'

export const NO_TERMINAL_MESSAGE =
  'uninstall removes the operator and releases its finalizers in every namespace, and asks first; there is no ' +
  'terminal to ask on: pass --yes to uninstall without asking.'

export const CANCELLED_MESSAGE = 'Uninstall cancelled: nothing was changed.'

const where = (object: ListedObject) => `${object.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name}${object.note ? ` (${object.note})` : ''}`
const plural = (kind: string, count: number) => `${count} ${kind}${count === 1 ? '' : kind.endsWith('s') ? 'es' : 's'}`

/** The list the question stands under. */
export function renderUninstallListing(listing: UninstallListing, options: {server: string; crds: boolean}): string {
  const lines = [`polycrate operator uninstall will, on ${options.server}:`]
  if (listing.scale) lines.push(`  scale to 0  ${where(listing.scale)} (${listing.scale.replicas} replica${listing.scale.replicas === 1 ? '' : 's'} now)`)
  if (listing.release.length > 0) {
    lines.push(`  release     the operator's finalizers on ${listing.release.map(({kind, count}) => plural(kind, count)).join(', ')} (nothing is deleted in the Polycrate API)`)
  }
  for (const object of listing.delete) lines.push(`  delete      ${where(object)}`)
  if (options.crds) {
    for (const crd of listing.crds) lines.push(`  delete      CustomResourceDefinition ${crd} (and every object of it)`)
  }
  if (!listing.scale && listing.release.length === 0 && listing.delete.length === 0 && listing.crds.length === 0) {
    lines.push(`  nothing: no operator objects found in namespace ${listing.namespace}`)
  }
  if (!options.crds) lines.push('The polycrate.io CRDs and objects stay (--crds removes them).')
  return lines.join('\n')
}

/** Asks on `input`/`output` (a terminal); true only for y or yes (any case). */
export async function askYesNo(question: string, streams: {input: NodeJS.ReadableStream; output: NodeJS.WritableStream}): Promise<boolean> {
  const readline = createInterface({input: streams.input, output: streams.output, terminal: true})
  try {
    const answer = await readline.question(question)
    return /^\s*y(es)?\s*$/i.test(answer)
  } finally {
    readline.close()
  }
}

/**
 * Lists what uninstall would remove (stderr) and asks (stdin). Throws CommandFailure: exit 2 without a terminal,
 * exit 1 when the cluster cannot be read or the answer is no.
 */
export async function confirmUninstall(options: {kubeconfig?: string; context?: string; plan: InstallPlan; crds: boolean; releaseOnly?: boolean}): Promise<void> {
  if (!process.stdin.isTTY) throw new CommandFailure(NO_TERMINAL_MESSAGE, 2)
  let client: KubeClient | undefined
  let text: string
  try {
    const loaded = await loadKube({kubeconfig: options.kubeconfig, context: options.context})
    client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
    const listing = await uninstallListing(client, options.plan, {crds: options.crds})
    // --release-only deletes nothing: only the scale-down and the finalizers are asked about.
    if (options.releaseOnly) listing.delete = []
    text = renderUninstallListing(listing, {server: loaded.server, crds: options.crds})
  } catch (error) {
    throw new CommandFailure(describeKubeError(error, 'read what uninstall would remove'), 1)
  } finally {
    client?.close()
  }
  process.stderr.write(`${text}\n`)
  if (!(await askYesNo('Uninstall? [y/N] ', {input: process.stdin, output: process.stderr}))) throw new CommandFailure(CANCELLED_MESSAGE, 1)
}
