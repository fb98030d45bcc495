/**
 * A Backup's link to its schedule (`schedule` in the API, `status.schedule_id` on the CR) must not depend on the
 * order in which the Backup and its BackupSchedule sync: schedule first, backup first, and an operator that starts
 * beside an existing Velero with both present all end with every API backup linked to its schedule's API id.
 * CloudNativePG backups and ScheduledBackups likewise.
 */
import assert from 'node:assert/strict'
import type {KubeObject, ResourceRef} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {freshNamespace} from '../support/cluster.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually} from '../support/helpers.js'
import {upstreamCrd} from '../support/upstream-crds.js'

const crdFiles = ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml']

const velero = (plural: string, namespace?: string, name?: string): ResourceRef => ({group: 'velero.io', version: 'v1', plural, namespace, name})
const cnpg = (plural: string, namespace?: string, name?: string): ResourceRef => ({group: 'postgresql.cnpg.io', version: 'v1', plural, namespace, name})
type Synced = KubeObject & {spec: Record<string, unknown>; status?: {phase?: string; api_id?: string; schedule_id?: string}}

describe('Backup → BackupSchedule link in the API, whatever the order (in-process operator, simulator)', function () {
  this.timeout(300_000)
  let veleroNamespace: string
  const harness = inProcessOperator({
    // Five Schedule/Backup pairs exist before the operator starts (an operator installed beside a running Velero).
    setup: async () => {
      for (const file of crdFiles) {
        const crd = upstreamCrd(file)
        await applyCrd(harness.client, crd)
        await waitEstablished(harness.client, crd.metadata.name)
      }
      veleroNamespace = await freshNamespace(harness.client, 'velero')
      for (let i = 0; i < 5; i++) {
        await veleroSchedule(`pre-${i}`)
        await veleroBackup(`pre-${i}-20260101030000`, `pre-${i}`)
      }
    },
    spec: () => ({backup_discovery: {velero_namespace: veleroNamespace}}),
    waitForCluster: false,
  })

  const veleroSchedule = (name: string) => harness.client.create(velero('schedules', veleroNamespace), {
    apiVersion: 'velero.io/v1', kind: 'Schedule', metadata: {name, namespace: veleroNamespace},
    spec: {schedule: '0 3 * * *', template: {ttl: '720h0m0s', includedNamespaces: ['shop']}},
  })
  const veleroBackup = (name: string, schedule: string) => harness.client.create(velero('backups', veleroNamespace), {
    apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name, namespace: veleroNamespace, labels: {'velero.io/schedule-name': schedule}},
    spec: {ttl: '720h0m0s', includedNamespaces: ['shop']},
  })
  const cr = async (plural: string, namespace: string, name: string) =>
    (await harness.client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/${plural}`})).items.find((item) => item.metadata?.name === name)
  const syncedId = (plural: string, namespace: string, name: string) => eventually(async () => {
    const found = await cr(plural, namespace, name)
    return found?.status?.phase === 'Synced' ? found.status.api_id : undefined
  }, 60_000, `${plural} ${namespace}/${name} synced`)
  /** The API backup of the Backup CR links the API schedule of the BackupSchedule CR, and the CR says so. */
  const linked = async (namespace: string, backupCr: string, scheduleCr: string) => {
    const scheduleId = await syncedId('backupschedules', namespace, scheduleCr)
    await eventually(async () => {
      const backup = await cr('backups', namespace, backupCr)
      const id = backup?.status?.api_id
      const api = id ? harness.sim.get('backups/backups', id) as {schedule?: string | null} | undefined : undefined
      return api?.schedule === scheduleId && backup?.status?.schedule_id === scheduleId
    }, 30_000, `API backup of ${namespace}/${backupCr} linked to schedule ${scheduleId}`)
  }

  it('operator starts with 5 Schedule/Backup pairs present → every API backup is linked to its schedule', async () => {
    for (let i = 0; i < 5; i++) await linked(veleroNamespace, `velero-pre-${i}-20260101030000`, `velero-pre-${i}`)
  })

  it('Velero: Schedule first, then Backup → linked', async () => {
    await veleroSchedule('first')
    await syncedId('backupschedules', veleroNamespace, 'velero-first')
    await veleroBackup('first-20260101030000', 'first')
    await linked(veleroNamespace, 'velero-first-20260101030000', 'velero-first')
  })

  it('Velero: Backup synced first, then its Schedule → the backup gets linked', async () => {
    await veleroBackup('late-20260101030000', 'late')
    const backupId = await syncedId('backups', veleroNamespace, 'velero-late-20260101030000')
    assert.equal((harness.sim.get('backups/backups', backupId!) as {schedule?: string | null}).schedule ?? null, null, 'no schedule to link yet')
    await veleroSchedule('late')
    await linked(veleroNamespace, 'velero-late-20260101030000', 'velero-late')
  })

  it('CloudNativePG: Backup synced first, then its ScheduledBackup → the backup gets linked', async () => {
    const namespace = await freshNamespace(harness.client, 'db')
    await harness.client.create(cnpg('backups', namespace), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'Backup',
      metadata: {name: 'pg-main-daily-1', namespace, labels: {'cnpg.io/scheduled-backup': 'daily'}},
      spec: {cluster: {name: 'pg-main'}, method: 'barmanObjectStore'},
    })
    await syncedId('backups', namespace, 'cnpg-pg-main-daily-1')
    await harness.client.create(cnpg('scheduledbackups', namespace), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name: 'daily', namespace},
      spec: {schedule: '0 0 2 * * *', cluster: {name: 'pg-main'}},
    })
    await linked(namespace, 'cnpg-pg-main-daily-1', 'cnpg-daily')
  })
})
