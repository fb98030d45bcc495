/**
 * What to check for one assigned endpoint (pure): the API's AgentEndpoint with its typed `spec`, completed
 * with the agent's defaults (block README "Endpoint Monitoring Agent" / "HTTP Check Defaults"). The spec is read
 * raw, not through the client's schema, because the schema fills in the contract's defaults and a field the API
 * left out must take the agent's default instead (`timeout` 10 s, `max_redirects` 5, the agent's user agent).
 */
import {z} from 'zod'
import type {OperatorConfig} from '../config/operator-config.js'
import {annotations as annotationKeys} from '../conventions.js'

/** An item of `GET /api/v1/agent/endpoints/`, with `spec` left as the API sent it. */
export const rawAgentEndpoint = z.looseObject({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['icmp', 'http', 'tcp', 'dns']),
  remote_address: z.string(),
  remote_port: z.number().int().nullable().optional(),
  organization: z.looseObject({}).nullable().optional(),
  spec: z.unknown().optional(),
  annotations: z.unknown().optional(),
})
export type RawAgentEndpoint = z.infer<typeof rawAgentEndpoint>

export type AgentConfig = OperatorConfig['agent']

export interface HttpPlan {
  kind: 'http'
  scheme: 'http' | 'https'
  host: string
  port: number
  path: string
  method: string
  ignoreTlsErrors: boolean
  timeoutMs: number
  followRedirects: boolean
  maxRedirects: number
  userAgent: string
  referer?: string
  expectedStatusCode: number
  acceptedStatusCodes: number[]
  badStatusCodes: number[]
  expectedBody?: string
}

export interface TcpPlan {
  kind: 'tcp'
  host: string
  port: number
  tls: boolean
  ignoreTlsErrors: boolean
  timeoutMs: number
  sendString: string
  expectedResponse: string
}

export interface DnsPlan {
  kind: 'dns'
  server: string
  port: number
  name: string
  recordType: string
  protocol: 'udp' | 'tcp'
  timeoutMs: number
  expectedResults: string[]
  expectedRcode: string
}

export interface IcmpPlan {
  kind: 'icmp'
  host: string
  count: number
  ttl: number
  timeoutMs: number
  intervalSeconds: number
  enabled: boolean
}

/** A spec the agent cannot check: reported as a `configuration` error, the agent goes on. */
export interface InvalidPlan {
  kind: 'invalid'
  endpointKind: string
  message: string
}

export type CheckSettings = HttpPlan | TcpPlan | DnsPlan | IcmpPlan | InvalidPlan

export interface CheckPlan {
  endpointId: string
  name: string
  organization: string
  intervalMs: number
  settings: CheckSettings
}

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const DNS_TYPES = new Set(['A', 'AAAA', 'CNAME', 'MX', 'NS', 'PTR', 'SOA', 'SRV', 'TXT', 'CAA'])

type Fields = Record<string, unknown>
const fields = (value: unknown): Fields => (value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Fields : {})
const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined)
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)
const bool = (value: unknown): boolean | undefined => (typeof value === 'boolean' ? value : undefined)
const ints = (value: unknown): number[] => (Array.isArray(value) ? value.filter((v): v is number => Number.isInteger(v)) : [])

/** The organization label: the AgentEndpoint's organization name (or id), '' when it has none. */
function organizationOf(endpoint: RawAgentEndpoint): string {
  const org = fields(endpoint.organization)
  return str(org.name) ?? str(org.slug) ?? str(org.id) ?? ''
}

/** The whole plan of one endpoint; `interval` comes from the kind's spec, else `agent.check_interval_seconds`. */
export function checkPlan(endpoint: RawAgentEndpoint, agent: AgentConfig): CheckPlan {
  const spec = fields(endpoint.spec)
  const kindSpec = fields(spec[endpoint.kind])
  const interval = endpoint.kind === 'icmp' ? undefined : num(kindSpec.interval)
  const intervalSeconds = interval !== undefined && interval > 0 ? interval : agent.check_interval_seconds
  return {
    endpointId: endpoint.id,
    name: endpoint.name,
    organization: organizationOf(endpoint),
    intervalMs: Math.round(intervalSeconds * 1000),
    settings: checkSettings(endpoint, kindSpec, agent),
  }
}

function invalid(endpoint: RawAgentEndpoint, message: string): InvalidPlan {
  return {kind: 'invalid', endpointKind: endpoint.kind, message}
}

function port(endpoint: RawAgentEndpoint, fallback: number): number | undefined {
  const value = endpoint.remote_port ?? fallback
  return Number.isInteger(value) && value > 0 && value < 65536 ? value : undefined
}

