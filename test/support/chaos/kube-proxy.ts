/**
 * A fault proxy between the operator and kube-apiserver (test support for the fault campaign, `scripts/chaos.ts`).
 *
 * The operator gets a kubeconfig whose server is `http://127.0.0.1:<port>` (plain HTTP towards the proxy); the proxy
 * forwards every request over HTTPS to the real apiserver with the admin token (whatever the operator sent).
 *
 * Writes are counted per write point: the controller (the operator's User-Agent names the controller of a reconcile's
 * requests), the verb and the resource (`group/plural`, `core/plural` for the core group).
 *
 * Faults (all armed through `ProxyFaults`, decided by the pure functions below):
 * - **crash after write k**: when the k-th *successful* write (POST/PUT/PATCH/DELETE answered < 400) of a write point has
 *   been answered by the apiserver, `onCrash` is called (the campaign SIGKILLs the operator there) *before* the answer
 *   is forwarded: the write took effect, the operator never learns it did.
 * - **hold** a watch's events for T ms (each event line is delivered T ms after it arrived, order kept).
 * - **close** a resource's open watches and answer that resource's next watch with 410 Gone, so the informer relists
 *   and every change in between coalesces into the list.
 * - **stale LIST** ("time travel"): the first full LIST of each resource (path + selectors) is kept; when armed, the
 *   relist of the informer whose watch the proxy answered 410 is answered with that older body once, then the proxy
 *   catches up (forwards again). Only a relist: a new informer's first list is a consistent read, which no apiserver
 *   answers from the past; an informer that had a watch has seen newer and must not go back.
 * - **fail** chosen requests: 409, 410 (watches), 429 with Retry-After, 500/503, or a timeout (no answer until the
 *   client gives up).
 * - **refuse** connections for T ms: new connections are destroyed on accept and open ones (watches, keep-alive) are
 *   cut — a reset rather than ECONNREFUSED, since the port stays bound.
 */
import http from 'node:http'
import https from 'node:https'
import type {AddressInfo, Socket} from 'node:net'
import {isReview} from '../../../src/kube/client.js'

/** `review`: a POST of a TokenReview, SubjectAccessReview, … (the apiserver answers and stores nothing: not a write). */
export type Verb = 'list' | 'watch' | 'get' | 'create' | 'update' | 'patch' | 'delete' | 'review' | 'other'

export interface ClassifiedRequest {
  verb: Verb
  /** `group/plural` (`core/plural` for the core group); '' for non-resource paths. */
  resource: string
  namespace?: string
  name?: string
}

/** Parses a kube-apiserver request path into verb and resource (pure). */
export function classify(method: string, rawUrl: string): ClassifiedRequest {
  const url = new URL(rawUrl, 'http://x')
  const parts = url.pathname.split('/').filter(Boolean)
  let rest: string[]
  let group: string
  if (parts[0] === 'api' && parts.length >= 2) {
    group = 'core'
    rest = parts.slice(2)
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1]!
    rest = parts.slice(3)
  } else {
    return {verb: 'other', resource: ''}
  }
  let namespace: string | undefined
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1]
    rest = rest.slice(2)
  }
  if (rest.length === 0) return {verb: 'other', resource: ''}
  const plural = rest[0]!
  const name = rest[1]
  const subresource = rest[2]
  const resource = `${group}/${plural}${subresource ? `/${subresource}` : ''}`
  const m = method.toUpperCase()
  const watch = url.searchParams.get('watch')
  let verb: Verb
  if (m === 'GET') verb = watch === 'true' || watch === '1' ? 'watch' : name ? 'get' : 'list'
  else if (m === 'POST') verb = isReview(m, url.pathname) ? 'review' : 'create'
  else if (m === 'PUT') verb = 'update'
  else if (m === 'PATCH') verb = 'patch'
  else if (m === 'DELETE') verb = 'delete'
  else verb = 'other'
  return {verb, resource, namespace, name}
}

export const isWrite = (verb: Verb): boolean => verb === 'create' || verb === 'update' || verb === 'patch' || verb === 'delete'

/** The key of a LIST for the stale-list cache: path and selectors, without paging or resourceVersion (pure). */
export function listKey(rawUrl: string): string | undefined {
  const url = new URL(rawUrl, 'http://x')
  if (url.searchParams.get('continue')) return undefined // paged lists are not cached
  return [url.pathname, url.searchParams.get('labelSelector') ?? '', url.searchParams.get('fieldSelector') ?? ''].join('|')
}

export type FailKind = 409 | 410 | 429 | 500 | 503 | 'timeout'

