/**
 * The fast path of bin/run.js: `operator crds …`, `operator health …` and `operator explain …` run here without
 * loading oclif (whose import alone costs a short-lived command ~3× the CPU of `node -e 0`) and, for explain, without
 * @kubernetes/client-node. The flags are parsed from the commands' own flag specs (flag-spec.ts) and the same run
 * functions run as in the oclif commands, so stdout and exit codes are the same.
 *
 * Only a clean happy path is taken: `--help`, `-h`, `--`, an unknown or repeated flag, a missing or invalid value,
 * a kubeconfig the light reader does not support, … return false and bin/run.js runs oclif as always (its help,
 * its error messages). POLYCRATE_NO_FAST_PATH=1 turns the fast path off.
 */
import {format, parseArgs} from 'node:util'
import {colourEnabled, noColour} from './colour.js'
import {CommandFailure, type CommandOutcome, type CommandOutput} from './command-outcome.js'
import {INTEGER, type FlagSpecs} from './flag-spec.js'
import type {StructuredFormat} from './output-format.js'

type Parsed = {flags: Record<string, unknown>; positionals: string[]; json: boolean}

/** The structured format of a parsed command line: --json, or -o json|yaml (yaml unless it is the command's text). */
function formatOf(parsed: Parsed, yamlIsText = false): StructuredFormat | undefined {
  if (parsed.json || parsed.flags.output === 'json') return 'json'
  return parsed.flags.output === 'yaml' && !yamlIsText ? 'yaml' : undefined
}

/** The flags of `argv` per `specs` as oclif would give them, or undefined for anything oclif should see. */
export function parseFlags(specs: FlagSpecs, argv: string[], env: NodeJS.ProcessEnv = process.env): Parsed | undefined {
  const options: Record<string, {type: 'string' | 'boolean'; short?: string; multiple?: boolean}> = {json: {type: 'boolean'}}
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = {
      type: spec.type === 'boolean' ? 'boolean' : 'string',
      ...(spec.char ? {short: spec.char} : {}),
      ...(spec.type === 'string' && spec.multiple ? {multiple: true} : {}),
    }
  }
  let parsed: ReturnType<typeof parseArgs<{options: typeof options; allowPositionals: true; tokens: true}>>
  try {
    parsed = parseArgs({args: argv, options, allowPositionals: true, strict: true, tokens: true})
  } catch {
    return undefined // unknown flag, missing value, a value for a boolean, …
  }
  const seen = new Set<string>()
  for (const token of parsed.tokens) {
    if (token.kind === 'option-terminator') return undefined
    if (token.kind !== 'option') continue
    // oclif refuses a flag given twice unless it is `multiple`; `-kX` / `-k=X` it reads its own way.
    if (seen.has(token.name) && !options[token.name]!.multiple) return undefined
    if (token.inlineValue && !token.rawName.startsWith('--')) return undefined
    if (token.value === '') return undefined
    seen.add(token.name)
  }

  const flags: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(specs)) {
    const value = parsed.values[name]
    if ('exclusive' in spec && value !== undefined && spec.exclusive?.some((other) => parsed.values[other] !== undefined)) return undefined
    if (spec.type === 'boolean') flags[name] = value === true
    else if (spec.type === 'integer') {
      if (value === undefined) flags[name] = spec.default
      else {
        if (typeof value !== 'string' || !INTEGER.test(value)) return undefined
        const number = Number(value)
        if (spec.min !== undefined && number < spec.min) return undefined
        flags[name] = number
      }
    } else {
      // oclif reads a flag's environment variable when the flag is not given; an empty one it reads its own way.
      const fromEnv = value === undefined && spec.env !== undefined ? env[spec.env] : undefined
      if (fromEnv === '') return undefined
      const given = value ?? fromEnv ?? spec.default
      if (spec.options && typeof given === 'string' && !spec.options.includes(given)) return undefined
      flags[name] = given
    }
  }
  return {flags, positionals: parsed.positionals, json: parsed.values.json === true}
}

/** stdout and stderr as oclif writes them (`this.log`, `logJson`, its error handler). */
function output(structured: StructuredFormat | undefined): CommandOutput {
  return {
    json: structured !== undefined,
    log: (line) => console.log(format(line)),
    write: (text) => process.stdout.write(text),
  }
}

/** oclif's error print: ` ›   Error: <message>`, wrapped at its width (no colour when stderr is not a terminal). */
function formatError(text: string, columns: number): string {
  const width = columns - 6
  const lines: string[] = []
  for (const paragraph of text.split('\n')) {
    let line = ''
    for (const word of paragraph.split(' ')) {
      if (line !== '' && line.length + word.length > width) {
        lines.push(line)
        line = ''
      }
      line += `${word} `
    }
    lines.push(line.slice(0, -1))
  }
  const bang = colourEnabled(process.stderr) ? '\u001B[31m›\u001B[39m' : '›'
  return lines.map((line) => ` ${bang}   ${line}`).join('\n')
}

