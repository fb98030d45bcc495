/**
 * The contract between a command's run function (crds-command.ts, health-command.ts, explain-command.ts) and its two
 * callers, the oclif command class and the fast path (fast-path.ts). This module imports nothing.
 */

/** Where a run function prints. `json` is --json: then it prints nothing and its caller prints the value. */
export interface CommandOutput {
  json: boolean
  /** One line on stdout (oclif's `this.log`). */
  log(line: string): void
  /** Text on stdout as it is. */
  write(text: string): void
}

/** A run function's result: the value --json prints, and the exit code (non-zero: printed, then exit with it). */
export interface CommandOutcome<T> {
  value: T
  exit: number
}

/** The command failed: oclif's `this.error(message, {exit})`. */
export class CommandFailure extends Error {
  constructor(
    message: string,
    readonly exit: number,
  ) {
    super(message)
  }
}
