/**
 * Workloads of the fault campaign: each a sequence of user operations against the cluster, with the OperatorConfig
 * it needs. Every name carries the case prefix `P` (cluster-scoped objects are shared between cases); the oracle
 * replaces the prefix and the case namespaces by placeholders when it compares runs.
 */
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {KubeApiError} from '../../../src/kube/client.js'
import {finalizers} from '../../../src/operator/conventions.js'
import {S3_KEY_PATTERN} from '../api-simulator/index.js'
import {controlPlane} from '../cluster.js'

export interface WorkloadContext {
  client: KubeClient
  /** Unique per case; lower-case letters and digits. */
  prefix: string
  /** The workload's own namespace (Ingresses, Velero objects, meta secrets, pods). */
  namespace: string
  /** The operator's namespace (its OperatorConfig `default`), for workloads that change the operator's settings. */
  operatorNamespace: string
}

export type Step = (ctx: WorkloadContext) => Promise<void>

/** What `observe` may read of the case's API simulator. */
export interface ApiView {
  list(collection: string): Array<Record<string, unknown>>
}

/** One observed Kubernetes object of the end state (the runner prefixes the key with `kube` and normalises both). */
export interface Observed {
  key: string
  value: unknown
}

export interface Workload {
  name: string
  /** The feature it covers (`--feature`). */
  feature: string
  /** OperatorConfig spec additions (api_sync and local_cluster are always on). */
  config: (ctx: WorkloadContext) => Record<string, unknown>
  /** Operations before the operator starts (the "present at start" orderings). */
  before?: Step[]
  steps: Step[]
  /** Cluster-scoped objects to remove after the case (the operator still runs, so it can release its finalizers). */
  cleanup?: Step
  /** Which ordering of creations it exercises, for the coverage table. */
  ordering?: string
  /** The resources of its sources (`group/plural` as the proxy names them): stale lists and watch closes aim there. */
  sources: string[]
  /** Workloads of one group differ only in the order of creations: their reference end states must be equal. */
  orderingGroup?: string
  /**
   * What the operator writes besides polycrate.io CRs and API objects (a credentials Secret, a Service's status,
   * a user CR's status), projected to what must be equal between runs; secret values never leave this function.
   */
  observe?: (ctx: WorkloadContext, api: ApiView) => Promise<Observed[]>
  /**
   * A fault plan of its own (campaign.ts faultFor): `pause` freezes the leader of two replicas in every case; `api`
   * arms the API fault proxy's seeded schedule in every case (with the crash points in odd ones).
   */
  plan?: 'pause' | 'api'
}

const ingresses = (namespace: string, name?: string): ResourceRef => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace, name})
const nodes = (name?: string): ResourceRef => ({group: '', version: 'v1', plural: 'nodes', name})
const pvs = (name?: string): ResourceRef => ({group: '', version: 'v1', plural: 'persistentvolumes', name})
const velero = (plural: string, namespace: string, name?: string): ResourceRef => ({group: 'velero.io', version: 'v1', plural, namespace, name})
const secrets = (namespace: string, name?: string): ResourceRef => ({group: '', version: 'v1', plural: 'secrets', namespace, name})
const pods = (namespace: string, name?: string): ResourceRef => ({group: '', version: 'v1', plural: 'pods', namespace, name})
const certificates = (namespace: string, name?: string): ResourceRef => ({group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace, name})
const cnpg = (plural: string, namespace: string, name?: string): ResourceRef => ({group: 'postgresql.cnpg.io', version: 'v1', plural, namespace, name})
const operatorConfig = (namespace: string): ResourceRef => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace, name: 'default'})

/** Only the features a workload needs: the others would discover what other cases left behind. */
const only = (enabled: Record<string, Record<string, unknown>>) => ({
  endpoint_discovery: {enabled: false},
  app_discovery: {enabled: false},
  node_discovery: {enabled: false},
  backup_discovery: {enabled: false},
  certificate_discovery: {enabled: false},
  artifact_discovery: {enabled: false},
  volume_discovery: {enabled: false},
  ...enabled,
})

