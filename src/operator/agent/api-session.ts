/**
 * The operator's connection to the Polycrate API, shared by the features that call it: the client for the
 * current API URL and token, and what the health report resolved (workspace, organization, local cluster).
 * The API sync feature keeps it current; sync controllers read it and wait while it is not connected.
 */
import {createHash} from 'node:crypto'
import type {Registry} from 'prom-client'
import {PolycrateApiClient} from '../../api/index.js'
import type {Clock} from '../../lib/clock.js'
import type {Logger} from '../../lib/logger.js'
import type {WriteFence} from '../../lib/write-fence.js'

export interface ApiIdentity {
  workspaceId: string
  workspaceName: string
  organizationId?: string
  organizationName?: string
  /** The K8sCluster of this cluster in the API, when registered or found. */
  clusterId?: string
}

export class ApiSession {
  private current?: {key: string; baseUrl: string; token: string; client: PolycrateApiClient}
  private unfenced?: {key: string; client: PolycrateApiClient}
  identity?: ApiIdentity
  /** Why there is no usable connection (for conditions of dependent objects). */
  problem?: string
  private readonly listeners = new Set<() => void>()

  /** `writeFence`: the manager's (every API write of a replica asks it, as its kube writes do); `clock`: the manager's. */
  constructor(private readonly options: {registry?: Registry; logger?: Logger; writeFence?: WriteFence; clock?: Clock} = {}) {}

  /** The client for this URL and token; the same instance while neither changes. */
  clientFor(baseUrl: string, token: string): PolycrateApiClient {
    const key = createHash('sha256').update(`${baseUrl}\n${token}`).digest('hex')
    if (this.current?.key !== key) {
      this.current = {key, baseUrl, token, client: this.newClient(baseUrl, token, this.options.writeFence)}
    }
    return this.current.client
  }

  private newClient(baseUrl: string, token: string, writeFence: WriteFence | undefined): PolycrateApiClient {
    // At most 2 attempts per call: the work queue's per-key backoff (5 s → 60 s) is the one long retry layer.
    return new PolycrateApiClient({baseUrl, token, retry: {maxAttempts: 2}, registry: this.options.registry, logger: this.options.logger, writeFence, clock: this.options.clock})
  }

  /** The client, once the health report has resolved the workspace. */
  get client(): PolycrateApiClient | undefined {
    return this.identity ? this.current?.client : undefined
  }

  /**
   * The client for the writes a caller asks for and waits on — the DNS webhooks', which serve on every replica
   * (external-dns and cert-manager send their changes to any of them through the Service) — without the write fence:
   * the fence keeps a replica that is not the leader from acting on its own (reconciles), not from answering a
   * request. The same URL and token as `client`, once the health report has resolved the workspace.
   */
  get requestClient(): PolycrateApiClient | undefined {
    const current = this.identity ? this.current : undefined
    if (!current || !this.options.writeFence) return current?.client
    if (this.unfenced?.key !== current.key) this.unfenced = {key: current.key, client: this.newClient(current.baseUrl, current.token, undefined)}
    return this.unfenced.client
  }

  /** Whether the API sync has given its first answer since the process started: connected, or why not (`problem`). */
  get answered(): boolean {
    return this.identity !== undefined || this.problem !== undefined
  }

  connected(identity: ApiIdentity): void {
    const changed = JSON.stringify(identity) !== JSON.stringify(this.identity)
    this.identity = identity
    this.problem = undefined
    if (changed) this.notify()
  }

  disconnected(problem: string): void {
    const changed = this.identity !== undefined || this.problem !== problem
    this.identity = undefined
    this.problem = problem
    if (changed) this.notify()
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /**
   * A feature's running controller, resynced whenever the session changes (connected, identity resolved): what
   * waited for the API is reconciled at once instead of at its next event. Stopping it unsubscribes.
   */
  resyncing(running: {controller: {resync(): void}; stop(): Promise<void>}): {stop(): Promise<void>} {
    const unsubscribe = this.onChange(() => running.controller.resync())
    return {
      async stop() {
        unsubscribe()
        await running.stop()
      },
    }
  }

  private notify(): void {
    for (const listener of this.listeners) listener()
  }
}
