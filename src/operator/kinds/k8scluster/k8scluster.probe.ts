/** The probe of a K8sCluster's API server with the CR's own credentials. Only codes and statuses come out. */
import https from 'node:https'
import {isTlsCode, type ProbeOutcome, type ProbeTarget} from './k8scluster.mapping.js'

const PROBE_TIMEOUT_MS = 10_000

/** One GET with the target's CA and credentials; the status and body, or the error code. */
function get(target: ProbeTarget, path: string, signal: AbortSignal): Promise<{status: number; body: string}> {
  return new Promise((resolve, reject) => {
    const request = https.request(new URL(path, target.server), {
      method: 'GET',
      agent: false,
      ca: target.ca,
      cert: target.cert,
      key: target.key,
      headers: {Accept: 'application/json', ...(target.token ? {Authorization: `Bearer ${target.token}`} : {})},
      timeout: PROBE_TIMEOUT_MS,
      signal,
    }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8')}))
      response.on('error', reject)
    })
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), {code: 'ETIMEDOUT'})))
    request.on('error', reject)
    request.end()
  })
}

/** `GET /version`, then the authenticated `GET /api`. Only codes and statuses come out, never a message. */
export async function probeApiServer(target: ProbeTarget, signal: AbortSignal): Promise<ProbeOutcome> {
  try {
    const version = await get(target, '/version', signal)
    if (version.status !== 200) return {kind: 'http', status: version.status, path: '/version'}
    const api = await get(target, '/api', signal)
    if (api.status !== 200) return {kind: 'http', status: api.status, path: '/api'}
    let gitVersion = 'unknown'
    try {
      gitVersion = String((JSON.parse(version.body) as {gitVersion?: unknown}).gitVersion ?? 'unknown')
    } catch {
      // a /version that is not JSON: still an API server that accepted the credentials
    }
    return {kind: 'ok', version: gitVersion}
  } catch (error) {
    if (signal.aborted) throw error
    const code = String((error as NodeJS.ErrnoException).code ?? 'ECONNFAILED')
    return isTlsCode(code) ? {kind: 'tls', code} : {kind: 'network', code}
  }
}
