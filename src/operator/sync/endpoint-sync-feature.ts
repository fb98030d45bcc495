/**
 * Endpoint sync: every Endpoint CR → an endpoint in the Polycrate API. Before each sync it checks that the API
 * object still exists (recreating one deleted on the API side), adopts an existing object with the same name
 * before creating one (so a crash between create and status write never makes a duplicate), writes only when the
 * payload hash changed, and holds a finalizer that deletes the API object before the CR may go.
 */
import {ApiAuthError, ApiError, ApiNetworkError, ApiValidationError, adoptOrCreate, type PolycrateApiClient} from '../../api/index.js'
import {endpointCrd, type EndpointStatus} from '../../crds/endpoint.js'
import {API_VERSION} from '../../crds/define.js'
import {EventRecorder} from '../../kube/events.js'
import type {ApiSession} from '../agent/api-session.js'
import {setCondition} from '../config/operator-config.js'
import {conditionTypes, finalizers, OPERATOR_NAME} from '../conventions.js'
import {resources, type EndpointObject} from '../discovery/endpoint-discovery-feature.js'
import type {Feature} from '../features.js'
import {splitKey} from '../runtime/cache.js'
import {Controller, type ReconcileContext} from '../runtime/controller.js'
import {specMetadataOrDeletionChanged} from '../runtime/predicates.js'
import {configHash, endpointPayload} from './endpoint-payload.js'

type SyncState = {phase: string; syncStatus: string; reason: string; message: string; ok: boolean}

/** The status after a sync attempt (pure); lastTransitionTime moves only when the condition flips. */
export function endpointStatus(previous: EndpointStatus | undefined, generation: number | undefined, state: SyncState, synced: {apiID?: string; configHash?: string; k8sAppID?: string; at?: string}, now: string): EndpointStatus {
  return {
    ...previous,
    phase: state.phase,
    syncStatus: state.syncStatus,
    apiID: synced.apiID ?? previous?.apiID,
    configHash: synced.configHash ?? previous?.configHash,
    k8sAppID: synced.k8sAppID ?? previous?.k8sAppID,
    lastSyncedAt: synced.at ?? previous?.lastSyncedAt,
    observedGeneration: generation,
    message: state.ok ? undefined : state.message,
    conditions: setCondition(previous?.conditions, {type: conditionTypes.synced, status: state.ok ? 'True' : 'False', reason: state.reason, message: state.message, observedGeneration: generation}, now),
  }
}

