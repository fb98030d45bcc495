import {z} from 'zod'
import {backupSource} from './backup.js'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {freeForm, snakeSyncStatus, timestamp} from './schema.js'

export const backupScheduleSpec = z.object({
  name: z.string().min(1).describe('Name of the schedule in the API (the source name).'),
  provider: z.string().optional().describe('Backup provider: velero, cloudnativepg or custom.'),
  kind: z.enum(['cluster', 'app', 'database']).optional().describe('What is backed up: cluster, app or database.'),
  source_namespace: z.string().optional().describe('Namespace of the source object.'),
  status: z.enum(['active', 'paused', 'failed', 'unknown']).optional().describe('Status of the schedule.'),
  schedule_cron: z.string().optional().describe('Cron expression of the schedule.'),
  paused: z.boolean().optional().describe('The schedule is paused.'),
  retention_policy: z.string().optional().describe('Retention of the backups as duration string, e.g. 720h0m0s.'),
  last_backup_at: timestamp().optional().describe('When the last backup started.'),
  last_backup_name: z.string().optional().describe('Name of the last backup.'),
  total_backups: z.number().int().optional().describe('Number of backups of this schedule.'),
  metadata: freeForm().optional().describe('Provider-specific details passed to the API as is.'),
  source: backupSource.optional().describe('The object this schedule was discovered from.'),
})

export const backupScheduleStatus = z.object({
  ...snakeSyncStatus,
})

export type BackupScheduleSpec = z.infer<typeof backupScheduleSpec>
export type BackupScheduleStatus = z.infer<typeof backupScheduleStatus>

export const backupScheduleCrd = defineCrd({
  ...crdNames.BackupSchedule,
  statusStyle: 'snake',
  description: 'A Velero or CloudNativePG backup schedule; created automatically from the backup tools\' objects.',
  spec: backupScheduleSpec,
  status: backupScheduleStatus,
  printerColumns: [
    {name: 'Provider', type: 'string', jsonPath: '.spec.provider'},
    {name: 'Schedule', type: 'string', jsonPath: '.spec.schedule_cron'},
    {name: 'Paused', type: 'boolean', jsonPath: '.spec.paused'},
    {name: 'Last Backup', type: 'date', jsonPath: '.spec.last_backup_at'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
