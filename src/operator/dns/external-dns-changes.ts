/**
 * The parts of the external-dns webhook (external-dns-webhook.ts starts the server): the request handler with its
 * routes, and `ExternalDnsChanges`, which applies one POST /records — every name resolved first, then Endpoint by
 * Endpoint, each undone on a partial failure. The decisions (media types, the order of the changes, which Endpoints
 * the API can hold, what status a failed request gets) are pure functions.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'
import {allowMethods, sendJson, sendText} from '../../lib/http-server.js'
import type {Logger} from '../../lib/logger.js'
import {type DnsApi, type KeyedLock, WebhookFailure} from './dns-api.js'
import {
  domainFilter,
  endpointsFromRecords,
  endpointToWire,
  EXTERNAL_DNS_MEDIA_TYPE,
  normalizeName,
  parseChanges,
  planEndpointChange,
  SUPPORTED_RECORD_TYPES,
  endpointArrayWire,
  zodReason,
  undoOps,
  type ChangeAction,
  type Changes,
  type Endpoint,
  type RecordOp,
  type Zone,
  type ZoneRecord,
} from './records.js'
import {mediaType, readJsonBody} from './serve.js'

/** Names resolved at the same time while checking one request. */
export const RESOLVE_CONCURRENCY = 8

/** One Endpoint change of a request. */
export interface ChangeItem {
  action: ChangeAction
  next: Endpoint
  old?: Endpoint
}

/** The failure for an Accept or Content-Type header that is not external-dns' media type; undefined when it is (pure). */
export function mediaTypeFailure(header: 'accept' | 'content-type', raw: string | undefined): WebhookFailure | undefined {
  const value = mediaType(raw)
  const ok = header === 'accept'
    ? value === '' || value.split(',').some((part) => part === EXTERNAL_DNS_MEDIA_TYPE || part === '*/*')
    : value === EXTERNAL_DNS_MEDIA_TYPE
  if (ok) return undefined
  return new WebhookFailure(header === 'accept' ? 406 : 415, `${header === 'accept' ? 'Accept' : 'Content-Type'} must be ${EXTERNAL_DNS_MEDIA_TYPE} (got "${raw ?? ''}")`)
}

/** The changes in the order they are applied: deletes, updates (with their old Endpoint), creates (pure). */
export function changeItems(changes: Changes): ChangeItem[] {
  return [
    ...changes.delete.map((next) => ({action: 'delete' as const, next})),
    ...changes.updateNew.map((next, index) => ({action: 'update' as const, next, old: changes.updateOld[index]})),
    ...changes.create.map((next) => ({action: 'create' as const, next})),
  ]
}

/** Whether `zone`, resolved for `name`, may take it: visible to the token and `name` inside it (pure). */
export function zoneTakes(name: string, zone: Zone | undefined, visible: ReadonlySet<string>): zone is Zone {
  return zone !== undefined && visible.has(zone.id) && (name === zone.name || name.endsWith(`.${zone.name}`))
}

/** The refusal of a request with names in no visible zone (nothing written), sorted, at most 5 named (pure). */
export function outsideFailure(outside: readonly string[]): WebhookFailure | undefined {
  if (outside.length === 0) return undefined
  const sorted = [...outside].sort()
  return new WebhookFailure(422, `${sorted.length} name(s) are in no DNS zone the agent token can see, nothing was changed: ${sorted.slice(0, 5).join(', ')}${sorted.length > 5 ? ', …' : ''}`)
}

/** A request whose changes partly failed: 503 when the API failed (external-dns retries), else 422 (pure). */
export function changesFailure(failures: readonly WebhookFailure[], total: number): WebhookFailure | undefined {
  if (failures.length === 0) return undefined
  const status = failures.some((f) => f.status >= 500) ? 503 : 422
  return new WebhookFailure(status, `${failures.length} of ${total} changes failed (each left as it was, see the operator log); first: ${failures[0]?.message}`)
}