const ingress = (namespace: string, name: string, hosts: string[]) => ({
  apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
  metadata: {name, namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
  spec: {rules: hosts.map((host) => ({host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}))},
})

export const ignoreNotFound = async (call: () => Promise<unknown>) => {
  try {
    await call()
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error
  }
}

const readyNode = (name: string, labels: Record<string, string> = {}, address = '10.0.0.1') => ({
  apiVersion: 'v1', kind: 'Node', metadata: {name, labels: {'kubernetes.io/hostname': name, ...labels}},
  spec: {},
  status: {
    capacity: {cpu: '4', memory: '16Gi', pods: '110'},
    conditions: [{type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'chaos', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z'}],
    nodeInfo: {kubeletVersion: 'v1.35.4', osImage: 'Debian GNU/Linux 12', kernelVersion: '6.1.0', containerRuntimeVersion: 'containerd://2.0.0', architecture: 'amd64', operatingSystem: 'linux', machineID: '', systemUUID: '', bootID: '', kubeProxyVersion: ''},
    addresses: [{type: 'InternalIP', address}],
  },
})

const hostPathPv = (name: string, size: string) => ({
  apiVersion: 'v1', kind: 'PersistentVolume', metadata: {name},
  spec: {capacity: {storage: size}, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'chaos', hostPath: {path: `/data/${name}`}},
})

const metaSecret = (namespace: string, block: string) => ({
  apiVersion: 'v1', kind: 'Secret', metadata: {name: `${block}.poly`, namespace},
  stringData: {meta: [
    'block:', `  name: ${block}`, '  display_name: "Chaos app"', '  version: "1.0.0"', '  kind: helm', '  type: app',
    'workspace:', '  name: production', '  organization: acme-corp',
    'action:', '  name: install', '  status: success', '  last_executed_at: "2025-12-20T10:00:00Z"',
  ].join('\n')},
})

const appPod = async (client: KubeClient, namespace: string, name: string, app: string) => {
  await client.create(pods(namespace), {
    apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, annotations: {polycrate_k8sapp_name: app}},
    spec: {containers: [{name: 'c', image: 'apps.example.com/team/service:1.0'}]},
  })
  await client.mergePatch({...pods(namespace, name), subresource: 'status'}, {status: {
    phase: 'Running', conditions: [{type: 'Ready', status: 'True'}],
    containerStatuses: [{name: 'c', image: 'apps.example.com/team/service:1.0', imageID: '', ready: true, restartCount: 0, started: true, state: {running: {startedAt: '2026-01-01T00:00:00Z'}}}],
  }})
}

const veleroSchedule = (ctx: WorkloadContext, name: string) => ctx.client.create(velero('schedules', ctx.namespace), {
  apiVersion: 'velero.io/v1', kind: 'Schedule', metadata: {name, namespace: ctx.namespace},
  spec: {schedule: '0 3 * * *', template: {ttl: '720h0m0s', includedNamespaces: ['shop']}},
})
const veleroBackup = (ctx: WorkloadContext, name: string, schedule: string) => ctx.client.create(velero('backups', ctx.namespace), {
  apiVersion: 'velero.io/v1', kind: 'Backup', metadata: {name, namespace: ctx.namespace, labels: {'velero.io/schedule-name': schedule}},
  spec: {ttl: '720h0m0s', includedNamespaces: ['shop']},
})

const endpointWorkload: Workload = {
  name: 'endpoint',
  feature: 'endpoint',
  sources: ['networking.k8s.io/ingresses'],
  config: () => only({endpoint_discovery: {enabled: true}}),
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'a', [`${prefix}-a.example.com`]))
    },
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'b', [`${prefix}-b.example.com`]))
    },
    // a's host changes
    async ({client, namespace, prefix}) => {
      await client.mergePatch(ingresses(namespace, 'a'), {spec: ingress(namespace, 'a', [`${prefix}-a2.example.com`]).spec})
    },
    // a host changes hands: a gives up a2, b takes it
    async ({client, namespace, prefix}) => {
      await client.mergePatch(ingresses(namespace, 'a'), {spec: ingress(namespace, 'a', [`${prefix}-c.example.com`]).spec})
      await client.mergePatch(ingresses(namespace, 'b'), {spec: ingress(namespace, 'b', [`${prefix}-b.example.com`, `${prefix}-a2.example.com`]).spec})
    },
    async ({client, namespace}) => {
      await client.delete(ingresses(namespace, 'a'))
    },
  ],
}

const hostWorkload: Workload = {
  name: 'host',
  feature: 'host',
  sources: ['core/nodes'],
  config: () => only({node_discovery: {enabled: true}}),
  steps: [
    async ({client, prefix}) => {
      await client.create(nodes(), readyNode(`${prefix}-n1`))
    },
    async ({client, prefix}) => {
      await client.create(nodes(), readyNode(`${prefix}-n2`))
    },
    async ({client, prefix}) => {
      await client.mergePatch(nodes(`${prefix}-n1`), {metadata: {labels: {'node-role.kubernetes.io/worker': ''}}})
    },
    async ({client, prefix}) => {
      await client.delete(nodes(`${prefix}-n2`))
    },
  ],
  cleanup: async ({client, prefix}) => {
    for (const name of [`${prefix}-n1`, `${prefix}-n2`]) await ignoreNotFound(() => client.delete(nodes(name)))
  },
}

