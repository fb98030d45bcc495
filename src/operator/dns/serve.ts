/**
 * The request plumbing both DNS webhooks share: a route label for the metrics, every answer counted by
 * webhook/route/code, a failure turned into the webhook's own error format, and size-limited JSON bodies.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'
import {HttpError, readBody, type RequestHandler} from '../../lib/http-server.js'
import type {Logger} from '../../lib/logger.js'
import type {FeatureContext, RunningFeature} from '../runtime/feature.js'
import {WebhookFailure, type DnsWebhookMetrics, type WebhookName} from './dns-api.js'
import {parseJson} from './records.js'

export interface WebhookHandlerOptions {
  webhook: WebhookName
  metrics: DnsWebhookMetrics
  logger: Logger
  /** The metrics label of a request path (a fixed set, so that odd paths do not make new series). */
  route(path: string): string
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>
  /** Writes a failure in the webhook's format. */
  fail(res: ServerResponse, failure: WebhookFailure): void
}

export function webhookHandler(options: WebhookHandlerOptions): RequestHandler {
  return async (req, res) => {
    const path = (req.url ?? '/').replace(/[?#].*$/, '')
    const route = options.route(path)
    res.once('finish', () => options.metrics.requests.inc({webhook: options.webhook, route, code: String(res.statusCode)}))
    try {
      await options.handle(req, res, path)
    } catch (error) {
      const failure =
        error instanceof WebhookFailure ? error
          : error instanceof HttpError ? new WebhookFailure(error.status, error.message)
            : undefined
      if (!failure) {
        options.logger.error('webhook request failed', {route, error: error instanceof Error ? error.message : String(error)})
      } else if (failure.status >= 500) {
        options.logger.warn('webhook request failed', {route, status: failure.status, reason: failure.message})
      } else {
        options.logger.info('webhook request refused', {route, status: failure.status, reason: failure.message})
      }
      if (res.headersSent) return void res.destroy()
      if (error instanceof HttpError) for (const [header, value] of Object.entries(error.headers)) res.setHeader(header, value)
      options.fail(res, failure ?? new WebhookFailure(500, 'internal error'))
    }
  }
}

/** The request's JSON body, at most `limitBytes` long (413 above), as a value (400 when it is not JSON). */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const body = await readBody(req, {limitBytes})
  const parsed = parseJson(body.toString('utf8'))
  if (!parsed.ok) throw new WebhookFailure(400, parsed.reason)
  return parsed.value
}

/** A media type header without spaces and in lower case, for an exact comparison. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').replace(/\s+/g, '').toLowerCase()
}

/**
 * A webhook feature's server, started in the background: until it listens the feature reports no problem; a start
 * that fails (port in use, no certificate) is logged with `hint` (the setting it depends on) and reported by
 * problem(), so the OperatorConfig status and /readyz show the webhook as not running, and why.
 */
export function serverFeature(
  start: () => Promise<{close(): Promise<void>}>,
  options: {what: string; hint: string; logger: Logger; context: FeatureContext},
): RunningFeature {
  let problem: string | undefined
  const running = start().catch((error: unknown) => {
    const message = (error as Error).message
    options.logger.error(`${options.what} could not start (${options.hint})`, {error: message})
    problem = `could not start: ${message} (${options.hint})`
    options.context.changed()
    return undefined
  })
  return {
    problem: () => problem,
    stop: async () => (await running)?.close(),
  }
}
