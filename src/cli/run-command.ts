/**
 * `operator run`: its flags (one spec: the oclif command class derives its flags from it, the fast path of bin/run.js
 * parses argv with it) and what it does, shared by both. The fast path (run-fast-path.ts) starts the operator without
 * loading oclif, which would otherwise stay resident for the life of the process (≈10 MiB RSS, docs/memory.md).
 */
import {CommandFailure} from './command-outcome.js'
import type {FlagSpecs, FlagValues} from './flag-spec.js'
import {kubeFlagSpecs} from './kube-flag-specs.js'
import {KubeClient} from '../kube/client.js'
import {describeKubeError} from '../kube/errors.js'
import {inClusterServiceAccount} from '../kube/light-kubeconfig.js'
import {loadKube} from '../kube/load.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../operator/conventions.js'
import {createLogger, type LogFormat, type LogLevel} from '../lib/logger.js'
import {createOperator} from '../operator/operator.js'
import {parseBindAddress} from '../operator/runtime/http-servers.js'
import {DEFAULT_MAX_CONCURRENT_SYNCS} from '../operator/runtime/manager.js'
import {operatorVersion} from '../version.js'

/** Where the servers listen when no flag names an address. */
export interface ListenAddresses {
  metrics: string
  probes: string
  /** The host of the external-dns webhook (its port comes from the OperatorConfig). */
  externalDnsWebhookHost: string
}

/** In a Pod: controller-runtime's addresses and every interface, as the operator reference has them. */
export const IN_POD_LISTEN: ListenAddresses = {metrics: ':8080', probes: ':8081', externalDnsWebhookHost: '::'}
/** Out of a Pod (a laptop): loopback, so that nobody on the same network reads metrics or changes DNS records. */
export const OUT_OF_POD_LISTEN: ListenAddresses = {metrics: '127.0.0.1:8080', probes: '127.0.0.1:8081', externalDnsWebhookHost: '127.0.0.1'}

export const runFlags = {
  ...kubeFlagSpecs,
  namespace: {
    type: 'string',
    char: 'n',
    summary: 'Namespace of the operator: its OperatorConfig, token Secret and leader lease live here.',
    env: 'POD_NAMESPACE',
    default: DEFAULT_NAMESPACE,
  },
  'leader-elect': {type: 'boolean', summary: 'Use a Lease so that only one replica reconciles (for HA deployments). Without it the process renews a heartbeat Lease polycrate-operator-run-<host> in --namespace instead, so that `polycrate operator status` can tell that it runs.'},
  'pod-name': {
    type: 'string',
    summary: 'This replica\'s Pod in --namespace: its label polycrate.io/leader is kept "true" while it leads, else "false" (informational: the webhook Service selects every replica; `polycrate version` reads the Lease).',
    env: 'POD_NAME',
  },
  'metrics-bind-address': {
    type: 'string',
    summary: `Address of the Prometheus /metrics endpoint; 0 disables it. Default: ${IN_POD_LISTEN.metrics} in a Pod, ${OUT_OF_POD_LISTEN.metrics} (loopback only) out of one.`,
  },
  'metrics-secure': {
    type: 'boolean',
    summary: 'Serve /metrics over HTTPS to callers whose bearer token TokenReview accepts and whom SubjectAccessReview allows get on the non-resource URL /metrics (401 without a valid token, 403 without the right).',
  },
  'metrics-cert-dir': {
    type: 'string',
    path: 'directory',
    summary: 'With --metrics-secure: a directory with tls.crt and tls.key to serve (reloaded when they change); without it, or while the files are absent, a self-signed certificate made at start.',
  },
  'health-probe-bind-address': {
    type: 'string',
    summary: `Address of /healthz and /readyz; 0 disables them. Default: ${IN_POD_LISTEN.probes} in a Pod, ${OUT_OF_POD_LISTEN.probes} (loopback only) out of one.`,
  },
  'external-dns-webhook-host': {
    type: 'string',
    summary: `Host the external-dns webhook listens on (its port: OperatorConfig external_dns_webhook.port). Default: every interface in a Pod, ${OUT_OF_POD_LISTEN.externalDnsWebhookHost} out of one (it changes DNS records without authentication).`,
  },
  'max-concurrent-reconciles': {type: 'integer', summary: 'Workers per controller.', default: 4, min: 1},
  'max-concurrent-syncs': {
    type: 'integer',
    summary: 'Workers per I/O-bound controller: discovery (Ingress → Endpoint CR, …) and API sync (Endpoint CR → Polycrate API); more than --max-concurrent-reconciles.',
    default: DEFAULT_MAX_CONCURRENT_SYNCS,
    min: 1,
  },
  'graceful-shutdown-timeout': {type: 'integer', summary: 'Seconds in-flight reconciles may take to finish on shutdown.', default: 30, min: 0},
  'log-level': {type: 'string', options: ['debug', 'info', 'warn', 'error'], default: 'info', summary: 'Least severe level to log.'},
  'log-format': {type: 'string', options: ['json', 'text'], summary: 'json (default when not on a terminal) or text.'},
} as const satisfies FlagSpecs