const volumeWorkload: Workload = {
  name: 'volume',
  feature: 'volume',
  sources: ['core/persistentvolumes'],
  config: () => only({volume_discovery: {enabled: true}}),
  steps: [
    async ({client, prefix}) => {
      await client.create(pvs(), hostPathPv(`${prefix}-pv1`, '1Gi'))
    },
    async ({client, prefix}) => {
      await client.create(pvs(), hostPathPv(`${prefix}-pv2`, '2Gi'))
    },
    async ({client, prefix}) => {
      await releasePv(client, `${prefix}-pv2`)
      await client.delete(pvs(`${prefix}-pv2`))
    },
  ],
  cleanup: async ({client, prefix}) => {
    for (const name of [`${prefix}-pv1`, `${prefix}-pv2`]) {
      await releasePv(client, name)
      await ignoreNotFound(() => client.delete(pvs(name)))
    }
  },
}

/** What kube-controller-manager's pv-protection controller would do for an unbound PV. */
async function releasePv(client: KubeClient, name: string): Promise<void> {
  await ignoreNotFound(async () => {
    const pv = await client.get<KubeObject>(pvs(name))
    const kept = (pv.metadata?.finalizers as string[] | undefined ?? []).filter((f) => f !== 'kubernetes.io/pv-protection')
    await client.mergePatch(pvs(name), {metadata: {finalizers: kept.length ? kept : null}})
  })
}

const backupConfig = (ctx: WorkloadContext) => only({backup_discovery: {enabled: true, cnpg_enabled: false, velero_namespace: ctx.namespace}})
const backupSchedule: Step = (ctx) => veleroSchedule(ctx, `${ctx.prefix}-nightly`).then(() => undefined)
const backupBackup: Step = (ctx) => veleroBackup(ctx, `${ctx.prefix}-nightly-20260101030000`, `${ctx.prefix}-nightly`).then(() => undefined)

/**
 * Then a second schedule and its backup come and go (the discoveries' deletes, the syncs' API deletes and finalizer
 * releases), in two steps: a crash after the backup's delete would otherwise always take the schedule's with it.
 */
const backupWeekly: Step[] = [
  async (ctx) => {
    await veleroSchedule(ctx, `${ctx.prefix}-weekly`)
    await veleroBackup(ctx, `${ctx.prefix}-weekly-20260104030000`, `${ctx.prefix}-weekly`)
  },
  async ({client, namespace, prefix}) => {
    await client.delete(velero('backups', namespace, `${prefix}-weekly-20260104030000`))
  },
  async ({client, namespace, prefix}) => {
    await client.delete(velero('schedules', namespace, `${prefix}-weekly`))
  },
]

const backupWorkloads: Workload[] = [
  {name: 'backup-schedule-first', feature: 'backup', sources: ['velero.io/backups', 'velero.io/schedules'], ordering: 'backup: schedule first', orderingGroup: 'backup', config: backupConfig, steps: [backupSchedule, backupBackup, ...backupWeekly]},
  {name: 'backup-backup-first', feature: 'backup', sources: ['velero.io/backups', 'velero.io/schedules'], ordering: 'backup: backup first', orderingGroup: 'backup', config: backupConfig, steps: [backupBackup, backupSchedule, ...backupWeekly]},
  {name: 'backup-present', feature: 'backup', sources: ['velero.io/backups', 'velero.io/schedules'], ordering: 'backup: both present at start', orderingGroup: 'backup', config: backupConfig, before: [backupSchedule, backupBackup], steps: backupWeekly},
]

/** CloudNativePG: a ScheduledBackup and the Backup it made (CNPG's label names the schedule), then the backup completes. */
const cnpgConfig = (ctx: WorkloadContext) => only({backup_discovery: {enabled: true, cnpg_enabled: true, velero_namespace: ctx.namespace}})
const cnpgScheduledBackup = (client: KubeClient, namespace: string, name: string) => client.create(cnpg('scheduledbackups', namespace), {
  apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: {name, namespace},
  spec: {schedule: '0 0 3 * * *', cluster: {name: 'pg'}, method: 'barmanObjectStore'},
})
const cnpgBackup = (client: KubeClient, namespace: string, name: string, scheduled: string) => client.create(cnpg('backups', namespace), {
  apiVersion: 'postgresql.cnpg.io/v1', kind: 'Backup',
  metadata: {name, namespace, labels: {'cnpg.io/scheduled-backup': scheduled}},
  spec: {cluster: {name: 'pg'}, method: 'barmanObjectStore'},
})
const cnpgScheduled: Step = async ({client, namespace, prefix}) => {
  await cnpgScheduledBackup(client, namespace, `${prefix}-nightly`)
}
const cnpgBackupStep: Step = async ({client, namespace, prefix}) => {
  await cnpgBackup(client, namespace, `${prefix}-nightly-20260101030000`, `${prefix}-nightly`)
}
/** Then a second scheduled backup and its backup come and go (the deletes in two steps, as for Velero). */
const cnpgWeekly: Step[] = [
  async ({client, namespace, prefix}) => {
    await cnpgScheduledBackup(client, namespace, `${prefix}-weekly`)
    await cnpgBackup(client, namespace, `${prefix}-weekly-20260104030000`, `${prefix}-weekly`)
  },
  async ({client, namespace, prefix}) => {
    await client.delete(cnpg('backups', namespace, `${prefix}-weekly-20260104030000`))
  },
  async ({client, namespace, prefix}) => {
    await client.delete(cnpg('scheduledbackups', namespace, `${prefix}-weekly`))
  },
]
/** CNPG's status as it writes it once the backup is done: fixed times, so two runs compare equal. */
const cnpgCompleted: Step = async ({client, namespace, prefix}) => {
  await client.mergePatch({...cnpg('backups', namespace, `${prefix}-nightly-20260101030000`), subresource: 'status'}, {status: {
    phase: 'completed', method: 'barmanObjectStore', backupId: '20260101T030000', startedAt: '2026-01-01T03:00:00Z', stoppedAt: '2026-01-01T03:04:00Z',
  }})
}
const cnpgSources = ['postgresql.cnpg.io/backups', 'postgresql.cnpg.io/scheduledbackups']

