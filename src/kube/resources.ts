/**
 * The Kubernetes resources the operator and the CLI read or write, other than its own polycrate.io kinds (those come
 * from their CRD definitions: `crdResource`). One table, so a resource's group and version are written once: a
 * ref to one object is `{...resources.secrets, namespace, name}`.
 */
import type {KubeObject, ResourceRef} from './client.js'

/** The ref of one object of `resource` (optionally a subresource of it). */
export function objectRef(resource: ResourceRef, object: KubeObject, subresource?: string): ResourceRef {
  return {...resource, namespace: object.metadata?.namespace, name: object.metadata?.name, subresource}
}

export const resources = {
  // core
  configMaps: {group: '', version: 'v1', plural: 'configmaps'},
  events: {group: '', version: 'v1', plural: 'events'},
  namespaces: {group: '', version: 'v1', plural: 'namespaces'},
  nodes: {group: '', version: 'v1', plural: 'nodes'},
  persistentVolumes: {group: '', version: 'v1', plural: 'persistentvolumes'},
  pods: {group: '', version: 'v1', plural: 'pods'},
  secrets: {group: '', version: 'v1', plural: 'secrets'},
  serviceAccounts: {group: '', version: 'v1', plural: 'serviceaccounts'},
  services: {group: '', version: 'v1', plural: 'services'},
  // built-in groups
  customResourceDefinitions: {group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions'},
  deployments: {group: 'apps', version: 'v1', plural: 'deployments'},
  replicaSets: {group: 'apps', version: 'v1', plural: 'replicasets'},
  ingresses: {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses'},
  leases: {group: 'coordination.k8s.io', version: 'v1', plural: 'leases'},
  // Gateway API (CRDs: only there when `gatewayApiCrds` are established)
  gateways: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways'},
  httpRoutes: {group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes'},
  // third-party operators the operator discovers from (CRDs)
  certManagerCertificates: {group: 'cert-manager.io', version: 'v1', plural: 'certificates'},
  cnpgBackups: {group: 'postgresql.cnpg.io', version: 'v1', plural: 'backups'},
  cnpgScheduledBackups: {group: 'postgresql.cnpg.io', version: 'v1', plural: 'scheduledbackups'},
  veleroBackups: {group: 'velero.io', version: 'v1', plural: 'backups'},
  veleroSchedules: {group: 'velero.io', version: 'v1', plural: 'schedules'},
} as const satisfies Record<string, ResourceRef>

/** The CRDs of the Gateway API resources above: HTTPRoute discovery runs only while both are established. */
export const gatewayApiCrds = ['httproutes.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io'] as const
