/**
 * A command's flags, declared once in a neutral form. Two things are derived from it: the oclif flag definitions of
 * the command class (`oclifFlags()` in oclif-flags.ts) and the argv parser of the fast path (`parseFlags()` in
 * fast-path.ts), which runs the start-up-critical commands without loading oclif. This module imports nothing.
 */
interface CommonSpec {
  summary: string
  /** One-letter alias (`-k`). */
  char?: string
}

export type FlagSpec =
  | (CommonSpec & {type: 'boolean'; exclusive?: string[]})
  | (CommonSpec & {
    type: 'string'
    multiple?: boolean
    default?: string
    exclusive?: string[]
    /** Shown as a file or directory in help (oclif's Flags.file / Flags.directory, never checked for existence). */
    path?: 'file' | 'directory'
    /** The value when the flag is not given: this environment variable's, else `default`. */
    env?: string
    /** The only values allowed. */
    options?: readonly string[]
  })
  | (CommonSpec & {type: 'integer'; default?: number; min?: number})

export type FlagSpecs = Record<string, FlagSpec>

/** The parsed value of one flag, as oclif gives it. */
export type FlagValue<F extends FlagSpec> =
  F extends {type: 'boolean'} ? boolean
    : F extends {type: 'integer'; default: number} ? number
      : F extends {type: 'integer'} ? number | undefined
        : F extends {type: 'string'; multiple: true} ? string[] | undefined
          : F extends {type: 'string'; default: string} ? string
            : string | undefined

export type FlagValues<S extends FlagSpecs> = {[K in keyof S]: FlagValue<S[K]>}

/** `-o json|yaml` of a command that prints text by default: the document --json prints, as JSON or YAML. */
export const outputFlagSpec = {
  type: 'string',
  char: 'o',
  options: ['json', 'yaml'],
  summary: 'Print the result as one JSON or YAML document instead of text (--json is -o json).',
} as const satisfies FlagSpec

/** How oclif reads an integer flag: an optional minus sign and digits. */
export const INTEGER = /^-?\d+$/