const cnpgWorkloads: Workload[] = [
  {name: 'cnpg-scheduled-first', feature: 'backup', sources: cnpgSources, ordering: 'cnpg: scheduled backup first', orderingGroup: 'cnpg', config: cnpgConfig, steps: [cnpgScheduled, cnpgBackupStep, cnpgCompleted, ...cnpgWeekly]},
  {name: 'cnpg-backup-first', feature: 'backup', sources: cnpgSources, ordering: 'cnpg: backup first', orderingGroup: 'cnpg', config: cnpgConfig, steps: [cnpgBackupStep, cnpgScheduled, cnpgCompleted, ...cnpgWeekly]},
  {name: 'cnpg-present', feature: 'backup', sources: cnpgSources, ordering: 'cnpg: both present at start', orderingGroup: 'cnpg', config: cnpgConfig, before: [cnpgScheduled, cnpgBackupStep], steps: [cnpgCompleted, ...cnpgWeekly]},
]

const appConfig = () => only({app_discovery: {enabled: true}})
const appSecret: Step = async ({client, namespace, prefix}) => {
  await client.create(secrets(namespace), metaSecret(namespace, `${prefix}-shop`))
}
const appPods: Step = async ({client, namespace, prefix}) => {
  await appPod(client, namespace, 'shop-1', `${prefix}-shop`)
  await appPod(client, namespace, 'shop-2', `${prefix}-shop`)
}

/**
 * Then a second app comes (meta secret and pod) and goes (the discovery's delete, the sync's API delete and finalizer
 * release). The delete waits for the positive signal that the block's app is in the API (its K8sApp CR has an API
 * id; at most 60 s): an app gone before it was synced never reaches the API, while a synced one stays there marked
 * uninstalled, so without it the end state would depend on the timing.
 */
const appBlog: Step[] = [
  async ({client, namespace, prefix}) => {
    await client.create(secrets(namespace), metaSecret(namespace, `${prefix}-blog`))
    await appPod(client, namespace, 'blog-1', `${prefix}-blog`)
  },
  async ({client, namespace, prefix}) => {
    const synced = async () => {
      const app = await client.getOrUndefined<KubeObject & {spec?: {kind?: string}; status?: {api_id?: string}}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps', namespace, name: `${prefix}-blog`})
      return app?.spec?.kind === 'helm' && Boolean(app.status?.api_id)
    }
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && !await synced();) await new Promise((resolve) => setTimeout(resolve, 250))
    await client.delete(pods(namespace, 'blog-1'))
    await client.delete(secrets(namespace, `${prefix}-blog.poly`))
  },
]

const appWorkloads: Workload[] = [
  {name: 'k8sapp-secret-first', feature: 'k8sapp', sources: ['core/pods', 'core/secrets'], ordering: 'k8sapp: meta secret first', orderingGroup: 'k8sapp', config: appConfig, steps: [appSecret, appPods, ...appBlog]},
  {name: 'k8sapp-pods-first', feature: 'k8sapp', sources: ['core/pods', 'core/secrets'], ordering: 'k8sapp: pods first', orderingGroup: 'k8sapp', config: appConfig, steps: [appPods, appSecret, ...appBlog]},
  {name: 'k8sapp-present', feature: 'k8sapp', sources: ['core/pods', 'core/secrets'], ordering: 'k8sapp: both present at start', orderingGroup: 'k8sapp', config: appConfig, before: [appSecret, appPods], steps: appBlog},
]

/** cert-manager's status as it writes it: fixed times, so two runs compare equal. */
const certificateStatus = (notAfter: string, revision: number) => ({status: {
  conditions: [{type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: '2026-01-01T00:00:00Z'}],
  notBefore: '2026-01-01T00:00:00Z', notAfter, renewalTime: '2036-01-01T00:00:00Z', revision,
}})

