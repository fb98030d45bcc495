/**
 * The reconcile of one K8sCluster CR (k8scluster.reconciler.ts wires it to a controller): probe its API server with its own
 * credentials, register the slot holder in the Polycrate API, write the status and an Event when phase or message
 * change. Credentials stay inside the reconcile: the probe target is never logged, and no message, Event or status
 * field carries them.
 */
import {adoptOrCreate, ApiAuthError, ApiNotFoundError, type K8sCluster, type K8sClusterRequest} from '../../../api/index.js'
import {API_VERSION, crdFullName, crdResource, type CustomObject} from '../../../crds/define.js'
import {k8sClusterCrd, type K8sClusterSpec} from '../../../crds/k8scluster.js'
import type {Condition} from '../../../crds/schema.js'
import {KubeApiError, type KubeClient} from '../../../kube/client.js'
import type {EventRecorder} from '../../../kube/events.js'
import type {Logger} from '../../../lib/logger.js'
import type {ApiSession} from '../../agent/api-session.js'
import {findStatusCondition, setStatusCondition} from '../../../kube/conditions.js'
import {annotations, conditionTypes, finalizers} from '../../conventions.js'
import type {ObjectCache} from '../../runtime/cache.js'
import type {ReconcileContext, ReconcileResult} from '../../runtime/controller.js'
import {Finalizer} from '../../runtime/finalizer.js'
import {configHash} from '../../sync/hash.js'
import {statusUnchanged} from '../../sync/status.js'
import {clusterPayload, credentialsRef, probeResult, probeTarget, slotHolder, type ClusterPhase} from './k8scluster.mapping.js'
import {probeApiServer} from './k8scluster.probe.js'
import {objectRef} from '../../../kube/resources.js'
import {isoNow, systemClock, type Clock} from '../../../lib/clock.js'

export type ClusterObject = CustomObject<K8sClusterSpec, Record<string, unknown>>

/** What the probe found. */
export interface Probe {
  phase: ClusterPhase
  reachable?: boolean
  reason: string
  message: string
  version?: string
}

/** Where the registration in the API stands. */
export interface Registration {
  status: 'pending' | 'synced' | 'error'
  reason: string
  message: string
  id?: string
  /** The payload's hash in the API; null: cleared before an update whose answer never came (the API may hold either). */
  hash?: string | null
  wrote?: boolean
  how?: string
}

/**
 * Whether the API cluster was created by the CR with `uid` (pure): the mark the create put on it. An adopted cluster
 * (local_cluster's, or one made in the dashboard) carries none.
 */
export function createdByCr(cluster: Pick<K8sCluster, 'annotations'>, uid: string | undefined): boolean {
  const marks = cluster.annotations
  return uid !== undefined && typeof marks === 'object' && marks !== null && (marks as Record<string, unknown>)[annotations.k8sClusterCreatedBy] === uid
}

/** Whether the API cluster's fields that the CR sets differ from the payload (pure); undefined: not read. */
export function clusterDrifted(cluster: K8sCluster | undefined, payload: ReturnType<typeof clusterPayload>): boolean {
  if (!cluster) return false
  return (cluster.display_name ?? '') !== payload.display_name ||
    (cluster.description ?? '') !== payload.description ||
    (payload.kubernetes_version !== undefined && cluster.kubernetes_version !== payload.kubernetes_version)
}

/** The CR's Registered=True condition, if it has one. */
export function registeredCondition(object: ClusterObject): Condition | undefined {
  const registered = findStatusCondition(object.status?.conditions as Condition[] | undefined, conditionTypes.registered)
  return registered?.status === 'True' ? registered : undefined
}

/** The CRs as slotHolder sees them; the one being reconciled (`key`) counts with the phase just probed (pure). */
export function slotCandidates(clusters: readonly ClusterObject[], key: string, probedPhase: ClusterPhase): Parameters<typeof slotHolder>[0] {
  return clusters.map((c) => {
    const own = `${c.metadata.namespace}/${c.metadata.name}`
    return {
      key: own,
      creationTimestamp: c.metadata.creationTimestamp as string | undefined,
      deleting: Boolean(c.metadata.deletionTimestamp),
      registered: Boolean(c.status?.apiID) && registeredCondition(c) !== undefined,
      ready: own === key ? probedPhase === 'Ready' : c.status?.phase === 'Ready',
      unprobed: own !== key && !c.status?.phase,
    }
  })
}

