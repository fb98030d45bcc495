import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {snakeSyncStatus} from './schema.js'

export const organizationSpec = z.object({
  name: z.string().min(1).describe('Name of the organization.'),
  display_name: z.string().optional().describe('Human-readable name.'),
  slug: z.string().optional().describe('URL-safe identifier of the organization.'),
  description: z.string().optional().describe('Free-text description.'),
})

export const organizationStatus = z.object({
  ...snakeSyncStatus,
})

export type OrganizationSpec = z.infer<typeof organizationSpec>
export type OrganizationStatus = z.infer<typeof organizationStatus>

export const organizationCrd = defineCrd({
  ...crdNames.Organization,
  statusStyle: 'snake',
  description: 'An organization of the Polycrate API.',
  spec: organizationSpec,
  status: organizationStatus,
  printerColumns: [
    {name: 'Display Name', type: 'string', jsonPath: '.spec.display_name'},
    {name: 'Slug', type: 'string', jsonPath: '.spec.slug'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
