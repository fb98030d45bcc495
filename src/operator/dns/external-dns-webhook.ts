/**
 * The external-dns webhook provider (protocol: external-dns v0.18 `provider/webhook`): external-dns stays a
 * separate deployment and calls this server for the records of the zones the agent token can see.
 *
 * - `GET /`: negotiation; answers the DomainFilter (the visible zones) with the exact media type.
 * - `GET /records`: every record of those zones as Endpoints (one per name + type, all its values as targets).
 * - `POST /adjustendpoints`: drops what the API cannot hold (unsupported types, routing policies), keeps the rest.
 * - `POST /records`: applies a Changes object. Each name goes into the zone the API resolves for it, and every name
 *   is resolved before anything is written: a name outside the token's zones refuses the whole request (422, no
 *   write). Changes are applied Endpoint by Endpoint (deletes, updates, creates), each logged with its result; an
 *   Endpoint whose writes fail part way has its applied writes undone, so a multi-value record is either the old
 *   one or the new one. 204 when all applied; 503 (external-dns retries on its next sync) when the API failed.
 * - `/healthz`.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Registry} from 'prom-client'
import {allowMethods, sendJson, sendText, startHttpServer, type RunningHttpServer} from '../../lib/http-server.js'
import type {Logger} from '../../lib/logger.js'
import type {ApiSession} from '../agent/api-session.js'
import type {Feature} from '../runtime/feature.js'
import {apiClient, DnsApi, dnsWebhookMetrics, KeyedLock, WebhookFailure} from './dns-api.js'
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
  type Endpoint,
  type RecordOp,
  type Zone,
  type ZoneRecord,
} from './records.js'
import {mediaType, readJsonBody, serverFeature, webhookHandler} from './serve.js'

/** Largest request body: ample for thousands of changes, far below what could exhaust memory. */
export const EXTERNAL_DNS_BODY_LIMIT = 4 * 1024 * 1024
const ROUTES = new Set(['/', '/records', '/adjustendpoints', '/healthz'])
/** Names resolved at the same time while checking one request. */
const RESOLVE_CONCURRENCY = 8

export interface ExternalDnsWebhookOptions {
  port: number
  /** Default: all interfaces. */
  host?: string
  session: ApiSession
  registry: Registry
  logger: Logger
  bodyLimitBytes?: number
}

export function ExternalDnsWebhook(session: ApiSession): Feature {
  return {
    name: 'external-dns-webhook',
    enabled: (config) => config.external_dns_webhook.enabled,
    // Only the Polycrate DNS API: nothing in the cluster.
    permissions: [],
    settings: (config) => config.external_dns_webhook,
    // Reads of the DNS API need no lease: every replica serves, so a leader change drops no call.
    everyReplica: true,
    start(manager, config, _isEstablished, context) {
      const logger = manager.logger.child({component: 'external-dns-webhook'})
      return serverFeature(
        () => startExternalDnsWebhook({port: config.external_dns_webhook.port, session, registry: manager.metrics.registry, logger}),
        {what: 'external-dns webhook', hint: 'OperatorConfig external_dns_webhook.port', logger, context},
      )
    },
  }
}

