/**
 * `install --dry-run` and `install --diff`: what install would do, object by object, without writing anything. Each
 * object install would apply is sent as a server-side apply with dryRun=All (the same field manager, forced), so the
 * API server defaults, validates and merges it exactly as it would; the answer is compared with the live object.
 * Both sides go through `comparable()` first (managedFields, resourceVersion, generation, status, … removed; Secret
 * values masked), so what differs is what install would change, not the server's bookkeeping.
 *
 * An object the server cannot check yet (in a namespace install would create first, or of a CRD install would create
 * first) is "create" with a note, and its planned body stands in for the server's answer. The decisions follow
 * installOperator (install.ts) step by step: CRDs, Namespace, Secrets, workload, OperatorConfig, VMServiceScrape,
 * the alerting rules and the dashboard.
 */
import {isDeepStrictEqual} from 'node:util'
import {allCrds} from '../../crds/index.js'
import {customResourceDefinitions} from '../../crds/render.js'
import {KubeApiError, type KubeClient, type KubeObject} from '../../kube/client.js'
import {installedBy} from '../conventions.js'
import {crdExists, refOf} from './cluster-objects.js'
import {InstallPreconditionError} from './install.js'
import {PROMETHEUS_RULE_CRD, VM_RULE_CRD} from './alerts.js'
import {VM_SERVICE_SCRAPE_CRD, type InstallPlan} from './objects.js'
import type {BlockValues} from './values.js'

export type PreviewAction = 'create' | 'change' | 'unchanged' | 'delete' | 'keep' | 'skip'

export interface PreviewEntry {
  kind: string
  apiVersion: string
  name: string
  namespace?: string
  action: PreviewAction
  /** Why (keep, skip, a create the server could not check). Never a secret. */
  note?: string
  /** The live object, comparable() (absent when there is none). */
  live?: KubeObject
  /** What it would be after install, comparable() (absent for delete, keep, skip). */
  planned?: KubeObject
}

export interface InstallPreview {
  namespace: string
  entries: PreviewEntry[]
  warnings: string[]
}

/** Metadata the API server keeps for itself: never a difference install makes. */
const SERVER_METADATA = ['managedFields', 'resourceVersion', 'generation', 'uid', 'creationTimestamp', 'selfLink']
const SERVER_ANNOTATIONS = ['deployment.kubernetes.io/revision', 'kubectl.kubernetes.io/last-applied-configuration']

/**
 * An object as the diff shows it: without server bookkeeping (SERVER_METADATA, the annotations the server or
 * kubectl add, `status`), with keys in a stable order (metadata first, as kubectl prints).
 */
export function comparable(object: KubeObject): KubeObject {
  const {status: _status, metadata = {}, ...rest} = object as KubeObject & {status?: unknown}
  const meta: Record<string, unknown> = {...metadata}
  for (const key of SERVER_METADATA) delete meta[key]
  const annotations = {...(meta.annotations as Record<string, string> | undefined)}
  for (const key of SERVER_ANNOTATIONS) delete annotations[key]
  if (Object.keys(annotations).length > 0) meta.annotations = annotations
  else delete meta.annotations
  const {apiVersion, kind, ...body} = rest
  return {apiVersion, kind, metadata: meta, ...body} as KubeObject
}

/**
 * A Secret's values replaced by `***` (kubectl diff's way): equal values by `***` on both sides, different ones by
 * `*** (before)` and `*** (after)`, so the diff says which keys change and never what they hold.
 */
export function maskSecretValues(live: KubeObject | undefined, planned: KubeObject | undefined): {live?: KubeObject; planned?: KubeObject} {
  const values = (object: KubeObject | undefined, field: 'data' | 'stringData') => (object as Record<string, unknown> | undefined)?.[field] as Record<string, string> | undefined
  const mask = (object: KubeObject | undefined, other: KubeObject | undefined, side: 'before' | 'after') => {
    if (!object || object.kind !== 'Secret') return object
    const masked: Record<string, unknown> = {...object}
    for (const field of ['data', 'stringData'] as const) {
      const mine = values(object, field)
      if (!mine) continue
      const theirs = values(other, field)
      masked[field] = Object.fromEntries(Object.keys(mine).map((key) => [key, theirs?.[key] === mine[key] ? '***' : `*** (${side})`]))
    }
    return masked as KubeObject
  }
  return {live: mask(live, planned, 'before'), planned: mask(planned, live, 'after')}
}

