/**
 * K8sApp discovery (pure): meta secrets, annotated pods and annotated Ingresses/HTTPRoutes of one namespace → the
 * K8sApp CRs of that namespace: deployed blocks (meta secrets), label-based discovery (pods) and
 * bring-your-own-app (Ingresses/HTTPRoutes).
 *
 * Secret-based (`K8sAppDiscoveryReconciler`): a Secret named `<app>.poly` whose data key `meta` (or `meta.yaml`,
 * `meta.json`) holds a YAML/JSON map with `block`, `workspace`, `action` → K8sApp `<app>` with those maps as spec,
 * the operator reference's labels, an owner reference to the Secret and the installation status of the action table.
 * Annotation-based (`K8sAppLabelDiscoveryReconciler`, `label_discovery_enabled`): pods with `polycrate_k8sapp_name`
 * → one K8sApp `kind: external` per (namespace, name). Ingresses/HTTPRoutes with `polycrate_k8sapp_name` (and
 * `polycrate_k8sapp_byoa: "true"` → `byoa`) → the same, sourced from the route (BYOA table). Both run as one
 * controller: they write the same CRs, so one pure function decides precedence without two writers racing.
 *
 * Precedence and conflicts (per name):
 * - a meta secret in the namespace wins over every annotation (the annotation apps of that name are not made);
 * - an Ingress/HTTPRoute claim wins over pods (HTTPRoute before Ingress, then by name), so `byoa` and the
 *   `discovery-source` label say `ingress`/`httproute`;
 * - a name claimed by annotations in several namespaces (or by a meta secret in another namespace) is a
 *   cross-namespace conflict: no K8sApp in the annotated namespaces, a Warning Event on a claiming object in each
 *   (the API keeps one K8sApp per name and cluster, so any pick would be a guess).
 *
 * Decisions for malformed input (each a Warning Event on the object, other apps unaffected):
 * - meta secret with no data / no `meta` key / not base64 text / invalid YAML / not a map / `block`,
 *   `workspace` or `action` not a map → `InvalidMetaSecret`, naming the key and the problem (never the content);
 *   an existing K8sApp of that name is left exactly as it is.
 * - a field of wrong type: numbers and booleans become strings (YAML `version: 1.20` is the number 1.2: quote it)
 *   with a `MetaSecretFieldCoerced` Warning; maps/lists where text belongs are dropped with `InvalidMetaSecret`.
 *   `last_executed_at` that is no RFC 3339 time is dropped (Warning).
 * - `action.status` other than success/running/failed, or `action.name` other than install/uninstall → no
 *   installation flags from it (the API keeps what it has); an unknown status is a Warning (`UnknownActionStatus`),
 *   other action names (upgrade, backup, …) are normal and silent.
 * - `block.kind` other than helm/polycrate → the app's kind is `polycrate` (the CLI deployed it); the label keeps
 *   the block's kind.
 * - an empty `polycrate_k8sapp_name` → `EmptyK8sAppName`; a name that is no DNS-1123 subdomain of ≤ 253 characters
 *   (a CR name) → `InvalidK8sAppName`; the object is ignored.
 * - pods owned by a Job (CronJob pods too) make no app: they come and go with every run.
 */
import yaml from 'js-yaml'
import type {K8sAppSpec} from '../../../crds/k8sapp.js'
import type {KubeObject} from '../../../kube/client.js'
import {annotations, deprecatedLabels, labels, labelValue} from '../../conventions.js'
import {artifactName, parseImage, registryAllowed, type RegistryFilter} from '../../../lib/image-ref.js'
import {namespaceInScope} from '../../discovery/namespace-scope.js'
import type {SourceCaches} from '../../discovery/engine.js'
import {isJobPod, podContainers, type SlimPod} from '../../../kube/pods.js'
import {appNameOfPod} from '../../app-pods.js'
import type {DesiredObject, DesiredState, ObjectRef, SourceProblem} from '../../discovery/plan.js'

export const META_SECRET_SUFFIX = '.poly'
export const META_KEYS = ['meta', 'meta.yaml', 'meta.json'] as const

export const k8sAppProblemReasons = {
  invalidMetaSecret: 'InvalidMetaSecret',
  fieldCoerced: 'MetaSecretFieldCoerced',
  unknownActionStatus: 'UnknownActionStatus',
  emptyName: 'EmptyK8sAppName',
  invalidName: 'InvalidK8sAppName',
  conflict: 'K8sAppNameConflict',
} as const

