import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {backupSpec, type BackupSpec} from '../../../../src/crds/backup.js'
import {backupScheduleSpec, type BackupScheduleSpec} from '../../../../src/crds/backupschedule.js'
import {
  cnpgBackup,
  cnpgScheduledBackup,
  veleroBackup,
  veleroSchedule,
  type BackupDiscoveryResult,
  type BackupScheduleDiscoveryResult,
  type CnpgBackupLike,
  type CnpgScheduledBackupLike,
  type VeleroBackupLike,
  type VeleroScheduleLike,
} from '../../../../src/operator/kinds/backup/backup.mapping.js'
import {discoveredCrName} from '../../../../src/operator/discovery/names.js'
import {normalizeTimestamp} from '../../../../src/operator/discovery/timestamps.js'
import type {DiscoveryProblem} from '../../../../src/operator/discovery/types.js'
import {backupPayload, backupProvider, backupSchedulePayload} from '../../../../src/operator/kinds/backup/backup.payload.js'
import {desiredBackup} from '../../../../src/operator/kinds/backup/backup.discovery.js'
import {operatorConfigSpec} from '../../../../src/crds/operatorconfig.js'
import {sha8, checkedSpec, checkedName, checkedProblems, checkedSlug} from '../../../support/helpers.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

const NOW = Date.parse('2024-03-15T12:00:00Z')

type Patch = Record<string, unknown>

/** A deep merge of `patch` into a copy of `base`: objects merge, anything else replaces, null removes the key. */
function merge<T>(base: T, patch: Patch = {}): T {
  const out = structuredClone(base) as Record<string, unknown>
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else if (isPlain(value) && isPlain(out[key])) out[key] = merge(out[key], value as Patch)
    else out[key] = value
  }
  return out as T
}
const isPlain = (v: unknown): v is Patch => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date)

/** A spec with top-level fields replaced; `remove` drops fields (also inside metadata: "metadata.key"). */
function withChanges<T extends object>(full: T, overrides: Patch, remove: string[]): T {
  const out = {...full, ...overrides} as Record<string, unknown>
  for (const key of remove) {
    if (key.startsWith('metadata.')) {
      const metadata = {...out.metadata as Patch}
      delete metadata[key.slice('metadata.'.length)]
      out.metadata = metadata
    } else delete out[key]
  }
  return out as T
}

const sha10 = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 10)

function checkedBackup(result: BackupDiscoveryResult): BackupDiscoveryResult {
  if (result.cr) {
    checkedSpec(backupSpec, result.cr.spec)
    checkedSlug(result.cr.spec.name)
    checkedName(result.cr.name)
  }
  checkedProblems(result.problems)
  return result
}

function checkedSchedule(result: BackupScheduleDiscoveryResult): BackupScheduleDiscoveryResult {
  if (result.cr) {
    checkedSpec(backupScheduleSpec, result.cr.spec)
    checkedSlug(result.cr.spec.name, Infinity)
    assert.ok(result.cr.name.length <= 253)
  }
  checkedProblems(result.problems)
  return result
}

const problem = (reason: string, message: string): DiscoveryProblem => ({reason, message})
const timestampProblem = (subject: string, path: string, value: string, field: string) =>
  problem('InvalidTimestamp', `${subject}: ${path} ${value} is not an RFC 3339 timestamp such as "2024-01-01T00:00:00Z"; ${field} is left out.`)

// -- Velero Backup fixtures -------------------------------------------------------------------------------------

const VB = 'Velero Backup "velero/daily-20240315030000"'

const veleroBackupBase: VeleroBackupLike = {
  metadata: {
    name: 'daily-20240315030000',
    namespace: 'velero',
    uid: 'uid-vb-1',
    labels: {'velero.io/schedule-name': 'daily', 'velero.io/storage-location': 'default'},
  },
  spec: {ttl: '720h0m0s', includedNamespaces: ['*'], storageLocation: 'default'},
  status: {
    phase: 'Completed',
    startTimestamp: '2024-03-15T03:00:00Z',
    completionTimestamp: '2024-03-15T03:05:10Z',
    expiration: '2024-04-14T03:00:00Z',
    progress: {totalItems: 120, itemsBackedUp: 120},
    errors: 0,
    warnings: 2,
  },
}
const vBackup = (patch?: Patch): VeleroBackupLike => merge(veleroBackupBase, patch)

const veleroBackupSpec: BackupSpec = {
  name: 'daily-20240315030000',
  provider: 'velero',
  kind: 'cluster',
  source_namespace: 'velero',
  status: 'completed',
  started_at: '2024-03-15T03:00:00Z',
  completed_at: '2024-03-15T03:05:10Z',
  expiration: '2024-04-14T03:00:00Z',
  items_backed_up: 120,
  retention_policy: '720h0m0s',
  schedule_name: 'daily',
  metadata: {storage_location: 'default', errors: 0, warnings: 2, included_namespaces: ['*']},
  source: {kind: 'Backup', name: 'daily-20240315030000', namespace: 'velero', uid: 'uid-vb-1'},
}
const vbSpec = (overrides: Patch = {}, remove: string[] = []) => withChanges(veleroBackupSpec, overrides, remove)
const vbMeta = (patch: Patch) => ({...veleroBackupSpec.metadata, ...patch})
const vbCr = (spec: BackupSpec = vbSpec(), name = 'velero-daily-20240315030000') => ({name, spec})

// -- Velero Schedule fixtures -----------------------------------------------------------------------------------

const VS = 'Velero Schedule "velero/shop-nightly"'

const veleroScheduleBase: VeleroScheduleLike = {
  metadata: {name: 'shop-nightly', namespace: 'velero', uid: 'uid-vs-1'},
  spec: {
    schedule: '0 3 * * *',
    template: {ttl: '168h', includedNamespaces: ['shop'], storageLocation: 'default'},
  },
  status: {phase: 'Enabled', lastBackup: '2024-03-15T03:00:00Z'},
}
const vSchedule = (patch?: Patch): VeleroScheduleLike => merge(veleroScheduleBase, patch)