export async function startExternalDnsWebhook(options: ExternalDnsWebhookOptions): Promise<RunningHttpServer> {
  const metrics = dnsWebhookMetrics(options.registry)
  const logger = options.logger
  const limit = options.bodyLimitBytes ?? EXTERNAL_DNS_BODY_LIMIT
  const stopping = new AbortController()
  const writes = new KeyedLock()
  const api = () => new DnsApi(apiClient(options.session), 'external-dns', metrics)

  const expectMediaType = (req: IncomingMessage, header: 'accept' | 'content-type') => {
    const value = mediaType(req.headers[header])
    const ok = header === 'accept'
      ? value === '' || value.split(',').some((part) => part === EXTERNAL_DNS_MEDIA_TYPE || part === '*/*')
      : value === EXTERNAL_DNS_MEDIA_TYPE
    if (!ok) {
      throw new WebhookFailure(header === 'accept' ? 406 : 415, `${header === 'accept' ? 'Accept' : 'Content-Type'} must be ${EXTERNAL_DNS_MEDIA_TYPE} (got "${req.headers[header] ?? ''}")`)
    }
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    switch (path) {
      case '/healthz':
        if (!allowMethods(req, res, ['GET'])) return
        return sendText(res, 200, 'ok\n')
      case '/': {
        if (!allowMethods(req, res, ['GET'])) return
        expectMediaType(req, 'accept')
        const zones = await api().zones(stopping.signal)
        return sendJson(res, 200, domainFilter(zones), EXTERNAL_DNS_MEDIA_TYPE)
      }
      case '/records':
        if (!allowMethods(req, res, ['GET', 'POST'])) return
        if (req.method === 'POST') return applyChanges(req, res)
        expectMediaType(req, 'accept')
        return sendJson(res, 200, (await currentEndpoints(api())).map(endpointToWire), EXTERNAL_DNS_MEDIA_TYPE)
      case '/adjustendpoints': {
        if (!allowMethods(req, res, ['POST'])) return
        expectMediaType(req, 'content-type')
        return sendJson(res, 200, adjustEndpoints(await readJsonBody(req, limit)), EXTERNAL_DNS_MEDIA_TYPE)
      }
      default:
        throw new WebhookFailure(404, `no such route: ${path} (routes: GET /, GET|POST /records, POST /adjustendpoints, GET /healthz)`)
    }
  }

  const currentEndpoints = async (dns: DnsApi): Promise<Endpoint[]> => {
    const records: ZoneRecord[] = []
    for (const zone of await dns.zones(stopping.signal)) records.push(...(await dns.records(zone, undefined, stopping.signal)))
    return endpointsFromRecords(records)
  }

  const applyChanges = async (req: IncomingMessage, res: ServerResponse) => {
    expectMediaType(req, 'content-type')
    const parsed = parseChanges(await readJsonBody(req, limit))
    if (!parsed.ok) throw new WebhookFailure(400, parsed.reason)
    const changes = parsed.value
    const dns = api()
    // One POST /records at a time: each plans against the records the previous one left.
    await writes.run('records', async () => {
      const items: Array<{action: ChangeAction; next: Endpoint; old?: Endpoint}> = [
        ...changes.delete.map((next) => ({action: 'delete' as const, next})),
        ...changes.updateNew.map((next, index) => ({action: 'update' as const, next, old: changes.updateOld[index]})),
        ...changes.create.map((next) => ({action: 'create' as const, next})),
      ]
      if (items.length === 0) return
      const zoneByName = await resolveZones(dns, [...new Set(items.map((item) => item.next.dnsName))])
      const recordsByZone = new Map<string, ZoneRecord[]>()
      for (const zone of new Map([...zoneByName.values()].map((z) => [z.id, z])).values()) {
        recordsByZone.set(zone.id, await dns.records(zone, undefined, stopping.signal))
      }
      const failures: WebhookFailure[] = []
      for (const item of items) {
        const zone = zoneByName.get(item.next.dnsName) as Zone
        const failure = await applyEndpoint(dns, zone, recordsByZone.get(zone.id) as ZoneRecord[], item.action, item.next, item.old)
        if (failure) failures.push(failure)
      }
      if (failures.length > 0) {
        const status = failures.some((f) => f.status >= 500) ? 503 : 422
        throw new WebhookFailure(status, `${failures.length} of ${items.length} changes failed (each left as it was, see the operator log); first: ${failures[0]?.message}`)
      }
    })
    sendText(res, 204, '')
  }

  /** The zone the API resolves for each name; refuses (no write) when a name has none or one the token cannot see. */
  const resolveZones = async (dns: DnsApi, names: string[]): Promise<Map<string, Zone>> => {
    const visible = new Map((await dns.zones(stopping.signal)).map((zone) => [zone.id, zone]))
    const result = new Map<string, Zone>()
    const queue = [...names]
    const outside: string[] = []
    await Promise.all(Array.from({length: Math.min(RESOLVE_CONCURRENCY, queue.length)}, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        const zone = await dns.resolve(name, stopping.signal)
        if (zone && visible.has(zone.id) && (name === zone.name || name.endsWith(`.${zone.name}`))) result.set(name, zone)
        else outside.push(name)
      }
    }))
    if (outside.length > 0) {
      outside.sort()
      throw new WebhookFailure(422, `${outside.length} name(s) are in no DNS zone the agent token can see, nothing was changed: ${outside.slice(0, 5).join(', ')}${outside.length > 5 ? ', …' : ''}`)
    }
    return result
  }

  /** One Endpoint change: its record writes in order; on a failure, the applied ones are undone. */
  const applyEndpoint = async (dns: DnsApi, zone: Zone, state: ZoneRecord[], action: ChangeAction, next: Endpoint, old?: Endpoint): Promise<WebhookFailure | undefined> => {
    const started = performance.now()
    const ops = planEndpointChange(action, next, state, old)
    const applied: Array<{op: RecordOp; created?: ZoneRecord}> = []
    const fields = {action, dnsName: next.dnsName, recordType: next.recordType, zone: zone.name}
    try {
      for (const op of ops) applied.push({op, created: await applyOp(dns, zone, state, op)})
      logger.info('dns change applied', {...fields, writes: ops.length, ms: Math.round((performance.now() - started) * 100) / 100})
      return undefined
    } catch (error) {
      const failure = error instanceof WebhookFailure ? error : new WebhookFailure(500, (error as Error).message)
      let undone = true
      for (const op of undoOps(applied)) {
        try {
          await applyOp(dns, zone, state, op)
        } catch (undoError) {
          undone = false
          logger.error('dns change could not be undone', {...fields, error: (undoError as Error).message})
        }
      }
      logger.warn('dns change failed', {...fields, error: failure.message, undone, ms: Math.round((performance.now() - started) * 100) / 100})
      return failure
    }
  }

  /** Applies one record write and keeps `state` (the zone's records) in step. */
  const applyOp = async (dns: DnsApi, zone: Zone, state: ZoneRecord[], op: RecordOp): Promise<ZoneRecord | undefined> => {
    switch (op.op) {
      case 'create': {
        const created = await dns.create(zone, op.fqdn, op.type, op.target, op.ttl, stopping.signal)
        state.push(created)
        return created
      }
      case 'delete': {
        await dns.delete(op.record, stopping.signal)
        const index = state.findIndex((record) => record.id === op.record.id)
        if (index >= 0) state.splice(index, 1)
        return undefined
      }
      case 'set-ttl': {
        await dns.setTtl(op.record, op.ttl, stopping.signal)
        const found = state.find((record) => record.id === op.record.id)
        if (found) found.ttl = op.ttl
        return undefined
      }
    }
  }

  /** Checks the Endpoints, then answers them back without those the API cannot hold (logged). */
  const adjustEndpoints = (body: unknown) => {
    const parsed = endpointArrayWire.safeParse(body)
    if (!parsed.success) throw new WebhookFailure(400, zodReason(parsed.error))
    return parsed.data.flatMap((endpoint) => {
      const name = normalizeName(endpoint.dnsName)
      const type = endpoint.recordType.toUpperCase()
      if (!name || endpoint.setIdentifier || !(SUPPORTED_RECORD_TYPES as readonly string[]).includes(type)) {
        logger.debug('endpoint left out: the Polycrate DNS API cannot hold it', {dnsName: endpoint.dnsName, recordType: endpoint.recordType})
        return []
      }
      return [{...endpoint, dnsName: name, recordType: type}]
    })
  }

  const server = await startHttpServer({
    name: 'external-dns webhook',
    address: {host: options.host ?? '::', port: options.port},
    logger,
    handler: webhookHandler({
      webhook: 'external-dns',
      metrics,
      logger,
      route: (path) => (ROUTES.has(path) ? path : 'other'),
      handle,
      fail: (res, failure) => sendText(res, failure.status, `${failure.message}\n`),
    }),
  })
  return {
    address: server.address,
    async close() {
      stopping.abort()
      await server.close()
    },
  }
}
