/** Wires the whole operator together: manager, CRD gate, OperatorConfig controller and the features. */
import type {KubeClient} from '../kube/client.js'
import {EventRecorder} from '../kube/events.js'
import {createOperatorConfigController, type OperatorConfigState} from './config/operator-config-controller.js'
import type {OperatorConfig} from './config/operator-config.js'
import {readiness} from './config/readiness.js'
import {API_SYNC_FEATURE, OPERATOR_NAME} from './conventions.js'
import {FeatureSet, type Feature} from './runtime/feature.js'
import {defaultFeatures} from './registry.js'
import {ApiSession} from './agent/api-session.js'
import type {Logger} from '../lib/logger.js'
import {CrdGate} from './runtime/crd-gate.js'
import {SelfAccessReviewer} from './runtime/access-review.js'
import {Manager, type ManagerOptions} from './runtime/manager.js'
import {CORE_PERMISSIONS, type Permission} from './permissions.js'

export interface OperatorOptions extends ManagerOptions {
  client: KubeClient
  /** Features to run instead of the default set (tests). */
  features?: (session: ApiSession) => readonly Feature<OperatorConfig>[]
  logger: Logger
}

export interface Operator {
  manager: Manager
  config: OperatorConfigState
  features: FeatureSet<OperatorConfig>
  api: ApiSession
  run(signal: AbortSignal): Promise<void>
}

/**
 * What the operator may do (the RBAC roles of the generated manifests): its core and the declarations of the features
 * `config` enables — without a config, of every feature (`manifests --all-features`, for GitOps users who enable
 * features later). Here, because only the operator knows its features.
 */
export function operatorPermissions(config?: OperatorConfig): Permission[] {
  const features = defaultFeatures(new ApiSession()).filter((feature) => config === undefined || feature.enabled(config))
  return [...CORE_PERMISSIONS, ...features.flatMap((feature) => feature.permissions.map((permission) => ({...permission, feature: feature.name})))]
}

/** Each feature's name and what switches it on (for `info`: which settings decide), in the order of the status. */
export function operatorFeatureSwitches(): Array<{name: string; enabled: (config: OperatorConfig) => boolean; requiredCrds: readonly string[]}> {
  return defaultFeatures(new ApiSession()).map((feature) => ({name: feature.name, enabled: (config) => feature.enabled(config), requiredCrds: feature.requiredCrds ?? []}))
}

export function createOperator(options: OperatorOptions): Operator {
  const manager = new Manager(options)
  const gate = new CrdGate(manager)
  const api = new ApiSession({registry: manager.metrics.registry, logger: options.logger, writeFence: manager.writeFence, clock: manager.clock})
  // Each feature's RBAC is checked before it starts (a feature enabled after install may lack its rules).
  const features = new FeatureSet(manager, gate, (options.features ?? defaultFeatures)(api), options.logger, {reviewer: new SelfAccessReviewer(options.client)})
  const recorder = new EventRecorder({
    client: options.client,
    component: OPERATOR_NAME,
    clock: manager.clock,
    onError: (error) => options.logger.debug('event not recorded', {error: (error as Error).message}),
  })
  const {controller, state} = createOperatorConfigController({manager, gate, features, recorder})
  manager.addController(controller)
  // /readyz answers with the same verdict as the Ready condition (readiness.ts): one check per part of it.
  const verdict = () => readiness({config: state.configState, missingOwnCrds: features.missingOwnCrds, failed: features.failed(), forbidden: features.forbiddenFeatures(), running: []})
  manager.addReadyzCheck('config', () => verdict().checks.config)
  manager.addReadyzCheck('crds', () => verdict().checks.crds)
  manager.addReadyzCheck('features', () => verdict().checks.features)
  // Not a part of the Ready condition but of this replica's start: the DNS webhooks answer from the API session, so a
  // replica is not Ready (its Service sends it no call) until the API sync has given its first answer, connected or
  // why not. A restarted container would otherwise answer 503 "not connected" for the moment in between.
  manager.addReadyzCheck('api-session', () => (features.isRunning(API_SYNC_FEATURE) && !api.answered
    ? {ok: false, message: 'the API sync has not given its first answer yet (connected to the Polycrate API, or why not)'}
    : {ok: true}))
  return {
    manager,
    config: state,
    features,
    api,
    async run(signal) {
      try {
        await manager.run(signal)
      } finally {
        await features.stopAll()
      }
    },
  }
}
