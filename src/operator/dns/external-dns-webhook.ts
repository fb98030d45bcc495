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
import type {Registry} from 'prom-client'
import {sendText, startHttpServer, type RunningHttpServer} from '../../lib/http-server.js'
import type {Logger} from '../../lib/logger.js'
import type {ApiSession} from '../agent/api-session.js'
import type {Feature} from '../runtime/feature.js'
import type {OperatorConfig} from '../config/operator-config.js'
import {apiClient, DnsApi, dnsWebhookMetrics, KeyedLock} from './dns-api.js'
import {ExternalDnsHandler} from './external-dns-changes.js'
import {serverFeature, webhookHandler} from './serve.js'

/** Largest request body: ample for thousands of changes, far below what could exhaust memory. */
export const EXTERNAL_DNS_BODY_LIMIT = 4 * 1024 * 1024
const ROUTES = new Set(['/', '/records', '/adjustendpoints', '/healthz'])

export interface ExternalDnsWebhookOptions {
  port: number
  /** Default: all interfaces (`operator run`: loopback out of a Pod, --external-dns-webhook-host). */
  host?: string
  session: ApiSession
  registry: Registry
  logger: Logger
  bodyLimitBytes?: number
}

export function ExternalDnsWebhook(session: ApiSession): Feature<OperatorConfig> {
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
        () => startExternalDnsWebhook({port: config.external_dns_webhook.port, host: manager.externalDnsWebhookHost, session, registry: manager.metrics.registry, logger}),
        {what: 'external-dns webhook', hint: 'OperatorConfig external_dns_webhook.port', logger, context},
      )
    },
  }
}

export async function startExternalDnsWebhook(options: ExternalDnsWebhookOptions): Promise<RunningHttpServer> {
  const metrics = dnsWebhookMetrics(options.registry)
  const logger = options.logger
  const stopping = new AbortController()
  const handler = new ExternalDnsHandler({
    api: () => new DnsApi(apiClient(options.session), 'external-dns', metrics),
    writes: new KeyedLock(),
    logger,
    bodyLimitBytes: options.bodyLimitBytes ?? EXTERNAL_DNS_BODY_LIMIT,
    signal: stopping.signal,
  })
  const server = await startHttpServer({
    name: 'external-dns webhook',
    address: {host: options.host ?? '::', port: options.port},
    logger,
    handler: webhookHandler({
      webhook: 'external-dns',
      metrics,
      logger,
      route: (path) => (ROUTES.has(path) ? path : 'other'),
      handle: (req, res, path) => handler.handle(req, res, path),
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