const certificateWorkload: Workload = {
  name: 'certificate',
  feature: 'certificate',
  sources: ['cert-manager.io/certificates'],
  config: () => only({certificate_discovery: {enabled: true}}),
  steps: [
    async ({client, namespace, prefix}) => {
      for (const name of ['api', 'shop']) {
        await client.create(certificates(namespace), {
          apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: `${prefix}-${name}`, namespace},
          spec: {secretName: `${prefix}-${name}-tls`, dnsNames: [`${prefix}-${name}.example.com`], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
        })
      }
    },
    // Issued, then renewed (a new notAfter, a new revision).
    async ({client, namespace, prefix}) => {
      await client.mergePatch({...certificates(namespace, `${prefix}-api`), subresource: 'status'}, certificateStatus('2036-06-01T00:00:00Z', 1))
    },
    async ({client, namespace, prefix}) => {
      await client.mergePatch({...certificates(namespace, `${prefix}-api`), subresource: 'status'}, certificateStatus('2036-09-01T00:00:00Z', 2))
    },
    async ({client, namespace, prefix}) => {
      await client.delete(certificates(namespace, `${prefix}-shop`))
    },
  ],
}

/**
 * The operator's own transition: endpoint discovery switched off and on again while a user deletes an Ingress it
 * held a finalizer on (the delete must not wait for discovery to come back) and creates another. The delete waits for
 * the positive signal that discovery stopped — it released its finalizers (at most 60 s; a finalizer never released
 * shows in the oracle as a source left terminating) — so that the end state does not depend on whether discovery
 * still saw the delete: it did not, and the Endpoint CR of the deleted Ingress is an orphan (kept until
 * `cleanup.stale_threshold_minutes`).
 */
const endpointToggleWorkload: Workload = {
  name: 'endpoint-toggle',
  feature: 'endpoint',
  sources: ['networking.k8s.io/ingresses'],
  config: () => only({endpoint_discovery: {enabled: true}}),
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'a', [`${prefix}-a.example.com`]))
      await client.create(ingresses(namespace), ingress(namespace, 'b', [`${prefix}-b.example.com`]))
    },
    async ({client, operatorNamespace}) => {
      await client.mergePatch(operatorConfig(operatorNamespace), {spec: {endpoint_discovery: {enabled: false}}})
    },
    async ({client, namespace, prefix}) => {
      const held = async () => (await client.request<{items: KubeObject[]}>({path: `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses`})).items
        .some((item) => (item.metadata?.finalizers as string[] | undefined)?.includes(finalizers.ingressDiscovery))
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && await held();) await new Promise((resolve) => setTimeout(resolve, 250))
      await client.delete(ingresses(namespace, 'a'))
      await client.create(ingresses(namespace), ingress(namespace, 'c', [`${prefix}-c.example.com`]))
    },
    async ({client, operatorNamespace}) => {
      await client.mergePatch(operatorConfig(operatorNamespace), {spec: {endpoint_discovery: {enabled: true}}})
    },
  ],
}

const s3buckets = (namespace: string, name?: string): ResourceRef => ({group: 'polycrate.io', version: 'v1alpha1', plural: 's3buckets', namespace, name})
const decoded = (data: Record<string, string> | undefined) => Object.fromEntries(Object.entries(data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]))

/**
 * The credentials Secrets of the case's buckets, projected: labels, type, owners, the plain values, and for the
 * keys only whether they are the API's current key of that bucket (the values themselves never leave here).
 */
