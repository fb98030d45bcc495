/** What an Endpoint CR becomes in the Polycrate API (pure), and the hash that says whether it changed. */
import {createHash} from 'node:crypto'
import type {EndpointRequest} from '../../../api/index.js'
import type {EndpointSpec} from '../../../crds/endpoint.js'
import {annotations as annotationKeys, labels as labelKeys} from '../../conventions.js'

export interface EndpointPayloadInput {
  namespace: string
  name: string
  spec: EndpointSpec
  clusterId?: string
  k8sAppId?: string
}

/**
 * The API name: unique per workspace, so the namespace is part of it (two namespaces may monitor the same host);
 * the display name is the host. Names longer than 63 characters keep a hash of the full name.
 */
export function apiEndpointName(namespace: string, name: string): string {
  const full = `${namespace}-${name}`.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '')
  if (full.length <= 63) return full
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8)
  return `${full.slice(0, 54).replace(/-+$/, '')}-${hash}`
}

/**
 * The check settings live inside the typed `spec.http` (the contract has no flat fields for them). The expected
 * body has no field in the contract's EndpointSpec; it travels in the object's untyped `annotations`.
 */
export function endpointPayload(input: EndpointPayloadInput): EndpointRequest {
  const {spec} = input
  const codes = spec.expectedStatusCodes && spec.expectedStatusCodes.length > 0 ? spec.expectedStatusCodes : [200]
  const tls = spec.tls ?? true
  return {
    name: apiEndpointName(input.namespace, input.name),
    display_name: spec.displayName ?? spec.remoteAddress,
    remote_address: spec.remoteAddress,
    remote_port: spec.remotePort ?? (tls ? 443 : 80),
    kind: spec.kind ?? 'http',
    spec: {
      http: {
        path: spec.path ?? '/',
        tls,
        timeout: spec.timeout ?? 5,
        interval: spec.interval ?? 60,
        method: 'GET',
        expected_status_code: codes[0]!,
        accepted_status_codes: codes,
      },
    },
    k8s_cluster: input.clusterId ?? null,
    k8s_app: input.k8sAppId ?? null,
    created_by_component: 'operator',
    labels: {
      [labelKeys.managedBy]: 'operator',
      polycrate_k8s_namespace: input.namespace,
      ...(spec.k8sAppName ? {[labelKeys.k8sAppName]: spec.k8sAppName} : {}),
      ...(spec.source ? {polycrate_source_kind: spec.source.kind, polycrate_source_name: spec.source.name} : {}),
    },
    annotations: spec.expectedBody ? {[annotationKeys.endpointExpectedBody]: spec.expectedBody} : {},
  }
}
