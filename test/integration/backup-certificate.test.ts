/**
 * Backup and Certificate discovery against the real upstream CRDs (Velero, CloudNativePG, cert-manager), installed
 * while the operator runs: objects shaped like what those controllers write → CRs → API objects; status edits,
 * deletion, CRDs going and coming back; malformed inputs; an API brown-out during the initial sync.
 */
import assert from 'node:assert/strict'
import type {KubeObject, ResourceRef} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {freshNamespace} from '../support/cluster.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {eventually} from '../support/helpers.js'
import {upstreamCrd} from '../support/upstream-crds.js'

const crdFiles = ['velero.io_backups.yaml', 'velero.io_schedules.yaml', 'postgresql.cnpg.io_backups.yaml', 'postgresql.cnpg.io_scheduledbackups.yaml', 'cert-manager.io_certificates.yaml']
const crdNames = ['backups.velero.io', 'schedules.velero.io', 'backups.postgresql.cnpg.io', 'scheduledbackups.postgresql.cnpg.io', 'certificates.cert-manager.io']
const features = ['velero-backup-discovery', 'velero-schedule-discovery', 'cnpg-backup-discovery', 'cnpg-schedule-discovery', 'certificate-discovery']

const velero = (plural: string, namespace?: string, name?: string): ResourceRef => ({group: 'velero.io', version: 'v1', plural, namespace, name})
const cnpg = (plural: string, namespace?: string, name?: string): ResourceRef => ({group: 'postgresql.cnpg.io', version: 'v1', plural, namespace, name})
const certManager = (namespace?: string, name?: string): ResourceRef => ({group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace, name})
const polycrate = (plural: string, namespace?: string, name?: string): ResourceRef => ({group: 'polycrate.io', version: 'v1alpha1', plural, namespace, name})

type Synced = KubeObject & {spec: Record<string, unknown>; status?: {phase?: string; api_id?: string; sync_status?: string; observed_generation?: number}}
type ApiObject = Record<string, unknown> & {id: string; name: string; is_deleted?: boolean}
const DAY = 24 * 60 * 60 * 1000

