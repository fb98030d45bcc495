/**
 * Features are the optional parts of the operator (one per OperatorConfig section: endpoint discovery, node
 * discovery, …). The FeatureSet starts and stops their controllers when their `enabled` flags, their settings or
 * the CRDs they need change — without a restart.
 */
import type {OperatorConfig, ControllerState} from './config/operator-config.js'
import type {Logger} from '../lib/logger.js'
import type {CrdGate} from './runtime/crd-gate.js'
import type {Manager} from './runtime/manager.js'
import type {Permission} from './permissions.js'

export interface RunningFeature {
  /** Removes the feature's controllers from the manager and releases its informers. */
  stop(): Promise<void>
}

export interface Feature {
  name: string
  enabled(config: OperatorConfig): boolean
  /** CRDs (by full name) that must be Established before the feature can run. */
  requiredCrds?: readonly string[]
  /** Everything its controllers read and write in the cluster (the generated RBAC roles are their union). */
  permissions: readonly Permission[]
  /**
   * What the feature's controllers depend on (its config section, which optional CRDs exist); when it changes
   * the feature is restarted.
   */
  settings(config: OperatorConfig, isEstablished: (crd: string) => boolean): unknown
  start(manager: Manager, config: OperatorConfig, isEstablished: (crd: string) => boolean): RunningFeature
}

export type FeatureAction = {feature: Feature; action: 'start' | 'stop' | 'restart'}

/**
 * What to do (pure): given the config (undefined = invalid, everything paused), which CRDs are there and which
 * features run with which settings, the start/stop/restart actions and the state to report.
 */
export function planFeatures(
  features: readonly Feature[],
  config: OperatorConfig | undefined,
  isEstablished: (crd: string) => boolean,
  running: ReadonlyMap<string, string>,
): {actions: FeatureAction[]; states: ControllerState[]} {
  const actions: FeatureAction[] = []
  const states: ControllerState[] = []
  for (const feature of features) {
    const enabled = config ? feature.enabled(config) : false
    const missing = (feature.requiredCrds ?? []).filter((crd) => !isEstablished(crd))
    const want = config !== undefined && enabled && missing.length === 0
    const settings = config ? JSON.stringify(feature.settings(config, isEstablished)) : ''
    const current = running.get(feature.name)
    if (want && current === undefined) actions.push({feature, action: 'start'})
    else if (want && current !== settings) actions.push({feature, action: 'restart'})
    else if (!want && current !== undefined) actions.push({feature, action: 'stop'})
    const reason = !config
      ? 'PausedInvalidConfig'
      : !enabled
        ? 'Disabled'
        : missing.length > 0
          ? `WaitingForCRDs: ${missing.join(', ')}`
          : 'Running'
    states.push({name: feature.name, enabled, running: want, reason})
  }
  return {actions, states}
}

export class FeatureSet {
  private readonly running = new Map<string, {settings: string; instance: RunningFeature}>()
  private applying: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly manager: Manager,
    private readonly gate: CrdGate,
    readonly features: readonly Feature[],
    private readonly logger: Logger,
  ) {}

  /** Brings the running features in line with the config; returns their state for the OperatorConfig status. */
  apply(config: OperatorConfig | undefined): Promise<ControllerState[]> {
    const next = this.applying.then(() => this.applyNow(config))
    this.applying = next.catch(() => {})
    return next
  }

  async stopAll(): Promise<void> {
    await this.apply(undefined)
  }

  private async applyNow(config: OperatorConfig | undefined): Promise<ControllerState[]> {
    const current = new Map([...this.running].map(([name, entry]) => [name, entry.settings]))
    const isEstablished = (crd: string) => this.gate.isEstablished(crd)
    const {actions, states} = planFeatures(this.features, config, isEstablished, current)
    for (const {feature, action} of actions) {
      if (action === 'stop' || action === 'restart') {
        await this.running.get(feature.name)?.instance.stop()
        this.running.delete(feature.name)
        this.logger.info(action === 'stop' ? 'feature stopped' : 'feature restarting with new settings', {feature: feature.name})
      }
      if ((action === 'start' || action === 'restart') && config) {
        const instance = feature.start(this.manager, config, isEstablished)
        this.running.set(feature.name, {settings: JSON.stringify(feature.settings(config, isEstablished)), instance})
        this.logger.info('feature started', {feature: feature.name})
      }
    }
    return states
  }
}