/**
 * The status after a probe and a registration attempt (pure): the phase is the probe's unless the registration
 * overrides it (WorkspaceHasCluster), and so is the message; Ready, Synced and Registered conditions.
 */
export function clusterStatus(previous: Record<string, unknown> | undefined, generation: number | undefined, probe: Probe, phase: ClusterPhase, sync: Registration, now: string): {patch: Record<string, unknown>; message: string} {
  const message = phase === probe.phase ? probe.message : sync.message
  let conditions = setStatusCondition(previous?.conditions as Condition[] | undefined, {type: conditionTypes.ready, status: probe.phase === 'Ready' ? 'True' : 'False', reason: probe.reason, message: probe.message, observedGeneration: generation}, now)
  conditions = setStatusCondition(conditions, {type: conditionTypes.synced, status: sync.status === 'synced' ? 'True' : 'False', reason: sync.reason, message: sync.message, observedGeneration: generation}, now)
  if (sync.reason === 'WorkspaceHasCluster') conditions = setStatusCondition(conditions, {type: conditionTypes.registered, status: 'False', reason: sync.reason, message: sync.message, observedGeneration: generation}, now)
  if (sync.how) conditions = setStatusCondition(conditions, {type: conditionTypes.registered, status: 'True', reason: sync.how, message: sync.how === 'Created' ? 'This CR created the cluster in the API; deleting the CR deletes it.' : 'This CR adopted the workspace\'s cluster; deleting the CR keeps it.', observedGeneration: generation}, now)
  return {
    message,
    patch: {
      phase,
      reachable: probe.reachable ?? false,
      kubernetesVersion: probe.version ?? previous?.kubernetesVersion,
      lastProbedAt: now,
      message,
      syncStatus: sync.status,
      apiID: sync.id ?? (sync.reason === 'WorkspaceHasCluster' ? null : previous?.apiID),
      configHash: sync.hash !== undefined ? sync.hash : previous?.configHash,
      lastSyncedAt: sync.wrote ? now : previous?.lastSyncedAt,
      observedGeneration: generation,
      conditions,
    },
  }
}

export interface K8sClusterRegistrarOptions {
  session: Pick<ApiSession, 'client' | 'identity' | 'problem'>
  client: KubeClient
  clusters: ObjectCache<ClusterObject>
  events: Pick<EventRecorder, 'record'>
  /** The sync interval: every CR is probed again this often. */
  intervalMs: number
  /** The probe (the real one by default; unit tests pass a fake). */
  probe?: typeof probeApiServer
  /** The manager's clock (status timestamps). */
  clock?: Clock
}

export class K8sClusterRegistrar {
  readonly finalizer: Finalizer<ClusterObject>
  private readonly resource = crdResource(k8sClusterCrd)

  constructor(private readonly options: K8sClusterRegistrarOptions) {
    this.finalizer = new Finalizer<ClusterObject>({client: options.client, name: finalizers.k8sCluster, resource: this.resource, crd: crdFullName(k8sClusterCrd)})
  }

  async reconcile({key, logger, signal}: ReconcileContext): Promise<ReconcileResult | undefined> {
    const object = this.options.clusters.get(key)
    if (!object) return
    // Its CRD is being deleted, not the CR by a user: whatever the CR says, the API object is kept.
    if (await this.finalizer.finalize(object, signal, {kept: () => logger.info('CR goes with its CRD; the API cluster is kept'), cleanup: () => this.cleanup(object, logger, signal)})) return
    const probe = await this.probe(object, signal)
    const now = isoNow(this.options.clock ?? systemClock)
    const {phase, sync} = await this.registration(object, key, probe, signal)
    const {patch, message} = clusterStatus(object.status, object.metadata.generation, probe, phase, sync, now)
    if (!statusUnchanged(object.status, patch)) {
      await this.options.client.mergePatch(objectRef(this.resource, object, 'status'), {apiVersion: API_VERSION, kind: 'K8sCluster', status: patch}, {signal})
    }
    if (object.status?.phase !== phase || object.status?.message !== message) {
      logger.info('K8sCluster probed', {phase, reason: phase === probe.phase ? probe.reason : sync.reason})
      await this.options.events.record(object, phase === 'Ready' ? 'Normal' : 'Warning', phase === probe.phase ? probe.reason : sync.reason, message)
    }
    return {requeueAfterMs: this.options.intervalMs}
  }

