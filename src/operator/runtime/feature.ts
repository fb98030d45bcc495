/**
 * Features are the optional parts of the operator (one per OperatorConfig section: endpoint discovery, node
 * discovery, …). The FeatureSet starts and stops their controllers when their `enabled` flags, their settings or
 * the CRDs they need change — without a restart.
 *
 * The contract is generic in the configuration (`Config`: the operator's is config/'s OperatorConfig): the runtime
 * only hands it on to the features, so it does not import the layer that defines it.
 */
import {FAILED_PREFIX, FORBIDDEN_PREFIX, INSTALL_CRDS_HINT, type ControllerState} from './feature-state.js'
import {accessChecks, checkKey, forbiddenReason, type AccessCheck} from './access-review.js'
import type {Logger} from '../../lib/logger.js'
import {monotonicNow} from '../../lib/clock.js'
import type {CrdGate} from './crd-gate.js'
import type {Manager} from './manager.js'
import type {FeatureState} from './metrics.js'
import type {Permission} from '../permissions.js'

export interface RunningFeature {
  /**
   * A feature whose start failed after start() returned (a webhook port in use, a missing certificate) says so
   * here; it is then reported as not running, with this message, in the OperatorConfig status and /readyz.
   */
  problem?(): string | undefined
  /**
   * Removes the feature's controllers from the manager and releases its informers. `why` says why, for what the
   * feature leaves behind (API sync's APIConnected condition must not claim a connection nobody keeps).
   */
  stop(why?: StopReason): Promise<void>
}

/** Why a running feature is stopped. */
export interface StopReason {
  kind: 'disabled' | 'invalid-config' | 'missing-crds' | 'restart' | 'shutdown'
  message: string
}

/** The polycrate.io CRDs are the operator's own: one missing is a broken installation, not an absent option. */
export const isOwnCrd = (crd: string) => crd.endsWith('.polycrate.io')

export interface Feature<Config> {
  name: string
  enabled(config: Config): boolean
  /** CRDs (by full name) that must be Established before the feature can run. */
  requiredCrds?: readonly string[]
  /** Everything its controllers read and write in the cluster (the generated RBAC roles are their union). */
  permissions: readonly Permission[]
  /**
   * What the feature's controllers depend on (its config section, which optional CRDs exist); when it changes
   * the feature is restarted.
   */
  settings(config: Config, isEstablished: (crd: string) => boolean): unknown
  /**
   * Runs on every replica, not only on the leader (the DNS webhooks: what they serve does not depend on the
   * lease). Its controllers that write must check `manager.isLeader` or set needLeaderElection.
   */
  everyReplica?: boolean
  /** `context.changed()` tells the FeatureSet that `problem()` of the returned feature changed. */
  start(manager: Manager, config: Config, isEstablished: (crd: string) => boolean, context: FeatureContext): RunningFeature
  /**
   * Releases what an earlier run left on users' objects (finalizers), for a feature that is not running when the
   * operator starts because it is disabled or misses a CRD (a running one releases them when it stops).
   */
  releaseLeftovers?(manager: Manager, config: Config, why: StopReason): Promise<void>
}

export interface FeatureContext {
  changed(): void
}

export type FeatureAction<Config> = {feature: Feature<Config>; action: 'start' | 'stop' | 'restart'; why?: StopReason}

/**
 * What to do (pure): given the config (undefined = invalid, everything paused), which CRDs are there, which
 * features run with which settings and whether this replica leads (a standby runs only the everyReplica features),
 * the start/stop/restart actions and the state to report.
 */
export function planFeatures<Config>(
  features: readonly Feature<Config>[],
  config: Config | undefined,
  isEstablished: (crd: string) => boolean,
  running: ReadonlyMap<string, string>,
  leading = true,
): {actions: FeatureAction<Config>[]; states: ControllerState[]; missingOwnCrds: Map<string, string[]>} {
  const actions: FeatureAction<Config>[] = []
  const states: ControllerState[] = []
  /** Own CRDs an enabled feature needs and does not find → the features that need them. */
  const missingOwnCrds = new Map<string, string[]>()
  for (const feature of features) {
    const enabled = config ? feature.enabled(config) : false
    const missing = (feature.requiredCrds ?? []).filter((crd) => !isEstablished(crd))
    const want = config !== undefined && enabled && missing.length === 0 && (leading || feature.everyReplica === true)
    const settings = config ? JSON.stringify(feature.settings(config, isEstablished)) : ''
    const current = running.get(feature.name)
    const own = missing.filter(isOwnCrd)
    if (config && enabled) for (const crd of own) missingOwnCrds.set(crd, [...(missingOwnCrds.get(crd) ?? []), feature.name])
    const reason = !config
      ? 'PausedInvalidConfig'
      : !enabled
        ? 'Disabled'
        : own.length > 0
          ? `CRDsMissing: ${own.join(', ')}; ${INSTALL_CRDS_HINT}`
          : missing.length > 0
            ? `WaitingForCRDs: ${missing.join(', ')}`
            : want ? 'Running' : 'Standby'
    if (want && current === undefined) actions.push({feature, action: 'start'})
    else if (want && current !== settings) actions.push({feature, action: 'restart', why: {kind: 'restart', message: 'restarting with new settings'}})
    else if (!want && current !== undefined) {
      // (A leader never becomes a standby again: it exits when it loses the lease.)
      const why: StopReason = !config
        ? {kind: 'invalid-config', message: 'the OperatorConfig is invalid (see its Valid condition)'}
        : !enabled
          ? {kind: 'disabled', message: 'it is disabled in the OperatorConfig'}
          : {kind: 'missing-crds', message: `CRD ${missing.join(', ')} is missing`}
      actions.push({feature, action: 'stop', why})
    }
    states.push({name: feature.name, enabled, running: want, reason})
  }
  return {actions, states, missingOwnCrds}
}