const veleroScheduleSpecBase: BackupScheduleSpec = {
  name: 'shop-nightly',
  provider: 'velero',
  kind: 'app',
  source_namespace: 'shop',
  status: 'active',
  schedule_cron: '0 3 * * *',
  paused: false,
  retention_policy: '168h0m0s',
  last_backup_at: '2024-03-15T03:00:00Z',
  metadata: {storage_location: 'default', included_namespaces: ['shop']},
  source: {kind: 'Schedule', name: 'shop-nightly', namespace: 'velero', uid: 'uid-vs-1'},
}
const vsSpec = (overrides: Patch = {}, remove: string[] = []) => withChanges(veleroScheduleSpecBase, overrides, remove)
const vsMeta = (patch: Patch) => ({...veleroScheduleSpecBase.metadata, ...patch})
const vsCr = (spec: BackupScheduleSpec = vsSpec()) => ({name: 'velero-shop-nightly', spec})

// -- CNPG Backup fixtures ---------------------------------------------------------------------------------------

const CB = 'CloudNativePG Backup "shop/pg-main-nightly-20240315030000"'

const cnpgBackupBase: CnpgBackupLike = {
  metadata: {
    name: 'pg-main-nightly-20240315030000',
    namespace: 'shop',
    uid: 'uid-cb-1',
    labels: {'cnpg.io/cluster': 'pg-main', 'cnpg.io/scheduled-backup': 'pg-main-nightly'},
  },
  spec: {cluster: {name: 'pg-main'}, method: 'barmanObjectStore'},
  status: {
    phase: 'completed',
    startedAt: '2024-03-15T03:00:01Z',
    stoppedAt: '2024-03-15T03:02:30Z',
    backupId: '20240315T030001',
    method: 'barmanObjectStore',
    destinationPath: 's3://backups/pg-main',
  },
}
const cBackup = (patch?: Patch): CnpgBackupLike => merge(cnpgBackupBase, patch)

const cnpgBackupSpecBase: BackupSpec = {
  name: 'pg-main-nightly-20240315030000',
  provider: 'cloudnativepg',
  kind: 'database',
  source_namespace: 'shop',
  status: 'completed',
  started_at: '2024-03-15T03:00:01Z',
  completed_at: '2024-03-15T03:02:30Z',
  schedule_name: 'pg-main-nightly',
  metadata: {cluster: 'pg-main', method: 'barmanObjectStore', backup_id: '20240315T030001', destination_path: 's3://backups/pg-main'},
  source: {kind: 'Backup', name: 'pg-main-nightly-20240315030000', namespace: 'shop', uid: 'uid-cb-1'},
}
const cbSpec = (overrides: Patch = {}, remove: string[] = []) => withChanges(cnpgBackupSpecBase, overrides, remove)
const cbMeta = (patch: Patch) => ({...cnpgBackupSpecBase.metadata, ...patch})
const cbCr = (spec: BackupSpec = cbSpec()) => ({name: 'cnpg-pg-main-nightly-20240315030000', spec})

// -- CNPG ScheduledBackup fixtures ------------------------------------------------------------------------------

const CS = 'CloudNativePG ScheduledBackup "shop/pg-main-nightly"'

const cnpgScheduledBase: CnpgScheduledBackupLike = {
  metadata: {name: 'pg-main-nightly', namespace: 'shop', uid: 'uid-cs-1'},
  spec: {schedule: '0 0 3 * * *', cluster: {name: 'pg-main'}, method: 'barmanObjectStore', backupOwnerReference: 'self'},
  status: {lastScheduleTime: '2024-03-15T03:00:00Z', nextScheduleTime: '2024-03-16T03:00:00Z', lastCheckTime: '2024-03-15T03:00:00Z'} as CnpgScheduledBackupLike['status'],
}
const cScheduled = (patch?: Patch): CnpgScheduledBackupLike => merge(cnpgScheduledBase, patch)

const cnpgScheduleSpecBase: BackupScheduleSpec = {
  name: 'pg-main-nightly',
  provider: 'cloudnativepg',
  kind: 'database',
  source_namespace: 'shop',
  status: 'active',
  schedule_cron: '0 0 3 * * *',
  paused: false,
  last_backup_at: '2024-03-15T03:00:00Z',
  metadata: {cluster: 'pg-main', method: 'barmanObjectStore', backup_owner_reference: 'self', next_schedule_at: '2024-03-16T03:00:00Z'},
  source: {kind: 'ScheduledBackup', name: 'pg-main-nightly', namespace: 'shop', uid: 'uid-cs-1'},
}
const csSpec = (overrides: Patch = {}, remove: string[] = []) => withChanges(cnpgScheduleSpecBase, overrides, remove)
const csMeta = (patch: Patch) => ({...cnpgScheduleSpecBase.metadata, ...patch})
const csCr = (spec: BackupScheduleSpec = csSpec()) => ({name: 'cnpg-pg-main-nightly', spec})

const longName = `nightly-${'a'.repeat(250)}`

// ---------------------------------------------------------------------------------------------------------------

