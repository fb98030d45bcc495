/**
 * K8sCluster registration, the pure part: which
 * credentials a CR names and how to reach its API server, what a probe's outcome means for the person who wrote
 * the CR (phase `Ready` / `Unreachable` / `Unauthorized` / `Error` and a reason that says what to fix), which CR
 * claims the workspace's one cluster slot, and the API body. Credentials go into the probe target only: no message
 * built here contains them.
 */
import {X509Certificate} from 'node:crypto'
import {currentIdentity} from '../../../kube/light-kubeconfig.js'
import type {K8sClusterSpec} from '../../../crds/k8scluster.js'

export type ClusterPhase = 'Ready' | 'Unreachable' | 'Unauthorized' | 'Error'

/** How to reach and authenticate against an API server. Holds credentials: never log it. */
export interface ProbeTarget {
  server: string
  ca?: string
  token?: string
  cert?: string
  key?: string
}

export interface Problem {
  reason: string
  message: string
}

/** The Secret a CR's authentication names, and the key. */
export function credentialsRef(spec: K8sClusterSpec): {kind: 'token' | 'kubeconfig'; name: string; key: string} | undefined {
  const token = spec.authentication?.serviceAccountToken?.secretRef
  if (token) return {kind: 'token', name: token.name, key: token.key}
  const kubeconfig = spec.authentication?.kubeconfig?.secretRef
  if (kubeconfig) return {kind: 'kubeconfig', name: kubeconfig.name, key: kubeconfig.key}
  return undefined
}

/**
 * The probe target of a CR (pure), from its spec and the decoded data of the Secret it names (`undefined`: the
 * Secret does not exist); or the problem a person has to fix first.
 */
export function probeTarget(spec: K8sClusterSpec, namespace: string, secretData: Record<string, string> | undefined): ProbeTarget | Problem {
  const ref = credentialsRef(spec)
  if (!ref) {
    return {reason: 'NoCredentials', message: 'spec.authentication names no credentials: set serviceAccountToken.secretRef or kubeconfig.secretRef.'}
  }
  const where = `Secret ${namespace}/${ref.name}`
  if (secretData === undefined) return {reason: 'CredentialsSecretMissing', message: `${where} does not exist: create it with the ${ref.kind} under the key ${JSON.stringify(ref.key)}.`}
  const value = secretData[ref.key]
  if (value === undefined || value.trim() === '') {
    return {reason: 'CredentialsKeyMissing', message: `${where} has no key ${JSON.stringify(ref.key)} (or it is empty): put the ${ref.kind} there, or fix the key in spec.authentication.`}
  }
  let target: ProbeTarget
  if (ref.kind === 'token') {
    target = {server: spec.apiServer ?? '', token: value.trim()}
  } else {
    const fromKubeconfig = kubeconfigTarget(value)
    if ('reason' in fromKubeconfig) return {reason: fromKubeconfig.reason, message: `${where}, key ${JSON.stringify(ref.key)}: ${fromKubeconfig.message}`}
    target = {...fromKubeconfig, server: spec.apiServer || fromKubeconfig.server}
  }
  if (spec.caCertificate) target.ca = spec.caCertificate
  if (!target.server) return {reason: 'NoAPIServer', message: 'spec.apiServer is empty: set the URL of the API server, e.g. https://api.example.com:6443.'}
  let url: URL
  try {
    url = new URL(target.server)
  } catch {
    return {reason: 'InvalidAPIServer', message: `spec.apiServer ${JSON.stringify(target.server)} is not a URL: write it as https://host:port.`}
  }
  if (url.protocol !== 'https:') return {reason: 'InvalidAPIServer', message: `spec.apiServer ${JSON.stringify(target.server)} is not https: the operator only talks to API servers over TLS.`}
  if (target.ca !== undefined) {
    try {
      new X509Certificate(target.ca)
    } catch {
      return spec.caCertificate
        ? {reason: 'InvalidCACertificate', message: 'spec.caCertificate is not a PEM certificate: paste the cluster CA (-----BEGIN CERTIFICATE----- …).'}
        : {reason: 'InvalidCACertificate', message: `The certificate-authority-data of the kubeconfig in ${where} is not a PEM certificate: fix it, or set spec.caCertificate.`}
    }
  }
  return target
}

/**
 * Server, CA and credentials of a kubeconfig's current context; users with an embedded token or client certificate
 * only. Files it names are never read: they would be the operator's own files (its service account token, say).
 */
function kubeconfigTarget(text: string): ProbeTarget | Problem {
  let identity: ReturnType<typeof currentIdentity>
  try {
    identity = currentIdentity(text, 'from the Secret')
  } catch {
    return {reason: 'InvalidKubeconfig', message: 'it is not a kubeconfig (YAML with clusters, users and contexts).'}
  }
  if ('unsupported' in identity) {
    return /current context/.test(identity.unsupported)
      ? {reason: 'InvalidKubeconfig', message: 'its current context names no cluster or no user: set current-context.'}
      : {reason: 'UnsupportedKubeconfig', message: unsupportedUser}
  }
  const {cluster, user} = identity
  const decode = (data: string | undefined) => (data ? Buffer.from(data, 'base64').toString('utf8') : undefined)
  const target: ProbeTarget = {server: cluster.server, ca: decode(cluster.caData)}
  if (user.token) target.token = user.token
  else if (user.certData && user.keyData) {
    target.cert = decode(user.certData)
    target.key = decode(user.keyData)
  } else {
    return {reason: 'UnsupportedKubeconfig', message: unsupportedUser}
  }
  return target
}