/** An Endpoint as the API can hold it (name normalized, type upper-case), or undefined when it cannot (pure). */
export function adjustEndpoint<E extends {dnsName: string; recordType: string; setIdentifier?: string | null}>(endpoint: E): E | undefined {
  const name = normalizeName(endpoint.dnsName)
  const type = endpoint.recordType.toUpperCase()
  if (!name || endpoint.setIdentifier || !(SUPPORTED_RECORD_TYPES as readonly string[]).includes(type)) return undefined
  return {...endpoint, dnsName: name, recordType: type}
}

/** One POST /records against one DnsApi: resolve, read the zones, apply each Endpoint (undone when it fails part way). */
export class ExternalDnsChanges {
  constructor(private readonly dns: DnsApi, private readonly logger: Logger, private readonly signal: AbortSignal) {}

  async apply(items: readonly ChangeItem[]): Promise<void> {
    if (items.length === 0) return
    const zoneByName = await this.resolveZones([...new Set(items.map((item) => item.next.dnsName))])
    const recordsByZone = new Map<string, ZoneRecord[]>()
    for (const zone of new Map([...zoneByName.values()].map((z) => [z.id, z])).values()) {
      recordsByZone.set(zone.id, await this.dns.records(zone, undefined, this.signal))
    }
    const failures: WebhookFailure[] = []
    for (const item of items) {
      const zone = zoneByName.get(item.next.dnsName) as Zone
      const failure = await this.applyEndpoint(zone, recordsByZone.get(zone.id) as ZoneRecord[], item)
      if (failure) failures.push(failure)
    }
    const failed = changesFailure(failures, items.length)
    if (failed) throw failed
  }

  /** The zone the API resolves for each name; refuses (no write) when a name has none or one the token cannot see. */
  async resolveZones(names: string[]): Promise<Map<string, Zone>> {
    const visible = new Set((await this.dns.zones(this.signal)).map((zone) => zone.id))
    const result = new Map<string, Zone>()
    const queue = [...names]
    const outside: string[] = []
    await Promise.all(Array.from({length: Math.min(RESOLVE_CONCURRENCY, queue.length)}, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        const zone = await this.dns.resolve(name, this.signal)
        if (zoneTakes(name, zone, visible)) result.set(name, zone)
        else outside.push(name)
      }
    }))
    const refused = outsideFailure(outside)
    if (refused) throw refused
    return result
  }

  /** One Endpoint change: its record writes in order; on a failure, the applied ones are undone. */
  private async applyEndpoint(zone: Zone, state: ZoneRecord[], {action, next, old}: ChangeItem): Promise<WebhookFailure | undefined> {
    const started = performance.now()
    const ops = planEndpointChange(action, next, state, old)
    const applied: Array<{op: RecordOp; created?: ZoneRecord}> = []
    const fields = {action, dnsName: next.dnsName, recordType: next.recordType, zone: zone.name}
    try {
      for (const op of ops) applied.push({op, created: await this.applyOp(zone, state, op)})
      this.logger.info('dns change applied', {...fields, writes: ops.length, ms: Math.round((performance.now() - started) * 100) / 100})
      return undefined
    } catch (error) {
      const failure = error instanceof WebhookFailure ? error : new WebhookFailure(500, (error as Error).message)
      const undone = await this.undo(zone, state, applied, fields)
      this.logger.warn('dns change failed', {...fields, error: failure.message, undone, ms: Math.round((performance.now() - started) * 100) / 100})
      return failure
    }
  }

  /** Undoes the applied writes of a failed Endpoint change; false when one of them could not be undone. */
  private async undo(zone: Zone, state: ZoneRecord[], applied: ReadonlyArray<{op: RecordOp; created?: ZoneRecord}>, fields: Record<string, unknown>): Promise<boolean> {
    let undone = true
    for (const op of undoOps(applied)) {
      try {
        await this.applyOp(zone, state, op)
      } catch (undoError) {
        undone = false
        this.logger.error('dns change could not be undone', {...fields, error: (undoError as Error).message})
      }
    }
    return undone
  }

  /** Applies one record write and keeps `state` (the zone's records) in step. */
  private async applyOp(zone: Zone, state: ZoneRecord[], op: RecordOp): Promise<ZoneRecord | undefined> {
    switch (op.op) {
      case 'create': {
        const created = await this.dns.create(zone, op.fqdn, op.type, op.target, op.ttl, this.signal)
        state.push(created)
        return created
      }
      case 'delete': {
        await this.dns.delete(op.record, this.signal)
        const index = state.findIndex((record) => record.id === op.record.id)
        if (index >= 0) state.splice(index, 1)
        return undefined
      }
      case 'set-ttl': {
        await this.dns.setTtl(op.record, op.ttl, this.signal)
        const found = state.find((record) => record.id === op.record.id)
        if (found) found.ttl = op.ttl
        return undefined
      }
    }
  }
}