const describe = (object: KubeObject) => ({
  kind: object.kind ?? '?',
  apiVersion: object.apiVersion ?? '?',
  name: object.metadata?.name ?? '?',
  ...(object.metadata?.namespace ? {namespace: object.metadata.namespace} : {}),
})

/** One entry from the live object and the server's dry-run answer (both raw). */
export function previewEntry(object: KubeObject, live: KubeObject | undefined, planned: KubeObject, note?: string): PreviewEntry {
  const masked = maskSecretValues(live && comparable(live), comparable(planned))
  const action: PreviewAction = !live ? 'create' : isDeepStrictEqual(masked.live, masked.planned) ? 'unchanged' : 'change'
  return {...describe(object), action, ...(note ? {note} : {}), ...(masked.live ? {live: masked.live} : {}), planned: masked.planned}
}

interface PreviewContext {
  client: KubeClient
  /** Names of the CRDs install would create (their objects cannot be checked by the server yet). */
  newCrds: Set<string>
  /** install would create the namespace: nothing in it can be checked by the server yet. */
  newNamespace: string | undefined
  entries: PreviewEntry[]
}

/** The CRD that serves an object's kind, when it is one of ours or one install checks for. */
function crdOf(object: KubeObject): string | undefined {
  const group = object.apiVersion?.split('/')[0] ?? ''
  const def = allCrds.find((crd) => crd.kind === object.kind && group === 'polycrate.io')
  return def ? `${def.plural}.polycrate.io` : undefined
}

/** Dry-run apply of one object (with install's `mark` rule) → its entry. */
async function previewApply(context: PreviewContext, object: KubeObject, options: {mark?: Record<string, string>} = {}): Promise<PreviewEntry> {
  const {client} = context
  const ref = refOf(object)
  const namespace = object.metadata?.namespace
  const crd = crdOf(object)
  const unchecked = namespace !== undefined && namespace === context.newNamespace
    ? `the namespace ${namespace} is created first: not checked by the server`
    : crd !== undefined && context.newCrds.has(crd) ? `its CRD ${crd} is created first: not checked by the server` : undefined
  const live = unchecked ? undefined : await client.getOrUndefined<KubeObject>(ref)
  let body = object
  if (options.mark) {
    const carries = !live || Object.entries(options.mark).every(([key, value]) => live.metadata?.labels?.[key] === value)
    if (carries) body = {...object, metadata: {...object.metadata, labels: {...object.metadata?.labels, ...options.mark}}}
  }
  if (unchecked) return previewEntry(object, undefined, body, unchecked)
  let planned: KubeObject
  try {
    planned = await client.apply<KubeObject>(ref, body, {dryRun: true})
  } catch (error) {
    // A kind the server does not serve yet (its CRD is new) answers 404 like a missing namespace.
    if (!live && error instanceof KubeApiError && error.status === 404) return previewEntry(object, undefined, body, `not checked by the server: ${error.message}`)
    throw error
  }
  return previewEntry(object, live, planned)
}

/** What deleting an object would do: delete when it exists, else nothing (undefined). */
async function previewDelete(context: PreviewContext, object: KubeObject, note: string): Promise<PreviewEntry | undefined> {
  const live = await context.client.getOrUndefined<KubeObject>(refOf(object))
  if (!live) return undefined
  return {...describe(object), action: 'delete', note, live: maskSecretValues(comparable(live), undefined).live}
}

/**
 * What `installOperator` would do with these values on this cluster, without writing: one entry per object in
 * install's order, and the warnings install would give. Throws InstallPreconditionError as install does.
 */
