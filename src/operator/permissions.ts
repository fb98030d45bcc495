/**
 * What the operator may do in the cluster, declared where it is done — the way controller-gen derives RBAC from
 * `+kubebuilder:rbac` markers. Generic discovery and sync derive theirs from their declarations (sources read,
 * source finalizers patched, target CRs written); other features list theirs. `manifests` turns the union into a
 * ClusterRole and a Role in the operator's namespace, and the integration suite runs the operator under exactly
 * those roles.
 */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete'

export interface Permission {
  /** API group ('' for core). */
  group: string
  /** Plural resource, `plural/subresource` for a subresource. */
  resource: string
  verbs: readonly Verb[]
  /** `namespace`: only in the operator's own namespace (a Role); `cluster` (default): everywhere (a ClusterRole). */
  scope?: 'cluster' | 'namespace'
  /** Only in this fixed namespace (e.g. `kube-system`), a Role there; wins over `scope`. */
  namespace?: string
  /**
   * Only these objects (`resourceNames`). `list`/`watch` are refused with names unless `watchesByName` says that the
   * client lists and watches each with `fieldSelector=metadata.name=<name>` (RBAC then authorizes it by name; a list
   * without that selector is forbidden).
   */
  names?: readonly string[]
  watchesByName?: boolean
  /**
   * The feature that needs it (set by `operatorPermissions`): the manifests give each feature a ClusterRole and Roles
   * of its own (`featureRoleName`), so each RBAC object depends on one feature's switch; none: the base role.
   */
  feature?: string
}

export const READ: readonly Verb[] = ['get', 'list', 'watch']
/** What a controller needs on the objects it creates and owns (server-side apply creates or patches). */
export const OWN: readonly Verb[] = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']

export interface PolicyRule {
  apiGroups: string[]
  resources: string[]
  verbs: Verb[]
  resourceNames?: string[]
}

const VERB_ORDER: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']

/**
 * The rules of a role (pure): one rule per (group, resource names) and verb set — resources with the same verbs are
 * merged, verbs sorted, no wildcards. Named permissions keep their own rules.
 */
export function policyRules(permissions: readonly Permission[]): PolicyRule[] {
  const byResource = new Map<string, {group: string; resource: string; names?: readonly string[]; verbs: Set<Verb>}>()
  for (const permission of permissions) {
    if (permission.names && !permission.watchesByName && permission.verbs.some((verb) => verb === 'list' || verb === 'watch')) {
      throw new Error(`${permission.resource}: list and watch cannot be limited to resource names unless the client selects by name (watchesByName)`)
    }
    const key = JSON.stringify([permission.group, permission.resource, [...(permission.names ?? [])].sort()])
    const entry = byResource.get(key) ?? {group: permission.group, resource: permission.resource, names: permission.names, verbs: new Set<Verb>()}
    for (const verb of permission.verbs) entry.verbs.add(verb)
    byResource.set(key, entry)
  }
  const rules = new Map<string, PolicyRule>()
  for (const entry of byResource.values()) {
    const verbs = VERB_ORDER.filter((verb) => entry.verbs.has(verb))
    const names = entry.names ? [...entry.names].sort() : undefined
    const key = JSON.stringify([entry.group, verbs, names])
    const rule = rules.get(key) ?? {apiGroups: [entry.group], resources: [], verbs, ...(names ? {resourceNames: names} : {})}
    rule.resources.push(entry.resource)
    rules.set(key, rule)
  }
  const sorted = [...rules.values()].map((rule) => ({...rule, resources: [...rule.resources].sort()}))
  return sorted.sort((a, b) => `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`))
}

/** Core permissions of every operator, beside its features': CRD gate, OperatorConfig, Events, leader election and label. */
export const CORE_PERMISSIONS: readonly Permission[] = [
  {group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', verbs: READ},
  // Every OperatorConfig is read (one outside the operator's namespace is reported as ignored, in its status).
  {group: 'polycrate.io', resource: 'operatorconfigs', verbs: READ},
  {group: 'polycrate.io', resource: 'operatorconfigs/status', verbs: ['get', 'patch', 'update']},
  {group: '', resource: 'events', verbs: ['create', 'patch']},
  {group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'], scope: 'namespace'},
  // The leader label on the operator's own Pod (LeaderPodLabel); its name is not known before it runs.
  {group: '', resource: 'pods', verbs: ['patch'], scope: 'namespace'},
]

export interface Roles {
  /** A ClusterRole's rules. */
  cluster: PolicyRule[]
  /** A Role's rules per namespace ('' = the operator's namespace). */
  namespaced: Map<string, PolicyRule[]>
}

/** The permissions per role (pure): '' (the base role: core, metrics reviews) first, then each feature's, in order. */
export function permissionsByFeature(permissions: readonly Permission[]): Map<string, Permission[]> {
  const byFeature = new Map<string, Permission[]>([['', []]])
  for (const permission of permissions) {
    const feature = permission.feature ?? ''
    byFeature.set(feature, [...(byFeature.get(feature) ?? []), permission])
  }
  return byFeature
}

/** The cluster-wide and the per-namespace rules of a set of permissions (pure). */
export function roleRules(permissions: readonly Permission[]): Roles {
  const byNamespace = new Map<string, Permission[]>()
  const cluster: Permission[] = []
  for (const permission of permissions) {
    const namespace = permission.namespace ?? (permission.scope === 'namespace' ? '' : undefined)
    if (namespace === undefined) cluster.push(permission)
    else byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), permission])
  }
  return {
    cluster: policyRules(cluster),
    namespaced: new Map([...byNamespace].sort(([a], [b]) => a.localeCompare(b)).map(([namespace, list]) => [namespace, policyRules(list)])),
  }
}
