/**
 * The TCP check: connect (optionally TLS), send `send_string` if set, read the banner; with `expected_response`
 * the check succeeds only once the received text contains it (read until it does, the peer closes, or timeout).
 */
import {Socket, isIP} from 'node:net'
import {StringDecoder} from 'node:string_decoder'
import {connect as tlsConnect, type TLSSocket} from 'node:tls'
import type {CheckResultInput} from '../../api/index.js'
import type {ProbeOptions} from './http-check.js'
import type {TcpPlan} from './plan.js'
import {CheckFailure, checkResult, classify, commonResult, type CheckOutcome, type Failure} from './result.js'
import {systemClock} from '../../lib/clock.js'

/** Banner bytes kept (and reported as `tcp_banner`). */
const BANNER_LIMIT = 1024
/** Without an expected response: how long to wait for a banner after connecting before calling it done. */
const BANNER_WAIT_MS = 500

export async function tcpCheck(endpointId: string, plan: TcpPlan, options: ProbeOptions = {}): Promise<CheckOutcome> {
  const clock = options.clock ?? systemClock
  const checkedAt = clock.now()
  const started = performance.now()
  let connectedAt: number | undefined
  let banner = ''
  let failure: Failure | undefined
  await new Promise<void>((resolve) => {
    let done = false
    const socket: Socket | TLSSocket = plan.tls
      ? tlsConnect({host: plan.host, port: plan.port, rejectUnauthorized: false, ...(isIP(plan.host) ? {} : {servername: plan.host}), ...(options.ca ? {ca: options.ca} : {})})
      : new Socket().connect({host: plan.host, port: plan.port})
    const finish = (error?: unknown) => {
      if (done) return
      done = true
      clock.clearTimeout(deadline)
      clock.clearTimeout(bannerWait)
      if (error !== undefined) {
        const {category, errorName} = classify(error)
        failure = {category, errorName, message: (error as Error)?.message ?? String(error)}
      }
      socket.destroy()
      resolve()
    }
    const deadline = clock.setTimeout(() => finish(new CheckFailure('timeout', 'TIMEOUT', `no ${connectedAt === undefined ? 'connection' : 'expected response'} within ${plan.timeoutMs / 1000} s`)), plan.timeoutMs)
    let bannerWait: unknown
    const onConnected = () => {
      connectedAt = performance.now()
      if (plan.tls) {
        const tls = socket as TLSSocket
        if (!tls.authorized && !plan.ignoreTlsErrors) {
          finish(new CheckFailure('connection', String(tls.authorizationError ?? 'TLS_INVALID'), `TLS certificate is not valid: ${String(tls.authorizationError)}`))
          return
        }
      }
      if (plan.sendString) socket.write(plan.sendString)
      if (!plan.expectedResponse) bannerWait = clock.setTimeout(() => finish(), BANNER_WAIT_MS)
    }
    socket.once(plan.tls ? 'secureConnect' : 'connect', onConnected)
    // A chunk may end inside a multi-byte character: the decoder keeps its first bytes for the next chunk.
    const decoder = new StringDecoder('utf8')
    socket.on('data', (chunk: Buffer) => {
      if (banner.length < BANNER_LIMIT) banner = (banner + decoder.write(chunk)).slice(0, BANNER_LIMIT)
      if (plan.expectedResponse && banner.includes(plan.expectedResponse)) finish()
    })
    socket.on('end', () => finish(plan.expectedResponse ? new CheckFailure('response', 'RESPONSE_MISMATCH', 'the peer closed without sending the expected response') : undefined))
    socket.on('error', (error) => finish(error))
  })
  const connected = connectedAt !== undefined
  const matched = plan.expectedResponse ? failure === undefined && banner.includes(plan.expectedResponse) : null
  if (connected && matched === false && failure?.category === 'timeout') {
    failure = {category: 'response', errorName: 'RESPONSE_MISMATCH', message: `the expected response did not arrive within ${plan.timeoutMs / 1000} s`}
  }
  const result: CheckResultInput = checkResult(commonResult(endpointId, checkedAt, failure, performance.now() - started, isIP(plan.host) ? plan.host : null), {
    tcp_connected: connected,
    tcp_banner: banner.trim() || null,
    tcp_response_matched: matched,

  })
  return {result, phases: {connect: connectedAt !== undefined ? (connectedAt - started) / 1000 : 0}, ...(failure ? {message: failure.message} : {})}
}
