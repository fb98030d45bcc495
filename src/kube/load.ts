/**
 * The kubeconfig for a long-running process: the light reader (light-kubeconfig.ts) where it reads the kubeconfig
 * exactly as client-node does — files with tokens or certificates, and the in-cluster service account — and
 * client-node's KubeConfig, loaded only then, for the rest (exec and auth-provider plugins, proxies, …). Importing
 * client-node costs the operator about 75 MiB of memory it otherwise never uses.
 */
import type {KubeAuth} from './client.js'
import {loadLightKubeConfig, type KubeConfigOptions} from './light-kubeconfig.js'

export interface LoadedKube {
  kubeConfig: KubeAuth
  /** Where it came from, for messages: a file path, `$KUBECONFIG (…)` or `in-cluster service account`. */
  source: string
  server: string
}

export async function loadKube(options: KubeConfigOptions = {}): Promise<LoadedKube> {
  const light = loadLightKubeConfig(options)
  if (!('unsupported' in light)) return light
  const {loadKubeConfig} = await import('./kubeconfig.js')
  return loadKubeConfig(options)
}