describe('Backup and Certificate discovery (in-process operator, upstream CRDs installed mid-run, simulator)', function () {
  this.timeout(900_000)
  let veleroNamespace: string
  const harness = inProcessOperator({
    setup: async () => void (veleroNamespace = await freshNamespace(harness.client, 'velero')),
    spec: () => ({
      backup_discovery: {velero_namespace: veleroNamespace},
      certificate_discovery: {issuer_filter: {exclude_issuers: ['selfsigned-issuer']}},
    }),
  })

  const controllers = async () => {
    const config = await harness.client.get<KubeObject & {status?: {controllers?: Array<{name: string; running: boolean; reason: string}>}}>(polycrate('operatorconfigs', harness.namespace, 'default'))
    return new Map((config.status?.controllers ?? []).map((c) => [c.name, c]))
  }
  const installCrds = async () => {
    for (const file of crdFiles) {
      const crd = upstreamCrd(file)
      await applyCrd(harness.client, crd)
      await waitEstablished(harness.client, crd.metadata.name)
    }
  }
  const list = async (plural: string, namespace: string) => (await harness.client.request<{items: Synced[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/${plural}`})).items
  const synced = (plural: string, namespace: string, name: string, check: (cr: Synced) => boolean = () => true) => eventually(async () => {
    const found = (await list(plural, namespace)).find((cr) => cr.metadata?.name === name)
    // Synced for the spec it has now (an earlier sync of an older spec says Synced too).
    const current = found?.status?.observed_generation === found?.metadata?.generation
    return found && current && found.status?.phase === 'Synced' && found.status.api_id && check(found) ? found : undefined
  }, 30_000, `${plural} ${namespace}/${name} synced`)
  const apiObject = (resource: string, id: string) => harness.sim.get(resource, id) as ApiObject | undefined
  const events = async (namespace: string) => (await harness.client.request<{items: Array<{type: string; reason: string; message: string; involvedObject: {kind: string; name: string}}>}>({path: `/api/v1/namespaces/${namespace}/events`})).items


  it('the controllers wait for their CRDs, and start when the CRDs are installed mid-run', async () => {
    const before = await eventually(async () => {
      const states = await controllers()
      return features.every((name) => states.has(name)) ? states : undefined
    }, 30_000, 'every feature listed in status.controllers')
    for (const name of features) {
      // Another test file may have left the CRDs installed; then they run already.
      const state = before.get(name)!
      assert.ok(state.running || /^WaitingForCRDs: /.test(state.reason), `${name}: ${state.reason}`)
    }
    await installCrds()
    await eventually(async () => {
      const states = await controllers()
      return features.every((name) => states.get(name)?.running) ? states : undefined
    }, 30_000, 'every backup and certificate discovery controller running')
  })

  it('Velero: Backup and Schedule → Backup/BackupSchedule CRs per the mapping tables → API; status edits follow; deletion removes CR and API object', async () => {
    await harness.client.create(velero('schedules', veleroNamespace), {
      apiVersion: 'velero.io/v1', kind: 'Schedule', metadata: {name: 'nightly', namespace: veleroNamespace},
      spec: {schedule: '0 3 * * *', paused: false, template: {ttl: '720h0m0s', includedNamespaces: ['shop']}},
    })
    await harness.client.create(velero('backups', veleroNamespace), {
      apiVersion: 'velero.io/v1', kind: 'Backup',
      metadata: {name: 'nightly-20260101030000', namespace: veleroNamespace, labels: {'velero.io/schedule-name': 'nightly'}},
      spec: {ttl: '720h0m0s', includedNamespaces: ['shop'], storageLocation: 'default'},
    })
    // Velero's Backup has no status subresource: Velero writes status with the object.
    await harness.client.mergePatch(velero('backups', veleroNamespace, 'nightly-20260101030000'), {status: {
      phase: 'InProgress', startTimestamp: '2026-01-01T03:00:00Z', progress: {totalItems: 100, itemsBackedUp: 40},
    }})
    const backup = await synced('backups', veleroNamespace, 'velero-nightly-20260101030000', (cr) => cr.spec.status === 'running')
    assert.deepEqual(
      [backup.spec.provider, backup.spec.kind, backup.spec.source_namespace, backup.spec.retention_policy, backup.spec.started_at, backup.spec.items_backed_up, backup.spec.schedule_name],
      ['velero', 'app', 'shop', '720h0m0s', '2026-01-01T03:00:00Z', 40, 'nightly'],
    )
    const api = apiObject('backups/backups', backup.status!.api_id!)!
    assert.deepEqual([api.provider, api.status, api.retention_policy, api.items_backed_up], ['velero', 'running', '720h0m0s', 40])

    await harness.client.mergePatch(velero('backups', veleroNamespace, 'nightly-20260101030000'), {status: {
      phase: 'PartiallyFailed', completionTimestamp: '2026-01-01T03:10:00Z', progress: {totalItems: 100, itemsBackedUp: 98}, errors: 2,
    }})
    await eventually(async () => apiObject('backups/backups', backup.status!.api_id!)?.status === 'partial', 20_000, 'PartiallyFailed → partial in the API')
    assert.equal(apiObject('backups/backups', backup.status!.api_id!)!.completed_at, '2026-01-01T03:10:00Z')

    const schedule = await synced('backupschedules', veleroNamespace, 'velero-nightly')
    assert.deepEqual([schedule.spec.schedule_cron, schedule.spec.paused, schedule.spec.provider], ['0 3 * * *', false, 'velero'])
    const apiSchedule = apiObject('backups/backup-schedules', schedule.status!.api_id!)!
    assert.equal(apiSchedule.schedule_cron, '0 3 * * *')
    await harness.client.mergePatch(velero('schedules', veleroNamespace, 'nightly'), {spec: {paused: true}})
    await eventually(async () => apiObject('backups/backup-schedules', schedule.status!.api_id!)?.paused === true, 20_000, 'paused in the API')

    await harness.client.delete(velero('backups', veleroNamespace, 'nightly-20260101030000'))
    await eventually(async () => (await list('backups', veleroNamespace)).every((cr) => cr.metadata?.name !== 'velero-nightly-20260101030000'), 20_000, 'Backup CR gone')
    await eventually(async () => apiObject('backups/backups', backup.status!.api_id!) === undefined, 20_000, 'API backup gone')
  })

  it('CloudNativePG: Backup and ScheduledBackup (status through the status subresource) → CRs → API', async () => {
    const namespace = await freshNamespace(harness.client, 'db')
    await harness.client.create(cnpg('scheduledbackups', namespace), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name: 'daily', namespace},
      spec: {schedule: '0 0 2 * * *', cluster: {name: 'pg-main'}, suspend: false},
    })
    const created = await harness.client.create<KubeObject>(cnpg('backups', namespace), {
      apiVersion: 'postgresql.cnpg.io/v1', kind: 'Backup', metadata: {name: 'pg-main-backup-1', namespace},
      spec: {cluster: {name: 'pg-main'}, method: 'barmanObjectStore'},
    })
    assert.ok(created.metadata?.uid)
    await harness.client.mergePatch({...cnpg('backups', namespace, 'pg-main-backup-1'), subresource: 'status'}, {status: {phase: 'running', startedAt: '2026-01-02T02:00:00Z'}})
    const backup = await synced('backups', namespace, 'cnpg-pg-main-backup-1', (cr) => cr.spec.status === 'running')
    assert.deepEqual([backup.spec.provider, backup.spec.kind, backup.spec.source_namespace], ['cloudnativepg', 'database', namespace])
    await harness.client.mergePatch({...cnpg('backups', namespace, 'pg-main-backup-1'), subresource: 'status'}, {status: {phase: 'completed', stoppedAt: '2026-01-02T02:05:00Z'}})
    await eventually(async () => apiObject('backups/backups', backup.status!.api_id!)?.status === 'completed', 20_000, 'completed in the API')
    const schedule = await synced('backupschedules', namespace, 'cnpg-daily')
    assert.equal(schedule.spec.schedule_cron, '0 0 2 * * *')
    assert.equal(apiObject('backups/backup-schedules', schedule.status!.api_id!)!.provider, 'cloudnativepg')
  })

  it('cert-manager: a Certificate → certmanager-<ns>-<name> with the seed\'s spec and labels → API; NotAfter 30 days + 5 s ahead flips to expiring_soon by itself', async () => {
    const namespace = await freshNamespace(harness.client, 'tls')
    await harness.client.create(certManager(namespace), {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'api-example-com-tls', namespace},
      spec: {secretName: 'api-example-com-tls', dnsNames: ['api.example.com'], issuerRef: {name: 'letsencrypt-production', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
    })
    const notAfter = new Date(Date.now() + 30 * DAY + 5000)
    await harness.client.mergePatch({...certManager(namespace, 'api-example-com-tls'), subresource: 'status'}, {status: {
      conditions: [{type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z')}],
      notBefore: new Date(Date.now() - 60 * DAY).toISOString().replace(/\.\d+Z$/, 'Z'),
      notAfter: notAfter.toISOString().replace(/\.\d+Z$/, 'Z'),
      revision: 1,
    }})
    const cr = await synced('certificates', namespace, `certmanager-${namespace}-api-example-com-tls`, (found) => found.spec.certificate_status === 'ready')
    assert.deepEqual(
      [cr.spec.secret_name, cr.spec.dns_names, cr.spec.issuer_name, cr.spec.issuer_kind, cr.spec.issuer_group, cr.spec.is_ready, cr.spec.namespace],
      ['api-example-com-tls', ['api.example.com'], 'letsencrypt-production', 'clusterissuer', 'cert-manager.io', true, namespace],
    )
    assert.equal(cr.metadata?.labels?.['certificates.polycrate.io/issuer'], 'letsencrypt-production')
    assert.equal(cr.metadata?.labels?.['certificates.polycrate.io/ready'], 'true')
    const id = cr.status!.api_id!
    assert.equal(apiObject('certificates', id)!.certificate_status, 'ready')
    // No change to the source: time alone makes it expiring_soon (the controller scheduled its own requeue).
    const flipped = Date.now()
    await eventually(async () => apiObject('certificates', id)?.certificate_status === 'expiring_soon', 20_000, 'expiring_soon in the API')
    assert.ok(Date.now() - flipped < 10_000, `flipped after ${Date.now() - flipped} ms`)
  })

  it('issuer_filter: a certificate of an excluded issuer is not discovered', async () => {
    const namespace = await freshNamespace(harness.client, 'tlsx')
    for (const [name, issuer] of [['excluded', 'selfsigned-issuer'], ['included', 'letsencrypt-production']] as const) {
      await harness.client.create(certManager(namespace), {
        apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name, namespace},
        spec: {secretName: name, dnsNames: [`${name}.example.com`], issuerRef: {name: issuer, kind: 'Issuer'}},
      })
    }
    await eventually(async () => (await list('certificates', namespace)).some((cr) => cr.metadata?.name === `certmanager-${namespace}-included`), 20_000, 'the included one')
    assert.deepEqual((await list('certificates', namespace)).map((cr) => cr.metadata?.name), [`certmanager-${namespace}-included`])
  })

  it('malformed inputs each give a Warning Event or a documented default; the others are discovered', async () => {
    const namespace = await freshNamespace(harness.client, 'odd')
    const v = (plural: string) => velero(plural, veleroNamespace)
    // What the API server accepts but the operator cannot read as is (its CRD schemas refuse the rest).
    const bad: Array<[ResourceRef, string, object, string]> = [
      [v('backups'), 'Backup', {metadata: {name: `ttl-${namespace}`}, spec: {ttl: 'forever'}}, 'InvalidTTL'],
      [v('backups'), 'Backup', {metadata: {name: `negttl-${namespace}`}, spec: {ttl: '-1h'}}, 'InvalidTTL'],
      [v('schedules'), 'Schedule', {metadata: {name: `cron-${namespace}`}, spec: {schedule: 'every day', template: {}}}, 'InvalidCron'],
      [v('schedules'), 'Schedule', {metadata: {name: `six-${namespace}`}, spec: {schedule: '0 0 3 * * *', template: {}}}, 'InvalidCron'],
      [cnpg('scheduledbackups', namespace), 'ScheduledBackup', {metadata: {name: 'five-fields'}, spec: {schedule: '0 0 * * *', cluster: {name: 'pg'}}}, 'FiveFieldCnpgCron'],
      [cnpg('scheduledbackups', namespace), 'ScheduledBackup', {metadata: {name: 'bad-cron'}, spec: {schedule: 'whenever', cluster: {name: 'pg'}}}, 'InvalidCron'],
      [certManager(namespace), 'Certificate', {metadata: {name: 'external-issuer'}, spec: {secretName: 'x', dnsNames: ['x.example.com'], issuerRef: {name: 'pca', kind: 'AWSPCAClusterIssuer', group: 'awspca.cert-manager.io'}}}, 'UnsupportedIssuerKind'],
    ]
    for (const [ref, kind, body] of bad) await harness.client.create(ref, {apiVersion: `${ref.group}/${ref.version}`, kind, ...body})
    // Documented defaults (no Event): all namespaces ("*") is a cluster backup; Deleting before expiration is unknown.
    await harness.client.create(v('backups'), {apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: `all-${namespace}`}, spec: {includedNamespaces: ['*']}})
    await harness.client.create(v('backups'), {apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: `deleting-${namespace}`}, spec: {}, status: {phase: 'Deleting', expiration: '2099-01-01T00:00:00Z'}})
    await harness.client.create(certManager(namespace), {apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'no-dns'}, spec: {secretName: 'no-dns', commonName: 'cn.example.com', issuerRef: {name: 'le'}}})

    const warnings = async () => [...await events(veleroNamespace), ...await events(namespace)].filter((e) => e.type === 'Warning')
    for (const [, , body, reason] of bad) {
      const name = (body as {metadata: {name: string}}).metadata.name
      await eventually(async () => (await warnings()).some((e) => e.involvedObject.name === name && e.reason === reason), 20_000, `${reason} on ${name}`)
    }
    const all = await synced('backups', veleroNamespace, `velero-all-${namespace}`)
    assert.deepEqual([all.spec.kind, all.spec.source_namespace], ['cluster', veleroNamespace])
    assert.equal((await synced('backups', veleroNamespace, `velero-deleting-${namespace}`)).spec.status, 'unknown')
    const noDns = await synced('certificates', namespace, `certmanager-${namespace}-no-dns`)
    assert.deepEqual([noDns.spec.issuer_kind, noDns.spec.issuer_group, noDns.spec.certificate_status], ['issuer', 'cert-manager.io', 'pending'])
    // The odd ones are still discovered with what could be read (a problem never drops the other fields).
    assert.equal((await synced('backups', veleroNamespace, `velero-ttl-${namespace}`)).spec.retention_policy, undefined)
  })

  it('CRDs deleted → the controllers stop and say why; re-installed → they resume', async () => {
    for (const name of crdNames) await harness.client.delete({group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name})
    await eventually(async () => {
      const states = await controllers()
      return features.every((name) => !states.get(name)?.running && /WaitingForCRDs/.test(states.get(name)?.reason ?? ''))
    }, 60_000, 'every controller stopped, waiting for its CRDs')
    await eventually(async () => {
      for (const name of crdNames) if (await harness.client.getOrUndefined({group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name})) return false
      return true
    }, 60_000, 'the CRDs are gone')
    await installCrds()
    await eventually(async () => {
      const states = await controllers()
      return features.every((name) => states.get(name)?.running)
    }, 30_000, 'the controllers resume')
    const namespace = await freshNamespace(harness.client, 'again')
    await harness.client.create(certManager(namespace), {
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'again', namespace},
      spec: {secretName: 'again', dnsNames: ['again.example.com'], issuerRef: {name: 'le', kind: 'ClusterIssuer'}},
    })
    await synced('certificates', namespace, `certmanager-${namespace}-again`)
  })

  it('R: an API brown-out (50 % 5xx/429) during the initial sync of 300 Velero backups → all synced once, 0 duplicates', async () => {
    harness.sim.faults.set({errorRate: 0.3, errorStatuses: [500, 502, 503], rateLimitRate: 0.2, retryAfterSeconds: 0, match: (_method, p) => p.startsWith('/api/v1/backups/')})
    const prefix = `r-${Date.now().toString(36)}`
    const queue = Array.from({length: 300}, (_, i) => i)
    await Promise.all(Array.from({length: 16}, async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        await harness.client.create(velero('backups', veleroNamespace), {apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name: `${prefix}-${i}`, namespace: veleroNamespace}, spec: {ttl: '24h0m0s'}, status: {phase: 'Completed'}})
      }
    }))
    await eventually(async () => {
      const ours = (await list('backups', veleroNamespace)).filter((cr) => String(cr.metadata?.name).startsWith(`velero-${prefix}-`))
      return ours.length === 300 && ours.every((cr) => cr.status?.phase === 'Synced')
    }, 600_000, '300 Backup CRs synced')
    harness.sim.faults.set({})
    const live = (harness.sim.list('backups/backups') as ApiObject[]).filter((b) => String(b.name).startsWith(prefix))
    assert.equal(live.length, 300, 'one API backup per Velero backup')
    assert.equal(new Set(live.map((b) => b.name)).size, 300, 'no duplicates')
  })
})
