/**
 * What both DNS webhooks share: the Polycrate DNS API calls they make (zones, a zone's records, record writes),
 * how an API failure becomes an HTTP answer (retryable → 5xx, rejected → 4xx), a per-key lock, and their metrics
 * (requests by webhook/route/code, DNS API errors by operation, time per record change).
 */
import {Counter, Histogram, type Registry} from 'prom-client'
import {ApiConflictError, ApiValidationError, type PolycrateApiClient} from '../../api/index.js'
import type {ApiSession} from '../agent/api-session.js'
import {recordFromApi, recordRequest, type SupportedRecordType, type Zone, type ZoneRecord} from './records.js'

export type WebhookName = 'external-dns' | 'dns01'

export interface DnsWebhookMetrics {
  requests: Counter<'webhook' | 'route' | 'code'>
  apiErrors: Counter<'webhook' | 'operation'>
  changeDuration: Histogram<'webhook' | 'operation'>
}

const metricsByRegistry = new WeakMap<Registry, DnsWebhookMetrics>()

/** The webhooks' metrics in `registry` (created once per registry, so a restarted feature keeps counting). */
export function dnsWebhookMetrics(registry: Registry): DnsWebhookMetrics {
  let metrics = metricsByRegistry.get(registry)
  if (!metrics) {
    metrics = {
      requests: new Counter({
        name: 'polycrate_dns_webhook_requests_total',
        help: 'Requests to the DNS webhooks by webhook (external-dns, dns01), route and HTTP status code',
        labelNames: ['webhook', 'route', 'code'] as const,
        registers: [registry],
      }),
      apiErrors: new Counter({
        name: 'polycrate_dns_webhook_api_errors_total',
        help: 'Failed Polycrate DNS API calls of the DNS webhooks by webhook and operation',
        labelNames: ['webhook', 'operation'] as const,
        registers: [registry],
      }),
      changeDuration: new Histogram({
        name: 'polycrate_dns_webhook_record_change_duration_seconds',
        help: 'Time per DNS record change (one API write) of the DNS webhooks',
        labelNames: ['webhook', 'operation'] as const,
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [registry],
      }),
    }
    metricsByRegistry.set(registry, metrics)
  }
  return metrics
}

/** An answer the webhook gives for a failure: a status and a reason a person can act on. */
export class WebhookFailure extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
    this.name = 'WebhookFailure'
  }
}

/** The API client, or a 503 saying why there is none. */
export function apiClient(session: ApiSession): PolycrateApiClient {
  // Unfenced: a standby answers the webhook calls that reach it (ApiSession.requestClient).
  const client = session.requestClient
  if (!client) {
    throw new WebhookFailure(503, `the Polycrate API is not connected${session.problem ? `: ${session.problem}` : ' (api_sync must be enabled and connected)'}`)
  }
  return client
}

/**
 * An API failure as the webhook's answer: the API refused the data (400/409/422) → 422 (retrying will not help);
 * anything else (unreachable, 5xx, 429, token refused) → 503, which external-dns retries on its next sync.
 */
function apiFailure(error: unknown, what: string): WebhookFailure {
  if (error instanceof WebhookFailure) return error
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof ApiValidationError || error instanceof ApiConflictError) return new WebhookFailure(422, `${what}: ${message}`)
  return new WebhookFailure(503, `${what}: ${message}`)
}

/** DNS calls of the webhooks, counting failures in the metrics. */
export class DnsApi {
  constructor(
    private readonly client: PolycrateApiClient,
    private readonly webhook: WebhookName,
    private readonly metrics: DnsWebhookMetrics,
  ) {}

  private async call<T>(operation: string, what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (error) {
      this.metrics.apiErrors.inc({webhook: this.webhook, operation})
      throw apiFailure(error, what)
    }
  }

  /** Every zone the agent token can see. */
  zones(signal?: AbortSignal): Promise<Zone[]> {
    return this.call('list-zones', 'listing DNS zones failed', async () =>
      (await this.client.dnsZones.listAll({}, {signal})).map((zone) => ({id: zone.id, name: zone.name.toLowerCase().replace(/\.$/, '')})))
  }

  /** The zone the API resolves for the name (internal first, then the primary external zone); undefined if none. */
  resolve(fqdn: string, signal?: AbortSignal): Promise<Zone | undefined> {
    return this.call('resolve-zone', `resolving the DNS zone of "${fqdn}" failed`, async () => {
      const zone = await this.client.dnsZones.resolve(fqdn, {signal})
      return zone ? {id: zone.id, name: zone.name.toLowerCase().replace(/\.$/, '')} : undefined
    })
  }

  /** The zone's records (optionally of one type). */
  records(zone: Zone, type?: string, signal?: AbortSignal): Promise<ZoneRecord[]> {
    return this.call('list-records', `listing the records of zone ${zone.name} failed`, async () => {
      const records = await this.client.dnsRecords.listAll({dns_zone: zone.id, ...(type ? {type} : {})}, {signal})
      // Only records that say they are in this zone: nothing of another zone is ever planned on (or deleted).
      return records
        .filter((record) => (typeof record.dns_zone === 'string' ? record.dns_zone : record.dns_zone.id) === zone.id)
        .map((record) => recordFromApi(record, zone))
        .filter((record) => !type || record.type === type)
    })
  }

  async create(zone: Zone, fqdn: string, type: SupportedRecordType, target: string, ttl?: number, signal?: AbortSignal): Promise<ZoneRecord> {
    return this.timed('create', () => this.call('create-record', `creating ${type} ${fqdn} → ${target} failed`, async () =>
      recordFromApi(await this.client.dnsRecords.create(recordRequest(zone, fqdn, type, target, ttl), {signal}), zone)))
  }

  async delete(record: ZoneRecord, signal?: AbortSignal): Promise<void> {
    await this.timed('delete', () => this.call('delete-record', `deleting ${record.type} ${record.fqdn} → ${record.target} failed`, () =>
      this.client.dnsRecords.delete(record.id, {signal})))
  }

  async setTtl(record: ZoneRecord, ttl: number, signal?: AbortSignal): Promise<void> {
    await this.timed('set-ttl', () => this.call('update-record', `setting the TTL of ${record.type} ${record.fqdn} failed`, () =>
      this.client.dnsRecords.update(record.id, {ttl}, {signal})))
  }

  private async timed<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const end = this.metrics.changeDuration.startTimer({webhook: this.webhook, operation})
    try {
      return await run()
    } finally {
      end()
    }
  }
}

/** Runs tasks with the same key one after the other (tasks with different keys run concurrently). */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const result = previous.then(task, task)
    const tail = result.catch(() => {})
    this.tails.set(key, tail)
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return result
  }
}