export type DiscoverySourceKind = 'secret' | 'pod' | 'ingress' | 'httproute'

export interface K8sAppDiscoverySettings {
  watch_namespaces: readonly string[]
  ignore_namespaces: readonly string[]
  label_discovery_enabled: boolean
  gatewayApi: boolean
  /** Artifact discovery's scope and filter, for each app's status.artifacts; undefined when it is off. */
  artifacts?: {watch_namespaces: readonly string[]; ignore_namespaces: readonly string[]; registry_filter: RegistryFilter}
}

/** What `load` read of a namespace's meta secrets: the data (base64, as the API returns it) or why not. */
export type LoadedSecrets = ReadonlyMap<string, {data?: Record<string, string>; error?: string}>

// -- meta secrets ------------------------------------------------------------------------------------------------

export interface InstallationStatus {
  installed: boolean
  installation_running: boolean
  installation_failed: boolean
  uninstalled: boolean
  uninstallation_running: boolean
  uninstallation_failed: boolean
}

/** The operator reference's action table (plus uninstall running/failed); undefined when the action says nothing about it. */
export function installationStatus(action: K8sAppSpec['action'] | undefined): InstallationStatus | undefined {
  const name = action?.name
  const status = action?.status
  if ((name !== 'install' && name !== 'uninstall') || !['success', 'running', 'failed'].includes(status ?? '')) return undefined
  const install = name === 'install'
  return {
    installed: install && status === 'success',
    installation_running: install && status === 'running',
    installation_failed: install && status === 'failed',
    uninstalled: !install && status === 'success',
    uninstallation_running: !install && status === 'running',
    uninstallation_failed: !install && status === 'failed',
  }
}

export interface MetaSecretResult {
  spec?: Pick<K8sAppSpec, 'block' | 'workspace' | 'action'>
  problems: Array<{reason: string; message: string}>
}

const isMap = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/** A meta secret's data → the spec maps, or why not (pure; messages never quote the data). */
export function parseMetaSecret(secretName: string, data: Record<string, string> | undefined): MetaSecretResult {
  const fail = (message: string): MetaSecretResult => ({problems: [{reason: k8sAppProblemReasons.invalidMetaSecret, message: `Meta secret ${secretName}: ${message}; the K8sApp is not created or changed until it is fixed.`}]})
  const key = META_KEYS.find((candidate) => data?.[candidate] !== undefined)
  if (!data || Object.keys(data).length === 0) return fail(`has no data; expected the key "meta" (or "meta.yaml", "meta.json") with the block's YAML or JSON`)
  if (!key) return fail(`has no key "meta" (also accepted: "meta.yaml", "meta.json"); it has ${Object.keys(data).length} other key(s)`)
  const text = Buffer.from(data[key]!, 'base64').toString('utf8')
  if (text.includes('\uFFFD')) return fail(`key "${key}" is not UTF-8 text`)
  let document: unknown
  try {
    document = yaml.load(text)
  } catch (error) {
    const mark = (error as {mark?: {line?: number; column?: number}; reason?: string}).mark
    const reason = (error as {reason?: string}).reason ?? 'not parseable'
    return fail(`key "${key}" is not valid YAML or JSON (${reason}${mark?.line !== undefined ? ` at line ${mark.line + 1}, column ${(mark.column ?? 0) + 1}` : ''})`)
  }
  if (!isMap(document)) return fail(`key "${key}" holds ${document === null || document === undefined ? 'nothing' : Array.isArray(document) ? 'a list' : `a ${typeof document}`}, not a map with block, workspace and action`)
  for (const section of ['block', 'workspace', 'action'] as const) {
    if (document[section] !== undefined && document[section] !== null && !isMap(document[section])) {
      return fail(`key "${key}": "${section}" is ${Array.isArray(document[section]) ? 'a list' : `a ${typeof document[section]}`}, not a map`)
    }
  }
  const problems: MetaSecretResult['problems'] = []
  const text_ = (path: string, value: unknown): string | undefined => {
    if (value === undefined || value === null) return undefined
    if (typeof value === 'string') return value
    if (value instanceof Date) return value.toISOString()
    if (typeof value === 'number' || typeof value === 'boolean') {
      problems.push({reason: k8sAppProblemReasons.fieldCoerced, message: `Meta secret ${secretName}: ${path} is a ${typeof value} (${String(value)}), used as the text "${String(value)}"; quote it in the YAML to keep it exact.`})
      return String(value)
    }
    problems.push({reason: k8sAppProblemReasons.invalidMetaSecret, message: `Meta secret ${secretName}: ${path} is a ${Array.isArray(value) ? 'list' : 'map'}, not text; it is left out.`})
    return undefined
  }
  const pick = <K extends string>(path: string, source: unknown, fields: readonly K[]): Partial<Record<K, string>> | undefined => {
    if (!isMap(source)) return undefined
    const out: Partial<Record<K, string>> = {}
    for (const field of fields) {
      const value = text_(`${path}.${field}`, source[field])
      if (value !== undefined) out[field] = value
    }
    return out
  }
  const blockIn = document.block
  const block = pick('block', blockIn, ['name', 'display_name', 'version', 'app_version', 'from', 'type', 'flavor', 'kind'] as const)
  if (block && isMap(blockIn) && blockIn.chart !== undefined && blockIn.chart !== null) {
    if (isMap(blockIn.chart)) {
      const chart = pick('block.chart', blockIn.chart, ['name', 'version', 'repo_url'] as const)!
      ;(block as Record<string, unknown>).chart = chart
    } else {
      problems.push({reason: k8sAppProblemReasons.invalidMetaSecret, message: `Meta secret ${secretName}: block.chart is not a map; it is left out.`})
    }
  }
  const workspace = pick('workspace', document.workspace, ['name', 'organization'] as const)
  const action = pick('action', document.action, ['name', 'status', 'last_executed_at'] as const)
  if (action?.last_executed_at !== undefined && !rfc3339.test(action.last_executed_at)) {
    problems.push({reason: k8sAppProblemReasons.invalidMetaSecret, message: `Meta secret ${secretName}: action.last_executed_at "${action.last_executed_at.slice(0, 40)}" is no RFC 3339 time; it is left out.`})
    delete action.last_executed_at
  }
  if (action?.status !== undefined && !['success', 'running', 'failed'].includes(action.status)) {
    problems.push({reason: k8sAppProblemReasons.unknownActionStatus, message: `Meta secret ${secretName}: action.status "${action.status.slice(0, 40)}" is not success, running or failed; the installation status is not derived from it.`})
  }
  return {
    spec: {...(block ? {block} : {}), ...(workspace ? {workspace} : {}), ...(action ? {action} : {})},
    problems,
  }
}

