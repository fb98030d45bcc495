/**
 * Reading the polycrate_* annotations of an Ingress or HTTPRoute: the monitor switch, the source-wide check settings,
 * the K8sApp link and the per-host overrides of polycrate_endpoint_host_config. Pure; every bad value becomes a
 * DiscoveryProblem and the field falls back to what it would be without the annotation, so one typo never stops
 * the discovery of a source.
 *
 * Decisions where the operator reference is silent:
 * - Values are trimmed; an empty (or blank) value counts as "not set" without a problem (`kubectl annotate k=` is how
 *   people clear a value). Booleans accept "true"/"false" in any letter case, nothing else ("yes", "1" are problems).
 * - Numbers are whole seconds written as digits only ("30", not "30s" or "0.5").
 * - timeout: 1..300 s (a health check that needs more than five minutes to answer is not a health check);
 *   interval: 1..86400 s (one day); port: 1..65535; status codes: 100..599.
 * - An expected-status list with one bad entry is rejected as a whole (falls back to [200]) rather than partly used,
 *   so a check never silently accepts codes nobody asked for. Empty entries ("200,") are tolerated; duplicates dropped.
 * - A path must start with "/" and contain no whitespace; a query string is allowed ("/health?full=1").
 * - polycrate_k8sapp_name must be a DNS-1123 subdomain (it names a K8sApp CR); otherwise a problem and no link.
 * - polycrate_k8sapp_byoa: "true" sets byoa, "false" leaves it out; byoa without a K8sApp name is a problem and ignored.
 */
import {
  annotationValue,
  annotations,
  deprecatedAnnotations,
  deprecatedEndpointMonitorAnnotations,
  deprecatedLabels,
} from '../../conventions.js'
import {discoveryProblemReasons, type EndpointDiscoverySettings, type ObjectMetaLike, type SourceRef} from './endpoint.types.js'
import type {DiscoveryProblem} from '../../discovery/types.js'

export const endpointCheckLimits = {
  timeout: {min: 1, max: 300},
  interval: {min: 1, max: 86_400},
  port: {min: 1, max: 65_535},
  statusCode: {min: 100, max: 599},
} as const

export const DEFAULT_TIMEOUT_SECONDS = 5
export const DEFAULT_PATH = '/'
export const DEFAULT_EXPECTED_STATUS_CODES: readonly number[] = [200]

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

export function problem(reason: string, message: string): DiscoveryProblem {
  return {reason, message}
}

const accepted = {
  path: 'a path starting with "/" and without spaces, e.g. "/healthz"',
  timeout: `a whole number of seconds from ${endpointCheckLimits.timeout.min} to ${endpointCheckLimits.timeout.max}, e.g. "10"`,
  interval: `a whole number of seconds from ${endpointCheckLimits.interval.min} to ${endpointCheckLimits.interval.max}, e.g. "60"`,
  expectedStatus: `an HTTP status code from ${endpointCheckLimits.statusCode.min} to ${endpointCheckLimits.statusCode.max} or a comma-separated list of them, e.g. "200" or "200,301"`,
  boolean: '"true" or "false"',
  port: `a port number from ${endpointCheckLimits.port.min} to ${endpointCheckLimits.port.max}, e.g. "8443"`,
  k8sAppName: 'a lower-case DNS-1123 name such as "my-app"',
} as const

// ---------------------------------------------------------------------------------------------------------------
// value parsers shared by the annotations and polycrate_endpoint_host_config

export function isValidPath(value: string): boolean {
  return value.startsWith('/') && !/\s/.test(value)
}

function parseWholeNumber(text: string, limits: {min: number; max: number}): number | undefined {
  if (!/^\d+$/.test(text)) return undefined
  const value = Number(text)
  return value >= limits.min && value <= limits.max ? value : undefined
}

function inRange(value: unknown, limits: {min: number; max: number}): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= limits.min && value <= limits.max
}

function parseBoolean(text: string): boolean | undefined {
  const lower = text.toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  return undefined
}

function parseStatusList(text: string): number[] | undefined {
  const codes: number[] = []
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue
    const code = parseWholeNumber(item, endpointCheckLimits.statusCode)
    if (code === undefined) return undefined
    if (!codes.includes(code)) codes.push(code)
  }
  return codes.length > 0 ? codes : undefined
}