export interface FailRule {
  /** Matches on the classified request. */
  verb?: Verb
  resource?: string
  kind: FailKind
  /** How many matching requests to fail (default 1). */
  times?: number
}

/**
 * A write point: which side (`kube` or `api`), which controller (named in the User-Agent of the operator's requests;
 * `runtime` for writes outside a reconcile: the lease, Events, start-up), the verb and the resource. Pure.
 */
export function writePoint(side: 'kube' | 'api', userAgent: string | undefined, verb: string, resource: string): string {
  const controller = /\bcontroller\/(\S+)/.exec(userAgent ?? '')?.[1] ?? 'runtime'
  return `${side} ${controller} ${verb} ${resource}`
}

/** The resource of a write point (`kube host-discovery patch polycrate.io/hosts` → `polycrate.io/hosts`). */
export const pointResource = (point: string): string => point.split(' ')[3] ?? point

export interface CrashTarget {
  point: string
  k: number
}

/** A recorded write `point#k` (see `WriteCounter.points`) as its write point and k. */
export function splitWrite(write: string): CrashTarget {
  const at = write.lastIndexOf('#')
  return {point: write.slice(0, at), k: Number(write.slice(at + 1))}
}

/**
 * Write points that only a process with a history makes: an Event's count patch comes from a process repeating its own
 * Event (a restarted one creates a new Event instead). A crash before it would take that history away, so a case arms
 * such a target first (see `WriteCounter.record`).
 */
export const needsHistory = (point: string): boolean => point === 'kube runtime patch core/events'

/**
 * Counts successful writes per write point and says when a crash target is reached (pure state machine). While a target
 * that `needsHistory` waits, the others wait too: a write of theirs before it fires moves them to their point's next
 * write.
 */
export class WriteCounter {
  readonly counts = new Map<string, number>()
  /** Every write seen, in order: `point#n`. */
  readonly points: string[] = []
  private targets: CrashTarget[]
  constructor(targets: CrashTarget[] = []) {
    this.targets = [...targets]
  }
  arm(targets: CrashTarget[]): void {
    this.targets = [...targets]
  }
  /** Arms one more target (e.g. the next write of a point whose crash could not happen). */
  add(target: CrashTarget): void {
    this.targets.push(target)
  }
  /** Records a write that took effect; true when it is write k of a target's point (that target is then disarmed). */
  record(point: string): boolean {
    const n = (this.counts.get(point) ?? 0) + 1
    this.counts.set(point, n)
    this.points.push(`${point}#${n}`)
    const index = this.targets.findIndex((target) => target.point === point && target.k === n)
    if (index < 0) return false
    if (!needsHistory(point) && this.targets.some((t) => needsHistory(t.point))) {
      this.targets[index] = {point, k: n + 1}
      return false
    }
    this.targets.splice(index, 1)
    return true
  }
  reset(): void {
    this.counts.clear()
    this.points.length = 0
  }
}

/** Picks the first fail rule matching a request and consumes one use of it (pure on its inputs). */
export function takeFailure(rules: FailRule[], request: ClassifiedRequest): FailKind | undefined {
  const index = rules.findIndex((rule) => (!rule.verb || rule.verb === request.verb) && (!rule.resource || rule.resource === request.resource))
  if (index < 0) return undefined
  const rule = rules[index]!
  const left = (rule.times ?? 1) - 1
  if (left <= 0) rules.splice(index, 1)
  else rule.times = left
  return rule.kind
}

