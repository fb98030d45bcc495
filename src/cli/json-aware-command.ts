import {createRequire} from 'node:module'
import {Command} from '@oclif/core/command'
import {ExitError} from '@oclif/core/errors'
import * as Flags from '@oclif/core/flags'
import type {CommandError, OclifError} from '@oclif/core/interfaces'
import type jsYaml from 'js-yaml'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'
import {STRUCTURED_FORMATS, structuredFormat, type StructuredFormat} from './output-format.js'

/** `-o json|yaml`: the document `--json` prints, as JSON or YAML (JsonAwareCommand prints it). */
export const outputFlag = Flags.option({
  char: 'o',
  options: STRUCTURED_FORMATS,
  summary: 'Print the result as one JSON or YAML document instead of text (--json is -o json).',
})()

/** js-yaml only when YAML is printed (start-up cost of the other commands). */
const require = createRequire(import.meta.url)
const dumpYaml = (value: unknown): string =>
  (require('js-yaml') as typeof jsYaml).dump(value, {noRefs: true, lineWidth: -1, sortKeys: false})

// Subpath imports (here and in the commands): '@oclif/core' itself loads all of oclif, semver included (start-up cost).

/**
 * A command whose `--json` errors keep their exit code and never echo the command line (tokens!), and whose
 * `-o json|yaml` is `--json` printed as JSON or YAML (when the command has an `output` flag: `outputFlag`, or its own
 * with more options such as `table`).
 */
export abstract class JsonAwareCommand extends Command {
  /**
   * Whether the command's text output is YAML already (crds, manifests): then `-o yaml` asks for that text, not for
   * the document --json prints.
   */
  protected yamlIsText(): boolean {
    return false
  }

  /** The structured format asked for: --json, or -o json|yaml of a command with an `output` flag. */
  protected structuredOutput(): StructuredFormat | undefined {
    const ctor = this.ctor as typeof JsonAwareCommand
    if (!ctor.enableJsonFlag) return undefined
    if (super.jsonEnabled()) return 'json'
    if (!ctor.flags?.output) return undefined
    const format = structuredFormat(this.argv)
    return format === 'yaml' && this.yamlIsText() ? undefined : format
  }

  override jsonEnabled(): boolean {
    return this.structuredOutput() !== undefined
  }

  /** The document of --json, as YAML with -o yaml. */
  override logJson(json: unknown): void {
    if (this.structuredOutput() === 'yaml') process.stdout.write(dumpYaml(json))
    else super.logJson(json)
  }

  /**
   * Runs a command's shared run function (the same one the fast path calls): its output goes through `this.log`,
   * a CommandFailure becomes `this.error`, a non-zero exit prints the value with --json and exits with it.
   */
  protected async runShared<T>(run: (out: CommandOutput) => Promise<CommandOutcome<T>>): Promise<T> {
    let outcome: CommandOutcome<T>
    try {
      outcome = await run({
        json: this.jsonEnabled(),
        log: (line) => this.log(line),
        write: (text) => process.stdout.write(text),
      })
    } catch (error) {
      if (error instanceof CommandFailure) this.error(error.message, {exit: error.exit})
      throw error
    }
    if (outcome.exit !== 0) {
      if (this.jsonEnabled()) this.logJson(outcome.value)
      this.exit(outcome.exit)
    }
    return outcome.value
  }

  /**
   * With --json, oclif prints an error as {"error": …} and then exits 1 whatever the error's code; keep the code
   * (2 for missing flags). Without --json, oclif's own handling.
   */
  protected override async catch(error: CommandError): Promise<unknown> {
    if (error instanceof ExitError) throw error
    const exit = (error as Partial<OclifError>).oclif?.exit
    if (this.jsonEnabled() && typeof exit === 'number') {
      this.logJson(this.toErrorJson(error))
      throw new ExitError(exit)
    }
    return super.catch(error)
  }

  /**
   * oclif's default spreads the whole error into the JSON, and a parse error (a missing argument, a bad flag)
   * carries the command line, `--token <token>` included. Only name, message, code and exit code go out.
   */
  protected override toErrorJson(error: unknown): {error: {name: string; message: string; code?: string; oclif?: {exit: number}}} {
    if (!(error instanceof Error)) return {error: {name: 'Error', message: String(error)}}
    const code = (error as {code?: unknown}).code
    const exit = (error as Partial<OclifError>).oclif?.exit
    return {
      error: {
        name: error.name,
        message: error.message,
        ...(typeof code === 'string' ? {code} : {}),
        ...(typeof exit === 'number' ? {oclif: {exit}} : {}),
      },
    }
  }
}
