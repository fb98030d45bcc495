/** What install and uninstall do to single objects: resource references, apply with an outcome, delete, release finalizers. */
import {KubeApiError, resourcePath, type KubeClient, type KubeObject, type ResourceRef} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'

/** One line of install/uninstall: an object and what happened to it. */
export interface ObjectResult {
  kind: string
  name: string
  namespace?: string
  outcome: 'created' | 'updated' | 'unchanged' | 'deleted' | 'absent' | 'kept' | 'skipped' | 'released' | 'scaled'
  /** Why (kept, skipped) or what (released finalizers). Never a secret. */
  note?: string
}

const kinds: Record<string, {plural: string; namespaced: boolean}> = {
  Namespace: {plural: 'namespaces', namespaced: false},
  Secret: {plural: 'secrets', namespaced: true},
  ServiceAccount: {plural: 'serviceaccounts', namespaced: true},
  Service: {plural: 'services', namespaced: true},
  ClusterRole: {plural: 'clusterroles', namespaced: false},
  ClusterRoleBinding: {plural: 'clusterrolebindings', namespaced: false},
  Role: {plural: 'roles', namespaced: true},
  RoleBinding: {plural: 'rolebindings', namespaced: true},
  Deployment: {plural: 'deployments', namespaced: true},
  NetworkPolicy: {plural: 'networkpolicies', namespaced: true},
  PodDisruptionBudget: {plural: 'poddisruptionbudgets', namespaced: true},
  OperatorConfig: {plural: 'operatorconfigs', namespaced: true},
  VMServiceScrape: {plural: 'vmservicescrapes', namespaced: true},
  VMRule: {plural: 'vmrules', namespaced: true},
  PrometheusRule: {plural: 'prometheusrules', namespaced: true},
  ConfigMap: {plural: 'configmaps', namespaced: true},
  Issuer: {plural: 'issuers', namespaced: true},
  Certificate: {plural: 'certificates', namespaced: true},
  APIService: {plural: 'apiservices', namespaced: false},
  Lease: {plural: 'leases', namespaced: true},
  CustomResourceDefinition: {plural: 'customresourcedefinitions', namespaced: false},
}

/** The REST reference of one of the objects install makes. */
/** What install or uninstall did: one result per object, and the warnings for the user. */
export interface ObjectsReport {
  namespace: string
  results: ObjectResult[]
  warnings: string[]
}

/** Collects results and warnings, passing each on as soon as it is known (the command's lines). */
export function collector(options: {namespace: string; onResult?: (result: ObjectResult) => void; onWarning?: (message: string) => void}) {
  const collected: ObjectsReport = {namespace: options.namespace, results: [], warnings: []}
  return {
    collected,
    report(result: ObjectResult) {
      collected.results.push(result)
      options.onResult?.(result)
    },
    warn(message: string) {
      collected.warnings.push(message)
      options.onWarning?.(message)
    },
  }
}

export function refOf(object: KubeObject): ResourceRef {
  const known = kinds[object.kind ?? '']
  if (!known) throw new Error(`no resource known for kind ${object.kind}`)
  const [group, version] = object.apiVersion!.includes('/') ? object.apiVersion!.split('/') as [string, string] : ['', object.apiVersion!]
  return {group, version, plural: known.plural, name: object.metadata?.name, ...(known.namespaced ? {namespace: object.metadata?.namespace} : {})}
}

export function resultOf(object: KubeObject, outcome: ObjectResult['outcome'], note?: string): ObjectResult {
  return {
    kind: object.kind ?? '?',
    name: object.metadata?.name ?? '?',
    ...(object.metadata?.namespace ? {namespace: object.metadata.namespace} : {}),
    outcome,
    ...(note ? {note} : {}),
  }
}

export const crdRef = (name: string): ResourceRef => ({...resources.customResourceDefinitions, name})

export async function crdExists(client: KubeClient, name: string): Promise<boolean> {
  return (await client.getOrUndefined(crdRef(name))) !== undefined
}

/**
 * Server-side apply (the client's field manager, forced) and whether that created, changed or kept the object
 * (the resourceVersion moves only when something changed). `mark` labels: added when the object is new or already
 * carries them (so a re-install keeps them and never claims an object a person made).
 */
export async function applyObject(client: KubeClient, object: KubeObject, options: {mark?: Record<string, string>} = {}): Promise<ObjectResult> {
  const ref = refOf(object)
  const existing = await client.getOrUndefined<KubeObject>(ref)
  let body = object
  if (options.mark) {
    const carries = !existing || Object.entries(options.mark).every(([key, value]) => existing.metadata?.labels?.[key] === value)
    if (carries) body = {...object, metadata: {...object.metadata, labels: {...object.metadata?.labels, ...options.mark}}}
  }
  const applied = await client.apply<KubeObject>(ref, body)
  if (!existing) return resultOf(object, 'created')
  return resultOf(object, existing.metadata?.resourceVersion === applied.metadata?.resourceVersion ? 'unchanged' : 'updated')
}

/** Deletes an object; a missing one (or a missing kind) is `absent`. */
export async function deleteObject(client: KubeClient, object: KubeObject, note?: string): Promise<ObjectResult> {
  try {
    await client.request({method: 'DELETE', path: resourcePath(refOf(object)), body: {kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background'}})
    return resultOf(object, 'deleted', note)
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return resultOf(object, 'absent')
    throw error
  }
}

/** A list of every object of a resource in all namespaces (pages of 500); undefined when the resource is not served. */
export async function listAll(client: KubeClient, path: string, labelSelector?: string): Promise<KubeObject[] | undefined> {
  const items: KubeObject[] = []
  let next: string | undefined
  do {
    let page: {items?: KubeObject[]; metadata?: {continue?: string}}
    try {
      page = await client.request({path, query: {limit: 500, continue: next, labelSelector}})
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined
      throw error
    }
    items.push(...(page.items ?? []))
    next = page.metadata?.continue || undefined
  } while (next)
  return items
}

/**
 * Removes the given finalizers from an object with a JSON patch that first tests the current list, so a finalizer
 * someone else adds meanwhile is never dropped (the test fails, the object is read again, the patch retried).
 * Returns the finalizers removed (none when the object is gone or had none of them).
 */
export async function releaseFinalizers(client: KubeClient, ref: ResourceRef, object: KubeObject, ours: ReadonlySet<string>): Promise<string[]> {
  let current: KubeObject | undefined = object
  for (let attempt = 0; attempt < 10 && current; attempt++) {
    const list = (current.metadata?.finalizers as string[] | undefined) ?? []
    const removed = list.filter((finalizer) => ours.has(finalizer))
    if (removed.length === 0) return []
    try {
      await client.request({
        method: 'PATCH',
        path: resourcePath(ref),
        contentType: 'application/json-patch+json',
        body: [
          {op: 'test', path: '/metadata/finalizers', value: list},
          {op: 'replace', path: '/metadata/finalizers', value: list.filter((finalizer) => !ours.has(finalizer))},
        ],
      })
      return removed
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return []
      // A failed test operation answers 422 (older servers 409/500 "testing value … failed"): read again.
      if (!(error instanceof KubeApiError) || ![409, 422, 500].includes(error.status)) throw error
      current = await client.getOrUndefined<KubeObject>(ref)
    }
  }
  if (!current) return []
  throw new Error(`cannot release the finalizers of ${ref.plural} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}: it kept changing; run uninstall again`)
}
