/**
 * `polycrate operator explain`: reads the live object, its namespace's other Ingresses and HTTPRoutes, the Gateways
 * and the live OperatorConfig, runs the pure explanation (operator/kinds/endpoint/endpoint.explain.ts) and renders it.
 * No running operator needed.
 */
import type {OperatorConfigSpec} from '../crds/operatorconfig.js'
import type {KubeClient, KubeObject} from '../kube/client.js'
import {resources} from '../kube/resources.js'
import {OPERATOR_CONFIG_NAME} from '../operator/conventions.js'
import {validateOperatorConfig} from '../operator/config/operator-config.js'
import {explainEndpoints, type ExplainTarget, type Explanation} from '../operator/kinds/endpoint/endpoint.explain.js'
import type {GatewayLike, HTTPRouteLike, IngressLike} from '../operator/kinds/endpoint/endpoint.types.js'
import {renderTable} from './table.js'

export const EXPLAIN_KINDS = {
  ingress: {kind: 'Ingress', ...resources.ingresses},
  httproute: {kind: 'HTTPRoute', ...resources.httpRoutes},
} as const

/** `ingress/web`, `ingresses/web`, `httproute/shop`, `ing/web`, `Ingress/web` → kind and name; undefined if not one. */
export function parseExplainTarget(text: string): {kind: keyof typeof EXPLAIN_KINDS; name: string} | undefined {
  const match = /^([A-Za-z0-9.]+)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(text.trim())
  if (!match) return undefined
  const kind = match[1]!.toLowerCase().replace(/\.(gateway\.)?networking\.k8s\.io$/, '')
  if (['ingress', 'ingresses', 'ing'].includes(kind)) return {kind: 'ingress', name: match[2]!}
  if (['httproute', 'httproutes'].includes(kind)) return {kind: 'httproute', name: match[2]!}
  return undefined
}

export interface ExplainReport extends Explanation {
  operatorConfig: {namespace: string; name: string; found: boolean; problems?: string[]}
}

export class ExplainError extends Error {
  override name = 'ExplainError'
}

const list = async <T>(client: Pick<KubeClient, 'request'>, path: string): Promise<T[]> =>
  (await client.request<{items: T[]}>({path})).items

export async function explainLive(
  client: Pick<KubeClient, 'request' | 'getOrUndefined'>,
  target: {kind: keyof typeof EXPLAIN_KINDS; name: string; namespace: string},
  operatorNamespace: string,
): Promise<ExplainReport> {
  const def = EXPLAIN_KINDS[target.kind]
  const object = await client.getOrUndefined<KubeObject>({group: def.group, version: def.version, plural: def.plural, namespace: target.namespace, name: target.name})
  if (!object) throw new ExplainError(`${def.kind} ${target.namespace}/${target.name} not found (kubectl get ${def.plural} -n ${target.namespace}).`)

  const configObject = await client.getOrUndefined<KubeObject & {spec?: OperatorConfigSpec}>({
    group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace: operatorNamespace, name: OPERATOR_CONFIG_NAME,
  }).catch(() => undefined)
  const validation = validateOperatorConfig(configObject?.spec ?? {})
  // An invalid spec pauses discovery in the operator; explained here with the defaults, and said so.
  const effective = validation.ok ? validation : validateOperatorConfig({})
  if (!effective.ok) throw new ExplainError('the default OperatorConfig does not validate')
  const settings = effective.config.endpoint_discovery

  const ingresses = await list<IngressLike>(client, `/apis/networking.k8s.io/v1/namespaces/${target.namespace}/ingresses`)
  // The Gateway API may not be installed: then there are no HTTPRoutes (and explaining one failed above already).
  const routes = await list<HTTPRouteLike>(client, `/apis/gateway.networking.k8s.io/v1/namespaces/${target.namespace}/httproutes`).catch(() => [])
  const gateways = target.kind === 'httproute'
    ? new Map((await list<GatewayLike>(client, '/apis/gateway.networking.k8s.io/v1/gateways').catch(() => []))
      .map((gateway) => [`${gateway.metadata?.namespace}/${gateway.metadata?.name}`, gateway]))
    : new Map<string, GatewayLike>()

  const explainTarget: ExplainTarget = target.kind === 'ingress'
    ? {kind: 'Ingress', object: object as IngressLike}
    : {kind: 'HTTPRoute', object: object as HTTPRouteLike}
  const explanation = explainEndpoints(explainTarget, {settings, ingresses, routes, gateways})
  return {
    ...explanation,
    operatorConfig: {
      namespace: operatorNamespace,
      name: OPERATOR_CONFIG_NAME,
      found: configObject !== undefined,
      ...(validation.ok ? {} : {problems: validation.problems}),
    },
  }
}

export function renderExplanation(report: ExplainReport): string {
  const {source, decision} = report
  const lines: string[] = [`${source.kind} ${source.namespace}/${source.name}`]
  const config = report.operatorConfig
  lines.push(`  OperatorConfig:  ${config.namespace}/${config.name}${config.found ? '' : ' (not found: the defaults apply)'}`)
  if (config.problems) lines.push(`                   INVALID — the operator pauses discovery until it is fixed; explained with the defaults: ${config.problems.join('; ')}`)
  lines.push(`  mode:            ${decision.mode}`)
  lines.push(`  monitor:         ${decision.monitorAnnotation}`)
  if (decision.ingressClass !== undefined) lines.push(`  ingress class:   ${decision.ingressClass}`)
  lines.push(`  monitored:       ${report.monitored ? 'yes' : 'no'}${report.reason ? ` — ${report.reason}` : ''}`)
  lines.push('')
  if (report.hosts.length === 0) lines.push('  No hosts.')
  for (const host of report.hosts) {
    lines.push(`  ${host.host}: ${host.monitored ? `monitored → Endpoint ${host.endpoint}` : `not monitored — ${host.reason ?? 'unknown'}`}`)
    if (host.settings) {
      const rows = Object.entries(host.settings).map(([name, setting]) => [name, Array.isArray(setting.value) ? setting.value.join(',') : String(setting.value), setting.from])
      lines.push(renderTable(['SETTING', 'VALUE', 'FROM'], rows).split('\n').map((line) => `      ${line}`).join('\n'))
    }
  }
  lines.push('')
  if (report.problems.length === 0) lines.push('  Problems: none')
  else {
    lines.push('  Problems:')
    for (const problem of report.problems) lines.push(`    - ${problem.reason}: ${problem.message}`)
  }
  return lines.join('\n')
}
