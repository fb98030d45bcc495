/**
 * The ICMP check through the system `ping` (iputils). ping opens an unprivileged ICMP socket (SOCK_DGRAM) when the
 * process's group is in the Pod's `net.ipv4.ping_group_range` (the manifests set it: the restricted Pod Security profile
 * allows that sysctl), else a raw socket, which needs NET_RAW (`security.add_capabilities`). Without either (or with
 * `agent.icmp_enabled` false, or no `ping` binary) the endpoint gets a `configuration` error and the agent goes on.
 */
import type {CheckResultInput} from '../../api/index.js'
import type {ProbeOptions} from './http-check.js'
import type {IcmpPlan} from './plan.js'
import {round, type CheckOutcome, type ErrorCategory} from './result.js'
import {systemClock} from '../../lib/clock.js'

export interface PingSummary {
  sent: number
  received: number
  lossPercent: number
  min?: number
  avg?: number
  max?: number
}

/** Reads iputils' summary lines (`3 packets transmitted, 3 received, 0% packet loss` and `rtt min/avg/max/mdev = …`). */
export function parsePing(output: string): PingSummary | undefined {
  const counts = /(\d+) packets transmitted, (\d+) (?:packets )?received(?:, \+\d+ errors)?, ([\d.]+)% packet loss/.exec(output)
  if (!counts) return undefined
  const rtt = /(?:rtt|round-trip) min\/avg\/max(?:\/mdev|\/stddev)? = ([\d.]+)\/([\d.]+)\/([\d.]+)/.exec(output)
  return {
    sent: Number(counts[1]),
    received: Number(counts[2]),
    lossPercent: Number(counts[3]),
    ...(rtt ? {min: Number(rtt[1]), avg: Number(rtt[2]), max: Number(rtt[3])} : {}),
  }
}

export type PingRunner = (args: string[], timeoutMs: number) => Promise<{exitCode?: number; stdout: string; stderr: string; failed: boolean; code?: string}>

const systemPing: PingRunner = async (args, timeoutMs) => {
  // Loaded on the first ICMP check: an operator without ICMP checks never pays for execa's ~250 modules.
  const {execa} = await import('execa')
  const run = await execa('ping', args, {reject: false, timeout: timeoutMs, env: {LC_ALL: 'C'}})
  return {exitCode: run.exitCode, stdout: String(run.stdout), stderr: String(run.stderr), failed: run.failed, code: (run as {code?: string}).code}
}

export async function icmpCheck(endpointId: string, plan: IcmpPlan, options: ProbeOptions & {ping?: PingRunner} = {}): Promise<CheckOutcome> {
  const checkedAt = (options.clock ?? systemClock).now()
  const started = performance.now()
  const base: CheckResultInput = {endpoint_id: endpointId, checked_at: new Date(checkedAt).toISOString(), success: false}
  const fail = (category: ErrorCategory, errorName: string, message: string, extra: Partial<CheckResultInput> = {}): CheckOutcome => ({
    result: {...base, ...extra, error_code: 0, error_name: errorName, http_error_category: category, duration_ms: round(performance.now() - started)},
    phases: {},
    message: `${message} (${category})`,
  })
  if (!plan.enabled) return fail('configuration', 'ICMP_DISABLED', 'ICMP checks are disabled (agent.icmp_enabled: false)')
  const waitSeconds = Math.max(1, Math.ceil(plan.timeoutMs / 1000))
  const args = ['-n', '-c', String(plan.count), '-i', String(plan.intervalSeconds), '-W', String(waitSeconds), '-t', String(plan.ttl), plan.host]
  const budget = (plan.count - 1) * plan.intervalSeconds * 1000 + waitSeconds * 1000 + 2000
  const run = await (options.ping ?? systemPing)(args, budget)
  if (run.code === 'ENOENT') return fail('configuration', 'PING_MISSING', 'the ping binary is not installed (Debian: iputils-ping)')
  if (/operation not permitted|permission denied|socktype|cap_net_raw/i.test(run.stderr)) {
    return fail('configuration', 'NO_NET_RAW', 'ping may not open an ICMP socket: the Pod needs the sysctl net.ipv4.ping_group_range covering its group (the manifests set "0 2147483647"; out of a Pod: sysctl -w net.ipv4.ping_group_range="0 2147483647") or the NET_RAW capability; or set agent.icmp_enabled: false')
  }
  if (/name or service not known|unknown host|temporary failure in name resolution/i.test(run.stderr)) {
    return fail('dns', 'ENOTFOUND', `cannot resolve ${plan.host}`)
  }
  const summary = parsePing(run.stdout)
  if (!summary) return fail(run.failed && run.exitCode === undefined ? 'timeout' : 'other', 'PING_FAILED', `ping gave no summary: ${run.stderr.trim().slice(0, 200)}`)
  const ip = /^PING \S+ \(([^)]+)\)/m.exec(run.stdout)?.[1] ?? null
  const result: CheckResultInput = {
    ...base,
    success: summary.received > 0,
    error_code: summary.received > 0 ? 0 : 1,
    error_name: summary.received > 0 ? '' : 'NO_REPLY',
    http_error_category: summary.received > 0 ? null : 'network',
    duration_ms: round(performance.now() - started),
    resolved_ip: ip,
    icmp_packets_sent: summary.sent,
    icmp_packets_received: summary.received,
    icmp_packet_loss_percent: summary.lossPercent,
    icmp_rtt_ms: summary.avg ?? null,
    icmp_min_rtt_ms: summary.min ?? null,
    icmp_max_rtt_ms: summary.max ?? null,
  }
  return {result, phases: summary.avg !== undefined ? {rtt: summary.avg / 1000} : {}, ...(summary.received > 0 ? {} : {message: `no reply to ${summary.sent} pings`})}
}