function checkSettings(endpoint: RawAgentEndpoint, spec: Fields, agent: AgentConfig): CheckSettings {
  const host = endpoint.remote_address.trim()
  if (!host) return invalid(endpoint, 'The endpoint has no remote_address.')
  switch (endpoint.kind) {
    case 'http': {
      const defaults = agent.http_check_defaults
      const tls = bool(spec.tls) ?? false
      const p = port(endpoint, tls ? 443 : 80)
      if (p === undefined) return invalid(endpoint, `remote_port ${String(endpoint.remote_port)} is not a TCP port.`)
      const method = (str(spec.method) ?? 'GET').toUpperCase()
      if (!HTTP_METHODS.has(method)) return invalid(endpoint, `HTTP method "${method}" is not supported.`)
      const rawPath = str(spec.path) ?? '/'
      const timeout = num(spec.timeout) ?? defaults.timeout_seconds
      if (timeout <= 0) return invalid(endpoint, `HTTP timeout ${timeout} must be positive.`)
      const expectedBody = str(spec.expected_body) ?? str(fields(endpoint.annotations)[annotationKeys.endpointExpectedBody])
      return {
        kind: 'http',
        scheme: tls ? 'https' : 'http',
        host,
        port: p,
        path: rawPath.startsWith('/') ? rawPath : `/${rawPath}`,
        method,
        ignoreTlsErrors: bool(spec.ignore_tls_errors) ?? false,
        timeoutMs: Math.round(timeout * 1000),
        followRedirects: bool(spec.follow_redirect) ?? defaults.follow_redirects,
        maxRedirects: num(spec.max_redirects) ?? defaults.max_redirects,
        userAgent: str(spec.user_agent) || defaults.user_agent,
        ...(str(spec.referer) ? {referer: str(spec.referer)} : {}),
        expectedStatusCode: num(spec.expected_status_code) ?? 200,
        acceptedStatusCodes: ints(spec.accepted_status_codes),
        badStatusCodes: ints(spec.bad_status_codes),
        ...(expectedBody ? {expectedBody} : {}),
      }
    }
    case 'tcp': {
      const p = port(endpoint, 0)
      if (p === undefined) return invalid(endpoint, 'A TCP endpoint needs a remote_port.')
      return {
        kind: 'tcp',
        host,
        port: p,
        tls: bool(spec.tls) ?? false,
        ignoreTlsErrors: bool(spec.ignore_tls_errors) ?? false,
        timeoutMs: Math.round((num(spec.timeout) ?? 10) * 1000),
        sendString: str(spec.send_string) ?? '',
        expectedResponse: str(spec.expected_response) ?? '',
      }
    }
    case 'dns': {
      const p = port(endpoint, 53)
      if (p === undefined) return invalid(endpoint, `remote_port ${String(endpoint.remote_port)} is not a port.`)
      const recordType = (str(spec.record_type) || 'A').toUpperCase()
      if (!DNS_TYPES.has(recordType)) return invalid(endpoint, `DNS record type "${recordType}" is not supported.`)
      const protocol = str(spec.protocol) ?? 'udp'
      if (protocol !== 'udp' && protocol !== 'tcp') return invalid(endpoint, `DNS protocol "${protocol}" is not supported (udp or tcp).`)
      if (bool(spec.tls_enabled)) return invalid(endpoint, 'DNS over TLS is not supported by the operator agent.')
      return {
        kind: 'dns',
        server: host,
        port: p,
        name: str(spec.record_name) || host,
        recordType,
        protocol,
        timeoutMs: Math.round((num(spec.timeout) ?? 10) * 1000),
        expectedResults: Array.isArray(spec.expected_results) ? spec.expected_results.filter((v): v is string => typeof v === 'string') : [],
        expectedRcode: (str(spec.expected_rcode) ?? '').toUpperCase(),
      }
    }
    case 'icmp':
      return {
        kind: 'icmp',
        host,
        count: 3,
        ttl: num(spec.ttl) ?? 255,
        timeoutMs: Math.round((num(spec.timeout) ?? 1) * 1000),
        intervalSeconds: Math.max(0.2, num(spec.interval) ?? 1),
        enabled: agent.icmp_enabled,
      }
  }
}

/** HTTP status verdict: bad codes fail; a non-empty accepted list decides; else the expected code. */
export function statusAccepted(plan: Pick<HttpPlan, 'expectedStatusCode' | 'acceptedStatusCodes' | 'badStatusCodes'>, status: number): boolean {
  if (plan.badStatusCodes.includes(status)) return false
  if (plan.acceptedStatusCodes.length > 0) return plan.acceptedStatusCodes.includes(status)
  return status === plan.expectedStatusCode
}
