/**
 * The namespace scope of a discovery section (pure), the one namespace rule every discovery uses: the operator
 * reference's `watch_namespaces` (empty or absent = every namespace, else only those) and `ignore_namespaces`
 * (subtracted from the watch list; a namespace on both is ignored).
 */

export interface NamespaceScope {
  watch_namespaces?: readonly string[]
  ignore_namespaces?: readonly string[]
}

/**
 * Whether an object in `namespace` is in the scope.
 *
 * An object without a namespace (undefined or "") is NOT in scope, whatever the lists say: the lists name
 * namespaces, and every source a scope applies to is namespaced (Ingress, HTTPRoute, cert-manager Certificate,
 * Secret, Pod), so a missing namespace is a malformed object, not one to act on. A caller for whom "no namespace"
 * means "about no single namespace" (a cluster-wide backup) says so before it asks.
 */
export function namespaceInScope(namespace: string | undefined, scope: NamespaceScope): boolean {
  if (!namespace) return false
  if (scope.ignore_namespaces?.includes(namespace)) return false
  const watch = scope.watch_namespaces ?? []
  return watch.length === 0 || watch.includes(namespace)
}
