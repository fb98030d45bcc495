/**
 * What a Host CR becomes in the Polycrate API (pure): the HostRequest body (API §3.9).
 *
 * Decisions:
 * - Every spec field the API knows is copied when set: name, hostname, display_name, kind, role, default_ipv4/6,
 *   resource_cpu_cores/type/architecture, resource_memory, resource_disk, provider_id, provider_type,
 *   provider_location, provider_image_os_flavor/version/architecture, description. Unset fields are left out (not
 *   sent as null): the body never clears a value somebody set in the API; a caller that must clear a field (e.g. a
 *   node that lost its IPv6) has to send null itself.
 * - `source` is operator bookkeeping and is never sent; `display_name` and `kind` only when set.
 * - `name`: the spec's name when the API accepts it as a slug (`^[-a-zA-Z0-9_]+$`, ≤ 63 characters), else
 *   `apiSlug(name)` — discovered Hosts already carry a slug, hand-written CRs might not.
 * - `k8s_cluster` = the cluster's API id, `created_by_component: 'operator'`. No labels (none are needed).
 */
import type {HostRequest} from '../../api/requests.js'
import type {HostSpec} from '../../crds/host.js'
import {apiSlug, isApiSlug, withoutUndefined} from '../discovery/hosts.js'

export function hostPayload(spec: HostSpec, clusterId: string): HostRequest {
  return withoutUndefined<HostRequest>({
    name: isApiSlug(spec.name) ? spec.name : apiSlug(spec.name),
    hostname: spec.hostname,
    display_name: spec.display_name,
    kind: spec.kind,
    role: spec.role,
    default_ipv4: spec.default_ipv4,
    default_ipv6: spec.default_ipv6,
    resource_cpu_cores: spec.resource_cpu_cores,
    resource_cpu_type: spec.resource_cpu_type,
    resource_cpu_architecture: spec.resource_cpu_architecture,
    resource_memory: spec.resource_memory,
    resource_disk: spec.resource_disk,
    provider_id: spec.provider_id,
    provider_type: spec.provider_type,
    provider_location: spec.provider_location,
    provider_image_os_flavor: spec.provider_image_os_flavor,
    provider_image_os_version: spec.provider_image_os_version,
    provider_image_os_architecture: spec.provider_image_os_architecture,
    description: spec.description,
    k8s_cluster: clusterId,
    created_by_component: 'operator',
  })
}