// -- names -------------------------------------------------------------------------------------------------------

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Why `name` cannot name a K8sApp CR (a DNS-1123 subdomain of ≤ 253 characters), or undefined. */
export function invalidAppName(name: string): string | undefined {
  if (name.length > 253) return `is ${name.length} characters long; a K8sApp name has at most 253`
  if (!dnsSubdomain.test(name)) return 'is not a valid Kubernetes name (lower-case letters, digits, "-" and ".", starting and ending with a letter or digit)'
  return undefined
}

// -- desired state of one namespace --------------------------------------------------------------------------------

interface Claim {
  kind: 'Ingress' | 'HTTPRoute' | 'Pod'
  ref: ObjectRef
  name: string
  byoa: boolean
}

const apiVersions = {Ingress: 'networking.k8s.io/v1', HTTPRoute: 'gateway.networking.k8s.io/v1', Pod: 'v1', Secret: 'v1'} as const

const refOf = (kind: keyof typeof apiVersions, object: KubeObject): ObjectRef => ({
  kind, apiVersion: apiVersions[kind], namespace: object.metadata?.namespace, name: object.metadata?.name ?? '', uid: object.metadata?.uid,
})
const deleting = (object: KubeObject) => Boolean((object.metadata as {deletionTimestamp?: string} | undefined)?.deletionTimestamp)

/** The app name a route claims (annotation, else the deprecated label), trimmed; undefined without one. */
function routeAppName(object: KubeObject): string | undefined {
  const value = object.metadata?.annotations?.[annotations.k8sAppName] ?? object.metadata?.labels?.[deprecatedLabels.k8sAppName]
  return value === undefined ? undefined : String(value).trim()
}