async function s3Secrets({client, namespace}: WorkloadContext, api: ApiView): Promise<Observed[]> {
  const items = (await client.request<{items: Array<KubeObject & {data?: Record<string, string>; type?: string}>}>({path: `/api/v1/namespaces/${namespace}/secrets`})).items
  // A Secret whose S3Bucket is gone counts as collected, whether or not the garbage collector got to it yet.
  const owners = new Set((await client.request<{items: KubeObject[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/s3buckets`})).items.map((bucket) => bucket.metadata?.uid))
  const collected = (secret: KubeObject) => (secret.metadata?.ownerReferences as Array<{uid?: string}> | undefined)?.some((ref) => !owners.has(ref.uid))
  return items.filter((secret) => /^s3-.*-credentials$/.test(secret.metadata?.name ?? '') && !collected(secret)).map((secret) => {
    const {AWS_ACCESS_KEY_ID: access = '', AWS_SECRET_ACCESS_KEY: secretKey = '', ...plain} = decoded(secret.data)
    const bucket = api.list('s3/buckets').find((candidate) => candidate.name === plain.BUCKET_NAME) as {credential?: {api_user?: string}} | undefined
    const owners = (secret.metadata?.ownerReferences as Array<{kind?: string; name?: string; controller?: boolean}> | undefined ?? []).map(({kind, name, controller}) => ({kind, name, controller}))
    return {key: `secret ${secret.metadata?.name}`, value: {
      labels: secret.metadata?.labels ?? {}, type: secret.type, owners, data: plain,
      access_key: !access ? '<none>' : access === bucket?.credential?.api_user ? '<the bucket\'s API key>' : '<another key>',
      secret_key: S3_KEY_PATTERN.test(secretKey) ? '<a key>' : '<not a key>',
    }}
  })
}

/** A user's S3Buckets: two created (one reclaimed with its CR), the credentials Secret of one deleted by hand (restored). */
const s3Workload: Workload = {
  name: 's3bucket',
  feature: 's3bucket',
  sources: ['polycrate.io/s3buckets', 'core/secrets'],
  config: () => only({}),
  observe: s3Secrets,
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(s3buckets(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'data', namespace}, spec: {name: `${prefix}-data`, region: 'fsn1'}})
    },
    async ({client, namespace, prefix}) => {
      await client.create(s3buckets(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'logs', namespace}, spec: {name: `${prefix}-logs`, reclaim_policy: 'delete'}})
    },
    async ({client, namespace, prefix}) => {
      await ignoreNotFound(() => client.delete(secrets(namespace, `s3-${prefix}-data-credentials`)))
    },
    async ({client, namespace}) => {
      await client.delete(s3buckets(namespace, 'logs'))
    },
  ],
}

const k8sclusters = (namespace: string, name?: string): ResourceRef => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sclusters', namespace, name})

/** A K8sCluster CR pointing at the campaign's apiserver, with a ServiceAccount token (TokenRequest) in a Secret. */
async function k8sCluster({client, namespace, prefix}: WorkloadContext, name: string): Promise<void> {
  const server = controlPlane().server
  const ca = await readFile(path.join(controlPlane().dir, 'certs', 'apiserver.crt'), 'utf8')
  const secret = `${name}-token`
  if (!(await client.getOrUndefined(secrets(namespace, secret)))) {
    await client.create({group: '', version: 'v1', plural: 'serviceaccounts', namespace}, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: `${name}-probe`, namespace}})
    const request = await client.request<{status: {token: string}}>({method: 'POST', path: `/api/v1/namespaces/${namespace}/serviceaccounts/${name}-probe/token`, body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {expirationSeconds: 3600}}})
    await client.create(secrets(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: secret, namespace}, stringData: {token: request.status.token}})
  }
  await client.create(k8sclusters(namespace), {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sCluster', metadata: {name, namespace},
    spec: {displayName: `${prefix} ${name}`, description: 'chaos', apiServer: server, caCertificate: ca, kind: 'generic', authentication: {serviceAccountToken: {secretRef: {name: secret, key: 'token'}}}},
  })
}

/** The K8sCluster CRs' status, as a person reads it: phase, reachability, sync and the reasons of the conditions. */
async function k8sClusterStatus({client, namespace}: WorkloadContext): Promise<Observed[]> {
  const items = (await client.request<{items: Array<KubeObject & {status?: {phase?: string; reachable?: boolean; syncStatus?: string; conditions?: Array<{type: string; status: string; reason: string}>}}>}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/k8sclusters`})).items
  return items.map((item) => ({key: `k8scluster status ${item.metadata?.name}`, value: {
    phase: item.status?.phase, reachable: item.status?.reachable, syncStatus: item.status?.syncStatus,
    conditions: (item.status?.conditions ?? []).map(({type, status, reason}) => `${type}=${status}/${reason}`).sort(),
  }}))
}

/**
 * A user registers the cluster with a K8sCluster CR (it adopts the workspace's cluster), renames it, declares a
 * second one (refused: one cluster per workspace) and deletes the first: the second takes the slot over.
 */
const k8sClusterWorkload: Workload = {
  name: 'k8scluster',
  feature: 'k8scluster',
  sources: ['polycrate.io/k8sclusters', 'core/secrets'],
  config: () => only({}),
  observe: k8sClusterStatus,
  steps: [
    (ctx) => k8sCluster(ctx, 'prod'),
    async ({client, namespace, prefix}) => {
      await client.mergePatch(k8sclusters(namespace, 'prod'), {spec: {displayName: `${prefix} prod (eu)`, description: 'chaos, renamed'}})
    },
    (ctx) => k8sCluster(ctx, 'staging'),
    async ({client, namespace}) => {
      await client.delete(k8sclusters(namespace, 'prod'))
    },
  ],
}

const services = (namespace: string, name?: string): ResourceRef => ({group: '', version: 'v1', plural: 'services', namespace, name})
/** Fixed node ports (cases run one at a time and the namespace of the last is gone), so two runs compare equal. */
const lbService = (namespace: string, name: string, ports: Array<[string, number, number]>) => ({
  apiVersion: 'v1', kind: 'Service', metadata: {name, namespace},
  spec: {type: 'LoadBalancer', selector: {app: name}, ports: ports.map(([portName, port, nodePort]) => ({name: portName, port, targetPort: 8080, nodePort, protocol: 'TCP'}))},
})

/** The Services' load balancer status and finalizers. */
async function lbServices({client, namespace}: WorkloadContext): Promise<Observed[]> {
  const items = (await client.request<{items: Array<KubeObject & {status?: {loadBalancer?: unknown}}>}>({path: `/api/v1/namespaces/${namespace}/services`})).items
  return items.map((item) => ({key: `service ${item.metadata?.name}`, value: {finalizers: item.metadata?.finalizers ?? [], loadBalancer: item.status?.loadBalancer ?? {}}}))
}

/**
 * A LoadBalancer Service: created with one node, a port added, a second node joins, a second Service created and
 * the first deleted (its instance goes before its finalizer).
 */
const loadBalancerWorkload: Workload = {
  name: 'loadbalancer',
  feature: 'loadbalancer',
  sources: ['core/services', 'core/nodes'],
  config: () => only({cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all'}}}),
  observe: lbServices,
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(nodes(), readyNode(`${prefix}-lb1`, {}, '10.0.0.11'))
      await client.create(services(namespace), lbService(namespace, 'web', [['http', 80, 30080]]))
    },
    async ({client, namespace}) => {
      await client.mergePatch(services(namespace, 'web'), {spec: {ports: lbService(namespace, 'web', [['http', 80, 30080], ['https', 443, 30443]]).spec.ports}})
    },
    async ({client, prefix}) => {
      await client.create(nodes(), readyNode(`${prefix}-lb2`, {}, '10.0.0.12'))
    },
    async ({client, namespace}) => {
      await client.create(services(namespace), lbService(namespace, 'api', [['http', 8080, 30081]]))
    },
    async ({client, namespace}) => {
      await client.delete(services(namespace, 'web'))
    },
  ],
  cleanup: async ({client, prefix}) => {
    for (const name of [`${prefix}-lb1`, `${prefix}-lb2`]) await ignoreNotFound(() => client.delete(nodes(name)))
  },
}

/**
 * Users change sources while the leader is frozen (two replicas, campaign plan `pause`): Ingresses created, edited,
 * handed a host over and deleted, one step after another, whatever the freeze; the standby takes over (or not) and the
 * resumed one must not write.
 */
const pausedLeaderWorkload: Workload = {
  name: 'paused-leader',
  feature: 'leader',
  plan: 'pause',
  sources: ['networking.k8s.io/ingresses'],
  config: () => only({endpoint_discovery: {enabled: true}}),
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'a', [`${prefix}-a.example.com`]))
      await client.create(ingresses(namespace), ingress(namespace, 'b', [`${prefix}-b.example.com`]))
    },
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'c', [`${prefix}-c.example.com`]))
    },
    // a's host changes once its endpoint is in the API (the positive signal: its CR has an API id; at most 60 s), so
    // that whether the old host's endpoint was made and deleted does not depend on how fast the operator started.
    async ({client, namespace, prefix}) => {
      const synced = async () => Boolean((await client.getOrUndefined<KubeObject & {status?: {apiID?: string}}>({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace, name: `${prefix}-a-example-com`}))?.status?.apiID)
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && !await synced();) await new Promise((resolve) => setTimeout(resolve, 250))
      await client.mergePatch(ingresses(namespace, 'a'), {spec: ingress(namespace, 'a', [`${prefix}-a2.example.com`]).spec})
    },
    // a host changes hands: a gives up a2, b takes it
    async ({client, namespace, prefix}) => {
      await client.mergePatch(ingresses(namespace, 'a'), {spec: ingress(namespace, 'a', [`${prefix}-d.example.com`]).spec})
      await client.mergePatch(ingresses(namespace, 'b'), {spec: ingress(namespace, 'b', [`${prefix}-b.example.com`, `${prefix}-a2.example.com`]).spec})
    },
    async ({client, namespace}) => {
      await client.delete(ingresses(namespace, 'c'))
    },
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'e', [`${prefix}-e.example.com`]))
    },
  ],
}

