import {existsSync} from 'node:fs'
import {homedir} from 'node:os'
import path from 'node:path'
import {KubeConfig} from '@kubernetes/client-node'
import {KubeConfigError, SERVICE_ACCOUNT_DIR, type KubeConfigOptions} from './light-kubeconfig.js'

// Declared beside the client-node-free reader of the CLI's fast path, which throws the same errors.
export {KubeConfigError, type KubeConfigOptions}

export interface LoadedKubeConfig {
  kubeConfig: KubeConfig
  /** Where it came from, for messages: a file path, `$KUBECONFIG (…)` or `in-cluster service account`. */
  source: string
  server: string
}

/**
 * Loads the kubeconfig the way the operator documents it: `--kubeconfig`; inside a pod with no flag, the
 * in-cluster service account; then `$KUBECONFIG` (a list, merged like kubectl); then `~/.kube/config`.
 */
export function loadKubeConfig(options: KubeConfigOptions = {}): LoadedKubeConfig {
  const env = options.env ?? process.env
  const kubeConfig = new KubeConfig()
  let source: string

  if (options.kubeconfig) {
    const file = path.resolve(options.kubeconfig)
    if (!existsSync(file)) throw new KubeConfigError(`Kubeconfig ${file} does not exist: check the --kubeconfig path.`)
    loadFile(kubeConfig, file)
    source = file
  } else if (env.KUBERNETES_SERVICE_HOST && existsSync(`${options.rootPrefix ?? ''}${SERVICE_ACCOUNT_DIR}/token`)) {
    kubeConfig.loadFromCluster(options.rootPrefix)
    source = 'in-cluster service account'
  } else if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(path.delimiter).filter((file) => file.length > 0)
    const present = files.filter((file) => existsSync(file))
    if (present.length === 0) {
      throw new KubeConfigError(
        `No kubeconfig found: $KUBECONFIG names ${files.join(', ')}, which do(es) not exist. Fix $KUBECONFIG or pass --kubeconfig.`,
      )
    }
    loadFile(kubeConfig, present[0]!)
    for (const file of present.slice(1)) {
      const other = new KubeConfig()
      loadFile(other, file)
      kubeConfig.mergeConfig(other)
    }
    source = `$KUBECONFIG (${present.join(path.delimiter)})`
  } else {
    const file = path.join(options.home ?? homedir(), '.kube', 'config')
    if (!existsSync(file)) {
      throw new KubeConfigError(
        `No kubeconfig found: pass --kubeconfig <file>, set $KUBECONFIG, or create ${file}.`,
      )
    }
    loadFile(kubeConfig, file)
    source = file
  }

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
  try {
    kubeConfig.loadFromFile(file)
  } catch (error) {
    throw new KubeConfigError(`Cannot read kubeconfig ${file}: ${(error as Error).message}`)
  }
}
