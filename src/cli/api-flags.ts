/**
 * What every command that talks to the Polycrate API shares: the `--api-url` / `--token` flags (with their
 * environment variables), building the client from them, turning client errors into one-line CLI errors, and
 * keeping exit codes under `--json`. The token is only ever handed to the client (which puts it into the
 * Authorization header); no message here contains it.
 */
import * as Flags from '@oclif/core/flags'
import {PolycrateApiClient, type Transport} from '../api/index.js'
import {JsonAwareCommand} from './json-aware-command.js'

export const API_URL_ENV = 'POLYCRATE_API_URL'
export const API_TOKEN_ENV = 'POLYCRATE_API_TOKEN'
/** Earlier names of API_TOKEN_ENV (`npm run api-sim` printed POLYCRATE_ADMIN_TOKEN), read when it is unset. */
export const API_TOKEN_ENV_ALIASES = ['POLYCRATE_ADMIN_TOKEN'] as const

/** The flags with the token of an alias variable when neither --token nor POLYCRATE_API_TOKEN gave one (pure). */
export function withTokenAlias<T extends ApiFlagValues>(flags: T, env: NodeJS.ProcessEnv = process.env): T {
  if ((flags.token ?? '').trim() !== '') return flags
  const alias = API_TOKEN_ENV_ALIASES.map((name) => env[name]).find((value) => (value ?? '').trim() !== '')
  return alias === undefined ? flags : {...flags, token: alias}
}

export const apiFlags = {
  'api-url': Flags.string({
    summary: `Base URL of the Polycrate API, the instance root (e.g. https://app.ayedo.cloud).`,
    env: API_URL_ENV,
    helpGroup: 'API',
  }),
  token: Flags.string({
    summary: `Polycrate API token, sent as "Authorization: Bearer <token>"; never printed. Also read from ${API_TOKEN_ENV_ALIASES.join(', ')} when ${API_TOKEN_ENV} is unset.`,
    env: API_TOKEN_ENV,
    helpGroup: 'API',
  }),
}

export interface ApiFlagValues {
  'api-url'?: string
  token?: string
}

/** The one line to exit 2 with when the URL or the token is missing (flag and environment variable both unset). */
export function missingApiSettings(flags: ApiFlagValues): string | undefined {
  const url = (flags['api-url'] ?? '').trim() !== ''
  const token = (flags.token ?? '').trim() !== ''
  if (url && token) return undefined
  if (!url && !token) {
    return `Missing the Polycrate API URL and token: pass --api-url and --token, or set ${API_URL_ENV} and ${API_TOKEN_ENV}.`
  }
  return url
    ? `Missing the Polycrate API token: pass --token or set ${API_TOKEN_ENV}.`
    : `Missing the Polycrate API URL: pass --api-url or set ${API_URL_ENV}.`
}

/** Retries for an interactive command: a few quick ones, not the operator's patient backoff. */
const CLI_RETRY = {maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 2_000}

/**
 * The client for the flags, or the message to exit 2 with (missing settings, a URL that is not http(s), a token
 * that cannot go into a header). The client's own messages for these never quote the token.
 */
export function apiClientFromFlags(flags: ApiFlagValues, options: {fetch?: Transport} = {}): {client: PolycrateApiClient} | {problem: string} {
  const missing = missingApiSettings(flags)
  if (missing) return {problem: missing}
  const baseUrl = (flags['api-url'] ?? '').trim()
  try {
    return {client: new PolycrateApiClient({baseUrl, token: (flags.token ?? '').trim(), retry: CLI_RETRY, fetch: options.fetch})}
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (/token/i.test(message)) return {problem: `The API token (--token / ${API_TOKEN_ENV}) is not usable: ${message.replace(/^Polycrate API token /, 'it ')}.`}
    return {problem: `--api-url / ${API_URL_ENV} is not usable: ${message}. Pass the instance root, e.g. https://app.ayedo.cloud.`}
  }
}

/** Describes a client error as one line, or undefined when the error is not the client's (then it is rethrown). */
export type ApiErrorDescriber = (error: unknown, apiUrl: string) => string | undefined

/** Base of the commands that call the Polycrate API. */
export abstract class ApiCommand extends JsonAwareCommand {
  /** The client for `--api-url` / `--token`; exits 2 with one line when they are missing or unusable. */
  protected apiClient(flags: ApiFlagValues): PolycrateApiClient {
    const result = apiClientFromFlags(withTokenAlias(flags))
    if ('problem' in result) this.error(result.problem, {exit: 2})
    return result.client
  }

  /** Runs one API call; a client error exits 1 with `describe`'s line. */
  protected async callApi<T>(client: PolycrateApiClient, call: () => Promise<T>, describe: ApiErrorDescriber): Promise<T> {
    try {
      return await call()
    } catch (error) {
      const message = describe(error, client.baseUrl)
      if (message === undefined) throw error
      this.error(message, {exit: 1})
    }
  }

}
