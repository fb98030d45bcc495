/**
 * The operator-rollout dashboard contract (ours to define: the Polycrate API has no such endpoint yet): what
 * `GET /api/v1/operator-rollout/` returns, and the row the force/pause/resume actions return. The API client
 * validates against these schemas; the simulator produces them.
 */
import {z} from 'zod'

export const rolloutBlocker = z.enum(['no_agent_token', 'operator_config_missing', 'canary_gate'])

export const rolloutCluster = z.object({
  id: z.string(),
  name: z.string(),
  workspace: z.object({id: z.string(), name: z.string()}),
  organization: z.object({id: z.string(), name: z.string()}).nullable(),
  installed_version: z.string().nullable(),
  desired_version: z.string().nullable(),
  up_to_date: z.boolean(),
  agent: z.object({
    id: z.string().nullable(),
    state: z.string().nullable(),
    last_seen: z.string().nullable(),
  }),
  critical: z.boolean(),
  in_maintenance: z.boolean(),
  paused: z.boolean(),
  forced: z.boolean(),
  in_current_batch: z.boolean(),
  blockers: z.array(z.string()),
})

export const rolloutDashboard = z.object({
  desired_version: z.string().nullable(),
  rollout_percentage: z.number(),
  /** version → number of clusters; clusters without an operator count under `null`-version "unknown". */
  fleet: z.array(z.object({version: z.string().nullable(), count: z.number().int()})),
  batch: z.object({size: z.number().int(), cluster_ids: z.array(z.string())}),
  clusters: z.array(rolloutCluster),
})

export type RolloutCluster = z.infer<typeof rolloutCluster>
export type RolloutDashboard = z.infer<typeof rolloutDashboard>