/**
 * A K8sCluster CR in a workspace without a cluster (local_cluster off): the CR creates the API cluster, is renamed,
 * and a second CR is refused. A crash between the create and the status write (or the create's answer lost) must not
 * turn the cluster into an adopted one: its Registered reason stays Created (it is deleted with the CR).
 */
const k8sClusterCreatedWorkload: Workload = {
  name: 'k8scluster-created',
  feature: 'k8scluster',
  plan: 'api',
  sources: ['polycrate.io/k8sclusters', 'core/secrets'],
  config: () => ({...only({}), local_cluster: {enabled: false}}),
  observe: k8sClusterStatus,
  steps: [
    (ctx) => k8sCluster(ctx, 'prod'),
    async ({client, namespace, prefix}) => {
      await client.mergePatch(k8sclusters(namespace, 'prod'), {spec: {displayName: `${prefix} prod (eu)`, description: 'chaos, renamed'}})
    },
    (ctx) => k8sCluster(ctx, 'staging'),
  ],
}

/**
 * Every kind that creates in the Polycrate API at once, under the API fault proxy's schedule (campaign plan `api`):
 * an Ingress (endpoint), a Node (host), a PersistentVolume (volume), a Velero schedule and backup and a CloudNativePG
 * scheduled backup and backup, a cert-manager Certificate, a block's app (meta Secret and Pod), an S3Bucket (its
 * credentials Secret), a K8sCluster CR (it adopts local_cluster's cluster) and a LoadBalancer Service; then edits and
 * deletes. The oracle: no object created twice, none lost, every CR as synced as in the reference.
 */
