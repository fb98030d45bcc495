import * as Flags from '@oclif/core/flags'
import type {AlphabetLowercase, BooleanFlag, OptionFlag} from '@oclif/core/interfaces'
import type {FlagSpec, FlagSpecs, FlagValue} from './flag-spec.js'

type OclifFlag<F extends FlagSpec> = F extends {type: 'boolean'} ? BooleanFlag<boolean> : OptionFlag<FlagValue<F>>

/** The oclif flag definitions of a command, derived from its neutral flag specs (flag-spec.ts). */
export function oclifFlags<S extends FlagSpecs>(specs: S): {[K in keyof S]: OclifFlag<S[K]>} {
  const flags: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(specs)) {
    const common = {summary: spec.summary, ...(spec.char ? {char: spec.char as AlphabetLowercase} : {})}
    switch (spec.type) {
      case 'boolean':
        flags[name] = Flags.boolean({...common, ...(spec.exclusive ? {exclusive: spec.exclusive} : {})})
        break
      case 'integer':
        flags[name] = Flags.integer({
          ...common,
          ...(spec.default === undefined ? {} : {default: spec.default}),
          ...(spec.min === undefined ? {} : {min: spec.min}),
        })
        break
      case 'string': {
        // One call for the three kinds: their overloads (multiple or not) do not unify; the result type is above.
        const define = (spec.path === 'directory' ? Flags.directory : spec.path === 'file' ? Flags.file : Flags.string) as
          unknown as (options: Record<string, unknown>) => unknown
        flags[name] = define({
          ...common,
          ...(spec.multiple ? {multiple: true} : {}),
          ...(spec.default === undefined ? {} : {default: spec.default}),
          ...(spec.exclusive ? {exclusive: spec.exclusive} : {}),
          ...(spec.path === 'file' ? {exists: false} : {}),
          ...(spec.env ? {env: spec.env} : {}),
          ...(spec.options ? {options: spec.options} : {}),
        })
        break
      }
    }
  }
  return flags as {[K in keyof S]: OclifFlag<S[K]>}
}
