import type {z} from 'zod'

export const GROUP = 'polycrate.io'
export const VERSION = 'v1alpha1'
export const API_VERSION = `${GROUP}/${VERSION}`

export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date'
  jsonPath: string
  description?: string
  priority?: number
}

/** Everything the generator needs to know about one polycrate.io kind. */
export interface CrdDefinition<Spec extends z.ZodType = z.ZodType, Status extends z.ZodType = z.ZodType> {
  kind: string
  plural: string
  singular: string
  shortNames: readonly string[]
  scope: 'Namespaced' | 'Cluster'
  description: string
  spec: Spec
  status: Status
  /** Columns of `kubectl get`; NAME (and NAMESPACE with -A) come for free, AGE is appended. */
  printerColumns: PrinterColumn[]
  /**
   * How the sync status fields are spelled, as the operator reference's examples do: `camel` (`status.apiID`, `configHash`,
   * `syncStatus`, `lastSyncedAt`: Endpoint, K8sCluster) or `snake` (`status.api_id`, …: the others).
   */
  statusStyle?: StatusStyle
}

export type StatusStyle = 'camel' | 'snake'

/** The sync status field names of a style. */
export function syncStatusFields(style: StatusStyle): {apiId: string; configHash: string; syncStatus: string; lastSyncedAt: string; observedGeneration: string} {
  return style === 'camel'
    ? {apiId: 'apiID', configHash: 'configHash', syncStatus: 'syncStatus', lastSyncedAt: 'lastSyncedAt', observedGeneration: 'observedGeneration'}
    : {apiId: 'api_id', configHash: 'config_hash', syncStatus: 'sync_status', lastSyncedAt: 'last_synced_at', observedGeneration: 'observed_generation'}
}

/** Where the objects of a kind are served (`/apis/polycrate.io/v1alpha1/…/<plural>`). */
/** The CRD's full name, `<plural>.polycrate.io`. */
export function crdFullName(def: Pick<CrdDefinition, 'plural'>): string {
  return `${def.plural}.${GROUP}`
}

export function crdResource(definition: Pick<CrdDefinition, 'plural'>): {group: string; version: string; plural: string} {
  return {group: GROUP, version: VERSION, plural: definition.plural}
}

export function defineCrd<Spec extends z.ZodType, Status extends z.ZodType>(
  definition: CrdDefinition<Spec, Status>,
): CrdDefinition<Spec, Status> {
  return definition
}

/** A typed custom object of one of our kinds, as read from the cluster. */
export interface CustomObject<Spec, Status> {
  apiVersion: string
  kind: string
  metadata: {
    name: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    generation?: number
    creationTimestamp?: string
    deletionTimestamp?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    finalizers?: string[]
    ownerReferences?: Array<{apiVersion: string; kind: string; name: string; uid: string; controller?: boolean}>
  }
  spec: Spec
  status?: Status
}