const unsupportedUser = 'its user has neither a token nor client-certificate-data and client-key-data (exec plugins and files are not supported): use a token or embedded certificates.'

/** What a probe saw: the version, an HTTP status, a TLS failure or a network failure (codes only, no text). */
export type ProbeOutcome =
  | {kind: 'ok'; version: string}
  | {kind: 'http'; status: number; path: string}
  | {kind: 'tls'; code: string}
  | {kind: 'network'; code: string}

/** Error codes of a TLS handshake that failed verification (Node/OpenSSL). */
export function isTlsCode(code: string): boolean {
  return /CERT|SIGNATURE|ISSUER|SELF_SIGNED|^ERR_TLS|^ERR_SSL|^EPROTO$/.test(code)
}

/** The phase, reason and message of a probe outcome (pure). */
export function probeResult(outcome: ProbeOutcome, server: string, credentials: string): {phase: ClusterPhase; reachable: boolean; reason: string; message: string} {
  switch (outcome.kind) {
    case 'ok':
      return {phase: 'Ready', reachable: true, reason: 'Reachable', message: `The API server at ${server} answered (Kubernetes ${outcome.version}) and accepted the credentials.`}
    case 'http':
      if (outcome.status === 401) {
        return {phase: 'Unauthorized', reachable: true, reason: 'CredentialsRejected', message: `The API server at ${server} rejected the credentials from ${credentials} (401): put a valid token or kubeconfig there; it is picked up without a restart.`}
      }
      if (outcome.status === 403) {
        return {phase: 'Unauthorized', reachable: true, reason: 'Forbidden', message: `The API server at ${server} accepted the credentials from ${credentials} but refused GET ${outcome.path} (403): bind the identity to the system:discovery role.`}
      }
      return {phase: 'Error', reachable: true, reason: 'APIServerError', message: `The API server at ${server} answered ${outcome.status} to GET ${outcome.path}: check that spec.apiServer is a Kubernetes API server and that it is healthy.`}
    case 'tls':
      return {phase: 'Error', reachable: false, reason: 'TLSVerificationFailed', message: outcome.code === 'ERR_TLS_CERT_ALTNAME_INVALID'
        ? `The API server's certificate does not name the host of ${server} (${outcome.code}): use a host name the certificate was issued for in spec.apiServer.`
        : `The API server's certificate at ${server} could not be verified with spec.caCertificate (${outcome.code}): set spec.caCertificate to the CA that signed the API server's certificate.`}
    case 'network':
      return {phase: 'Unreachable', reachable: false, reason: 'Unreachable', message: `Cannot reach the API server at ${server} (${outcome.code}): check spec.apiServer and that the operator's network can reach it.`}
  }
}

export interface ClusterClaim {
  key: string
  creationTimestamp?: string
  deleting?: boolean
  /** Holds the API cluster already (status.apiID and condition Registered). */
  registered?: boolean
  /** Its last probe was Ready. */
  ready?: boolean
  /** Never probed yet (no status phase): whether it will answer is not known. */
  unprobed?: boolean
}

/**
 * The CR that holds the workspace's one cluster slot (pure): the registered one; while none is, the oldest whose
 * API server answered (a CR with a typo or missing credentials never takes the slot); CRs being deleted never. An
 * older CR not probed yet comes first if it answers: until its probe says, nobody younger takes the slot (two CRs
 * first reconciled at once, by a process that started after both were made, would each take the other for not Ready
 * and both claim it).
 */
export function slotHolder(claims: readonly ClusterClaim[]): string | undefined {
  const byAge = (list: ClusterClaim[]) =>
    list.sort((a, b) => (a.creationTimestamp ?? '').localeCompare(b.creationTimestamp ?? '') || a.key.localeCompare(b.key))
  const live = claims.filter((claim) => !claim.deleting)
  const registered = byAge(live.filter((claim) => claim.registered))[0]
  if (registered) return registered.key
  const first = byAge(live.filter((claim) => claim.ready || claim.unprobed))[0]
  return first?.ready ? first.key : undefined
}

/** The fields of the API cluster the CR sets, on create and adopt alike (pure): display name, description, version. */
export function clusterPayload(name: string, spec: K8sClusterSpec, kubernetesVersion: string | undefined): {display_name: string; description: string; kubernetes_version?: string} {
  return {
    display_name: spec.displayName ?? name,
    description: spec.description ?? '',
    ...(kubernetesVersion ? {kubernetes_version: kubernetesVersion} : {}),
  }
}
