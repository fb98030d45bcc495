/**
 * What a Certificate CR becomes in the Polycrate API (pure): the CertificateRequest body.
 *
 * Decisions:
 * - Every spec field the API knows is copied when set: name, display_name, namespace, secret_name, kind, dns_names,
 *   ip_addresses, issuer_name, issuer_kind, issuer_group, certificate_status, is_ready, not_before, not_after,
 *   renewal_time, last_failure_time, failure_reason, and — only when a (hand-written) CR has them — the challenge
 *   fields and cert_manager_status. `source_cert_manager` is operator bookkeeping and is never sent.
 * - A field discovery maps but the spec does not have is cleared on update (PATCH): null where the request type
 *   allows it (display_name, not_before, not_after, renewal_time, last_failure_time — a Secret that was deleted
 *   takes the validity dates with it), [] for the lists (dns_names, ip_addresses), "" for the non-nullable strings
 *   (issuer_name, issuer_group, failure_reason — a failure that went away). Enums and booleans that cannot be null
 *   (kind, issuer_kind, certificate_status, is_ready) are left out when unset.
 * - Fields discovery never sets (current_challenge_type/status, challenge_reason, cert_manager_status) are left out
 *   when unset rather than cleared: another component may own them in the API.
 * - `last_synced_from_cluster` is not sent: it would need the clock, and a body that changes on every sync defeats
 *   the hash-based change detection.
 * - `namespace` (required by the API) = spec.namespace, else source_cert_manager.namespace, else "default".
 * - `name` = `apiSlug(spec.name)`, as for backups: kept when it matches `^[a-z0-9]+(?:-[a-z0-9]+)*$` within 63
 *   characters, else slugged.
 * - `k8s_cluster` = the cluster's API id, `created_by_component: 'operator'`. No metadata, no labels.
 */
import type {CertificateRequest} from '../../../api/requests.js'
import type {CertificateSpec} from '../../../crds/certificate.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'

export function certificatePayload(spec: CertificateSpec, clusterId: string): CertificateRequest {
  return withoutUndefined<CertificateRequest>({
    name: apiSlug(spec.name),
    display_name: spec.display_name ?? null,
    namespace: spec.namespace || spec.source_cert_manager?.namespace || 'default',
    secret_name: spec.secret_name,
    kind: spec.kind,
    dns_names: [...spec.dns_names ?? []],
    ip_addresses: [...spec.ip_addresses ?? []],
    issuer_name: spec.issuer_name ?? '',
    issuer_kind: spec.issuer_kind,
    issuer_group: spec.issuer_group ?? '',
    certificate_status: spec.certificate_status,
    is_ready: spec.is_ready,
    not_before: spec.not_before ?? null,
    not_after: spec.not_after ?? null,
    renewal_time: spec.renewal_time ?? null,
    last_failure_time: spec.last_failure_time ?? null,
    failure_reason: spec.failure_reason ?? '',
    current_challenge_type: spec.current_challenge_type,
    current_challenge_status: spec.current_challenge_status,
    challenge_reason: spec.challenge_reason,
    cert_manager_status: spec.cert_manager_status ? structuredClone(spec.cert_manager_status) : undefined,
    k8s_cluster: clusterId,
    created_by_component: 'operator',
  })
}
