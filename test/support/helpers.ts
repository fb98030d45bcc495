/**
 * Small helpers the test files used to copy: hashes, object refs, the result checks of the discovery mappers,
 * a validated agent config, and the one pair of waits, `eventually` and `never`.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {validateOperatorConfig} from '../../src/operator/config/operator-config.js'
import type {AgentConfig} from '../../src/operator/monitoring/plan.js'

/** The first 8 hex digits of the SHA-256 of `text` (the suffix the mappers put on long names). */
export const sha8 = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 8)

/** The OperatorConfig `name` (default: `default`) in `namespace`. */
export const configRef = (namespace: string, name = 'default') => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name})

/** Ingresses of `namespace`, or the one named `name`. */
export const ingressRef = (namespace: string, name?: string) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace, name})

/** The agent section of a validated OperatorConfig spec; `enabled: true` unless `agent` sets it (`{enabled: undefined}`: the default). */
export function agentConfig(agent: Record<string, unknown> = {}): AgentConfig {
  const validation = validateOperatorConfig({agent: {enabled: true, ...agent}})
  if (!validation.ok) throw new Error(validation.problems.join('; '))
  return validation.config.agent
}

/** How often the waits ask: first at once, then after 5 ms, doubling up to 200 ms (quick in unit tests, light on an apiserver). */
const pollDelays = function* () {
  for (let ms = 5; ; ms = Math.min(200, ms * 2)) yield ms
}

/**
 * Asks `check` until it returns a value (not undefined or false) and resolves with it; an error it throws counts as
 * "not yet" (the last one is in the timeout's message). After `timeoutMs` it fails with `what`. The one wait for a
 * positive signal in the tests: a status, an Event, a request the simulator saw, a counter.
 */
export async function eventually<T>(check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (const ms of pollDelays()) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline) break
    await new Promise((resolve) => setTimeout(resolve, ms))
  }
  throw new Error(`${what} not reached within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`)
}

/**
 * Asserts that something does not happen, without sleeping: `happened` is asked while waiting (as eventually does)
 * for `settled`, a positive sign that it would have happened by then (a later reconcile, an Event, a request served
 * after it), and once more after that sign. Fails as soon as `happened` holds, or when the sign does not come within
 * `timeoutMs`. On fake time, move the clock past the moment instead and assert directly.
 */
export async function never(happened: () => unknown, settled: () => unknown, what = 'it', timeoutMs = 30_000): Promise<void> {
  let seen = false
  await eventually(async () => {
    if (await happened()) seen = true
    return seen || Boolean(await settled())
  }, timeoutMs, `the sign that ${what} would have happened by now`)
  assert.ok(!seen && !(await happened()), `${what} happened`)
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** What every mapped CR spec must be: unchanged by its CRD schema, plain JSON, no undefined keys. */
export function checkedSpec<T>(schema: {parse(value: unknown): unknown}, spec: T): T {
  assert.deepEqual(schema.parse(spec), spec, 'the spec passes the CRD schema without change')
  assert.deepEqual(JSON.parse(JSON.stringify(spec)), spec, 'no undefined keys, plain JSON')
  assert.ok(Object.values(spec as object).every((v) => v !== undefined), 'no undefined keys')
  return spec
}

/** A CR name the apiserver takes (a DNS subdomain). */
export function checkedName(name: string): string {
  assert.ok(name.length <= 253 && DNS_SUBDOMAIN.test(name), `name ${name}`)
  return name
}

/** Label values the apiserver takes. */
export function checkedLabels(labels: Record<string, string>): Record<string, string> {
  for (const value of Object.values(labels)) assert.ok(value.length <= 63 && LABEL_VALUE.test(value), `label value ${value}`)
  return labels
}

/** Discovery problems carry a CamelCase reason (and, with `messages`, a message that says something). */
export function checkedProblems(problems: ReadonlyArray<{reason: string; message: string}>, options: {messages?: boolean} = {}): void {
  for (const p of problems) {
    assert.match(p.reason, /^[A-Z][A-Za-z0-9]+$/, `reason ${p.reason} is CamelCase`)
    if (options.messages) assert.ok(p.message.length > 20, `message "${p.message}" says something`)
  }
}

/** An API slug (lowercase words joined by single dashes), at most `max` characters. */
export function checkedSlug(name: string | undefined, max = 63): string {
  assert.match(name ?? '', /^[a-z0-9]+(?:-[a-z0-9]+)*$/, `slug ${name}`)
  assert.ok((name ?? '').length <= max, `slug ${name} is at most ${max} characters`)
  return name!
}

/** A DNS label (RFC 1123): lowercase alphanumerics and dashes, at most 63 characters. */
export function checkedDnsLabel(name: string | undefined): string {
  assert.ok(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name ?? '') && (name ?? '').length <= 63, `DNS label ${name}`)
  return name!
}
