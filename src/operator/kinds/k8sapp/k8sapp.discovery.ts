/**
 * K8sApp discovery, `K8sAppDiscoveryReconciler`: meta Secrets, annotated pods and BYOA routes → K8sApp CRs, one group
 * per namespace, as one declaration on the generic discovery engine (k8sapp.mapping.ts). The operator reference's annotation part,
 * `K8sAppLabelDiscoveryReconciler`, is this controller's pod source (the function of that name below), not a controller of its own: a meta Secret wins
 * over the pods of the same app, so both are decided together.
 *
 * Memory: Secrets are watched metadata-only — the cache holds names and labels of every Secret, never their data —
 * and `load` reads in full only the meta secrets (`*.poly`) of the namespace being reconciled, once per
 * resourceVersion. Pods come through the one shared slim-pod informer (k8sapp.pods.ts). The K8sApps themselves
 * are a source too (the target informer, shared), so `desired` can keep an existing K8sApp as it is while its
 * meta secret is unreadable.
 */
import {k8sAppCrd} from '../../../crds/k8sapp.js'
import {KubeApiError, resourcePath, type KubeClient, type KubeObject} from '../../../kube/client.js'
import {gatewayApiCrds, resources} from '../../../kube/resources.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {finalizers, labels} from '../../conventions.js'
import {defineDiscovery, type DiscoveryDeclaration, type DiscoverySource, type SourceCaches} from '../../discovery/engine.js'
import {
  appNameOfSecret,
  desiredApps,
  k8sAppSource,
  META_SECRET_SUFFIX,
  namespacesOfClaim,
  type K8sAppDiscoverySettings,
  type LoadedSecrets,
} from './k8sapp.mapping.js'
import {podsRequest} from '../../app-pods.js'


export function k8sAppDiscoverySettings(config: OperatorConfig, isEstablished: (crd: string) => boolean): K8sAppDiscoverySettings {
  const app = config.app_discovery
  const artifacts = config.artifact_discovery
  return {
    watch_namespaces: app.watch_namespaces,
    ignore_namespaces: app.ignore_namespaces,
    label_discovery_enabled: app.label_discovery_enabled,
    gatewayApi: gatewayApiCrds.every(isEstablished),
    ...(artifacts.enabled
      ? {artifacts: {watch_namespaces: artifacts.watch_namespaces, ignore_namespaces: artifacts.ignore_namespaces, registry_filter: artifacts.registry_filter}}
      : {}),
  }
}

/** Full reads of meta secrets, by namespace/name, kept per resourceVersion (only `*.poly` Secrets are read). */
function metaSecretReader() {
  const memo = new Map<string, {resourceVersion?: string; data?: Record<string, string>; error?: string}>()
  return async (namespace: string, caches: SourceCaches, {client, signal}: {client: KubeClient; signal: AbortSignal}): Promise<LoadedSecrets> => {
    const loaded = new Map<string, {data?: Record<string, string>; error?: string}>()
    const present = new Set<string>()
    for (const secret of caches.list('secret', namespace)) {
      const name = secret.metadata?.name ?? ''
      if (!name.endsWith(META_SECRET_SUFFIX)) continue
      const key = `${namespace}/${name}`
      present.add(key)
      const resourceVersion = secret.metadata?.resourceVersion
      let entry = memo.get(key)
      if (!entry || entry.resourceVersion !== resourceVersion) {
        try {
          const full = await client.request<KubeObject & {data?: Record<string, string>}>({path: resourcePath({...resources.secrets, namespace, name}), signal})
          entry = {resourceVersion, data: full.data ?? {}}
        } catch (error) {
          if (error instanceof KubeApiError && error.status === 404) continue // gone meanwhile: its delete event follows
          if (!(error instanceof KubeApiError && error.status === 403)) throw error
          entry = {resourceVersion, error: 'the operator is not allowed to read it (403); grant it get on secrets'}
        }
        memo.set(key, entry)
      }
      loaded.set(name, entry)
    }
    for (const key of memo.keys()) if (key.startsWith(`${namespace}/`) && !present.has(key)) memo.delete(key)
    return loaded
  }
}

