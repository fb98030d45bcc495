/** Wires the whole operator together: manager, CRD gate, OperatorConfig controller and the features. */
import type {KubeClient} from '../kube/client.js'
import {EventRecorder} from '../kube/events.js'
import {createOperatorConfigController, type OperatorConfigState} from './config/operator-config-controller.js'
import {OPERATOR_NAME} from './conventions.js'
import {FeatureSet, type Feature} from './runtime/feature.js'
import {defaultFeatures} from './registry.js'
import {ApiSession} from './agent/api-session.js'
import type {Logger} from '../lib/logger.js'
import {CrdGate} from './runtime/crd-gate.js'
import {Manager, type ManagerOptions} from './runtime/manager.js'
import {CORE_PERMISSIONS, type Permission} from './permissions.js'

export interface OperatorOptions extends ManagerOptions {
  client: KubeClient
  /** Features to run instead of the default set (tests). */
  features?: (session: ApiSession) => readonly Feature[]
  logger: Logger
}

export interface Operator {
  manager: Manager
  config: OperatorConfigState
  features: FeatureSet
  api: ApiSession
  run(signal: AbortSignal): Promise<void>
}

/**
 * Everything the operator may do: its core and the union of its features' declarations (the RBAC roles of the
 * generated manifests). Here, because only the operator knows its features.
 */
export function operatorPermissions(): Permission[] {
  return [...CORE_PERMISSIONS, ...defaultFeatures(new ApiSession()).flatMap((feature) => feature.permissions)]
}

export function createOperator(options: OperatorOptions): Operator {
  const manager = new Manager(options)
  const gate = new CrdGate(manager)
  const api = new ApiSession({registry: manager.metrics.registry, logger: options.logger})
  const features = new FeatureSet(manager, gate, (options.features ?? defaultFeatures)(api), options.logger)
  const recorder = new EventRecorder({
    client: options.client,
    component: OPERATOR_NAME,
    onError: (error) => options.logger.debug('event not recorded', {error: (error as Error).message}),
  })
  const {controller, state} = createOperatorConfigController({manager, gate, features, recorder})
  manager.addController(controller)
  manager.addReadyzCheck('crds', () => features.crdCheck())
  manager.addReadyzCheck('features', () => features.failedCheck())
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
