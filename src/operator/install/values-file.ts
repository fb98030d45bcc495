/** Reading `--values` files: YAML (or JSON), each reduced to the block's `config:` (values.ts), merged in order. */
import {readFileSync} from 'node:fs'
import yaml from 'js-yaml'
import {emptyValuesMessage, valuesTextKind} from './inputs.js'
import {deepMerge, parseBlockValues, selectBlockConfig, ValuesError, type BlockValues} from './values.js'

/**
 * The block values of one or more files (like workspace.poly then secrets.poly: later files win key by key).
 * No file: the block's defaults. Throws ValuesError (unreadable file, YAML syntax, unknown or mistyped settings, and
 * a file that is empty or holds only comments — what a secrets.poly that failed to decrypt looks like — unless
 * `allowEmpty`).
 */
export function loadBlockValues(files: readonly string[] = [], options: {version?: string; allowEmpty?: boolean} = {}): BlockValues {
  let merged: Record<string, unknown> = {}
  for (const file of files) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new ValuesError([`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`], file)
    }
    const kind = valuesTextKind(text)
    if (kind !== 'content') {
      if (!options.allowEmpty) {
        const message = emptyValuesMessage(file, kind)
        throw new ValuesError([message], file, message)
      }
      continue
    }
    let document: unknown
    try {
      document = yaml.load(text, {filename: file})
    } catch (error) {
      // js-yaml's message names line and column; the snippet it adds may show a secret, so only its first line.
      throw new ValuesError([`not valid YAML: ${(error as Error).message.split('\n')[0]}`], file)
    }
    merged = deepMerge(merged, selectBlockConfig(document, file))
  }
  return parseBlockValues(merged, {version: options.version, source: files.length === 1 ? files[0] : files.length > 1 ? files.join(' + ') : undefined})
}
