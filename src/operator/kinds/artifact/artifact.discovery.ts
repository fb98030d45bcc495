/**
 * Artifact discovery (`ArtifactDiscoveryReconciler`): every container image in
 * use (init containers included) → one cluster-scoped Artifact CR, as a declaration on the generic discovery
 * feature; one group per Artifact name. Artifacts stay in the cluster: the API has no artifacts, so there is no sync.
 *
 * Settings: `watch_namespaces` / `ignore_namespaces` (which pods count), `registry_filter.include_registries` /
 * `exclude_registries` (an Artifact of a registry the filter stops admitting is removed at once), `pod_label_selector` (the pod informer's label selector: with one set, artifact discovery
 * has its own, smaller pod cache; without, it shares the slim-pod informer), `stale_cleanup_minutes` (an image no
 * pod uses any more keeps its Artifact that long: `status.last_seen_at` holds since when it is unused, so a restart
 * keeps the clock; then it is deleted), `cache_ttl_minutes` (how often every Artifact is recomputed from the pod and
 * K8sApp caches, a safety net: a pod or K8sApp change recomputes the Artifacts it concerns at once).
 *
 * Pods with an image reference that names no Artifact (empty, only symbols, unparseable) get an
 * `InvalidImageReference` Warning Event (group `pod:<namespace>/<name>`).
 */
import {artifactCrd, type ArtifactSpec} from '../../../crds/artifact.js'
import type {CustomObject} from '../../../crds/define.js'
import type {KubeObject} from '../../../kube/client.js'
import {labels} from '../../conventions.js'
import {specMetadataOrDeletionChanged} from '../../runtime/predicates.js'
import {artifactName, digestOfImageID, parseImage, registryAllowed, type RegistryFilter} from '../../../lib/image-ref.js'
import {namespaceInScope} from '../../discovery/namespace-scope.js'
import {defineDiscovery, type DiscoveryDeclaration, type SourceCaches} from '../../discovery/engine.js'
import {podContainers, type SlimPod} from '../../../kube/pods.js'
import {appNameOfPod, podsRequest} from '../../app-pods.js'
import type {DesiredState, ObjectRef} from '../../discovery/plan.js'

export interface ArtifactDiscoverySettings {
  watch_namespaces: readonly string[]
  ignore_namespaces: readonly string[]
  registry_filter: RegistryFilter
  pod_label_selector: string
  staleMinutes: number
}

const POD_GROUP = 'pod:'

/** The groups of a pod: the Artifact name of each of its images (in scope or not: desired decides), and its own
 * problem group when an image names none. */
export function artifactGroupsOf(pod: KubeObject): string[] {
  const groups = new Set<string>()
  for (const container of podContainers(pod as SlimPod)) {
    const name = container.image && parseImage(container.image) ? artifactName(container.image) : undefined
    groups.add(name ?? `${POD_GROUP}${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`)
  }
  return [...groups]
}

/** The Artifact of one name (or the image problems of one pod), pure. */
export function desiredArtifact(group: string, caches: SourceCaches, settings: ArtifactDiscoverySettings, now: number): DesiredState {
  if (group.startsWith(POD_GROUP)) return podProblems(group.slice(POD_GROUP.length), caches)
  const ref: ObjectRef = {kind: 'Artifact', apiVersion: 'polycrate.io/v1alpha1', name: group}
  const images = new Set<string>()
  const namespaces = new Set<string>()
  const pods = new Set<string>()
  const apps = new Map<string, {name: string; namespace: string}>()
  let registry = ''
  let digest: string | undefined
  for (const pod of caches.list('pod') as SlimPod[]) {
    const namespace = pod.metadata.namespace
    if (pod.metadata.deletionTimestamp || !namespaceInScope(namespace, settings)) continue
    for (const container of podContainers(pod)) {
      if (!container.image || artifactName(container.image) !== group) continue
      const reference = parseImage(container.image)
      if (!reference || !registryAllowed(reference.registry, settings.registry_filter)) continue
      images.add(reference.image)
      registry = reference.registry
      namespaces.add(namespace!)
      pods.add(`${namespace}/${pod.metadata.name}`)
      const status = [...(pod.status.initContainerStatuses ?? []), ...(pod.status.containerStatuses ?? [])].find((s) => s.name === container.name)
      digest ??= reference.digest ?? digestOfImageID(status?.imageID)
      for (const app of appsRunning(pod, caches)) apps.set(`${app.namespace}/${app.name}`, app)
    }
  }
  const cached = caches.get('artifact', group) as CustomObject<ArtifactSpec, {last_seen_at?: string}> | undefined
  const current = cached?.metadata.labels?.[labels.discovered] === 'true' ? cached : undefined
  const staleMs = settings.staleMinutes * 60_000
  if (pods.size === 0) {
    if (!current || current.metadata.deletionTimestamp) return {objects: [], problems: [], sources: []}
    // A registry the filter no longer admits: removed at once (the filter decides, not the image's age).
    if (current.spec?.registry && !registryAllowed(current.spec.registry, settings.registry_filter)) return {objects: [], problems: [], sources: [{ref, managed: true}]}
    const since = Date.parse(current.status?.last_seen_at ?? '')
    const unusedSince = Number.isNaN(since) ? now : since
    if (now - unusedSince >= staleMs) return {objects: [], problems: [], sources: [{ref, managed: true}]}
    return {
      objects: [{
        name: group,
        labels: {[labels.discovered]: 'true', [labels.managedBy]: 'operator'},
        spec: {...current.spec, usage: {namespaces: [], pod_count: 0, k8s_apps: []}},
        status: {last_seen_at: new Date(unusedSince).toISOString()},
        source: ref,
      }],
      problems: [],
      sources: [{ref, managed: true}],
      requeueAfterMs: unusedSince + staleMs - now,
    }
  }
  const image = [...images].sort()[0]!
  const reference = parseImage(image)!
  const spec: ArtifactSpec = {
    image,
    registry,
    repository: reference.repository,
    ...(reference.tag ? {tag: reference.tag} : {}),
    ...(digest ? {digest} : {}),
    usage: {
      namespaces: [...namespaces].sort(),
      pod_count: pods.size,
      k8s_apps: [...apps.values()].sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    },
  }
  return {
    objects: [{name: group, labels: {[labels.discovered]: 'true', [labels.managedBy]: 'operator'}, spec, status: {last_seen_at: undefined}, source: ref}],
    problems: [],
    sources: [{ref, managed: true}],
  }
}

