/**
 * One truth for "is the operator ready": the OperatorConfig's Ready condition and phase, `/readyz` (and so `health`),
 * and the `status` table all derive from `readiness()`, a pure function of the configuration's state, the operator's
 * own CRDs that enabled features miss, the features that were started but could not run and those the RBAC does not
 * allow (Forbidden). A failed or forbidden feature makes every one of them say so, whatever else holds (an invalid change with the last valid configuration in force does not
 * hide it).
 */

import {INSTALL_CRDS_HINT} from '../runtime/feature-state.js'

/** Where the configuration stands (what the OperatorConfig controller decided). */
export type ConfigState =
  | {kind: 'valid'}
  /** An invalid change: the last valid configuration stays in force. */
  | {kind: 'last-valid'; problems: readonly string[]; lastValidGeneration?: number}
  /** Invalid since the process started: discovery paused (API sync alone when its section is valid). */
  | {kind: 'never-valid'; problems: readonly string[]; apiSyncOnly: boolean}

export interface ReadinessInput {
  /** undefined: not decided yet (the first reconcile has not run); counts as no problem of its own. */
  config: ConfigState | undefined
  /** The operator's own CRDs enabled features need and do not find → those features. */
  missingOwnCrds: ReadonlyMap<string, readonly string[]>
  /** Features that were started but could not run (a port in use), with why. */
  failed: ReadonlyArray<{name: string; problem: string}>
  /** Features enabled but not started because the operator's RBAC lacks their rules, with their `Forbidden: …` reason. */
  forbidden: ReadonlyArray<{name: string; reason: string}>
  /** The features that run (for the Ready message). */
  running: readonly string[]
}

export interface CheckStatus {
  ok: boolean
  message?: string
}

export interface Readiness {
  ready: boolean
  phase: 'Ready' | 'Degraded' | 'Error'
  /** The Ready condition's reason and message. */
  reason: 'ControllersRunning' | 'LastValidConfigInForce' | 'DiscoveryPaused' | 'CRDsMissing' | 'FeatureFailed' | 'FeatureForbidden'
  message: string
  /** The status message (phase line); absent when ready with the spec in force. */
  statusMessage?: string
  /** Why the spec is not the one in force (the Valid condition's message); absent when it is valid. */
  invalidMessage?: string
  /** /readyz's named checks: `ready` is true exactly when every one is ok. */
  checks: {config: CheckStatus; crds: CheckStatus; features: CheckStatus}
}

/** The operator's readiness (pure). */
export function readiness(input: ReadinessInput): Readiness {
  const {config} = input
  const configCheck: CheckStatus = config?.kind === 'never-valid'
    ? {ok: false, message: `the OperatorConfig is invalid and no valid one was read since the start: ${config.problems.join('; ')}`}
    : {ok: true, ...(config?.kind === 'last-valid' ? {message: 'an invalid change is not applied; the last valid configuration is in force'} : {})}
  const missing = [...input.missingOwnCrds].map(([crd, features]) => `${crd} (needed by ${features.join(', ')})`)
  const crdsCheck: CheckStatus = missing.length === 0 ? {ok: true} : {ok: false, message: `missing CRDs: ${missing.join('; ')}; ${INSTALL_CRDS_HINT}`}
  const notRunning = [...input.failed.map(({name, problem}) => ({name, why: problem})), ...input.forbidden.map(({name, reason}) => ({name, why: reason}))]
  const featuresCheck: CheckStatus = notRunning.length === 0 ? {ok: true} : {ok: false, message: notRunning.map(({name, why}) => `${name}: ${why}`).join('; ')}
  const checks = {config: configCheck, crds: crdsCheck, features: featuresCheck}

  const invalid = config && config.kind !== 'valid' ? config : undefined
  const lastValid = invalid?.kind === 'last-valid'
    ? (invalid.lastValidGeneration === undefined ? 'the last valid configuration' : `the last valid configuration (generation ${invalid.lastValidGeneration})`)
    : undefined
  const invalidMessage = invalid
    ? `Invalid OperatorConfig: ${invalid.problems.join('; ')}. ${invalid.kind === 'last-valid'
      ? `This change is not applied: ${lastValid} stays in force until the spec is fixed.`
      : `${invalid.apiSyncOnly ? 'Discovery is paused (no valid configuration yet); API sync runs, its section being valid' : 'Discovery is paused'} until the spec is fixed.`}`
    : undefined

  if (invalid?.kind === 'never-valid') {
    const paused = invalid.apiSyncOnly ? 'Discovery is paused (no valid configuration yet); API sync runs, its section being valid' : 'Discovery is paused'
    return {ready: false, phase: 'Error', reason: 'DiscoveryPaused', message: `${paused} because the spec is invalid.`, statusMessage: invalidMessage, invalidMessage, checks}
  }
  if (missing.length > 0) {
    const message = `CRD${missing.length > 1 ? 's' : ''} missing: ${missing.join('; ')}. Those controllers are stopped until it is back: ` +
      'install the CRDs with `polycrate operator install-crds` (or `polycrate operator crds | kubectl apply -f -`).'
    return {ready: false, phase: 'Degraded', reason: 'CRDsMissing', message, statusMessage: joined(message, invalidMessage), invalidMessage, checks}
  }
  if (notRunning.length > 0) {
    const message = `Not running: ${notRunning.map(({name, why}) => `${name} (${why})`).join('; ')}.`
    return {ready: false, phase: 'Degraded', reason: input.failed.length > 0 ? 'FeatureFailed' : 'FeatureForbidden', message, statusMessage: joined(message, invalidMessage), invalidMessage, checks}
  }
  if (invalid) {
    return {ready: true, phase: 'Degraded', reason: 'LastValidConfigInForce', message: `Running ${lastValid}: ${input.running.join(', ') || 'no controller'}.`, statusMessage: invalidMessage, invalidMessage, checks}
  }
  return {
    ready: true,
    phase: 'Ready',
    reason: 'ControllersRunning',
    message: input.running.length > 0 ? `Running: ${input.running.join(', ')}.` : 'No discovery controller is enabled.',
    checks,
  }
}

function joined(...parts: Array<string | undefined>): string {
  return parts.filter(Boolean).join(' ')
}