export interface ExternalDnsHandlerOptions {
  /** A DnsApi for one request (throws 503 while the API is not connected). */
  api(): DnsApi
  /** One POST /records at a time. */
  writes: KeyedLock
  logger: Logger
  bodyLimitBytes: number
  /** Aborted when the server closes. */
  signal: AbortSignal
}

/** The webhook's routes. */
export class ExternalDnsHandler {
  constructor(private readonly options: ExternalDnsHandlerOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const {api, signal, bodyLimitBytes} = this.options
    switch (path) {
      case '/healthz':
        if (!allowMethods(req, res, ['GET'])) return
        return sendText(res, 200, 'ok\n')
      case '/': {
        if (!allowMethods(req, res, ['GET'])) return
        expectMediaType(req, 'accept')
        const zones = await api().zones(signal)
        return sendJson(res, 200, domainFilter(zones), EXTERNAL_DNS_MEDIA_TYPE)
      }
      case '/records':
        if (!allowMethods(req, res, ['GET', 'POST'])) return
        if (req.method === 'POST') return this.applyChanges(req, res)
        expectMediaType(req, 'accept')
        return sendJson(res, 200, (await this.currentEndpoints(api())).map(endpointToWire), EXTERNAL_DNS_MEDIA_TYPE)
      case '/adjustendpoints': {
        if (!allowMethods(req, res, ['POST'])) return
        expectMediaType(req, 'content-type')
        return sendJson(res, 200, this.adjustEndpoints(await readJsonBody(req, bodyLimitBytes)), EXTERNAL_DNS_MEDIA_TYPE)
      }
      default:
        throw new WebhookFailure(404, `no such route: ${path} (routes: GET /, GET|POST /records, POST /adjustendpoints, GET /healthz)`)
    }
  }

  private async currentEndpoints(dns: DnsApi): Promise<Endpoint[]> {
    const records: ZoneRecord[] = []
    for (const zone of await dns.zones(this.options.signal)) records.push(...(await dns.records(zone, undefined, this.options.signal)))
    return endpointsFromRecords(records)
  }

  private async applyChanges(req: IncomingMessage, res: ServerResponse): Promise<void> {
    expectMediaType(req, 'content-type')
    const parsed = parseChanges(await readJsonBody(req, this.options.bodyLimitBytes))
    if (!parsed.ok) throw new WebhookFailure(400, parsed.reason)
    const changes = parsed.value
    const dns = this.options.api()
    // One POST /records at a time: each plans against the records the previous one left.
    await this.options.writes.run('records', () => new ExternalDnsChanges(dns, this.options.logger, this.options.signal).apply(changeItems(changes)))
    sendText(res, 204, '')
  }

  /** Checks the Endpoints, then answers them back without those the API cannot hold (logged). */
  private adjustEndpoints(body: unknown) {
    const parsed = endpointArrayWire.safeParse(body)
    if (!parsed.success) throw new WebhookFailure(400, zodReason(parsed.error))
    return parsed.data.flatMap((endpoint) => {
      const adjusted = adjustEndpoint(endpoint)
      if (!adjusted) {
        this.options.logger.debug('endpoint left out: the Polycrate DNS API cannot hold it', {dnsName: endpoint.dnsName, recordType: endpoint.recordType})
        return []
      }
      return [adjusted]
    })
  }
}

function expectMediaType(req: IncomingMessage, header: 'accept' | 'content-type'): void {
  const failure = mediaTypeFailure(header, req.headers[header])
  if (failure) throw failure
}
