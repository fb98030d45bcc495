/** An operator namespace wired to a simulator workspace: token Secret + OperatorConfig with api_sync on. */
import type {KubeClient} from '../../src/kube/client.js'
import type {ApiSimulator} from './api-simulator/index.js'
import {freshNamespace} from './cluster.js'

export async function operatorNamespaceFor(client: KubeClient, sim: ApiSimulator, spec: Record<string, unknown> = {}): Promise<{namespace: string; token: string; workspaceId: string}> {
  const organization = sim.createOrganization(`org-${Math.random().toString(36).slice(2, 8)}`)
  const workspace = sim.createWorkspace({name: `ws-${Math.random().toString(36).slice(2, 8)}`, organizationId: organization.id})
  const token = sim.issueToken({kind: 'agent', workspaceId: workspace.id})
  const namespace = await freshNamespace(client, 'op')
  await client.create({group: '', version: 'v1', plural: 'secrets', namespace}, {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'polycrate-api-token', namespace}, stringData: {token}})
  await client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace}, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace},
    spec: {api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 2}, local_cluster: {enabled: true, cluster_name: `cluster-${namespace}`}, ...spec},
  })
  return {namespace, token, workspaceId: workspace.id}
}

/** `count` Ingresses with one host each, opted in; created with bounded concurrency. */
export async function createIngresses(client: KubeClient, namespace: string, count: number, prefix = 'app'): Promise<string[]> {
  const hosts: string[] = []
  const queue = Array.from({length: count}, (_, i) => i)
  await Promise.all(Array.from({length: 16}, async () => {
    for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
      const host = `${prefix}-${i}.example.com`
      hosts.push(host)
      await client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace}, {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
        metadata: {name: `${prefix}-${i}`, namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
        spec: {rules: [{host, http: {paths: [{path: '/', pathType: 'Prefix', backend: {service: {name: 'svc', port: {number: 80}}}}]}}]},
      })
    }
  }))
  return hosts
}