const apiFaultsWorkload: Workload = {
  name: 'api-faults',
  feature: 'api',
  plan: 'api',
  sources: ['networking.k8s.io/ingresses', 'core/nodes', 'core/persistentvolumes', 'velero.io/backups', 'velero.io/schedules', 'postgresql.cnpg.io/backups', 'postgresql.cnpg.io/scheduledbackups',
    'cert-manager.io/certificates', 'core/pods', 'core/secrets', 'polycrate.io/s3buckets', 'polycrate.io/k8sclusters', 'core/services'],
  config: (ctx) => only({
    endpoint_discovery: {enabled: true}, node_discovery: {enabled: true}, volume_discovery: {enabled: true},
    backup_discovery: {enabled: true, cnpg_enabled: true, velero_namespace: ctx.namespace}, certificate_discovery: {enabled: true}, app_discovery: {enabled: true},
    cloud_controller: {enabled: true, load_balancer: {enabled: true, service_scope: 'all'}},
  }),
  observe: async (ctx, api) => [...await s3Secrets(ctx, api), ...await k8sClusterStatus(ctx), ...await lbServices(ctx)],
  steps: [
    async ({client, namespace, prefix}) => {
      await client.create(ingresses(namespace), ingress(namespace, 'a', [`${prefix}-a.example.com`]))
      await client.create(nodes(), readyNode(`${prefix}-n1`, {}, '10.0.0.21'))
      await client.create(pvs(), hostPathPv(`${prefix}-pv1`, '1Gi'))
    },
    async (ctx) => {
      await veleroSchedule(ctx, `${ctx.prefix}-nightly`)
      await veleroBackup(ctx, `${ctx.prefix}-nightly-20260101030000`, `${ctx.prefix}-nightly`)
      await cnpgScheduledBackup(ctx.client, ctx.namespace, `${ctx.prefix}-pg`)
      await cnpgBackup(ctx.client, ctx.namespace, `${ctx.prefix}-pg-20260101030000`, `${ctx.prefix}-pg`)
    },
    async (ctx) => {
      const {client, namespace, prefix} = ctx
      await client.create(certificates(namespace), {
        apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: `${prefix}-api`, namespace},
        spec: {secretName: `${prefix}-api-tls`, dnsNames: [`${prefix}-api.example.com`], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io'}},
      })
      await appSecret(ctx)
      await appPod(client, namespace, 'shop-1', `${prefix}-shop`)
    },
    async (ctx) => {
      await ctx.client.create(s3buckets(ctx.namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'data', namespace: ctx.namespace}, spec: {name: `${ctx.prefix}-data`, region: 'fsn1'}})
      await ctx.client.create(s3buckets(ctx.namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'S3Bucket', metadata: {name: 'logs', namespace: ctx.namespace}, spec: {name: `${ctx.prefix}-logs`, reclaim_policy: 'delete'}})
      await k8sCluster(ctx, 'prod')
    },
    async ({client, namespace}) => {
      await client.create(services(namespace), lbService(namespace, 'web', [['http', 80, 30090]]))
    },
    async ({client, namespace, prefix}) => {
      await client.mergePatch(ingresses(namespace, 'a'), {spec: ingress(namespace, 'a', [`${prefix}-a2.example.com`]).spec})
      await client.mergePatch({...certificates(namespace, `${prefix}-api`), subresource: 'status'}, certificateStatus('2036-06-01T00:00:00Z', 1))
      await client.mergePatch(k8sclusters(namespace, 'prod'), {spec: {displayName: `${prefix} prod (eu)`}})
    },
    async ({client, namespace, prefix}) => {
      await client.delete(velero('backups', namespace, `${prefix}-nightly-20260101030000`))
      await client.delete(s3buckets(namespace, 'logs'))
      await client.delete(services(namespace, 'web'))
    },
  ],
  cleanup: async ({client, prefix}) => {
    await ignoreNotFound(() => client.delete(nodes(`${prefix}-n1`)))
    await releasePv(client, `${prefix}-pv1`)
    await ignoreNotFound(() => client.delete(pvs(`${prefix}-pv1`)))
  },
}

export const workloads: Workload[] = [endpointWorkload, endpointToggleWorkload, hostWorkload, volumeWorkload, certificateWorkload, ...backupWorkloads, ...cnpgWorkloads, ...appWorkloads, s3Workload, k8sClusterWorkload, loadBalancerWorkload,
  pausedLeaderWorkload, k8sClusterCreatedWorkload, apiFaultsWorkload]
