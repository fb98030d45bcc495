import {readFileSync} from 'node:fs'
import {KubeConfig} from '@kubernetes/client-node'
import yaml from 'js-yaml'
import {emptyKubeconfigMessage, KubeConfigError, kubeConfigSource, type KubeConfigOptions} from './light-kubeconfig.js'

// Declared beside the client-node-free reader of the CLI's fast path, which throws the same errors.
export {KubeConfigError, type KubeConfigOptions}

export interface LoadedKubeConfig {
  kubeConfig: KubeConfig
  /** Where it came from, for messages: a file path, `$KUBECONFIG (…)` or `in-cluster service account`. */
  source: string
  server: string
}

/**
 * Loads the kubeconfig in client-go's order (kubeConfigSource): `--kubeconfig`; then `$KUBECONFIG` (a list, merged
 * like kubectl); then, in a Pod, the in-cluster service account; then `~/.kube/config`.
 */
export function loadKubeConfig(options: KubeConfigOptions = {}): LoadedKubeConfig {
  const kubeConfig = new KubeConfig()
  const where = kubeConfigSource(options)
  if (where.inCluster) {
    kubeConfig.loadFromCluster(options.rootPrefix)
  } else {
    loadFile(kubeConfig, where.files[0]!)
    for (const file of where.files.slice(1)) {
      const other = new KubeConfig()
      loadFile(other, file)
      kubeConfig.mergeConfig(other)
    }
  }
  const {source} = where

  if (options.context) {
    if (!kubeConfig.getContextObject(options.context)) {
      const known = kubeConfig.getContexts().map((c) => c.name)
      throw new KubeConfigError(
        `Context "${options.context}" is not in ${source}; available: ${known.length > 0 ? known.join(', ') : 'none'}.`,
      )
    }
    kubeConfig.setCurrentContext(options.context)
  }
  const cluster = kubeConfig.getCurrentCluster()
  if (!cluster) {
    throw new KubeConfigError(
      `The kubeconfig ${source} has no current context with a cluster: set one with --context or \`kubectl config use-context\`.`,
    )
  }
  return {kubeConfig, source, server: cluster.server}
}

function loadFile(kubeConfig: KubeConfig, file: string): void {
  let empty = false
  try {
    const document = yaml.load(readFileSync(file, 'utf8'))
    empty = document === null || document === undefined
  } catch {
    // unreadable or not YAML: client-node's own message below says which
  }
  if (empty) throw new KubeConfigError(emptyKubeconfigMessage(file))
  try {
    kubeConfig.loadFromFile(file)
  } catch (error) {
    throw new KubeConfigError(`Cannot read kubeconfig ${file}: ${(error as Error).message}`)
  }
}