export type RunFlags = FlagValues<typeof runFlags>

/**
 * The addresses the servers of `operator run` listen on: what the flags name, else the defaults of where the process
 * runs (in a Pod: inClusterServiceAccount). Throws an Error naming the flag when a value is not an address.
 */
export function listenAddresses(flags: Pick<RunFlags, 'metrics-bind-address' | 'health-probe-bind-address' | 'external-dns-webhook-host'>, inPod: boolean): ListenAddresses {
  const defaults = inPod ? IN_POD_LISTEN : OUT_OF_POD_LISTEN
  const chosen = {
    metrics: flags['metrics-bind-address'] ?? defaults.metrics,
    probes: flags['health-probe-bind-address'] ?? defaults.probes,
    externalDnsWebhookHost: flags['external-dns-webhook-host']?.trim() ?? defaults.externalDnsWebhookHost,
  }
  parseBindAddress(chosen.metrics, '--metrics-bind-address')
  parseBindAddress(chosen.probes, '--health-probe-bind-address')
  // A host alone, checked as the host of an address (an IPv6 one in brackets).
  const host = chosen.externalDnsWebhookHost
  const invalid = `Invalid --external-dns-webhook-host "${host}": expected an IP address or a host name such as 127.0.0.1, :: or 0.0.0.0.`
  let address
  try {
    address = parseBindAddress(`${host.includes(':') ? `[${host}]` : host}:0`)
  } catch {
    throw new Error(invalid)
  }
  if (host === '' || !address) throw new Error(invalid)
  return chosen
}

/**
 * Runs the operator until SIGTERM or SIGINT. Throws CommandFailure for what the command reports (exit 2: a bad bind
 * address; exit 1: no kubeconfig, a start-up problem such as a port in use).
 */
export async function runOperator(flags: RunFlags): Promise<void> {
  const inPod = inClusterServiceAccount()
  let listen: ListenAddresses
  try {
    listen = listenAddresses(flags, inPod)
  } catch (error) {
    throw new CommandFailure((error as Error).message, 2)
  }
  if (flags['metrics-cert-dir'] !== undefined && !flags['metrics-secure']) {
    throw new CommandFailure('--metrics-cert-dir takes effect only with --metrics-secure: add --metrics-secure (or leave out --metrics-cert-dir).', 2)
  }
  const logger = createLogger({level: flags['log-level'] as LogLevel, format: flags['log-format'] as LogFormat | undefined})
  let loaded
  try {
    loaded = await loadKube({kubeconfig: flags.kubeconfig, context: flags.context})
  } catch (error) {
    throw new CommandFailure(describeKubeError(error), 1)
  }
  const client = KubeClient.from(loaded, {fieldManager: FIELD_MANAGER})
  const operator = createOperator({
    client,
    namespace: flags.namespace,
    leaderElection: flags['leader-elect'] ? {} : false,
    podName: flags['pod-name'],
    metricsBindAddress: listen.metrics,
    secureMetrics: flags['metrics-secure'] ? {certDir: flags['metrics-cert-dir']} : undefined,
    probeBindAddress: listen.probes,
    externalDnsWebhookHost: listen.externalDnsWebhookHost,
    maxConcurrentReconciles: flags['max-concurrent-reconciles'],
    maxConcurrentSyncs: flags['max-concurrent-syncs'],
    shutdownGraceMs: flags['graceful-shutdown-timeout'] * 1000,
    logger,
  })

  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      logger.warn('second signal: exiting without waiting', {signal})
      process.exit(1)
    }
    logger.info('signal received: shutting down', {signal})
    stop.abort()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  logger.info('starting polycrate operator', {
    version: operatorVersion(),
    server: loaded.server,
    kubeconfig: loaded.source,
    namespace: flags.namespace,
    inPod,
    metrics: listen.metrics,
    metricsSecure: flags['metrics-secure'] === true,
    probes: listen.probes,
    identity: operator.manager.identity,
    leaderElect: flags['leader-elect'] === true,
  })
  try {
    await operator.run(stop.signal)
  } catch (error) {
    // Startup problems (a port in use) end here; cluster outages never do: the loops retry.
    throw new CommandFailure(describeKubeError(error), 1)
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    client.close()
  }
}
