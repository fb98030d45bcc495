/**
 * Host sync (`HostController`): every Host CR → a host in the Polycrate API (`/api/v1/hosts/`) with the cluster's
 * id, as a declaration on the generic sync feature. Hosts are looked up for adopt-or-create by name in the
 * workspace (the hosts list has no cluster filter; the API keeps one cluster per workspace).
 */
import type {Host, HostRequest} from '../../../api/index.js'
import {hostCrd, type HostSpec} from '../../../crds/host.js'
import type {ApiSession} from '../../agent/api-session.js'
import {finalizers} from '../../conventions.js'
import type {Feature} from '../../runtime/feature.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {hostPayload} from './host.payload.js'
import {defineSync} from '../../sync/engine.js'

export function HostController(session: ApiSession): Feature<OperatorConfig> {
  return defineSync<HostSpec, HostRequest, Host>(session, {
    name: 'host-sync',
    crd: hostCrd,
    finalizer: finalizers.hostSync,
    noun: 'host',
    api: (client) => client.hosts,
    requiresCluster: true,
    payload: (object, {identity}) => hostPayload(object.spec, identity.clusterId!),
    lookup: (body, identity) => ({name_exact: body.name, workspaces: identity.workspaceId}),
    inventory: (identity) => ({workspaces: identity.workspaceId}),
  })
}