  /** The CR's API server, with the credentials of the Secret it names. */
  private async probe(object: ClusterObject, signal: AbortSignal): Promise<Probe> {
    const namespace = object.metadata.namespace!
    const spec = object.spec ?? {}
    const ref = credentialsRef(spec)
    const target = probeTarget(spec, namespace, ref ? await this.secretData(namespace, ref.name, signal) : undefined)
    if ('reason' in target) return {phase: 'Error', reason: target.reason, message: target.message}
    const outcome = await (this.options.probe ?? probeApiServer)(target, signal)
    return {...probeResult(outcome, target.server, `Secret ${namespace}/${ref!.name}`), version: outcome.kind === 'ok' ? outcome.version : undefined}
  }

  /** Registration in the API: the slot holder only. The phase is the probe's unless another CR holds the slot. */
  private async registration(object: ClusterObject, key: string, probe: Probe, signal: AbortSignal): Promise<{phase: ClusterPhase; sync: Registration}> {
    const {session} = this.options
    if (!session.client || !session.identity) {
      return {phase: probe.phase, sync: {status: 'pending', reason: 'APINotConnected', message: `Not registered yet: ${session.problem ?? 'waiting for the Polycrate API connection'}.`}}
    }
    let holder = slotHolder(slotCandidates(this.options.clusters.list(), key, probe.phase))
    // Not registered yet by its status: the API's mark may say that another CR created the workspace's cluster (its
    // status write lost to a crash, or not written yet): that CR holds the slot, whatever the statuses say.
    if (holder === key && !(object.status?.apiID && registeredCondition(object))) holder = (await this.creatorOfWorkspaceCluster(signal)) ?? holder
    if (holder === undefined && probe.phase === 'Ready') {
      const older = slotCandidates(this.options.clusters.list(), key, probe.phase).find((claim) => claim.unprobed && !claim.deleting)
      return {phase: probe.phase, sync: {status: 'pending', reason: 'WaitingForOlderCluster', message: `K8sCluster ${older?.key ?? 'an older CR'} is older and not probed yet: it takes the workspace's one cluster slot if its API server answers; this CR only if it does not.`}}
    }
    if (holder === undefined) {
      return {phase: probe.phase, sync: {status: 'pending', reason: 'NotRegisteredUntilReady', message: 'Registered in the Polycrate API once its API server answers with the credentials (phase Ready).'}}
    }
    if (holder !== key) {
      return {phase: 'Error', sync: {status: 'error', reason: 'WorkspaceHasCluster', message: `The Polycrate API keeps one cluster per workspace, and K8sCluster ${holder} holds it: this CR is probed but not registered. Delete one of the two.`}}
    }
    await this.finalizer.add(object, signal)
    let cleared = false
    try {
      const registered = await this.register(object, probe.version ?? (object.status?.kubernetesVersion as string | undefined), signal, () => (cleared = true))
      return {phase: probe.phase, sync: {status: 'synced', reason: 'Synced', message: `Registered in the Polycrate API as ${registered.id}.`, ...registered}}
    } catch (error) {
      if (signal.aborted) throw error
      // An update that failed after the hash was cleared may still have been applied: the hash stays cleared.
      return {phase: probe.phase, sync: {status: 'error', reason: 'RegistrationFailed', message: `Registration in the Polycrate API failed, retrying at the next probe: ${(error as Error).message}`, ...(cleared ? {hash: null} : {})}}
    }
  }

  /**
   * The CR (its key) whose uid marks the workspace's API cluster as created by it, when that CR exists and is not
   * being deleted; undefined when the workspace has no cluster or an unmarked one (to adopt).
   */
  private async creatorOfWorkspaceCluster(signal: AbortSignal): Promise<string | undefined> {
    const api = this.options.session.client!
    const cluster = await api.k8sClusters.findOne({workspaces: this.options.session.identity!.workspaceId}, {signal})
    if (!cluster) return undefined
    const creator = this.options.clusters.list().find((candidate) => !candidate.metadata.deletionTimestamp && createdByCr(cluster, candidate.metadata.uid as string | undefined))
    return creator ? `${creator.metadata.namespace}/${creator.metadata.name}` : undefined
  }

