/**
 * Certificate sync (`CertificateController`, the operator reference's second controller): every Certificate CR →
 * `/api/v1/certificates/` with the cluster's id, as a declaration on the generic sync feature (hash-based change
 * detection, existence and inventory checks, finalizer delete). Adopt-or-create looks a certificate up by name in
 * the workspace and takes the one of the same namespace and cluster (the API's identity).
 */
import type {Certificate, CertificateRequest} from '../../../api/index.js'
import {certificateCrd, type CertificateSpec} from '../../../crds/certificate.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {certificatePayload} from './certificate.payload.js'
import {defineSync} from '../../sync/engine.js'

export function CertificateController(session: ApiSession): Feature<OperatorConfig> {
  return defineSync<CertificateSpec, CertificateRequest, Certificate>(session, {
    name: 'certificate-sync',
    crd: certificateCrd,
    finalizer: finalizers.certificateSync,
    noun: 'certificate',
    enabled: (config) => config.api_sync.enabled && config.certificate_discovery.enabled,
    api: (client) => client.certificates,
    requiresCluster: true,
    payload: (object, {identity}) => certificatePayload(object.spec, identity.clusterId!),
    lookup: (body, identity) => ({name_exact: body.name, workspaces: identity.workspaceId}),
    matches: (candidate, body) => candidate.namespace === body.namespace && candidate.k8s_cluster === body.k8s_cluster,
    inventory: (identity) => ({workspaces: identity.workspaceId}),
    // Unique per cluster and namespace in the API (409 on a second create).
    naturalKey: {
      body: (body) => JSON.stringify([body.name, body.namespace, body.k8s_cluster]),
      object: (object) => JSON.stringify([object.name, object.namespace, object.k8s_cluster]),
    },
  })
}