export function createEndpointSyncFeature(session: ApiSession): Feature {
  return {
    name: 'endpoint-sync',
    enabled: (config) => config.api_sync.enabled,
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const client = manager.client
      const logger = manager.logger.child({feature: 'endpoint-sync'})
      const recorder = new EventRecorder({client, component: OPERATOR_NAME, onError: (error) => logger.debug('event not recorded', {error: (error as Error).message})})
      const endpoints = manager.informer<EndpointObject>({resource: resources.endpoints, kind: endpointCrd.kind})

      const writeStatus = async (endpoint: EndpointObject, status: EndpointStatus) => {
        if (JSON.stringify(endpoint.status ?? {}) === JSON.stringify(JSON.parse(JSON.stringify(status)))) return
        await client.mergePatch(
          {...resources.endpoints, namespace: endpoint.metadata.namespace, name: endpoint.metadata.name, subresource: 'status'},
          {apiVersion: API_VERSION, kind: endpointCrd.kind, status: {...status, message: status.message ?? null}},
        )
      }
      const setFinalizers = (endpoint: EndpointObject, list: string[]) =>
        client.mergePatch({...resources.endpoints, namespace: endpoint.metadata.namespace, name: endpoint.metadata.name},
          {metadata: {finalizers: list, resourceVersion: endpoint.metadata.resourceVersion}})

      /** The API object still there? (Deleted on the API side → recreate it.) */
      const exists = async (api: PolycrateApiClient, id: string) => {
        try {
          const object = await api.endpoints.get(id)
          return !object.is_deleted
        } catch (error) {
          if (error instanceof ApiError && error.status === 404) return false
          throw error
        }
      }

      const reconcile = async ({key, logger: log}: ReconcileContext) => {
        const endpoint = endpoints.cache.get(key)
        if (!endpoint) return
        const {namespace = ''} = splitKey(key)
        const now = new Date().toISOString()
        const api = session.client
        const identity = session.identity
        const hasFinalizer = endpoint.metadata.finalizers?.includes(finalizers.endpointSync) ?? false

        if (endpoint.metadata.deletionTimestamp) {
          if (!hasFinalizer) return
          if (!api) throw new Error(`cannot delete endpoint ${endpoint.status?.apiID ?? ''} from the Polycrate API yet: ${session.problem ?? 'not connected'}`)
          if (endpoint.status?.apiID) {
            const outcome = await api.endpoints.delete(endpoint.status.apiID)
            log.info('endpoint deleted from the API', {apiID: endpoint.status.apiID, outcome})
          }
          await setFinalizers(endpoint, (endpoint.metadata.finalizers ?? []).filter((f) => f !== finalizers.endpointSync))
          return
        }

        if (!api || !identity) {
          const message = `Waiting for the Polycrate API connection: ${session.problem ?? 'not connected yet'}`
          await writeStatus(endpoint, endpointStatus(endpoint.status, endpoint.metadata.generation, {phase: 'Pending', syncStatus: 'pending', reason: 'APINotConnected', message, ok: false}, {}, now))
          return // session changes requeue every endpoint
        }
        // The finalizer goes on before the API object exists, so the CR can never go without deleting it.
        if (!hasFinalizer) await setFinalizers(endpoint, [...(endpoint.metadata.finalizers ?? []), finalizers.endpointSync])

        try {
          const app = endpoint.spec.k8sAppName && identity.clusterId
            ? await api.k8sApps.findOne({name_exact: endpoint.spec.k8sAppName, k8s_cluster: identity.clusterId})
            : undefined
          const payload = endpointPayload({namespace, name: endpoint.metadata.name, spec: endpoint.spec, clusterId: identity.clusterId, k8sAppId: app?.id})
          const hash = configHash(payload)
          let apiID = endpoint.status?.apiID
          if (apiID && !(await exists(api, apiID))) {
            log.info('endpoint was deleted on the API side; recreating it', {apiID})
            await recorder.record(endpoint, 'Normal', 'Recreated', `The endpoint ${apiID} was deleted in the Polycrate API; it is created again.`)
            apiID = undefined
          }
          let wrote = false
          if (!apiID) {
            const {object, created} = await adoptOrCreate(api.endpoints, {
              lookup: {name_exact: payload.name, ...(identity.clusterId ? {k8s_cluster: identity.clusterId} : {})},
              body: payload,
            })
            apiID = object.id
            if (!created) await api.endpoints.update(apiID, payload)
            wrote = true
            log.info(created ? 'endpoint created in the API' : 'existing API endpoint adopted', {apiID})
          } else if (hash !== endpoint.status?.configHash) {
            await api.endpoints.update(apiID, payload)
            wrote = true
            log.info('endpoint updated in the API', {apiID})
          }
          await writeStatus(endpoint, endpointStatus(
            endpoint.status, endpoint.metadata.generation,
            {phase: 'Synced', syncStatus: 'synced', reason: 'Synced', message: `Synced to the Polycrate API as ${apiID}.`, ok: true},
            {apiID, configHash: hash, k8sAppID: app?.id, at: wrote ? now : undefined}, now,
          ))
        } catch (error) {
          if (error instanceof ApiValidationError || (error instanceof ApiAuthError && error.forbidden)) {
            // The API refuses this endpoint as it is: retrying does not help; a spec change does.
            const message = `The Polycrate API refused the endpoint: ${error.message}`
            await writeStatus(endpoint, endpointStatus(endpoint.status, endpoint.metadata.generation, {phase: 'Error', syncStatus: 'error', reason: 'Rejected', message, ok: false}, {}, now))
            await recorder.record(endpoint, 'Warning', 'SyncRejected', message)
            return
          }
          const reason = error instanceof ApiNetworkError || (error instanceof ApiError && error.status >= 500) ? 'APIUnavailable' : 'SyncFailed'
          const message = `Sync failed, retrying with backoff: ${(error as Error).message}`
          await writeStatus(endpoint, endpointStatus(endpoint.status, endpoint.metadata.generation, {phase: 'Error', syncStatus: 'error', reason, message, ok: false}, {}, now))
          throw error
        }
      }

      const controller = new Controller({
        name: 'endpoint-sync',
        reconcile,
        maxConcurrentReconciles: manager.maxConcurrentReconciles,
        logger: manager.logger,
        metrics: manager.metrics,
        watches: [{informer: endpoints, onUpdate: specMetadataOrDeletionChanged}],
      })
      const unsubscribe = session.onChange(() => controller.resync())

      // Inventory check every sync interval: one paged list of the cluster's API endpoints instead of a GET per
      // CR; an Endpoint CR whose API object is gone is reconciled at once (and recreated there).
      const inventory = setInterval(async () => {
        const api = session.client
        if (!api || !manager.isLeader) return
        try {
          const ids = new Set<string>()
          for await (const object of api.endpoints.list(session.identity?.clusterId ? {k8s_cluster: session.identity.clusterId} : {})) ids.add(object.id)
          for (const endpoint of endpoints.cache.list()) {
            const apiID = endpoint.status?.apiID
            if (apiID && !ids.has(apiID) && !endpoint.metadata.deletionTimestamp) controller.enqueue(`${endpoint.metadata.namespace}/${endpoint.metadata.name}`)
          }
        } catch (error) {
          logger.debug('inventory check failed; next interval retries', {error: (error as Error).message})
        }
      }, config.api_sync.sync_interval_seconds * 1000)
      inventory.unref()
      manager.addController(controller)
      return {
        async stop() {
          clearInterval(inventory)
          unsubscribe()
          await manager.removeController(controller)
          await manager.releaseInformer(endpoints)
        },
      }
    },
  }
}
