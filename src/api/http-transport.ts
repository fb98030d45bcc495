/**
 * The API client's default transport: the shape of `fetch` that PolycrateApiClient calls (and tests inject), over
 * node:http(s) with keep-alive agents, as the kube client does. Global fetch (undici) costs about three times the CPU
 * per call (bench/api-transport.ts: 0.78–0.91 ms against 0.28–0.30 ms), and an API call is on every endpoint's path.
 *
 * What it keeps of fetch, because the client relies on it: when the signal aborts, the promise rejects with the
 * signal's reason (the per-attempt timeout's TimeoutError, a cancel's AbortError); a network failure rejects with
 * the system error and its `code` (ECONNREFUSED, ECONNRESET, ENOTFOUND, …; a connection that ends mid-answer is
 * ECONNRESET); redirects are followed (at most 20; a 303, and a 301/302 after a POST, become a GET without a body; the
 * Authorization header is not sent to another origin). The answer's body is read whole before the promise resolves.
 */
import http, {type IncomingMessage} from 'node:http'
import https from 'node:https'
import {readBody} from '../lib/http-body.js'

export interface TransportInit {
  method: string
  headers: Record<string, string>
  body?: string
  signal?: AbortSignal
}

export interface TransportResponse {
  status: number
  headers: Headers
  text(): Promise<string>
}

/** What the API client sends its requests with; `fetch` fits it. */
export type Transport = (url: string | URL, init: TransportInit) => Promise<TransportResponse>

// Idle sockets close after 4 s (or the server's Keep-Alive hint, if shorter): before a Node server's 5 s, so the
// client does not reuse a socket the server is closing.
const agents = {
  'http:': new http.Agent({keepAlive: true, timeout: 4000}),
  'https:': new https.Agent({keepAlive: true, timeout: 4000}),
}

const MAX_REDIRECTS = 20

export const httpTransport: Transport = async (url, init) => {
  let current = new URL(url)
  let {method, body} = init
  const headers = {...init.headers}
  for (let redirects = 0; ; redirects++) {
    const answer = await send(current, method, headers, body, init.signal)
    const location = answer.headers.get('location')
    if (![301, 302, 303, 307, 308].includes(answer.status) || !location) return answer
    if (redirects === MAX_REDIRECTS) throw Object.assign(new Error(`more than ${MAX_REDIRECTS} redirects`), {code: 'ERR_TOO_MANY_REDIRECTS'})
    const next = new URL(location, current)
    if (next.origin !== current.origin) delete headers.authorization
    if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
      method = 'GET'
      body = undefined
      delete headers['content-type']
    }
    current = next
  }
}

function send(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal | undefined): Promise<TransportResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const agent = agents[url.protocol as keyof typeof agents]
    if (!agent) {
      reject(new TypeError(`unsupported protocol ${url.protocol}`))
      return
    }
    let settled = false
    const finish = (outcome: () => void) => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', onAbort)
      outcome()
    }
    const fail = (error: unknown) => finish(() => {
      request.destroy()
      reject(error)
    })
    const onAbort = () => fail(signal!.reason)
    signal?.addEventListener('abort', onAbort, {once: true})
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method,
      agent,
      headers: body === undefined ? headers : {...headers, 'content-length': String(Buffer.byteLength(body))},
    }, (response: IncomingMessage) => {
      readBody(response).then((text) => finish(() => {
        try {
          resolve({status: response.statusCode ?? 0, headers: headersOf(response), text: () => Promise.resolve(text)})
        } catch (error) {
          reject(error)
        }
      }), fail)
    })
    request.on('error', fail)
    request.end(body)
  })
}

function headersOf(response: IncomingMessage): Headers {
  const headers = new Headers()
  for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) headers.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!)
  return headers
}