/** The state a feature's reported reason (`status.controllers[].reason`) stands for (pure). */
export function featureState(reason: string | undefined, running: boolean): FeatureState {
  if (running) return 'running'
  if (reason?.startsWith(FAILED_PREFIX)) return 'failed'
  if (reason?.startsWith(FORBIDDEN_PREFIX)) return 'forbidden'
  if (reason?.startsWith('CRDsMissing')) return 'crds_missing'
  if (reason?.startsWith('WaitingForCRDs')) return 'waiting_for_crds'
  if (reason === 'PausedInvalidConfig') return 'paused_invalid_config'
  if (reason === 'Standby') return 'standby'
  return 'disabled'
}

/**
 * Asks whether the operator may do what a feature's permissions name (access-review.ts): starts the reviews of the
 * checks in their order and answers each (true: allowed) by checkKey as soon as it is in.
 */
export interface AccessReviewer {
  review(checks: readonly AccessCheck[]): ReadonlyMap<string, Promise<boolean>>
}

export interface FeatureSetOptions {
  /** Checks each feature's permissions before it starts; without it every feature starts (tests, a fake client). */
  reviewer?: AccessReviewer
  /** How long a feature that was refused for its RBAC waits before it is checked again (install may add the rules). */
  forbiddenRecheckMs?: number
}

/** Default of FeatureSetOptions.forbiddenRecheckMs. */
export const FORBIDDEN_RECHECK_MS = 30_000

export class FeatureSet<Config> {
  private readonly running = new Map<string, {settings: string; instance: RunningFeature}>()
  /** Features wanted but not started because the RBAC lacks their rules → their reason (`Forbidden: …`). */
  private forbidden: ReadonlyMap<string, string> = new Map()
  private recheck: unknown
  private applying: Promise<unknown> = Promise.resolve()
  private readonly listeners = new Set<() => void>()
  /** The operator's own CRDs that enabled features need and do not find (→ feature names), as last applied. */
  missingOwnCrds: ReadonlyMap<string, readonly string[]> = new Map()
  /** Whether the features not running at the first valid configuration have had their leftovers released. */
  private leftoversChecked = false

  constructor(
    private readonly manager: Manager,
    private readonly gate: CrdGate,
    readonly features: readonly Feature<Config>[],
    private readonly logger: Logger,
    private readonly options: FeatureSetOptions = {},
  ) {}

  /**
   * Brings the running features in line with the config and this replica's role (a standby runs only the
   * everyReplica features); returns their state for the OperatorConfig status. `only`: the features that may run at
   * all (an OperatorConfig never valid whose api_sync is: API sync alone); the others are reported
   * `PausedInvalidConfig`.
   */
  apply(config: Config | undefined, options: {leading?: boolean; only?: ReadonlySet<string>} = {}): Promise<ControllerState[]> {
    return this.queue(config, options.leading ?? true, false, options.only)
  }

  /** Whether the feature `name` was started (and not stopped since). */
  isRunning(name: string): boolean {
    return this.running.has(name)
  }

  async stopAll(): Promise<void> {
    if (this.options.reviewer) this.manager.clock.clearTimeout(this.recheck)
    await this.queue(undefined, true, true)
  }

  /** Called when a running feature's problem() changes (the OperatorConfig controller reconciles again). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private queue(config: Config | undefined, leading: boolean, shutdown: boolean, only?: ReadonlySet<string>): Promise<ControllerState[]> {
    const next = this.applying.then(() => this.applyNow(config, leading, shutdown, only))
    this.applying = next.catch(() => {})
    return next
  }

  /** The features that were started but could not run (a webhook port in use), with why: readiness.ts's input. */
  failed(): Array<{name: string; problem: string}> {
    return this.problems().map(([name, problem]) => ({name, problem}))
  }

  /** The features enabled but not started because the RBAC lacks their rules, with their `Forbidden: …` reason: readiness.ts's input. */
  forbiddenFeatures(): Array<{name: string; reason: string}> {
    return [...this.forbidden].map(([name, reason]) => ({name, reason}))
  }

