/**
 * K8sCluster registration (`K8sClusterReconciler`).
 * A user-declared K8sCluster CR is probed with its own credentials (the token or kubeconfig in the Secret it names,
 * `spec.caCertificate` trusted): `GET /version`, then an authenticated `GET /api` → `status.reachable`,
 * `kubernetesVersion`, `lastProbedAt` and the phase `Ready` / `Unreachable` / `Unauthorized` / `Error` with a reason
 * that says what to fix; again every sync interval, and at once when the Secret changes (it is watched, metadata
 * only), so a rotated token is picked up without a restart.
 *
 * The API keeps one cluster per workspace: the registered CR holds the slot (while none is: the oldest one whose API
 * server answered, `slotHolder`) and adopts the workspace's cluster (the one `local_cluster` registered, or any) or
 * creates it with `spec.kind` (default generic); it sets the display name and description from the CR. Any other CR
 * gets phase Error, reason WorkspaceHasCluster. The
 * finalizer deletes the API cluster only when this CR created it. Credentials stay inside the reconcile: the probe
 * target is never logged, and no message, Event or status field carries them.
 */
import https from 'node:https'
import {adoptOrCreate, ApiAuthError, type K8sClusterRequest} from '../../../api/index.js'
import {API_VERSION, crdFullName, crdResource, type CustomObject} from '../../../crds/define.js'
import {k8sClusterCrd, type K8sClusterSpec} from '../../../crds/k8s-cluster.js'
import type {Condition} from '../../../crds/schema.js'
import {KubeApiError, resourcePath, type KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'
import type {ApiSession} from '../../agent/api-session.js'
import {setCondition} from '../../config/operator-config.js'
import {conditionTypes, finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import {READ} from '../../permissions.js'
import type {ReconcileContext} from '../../runtime/controller.js'
import {Finalizer} from '../../runtime/finalizer.js'
import {specMetadataOrDeletionChanged} from '../../runtime/predicates.js'
import {configHash} from '../../sync/hash.js'
import {statusUnchanged} from '../../sync/engine.js'
import {clusterPayload, credentialsRef, isTlsCode, probeResult, probeTarget, slotHolder, type ClusterPhase, type ProbeOutcome, type ProbeTarget} from './mapping.js'

type ClusterObject = CustomObject<K8sClusterSpec, Record<string, unknown>>

const PROBE_TIMEOUT_MS = 10_000

/** One GET with the target's CA and credentials; the status and body, or the error code. */
function get(target: ProbeTarget, path: string, signal: AbortSignal): Promise<{status: number; body: string}> {
  return new Promise((resolve, reject) => {
    const request = https.request(new URL(path, target.server), {
      method: 'GET',
      agent: false,
      ca: target.ca,
      cert: target.cert,
      key: target.key,
      headers: {Accept: 'application/json', ...(target.token ? {Authorization: `Bearer ${target.token}`} : {})},
      timeout: PROBE_TIMEOUT_MS,
      signal,
    }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8')}))
      response.on('error', reject)
    })
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), {code: 'ETIMEDOUT'})))
    request.on('error', reject)
    request.end()
  })
}

/** `GET /version`, then the authenticated `GET /api`. Only codes and statuses come out, never a message. */
export async function probeApiServer(target: ProbeTarget, signal: AbortSignal): Promise<ProbeOutcome> {
  try {
    const version = await get(target, '/version', signal)
    if (version.status !== 200) return {kind: 'http', status: version.status, path: '/version'}
    const api = await get(target, '/api', signal)
    if (api.status !== 200) return {kind: 'http', status: api.status, path: '/api'}
    let gitVersion = 'unknown'
    try {
      gitVersion = String((JSON.parse(version.body) as {gitVersion?: unknown}).gitVersion ?? 'unknown')
    } catch {
      // a /version that is not JSON: still an API server that accepted the credentials
    }
    return {kind: 'ok', version: gitVersion}
  } catch (error) {
    if (signal.aborted) throw error
    const code = String((error as NodeJS.ErrnoException).code ?? 'ECONNFAILED')
    return isTlsCode(code) ? {kind: 'tls', code} : {kind: 'network', code}
  }
}