/** Every annotation claim in scope, valid or not (problems for the invalid ones are made by their namespace). */
function claimsIn(caches: SourceCaches, settings: K8sAppDiscoverySettings, namespace?: string): Claim[] {
  const claims: Claim[] = []
  const routes: Array<['Ingress' | 'HTTPRoute', string]> = [['Ingress', 'ingress'], ...(settings.gatewayApi ? [['HTTPRoute', 'httproute'] as ['HTTPRoute', string]] : [])]
  for (const [kind, id] of routes) {
    for (const object of caches.list(id, namespace)) {
      const name = routeAppName(object)
      if (name === undefined || deleting(object) || !namespaceInScope(object.metadata?.namespace, settings)) continue
      claims.push({kind, ref: refOf(kind, object), name, byoa: object.metadata?.annotations?.[annotations.k8sAppByoa] === 'true'})
    }
  }
  if (settings.label_discovery_enabled) {
    for (const pod of caches.list('pod', namespace)) {
      const name = appNameOfPod(pod)
      if (name === undefined || deleting(pod) || isJobPod(pod) || !namespaceInScope(pod.metadata?.namespace, settings)) continue
      claims.push({kind: 'Pod', ref: refOf('Pod', pod), name, byoa: false})
    }
  }
  return claims
}

const isMetaSecret = (secret: KubeObject) => (secret.metadata?.name ?? '').endsWith(META_SECRET_SUFFIX) && !deleting(secret)
export const appNameOfSecret = (secretName: string) => secretName.slice(0, -META_SECRET_SUFFIX.length)

/** The namespaces a changed pod/route/secret concerns: its own, and every other one claiming the same name. */
export function namespacesOfClaim(object: KubeObject, caches: SourceCaches, settings: K8sAppDiscoverySettings): string[] {
  const own = object.metadata?.namespace
  if (!own) return []
  const isPod = object.kind === 'Pod' || Boolean((object as SlimPod).spec?.containers)
  const name = isPod ? appNameOfPod(object) : routeAppName(object)
  // Every pod counts for the apps of its namespace (artifacts); an Ingress or HTTPRoute only through its claim (an
  // update that drops the annotation is mapped through the old object too), so 5,000 plain Ingresses of a namespace
  // do not each recompute its apps.
  if (!name) return isPod ? [own] : []
  const namespaces = new Set([own])
  for (const claim of claimsIn(caches, settings)) if (claim.name === name && claim.ref.namespace) namespaces.add(claim.ref.namespace)
  return [...namespaces]
}

/** The artifacts of these pods for an app's status (image, its Artifact name, pods running it). */
export function artifactsOf(pods: readonly KubeObject[], settings: K8sAppDiscoverySettings['artifacts']): Array<{name: string; image: string; pod_count: number}> {
  if (!settings) return []
  const byName = new Map<string, {name: string; image: string; pods: Set<string>}>()
  for (const pod of pods as readonly SlimPod[]) {
    if (!namespaceInScope(pod.metadata.namespace, settings)) continue
    for (const container of podContainers(pod)) {
      const reference = container.image ? parseImage(container.image) : undefined
      const name = container.image ? artifactName(container.image) : undefined
      if (!reference || !name || !registryAllowed(reference.registry, settings.registry_filter)) continue
      const entry = byName.get(name) ?? {name, image: reference.image, pods: new Set<string>()}
      entry.pods.add(pod.metadata.name)
      byName.set(name, entry)
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)).map(({name, image, pods}) => ({name, image, pod_count: pods.size}))
}

/** The K8sApps of one namespace (pure). `loaded` is the data of its meta secrets. */
export function desiredApps(namespace: string, caches: SourceCaches, settings: K8sAppDiscoverySettings, loaded: LoadedSecrets | undefined): DesiredState {
  const state: DesiredState = {objects: [], problems: [], sources: []}
  if (!namespaceInScope(namespace, settings)) return state
  const countedPods = caches.list('pod', namespace).filter((pod) => !isJobPod(pod) && !deleting(pod))
  const secretApps = new Set<string>()
  for (const secret of caches.list('secret', namespace).filter(isMetaSecret)) {
    const app = metaSecretApp(secret, namespace, caches, settings, loaded, countedPods)
    state.sources.push({ref: app.ref, managed: true})
    secretApps.add(app.name)
    state.problems.push(...app.problems)
    if (app.object) state.objects.push(app.object)
  }
  addClaimedApps(state, namespace, caches, settings, secretApps, countedPods)
  return state
}

/**
 * The K8sApp of one meta secret (pure): from its data as `load` read it; an unreadable one or one that arrived after
 * `load` keeps the existing K8sApp as it is (nothing lost because of someone's bad write).
 */
