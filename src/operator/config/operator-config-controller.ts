/**
 * The OperatorConfig controller: reads the singleton `default` in the operator namespace, validates it, starts and
 * stops the feature controllers accordingly, and writes what it did into the status. An invalid spec says which
 * field is wrong and leaves the last valid configuration in force (features keep running as they were); a spec never
 * valid since the process started pauses the features, except API sync when the api_sync section is valid.
 *
 * It runs on every replica: a standby starts the features that serve on every replica (the DNS webhooks) and writes
 * nothing; the leader starts the rest and owns the status and the Events.
 */
import {operatorConfigCrd, type OperatorConfigSpec, type OperatorConfigStatus} from '../../crds/operatorconfig.js'
import {API_VERSION, type CustomObject} from '../../crds/define.js'
import type {KubeClient} from '../../kube/client.js'
import type {EventRecorder} from '../../kube/events.js'
import {API_SYNC_FEATURE, OPERATOR_CONFIG_NAME} from '../conventions.js'
import type {FeatureSet} from '../runtime/feature.js'
import {Controller, type ReconcileContext} from '../runtime/controller.js'
import type {CrdGate} from '../runtime/crd-gate.js'
import type {Manager} from '../runtime/manager.js'
import {specOrMetadataChanged} from '../runtime/predicates.js'
import {configState, ignoredOperatorConfigStatus, operatorConfigStatus, statusChanged, validateOperatorConfig, type OperatorConfig} from './operator-config.js'
import type {ConfigState} from './readiness.js'
import {isoNow} from '../../lib/clock.js'

/** Field manager of the status fields this controller owns (API sync owns others, under its own name). */
const STATUS_MANAGER = 'polycrate-operator-config'

export type OperatorConfigObject = CustomObject<OperatorConfigSpec, OperatorConfigStatus>

export const operatorConfigResource = (namespace: string) => ({
  group: 'polycrate.io',
  version: 'v1alpha1',
  plural: operatorConfigCrd.plural,
  namespace,
})

export interface OperatorConfigControllerOptions {
  manager: Manager
  gate: CrdGate
  features: FeatureSet<OperatorConfig>
  recorder?: EventRecorder
}

/** The effective configuration the rest of the operator reads (undefined while the spec is invalid). */
export class OperatorConfigState {
  current: OperatorConfig | undefined
  /** Whether the spec in force is the current one (readiness.ts); undefined until the first reconcile. */
  configState: ConfigState | undefined
  private readonly listeners = new Set<(config: OperatorConfig | undefined) => void>()

  set(config: OperatorConfig | undefined): void {
    this.current = config
    for (const listener of this.listeners) listener(config)
  }