/** The Artifact groups of the pods of a K8sApp. */
function artifactGroupsOfApp(app: KubeObject, caches: SourceCaches): string[] {
  const groups = new Set<string>()
  for (const pod of caches.list('pod', app.metadata?.namespace ?? '') as SlimPod[]) {
    if (!runsPod(app, pod)) continue
    for (const group of artifactGroupsOf(pod)) if (!group.startsWith(POD_GROUP)) groups.add(group)
  }
  return [...groups]
}

/** Whether a pod belongs to a discovered K8sApp: every pod of a secret app's namespace, else the pods of its name. */
function runsPod(app: KubeObject, pod: SlimPod): boolean {
  if (app.metadata?.namespace !== pod.metadata.namespace) return false
  const source = (app as {spec?: {source?: {kind?: string}}}).spec?.source
  return source?.kind === 'Secret' || appNameOfPod(pod) === app.metadata?.name
}

/** The discovered K8sApps a pod belongs to. */
function appsRunning(pod: SlimPod, caches: SourceCaches): Array<{name: string; namespace: string}> {
  return caches.list('k8sapp', pod.metadata.namespace ?? '').filter((app) => runsPod(app, pod))
    .map((app) => ({name: app.metadata?.name ?? '', namespace: pod.metadata.namespace ?? ''}))
}

function podProblems(key: string, caches: SourceCaches): DesiredState {
  const pod = caches.get('pod', key) as SlimPod | undefined
  if (!pod) return {objects: [], problems: [], sources: []}
  const ref: ObjectRef = {kind: 'Pod', apiVersion: 'v1', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid}
  const problems = podContainers(pod)
    .filter((container) => !(container.image && parseImage(container.image) && artifactName(container.image)))
    .map((container) => ({
      source: ref,
      reason: 'InvalidImageReference',
      message: `Container ${container.name}: the image reference "${(container.image ?? '').slice(0, 120)}" is not a valid image reference (registry/repository:tag or @digest); no Artifact is recorded for it.`,
    }))
  return {objects: [], problems, sources: [{ref, managed: false}]}
}

export const artifactDiscovery: DiscoveryDeclaration<ArtifactDiscoverySettings> = {
  name: 'artifact-discovery',
  target: artifactCrd,
  enabled: (config) => config.artifact_discovery.enabled,
  settings: (config) => ({
    watch_namespaces: config.artifact_discovery.watch_namespaces,
    ignore_namespaces: config.artifact_discovery.ignore_namespaces,
    registry_filter: config.artifact_discovery.registry_filter,
    pod_label_selector: config.artifact_discovery.pod_label_selector,
    staleMinutes: config.artifact_discovery.stale_cleanup_minutes,
  }),
  // The periodic pass recomputes every Artifact: its K8sApps are at most cache_ttl_minutes old.
  staleCleanupMinutes: (config) => config.artifact_discovery.cache_ttl_minutes,
  sources: (settings) => [
    {
      id: 'pod', kind: 'Pod', apiVersion: 'v1',
      request: settings.pod_label_selector ? {...podsRequest, labelSelector: settings.pod_label_selector} : podsRequest,
      groupsOf: artifactGroupsOf,
      // An Artifact comes from itself (targetSource); a pod only adds to its usage, or has problems.
      inputOnly: true,
    },
    // The same informer as the discovered CRs' (no selector): `desired` reads what this discovery last wrote, from the
    // cache its reconciles wait on until it shows their own writes.
    {id: 'artifact', kind: 'Artifact', apiVersion: 'polycrate.io/v1alpha1', request: {resource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'artifacts'}, kind: 'Artifact'}, groupsOf: () => []},
    {
      id: 'k8sapp', kind: 'K8sApp', apiVersion: 'polycrate.io/v1alpha1',
      request: {resource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps'}, kind: 'K8sApp', labelSelector: `${labels.discovered}=true`},
      // A K8sApp coming, going or changing its source recomputes the Artifacts of its pods (usage.k8s_apps).
      groupsOf: artifactGroupsOfApp,
      onUpdate: specMetadataOrDeletionChanged,
      inputOnly: true,
    },
  ],
  targetGroup: (object) => object.metadata.name,
  targetSource: (object) => ({kind: 'Artifact', apiVersion: 'polycrate.io/v1alpha1', name: object.metadata.name}),
  desired: (group, caches, settings, {now}) => desiredArtifact(group, caches, settings, now),
}

export const ArtifactDiscoveryReconciler = defineDiscovery(artifactDiscovery)
