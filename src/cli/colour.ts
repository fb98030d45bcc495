/**
 * Whether the CLI colours what it prints: one rule for chalk, the tables, the spinner and the fast path. This module
 * imports nothing (the fast path loads it).
 *
 * Colour only on a terminal, and never when NO_COLOR is set to anything but the empty string (no-color.org), whatever
 * FORCE_COLOR says: the same rule as oclif's own help and error output (ansis). FORCE_COLOR=0 / false and TERM=dumb
 * turn it off too, as they do for chalk.
 */
export function colourEnabled(stream: {isTTY?: boolean}, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!stream.isTTY) return false
  if (noColour(env)) return false
  if (env.FORCE_COLOR === '0' || env.FORCE_COLOR === 'false') return false
  return env.TERM !== 'dumb'
}

/** NO_COLOR is set and not empty (no-color.org). */
export function noColour(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NO_COLOR !== undefined && env.NO_COLOR !== ''
}
