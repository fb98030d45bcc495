/**
 * Pods as K8sApp discovery, the K8sApp pod status and Artifact discovery see them (pure): one shared informer, and
 * the pod → app rule.
 *
 * One pod informer serves all three: `podsRequest` is one object, and informers are shared by resource, selectors
 * and transform identity. Its transform is kube/pods.ts's slim pod with the one annotation they read,
 * `polycrate_k8sapp_name`.
 */
import type {KubeObject} from '../kube/client.js'
import {slimPod, type SlimPod} from '../kube/pods.js'
import {resources} from '../kube/resources.js'
import {annotations, deprecatedLabels} from './conventions.js'

const keptAnnotations = [annotations.k8sAppName]

/** The pod informer's transform: the slim pod with its `polycrate_k8sapp_name` annotation. */
export function slimAppPod(object: KubeObject): SlimPod {
  return slimPod(object, keptAnnotations)
}

/** The one pod informer request of every pod consumer (shared: same resource, no selector, same transform). */
export const podsRequest = {resource: resources.pods, kind: 'Pod', transform: slimAppPod as (object: KubeObject) => KubeObject}

/**
 * The pod's `polycrate_k8sapp_name` annotation (or the deprecated label `k8sapps.polycrate.io/name`; the annotation
 * wins), trimmed ("" when set but blank); undefined when it has neither.
 */
export function appNameOfPod(pod: KubeObject): string | undefined {
  const metadata = (pod as SlimPod).metadata
  const value = metadata.annotations?.[annotations.k8sAppName] ?? metadata.labels?.[deprecatedLabels.k8sAppName]
  return value === undefined ? undefined : String(value).trim()
}
