/** Lines of `polycrate operator install` / `uninstall`: one per object, and their summaries. */
import chalk from 'chalk'
import type {ObjectResult} from '../operator/install/cluster-objects.js'

const GOOD = new Set<ObjectResult['outcome']>(['created', 'updated', 'deleted', 'released', 'scaled'])

/** `created   Deployment polycrate/polycrate-operator` (+ ` — note`); dim when nothing changed. */
export function resultLine(result: ObjectResult, colour = false): string {
  const label = result.outcome.padEnd(9)
  const where = result.namespace ? `${result.namespace}/${result.name}` : result.name
  const line = `${colour ? (GOOD.has(result.outcome) ? chalk.green(label) : chalk.dim(label)) : label} ${result.kind} ${where}`
  return result.note ? `${line} (${result.note})` : line
}

/** `12 created, 3 updated, 30 unchanged` — only the outcomes that occurred, in a fixed order. */
export function countOutcomes(results: readonly ObjectResult[]): string {
  const order: Array<ObjectResult['outcome']> = ['created', 'updated', 'unchanged', 'scaled', 'released', 'deleted', 'kept', 'skipped']
  const parts = order
    .map((outcome) => [outcome, results.filter((result) => result.outcome === outcome).length] as const)
    .filter(([, count]) => count > 0)
    .map(([outcome, count]) => `${count} ${outcome}`)
  return parts.length > 0 ? parts.join(', ') : 'nothing to do'
}
