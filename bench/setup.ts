/** Shared set-up for benchmarks: CRDs and namespaces on a fresh control plane. */
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import type {KubeClient} from '../src/kube/client.js'
import {installCrds} from '../src/kube/crd-install.js'

export async function ensureCrdsWith(client: KubeClient): Promise<void> {
  await installCrds(client, customResourceDefinitions(allCrds))
}

export async function namespaceNamed(client: KubeClient, name: string): Promise<string> {
  await client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  return name
}
