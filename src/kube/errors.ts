import {KubeApiError, KubeConnectionError} from './client.js'
import {KubeConfigError} from './light-kubeconfig.js'

/**
 * One line a person can act on, for any error talking to a cluster. `what` names the action
 * ("install CustomResourceDefinitions") for 403 messages.
 */
export function describeKubeError(error: unknown, what = 'do this'): string {
  if (error instanceof KubeConfigError) return error.message
  if (error instanceof KubeConnectionError) {
    const hint = tlsCodes.has(error.code)
      ? 'the server certificate is not trusted: check certificate-authority in the kubeconfig'
      : 'check that the cluster is running and that the kubeconfig points at the right server'
    return `Cannot reach the Kubernetes API server at ${error.server} (${error.code}): ${hint}.`
  }
  if (error instanceof KubeApiError) {
    switch (error.status) {
      case 401:
        return 'The Kubernetes API server rejected the credentials (401 Unauthorized): refresh the token or client certificate in your kubeconfig.'
      case 403:
        return `Forbidden (403): your identity may not ${what}. Use a kubeconfig with cluster-admin rights or ask an administrator. Server said: ${error.message}`
      case 422:
        return `The Kubernetes API server rejected the object (422 Invalid): ${error.message}`
      default:
        return `The Kubernetes API server answered ${error.status}${error.reason ? ` ${error.reason}` : ''}: ${error.message}`
    }
  }
  return error instanceof Error ? error.message : String(error)
}

const tlsCodes = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
])