// ---------------------------------------------------------------------------------------------------------------
// raw access

interface Entry {
  /** The key the value was read from: the canonical annotation or the deprecated alias that stood in for it. */
  key: string
  value: string
}

/** The trimmed value of `canonical` (or of its deprecated alias, via annotationValue); blank = not set. */
function entry(all: Readonly<Record<string, string>> | undefined, canonical: string): Entry | undefined {
  const raw = annotationValue(all, canonical)
  if (raw === undefined || raw.trim() === '') return undefined
  let key = canonical
  if (all?.[canonical] === undefined) {
    key = Object.entries(deprecatedAnnotations).find(([alias, target]) => target === canonical && all?.[alias] !== undefined)?.[0] ?? canonical
  }
  return {key, value: raw.trim()}
}

function rawEntry(map: Readonly<Record<string, string>> | undefined, key: string): Entry | undefined {
  const raw = map?.[key]
  return raw === undefined || raw.trim() === '' ? undefined : {key, value: raw.trim()}
}

function invalid(e: Entry, accepts: string, fallback: string): DiscoveryProblem {
  return problem(discoveryProblemReasons.invalidAnnotation, `${e.key} "${e.value}" is not valid: expected ${accepts}; ${fallback}.`)
}

// ---------------------------------------------------------------------------------------------------------------
// the monitor switch

export type MonitorChoice = 'opt-in' | 'opt-out' | 'unset'

/**
 * polycrate_endpoint_monitor; when it is absent (or invalid, which counts as absent) the deprecated pair:
 * `endpoints.polycrate.io/ignore: "true"` or `endpoints.polycrate.io/enabled: "false"` opt out (opt-out wins when the
 * two contradict), `endpoints.polycrate.io/enabled: "true"` opts in.
 */
export function readMonitorChoice(
  all: Readonly<Record<string, string>> | undefined,
  mode: EndpointDiscoverySettings['mode'],
): {choice: MonitorChoice; via?: string; problems: DiscoveryProblem[]} {
  const problems: DiscoveryProblem[] = []
  const notSet = mode === 'annotation'
    ? 'treated as not set, so this source is not monitored (endpoint_discovery.mode is annotation)'
    : 'treated as not set, so this source is monitored (endpoint_discovery.mode is auto)'
  const canonical = rawEntry(all, annotations.endpointMonitor)
  if (canonical) {
    const value = parseBoolean(canonical.value)
    if (value !== undefined) return {choice: value ? 'opt-in' : 'opt-out', via: `${canonical.key}: "${canonical.value}"`, problems}
    problems.push(invalid(canonical, '"true" (monitor this source) or "false" (never monitor it)', notSet))
  }
  const read = (key: string): {value?: boolean; via?: string} => {
    const e = rawEntry(all, key)
    if (!e) return {}
    const value = parseBoolean(e.value)
    if (value === undefined) problems.push(invalid(e, `${accepted.boolean} (deprecated; use ${annotations.endpointMonitor})`, 'ignored'))
    return {value, via: `${e.key}: "${e.value}" (deprecated)`}
  }
  const enabled = read(deprecatedEndpointMonitorAnnotations.enabled)
  const ignore = read(deprecatedEndpointMonitorAnnotations.ignore)
  if (ignore.value === true) return {choice: 'opt-out', via: ignore.via, problems}
  if (enabled.value === false) return {choice: 'opt-out', via: enabled.via, problems}
  if (enabled.value === true) return {choice: 'opt-in', via: enabled.via, problems}
  return {choice: 'unset', problems}
}

// ---------------------------------------------------------------------------------------------------------------
// source-wide settings

export interface SourceCheckSettings {
  /** Undefined when not set: the Ingress default is "/", an HTTPRoute derives it from its rules. */
  path?: string
  timeout: number
  interval: number
  expectedStatusCodes: number[]
  /** Undefined when not set: Ingress default on, HTTPRoute from the Gateway listener. */
  tls?: boolean
  /** Undefined when not set: 443 with TLS, 80 without; HTTPRoute from the Gateway listener. */
  port?: number
  expectedBody?: string
  k8sAppName?: string
  byoa?: boolean
  /** The deprecated label k8sapps.polycrate.io/name is present. */
  deprecatedLabelPresent: boolean
  problems: DiscoveryProblem[]
}

