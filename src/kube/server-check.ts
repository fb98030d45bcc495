/**
 * Is the server of the kubeconfig a Kubernetes API server? It answers `/version` with its major, minor and
 * gitVersion; a web server, a proxy's login page or another API does not. Commands ask before they read lists, so
 * that "the CRDs are not installed" is never said of something that is not a cluster at all.
 */
import {KubeApiError, KubeConnectionError, type KubeClient} from './client.js'

/** The kubeconfig's server is not a Kubernetes API server. */
export class NotKubernetesError extends Error {
  override name = 'NotKubernetesError'
}

export interface KubernetesVersion {
  major: string
  minor: string
  gitVersion: string
}

/** Why an answer to `/version` is not a Kubernetes API server's (pure); undefined when it is one. */
export function versionAnswerProblem(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return `it answered ${body === undefined ? 'nothing' : Array.isArray(body) ? 'a list' : typeof body}`
  const version = body as Partial<Record<keyof KubernetesVersion, unknown>>
  const missing = (['major', 'minor', 'gitVersion'] as const).filter((key) => typeof version[key] !== 'string')
  return missing.length === 0 ? undefined : `its answer has no ${missing.join(', ')}`
}

/** The message for a server that is not Kubernetes (pure). */
export function notKubernetesMessage(server: string, why: string): string {
  return `The server at ${server} does not answer /version like a Kubernetes API server (${why}): check the server of the kubeconfig's context `
    + '(`kubectl config view --minify`), or pick another one with --kubeconfig / --context.'
}

/** Asks `/version`; throws NotKubernetesError when the answer is not Kubernetes'. Connection errors pass through. */
export async function assertKubernetes(client: Pick<KubeClient, 'request'>, server: string): Promise<KubernetesVersion> {
  let body: unknown
  try {
    body = await client.request({path: '/version', timeoutMs: 15_000})
  } catch (error) {
    if (error instanceof KubeConnectionError) throw error
    // 401/403: a Kubernetes API server that does not let this identity in (anonymous /version may be off).
    if (error instanceof KubeApiError && (error.status === 401 || error.status === 403)) throw error
    // A Kubernetes Status has a reason; anything else (an HTML page) is not repeated.
    const why = error instanceof KubeApiError ? `it answered HTTP ${error.status}${error.reason ? ` ${error.reason}` : ''}` : error instanceof SyntaxError ? 'its answer is not JSON' : (error as Error).message
    throw new NotKubernetesError(notKubernetesMessage(server, why))
  }
  const problem = versionAnswerProblem(body)
  if (problem) throw new NotKubernetesError(notKubernetesMessage(server, problem))
  return body as KubernetesVersion
}
