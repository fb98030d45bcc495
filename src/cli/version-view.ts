/**
 * `polycrate version`: the document it prints (--json / -o json|yaml) and its text. The client's part needs nothing;
 * the cluster's comes from readOperatorInstances (src/operator/install/replicas.ts), the API's from
 * `GET /api/v1/system/status/` and, for a platform admin, the desired operator version of the SystemConfig.
 */
import {Chalk} from 'chalk'
import {ApiAuthError, ApiError, ApiNetworkError} from '../api/errors.js'
import type {OperatorInstance} from '../operator/install/replicas.js'
import {OPERATOR_POD_SELECTOR} from '../operator/install/replicas.js'
import {shortAge} from '../lib/age.js'
import {renderTable} from './table.js'

export interface ClientVersion {
  version: string
  node: string
  platform: string
  arch: string
}

export type ClusterVersion =
  | {server: string; kubernetesVersion: string | null; operators: OperatorInstance[]}
  | {server: string | null; error: string}

export type ApiVersion =
  | {
    url: string
    /** What `/api/v1/system/status/` says (`version`, else `api_version`); null when it says none. */
    version: string | null
    /** SystemConfig OPERATOR_BLOCK_VERSION; null when unset or not readable with this token (platform admins only). */
    desiredOperatorVersion: string | null
  }
  | {url: string; error: string}

export interface VersionReport {
  client: ClientVersion
  /** Absent with --client. */
  cluster?: ClusterVersion
  /** Absent without --api-url / --token. */
  api?: ApiVersion
}

export function clientVersion(version: string, process_: Pick<NodeJS.Process, 'version' | 'platform' | 'arch'> = process): ClientVersion {
  return {version, node: process_.version, platform: process_.platform, arch: process_.arch}
}

/** The version the API reports in its status body: `version`, else `api_version`, else null. */
export function apiVersionOf(status: {version?: string | null; api_version?: string | null}): string | null {
  return status.version || status.api_version || null
}

const LABEL_WIDTH = 10
const label = (text: string) => `${text}:`.padEnd(LABEL_WIDTH)
const indent = ' '.repeat(LABEL_WIDTH)

/** One namespace's operator: a summary line (Deployment, leader) and a table of its Pods. */
function renderInstance(instance: OperatorInstance, options: {now: number; paint: InstanceType<typeof Chalk>}): string[] {
  const {now, paint} = options
  const parts: string[] = []
  const deployment = instance.deployment
  if (deployment) {
    const ready = `${deployment.ready}/${deployment.desired} ready`
    parts.push(`Deployment ${deployment.name} ${deployment.ready === deployment.desired && deployment.desired > 0 ? paint.green(ready) : paint.yellow(ready)}`)
  } else parts.push('no Deployment polycrate-operator')
  const leader = instance.leader
  if (!leader) parts.push('no leader (no Lease holder)')
  else {
    const renewed = leader.renewTime ? `renewed ${shortAge(leader.renewTime, now)} ago` : 'never renewed'
    const who = leader.pod ?? `${leader.holder} (not a Pod of this namespace: an operator run outside the cluster?)`
    parts.push(leader.fresh ? `leader ${who}, ${renewed}` : paint.yellow(`leader lease of ${who} expired: ${renewed}`))
  }
  const lines = [`${label('Operator')}namespace ${instance.namespace}: ${parts.join(', ')}`]
  if (instance.reportedVersion) lines.push(`${indent}the leader reported version ${instance.reportedVersion} to the Polycrate API`)
  if (instance.replicas.length > 0) {
    const table = renderTable(
      ['POD', 'VERSION', 'READY', 'RESTARTS', 'AGE', 'LEADER', 'IMAGE'],
      instance.replicas.map((replica) => [
        replica.pod,
        replica.version ?? '<none>',
        replica.ready ? 'true' : paint.yellow(`false (${replica.phase})`),
        String(replica.restarts),
        shortAge(replica.createdAt, now),
        replica.leader ? paint.green('yes') : '',
        replica.image,
      ]),
    )
    lines.push(...table.split('\n').map((line) => `${indent}${line}`))
  }
  return lines
}

/** The text of `polycrate version`. */
export function renderVersion(report: VersionReport, options: {now: number; colour: boolean}): string {
  const paint = new Chalk({level: options.colour ? 1 : 0})
  const {client, cluster, api} = report
  const lines = [`${label('Client')}polycrate ${client.version} (Node ${client.node}, ${client.platform}/${client.arch})`]
  if (cluster) {
    if ('error' in cluster) lines.push(`${label('Cluster')}${paint.red(cluster.error)}`)
    else {
      lines.push(`${label('Cluster')}${cluster.server}${cluster.kubernetesVersion ? ` (Kubernetes ${cluster.kubernetesVersion})` : ''}`)
      if (cluster.operators.length === 0) {
        lines.push(`${label('Operator')}not running in this cluster (no Pod labelled ${OPERATOR_POD_SELECTOR}, no leader Lease)`)
      }
      for (const instance of cluster.operators) lines.push(...renderInstance(instance, {now: options.now, paint}))
    }
  }
  if (api) {
    if ('error' in api) lines.push(`${label('API')}${api.url}: ${paint.red(api.error)}`)
    else {
      const wanted = api.desiredOperatorVersion ? `; operator version wanted (OPERATOR_BLOCK_VERSION): ${api.desiredOperatorVersion}` : ''
      lines.push(`${label('API')}${api.url}, version ${api.version ?? '<not reported>'}${wanted}`)
    }
  }
  return lines.join('\n')
}

/** One line for a failed call to the Polycrate API (never the token). */
export function apiErrorMessage(error: unknown, apiUrl: string): string {
  if (error instanceof ApiAuthError) {
    return error.forbidden ? 'the token may not read /api/v1/system/status/ (403)' : 'the Polycrate API rejected the token (401): check --token / POLYCRATE_API_TOKEN'
  }
  if (error instanceof ApiNetworkError) return `cannot reach the Polycrate API at ${apiUrl} (${error.detail || error.cause}): check --api-url / POLYCRATE_API_URL`
  if (error instanceof ApiError) return error.message
  return error instanceof Error ? error.message : String(error)
}