describe('backup discovery (pure)', () => {
  describe('veleroBackup', () => {
    const unknownPhase = (value: string) => problem('UnknownBackupPhase',
      `${VB}: status.phase ${value} is not a Velero backup phase (New, Queued, ReadyToStart, InProgress, `
      + 'WaitingForPluginOperations*, Finalizing*, Completed, PartiallyFailed, Failed, FailedValidation, Deleting); status is unknown.')
    const ttlProblem = (value: string, what = 'a Go duration') => problem('InvalidTTL',
      `${VB}: spec.ttl ${value} is not ${what} (such as "720h0m0s", "96h" or "1h30m"); retention_policy is left out.`)

    const cases: Array<{name: string; input: VeleroBackupLike; expected: BackupDiscoveryResult}> = [
      {
        name: 'a completed scheduled cluster backup (includedNamespaces ["*"] = all: cluster, no problem)',
        input: vBackup(),
        expected: {cr: vbCr(), problems: []},
      },
      {
        name: 'exactly one namespace → app backup of that namespace',
        input: vBackup({spec: {includedNamespaces: ['shop']}}),
        expected: {cr: vbCr(vbSpec({kind: 'app', source_namespace: 'shop', metadata: vbMeta({included_namespaces: ['shop']})})), problems: []},
      },
      {
        name: 'several namespaces → cluster backup in Velero\'s namespace',
        input: vBackup({spec: {includedNamespaces: ['shop', 'blog']}}),
        expected: {cr: vbCr(vbSpec({metadata: vbMeta({included_namespaces: ['shop', 'blog']})})), problems: []},
      },
      {
        name: 'no includedNamespaces (and an empty list) → cluster, no included_namespaces',
        input: vBackup({spec: {includedNamespaces: []}}),
        expected: {cr: vbCr(vbSpec({}, ['metadata.included_namespaces'])), problems: []},
      },
      {
        name: 'includedNamespaces as a string → cluster and a problem',
        input: vBackup({spec: {includedNamespaces: 'shop'}}),
        expected: {
          cr: vbCr(vbSpec({}, ['metadata.included_namespaces'])),
          problems: [problem('InvalidIncludedNamespaces', `${VB}: spec.includedNamespaces "shop" is not a list of namespace names; the backup is treated as a cluster backup.`)],
        },
      },
      {
        name: 'TTL "forever" → no retention_policy, InvalidTTL naming the value',
        input: vBackup({spec: {ttl: 'forever'}}),
        expected: {cr: vbCr(vbSpec({}, ['retention_policy'])), problems: [ttlProblem('"forever"')]},
      },
      {
        name: 'TTL "30d" (days are no Go unit) → InvalidTTL',
        input: vBackup({spec: {ttl: '30d'}}),
        expected: {cr: vbCr(vbSpec({}, ['retention_policy'])), problems: [ttlProblem('"30d"')]},
      },
      {
        name: 'a negative TTL → InvalidTTL',
        input: vBackup({spec: {ttl: '-1h'}}),
        expected: {cr: vbCr(vbSpec({}, ['retention_policy'])), problems: [ttlProblem('"-1h"', 'a non-negative duration')]},
      },
      {
        name: 'a numeric TTL → InvalidTTL',
        input: vBackup({spec: {ttl: 3600}}),
        expected: {cr: vbCr(vbSpec({}, ['retention_policy'])), problems: [ttlProblem('3600')]},
      },
      {
        name: 'TTL "96h" → canonical "96h0m0s"',
        input: vBackup({spec: {ttl: '96h'}}),
        expected: {cr: vbCr(vbSpec({retention_policy: '96h0m0s'})), problems: []},
      },
      {
        name: 'TTL "1h30m" → "1h30m0s"',
        input: vBackup({spec: {ttl: '1h30m'}}),
        expected: {cr: vbCr(vbSpec({retention_policy: '1h30m0s'})), problems: []},
      },
      {
        name: 'no TTL → no retention_policy, no problem',
        input: vBackup({spec: {ttl: null}}),
        expected: {cr: vbCr(vbSpec({}, ['retention_policy'])), problems: []},
      },
      {
        name: 'unknown phase → unknown and a problem',
        input: vBackup({status: {phase: 'Exploded'}}),
        expected: {cr: vbCr(vbSpec({status: 'unknown'})), problems: [unknownPhase('"Exploded"')]},
      },
      {
        name: 'a phase that is not a string → unknown and a problem',
        input: vBackup({status: {phase: 7}}),
        expected: {cr: vbCr(vbSpec({status: 'unknown'})), problems: [unknownPhase('7')]},
      },
      {
        name: 'startTimestamp "yesterday" → started_at absent and a problem',
        input: vBackup({status: {startTimestamp: 'yesterday'}}),
        expected: {cr: vbCr(vbSpec({}, ['started_at'])), problems: [timestampProblem(VB, 'status.startTimestamp', '"yesterday"', 'started_at')]},
      },
      {
        name: 'a date that does not exist (Feb 30) and a date without zone are problems',
        input: vBackup({status: {completionTimestamp: '2024-02-30T00:00:00Z', expiration: '2024-04-14T03:00:00'}}),
        expected: {
          cr: vbCr(vbSpec({}, ['completed_at', 'expiration'])),
          problems: [
            timestampProblem(VB, 'status.expiration', '"2024-04-14T03:00:00"', 'expiration'),
            timestampProblem(VB, 'status.completionTimestamp', '"2024-02-30T00:00:00Z"', 'completed_at'),
          ],
        },
      },
      {
        name: 'timestamps with offsets and fractions are normalised to UTC',
        input: vBackup({status: {startTimestamp: '2024-03-15T04:00:00+01:00', completionTimestamp: '2024-03-15T03:05:10.250Z', expiration: '2024-04-13T22:00:00-05:00'}}),
        expected: {cr: vbCr(vbSpec({completed_at: '2024-03-15T03:05:10.250Z'})), problems: []},
      },
      {
        name: 'Date objects (typed clients) work too',
        input: vBackup({status: {startTimestamp: new Date('2024-03-15T03:00:00Z')}}),
        expected: {cr: vbCr(), problems: []},
      },
      {
        name: 'itemsBackedUp -3 → absent and a problem',
        input: vBackup({status: {progress: {itemsBackedUp: -3}}}),
        expected: {
          cr: vbCr(vbSpec({}, ['items_backed_up'])),
          problems: [problem('InvalidItemCount', `${VB}: status.progress.itemsBackedUp -3 is not a non-negative integer; items_backed_up is left out.`)],
        },
      },
      {
        name: 'itemsBackedUp "120" (a string) → absent and a problem',
        input: vBackup({status: {progress: {itemsBackedUp: '120'}}}),
        expected: {
          cr: vbCr(vbSpec({}, ['items_backed_up'])),
          problems: [problem('InvalidItemCount', `${VB}: status.progress.itemsBackedUp "120" is not a non-negative integer; items_backed_up is left out.`)],
        },
      },
      {
        name: 'a failed backup: failure reason in metadata',
        input: vBackup({status: {phase: 'Failed', completionTimestamp: null, failureReason: 'error getting backup storage location', errors: 1}}),
        expected: {
          cr: vbCr(vbSpec({status: 'failed', metadata: vbMeta({errors: 1, failure_reason: 'error getting backup storage location'})}, ['completed_at'])),
          problems: [],
        },
      },
      {
        name: 'FailedValidation: validation errors in metadata',
        input: vBackup({status: {phase: 'FailedValidation', startTimestamp: null, completionTimestamp: null, progress: null, validationErrors: ['an existing backup storage location was not specified']}}),
        expected: {
          cr: vbCr(vbSpec({status: 'failed', metadata: vbMeta({validation_errors: ['an existing backup storage location was not specified']})}, ['started_at', 'completed_at', 'items_backed_up'])),
          problems: [],
        },
      },
      {
        name: 'the Schedule owner reference (full name) wins over the label; the name becomes a slug',
        input: vBackup({metadata: {ownerReferences: [{apiVersion: 'velero.io/v1', kind: 'Schedule', name: 'Daily.Full', uid: 'u'}]}}),
        expected: {cr: vbCr(vbSpec({schedule_name: `daily-full-${sha8('Daily.Full')}`})), problems: []},
      },
      {
        name: 'an ad-hoc backup (no schedule label) has no schedule_name',
        input: vBackup({metadata: {labels: null}}),
        expected: {cr: vbCr(vbSpec({}, ['schedule_name'])), problems: []},
      },
      {
        name: 'no status at all (just created) → pending, only spec-derived fields',
        input: vBackup({status: null}),
        expected: {
          cr: vbCr(vbSpec({status: 'pending', metadata: {storage_location: 'default', included_namespaces: ['*']}}, ['started_at', 'completed_at', 'expiration', 'items_backed_up', 'metadata.errors', 'metadata.warnings'])),
          problems: [],
        },
      },
      {
        name: 'a bare Velero Backup with only a name: namespace "default", pending',
        input: {metadata: {name: 'adhoc'}},
        expected: {
          cr: {name: 'velero-adhoc', spec: {name: 'adhoc', provider: 'velero', kind: 'cluster', source_namespace: 'default', status: 'pending', source: {kind: 'Backup', name: 'adhoc', namespace: 'default'}}},
          problems: [],
        },
      },
      {
        name: 'a very long name: CR name cut to 253 with a hash, API name a 63-character slug',
        input: vBackup({metadata: {name: longName}}),
        expected: {
          cr: vbCr(
            vbSpec({name: `${longName.slice(0, 54)}-${sha8(longName)}`, source: {kind: 'Backup', name: longName, namespace: 'velero', uid: 'uid-vb-1'}}),
            `velero-${longName}`.slice(0, 242) + `-${sha10(`velero-${longName}`)}`,
          ),
          problems: [],
        },
      },
      {
        name: 'missing name → no CR, a problem',
        input: vBackup({metadata: {name: null}}),
        expected: {problems: [problem('MissingName', 'The Velero Backup has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
      {
        name: 'an empty object → no CR, a problem',
        input: {},
        expected: {problems: [problem('MissingName', 'The Velero Backup has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
    ]
    for (const {name, input, expected} of cases) {
      it(name, () => assert.deepEqual(checkedBackup(veleroBackup(input, NOW)), expected))
    }

    describe('phase → status', () => {
      const past = '2024-03-15T11:00:00Z'
      const future = '2024-03-16T00:00:00Z'
      const phases: Array<[string | null, string | null, BackupSpec['status']]> = [
        [null, null, 'pending'], ['', null, 'pending'], ['New', null, 'pending'], ['Queued', null, 'pending'], ['ReadyToStart', null, 'pending'],
        ['InProgress', null, 'running'], ['WaitingForPluginOperations', null, 'running'],
        ['WaitingForPluginOperationsPartiallyFailed', null, 'running'], ['Finalizing', null, 'running'],
        ['FinalizingPartiallyFailed', null, 'running'], ['Completed', null, 'completed'], ['PartiallyFailed', null, 'partial'],
        ['Failed', null, 'failed'], ['FailedValidation', null, 'failed'],
        ['Deleting', past, 'expired'], ['Deleting', '2024-03-15T12:00:00Z', 'expired'], ['Deleting', future, 'unknown'], ['Deleting', 'gone', 'unknown'],
      ]
      for (const [phase, expiration, status] of phases) {
        it(`${JSON.stringify(phase)}${expiration ? ` (expiration ${expiration})` : ''} → ${status}`, () => {
          const input = vBackup({status: {phase, expiration: expiration ?? '2024-04-14T03:00:00Z'}})
          const problems = expiration === 'gone' ? [timestampProblem(VB, 'status.expiration', '"gone"', 'expiration')] : []
          const expected = expiration === 'gone'
            ? vbSpec({status}, ['expiration'])
            : vbSpec({status, expiration: normalizeTimestamp(expiration ?? '2024-04-14T03:00:00Z')})
          assert.deepEqual(checkedBackup(veleroBackup(input, NOW)), {cr: vbCr(expected), problems})
        })
      }
    })

    it('is deterministic and does not touch its input', () => {
      const input = vBackup({spec: {ttl: 'forever'}, status: {phase: 'Weird'}})
      const before = structuredClone(input)
      assert.deepEqual(veleroBackup(input, NOW), veleroBackup(input, NOW))
      assert.deepEqual(input, before)
    })
  })

  describe('veleroSchedule', () => {
    const cronProblem = (value: string, error: string) => problem('InvalidCron',
      `${VS}: spec.schedule "${value}" is not a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 3 * * *") `
      + `or a descriptor such as @daily or "@every 6h" (${error}); Velero will not run it. schedule_cron keeps the value as written.`)

    const cases: Array<{name: string; input: VeleroScheduleLike; expected: BackupScheduleDiscoveryResult}> = [
      {
        name: 'an enabled nightly app schedule',
        input: vSchedule(),
        expected: {cr: vsCr(), problems: []},
      },
      {
        name: 'paused → paused',
        input: vSchedule({spec: {paused: true}}),
        expected: {cr: vsCr(vsSpec({status: 'paused', paused: true})), problems: []},
      },
      {
        name: 'New (not validated yet) → active',
        input: vSchedule({status: {phase: 'New', lastBackup: null}}),
        expected: {cr: vsCr(vsSpec({}, ['last_backup_at'])), problems: []},
      },
      {
        name: 'no status → active',
        input: vSchedule({status: null}),
        expected: {cr: vsCr(vsSpec({}, ['last_backup_at'])), problems: []},
      },
      {
        name: 'cron "every day" → kept, InvalidCron; FailedValidation → failed with validation errors',
        input: vSchedule({spec: {schedule: 'every day'}, status: {phase: 'FailedValidation', lastBackup: null, validationErrors: ['invalid schedule: expected exactly 5 fields, found 2: every day']}}),
        expected: {
          cr: vsCr(vsSpec({
            status: 'failed',
            schedule_cron: 'every day',
            metadata: vsMeta({validation_errors: ['invalid schedule: expected exactly 5 fields, found 2: every day']}),
          }, ['last_backup_at'])),
          problems: [cronProblem('every day', 'expected exactly 5 fields (minute hour day-of-month month day-of-week), found 2')],
        },
      },
      {
        name: 'FailedValidation wins over paused',
        input: vSchedule({spec: {paused: true}, status: {phase: 'FailedValidation'}}),
        expected: {cr: vsCr(vsSpec({status: 'failed', paused: true})), problems: []},
      },
      {
        name: 'a 6-field cron is invalid for Velero (InvalidCron; Velero\'s verdict is still pending → active)',
        input: vSchedule({spec: {schedule: '0 0 3 * * *'}, status: {phase: 'New'}}),
        expected: {
          cr: vsCr(vsSpec({schedule_cron: '0 0 3 * * *'})),
          problems: [cronProblem('0 0 3 * * *', 'expected exactly 5 fields (minute hour day-of-month month day-of-week), found 6')],
        },
      },
      {
        name: 'descriptors and a time-zone prefix are fine',
        input: vSchedule({spec: {schedule: 'CRON_TZ=Europe/Berlin @every 6h'}}),
        expected: {cr: vsCr(vsSpec({schedule_cron: 'CRON_TZ=Europe/Berlin @every 6h'})), problems: []},
      },
      {
        name: 'no schedule → no schedule_cron, MissingSchedule',
        input: vSchedule({spec: {schedule: ''}}),
        expected: {
          cr: vsCr(vsSpec({}, ['schedule_cron'])),
          problems: [problem('MissingSchedule', `${VS}: spec.schedule is missing or empty, so no backup is ever scheduled; schedule_cron is left out.`)],
        },
      },
      {
        name: 'an unknown phase → unknown and a problem',
        input: vSchedule({status: {phase: 'Bogus'}}),
        expected: {
          cr: vsCr(vsSpec({status: 'unknown'})),
          problems: [problem('UnknownSchedulePhase', `${VS}: status.phase "Bogus" is not a Velero schedule phase (New, Enabled, FailedValidation); status is unknown.`)],
        },
      },
      {
        name: 'the seed\'s lastBackup {startTime, name} → last_backup_at and last_backup_name',
        input: vSchedule({status: {lastBackup: {startTime: '2024-03-15T03:00:00Z', name: 'shop-nightly-20240315030000'}}}),
        expected: {cr: vsCr(vsSpec({last_backup_name: 'shop-nightly-20240315030000'})), problems: []},
      },
      {
        name: 'lastBackup "yesterday" → absent and a problem',
        input: vSchedule({status: {lastBackup: 'yesterday'}}),
        expected: {cr: vsCr(vsSpec({}, ['last_backup_at'])), problems: [timestampProblem(VS, 'status.lastBackup', '"yesterday"', 'last_backup_at')]},
      },
      {
        name: 'template TTL "forever" → InvalidTTL',
        input: vSchedule({spec: {template: {ttl: 'forever'}}}),
        expected: {
          cr: vsCr(vsSpec({}, ['retention_policy'])),
          problems: [problem('InvalidTTL', `${VS}: spec.template.ttl "forever" is not a Go duration (such as "720h0m0s", "96h" or "1h30m"); retention_policy is left out.`)],
        },
      },
      {
        name: 'template without includedNamespaces → cluster schedule in Velero\'s namespace',
        input: vSchedule({spec: {template: {includedNamespaces: null}}}),
        expected: {cr: vsCr(vsSpec({kind: 'cluster', source_namespace: 'velero', metadata: {storage_location: 'default'}}, ['metadata.included_namespaces'])), problems: []},
      },
      {
        name: 'template ["*"] → cluster',
        input: vSchedule({spec: {template: {includedNamespaces: ['*']}}}),
        expected: {cr: vsCr(vsSpec({kind: 'cluster', source_namespace: 'velero', metadata: vsMeta({included_namespaces: ['*']})})), problems: []},
      },
      {
        name: 'missing name → no CR, a problem',
        input: vSchedule({metadata: {name: ''}}),
        expected: {problems: [problem('MissingName', 'The Velero Schedule has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
    ]
    for (const {name, input, expected} of cases) {
      it(name, () => assert.deepEqual(checkedSchedule(veleroSchedule(input, NOW)), expected))
    }
  })

  describe('cnpgBackup', () => {
    const unknownPhase = (value: string) => problem('UnknownBackupPhase',
      `${CB}: status.phase ${value} is not a CloudNativePG backup phase (pending, started, running, finalizing, `
      + 'completed, failed, walArchivingFailing, "invalid backup definition"); status is unknown.')
    const running = {phase: 'running', stoppedAt: null, backupId: null, destinationPath: null}

    const cases: Array<{name: string; input: CnpgBackupLike; expected: BackupDiscoveryResult}> = [
      {
        name: 'a completed scheduled backup (schedule from the label CNPG sets)',
        input: cBackup(),
        expected: {cr: cbCr(), problems: []},
      },
      {
        name: 'an owner reference of kind ScheduledBackup wins over the label',
        input: cBackup({metadata: {ownerReferences: [{apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', name: 'pg-main-hourly', uid: 'u'}]}}),
        expected: {cr: cbCr(cbSpec({schedule_name: 'pg-main-hourly'})), problems: []},
      },
      {
        name: 'an owner of another kind (Cluster) does not count; no label → no schedule_name',
        input: cBackup({metadata: {labels: null, ownerReferences: [{kind: 'Cluster', name: 'pg-main'}]}}),
        expected: {cr: cbCr(cbSpec({}, ['schedule_name'])), problems: []},
      },
      {
        name: 'running: no completed_at',
        input: cBackup({status: running}),
        expected: {cr: cbCr(cbSpec({status: 'running', metadata: {cluster: 'pg-main', method: 'barmanObjectStore'}}, ['completed_at'])), problems: []},
      },
      {
        name: 'failed: stoppedAt is not completed_at; the error in metadata',
        input: cBackup({status: {phase: 'failed', error: 'can\'t execute backup: exit status 4', backupId: null, destinationPath: null}}),
        expected: {
          cr: cbCr(cbSpec({status: 'failed', metadata: {cluster: 'pg-main', method: 'barmanObjectStore', error: 'can\'t execute backup: exit status 4'}}, ['completed_at'])),
          problems: [],
        },
      },
      {
        name: 'phase "weird" → unknown and a problem',
        input: cBackup({status: {phase: 'weird'}}),
        expected: {cr: cbCr(cbSpec({status: 'unknown'}, ['completed_at'])), problems: [unknownPhase('"weird"')]},
      },
      {
        name: 'phase "Completed" (wrong case) → unknown and a problem',
        input: cBackup({status: {phase: 'Completed'}}),
        expected: {cr: cbCr(cbSpec({status: 'unknown'}, ['completed_at'])), problems: [unknownPhase('"Completed"')]},
      },
      {
        name: 'no spec.cluster → the CR without metadata.cluster, MissingCluster',
        input: cBackup({spec: {cluster: null}}),
        expected: {
          cr: cbCr(cbSpec({}, ['metadata.cluster'])),
          problems: [problem('MissingCluster', `${CB}: spec.cluster.name is missing; CloudNativePG does not know which database cluster to back up. metadata.cluster is left out.`)],
        },
      },
      {
        name: 'no status method → spec.method; volumeSnapshot',
        input: cBackup({spec: {method: 'volumeSnapshot'}, status: {method: null}}),
        expected: {cr: cbCr(cbSpec({metadata: cbMeta({method: 'volumeSnapshot'})})), problems: []},
      },
      {
        name: 'startedAt "yesterday" and stoppedAt "later" → both absent, two problems',
        input: cBackup({status: {startedAt: 'yesterday', stoppedAt: 'later'}}),
        expected: {
          cr: cbCr(cbSpec({}, ['started_at', 'completed_at'])),
          problems: [
            timestampProblem(CB, 'status.startedAt', '"yesterday"', 'started_at'),
            timestampProblem(CB, 'status.stoppedAt', '"later"', 'completed_at'),
          ],
        },
      },
      {
        name: 'just created (no status) → pending',
        input: cBackup({status: null}),
        expected: {cr: cbCr(cbSpec({status: 'pending', metadata: {cluster: 'pg-main', method: 'barmanObjectStore'}}, ['started_at', 'completed_at'])), problems: []},
      },
      {
        name: 'missing name → no CR, a problem',
        input: cBackup({metadata: {name: null}}),
        expected: {problems: [problem('MissingName', 'The CloudNativePG Backup has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
    ]
    for (const {name, input, expected} of cases) {
      it(name, () => assert.deepEqual(checkedBackup(cnpgBackup(input, NOW)), expected))
    }

    describe('phase → status', () => {
      const phases: Array<[string | null, BackupSpec['status']]> = [
        [null, 'pending'], ['', 'pending'], ['pending', 'pending'],
        ['started', 'running'], ['running', 'running'], ['finalizing', 'running'],
        ['completed', 'completed'],
        ['failed', 'failed'], ['walArchivingFailing', 'failed'], ['invalid backup definition', 'failed'],
      ]
      for (const [phase, status] of phases) {
        it(`${JSON.stringify(phase)} → ${status}`, () => {
          const expected = phase === 'completed' ? cbSpec() : cbSpec({status}, ['completed_at'])
          assert.deepEqual(checkedBackup(cnpgBackup(cBackup({status: {phase}}), NOW)), {cr: cbCr(expected), problems: []})
        })
      }
    })
  })

  describe('cnpgScheduledBackup', () => {
    const cronProblem = (value: string, error: string) => problem('InvalidCron',
      `${CS}: spec.schedule "${value}" is not a 6-field cron expression (second minute hour day-of-month month day-of-week, e.g. "0 0 3 * * *") `
      + `or a descriptor such as @daily or "@every 6h" (${error}); CloudNativePG will not run it. schedule_cron keeps the value as written.`)

    const cases: Array<{name: string; input: CnpgScheduledBackupLike; expected: BackupScheduleDiscoveryResult}> = [
      {
        name: 'a nightly 6-field schedule',
        input: cScheduled(),
        expected: {cr: csCr(), problems: []},
      },
      {
        name: 'suspend → paused',
        input: cScheduled({spec: {suspend: true}}),
        expected: {cr: csCr(csSpec({status: 'paused', paused: true})), problems: []},
      },
      {
        name: 'a 5-field cron: kept, still active, FiveFieldCnpgCron explains the seconds-first reading',
        input: cScheduled({spec: {schedule: '0 0 * * *'}}),
        expected: {
          cr: csCr(csSpec({schedule_cron: '0 0 * * *'})),
          problems: [problem('FiveFieldCnpgCron',
            `${CS}: spec.schedule "0 0 * * *" has 5 fields; CloudNativePG reads them as second minute hour day-of-month month `
            + '(seconds first, no day-of-week), not as standard cron, so it runs far more often than it looks. Write 6 fields, '
            + 'e.g. "0 0 0 * * *" to mean the standard "0 0 * * *".')],
        },
      },
      {
        name: 'an empty schedule → failed, MissingSchedule',
        input: cScheduled({spec: {schedule: ''}}),
        expected: {
          cr: csCr(csSpec({status: 'failed'}, ['schedule_cron'])),
          problems: [problem('MissingSchedule', `${CS}: spec.schedule is missing or empty, so no backup is ever scheduled; schedule_cron is left out.`)],
        },
      },
      {
        name: 'cron "every day" → kept, failed, InvalidCron',
        input: cScheduled({spec: {schedule: 'every day'}}),
        expected: {
          cr: csCr(csSpec({status: 'failed', schedule_cron: 'every day'})),
          problems: [cronProblem('every day', 'expected 6 fields (second minute hour day-of-month month day-of-week), found 2')],
        },
      },
      {
        name: 'an invalid cron wins over suspend',
        input: cScheduled({spec: {schedule: '0 0 25 * * *', suspend: true}}),
        expected: {
          cr: csCr(csSpec({status: 'failed', schedule_cron: '0 0 25 * * *', paused: true})),
          problems: [cronProblem('0 0 25 * * *', 'hour field "25": 25 is above the maximum 23')],
        },
      },
      {
        name: 'status.error → failed, the error in metadata',
        input: cScheduled({status: {error: 'cluster pg-main not found'}}),
        expected: {cr: csCr(csSpec({status: 'failed', metadata: csMeta({error: 'cluster pg-main not found'})})), problems: []},
      },
      {
        name: '@weekly, no backupOwnerReference (→ none), no status yet',
        input: cScheduled({spec: {schedule: '@weekly', backupOwnerReference: null}, status: null}),
        expected: {
          cr: csCr(csSpec({schedule_cron: '@weekly', metadata: {cluster: 'pg-main', method: 'barmanObjectStore', backup_owner_reference: 'none'}}, ['last_backup_at'])),
          problems: [],
        },
      },
      {
        name: 'no spec.cluster → MissingCluster, CR without metadata.cluster',
        input: cScheduled({spec: {cluster: {name: ''}}}),
        expected: {
          cr: csCr(csSpec({}, ['metadata.cluster'])),
          problems: [problem('MissingCluster', `${CS}: spec.cluster.name is missing; CloudNativePG does not know which database cluster to back up. metadata.cluster is left out.`)],
        },
      },
      {
        name: 'unreadable schedule times → absent and problems',
        input: cScheduled({status: {lastScheduleTime: 'last night', nextScheduleTime: 'tomorrow'}}),
        expected: {
          cr: csCr(csSpec({}, ['last_backup_at', 'metadata.next_schedule_at'])),
          problems: [
            timestampProblem(CS, 'status.lastScheduleTime', '"last night"', 'last_backup_at'),
            timestampProblem(CS, 'status.nextScheduleTime', '"tomorrow"', 'metadata.next_schedule_at'),
          ],
        },
      },
      {
        name: 'missing name → no CR, a problem',
        input: cScheduled({metadata: {name: null}}),
        expected: {problems: [problem('MissingName', 'The CloudNativePG ScheduledBackup has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
    ]
    for (const {name, input, expected} of cases) {
      it(name, () => assert.deepEqual(checkedSchedule(cnpgScheduledBackup(input, NOW)), expected))
    }
  })

  describe('discoveredCrName / normalizeTimestamp', () => {
    it('keeps a name that fits, cuts a long one with a hash, and rewrites one that is no DNS subdomain', () => {
      assert.equal(discoveredCrName('velero', 'daily'), 'velero-daily')
      assert.equal(discoveredCrName('certmanager', 'prod', 'api.example.com'), 'certmanager-prod-api.example.com')
      const long = discoveredCrName('velero', longName)
      assert.equal(long.length, 253)
      assert.notEqual(discoveredCrName('velero', `${longName}x`), discoveredCrName('velero', `${longName}y`))
      assert.equal(discoveredCrName('cnpg', 'Bad_Name'), `cnpg-bad-name-${sha10('cnpg-Bad_Name')}`)
    })

    const cases: Array<[unknown, string | undefined]> = [
      ['2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z'],
      ['2024-01-01T01:30:00+01:30', '2024-01-01T00:00:00Z'],
      ['2024-01-01T00:00:00.5Z', '2024-01-01T00:00:00.500Z'],
      ['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00Z'],
      ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z'],
      ['2023-02-29T00:00:00Z', undefined],
      ['2024-01-01 00:00:00Z', undefined],
      ['2024-01-01T24:00:00Z', undefined],
      ['2024-01-01T00:00:60Z', undefined],
      ['2024-01-01', undefined],
      ['yesterday', undefined],
      [1704067200000, undefined],
      [new Date('2024-01-01T00:00:00Z'), '2024-01-01T00:00:00Z'],
      [new Date('nope'), undefined],
    ]
    for (const [input, expected] of cases) {
      it(`${input instanceof Date ? `Date(${input.getTime()})` : JSON.stringify(input)} → ${expected}`, () => assert.equal(normalizeTimestamp(input), expected))
    }
  })

  describe('backupPayload', () => {
    it('a discovered Velero backup: every API field, schedule_name in metadata, no schedule, no source', () => {
      assert.deepEqual(backupPayload(veleroBackup(vBackup(), NOW).cr!.spec, 'cluster-uuid'), {
        name: 'daily-20240315030000',
        provider: 'velero',
        kind: 'cluster',
        source_namespace: 'velero',
        status: 'completed',
        started_at: '2024-03-15T03:00:00Z',
        completed_at: '2024-03-15T03:05:10Z',
        expiration: '2024-04-14T03:00:00Z',
        size_bytes: null,
        items_backed_up: 120,
        retention_policy: '720h0m0s',
        metadata: {storage_location: 'default', errors: 0, warnings: 2, included_namespaces: ['*'], schedule_name: 'daily'},
        k8s_cluster: 'cluster-uuid',
        created_by_component: 'operator',
      })
    })

    it('a pending backup that lost its times, TTL and schedule: nulls and "" clear them, metadata is replaced', () => {
      const body = backupPayload(veleroBackup(vBackup({spec: {ttl: null, includedNamespaces: null}, status: null, metadata: {labels: null}}), NOW).cr!.spec, 'c1')
      assert.deepEqual(body, {
        name: 'daily-20240315030000',
        provider: 'velero',
        kind: 'cluster',
        source_namespace: 'velero',
        status: 'pending',
        started_at: null,
        completed_at: null,
        expiration: null,
        size_bytes: null,
        items_backed_up: null,
        retention_policy: '',
        metadata: {storage_location: 'default'},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
      assert.ok(!('schedule' in body))
      assert.deepEqual(JSON.parse(JSON.stringify(body)), body, 'the nulls survive JSON')
    })

    it('a CNPG backup', () => {
      assert.deepEqual(backupPayload(cnpgBackup(cBackup(), NOW).cr!.spec, 'c1'), {
        name: 'pg-main-nightly-20240315030000',
        provider: 'cloudnativepg',
        kind: 'database',
        source_namespace: 'shop',
        status: 'completed',
        started_at: '2024-03-15T03:00:01Z',
        completed_at: '2024-03-15T03:02:30Z',
        expiration: null,
        size_bytes: null,
        items_backed_up: null,
        retention_policy: '',
        metadata: {cluster: 'pg-main', method: 'barmanObjectStore', backup_id: '20240315T030001', destination_path: 's3://backups/pg-main', schedule_name: 'pg-main-nightly'},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
    })

    it('a hand-written CR: name slugged, provider spelling mapped, size kept, metadata copied not shared', () => {
      const spec: BackupSpec = {name: 'My Backup', provider: 'cloudnative-pg', size_bytes: 1024, metadata: {nested: {a: 1}}}
      const body = backupPayload(spec, 'c1')
      assert.deepEqual(body, {
        name: `my-backup-${sha8('My Backup')}`,
        provider: 'cloudnativepg',
        source_namespace: '',
        started_at: null,
        completed_at: null,
        expiration: null,
        size_bytes: 1024,
        items_backed_up: null,
        retention_policy: '',
        metadata: {nested: {a: 1}},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
      assert.notEqual((body.metadata as {nested: object}).nested, spec.metadata!.nested)
    })

    const providers: Array<[string | undefined, string | undefined]> = [
      ['velero', 'velero'], ['cloudnativepg', 'cloudnativepg'], ['custom', 'custom'], ['cloudnative-pg', 'cloudnativepg'],
      ['cnpg', 'cloudnativepg'], ['restic', 'custom'], ['', undefined], [undefined, undefined],
    ]
    for (const [input, expected] of providers) {
      it(`provider ${JSON.stringify(input)} → ${expected}`, () => assert.equal(backupProvider(input), expected))
    }
  })

  describe('backupSchedulePayload', () => {
    it('a discovered Velero schedule with the seed\'s last backup name: it goes into metadata', () => {
      const spec = veleroSchedule(vSchedule({status: {lastBackup: {startTime: '2024-03-15T03:00:00Z', name: 'shop-nightly-1'}}}), NOW).cr!.spec
      assert.deepEqual(backupSchedulePayload(spec, 'c1'), {
        name: 'shop-nightly',
        provider: 'velero',
        kind: 'app',
        source_namespace: 'shop',
        status: 'active',
        schedule_cron: '0 3 * * *',
        paused: false,
        retention_policy: '168h0m0s',
        last_backup_at: '2024-03-15T03:00:00Z',
        metadata: {storage_location: 'default', included_namespaces: ['shop'], last_backup_name: 'shop-nightly-1'},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
    })

    it('a CNPG schedule that lost its schedule, last run and retention: cleared with "" and null', () => {
      const spec = cnpgScheduledBackup(cScheduled({spec: {schedule: null}, status: null}), NOW).cr!.spec
      assert.deepEqual(backupSchedulePayload(spec, 'c1'), {
        name: 'pg-main-nightly',
        provider: 'cloudnativepg',
        kind: 'database',
        source_namespace: 'shop',
        status: 'failed',
        schedule_cron: '',
        paused: false,
        retention_policy: '',
        last_backup_at: null,
        metadata: {cluster: 'pg-main', method: 'barmanObjectStore', backup_owner_reference: 'self'},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
    })

    it('a hand-written minimal CR: only name, cleared strings and an empty metadata', () => {
      assert.deepEqual(backupSchedulePayload({name: 'weekly', total_backups: 4}, 'c1'), {
        name: 'weekly',
        source_namespace: '',
        schedule_cron: '',
        retention_policy: '',
        last_backup_at: null,
        total_backups: 4,
        metadata: {},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
    })
  })

  describe('ignore_namespaces (the one namespace rule, on the namespace a backup is of)', () => {
    const settings = (ignore: string[]) => operatorConfigSpec.parse({backup_discovery: {enabled: true, ignore_namespaces: ignore}}).backup_discovery
    const source = {...veleroBackupBase.metadata}
    const velero = {name: 'velero-backup-discovery', provider: 'velero', kind: 'Backup', apiVersion: 'velero.io/v1', map: veleroBackup} as unknown as Parameters<typeof desiredBackup>[0]
    const cases: Array<[string, Patch | undefined, string[], boolean]> = [
      ['an app backup of an ignored namespace → no CR', {spec: {includedNamespaces: ['shop']}}, ['shop'], false],
      ['an app backup of another namespace → a CR', {spec: {includedNamespaces: ['shop']}}, ['blog'], true],
      ['a cluster backup is of Velero\'s namespace: ignored with it', undefined, ['velero'], false],
      ['a cluster backup, Velero\'s namespace not ignored → a CR', undefined, ['kube-system'], true],
    ]
    for (const [name, patch, ignore, kept] of cases) {
      it(name, () => {
        const state = desiredBackup(velero, `${source.namespace}/${source.name}`, vBackup(patch) as never, settings(ignore), Date.parse('2024-03-15T04:00:00Z'))
        assert.equal(state.objects.length, kept ? 1 : 0)
      })
    }
  })
})