function metaSecretApp(
  secret: KubeObject, namespace: string, caches: SourceCaches, settings: K8sAppDiscoverySettings, loaded: LoadedSecrets | undefined, countedPods: KubeObject[],
): {name: string; ref: ObjectRef; problems: SourceProblem[]; object?: DesiredObject} {
  const secretName = secret.metadata!.name!
  const appName = appNameOfSecret(secretName)
  const ref = refOf('Secret', secret)
  const read = loaded?.get(secretName)
  if (!read) {
    // Arrived after `load` read this namespace (its own event reconciles again): keep what exists meanwhile.
    const current = caches.get('k8sapp', `${namespace}/${appName}`)
    return {name: appName, ref, problems: [], object: current ? keepAsIs(current, ref) : undefined}
  }
  const invalid = invalidAppName(appName)
  const parsed: MetaSecretResult = invalid
    ? {problems: [{reason: k8sAppProblemReasons.invalidName, message: `Meta secret ${secretName}: the app name "${appName}" ${invalid}.`}]}
    : read.error !== undefined
      ? {problems: [{reason: k8sAppProblemReasons.invalidMetaSecret, message: `Meta secret ${secretName} could not be read: ${read.error}; the K8sApp is left as it is.`}]}
      : parseMetaSecret(secretName, read.data)
  const problems = parsed.problems.map((problem) => ({source: ref, ...problem}))
  if (!parsed.spec) {
    // Unreadable: an existing K8sApp stays exactly as it is (nothing lost because of someone's bad write).
    const current = caches.get('k8sapp', `${namespace}/${appName}`)
    return {name: appName, ref, problems, object: current && !invalid ? keepAsIs(current, ref) : undefined}
  }
  const block = parsed.spec.block
  const blockKind = block?.kind
  const spec: K8sAppSpec = {
    ...parsed.spec,
    kind: blockKind === 'helm' || blockKind === 'polycrate' ? blockKind : 'polycrate',
    source: {kind: 'Secret', name: secretName, namespace},
  }
  const artifacts = artifactsOf(countedPods, settings.artifacts)
  return {name: appName, ref, problems, object: {
    name: appName,
    namespace,
    labels: {
      [labels.k8sAppBlock]: labelValue(block?.name ?? appName),
      [labels.k8sAppKind]: labelValue(blockKind ?? 'polycrate'),
      ...(block?.type ? {[labels.k8sAppType]: labelValue(block.type)} : {}),
      [labels.k8sAppDiscoverySource]: 'secret',
      [labels.discovered]: 'true',
      [labels.managedBy]: 'operator',
    },
    ownerReferences: ref.uid ? [{apiVersion: 'v1', kind: 'Secret', name: secretName, uid: ref.uid}] : undefined,
    spec,
    status: {...installationStatus(parsed.spec.action), ...artifactStatus(artifacts, settings)},
    source: ref,
  }}
}

/** The namespaces other than `namespace` that claim each app name (by annotation or meta secret). */
function claimsElsewhere(caches: SourceCaches, settings: K8sAppDiscoverySettings, namespace: string): Map<string, Set<string>> {
  const elsewhere = new Map<string, Set<string>>()
  const note = (name: string, ns: string | undefined) => {
    if (!ns || ns === namespace) return
    const set = elsewhere.get(name) ?? new Set<string>()
    set.add(ns)
    elsewhere.set(name, set)
  }
  for (const claim of claimsIn(caches, settings)) note(claim.name, claim.ref.namespace)
  for (const secret of caches.list('secret')) {
    if (isMetaSecret(secret) && namespaceInScope(secret.metadata?.namespace, settings)) note(appNameOfSecret(secret.metadata!.name!), secret.metadata?.namespace)
  }
  return elsewhere
}

/** Annotation claims: this namespace's, checked against every other namespace's and every meta secret. */
function addClaimedApps(state: DesiredState, namespace: string, caches: SourceCaches, settings: K8sAppDiscoverySettings, secretApps: Set<string>, countedPods: KubeObject[]): void {
  const {problems, sources} = state
  const ownClaims = claimsIn(caches, settings, namespace)
  if (ownClaims.length === 0) return
  const elsewhere = claimsElsewhere(caches, settings, namespace)
  const byName = new Map<string, Claim[]>()
  for (const claim of ownClaims) {
    if (claim.name === '') {
      problems.push({source: claim.ref, reason: k8sAppProblemReasons.emptyName, message: `${claim.kind} ${claim.ref.name}: the annotation ${annotations.k8sAppName} is empty; it is ignored. Set the app's name or remove the annotation.`})
      sources.push({ref: claim.ref, managed: false})
      continue
    }
    const invalid = invalidAppName(claim.name)
    if (invalid) {
      problems.push({source: claim.ref, reason: k8sAppProblemReasons.invalidName, message: `${claim.kind} ${claim.ref.name}: ${annotations.k8sAppName} "${claim.name.slice(0, 80)}${claim.name.length > 80 ? '…' : ''}" ${invalid}; it is ignored.`})
      sources.push({ref: claim.ref, managed: false})
      continue
    }
    byName.set(claim.name, [...(byName.get(claim.name) ?? []), claim])
  }
  for (const [name, claims] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    if (secretApps.has(name)) continue // the meta secret wins
    addClaimedApp(state, name, claims, elsewhere.get(name), namespace, settings, countedPods)
  }
}

