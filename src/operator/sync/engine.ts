/**
 * The generic sync feature: each CR of a kind → one object in the Polycrate API. A kind is a declaration plus a
 * pure payload function; the generic part owns, for every kind alike:
 *
 * - the finalizer (kube-rs' `finalizer()` Apply/Cleanup): on before the API object can exist (discovered CRs are
 *   created with it already), and on deletion the API object is deleted before it is removed — unless the CR goes
 *   because its CRD is being deleted (read live): then it is released and the API object kept, for adoption later;
 * - the existence check that recreates an object deleted on the API side (self-healing),
 *   adopt-or-create by the kind's natural key (a crash between create and status write never duplicates), and
 *   writes only when the payload hash (`configHash`/`config_hash`) changed;
 * - the status in the kind's style (`statusStyle` of its CRD: `apiID` or `api_id`, …), one write per change;
 * - terminal errors (the API refuses the object as it is: 400, 403) → phase Error, a Warning Event, no retry until
 *   the spec changes; transient ones (network, 5xx, 429) → phase Error and a retry with the queue's backoff;
 * - the inventory check every sync interval: one paged listing of the cluster's API objects instead of a GET per CR;
 *   a CR whose API object is missing is reconciled at once. For a kind with a `naturalKey` the same listing (taken
 *   once on demand, then every interval) answers adopt-or-create's lookup for keys it does not hold
 *   (inventory-keys.ts), so a new object costs one POST instead of a GET and a POST;
 * - API-bound concurrency: the sync's workers are `--max-concurrent-syncs` (the manager's `maxConcurrentSyncs`), not
 *   `--max-concurrent-reconciles`, since a sync mostly waits on the API and the apiserver; the reads of one sync
 *   (links, the existence check) run while its finalizer patch is in flight.
 * Every API and kube call takes the reconcile's AbortSignal (shutdown, lost leadership).
 */
import {crdFullName, crdResource, type CustomObject} from '../../crds/define.js'
import {repeat} from '../../lib/clock.js'
import type {ApiSession} from '../agent/api-session.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {READ} from '../permissions.js'
import {ObjectCache} from '../runtime/cache.js'
import {specMetadataOrDeletionChanged} from '../runtime/predicates.js'
import {InventoryLoader} from './inventory-loader.js'
import {SyncReconciler} from './reconciler.js'
import type {ApiObject, SyncDeclaration, SyncObject, RelatedCache} from './declaration.js'

export type {ApiObject, RelatedCache, SyncDeclaration, SyncObject} from './declaration.js'



export function defineSync<Spec, Body, Api extends ApiObject, Links = undefined>(
  session: ApiSession,
  declaration: SyncDeclaration<Spec, Body, Api, Links>,
): Feature<OperatorConfig> {
  const resource = crdResource(declaration.crd)
  return {
    name: declaration.name,
    enabled: declaration.enabled ?? ((config) => config.api_sync.enabled),
    requiredCrds: [crdFullName(declaration.crd), ...(declaration.related ? [crdFullName(declaration.related.crd)] : [])],
    // Reads its CRs, sets and releases its finalizer, writes their status; reads the related CRs.
    permissions: [
      {group: resource.group, resource: resource.plural, verbs: [...READ, 'patch', 'update']},
      {group: resource.group, resource: `${resource.plural}/status`, verbs: ['get', 'patch', 'update']},
      ...(declaration.related ? [{group: crdResource(declaration.related.crd).group, resource: crdResource(declaration.related.crd).plural, verbs: READ}] : []),
    ],
    settings: (config) => ({api: config.api_sync.api_url, interval: config.api_sync.sync_interval_seconds}),
    start(manager, config) {
      const {crd} = declaration
      const stopping = new AbortController()
      const builder = manager.controller(declaration.name)
      const objects = builder.for<SyncObject<Spec>>({resource, kind: crd.kind}, {onUpdate: specMetadataOrDeletionChanged})
      const relatedDeclaration = declaration.related
      const related: RelatedCache = relatedDeclaration
        ? builder.watches<CustomObject<Record<string, unknown>, Record<string, unknown>>>(
          {resource: crdResource(relatedDeclaration.crd), kind: relatedDeclaration.crd.kind},
          (object) => relatedDeclaration.toKeys(object, objects.cache),
          relatedDeclaration.changed ? {onUpdate: (old, next) => relatedDeclaration.changed!(old, next)} : {},
        ).cache
        : new ObjectCache()
      // Natural keys of the API objects (one listing, refreshed by the inventory check): adopt-or-create skips its
      // lookup for keys absent there. Replaced when the session changes (another workspace or cluster).
      const inventory = new InventoryLoader<Api>({
        list: (api, identity, signal) => declaration.api(api).list(declaration.inventory(identity), {signal}),
        naturalKey: declaration.naturalKey ? (item) => declaration.naturalKey!.object(item) : undefined,
      }, stopping.signal, () => manager.clock.now())
      const reconciler = new SyncReconciler<Spec, Body, Api, Links>({
        declaration, session, client: manager.client, objects: objects.cache, related, events: manager.recorder(declaration.name), inventory,
        clock: manager.clock,
      })

      const running = builder.complete((context) => reconciler.reconcile(context), {maxConcurrentReconciles: manager.maxConcurrentSyncs})
      const unsubscribe = session.onChange(() => {
        inventory.reset()
        running.controller.resync()
      })
      // Inventory check every sync interval (on the manager's timers, not keeping the process alive): an object whose
      // API twin is gone is reconciled (and recreated) at once.
      const stopCheck = repeat(
        manager.clock,
        config.api_sync.sync_interval_seconds * 1000,
        () => void reconciler.checkInventory(manager.isLeader && objects.hasSynced(), (key) => running.enqueue(key), running.logger),
      )
      return {
        async stop() {
          stopCheck()
          stopping.abort()
          unsubscribe()
          await running.stop()
        },
      }
    },
  }
}