  /** Registers the slot holder: adopt the workspace's cluster or create it; then its display name etc. */
  private async register(object: ClusterObject, kubernetesVersion: string | undefined, signal: AbortSignal, onHashCleared: () => void): Promise<{id: string; how: string; hash: string; wrote: boolean}> {
    const api = this.options.session.client!
    const identity = this.options.session.identity!
    const name = object.metadata.name!
    const payload = clusterPayload(name, object.spec, kubernetesVersion)
    let id = object.status?.apiID as string | undefined
    let how = registeredCondition(object)?.reason ?? 'Adopted'
    /** The API cluster as read in this reconcile. */
    let inApi: K8sCluster | undefined
    if (id) {
      const found = await api.k8sClusters.findOne({workspaces: identity.workspaceId}, {signal})
      if (found?.id === id) inApi = found
      else id = undefined
    }
    if (!id) {
      // The create marks the cluster as this CR's (its uid in the API object's annotations), in the same request:
      // a cluster this CR created in an attempt whose answer or status write got lost (a crash between the two) is
      // found again by the workspace, and by the mark it is still this CR's to delete, not an adopted one.
      const uid = object.metadata.uid as string | undefined
      const body: K8sClusterRequest = {kind: object.spec.kind ?? 'generic', name, ...payload, ...(uid ? {annotations: {[annotations.k8sClusterCreatedBy]: uid}} : {})}
      const known = identity.clusterId ? await api.k8sClusters.get(identity.clusterId, {signal}).catch((error: unknown) => {
        if (error instanceof ApiNotFoundError) return undefined
        throw error
      }) : undefined
      const {object: found, created} = known
        ? {object: known, created: false}
        : await adoptOrCreate(api.k8sClusters, {lookup: {workspaces: identity.workspaceId}, body, signal, clock: this.options.clock})
      id = found.id
      inApi = found
      const ours = created || createdByCr(found, uid)
      how = ours ? 'Created' : 'Adopted'
      await this.options.events.record(object, 'Normal', ours ? 'ClusterCreated' : 'ClusterAdopted', ours
        ? `The cluster was created in the Polycrate API (${id}).`
        : `The workspace's cluster ${id} in the Polycrate API was adopted; its display name and description now come from this CR.`)
    }
    const hash = configHash(payload)
    // Level-triggered: the API cluster as read, not only the hash of the last write, says whether to write. A write
    // of the CR that held the slot before, answered late (or retried) after this one, leaves its payload in the API.
    const wrote = hash !== object.status?.configHash || id !== object.status?.apiID || clusterDrifted(inApi, payload)
    // As the generic sync does: the recorded hash goes before an update of another payload, so a process that dies
    // (or loses the answer) between the update and the status write cannot leave the old hash beside the new payload,
    // which would keep a spec that returns to the old payload from ever being pushed again.
    if (object.status?.configHash && hash !== object.status.configHash) {
      await this.options.client.mergePatch(objectRef(this.resource, object, 'status'), {apiVersion: API_VERSION, kind: 'K8sCluster', status: {configHash: null}}, {signal})
      onHashCleared()
    }
    if (wrote) await api.k8sClusters.update(id, payload, {signal})
    return {id, how, hash, wrote}
  }

  /** The finalizer's cleanup: the API cluster goes only when this CR created it. */
  private async cleanup(object: ClusterObject, logger: Logger, signal: AbortSignal): Promise<void> {
    const {session, events} = this.options
    const apiId = object.status?.apiID as string | undefined
    if (!apiId || registeredCondition(object)?.reason !== 'Created') return
    const api = session.client
    if (!api) throw new Error(`cannot delete the API cluster ${apiId} yet: ${session.problem ?? 'the Polycrate API is not connected'}`)
    try {
      await api.k8sClusters.delete(apiId, {signal})
      logger.info('API cluster deleted with the K8sCluster CR that created it', {apiId})
      await events.record(object, 'Normal', 'ClusterDeleted', `The cluster ${apiId} this CR registered was deleted in the Polycrate API.`)
    } catch (error) {
      if (!(error instanceof ApiAuthError && error.forbidden)) throw error
      await events.record(object, 'Warning', 'ClusterNotDeleted', `The Polycrate API does not let this operator's token delete the cluster ${apiId} (403; agent tokens may not delete clusters): delete it in the dashboard.`)
    }
  }

  /** The decoded data of a Secret in the CR's namespace; undefined when it does not exist. Stays in the reconcile. */
  private async secretData(namespace: string, name: string, signal: AbortSignal): Promise<Record<string, string> | undefined> {
    try {
      const secret = await this.options.client.request<{data?: Record<string, string>}>({path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`, signal})
      return Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]))
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined
      throw error
    }
  }
}