/** Prints the outcome or failure as the oclif command (JsonAwareCommand) would and sets the exit code. */
export async function finish(structured: StructuredFormat | undefined, run: (out: CommandOutput) => Promise<CommandOutcome<unknown>>): Promise<void> {
  const print = async (document: unknown) => {
    if (structured === 'yaml') {
      const {default: yaml} = await import('js-yaml')
      process.stdout.write(yaml.dump(document, {noRefs: true, lineWidth: -1, sortKeys: false}))
    } else console.log(JSON.stringify(document, null, 2))
  }
  try {
    const {value, exit} = await run(output(structured))
    if (structured && value) await print(value)
    process.exitCode = exit
  } catch (error) {
    // A CommandFailure is the command's `this.error(message, {exit})`; anything else oclif prints as it is, exit 1.
    const failure = error instanceof CommandFailure ? error : undefined
    const name = failure ? 'Error' : error instanceof Error ? error.name : 'Error'
    const message = error instanceof Error ? error.message : String(error)
    const code = (error as {code?: unknown} | undefined)?.code
    const exit = failure?.exit ?? 1
    if (structured) {
      await print({error: {name, message, ...(typeof code === 'string' ? {code} : {}), ...(failure ? {oclif: {exit}} : {})}})
    } else {
      const columns = Number.parseInt(process.env.OCLIF_COLUMNS ?? '', 10) || (process.stderr.isTTY ? process.stderr.columns : 80)
      console.error(formatError(`${name}: ${message}${typeof code === 'string' ? `\nCode: ${code}` : ''}`, columns))
    }
    process.exitCode = exit
  }
}

/** Runs argv on the fast path if it can; false: it did nothing, run oclif. */
export async function runFastPath(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (env.POLYCRATE_NO_FAST_PATH || env.POLYCRATE_CONTENT_TYPE) return false
  if (argv[0] !== 'operator' || argv.includes('--help') || argv.includes('-h')) return false
  const rest = argv.slice(2)
  // oclif colours JSON for a terminal (not with NO_COLOR).
  const plainJson = (parsed: Parsed) => formatOf(parsed) !== 'json' || noColour(env) || (!process.stdout.isTTY && !env.FORCE_COLOR)

  switch (argv[1]) {
    case 'crds': {
      const {crdsFlags, runCrds} = await import('./crds-command.js')
      const parsed = parseFlags(crdsFlags, rest, env)
      if (!parsed || parsed.positionals.length > 0 || !plainJson(parsed)) return false
      const flags = parsed.flags as Parameters<typeof runCrds>[0]
      await finish(formatOf(parsed, !flags.list && flags['output-dir'] === undefined), (out) => runCrds(flags, out))
      return true
    }
    case 'health': {
      const {healthFlags, runHealth} = await import('./health-command.js')
      const parsed = parseFlags(healthFlags, rest, env)
      if (!parsed || parsed.positionals.length > 0 || !plainJson(parsed)) return false
      await finish(formatOf(parsed), (out) => runHealth(parsed.flags as Parameters<typeof runHealth>[0], out))
      return true
    }
    case 'explain': {
      const {explainFlags, runExplain} = await import('./explain-command.js')
      const parsed = parseFlags(explainFlags, rest, env)
      if (!parsed || parsed.positionals.length !== 1 || !plainJson(parsed)) return false
      const flags = parsed.flags as Parameters<typeof runExplain>[1]
      const [{KubeClient}, {loadLightKubeConfig}, {z}] = await Promise.all([
        import('../kube/client.js'), import('../kube/light-kubeconfig.js'), import('zod'),
      ])
      // Load first, to fall through before printing anything; a load error is the command's (after the target's).
      let loaded: ReturnType<typeof loadLightKubeConfig> | undefined
      let loadError: unknown
      try {
        loaded = loadLightKubeConfig({kubeconfig: flags.kubeconfig, context: flags.context})
        if ('unsupported' in loaded) return false
      } catch (error) {
        loadError = error
      }
      // One OperatorConfig is validated once: compiling zod's generated parsers (new Function) costs more than
      // it saves (≈3 ms of CPU). The result is the same.
      z.config({jitless: true})
      await finish(formatOf(parsed), (out) => runExplain(parsed.positionals[0]!, flags, out, () => {
        if (!loaded || 'unsupported' in loaded) throw loadError
        return {client: KubeClient.from(loaded), namespace: loaded.namespace}
      }))
      return true
    }
    default:
      return false
  }
}
