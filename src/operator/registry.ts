/**
 * What the operator runs: the kinds (each `kinds/<kind>/index.ts` lists its own features) and the features of the
 * engines that are no kind (API sync, cloud, DNS webhooks, monitoring), in the order the OperatorConfig status shows
 * them. Adding a kind is one line here.
 */
import type {ApiSession} from './agent/api-session.js'
import {createApiSyncFeature} from './agent/api-sync-feature.js'
import {CloudNodeController} from './cloud/cloud-node-feature.js'
import {ServiceLoadBalancerController} from './cloud/service-load-balancer-feature.js'
import type {OperatorConfig} from './config/operator-config.js'
import {Dns01Webhook} from './dns/dns01-webhook.js'
import {ExternalDnsWebhook} from './dns/external-dns-webhook.js'
import * as artifact from './kinds/artifact/index.js'
import * as backup from './kinds/backup/index.js'
import * as certificate from './kinds/certificate/index.js'
import * as endpoint from './kinds/endpoint/index.js'
import * as host from './kinds/host/index.js'
import * as k8sapp from './kinds/k8sapp/index.js'
import * as k8scluster from './kinds/k8scluster/index.js'
import * as k8svolume from './kinds/k8svolume/index.js'
import * as s3bucket from './kinds/s3bucket/index.js'
import {createMonitoringFeature} from './monitoring/monitoring-feature.js'
import type {Feature} from './runtime/feature.js'

/** A part of the operator: a kind's `index.ts`, or one of the engine features below. */
interface Part {
  features(session: ApiSession): readonly Feature<OperatorConfig>[]
}

const apiSync: Part = {features: (session) => [createApiSyncFeature(session)]}
const cloud: Part = {features: (session) => [CloudNodeController(session), ServiceLoadBalancerController(session)]}
const dnsWebhooks: Part = {features: (session) => [ExternalDnsWebhook(session), Dns01Webhook(session)]}
const monitoring: Part = {features: (session) => [createMonitoringFeature(session)]}

/** In the order of the OperatorConfig status. */
const parts: readonly Part[] = [
  apiSync,
  endpoint,
  host,
  k8svolume,
  backup,
  certificate,
  cloud,
  k8scluster,
  s3bucket,
  dnsWebhooks,
  monitoring,
  k8sapp,
  artifact,
]

/** Every feature the operator runs, in the order they appear in the OperatorConfig status. */
export function defaultFeatures(session: ApiSession): readonly Feature<OperatorConfig>[] {
  return parts.flatMap((part) => part.features(session))
}
