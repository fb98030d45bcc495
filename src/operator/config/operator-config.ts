/**
 * OperatorConfig: validation with a message that names the field, the namespace filter the operator reference defines, and the
 * status the OperatorConfig controller writes. Everything here is pure.
 */
import {isDeepStrictEqual} from 'node:util'
import type {z} from 'zod'
import {operatorConfigSpec, type OperatorConfigSpec, type OperatorConfigStatus} from '../../crds/operatorconfig.js'
import {conditionTypes} from '../conventions.js'
import {setStatusCondition} from '../../kube/conditions.js'
import {FAILED_PREFIX, FORBIDDEN_PREFIX, type ControllerState} from '../runtime/feature-state.js'
import {readiness, type ConfigState} from './readiness.js'

export type OperatorConfig = OperatorConfigSpec

export type ValidationResult = {ok: true; config: OperatorConfig} | {ok: false; problems: string[]}

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const labelSelectorTerm = /^\s*!?[A-Za-z0-9./_-]+\s*((=|==|!=)\s*[A-Za-z0-9._-]*\s*|\s+(in|notin)\s*\(\s*[A-Za-z0-9._-]*(\s*,\s*[A-Za-z0-9._-]*)*\s*\)\s*)?$/

/** Parses and checks an OperatorConfig spec. Problems are `spec.<path>: <what is wrong>`. */
export function validateOperatorConfig(spec: unknown): ValidationResult {
  const parsed = operatorConfigSpec.safeParse(spec ?? {})
  if (!parsed.success) return {ok: false, problems: parsed.error.issues.map(describeIssue)}
  const config = parsed.data
  const problems: string[] = []

  if (config.api_sync.enabled) {
    if (!config.api_sync.api_url) problems.push('spec.api_sync.api_url: must be set when api_sync.enabled is true')
    else if (!isHttpUrl(config.api_sync.api_url)) problems.push(`spec.api_sync.api_url: "${config.api_sync.api_url}" is not an http(s) URL`)
  }
  const namespaceLists: Array<[string, string[]]> = []
  for (const section of ['endpoint_discovery', 'app_discovery', 'certificate_discovery', 'artifact_discovery'] as const) {
    const value = config[section] as {watch_namespaces?: string[]; ignore_namespaces?: string[]}
    namespaceLists.push([`${section}.watch_namespaces`, value.watch_namespaces ?? []], [`${section}.ignore_namespaces`, value.ignore_namespaces ?? []])
  }
  namespaceLists.push(['backup_discovery.ignore_namespaces', config.backup_discovery.ignore_namespaces])
  for (const [path, list] of namespaceLists) {
    list.forEach((name, index) => {
      if (!dns1123Label.test(name) || name.length > 63) problems.push(`spec.${path}[${index}]: "${name}" is not a valid namespace name`)
    })
  }
  for (const [path, selector] of [
    ['node_discovery.label_selector', config.node_discovery.label_selector],
    ['artifact_discovery.pod_label_selector', config.artifact_discovery.pod_label_selector],
  ] as const) {
    if (selector && !isLabelSelector(selector)) problems.push(`spec.${path}: "${selector}" is not a valid label selector`)
  }
  return problems.length > 0 ? {ok: false, problems} : {ok: true, config}
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = ['spec', ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))].join('.').replace(/\.\[/g, '[')
  return `${path}: ${issue.message}`
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

/** Kubernetes label-selector syntax: comma-separated `key`, `!key`, `key=v`, `key!=v`, `key in (a,b)`. */
export function isLabelSelector(selector: string): boolean {
  const terms: string[] = []
  let depth = 0
  let current = ''
  for (const char of selector) {
    if (char === '(') depth++
    if (char === ')') depth--
    if (depth < 0) return false
    if (char === ',' && depth === 0) {
      terms.push(current)
      current = ''
    } else {
      current += char
    }
  }
  if (depth !== 0) return false
  terms.push(current)
  return terms.every((term) => labelSelectorTerm.test(term))
}

/**
 * The token Secret to read. `credentials` is the block README's spelling; since `credentials_ref` is always
 * defaulted, the alias is used when it is set and `credentials_ref` was left at its defaults.
 */
export function credentialsSecret(config: OperatorConfig): {secret_name: string; token_key: string} {
  const ref = config.api_sync.credentials_ref
  const alias = config.api_sync.credentials
  const refIsDefault = ref.secret_name === 'polycrate-api-token' && ref.token_key === 'token'
  if (alias && refIsDefault) {
    return {secret_name: alias.secret_name ?? ref.secret_name, token_key: alias.token_key ?? ref.token_key}
  }
  return ref
}

/** The part of the OperatorConfig status the OperatorConfig controller owns (it applies it server-side). */
export type OwnStatus = Pick<OperatorConfigStatus, 'phase' | 'message' | 'observed_generation' | 'controllers' | 'conditions'>

const ownConditionTypes: readonly string[] = [conditionTypes.valid, conditionTypes.ready]

/** The configuration's state for readiness() from a validation outcome and what stays in force (pure). */
export function configState(validation: ValidationResult, inForce?: {lastValidGeneration: number | undefined} | {apiSyncOnly: boolean}): ConfigState {
  if (validation.ok) return {kind: 'valid'}
  if (inForce && 'lastValidGeneration' in inForce) return {kind: 'last-valid', problems: validation.problems, lastValidGeneration: inForce.lastValidGeneration}
  return {kind: 'never-valid', problems: validation.problems, apiSyncOnly: Boolean(inForce && 'apiSyncOnly' in inForce && inForce.apiSyncOnly)}
}

/** The features reported as started but not running (reason `Failed: …`), for readiness() (pure). */
export function failedControllers(controllers: readonly ControllerState[]): Array<{name: string; problem: string}> {
  return controllers.filter((c) => c.reason?.startsWith(FAILED_PREFIX)).map((c) => ({name: c.name, problem: c.reason!.slice(FAILED_PREFIX.length)}))
}

/** The features enabled but not started because the RBAC lacks their rules (reason `Forbidden: …`), for readiness() (pure). */
export function forbiddenControllers(controllers: readonly ControllerState[]): Array<{name: string; reason: string}> {
  return controllers.filter((c) => c.reason?.startsWith(FORBIDDEN_PREFIX)).map((c) => ({name: c.name, reason: c.reason!}))
}

/**
 * The status for a validation outcome and the state of the feature controllers (pure): phase, message and the Ready
 * condition come from readiness(), the same function /readyz answers with.
 */
export function operatorConfigStatus(
  previous: OperatorConfigStatus | undefined,
  generation: number | undefined,
  validation: ValidationResult,
  controllers: readonly ControllerState[],
  now: string,
  /** The operator's own CRDs enabled features need and do not find → those features (FeatureSet.missingOwnCrds). */
  missingOwnCrds: ReadonlyMap<string, readonly string[]> = new Map(),
  /** What runs while the spec is invalid: the last valid configuration (its generation), or API sync alone / nothing. */
  inForce?: {lastValidGeneration: number | undefined} | {apiSyncOnly: boolean},
): OwnStatus {
  let conditions = (previous?.conditions ?? []).filter((c) => ownConditionTypes.includes(c.type))
  const base = {observed_generation: generation, controllers: [...controllers]}
  const state = configState(validation, inForce)
  const verdict = readiness({config: state, missingOwnCrds, failed: failedControllers(controllers), forbidden: forbiddenControllers(controllers), running: controllers.filter((c) => c.running).map((c) => c.name)})
  conditions = state.kind === 'valid'
    ? setStatusCondition(conditions, {type: conditionTypes.valid, status: 'True', reason: 'Valid', message: 'The spec is valid.', observedGeneration: generation}, now)
    : setStatusCondition(conditions, {type: conditionTypes.valid, status: 'False', reason: 'InvalidSpec', message: verdict.invalidMessage!, observedGeneration: generation}, now)
  conditions = setStatusCondition(conditions, {type: conditionTypes.ready, status: verdict.ready ? 'True' : 'False', reason: verdict.reason, message: verdict.message, observedGeneration: generation}, now)
  return {...base, phase: verdict.phase, ...(verdict.statusMessage ? {message: verdict.statusMessage} : {}), conditions}
}

/**
 * The status of an OperatorConfig the operator does not read (another name than `default`, or another namespace
 * than the operator's): phase Ignored and a Ready=False condition saying why and where the settings belong (pure).
 */
export function ignoredOperatorConfigStatus(
  previous: OperatorConfigStatus | undefined,
  object: {name: string; namespace: string; generation?: number},
  operator: {name: string; namespace: string},
  now: string,
): OwnStatus {
  const why = object.namespace !== operator.namespace
    ? `the operator reads its OperatorConfig from its own namespace ${operator.namespace}, not ${object.namespace}`
    : `only the OperatorConfig named "${operator.name}" is read, not "${object.name}"`
  const message = `Ignored: ${why}. This object has no effect; move its settings to OperatorConfig ${operator.namespace}/${operator.name}.`
  const conditions = setStatusCondition((previous?.conditions ?? []).filter((c) => ownConditionTypes.includes(c.type) && c.type !== conditionTypes.valid), {
    type: conditionTypes.ready, status: 'False', reason: 'Ignored', message, observedGeneration: object.generation,
  }, now)
  return {phase: 'Ignored', message, observed_generation: object.generation, controllers: [], conditions}
}

/** Whether applying `next` would change the fields it owns in `current`. */
export function statusChanged(current: OperatorConfigStatus | undefined, next: OwnStatus): boolean {
  const mine = {
    phase: current?.phase,
    message: current?.message,
    observed_generation: current?.observed_generation,
    controllers: current?.controllers,
    conditions: (current?.conditions ?? []).filter((c) => ownConditionTypes.includes(c.type)),
  }
  return !isDeepStrictEqual(stripUndefined(mine), stripUndefined({message: undefined, ...next}))
}

function stripUndefined<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T
}
