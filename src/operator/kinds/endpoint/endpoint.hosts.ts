/**
 * Host names of a source → the hosts that get an Endpoint, and the Endpoint CR name of a host.
 *
 * Decisions where the operator reference is silent:
 * - Hosts are lower-cased (DNS is case-insensitive; the API server only admits lower-case hosts anyway), and the same
 *   host twice on one source gives one Endpoint (first occurrence decides the order).
 * - A host must be a DNS-1123 subdomain (≤ 253 characters, labels ≤ 63): no port, no trailing dot, no underscore.
 * - A rule without `host` (a catch-all rule) is silently skipped; a host that is present but blank (only possible in
 *   objects that did not come from the API server, which drops empty strings) is reported as EmptyHost.
 */
import {createHash} from 'node:crypto'
import {problem} from './endpoint.annotations.js'
import {discoveryProblemReasons} from './endpoint.types.js'
import type {DiscoveryProblem} from '../../discovery/types.js'

const MAX_NAME_LENGTH = 253
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

export function isValidHostName(host: string): boolean {
  if (host.length === 0 || host.length > MAX_NAME_LENGTH) return false
  return host.split('.').every((label) => label.length <= 63 && dns1123Label.test(label))
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8)
}

/**
 * The Endpoint CR name of a host: lower-cased, dots → dashes (`app.example.com` → `app-example-com`). Always a valid
 * DNS-1123 subdomain of at most 253 characters: anything that would not be one (only possible for hosts that did not
 * pass `isValidHostName`) is sanitized, truncated and given a hash suffix of the original host.
 */
export function endpointName(host: string): string {
  const lower = host.toLowerCase()
  const plain = lower.replace(/\./g, '-')
  if (plain.length <= MAX_NAME_LENGTH && dns1123Label.test(plain)) return plain
  return withHashSuffix(plain.replace(/[^a-z0-9-]/g, '-'), lower)
}

/**
 * The name used when two different hosts map to the same name in one namespace (`a-b.example.com` and
 * `a.b-example.com` both give `a-b-example-com`): the name plus `-` and 8 hex digits of the host's SHA-256.
 */
export function endpointNameWithHash(host: string): string {
  return withHashSuffix(endpointName(host), host.toLowerCase())
}

function withHashSuffix(base: string, hashed: string): string {
  const suffix = shortHash(hashed)
  const head = base.slice(0, MAX_NAME_LENGTH - suffix.length - 1).replace(/^[^a-z0-9]+/, '').replace(/[^a-z0-9]+$/, '')
  return head ? `${head}-${suffix}` : suffix
}

/** The host fields of a source as written: an Ingress's `spec.rules[].host`, an HTTPRoute's `spec.hostnames`. */
export function rawHostsOf(kind: 'Ingress' | 'HTTPRoute', object: object): Array<string | undefined> {
  const spec = (object as {spec?: {rules?: ReadonlyArray<{host?: string}>; hostnames?: readonly string[]}}).spec
  return kind === 'Ingress' ? (spec?.rules ?? []).map((rule) => rule.host) : [...(spec?.hostnames ?? [])]
}

export type HostVerdict =
  | {kind: 'host'; host: string}
  | {kind: 'skip'}
  | {kind: 'problem'; host?: string; problem: DiscoveryProblem}

/** `where` names the field for the message, e.g. `spec.rules[2].host`. */
export function classifyHost(raw: string | undefined, where: string): HostVerdict {
  if (raw === undefined || raw === null) return {kind: 'skip'}
  const host = raw.trim().toLowerCase()
  if (host === '') {
    return {kind: 'problem', problem: problem(
      discoveryProblemReasons.emptyHost,
      `${where} is empty: there is no host to monitor. Set a host name such as "app.example.com" (or leave the field out for a catch-all rule, which is not monitored).`,
    )}
  }
  if (host.startsWith('*.')) {
    return {kind: 'problem', host, problem: problem(
      discoveryProblemReasons.wildcardHost,
      `${where} "${raw}" is a wildcard host: there is no concrete host to check, so no Endpoint is created for it. `
        + `Add a rule (or hostname) for each concrete host you want monitored, e.g. "${host.slice(2) ? `www.${host.slice(2)}` : 'www.example.com'}".`,
    )}
  }
  if (!isValidHostName(host)) {
    return {kind: 'problem', host, problem: problem(
      discoveryProblemReasons.invalidHost,
      `${where} "${raw}" is not a valid host name: expected a DNS name of letters, digits, "-" and "." (at most 253 characters, `
        + `63 per label, no port, no trailing dot), e.g. "app.example.com"; no Endpoint is created for it.`,
    )}
  }
  return {kind: 'host', host}
}

/**
 * Classifies every host of a source in order. `hosts` are the concrete, distinct hosts; `all` also holds the wildcard
 * and invalid ones (lower-cased) so polycrate_endpoint_host_config entries for them are not reported as typos.
 */
export function collectHosts(raw: ReadonlyArray<{value: string | undefined; where: string}>): {
  hosts: string[]
  all: string[]
  problems: DiscoveryProblem[]
} {
  const hosts: string[] = []
  const all: string[] = []
  const problems: DiscoveryProblem[] = []
  for (const {value, where} of raw) {
    const verdict = classifyHost(value, where)
    if (verdict.kind === 'skip') continue
    if (verdict.kind === 'problem') {
      if (verdict.host !== undefined) {
        if (all.includes(verdict.host)) continue
        all.push(verdict.host)
      }
      problems.push(verdict.problem)
      continue
    }
    if (hosts.includes(verdict.host)) continue
    hosts.push(verdict.host)
    all.push(verdict.host)
  }
  return {hosts, all, problems}
}
