/**
 * Building blocks for the CRD schemas. The zod schemas in this folder are the single source of truth:
 * the operator types its code with `z.infer`, and `generate.ts` turns them into the OpenAPI v3 schemas
 * of the CustomResourceDefinitions. Only use constructs here that map onto a *structural* schema.
 */
import {z} from 'zod'

/** RFC 3339 timestamp, as Kubernetes writes them (`2026-01-06T14:30:00Z`); offsets are accepted too. */
export const timestamp = () => z.iso.datetime({offset: true})

/** A value Kubernetes stores as `x-kubernetes-int-or-string` (e.g. a port name or number). */
export const intOrString = () => z.union([z.number().int(), z.string()])

/** Really free-form JSON (API pass-through blobs, raw upstream status): `x-kubernetes-preserve-unknown-fields`. */
export const freeForm = () => z.record(z.string(), z.unknown())

/** `metav1.Condition`, the shape `kubectl wait --for=condition=…` understands. */
export const condition = z.object({
  type: z.string().min(1).describe('Type of condition in CamelCase, e.g. Ready or Synced.'),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().optional().describe('Machine-readable reason in CamelCase.'),
  message: z.string().optional().describe('What happened and, for an error, what to do about it.'),
  lastTransitionTime: timestamp().optional(),
  observedGeneration: z.number().int().optional(),
})
export type Condition = z.infer<typeof condition>

/**
 * A list-map keyed by `type`, like `metav1.Condition` lists in Kubernetes' own types: several controllers can
 * each own their conditions through server-side apply without overwriting the others'.
 */
export const conditions = () =>
  z.array(condition)
    .meta({'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type']})
    .optional()
    .describe('Current state of this object, one entry per condition type.')

/** A reference to a key of a Secret in the same namespace. */
export const secretKeyRef = z.object({
  name: z.string().min(1).describe('Name of the Secret.'),
  key: z.string().min(1).describe('Key inside the Secret.'),
})

/** Status fields every camelCase sync kind shares (Endpoint, K8sCluster). */
export const camelSyncStatus = {
  phase: z.string().optional().describe('Lifecycle phase, e.g. Pending, Synced, Error.'),
  apiID: z.string().optional().describe('ID of the object in the Polycrate API.'),
  configHash: z.string().optional().describe('Hash of the spec last synced; unchanged specs cause no API write.'),
  syncStatus: z.string().optional().describe('pending, synced or error.'),
  lastSyncedAt: timestamp().optional(),
  observedGeneration: z.number().int().optional(),
  message: z.string().optional(),
  conditions: conditions(),
}

/** Status fields every snake_case sync kind shares (K8sApp, Certificate, Host, …), as the operator reference spells them. */
export const snakeSyncStatus = {
  phase: z.string().optional().describe('Lifecycle phase, e.g. Pending, Synced, Error.'),
  api_id: z.string().optional().describe('ID of the object in the Polycrate API.'),
  config_hash: z.string().optional().describe('Hash of the spec last synced; unchanged specs cause no API write.'),
  sync_status: z.string().optional().describe('pending, synced or error.'),
  last_synced_at: timestamp().optional(),
  observed_generation: z.number().int().optional(),
  message: z.string().optional(),
  conditions: conditions(),
}