export async function previewInstall(client: KubeClient, options: {values: BlockValues; plan: InstallPlan}): Promise<InstallPreview> {
  const {plan, values} = options
  const {namespace} = plan
  const context: PreviewContext = {client, newCrds: new Set(), newNamespace: undefined, entries: []}
  const add = (entry: PreviewEntry | undefined) => {
    if (entry) context.entries.push(entry)
  }
  const warnings: string[] = []
  const mark = {[installedBy.label]: installedBy.value}

  if (plan.workload.some((object) => object.kind === 'Issuer')) {
    for (const name of ['issuers.cert-manager.io', 'certificates.cert-manager.io']) {
      if (!(await crdExists(client, name))) {
        throw new InstallPreconditionError(`operator_config.dns01_webhook.enabled needs cert-manager, but the CRD ${name} is missing: install cert-manager first, or disable the DNS01 webhook.`)
      }
    }
  }

  for (const crd of customResourceDefinitions(allCrds) as KubeObject[]) {
    const entry = await previewApply(context, crd)
    if (entry.action === 'create') context.newCrds.add(crd.metadata!.name!)
    add(entry)
  }
  const namespaceEntry = await previewApply(context, plan.namespaceObject, {mark})
  if (namespaceEntry.action === 'create') context.newNamespace = namespace
  add(namespaceEntry)

  if (plan.tokenSecret) add(await previewApply(context, plan.tokenSecret, {mark}))
  else {
    const secret = {apiVersion: 'v1', kind: 'Secret', metadata: {name: values.apiSync.secretName, namespace}}
    const existing = context.newNamespace ? undefined : await client.getOrUndefined<KubeObject & {data?: Record<string, string>}>(refOf(secret))
    if (existing) {
      add({...describe(secret), action: 'keep', note: 'no api_token in the values: the existing Secret is used'})
      if (existing.data?.[values.apiSync.tokenKey] === undefined) {
        warnings.push(`Secret ${namespace}/${values.apiSync.secretName} has no key "${values.apiSync.tokenKey}" (api_sync.credentials.token_key): the operator cannot read its agent token; add the key or set token_key.`)
      }
    } else if (values.apiSync.enabled) {
      warnings.push(`api_sync is enabled but Secret ${namespace}/${values.apiSync.secretName} does not exist and the values hold no api_token: create it, or set api_sync.credentials.api_token.`)
    }
  }
  if (plan.pullSecret) add(await previewApply(context, plan.pullSecret, {mark}))
  for (const object of plan.workload) add(await previewApply(context, object))
  add(await previewApply(context, plan.operatorConfig))

  const skipped = (object: KubeObject, crd: string): PreviewEntry => ({...describe(object), action: 'skip', note: `the CRD ${crd} is not installed`})
  if (await crdExists(client, VM_SERVICE_SCRAPE_CRD)) {
    add(values.metrics.enabled ? await previewApply(context, plan.vmServiceScrape) : await previewDelete(context, plan.vmServiceScrape, 'metrics.enabled is false'))
  } else if (values.metrics.enabled) add(skipped(plan.vmServiceScrape, VM_SERVICE_SCRAPE_CRD))
  for (const [object, crd] of [[plan.monitoring.vmRule, VM_RULE_CRD], [plan.monitoring.prometheusRule, PROMETHEUS_RULE_CRD]] as const) {
    if (await crdExists(client, crd)) {
      add(values.metrics.alerts ? await previewApply(context, object) : await previewDelete(context, object, 'metrics.alerts is false'))
    } else if (values.metrics.alerts) add(skipped(object, crd))
  }
  add(values.metrics.dashboard ? await previewApply(context, plan.monitoring.dashboard) : await previewDelete(context, plan.monitoring.dashboard, 'metrics.dashboard is false'))
  return {namespace, entries: context.entries, warnings}
}

/** Whether the preview holds anything install would change (kubectl diff's exit code 1). */
export function previewChanges(preview: InstallPreview): number {
  return preview.entries.filter((entry) => entry.action === 'create' || entry.action === 'change' || entry.action === 'delete').length
}