  /**
   * The features about to start → whether the RBAC refuses them (their `Forbidden: …` reason, else undefined). Each
   * check is reviewed once however many features need it, in the features' order, and each feature's verdict settles
   * with its own checks: the first features start while the later ones' reviews are still out (API sync, first in the
   * registry, registers the cluster meanwhile).
   */
  private verdicts(starting: readonly Feature<Config>[]): Map<string, Promise<string | undefined>> {
    const reviewer = this.options.reviewer
    if (!reviewer || starting.length === 0) return new Map()
    const byFeature = starting.map((feature) => [feature.name, accessChecks(feature.permissions, this.manager.namespace)] as const)
    const started = monotonicNow(this.manager.clock)
    const answers = reviewer.review([...new Map(byFeature.flatMap(([, checks]) => checks).map((check) => [checkKey(check), check])).values()])
    const verdicts = new Map(byFeature.map(([name, checks]) => [name, Promise.all(checks.map((check) => answers.get(checkKey(check))!)).then((allowed) => {
      const missing = checks.filter((_, i) => !allowed[i])
      return missing.length > 0 ? forbiddenReason(missing) : undefined
    })]))
    void Promise.all(verdicts.values()).then((reasons) => this.logger.debug('access reviewed', {
      features: starting.length, checks: answers.size, refused: reasons.filter(Boolean).length, ms: Math.round(monotonicNow(this.manager.clock) - started),
    }))
    return verdicts
  }

  private problems(): Array<[string, string]> {
    return [...this.running].flatMap(([name, {instance}]) => {
      const problem = instance.problem?.()
      return problem ? [[name, problem] as [string, string]] : []
    })
  }

  private async applyNow(config: Config | undefined, leading: boolean, shutdown: boolean, only?: ReadonlySet<string>): Promise<ControllerState[]> {
    const current = new Map([...this.running].map(([name, entry]) => [name, entry.settings]))
    const isEstablished = (crd: string) => this.gate.isEstablished(crd)
    const features = only ? this.features.map((feature) => (only.has(feature.name) ? feature : {...feature, enabled: () => false})) : this.features
    const planned = planFeatures(features, config, isEstablished, current, leading)
    const {actions, missingOwnCrds} = planned
    const states = only ? planned.states.map((state) => (only.has(state.name) ? state : {...state, reason: 'PausedInvalidConfig'})) : planned.states
    this.missingOwnCrds = missingOwnCrds
    const context: FeatureContext = {changed: () => this.listeners.forEach((listener) => listener())}
    const verdicts = config ? this.verdicts(actions.filter(({action}) => action !== 'stop').map(({feature}) => feature)) : new Map<string, Promise<string | undefined>>()
    const refused = new Map<string, string>()
    for (const {feature, action, why} of actions) {
      if (action === 'stop' || action === 'restart') {
        await this.running.get(feature.name)?.instance.stop(shutdown ? {kind: 'shutdown', message: 'the operator is shutting down'} : why)
        this.running.delete(feature.name)
        this.logger.info(action === 'stop' ? 'feature stopped' : 'feature restarting with new settings', {feature: feature.name})
      }
      if ((action === 'start' || action === 'restart') && config) {
        const reason = await verdicts.get(feature.name)
        if (reason !== undefined) {
          refused.set(feature.name, reason)
          if (this.forbidden.get(feature.name) !== reason) this.logger.warn('feature not started: the operator\'s RBAC lacks its rules', {feature: feature.name, reason})
          continue
        }
        const instance = feature.start(this.manager, config, isEstablished, context)
        this.running.set(feature.name, {settings: JSON.stringify(feature.settings(config, isEstablished)), instance})
        this.logger.info('feature started', {feature: feature.name})
      }
    }
    this.forbidden = refused
    if (this.options.reviewer) {
      this.manager.clock.clearTimeout(this.recheck)
      // Checked again a while later: install may add the rules meanwhile (the OperatorConfig controller applies again).
      if (refused.size > 0) this.recheck = this.manager.clock.setTimeout(() => context.changed(), this.options.forbiddenRecheckMs ?? FORBIDDEN_RECHECK_MS)
    }
    // Leftovers of an earlier run are released by the leader only (a standby writes nothing).
    if (config && leading && !only && !shutdown && !this.leftoversChecked) {
      this.leftoversChecked = true
      for (const state of states) {
        const feature = this.features.find((candidate) => candidate.name === state.name)
        if (state.running || !feature?.releaseLeftovers) continue
        const why: StopReason = state.enabled ? {kind: 'missing-crds', message: state.reason ?? 'a CRD it needs is missing'} : {kind: 'disabled', message: 'it is disabled in the OperatorConfig'}
        void feature.releaseLeftovers(this.manager, config, why).catch((error: Error) => this.logger.warn('releasing leftover finalizers failed', {feature: feature.name, error: error.message}))
      }
    }
    // A feature that was started but could not serve is not running: the status and /readyz say why.
    const failed = new Map(this.problems())
    const reported = states.map((state) => (failed.has(state.name)
      ? {...state, running: false, reason: `${FAILED_PREFIX}${failed.get(state.name)}`}
      : refused.has(state.name) ? {...state, running: false, reason: refused.get(state.name)} : state))
    for (const state of reported) this.manager.metrics.setFeatureState(state.name, featureState(state.reason, state.running))
    return reported
  }
}
