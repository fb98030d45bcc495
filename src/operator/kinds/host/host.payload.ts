/**
 * What a Host CR becomes in the Polycrate API (pure): the HostRequest body.
 *
 * Decisions:
 * - Every spec field the API knows is copied when set: name, hostname, display_name, kind, role, default_ipv4/6,
 *   resource_cpu_cores/type/architecture, resource_memory, resource_disk, provider_id, provider_type,
 *   provider_location, provider_image_os_flavor/version/architecture, description.
 * - A field the spec does not have is sent as null where the HostRequest type allows null — default_ipv4,
 *   default_ipv6, provider_id, display_name — so an update (PATCH) clears what the source lost (a node that lost its
 *   IPv6 address, its providerID). The other fields (kind, role, resource_*, provider_type, provider_location,
 *   provider_image_os_*, description) are typed non-nullable in src/api/requests.ts and are left out when unset,
 *   so the API keeps their last value; clearing them needs that type widened first.
 * - `source` is operator bookkeeping and is never sent.
 * - `name`: the spec's name when the API accepts it as a slug (`^[-a-zA-Z0-9_]+$`, ≤ 63 characters), else
 *   `apiSlug(name)` — discovered Hosts already carry a slug, hand-written CRs might not.
 * - `k8s_cluster` = the cluster's API id, `created_by_component: 'operator'`. No labels (none are needed).
 */
import type {HostRequest} from '../../../api/requests.js'
import type {HostSpec} from '../../../crds/host.js'
import {apiSlug, isApiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'

export function hostPayload(spec: HostSpec, clusterId: string): HostRequest {
  return withoutUndefined<HostRequest>({
    name: isApiSlug(spec.name) ? spec.name : apiSlug(spec.name),
    hostname: spec.hostname,
    display_name: spec.display_name ?? null,
    kind: spec.kind,
    role: spec.role,
    default_ipv4: spec.default_ipv4 ?? null,
    default_ipv6: spec.default_ipv6 ?? null,
    resource_cpu_cores: spec.resource_cpu_cores,
    resource_cpu_type: spec.resource_cpu_type,
    resource_cpu_architecture: spec.resource_cpu_architecture,
    resource_memory: spec.resource_memory,
    resource_disk: spec.resource_disk,
    provider_id: spec.provider_id ?? null,
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