  onChange(listener: (config: OperatorConfig | undefined) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}

/** The features that run on an OperatorConfig that was never valid, when its api_sync section is. */
const API_SYNC_ONLY: ReadonlySet<string> = new Set([API_SYNC_FEATURE])

/** The configuration of the api_sync (and local_cluster) sections alone, when they are valid by themselves. */
export function apiSyncSection(spec: OperatorConfigSpec | undefined): OperatorConfig | undefined {
  const withCluster = validateOperatorConfig({api_sync: spec?.api_sync, local_cluster: spec?.local_cluster})
  if (withCluster.ok) return withCluster.config
  const alone = validateOperatorConfig({api_sync: spec?.api_sync})
  return alone.ok ? alone.config : undefined
}

export function createOperatorConfigController(options: OperatorConfigControllerOptions): {controller: Controller; state: OperatorConfigState} {
  const {manager, gate, features} = options
  const namespace = manager.namespace
  const key = `${namespace}/${OPERATOR_CONFIG_NAME}`
  const state = new OperatorConfigState()
  // Every namespace: an OperatorConfig elsewhere (or not named `default`) is told that it is ignored and why.
  const informer = manager.informer<OperatorConfigObject>({resource: {...operatorConfigResource(namespace), namespace: undefined}, kind: operatorConfigCrd.kind})
  const client: KubeClient = manager.client
  const clock = manager.clock
  /** The last valid spec this process read (kept in memory only: a restart with an invalid spec starts without it). */
  let lastValid: {config: OperatorConfig; generation: number | undefined} | undefined

  const reconcile = async ({key: requested, logger, signal}: ReconcileContext) => {
    const leading = manager.isLeader
    if (requested !== key) {
      if (!leading) return
      const other = informer.cache.get(requested)
      if (!other) return
      const {name = '', namespace: otherNamespace = ''} = other.metadata
      const status = ignoredOperatorConfigStatus(other.status, {name, namespace: otherNamespace, generation: other.metadata.generation},
        {name: OPERATOR_CONFIG_NAME, namespace}, isoNow(clock))
      await options.recorder?.record(other, 'Warning', 'Ignored', status.message!)
      if (!statusChanged(other.status, status)) return
      await client.apply(
        {...operatorConfigResource(otherNamespace), name, subresource: 'status'},
        {apiVersion: API_VERSION, kind: operatorConfigCrd.kind, metadata: {name, namespace: otherNamespace}, status},
        {fieldManager: STATUS_MANAGER, signal},
      )
      return
    }
    const object = informer.cache.get(key)
    const validation = validateOperatorConfig(object?.spec ?? {})
    if (validation.ok) lastValid = {config: validation.config, generation: object?.metadata.generation}
    // Invalid: the last valid configuration stays in force; never valid (since this process started): API sync
    // alone, when the api_sync section by itself is valid, so the agent still heartbeats.
    const apiSyncOnly = validation.ok || lastValid ? undefined : apiSyncSection(object?.spec)
    const config = validation.ok ? validation.config : lastValid?.config ?? apiSyncOnly
    const inForce = validation.ok ? undefined : lastValid ? {lastValidGeneration: lastValid.generation} : {apiSyncOnly: apiSyncOnly !== undefined}
    state.configState = configState(validation, inForce)
    state.set(config)
    const controllers = await features.apply(config, {leading, only: apiSyncOnly ? API_SYNC_ONLY : undefined})
    if (!leading) return
    if (!object) {
      logger.debug('no OperatorConfig; running with the defaults')
      return
    }
    if (!validation.ok) {
      logger.warn(lastValid ? 'invalid OperatorConfig; the last valid configuration stays in force' : 'invalid OperatorConfig; discovery paused', {problems: validation.problems})
      await options.recorder?.record(object, 'Warning', 'InvalidSpec', `Invalid OperatorConfig: ${validation.problems.join('; ')}`)
    }
    const status = operatorConfigStatus(object.status, object.metadata.generation, validation, controllers, isoNow(clock), features.missingOwnCrds, inForce)
    if (!statusChanged(object.status, status)) return
    await client.apply(
      {...operatorConfigResource(namespace), name: OPERATOR_CONFIG_NAME, subresource: 'status'},
      {apiVersion: API_VERSION, kind: operatorConfigCrd.kind, metadata: {name: OPERATOR_CONFIG_NAME, namespace}, status},
      {fieldManager: STATUS_MANAGER, signal},
    )
    logger.info('OperatorConfig status updated', {phase: status.phase})
  }

  const controller = new Controller({
    name: 'operatorconfig',
    reconcile,
    maxConcurrentReconciles: 1,
    needLeaderElection: false,
    logger: manager.logger,
    metrics: manager.metrics,
    clock: manager.clock,
    watches: [
      {informer, onUpdate: specOrMetadataChanged},
      // Any CRD change may start or stop an optional feature. Workers wait for this cache too: until the CRD
      // list has synced, "not established" could just mean "not seen yet".
      {informer: gate.informer, toKeys: () => [key]},
    ],
  })
  gate.onChange(() => controller.enqueue(key))
  // Promoted to leader: start the leader's features and take over the status; a feature's problem changed: report it.
  manager.onLeadershipChange(() => controller.enqueue(key))
  features.onChange(() => controller.enqueue(key))
  return {controller, state}
}
