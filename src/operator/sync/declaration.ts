/** What a kind declares to the generic API sync engine (engine.ts): its CRD, its API resource and its pure payload. */
import type {Filters, PolycrateApiClient, Resource} from '../../api/index.js'
import type {CrdDefinition, CustomObject} from '../../crds/define.js'
import type {ApiIdentity} from '../agent/api-session.js'
import type {OperatorConfig} from '../config/operator-config.js'
import type {ObjectCache} from '../runtime/cache.js'

export type SyncObject<Spec> = CustomObject<Spec, Record<string, unknown>>
/** The cache of the declaration's `related` CRs (empty without one). */
export type RelatedCache = ObjectCache<CustomObject<Record<string, unknown>, Record<string, unknown>>>
export interface ApiObject {
  id: string
  is_deleted?: boolean | null
}

export interface SyncDeclaration<Spec, Body, Api extends ApiObject, Links = undefined> {
  /** Feature and controller name (`host-sync`). */
  name: string
  crd: CrdDefinition
  finalizer: string
  /** What to call the object in messages (`host`, `endpoint`). */
  noun: string
  /** Default: `api_sync.enabled`. */
  enabled?(config: OperatorConfig): boolean
  api(client: PolycrateApiClient): Resource<Api, Body>
  /** The API object needs this cluster's K8sCluster id (k8s_cluster): wait for `local_cluster` to resolve it. */
  requiresCluster?: boolean
  /**
   * CRs of another polycrate.io kind this kind's payload links to by their API id (a Backup → its BackupSchedule):
   * the sync watches them, reads them in `links` (`related`), and a change of one (e.g. it got its API id) resyncs
   * the CRs `toKeys` names — the link never depends on which of the two synced first.
   */
  related?: {
    crd: CrdDefinition
    toKeys(related: CustomObject<Record<string, unknown>, Record<string, unknown>>, primaries: ObjectCache<SyncObject<Spec>>): string[]
    /** Which updates of a related CR matter to the links (e.g. its API id); without it, every update. */
    changed?(old: CustomObject<Record<string, unknown>, Record<string, unknown>>, next: CustomObject<Record<string, unknown>, Record<string, unknown>>): boolean
  }
  /** Lookups the payload needs (e.g. the K8sApp's API id); may call the API, must pass `signal` on. */
  links?(object: SyncObject<Spec>, api: PolycrateApiClient, identity: ApiIdentity, signal: AbortSignal, related: RelatedCache): Promise<Links>
  /** Pure: the request body for this CR. */
  payload(object: SyncObject<Spec>, context: {identity: ApiIdentity; links: Links}): Body
  /** The natural key as list filters, for adopt-or-create. */
  lookup(body: Body, identity: ApiIdentity): Filters
  /** Narrows the lookup's candidates (e.g. same namespace). */
  matches?(candidate: Api, body: Body): boolean
  /** Filters listing every API object of this cluster (the inventory check). */
  inventory(identity: ApiIdentity): Filters
  /**
   * The lookup's natural key, of a request body and of a listed API object — only for a kind whose key the API
   * enforces as unique (a second create gets 409). Adopt-or-create then skips the lookup for a key the inventory
   * listing does not hold: a stale listing costs a 409 and the real lookup, never a duplicate. Without it, every
   * create looks up first.
   */
  naturalKey?: {body(body: Body): string; object(object: Api): string}
  /**
   * Removes the API object when its CR goes (default: DELETE); returns what happened, for the log. K8sApps, which
   * agent tokens may not delete, are marked uninstalled instead. `now`: the manager's clock, in ms.
   */
  remove?(api: PolycrateApiClient, id: string, object: SyncObject<Spec>, signal: AbortSignal, now: number): Promise<string>
  /**
   * How long a new CR must have existed before its API object is created (ms since creationTimestamp; default 0).
   * For CRs that discovery may take back at once (a K8sApp claimed by annotation whose name turns out to be claimed
   * in another namespace too), so a short-lived claim leaves nothing in the API.
   */
  createAfterMs?(object: SyncObject<Spec>): number
  /** Status fields of the kind beyond the generic ones (e.g. Endpoint `k8sAppID`). */
  extraStatus?(links: Links): Record<string, unknown>
}