/** The Status body kube-apiserver would send for a status code. */
export function statusBody(code: number, message: string): string {
  const reason = {409: 'Conflict', 410: 'Expired', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable'}[code] ?? 'Unknown'
  return JSON.stringify({kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code})
}

export interface FaultCounts {
  crashes: number
  staleLists: number
  watchCloses: number
  heldEvents: number
  failures: Record<string, number>
  refusals: number
}

export interface KubeFaultProxy {
  url: string
  writes: WriteCounter
  /** Every object the operator deleted, in order: `group/plural namespace/name`. */
  deletes: string[]
  /** Called synchronously at the crash point, before the write's answer is forwarded. */
  onCrash: ((point: string) => void) | undefined
  /** Every request seen: verb, resource, status (0 = not answered), the process that sent it (with `processOf`). */
  log: Array<ClassifiedRequest & {status: number; at: number; process?: string}>
  counts: FaultCounts
  crashAfterWrites(targets: CrashTarget[]): void
  /** Delays every event line of watches of `resource` (all resources when omitted) by `ms` until `untilMs` passes. */
  holdWatches(ms: number, resource?: string, forMs?: number): void
  /** Cuts the open watches of `resource` (all when omitted) and answers their next watch 410 Gone. */
  closeWatches(resource?: string): number
  /**
   * Arms the stale LIST for `resource`: the next watch of it that is answered 410 (after `closeWatches`) makes that
   * informer's relist answer with the first LIST body the proxy kept for its path and selectors.
   */
  staleList(resource: string): boolean
  fail(rule: FailRule): void
  refuseFor(ms: number): void
  /** The resources whose LIST bodies are cached (candidates for stale lists). */
  cachedLists(): string[]
  /**
   * Forgets the kept LIST bodies (a new operator process: an old body is stale only to a process that saw newer — a
   * fresh process lists with a consistent read, which no apiserver answers from the past).
   */
  forgetLists(): void
  close(): Promise<void>
}

/**
 * `processOf`: the process (a label) that owns the client end of a connection from `remotePort`, asked once per
 * connection; every request on it is logged with that label.
 */
export async function startKubeFaultProxy(options: {upstream: string; token: string; processOf?: (remotePort: number) => string | undefined}): Promise<KubeFaultProxy> {
  const upstream = new URL(options.upstream)
  const agent = new https.Agent({keepAlive: true, maxSockets: 256, rejectUnauthorized: false})
  const failRules: FailRule[] = []
  const listCache = new Map<string, {resource: string; status: number; headers: http.IncomingHttpHeaders; body: Buffer}>()
  const armedStale = new Set<string>()
  /** List keys whose next LIST gets the old body: their watch was just answered 410 (an informer relisting). */
  const staleKeys = new Set<string>()
  const gone = new Set<string>()
  const openWatches = new Set<{resource: string; cut: () => void}>()
  const sockets = new Set<Socket>()
  const tags = new WeakMap<Socket, string | undefined>()
  let hold: {ms: number; resource?: string; until: number} | undefined
  let refuseUntil = 0
  const counts: FaultCounts = {crashes: 0, staleLists: 0, watchCloses: 0, heldEvents: 0, failures: {}, refusals: 0}

  const proxy: KubeFaultProxy = {
    url: '',
    writes: new WriteCounter(),
    deletes: [],
    onCrash: undefined,
    log: [],
    counts,
    crashAfterWrites(targets) {
      proxy.writes.arm(targets)
    },
    holdWatches(ms, resource, forMs = 10_000) {
      hold = {ms, resource, until: Date.now() + forMs}
    },
    closeWatches(resource) {
      let n = 0
      for (const watch of [...openWatches]) {
        if (resource && watch.resource !== resource) continue
        gone.add(watch.resource)
        watch.cut()
        n++
      }
      if (resource) gone.add(resource)
      counts.watchCloses += n
      return n
    },
    staleList(resource) {
      if (![...listCache.values()].some((entry) => entry.resource === resource)) return false
      armedStale.add(resource)
      return true
    },
    fail(rule) {
      failRules.push({...rule})
    },
    refuseFor(ms) {
      refuseUntil = Date.now() + ms
      counts.refusals++
      for (const socket of sockets) socket.destroy()
    },
    cachedLists: () => [...new Set([...listCache.values()].map((entry) => entry.resource))],
    forgetLists() {
      listCache.clear()
      armedStale.clear()
      staleKeys.clear()
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      agent.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }

  const server = http.createServer((request, response) => {
    const classified = classify(request.method ?? 'GET', request.url ?? '/')
    const entry = {...classified, status: 0, at: Date.now(), process: tags.get(request.socket)}
    proxy.log.push(entry)
    const answer = (status: number, body: string, headers: Record<string, string> = {}) => {
      entry.status = status
      response.writeHead(status, {'Content-Type': 'application/json', ...headers})
      response.end(body)
    }
    // A watch of a resource whose watches were closed: 410 Gone once, so the informer relists.
    if (classified.verb === 'watch' && gone.delete(classified.resource)) {
      const key = listKey(request.url ?? '/')
      if (key && armedStale.delete(classified.resource)) staleKeys.add(key)
      return answer(410, statusBody(410, 'too old resource version (fault proxy)'))
    }
    const failure = takeFailure(failRules, classified)
    if (failure !== undefined) {
      counts.failures[String(failure)] = (counts.failures[String(failure)] ?? 0) + 1
      if (failure === 'timeout') {
        // No answer: the client's own timeout ends it; the proxy gives up after a minute.
        setTimeout(() => response.destroy(), 60_000).unref()
        request.resume()
        return
      }
      request.resume()
      return answer(failure, statusBody(failure, `injected ${failure} (fault proxy)`), failure === 429 ? {'Retry-After': '1'} : {})
    }
    const key = classified.verb === 'list' ? listKey(request.url ?? '/') : undefined
    if (key && staleKeys.has(key)) {
      const cached = listCache.get(key)
      if (cached) {
        staleKeys.delete(key)
        counts.staleLists++
        request.resume()
        entry.status = cached.status
        response.writeHead(cached.status, {'Content-Type': String(cached.headers['content-type'] ?? 'application/json')})
        response.end(cached.body)
        return
      }
    }
    const headers = {...request.headers, host: upstream.host, authorization: `Bearer ${options.token}`}
    const forward = https.request({
      hostname: upstream.hostname, port: upstream.port, path: request.url, method: request.method, headers, agent, rejectUnauthorized: false,
    }, (upstreamResponse) => {
      const status = upstreamResponse.statusCode ?? 502
      entry.status = status
      if (classified.verb === 'watch' && status === 200) return pipeWatch(classified.resource, upstreamResponse, response)
      const chunks: Buffer[] = []
      upstreamResponse.on('data', (chunk: Buffer) => chunks.push(chunk))
      upstreamResponse.on('error', () => response.destroy())
      upstreamResponse.on('end', () => {
        const body = Buffer.concat(chunks)
        if (key && status === 200 && !listCache.has(key)) listCache.set(key, {resource: classified.resource, status, headers: upstreamResponse.headers, body})
        if (classified.verb === 'delete' && status < 400) proxy.deletes.push(`${classified.resource} ${classified.namespace ?? ''}/${classified.name ?? ''}`)
        if (isWrite(classified.verb) && status < 400 && proxy.writes.record(writePoint('kube', request.headers['user-agent'], classified.verb, classified.resource))) {
          counts.crashes++
          proxy.onCrash?.(proxy.writes.points.at(-1)!)
        }
        const outHeaders = {...upstreamResponse.headers}
        delete outHeaders['transfer-encoding']
        outHeaders['content-length'] = String(body.length)
        if (response.destroyed) return
        response.writeHead(status, outHeaders)
        response.end(body)
      })
    })
    forward.on('error', (error) => {
      if (!response.headersSent) answer(503, statusBody(503, `upstream unreachable (fault proxy): ${error.message}`))
      else response.destroy()
    })
    request.pipe(forward)
    // The client went away (or a fault cut it): stop the upstream request too. (A request's own 'close' fires once
    // its body is read, so the response's is the one that tells.)
    response.on('close', () => {
      if (!response.writableFinished) forward.destroy()
    })
  })

  /** Forwards a watch line by line, so events can be held; `closeWatches` cuts it. */
  function pipeWatch(resource: string, upstreamResponse: http.IncomingMessage, response: http.ServerResponse): void {
    const outHeaders = {...upstreamResponse.headers}
    delete outHeaders['content-length']
    response.writeHead(200, outHeaders)
    response.flushHeaders() // the client waits for the headers before the first event
    let partial = ''
    let chain = Promise.resolve()
    const handle = {resource, cut: () => {
      upstreamResponse.destroy()
      response.end()
    }}
    openWatches.add(handle)
    const done = () => openWatches.delete(handle)
    response.on('close', () => {
      done()
      upstreamResponse.destroy()
    })
    upstreamResponse.on('data', (chunk: Buffer) => {
      partial += chunk.toString('utf8')
      let newline: number
      while ((newline = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, newline + 1)
        partial = partial.slice(newline + 1)
        const held = hold && Date.now() < hold.until && (!hold.resource || hold.resource === resource) ? hold.ms : 0
        if (held) counts.heldEvents++
        // Due `held` ms after it arrived (not after the line before it: a lag, not a backlog that grows per event).
        const due = Date.now() + held
        chain = chain.then(() => new Promise<void>((resolve) => {
          const wait = due - Date.now()
          if (wait > 0) setTimeout(resolve, wait)
          else resolve()
        })).then(() => {
          if (!response.destroyed && !response.writableEnded) response.write(line)
        })
      }
    })
    upstreamResponse.on('end', () => {
      done()
      void chain.then(() => {
        if (!response.writableEnded) response.end()
      })
    })
    upstreamResponse.on('error', () => {
      done()
      response.destroy()
    })
  }

  server.on('connection', (socket) => {
    if (Date.now() < refuseUntil) {
      socket.destroy()
      return
    }
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    if (options.processOf && socket.remotePort) tags.set(socket, options.processOf(socket.remotePort))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return proxy
}
