import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {freeForm, snakeSyncStatus, timestamp} from './schema.js'

/** The Velero or CloudNativePG object a Backup or BackupSchedule was discovered from. */
export const backupSource = z.object({
  kind: z.string().describe('Kind of the source: Backup, Schedule (Velero), Backup or ScheduledBackup (CloudNativePG).'),
  name: z.string().describe('Name of the source object.'),
  namespace: z.string().optional().describe('Namespace of the source object.'),
  uid: z.string().optional().describe('UID of the source object.'),
})

export const backupSpec = z.object({
  name: z.string().min(1).describe('Name of the backup in the API (the source name).'),
  provider: z.string().optional().describe('Backup provider: velero, cloudnativepg or custom.'),
  kind: z.enum(['cluster', 'app', 'database']).optional().describe('What is backed up: cluster, app or database.'),
  source_namespace: z.string().optional().describe('Namespace of the source object.'),
  status: z.enum(['pending', 'running', 'completed', 'failed', 'partial', 'expired', 'unknown']).optional()
    .describe('Status of the backup (Velero Completed → completed, Failed → failed, …).'),
  started_at: timestamp().optional().describe('When the backup started.'),
  completed_at: timestamp().optional().describe('When the backup completed.'),
  expiration: timestamp().optional().describe('When the backup expires.'),
  size_bytes: z.number().int().optional().describe('Size of the backup in bytes.'),
  items_backed_up: z.number().int().optional().describe('Number of items backed up.'),
  retention_policy: z.string().optional().describe('Retention as duration string, e.g. 96h0m0s (Velero spec.ttl).'),
  schedule_name: z.string().optional().describe('Name of the schedule that created the backup.'),
  metadata: freeForm().optional().describe('Provider-specific details passed to the API as is.'),
  source: backupSource.optional().describe('The object this backup was discovered from.'),
})

export const backupStatus = z.object({
  ...snakeSyncStatus,
  schedule_id: z.string().optional().describe('API ID of the BackupSchedule, resolved from schedule_name.'),
})

export type BackupSpec = z.infer<typeof backupSpec>
export type BackupStatus = z.infer<typeof backupStatus>

export const backupCrd = defineCrd({
  ...crdNames.Backup,
  statusStyle: 'snake',
  description: 'A Velero or CloudNativePG backup; created automatically from the backup tools\' objects.',
  spec: backupSpec,
  status: backupStatus,
  printerColumns: [
    {name: 'Provider', type: 'string', jsonPath: '.spec.provider'},
    {name: 'Kind', type: 'string', jsonPath: '.spec.kind'},
    {name: 'Status', type: 'string', jsonPath: '.spec.status'},
    {name: 'Completed', type: 'date', jsonPath: '.spec.completed_at'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