/**
 * The seeds' `K8sAppLabelDiscoveryReconciler`: the pod source of K8sApp discovery (pods annotated
 * `polycrate_k8sapp_name`, read when `label_discovery_enabled`). A meta Secret wins over the pods of the same app, so
 * it runs inside `K8sAppDiscoveryReconciler`, not as a controller of its own. Claims only (inputOnly): a K8sApp comes
 * from its meta Secret or its namespace (k8sAppSource).
 */
export function K8sAppLabelDiscoveryReconciler(settings: K8sAppDiscoverySettings): DiscoverySource {
  return {id: 'pod', kind: 'Pod', apiVersion: 'v1', request: podsRequest, groupsOf: (object, caches) => namespacesOfClaim(object, caches, settings), inputOnly: true}
}

export function k8sAppDiscovery(): DiscoveryDeclaration<K8sAppDiscoverySettings> {
  const readMetaSecrets = metaSecretReader()
  return {
    name: 'k8sapp-discovery',
    target: k8sAppCrd,
    enabled: (config) => config.app_discovery.enabled,
    settings: k8sAppDiscoverySettings,
    staleCleanupMinutes: (config) => config.app_discovery.stale_cleanup_minutes,
    sources: (settings) => {
      const claimGroups = (object: KubeObject, caches: SourceCaches) => namespacesOfClaim(object, caches, settings)
      return [
        {
          id: 'secret', kind: 'Secret', apiVersion: 'v1',
          request: {resource: resources.secrets, kind: 'Secret', metadataOnly: true},
          // A meta secret also decides cross-namespace conflicts of annotation claims of its name.
          groupsOf: (secret, caches) => {
            const name = secret.metadata?.name ?? ''
            if (!name.endsWith(META_SECRET_SUFFIX)) return []
            const probe = {kind: 'Ingress', metadata: {namespace: secret.metadata?.namespace, annotations: {polycrate_k8sapp_name: appNameOfSecret(name)}}}
            return namespacesOfClaim(probe, caches, settings)
          },
        },
        K8sAppLabelDiscoveryReconciler(settings),
        {id: 'ingress', kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', request: {resource: resources.ingresses, kind: 'Ingress'}, groupsOf: claimGroups, inputOnly: true},
        ...(settings.gatewayApi
          ? [{id: 'httproute', kind: 'HTTPRoute', apiVersion: 'gateway.networking.k8s.io/v1', request: {resource: resources.httpRoutes, kind: 'HTTPRoute'}, groupsOf: claimGroups, inputOnly: true}]
          : []),
        {id: 'namespace', kind: 'Namespace', apiVersion: 'v1', request: {resource: resources.namespaces, kind: 'Namespace', metadataOnly: true}, groupsOf: (ns: KubeObject) => [ns.metadata?.name ?? '']},
        // The discovered K8sApps themselves (the target informer: same request), read by `desired`; the target
        // watch already reconciles their changes.
        {id: 'k8sapp', kind: 'K8sApp', apiVersion: 'polycrate.io/v1alpha1', request: {resource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sapps'}, kind: 'K8sApp', labelSelector: `${labels.discovered}=true`}, groupsOf: () => [], inputOnly: true},
      ]
    },
    targetGroup: (object) => object.metadata.namespace ?? '',
    targetSource: k8sAppSource,
    load: (namespace, caches, io) => readMetaSecrets(namespace, caches, io),
    desired: (namespace, caches, settings, {loaded}) => desiredApps(namespace, caches, settings, loaded as LoadedSecrets | undefined),
    syncFinalizer: finalizers.k8sAppSync,
  }
}

export const K8sAppDiscoveryReconciler = defineDiscovery(k8sAppDiscovery())

/** The seeds' other name for `K8sAppDiscoveryReconciler` (their architecture diagram). */
export const K8sAppDiscoveryController = K8sAppDiscoveryReconciler
