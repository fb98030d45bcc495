/**
 * Ingress → desired Endpoint CRs (pure).
 *
 * Order of the gates: discovery enabled → not being deleted → namespace filter → ingress class → monitor switch.
 * Only a source that passes all of them has its annotations read, so an Ingress the operator does not manage never
 * gets a warning about its polycrate_* annotations (except an invalid polycrate_endpoint_monitor value on an in-scope
 * Ingress, which is exactly what decides whether it is managed).
 *
 * TLS: on by default; polycrate_endpoint_tls "false" or a host_config `"tls": false`
 * turns it off. Decision: the explicit setting also wins for a host listed in spec.tls (someone who writes "false"
 * means it, e.g. TLS terminates in front of the cluster and the check must use plain HTTP). spec.tls therefore never
 * changes the outcome: without an explicit setting TLS is on for every host anyway.
 * Port: host_config, else polycrate_endpoint_port, else 443 with TLS and 80 without.
 */
import {annotations} from '../../conventions.js'
import {DEFAULT_PATH, readHostConfig, readSourceSettings} from './endpoint.annotations.js'
import {desiredEndpoint, hostCheck, monitorGate, monitoredResult, scopeGate, skipped, sourceRef} from './endpoint.source-gates.js'
import {collectHosts} from './endpoint.hosts.js'
import type {EndpointDiscoverySettings, IngressLike, SourceResult} from './endpoint.types.js'

/** spec.ingressClassName, else the deprecated annotation kubernetes.io/ingress.class; blank = no class. */
export function ingressClassOf(ingress: IngressLike): string | undefined {
  const fromSpec = ingress.spec?.ingressClassName?.trim()
  if (fromSpec) return fromSpec
  const fromAnnotation = ingress.metadata?.annotations?.[annotations.ingressClass]?.trim()
  return fromAnnotation || undefined
}

export function endpointsForIngress(ingress: IngressLike, settings: EndpointDiscoverySettings): SourceResult {
  const meta = ingress.metadata
  const source = sourceRef('Ingress', meta)
  const outOfScope = scopeGate(source, meta, settings)
  if (outOfScope) return outOfScope

  // Empty list = every class. With a list, an Ingress without a class is skipped: it is served by the cluster's
  // default IngressClass, which a pure function cannot know, and the list says "only these".
  if (settings.ingress_classes.length > 0) {
    const ingressClass = ingressClassOf(ingress)
    if (ingressClass === undefined || !settings.ingress_classes.includes(ingressClass)) {
      return skipped(source, `${ingressClass === undefined ? 'the Ingress has no ingress class' : `ingress class "${ingressClass}"`} `
        + `is not in endpoint_discovery.ingress_classes (${settings.ingress_classes.join(', ')})`)
    }
  }

  const monitor = monitorGate(source, meta, settings)
  if ('skip' in monitor) return monitor.skip

  const base = readSourceSettings(meta, 'Ingress', settings)
  const hosts = collectHosts((ingress.spec?.rules ?? []).map((rule, index) => ({value: rule.host, where: `spec.rules[${index}].host`})))
  const hostConfig = readHostConfig(meta?.annotations, hosts.all)

  const endpoints = hosts.hosts.map((host) => desiredEndpoint(
    source,
    host,
    hostCheck(base, hostConfig.overrides.get(host), {path: DEFAULT_PATH, tls: true, port: (tls) => (tls ? 443 : 80)}),
    base,
  ))
  return monitoredResult(
    source,
    endpoints,
    [...monitor.problems, ...base.problems, ...hostConfig.problems, ...hosts.problems],
    base.deprecatedLabelPresent,
    (ingress.spec?.rules ?? []).length === 0
      ? 'the Ingress has no rules (at most a default backend), so it has no host to check'
      : hosts.all.length === 0
        ? 'no rule of the Ingress has a host (a catch-all rule has nothing concrete to check)'
      : 'none of the hosts of the Ingress can be monitored (see the problems)',
  )
}
