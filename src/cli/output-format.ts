/**
 * `-o json|yaml` (with `--json` as an alias of `-o json`) on every command that prints data. Read from the raw argv,
 * as oclif reads `--json` (an error before or while parsing must still come out in the format asked for). This
 * module imports nothing (the fast path loads it).
 */

export type StructuredFormat = 'json' | 'yaml'

/** The formats a command's `-o` takes besides its human output. */
export const STRUCTURED_FORMATS: readonly StructuredFormat[] = ['json', 'yaml']

/**
 * The structured format argv asks for: `--json`, `-o json|yaml`, `-ojson`, `-o=json`, `--output json`,
 * `--output=json`; the last one wins; undefined for none (or another value of `-o`, such as `table`). Nothing after
 * `--` counts.
 */
export function structuredFormat(argv: readonly string[]): StructuredFormat | undefined {
  let format: StructuredFormat | undefined
  const take = (value: string | undefined) => {
    if (value === 'json' || value === 'yaml') format = value
    else if (value !== undefined) format = undefined
  }
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index]!
    if (token === '--') break
    if (token === '--json') format = 'json'
    else if (token === '-o' || token === '--output') take(argv[++index])
    else if (token.startsWith('--output=')) take(token.slice('--output='.length))
    else if (token.startsWith('-o') && !token.startsWith('--')) take(token.slice(2).replace(/^=/, ''))
  }
  return format
}
