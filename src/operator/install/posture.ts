/**
 * The security posture of an install, as one-line warnings (pure): what a security review should not learn from
 * the manifests alone. `install` and `manifests` say them for the values; `status` for what runs in the cluster
 * (`installedPosture`, from the NetworkPolicy, the Deployment, the Namespace and the OperatorConfig).
 */
import type {KubeObject} from '../../kube/client.js'
import {OPERATOR_NAME} from '../conventions.js'
import {EVERY_NAMESPACE, type NetworkPolicyPeer} from '../manifests.js'
import {enforcedLevel, podSecurityLevel, weaker, type PodSecurityLevel} from '../pod-security.js'
import type {InstallPlan} from './objects.js'

export interface PostureInput {
  namespace: string
  /** `security.add_capabilities`. */
  addCapabilities: readonly string[]
  /** The external-dns webhook: served at all (the OperatorConfig's `external_dns_webhook.enabled`), its port, who reaches it. */
  externalDnsWebhook: {enabled: boolean; port: number; allowedFrom?: readonly NetworkPolicyPeer[]}
  metrics: {secure: boolean; port: number}
  /**
   * The level the operator's namespace enforces, when install does not set it (a namespace it did not create keeps its
   * labels); absent when install labels the namespace itself.
   */
  namespaceEnforces?: PodSecurityLevel
}

/** Whether peers let in every Pod of every namespace (or more). */
export function opensToEveryNamespace(peers: readonly NetworkPolicyPeer[]): boolean {
  return peers.some((peer) => {
    if (peer.ipBlock) return /^(0\.0\.0\.0\/0|::\/0)$/.test(peer.ipBlock.cidr) && !(peer.ipBlock.except?.length)
    const everyNamespace = peer.namespaceSelector !== undefined && isEmptySelector(peer.namespaceSelector)
    return everyNamespace && (peer.podSelector === undefined || isEmptySelector(peer.podSelector))
  })
}

const isEmptySelector = (selector: {matchLabels?: object; matchExpressions?: unknown[]}) =>
  Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0

export const WEBHOOK_OPEN = (namespace: string, port: number) =>
  `The external-dns webhook in ${namespace} (port ${port}) accepts calls from every namespace, without authentication: any Pod in the cluster can change DNS records in every zone the agent token sees. Narrow it with external_dns_webhook.allowed_from (NetworkPolicy peers, e.g. external-dns' namespace).`

/** The warnings for an install (pure), most serious first. */
export function postureWarnings(input: PostureInput): string[] {
  const warnings: string[] = []
  const webhook = input.externalDnsWebhook
  if (webhook.enabled && opensToEveryNamespace(webhook.allowedFrom ?? EVERY_NAMESPACE)) warnings.push(WEBHOOK_OPEN(input.namespace, webhook.port))
  if (!input.metrics.secure) {
    warnings.push(`metrics.secure is false: /metrics (port ${input.metrics.port}) is plain HTTP without authentication, readable by whatever reaches the port.`)
  }
  const level = podSecurityLevel(input.addCapabilities)
  if (level !== 'restricted') {
    const added = input.addCapabilities.join(', ')
    const icmp = input.addCapabilities.includes('NET_RAW') ? ' ICMP checks need no NET_RAW: the Pod sets net.ipv4.ping_group_range.' : ''
    warnings.push(`security.add_capabilities (${added}) takes the operator's Pod out of the restricted Pod Security profile (it meets ${level}${input.namespaceEnforces ? '' : `, which namespace ${input.namespace} then enforces`}).${icmp}`)
  } else if (input.namespaceEnforces && weaker(input.namespaceEnforces, 'restricted')) {
    warnings.push(`Namespace ${input.namespace} enforces the ${input.namespaceEnforces} Pod Security profile, not restricted, which the operator's Pod meets: \`kubectl label --overwrite namespace ${input.namespace} pod-security.kubernetes.io/enforce=restricted\` (if nothing else in it needs more).`)
  }
  return warnings
}

/**
 * What the posture warnings look at for what install applies (pure), read from the plan's objects as `status` reads
 * them from the cluster; `foreignNamespace`: an existing namespace install did not create (it keeps its labels).
 */
export function postureOfPlan(plan: Pick<InstallPlan, 'namespace' | 'workload' | 'operatorConfig'>, foreignNamespace?: KubeObject): PostureInput {
  const find = (kind: string) => plan.workload.find((object) => object.kind === kind && object.metadata?.name === OPERATOR_NAME)
  return installedPostureInput({namespace: plan.namespace, deployment: find('Deployment'), networkPolicy: find('NetworkPolicy'), operatorConfig: plan.operatorConfig, namespaceObject: foreignNamespace})!
}

type NetworkPolicyObject = KubeObject & {spec?: {ingress?: Array<{from?: NetworkPolicyPeer[]; ports?: Array<{port?: number | string}>}>}}
type DeploymentObject = KubeObject & {spec?: {template?: {spec?: {containers?: Array<{name: string; args?: string[]; ports?: Array<{name?: string; containerPort: number}>; securityContext?: {capabilities?: {add?: string[]}}}>}}}}
type OperatorConfigObject = KubeObject & {spec?: {external_dns_webhook?: {enabled?: boolean; port?: number}}}

/**
 * The posture of what runs (pure): the objects as read from the cluster (or as install applies them). No Deployment:
 * nothing to say. No NetworkPolicy: every port is open to every namespace. The namespace, when given, for the level it
 * enforces.
 */
export function installedPostureInput(objects: {namespace: string; deployment?: DeploymentObject; networkPolicy?: NetworkPolicyObject; namespaceObject?: KubeObject; operatorConfig?: OperatorConfigObject}): PostureInput | undefined {
  const container = objects.deployment?.spec?.template?.spec?.containers?.find((candidate) => candidate.name === 'operator')
  if (!container) return undefined
  const portOf = (name: string) => container.ports?.find((port) => port.name === name)?.containerPort
  const webhookPort = objects.operatorConfig?.spec?.external_dns_webhook?.port ?? portOf('dns-webhook') ?? 8888
  const peersOf = (port: number): NetworkPolicyPeer[] => {
    if (!objects.networkPolicy) return [...EVERY_NAMESPACE]
    const rules = (objects.networkPolicy.spec?.ingress ?? []).filter((rule) => !rule.ports || rule.ports.length === 0 || rule.ports.some((candidate) => candidate.port === port))
    // A rule without `from` lets every source in.
    return rules.flatMap((rule) => (rule.from && rule.from.length > 0 ? rule.from : [...EVERY_NAMESPACE]))
  }
  return {
    namespace: objects.namespace,
    addCapabilities: container.securityContext?.capabilities?.add ?? [],
    externalDnsWebhook: {enabled: objects.operatorConfig?.spec?.external_dns_webhook?.enabled ?? true, port: webhookPort, allowedFrom: peersOf(webhookPort)},
    metrics: {secure: (container.args ?? []).includes('--metrics-secure'), port: portOf('metrics') ?? 8080},
    ...(objects.namespaceObject ? {namespaceEnforces: enforcedLevel(objects.namespaceObject.metadata?.labels)} : {}),
  }
}