export function readSourceSettings(
  meta: ObjectMetaLike | undefined,
  kind: SourceRef['kind'],
  settings: EndpointDiscoverySettings,
): SourceCheckSettings {
  const all = meta?.annotations
  const problems: DiscoveryProblem[] = []
  const out: SourceCheckSettings = {
    timeout: DEFAULT_TIMEOUT_SECONDS,
    interval: settings.default_check_interval,
    expectedStatusCodes: [...DEFAULT_EXPECTED_STATUS_CODES],
    deprecatedLabelPresent: meta?.labels?.[deprecatedLabels.k8sAppName] !== undefined,
    problems,
  }
  const ingress = kind === 'Ingress'

  const path = entry(all, annotations.endpointPath)
  if (path) {
    if (isValidPath(path.value)) out.path = path.value
    else problems.push(invalid(path, accepted.path, ingress ? `using the default "${DEFAULT_PATH}"` : 'using the path of the first PathPrefix rule (or "/")'))
  }

  const timeout = entry(all, annotations.endpointTimeout)
  if (timeout) {
    const value = parseWholeNumber(timeout.value, endpointCheckLimits.timeout)
    if (value !== undefined) out.timeout = value
    else problems.push(invalid(timeout, accepted.timeout, `using the default ${DEFAULT_TIMEOUT_SECONDS}`))
  }

  const interval = entry(all, annotations.endpointInterval)
  if (interval) {
    const value = parseWholeNumber(interval.value, endpointCheckLimits.interval)
    if (value !== undefined) out.interval = value
    else problems.push(invalid(interval, accepted.interval, `using the default ${settings.default_check_interval} (endpoint_discovery.default_check_interval)`))
  }

  const status = entry(all, annotations.endpointExpectedStatus)
  if (status) {
    const value = parseStatusList(status.value)
    if (value !== undefined) out.expectedStatusCodes = value
    else problems.push(invalid(status, accepted.expectedStatus, `using the default ${DEFAULT_EXPECTED_STATUS_CODES.join(',')}`))
  }

  const tls = entry(all, annotations.endpointTls)
  if (tls) {
    const value = parseBoolean(tls.value)
    if (value !== undefined) out.tls = value
    else problems.push(invalid(tls, accepted.boolean, ingress ? 'using the default (TLS on)' : 'using the TLS setting of the Gateway listener'))
  }

  const port = entry(all, annotations.endpointPort)
  if (port) {
    const value = parseWholeNumber(port.value, endpointCheckLimits.port)
    if (value !== undefined) out.port = value
    else problems.push(invalid(port, accepted.port, ingress ? 'using the default (443 with TLS, 80 without)' : 'using the port of the Gateway listener'))
  }

  // Not trimmed: the text is searched for in the response body as written.
  const body = all?.[annotations.endpointExpectedBody]
  if (body !== undefined && body !== '') out.expectedBody = body

  const app = entry(all, annotations.k8sAppName)
    ?? (() => {
      const e = rawEntry(meta?.labels, deprecatedLabels.k8sAppName)
      return e ? {key: `label ${e.key}`, value: e.value} : undefined
    })()
  if (app) {
    if (app.value.length <= 253 && dns1123Subdomain.test(app.value)) out.k8sAppName = app.value
    else problems.push(invalid(app, accepted.k8sAppName, 'the endpoints are not linked to a K8sApp'))
  }

  const byoa = entry(all, annotations.k8sAppByoa)
  if (byoa) {
    const value = parseBoolean(byoa.value)
    if (value === undefined) {
      problems.push(invalid(byoa, accepted.boolean, 'the K8sApp is not marked as bring-your-own'))
    } else if (value && out.k8sAppName === undefined) {
      problems.push(problem(
        discoveryProblemReasons.byoaWithoutK8sApp,
        `${byoa.key} is "true" but no valid ${annotations.k8sAppName} is set: bring-your-own-App needs the name of the K8sApp `
          + `(e.g. ${annotations.k8sAppName}: "my-app"); the BYOA flag is ignored.`,
      ))
    } else if (value) {
      out.byoa = true
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// polycrate_endpoint_host_config

export interface HostOverrides {
  path?: string
  expectedStatusCodes?: number[]
  timeout?: number
  interval?: number
  tls?: boolean
  port?: number
}

const hostConfigExample = '{"api.example.com": {"path": "/healthz", "expected_status": [200], "timeout": 10}}'
const hostConfigFields = ['path', 'expected_status', 'timeout', 'interval', 'tls', 'port'] as const

function describeJson(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `"${value}" (a string)`
  if (typeof value === 'object') return 'an object'
  return `${String(value)} (a ${typeof value})`
}

/**
 * Parses polycrate_endpoint_host_config. Keys are matched case-insensitively (DNS names are). `hostsOnSource` are the
 * source's hosts, lower-cased (wildcards included, so an entry for a wildcard host is not reported as a typo).
 * Broken JSON or a non-object: one problem, no overrides at all. A bad entry or field: a problem, only it is ignored.
 * Unknown field names are reported (usually a typo such as "expected_statuses") and ignored.
 */
export function readHostConfig(
  all: Readonly<Record<string, string>> | undefined,
  hostsOnSource: readonly string[],
): {overrides: Map<string, HostOverrides>; problems: DiscoveryProblem[]} {
  const overrides = new Map<string, HostOverrides>()
  const problems: DiscoveryProblem[] = []
  const key = annotations.endpointHostConfig
  const text = all?.[key]
  if (text === undefined || text.trim() === '') return {overrides, problems}
  const malformed = (message: string) => problems.push(problem(discoveryProblemReasons.malformedHostConfig, message))

  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    malformed(`${key} is not valid JSON (${(error as Error).message}): expected an object that maps host names to settings, `
      + `e.g. ${hostConfigExample}. The per-host overrides are ignored; every host uses the source-wide values.`)
    return {overrides, problems}
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    malformed(`${key} is ${describeJson(parsed)}, not a JSON object: expected an object that maps host names to settings, `
      + `e.g. ${hostConfigExample}. The per-host overrides are ignored; every host uses the source-wide values.`)
    return {overrides, problems}
  }

  const known = new Set(hostsOnSource.map((h) => h.toLowerCase()))
  for (const [rawHost, config] of Object.entries(parsed as Record<string, unknown>)) {
    const host = rawHost.trim().toLowerCase()
    const at = `${key}["${rawHost}"]`
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
      malformed(`${at} is ${describeJson(config)}: expected an object with some of the fields ${hostConfigFields.join(', ')}, `
        + `e.g. {"path": "/healthz"}; the entry is ignored.`)
      continue
    }
    if (!known.has(host)) {
      problems.push(problem(
        discoveryProblemReasons.unknownHostInHostConfig,
        `${at}: this source has no host "${rawHost}" (its hosts: ${[...known].join(', ') || 'none'}); the entry is ignored. Is it a typo?`,
      ))
      continue
    }
    const fields = config as Record<string, unknown>
    const result: HostOverrides = {}
    const wrong = (field: string, accepts: string) =>
      malformed(`${at}.${field} is ${describeJson(fields[field])}: expected ${accepts}; the field is ignored and the host uses the source-wide value.`)
    for (const [field, value] of Object.entries(fields)) {
      switch (field) {
        case 'path':
          if (typeof value === 'string' && isValidPath(value)) result.path = value
          else wrong(field, `a string starting with "/", e.g. "/healthz"`)
          break
        case 'expected_status': {
          // A bare number is accepted as a one-element list.
          const list = typeof value === 'number' ? [value] : value
          if (Array.isArray(list) && list.length > 0 && list.every((code) => inRange(code, endpointCheckLimits.statusCode))) {
            result.expectedStatusCodes = [...new Set(list as number[])]
          } else {
            wrong(field, `a non-empty array of HTTP status codes (${endpointCheckLimits.statusCode.min}–${endpointCheckLimits.statusCode.max}), e.g. [200, 301]`)
          }
          break
        }
        case 'timeout':
        case 'interval':
        case 'port': {
          const limits = endpointCheckLimits[field]
          if (inRange(value, limits)) result[field] = value
          else wrong(field, `a whole JSON number from ${limits.min} to ${limits.max}`)
          break
        }
        case 'tls':
          if (typeof value === 'boolean') result.tls = value
          else wrong(field, 'true or false (a JSON boolean, not a string)')
          break
        default:
          malformed(`${at} has the unknown field "${field}" (known: ${hostConfigFields.join(', ')}); it is ignored.`)
      }
    }
    overrides.set(host, {...overrides.get(host), ...result})
  }
  return {overrides, problems}
}