/** One app claimed by annotation: ignored with a problem when claimed in another namespace too, else an external K8sApp. */
function addClaimedApp(state: DesiredState, name: string, claims: Claim[], others: Set<string> | undefined, namespace: string, settings: K8sAppDiscoverySettings, countedPods: KubeObject[]): void {
  const order = {HTTPRoute: 0, Ingress: 1, Pod: 2} as const
  claims.sort((a, b) => order[a.kind] - order[b.kind] || a.ref.name.localeCompare(b.ref.name))
  const lead = claims[0]!
  if (others) {
    state.sources.push({ref: lead.ref, managed: false})
    state.problems.push({
      source: lead.ref,
      reason: k8sAppProblemReasons.conflict,
      message: `K8sApp "${name}" is also claimed in namespace(s) ${[...others].sort().join(', ')} (${annotations.k8sAppName} or a meta secret): `
        + 'the app is ignored in every namespace that claims it by annotation (cross-namespace conflict). Use distinct names per namespace.',
    })
    return
  }
  const sourceKind: DiscoverySourceKind = lead.kind === 'Pod' ? 'pod' : lead.kind === 'Ingress' ? 'ingress' : 'httproute'
  const byoa = lead.kind !== 'Pod' && claims.some((claim) => claim.kind !== 'Pod' && claim.byoa)
  const pods = countedPods.filter((pod) => appNameOfPod(pod) === name)
  const artifacts = artifactsOf(pods, settings.artifacts)
  state.objects.push({
    name,
    namespace,
    labels: {
      [labels.k8sAppKind]: 'external',
      [labels.k8sAppDiscoverySource]: sourceKind,
      [labels.discovered]: 'true',
      [labels.managedBy]: 'operator',
    },
    spec: {
      kind: 'external',
      ...(byoa ? {byoa: true} : {}),
      source: {kind: lead.kind, name: lead.kind === 'Pod' ? name : lead.ref.name, namespace},
    } satisfies K8sAppSpec,
    status: artifactStatus(artifacts, settings),
    source: {kind: 'Namespace', apiVersion: 'v1', name: namespace},
  })
}

function artifactStatus(artifacts: ReturnType<typeof artifactsOf>, settings: K8sAppDiscoverySettings): Record<string, unknown> {
  return settings.artifacts ? {artifacts, artifact_count: artifacts.length} : {}
}

/** An existing K8sApp as it is (labels, spec, owner), so the plan neither changes nor deletes it. */
function keepAsIs(current: KubeObject, source: ObjectRef): DesiredObject {
  const metadata = current.metadata as {name: string; namespace?: string; labels?: Record<string, string>; ownerReferences?: DesiredObject['ownerReferences']}
  return {
    name: metadata.name,
    namespace: metadata.namespace,
    labels: {...metadata.labels},
    ...(metadata.ownerReferences?.length ? {ownerReferences: metadata.ownerReferences.map(({apiVersion, kind, name, uid}) => ({apiVersion, kind, name, uid}))} : {}),
    spec: (current as {spec?: unknown}).spec ?? {},
    source,
  }
}

/** Where a discovered K8sApp came from: its meta secret, else its namespace (annotation apps). */
export function k8sAppSource(object: {metadata: {name: string; namespace?: string}; spec?: unknown}): ObjectRef {
  const source = (object.spec as K8sAppSpec | undefined)?.source
  const namespace = object.metadata.namespace ?? ''
  if (source?.kind === 'Secret') return {kind: 'Secret', apiVersion: 'v1', namespace, name: source.name}
  return {kind: 'Namespace', apiVersion: 'v1', name: namespace}
}
