/** Lines of `polycrate operator install` / `uninstall`: one per object, their summaries, and the progress around them. */
import chalk from 'chalk'
import ora, {type Ora} from 'ora'
import {colourEnabled} from './colour.js'
import type {ObjectResult} from '../operator/install/cluster-objects.js'
import {flagProblems, type FlagInputs} from '../operator/install/inputs.js'
import {loadBlockValues} from '../operator/install/values-file.js'
import {ValuesError, type BlockValues} from '../operator/install/values.js'

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

/** The block values of --values; a values problem ends the command with its message and exit code 2. */
export function readValues(files: readonly string[] | undefined, fail: (message: string) => never, options: {allowEmpty?: boolean} = {}): BlockValues {
  try {
    return loadBlockValues(files ?? [], {allowEmpty: options.allowEmpty})
  } catch (error) {
    if (error instanceof ValuesError) fail(error.message)
    throw error
  }
}

/** The flags checked by the rules the values follow (inputs.ts); a problem ends the command with exit code 2. */
export function checkFlags(inputs: FlagInputs, fail: (message: string) => never): void {
  const problems = flagProblems(inputs)
  if (problems.length > 0) fail(problems.join('\n'))
}

export interface Progress {
  /** A spinner on a terminal that reports its width (a pty without a size would make ora redraw forever). */
  spinner?: Ora
  colour: boolean
  /** A line above the spinner (or a plain line); nothing with --json. */
  line(text: string): void
  /** A warning on stderr, the spinner paused around it; nothing with --json. */
  warn(text: string): void
}

export function progress(options: {json: boolean; log(text: string): void; logToStderr(text: string): void}): Progress {
  const {json} = options
  const colour = colourEnabled(process.stdout) && !json
  const spinner = Boolean(process.stderr.isTTY) && (process.stderr.columns ?? 0) > 0 && !json
    ? ora({stream: process.stderr, color: colourEnabled(process.stderr) ? 'cyan' : false})
    : undefined
  return {
    spinner,
    colour,
    line(text) {
      if (json) return
      if (spinner?.isSpinning) spinner.stopAndPersist({symbol: ' ', text}).start()
      else options.log(text)
    },
    warn(text) {
      if (json) return
      const spinning = spinner?.isSpinning ? spinner.text : undefined
      spinner?.stop()
      options.logToStderr(`Warning: ${text}`)
      if (spinning !== undefined) spinner?.start(spinning)
    },
  }
}
