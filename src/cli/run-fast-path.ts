/**
 * The fast path of `operator run` (bin/run.js): parses argv with the command's flag spec (run-command.ts) and runs the
 * operator without loading oclif. Not part of the fast-path bundle (fast-path.cjs): that one serves short-lived
 * commands and must stay small. Whatever parseFlags does not take (help, an unknown flag, an invalid value, --json,
 * arguments, POLYCRATE_NO_FAST_PATH=1) returns false, and bin/run.js runs oclif as always.
 */
import {finish, parseFlags} from './fast-path.js'
import {runFlags, runOperator, type RunFlags} from './run-command.js'

export async function runOperatorFastPath(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (env.POLYCRATE_NO_FAST_PATH) return false
  if (argv[0] !== 'operator' || argv[1] !== 'run' || argv.includes('--help') || argv.includes('-h')) return false
  const parsed = parseFlags(runFlags, argv.slice(2), env)
  if (!parsed || parsed.json || parsed.positionals.length > 0) return false
  await finish(undefined, async () => {
    await runOperator(parsed.flags as RunFlags)
    return {value: undefined, exit: 0}
  })
  return true
}