export function K8sClusterReconciler(session: ApiSession): Feature {
  return {
    name: 'k8s-cluster',
    // A K8sCluster CR is user-declared: there is no switch, the CR is the request.
    enabled: () => true,
    permissions: [
      {group: 'polycrate.io', resource: k8sClusterCrd.plural, verbs: [...READ, 'patch', 'update']},
      {group: 'polycrate.io', resource: `${k8sClusterCrd.plural}/status`, verbs: ['patch']},
      // The credentials Secret a CR names, in the CR's namespace (watched metadata-only, read when probing).
      {group: '', resource: 'secrets', verbs: READ},
    ],
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const client = manager.client
      const resource = crdResource(k8sClusterCrd)
      const intervalMs = config.api_sync.sync_interval_seconds * 1000
      const builder = manager.controller('k8s-cluster')
      const clusters = builder.for<ClusterObject>({resource, kind: 'K8sCluster'}, {onUpdate: specMetadataOrDeletionChanged})
      // Metadata only: a change of a Secret a CR names (a rotated token) probes that CR again at once.
      builder.watches<KubeObject>({resource: resources.secrets, kind: 'Secret', metadataOnly: true}, (secret) =>
        clusters.cache.list()
          .filter((cluster) => cluster.metadata.namespace === secret.metadata?.namespace && credentialsRef(cluster.spec ?? {})?.name === secret.metadata?.name)
          .map((cluster) => `${cluster.metadata.namespace}/${cluster.metadata.name}`))
      const recorder = manager.recorder('k8s-cluster')

      const refOf = (object: ClusterObject, subresource?: string) => ({...resource, namespace: object.metadata.namespace, name: object.metadata.name, subresource})
      const guard = new Finalizer<ClusterObject>({client, name: finalizers.k8sCluster, refOf: (object) => refOf(object), crd: crdFullName(k8sClusterCrd)})
      const registeredCondition = (object: ClusterObject) =>
        (object.status?.conditions as Condition[] | undefined)?.find((condition) => condition.type === conditionTypes.registered && condition.status === 'True')

      /** The decoded data of a Secret in the CR's namespace; undefined when it does not exist. Stays in the reconcile. */
      const secretData = async (namespace: string, name: string, signal: AbortSignal) => {
        try {
          const secret = await client.request<{data?: Record<string, string>}>({path: resourcePath({...resources.secrets, namespace, name}), signal})
          return Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]))
        } catch (error) {
          if (error instanceof KubeApiError && error.status === 404) return undefined
          throw error
        }
      }

      const cleanup = async (object: ClusterObject, logger: ReconcileContext['logger'], signal: AbortSignal) => {
        const apiId = object.status?.apiID as string | undefined
        if (apiId && registeredCondition(object)?.reason === 'Created') {
          const api = session.client
          if (!api) throw new Error(`cannot delete the API cluster ${apiId} yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
          try {
            await api.k8sClusters.delete(apiId, {signal})
            logger.info('API cluster deleted with the K8sCluster CR that created it', {apiId})
            await recorder.record(object, 'Normal', 'ClusterDeleted', `The cluster ${apiId} this CR registered was deleted in the Polycrate API.`)
          } catch (error) {
            if (!(error instanceof ApiAuthError && error.forbidden)) throw error
            await recorder.record(object, 'Warning', 'ClusterNotDeleted', `The Polycrate API does not let this operator's token delete the cluster ${apiId} (403; agent tokens may not delete clusters): delete it in the dashboard.`)
          }
        }
      }

      /** Registers the slot holder: adopt the workspace's cluster or create it; then its display name etc. */
      const register = async (object: ClusterObject, kubernetesVersion: string | undefined, signal: AbortSignal) => {
        const api = session.client!
        const identity = session.identity!
        const name = object.metadata.name!
        const payload = clusterPayload(name, object.spec, kubernetesVersion)
        let id = object.status?.apiID as string | undefined
        let how = registeredCondition(object)?.reason ?? 'Adopted'
        if (id && !(await api.k8sClusters.findOne({workspaces: identity.workspaceId}, {signal}).then((found) => found?.id === id))) id = undefined
        if (!id) {
          const body: K8sClusterRequest = {kind: object.spec.kind ?? 'generic', name, ...payload}
          const {object: found, created} = identity.clusterId
            ? {object: {id: identity.clusterId}, created: false}
            : await adoptOrCreate(api.k8sClusters, {lookup: {workspaces: identity.workspaceId}, body, signal})
          id = found.id
          how = created ? 'Created' : 'Adopted'
          await recorder.record(object, 'Normal', created ? 'ClusterCreated' : 'ClusterAdopted', created
            ? `The cluster was created in the Polycrate API (${id}).`
            : `The workspace's cluster ${id} in the Polycrate API was adopted; its display name and description now come from this CR.`)
        }
        const hash = configHash(payload)
        const wrote = hash !== object.status?.configHash || id !== object.status?.apiID
        if (wrote) await api.k8sClusters.update(id, payload, {signal})
        return {id, how, hash, wrote}
      }

      const reconcile = async ({key, logger, signal}: ReconcileContext) => {
        const object = clusters.cache.get(key)
        if (!object) return
        // Its CRD is being deleted, not the CR by a user: whatever the CR says, the API object is kept.
        if (await guard.finalize(object, signal, {kept: () => logger.info('CR goes with its CRD; the API cluster is kept'), cleanup: () => cleanup(object, logger, signal)})) return
        const namespace = object.metadata.namespace!
        const spec = object.spec ?? {}
        const ref = credentialsRef(spec)
        const target = probeTarget(spec, namespace, ref ? await secretData(namespace, ref.name, signal) : undefined)
        let probe: {phase: ClusterPhase; reachable?: boolean; reason: string; message: string; version?: string}
        if ('reason' in target) {
          probe = {phase: 'Error', reason: target.reason, message: target.message}
        } else {
          const outcome = await probeApiServer(target, signal)
          probe = {...probeResult(outcome, target.server, `Secret ${namespace}/${ref!.name}`), version: outcome.kind === 'ok' ? outcome.version : undefined}
        }
        const now = new Date().toISOString()
        const generation = object.metadata.generation

        // Registration in the API: the slot holder only.
        let phase = probe.phase
        let sync: {status: 'pending' | 'synced' | 'error'; reason: string; message: string; id?: string; hash?: string; wrote?: boolean; how?: string}
        if (!session.client || !session.identity) {
          sync = {status: 'pending', reason: 'APINotConnected', message: `Not registered yet: ${session.problem ?? 'waiting for the Polycrate API connection'}.`}
        } else {
          const holder = slotHolder(clusters.cache.list().map((c) => {
            const own = `${c.metadata.namespace}/${c.metadata.name}`
            return {
              key: own,
              creationTimestamp: c.metadata.creationTimestamp as string | undefined,
              deleting: Boolean(c.metadata.deletionTimestamp),
              registered: Boolean(c.status?.apiID) && registeredCondition(c) !== undefined,
              ready: own === key ? probe.phase === 'Ready' : c.status?.phase === 'Ready',
            }
          }))
          if (holder === undefined) {
            sync = {status: 'pending', reason: 'NotRegisteredUntilReady', message: 'Registered in the Polycrate API once its API server answers with the credentials (phase Ready).'}
          } else if (holder !== key) {
            phase = 'Error'
            sync = {status: 'error', reason: 'WorkspaceHasCluster', message: `The Polycrate API keeps one cluster per workspace, and K8sCluster ${holder} holds it: this CR is probed but not registered. Delete one of the two.`}
          } else {
            await guard.add(object, signal)
            try {
              const registered = await register(object, probe.version ?? (object.status?.kubernetesVersion as string | undefined), signal)
              sync = {status: 'synced', reason: 'Synced', message: `Registered in the Polycrate API as ${registered.id}.`, ...registered}
            } catch (error) {
              if (signal.aborted) throw error
              sync = {status: 'error', reason: 'RegistrationFailed', message: `Registration in the Polycrate API failed, retrying at the next probe: ${(error as Error).message}`}
            }
          }
        }

        const message = phase === probe.phase ? probe.message : sync.message
        let conditions = setCondition(object.status?.conditions as Condition[] | undefined, {type: conditionTypes.ready, status: probe.phase === 'Ready' ? 'True' : 'False', reason: probe.reason, message: probe.message, observedGeneration: generation}, now)
        conditions = setCondition(conditions, {type: conditionTypes.synced, status: sync.status === 'synced' ? 'True' : 'False', reason: sync.reason, message: sync.message, observedGeneration: generation}, now)
        if (sync.reason === 'WorkspaceHasCluster') conditions = setCondition(conditions, {type: conditionTypes.registered, status: 'False', reason: sync.reason, message: sync.message, observedGeneration: generation}, now)
        if (sync.how) conditions = setCondition(conditions, {type: conditionTypes.registered, status: 'True', reason: sync.how, message: sync.how === 'Created' ? 'This CR created the cluster in the API; deleting the CR deletes it.' : 'This CR adopted the workspace\'s cluster; deleting the CR keeps it.', observedGeneration: generation}, now)
        const patch: Record<string, unknown> = {
          phase,
          reachable: probe.reachable ?? false,
          kubernetesVersion: probe.version ?? object.status?.kubernetesVersion,
          lastProbedAt: now,
          message,
          syncStatus: sync.status,
          apiID: sync.id ?? (sync.reason === 'WorkspaceHasCluster' ? null : object.status?.apiID),
          configHash: sync.hash ?? object.status?.configHash,
          lastSyncedAt: sync.wrote ? now : object.status?.lastSyncedAt,
          observedGeneration: generation,
          conditions,
        }
        if (!statusUnchanged(object.status, patch)) {
          await client.mergePatch(refOf(object, 'status'), {apiVersion: API_VERSION, kind: 'K8sCluster', status: patch}, {signal})
        }
        if (object.status?.phase !== phase || object.status?.message !== message) {
          logger.info('K8sCluster probed', {phase, reason: phase === probe.phase ? probe.reason : sync.reason})
          await recorder.record(object, phase === 'Ready' ? 'Normal' : 'Warning', phase === probe.phase ? probe.reason : sync.reason, message)
        }
        return {requeueAfterMs: intervalMs}
      }

      const running = builder.complete(reconcile)
      return session.resyncing(running)
    },
  }
}
