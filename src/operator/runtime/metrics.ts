/**
 * Prometheus metrics with controller-runtime's names (so existing dashboards and alerts work), plus Node process
 * metrics and the operator's own watch counters. One registry per manager; tests create their own.
 */
import {collectDefaultMetrics, Counter, Gauge, Histogram, Registry} from 'prom-client'

/** The values of `polycrate_operator_feature_status{state}`. */
export const FEATURE_STATES = ['running', 'standby', 'disabled', 'waiting_for_crds', 'crds_missing', 'failed', 'forbidden', 'paused_invalid_config'] as const
export type FeatureState = typeof FEATURE_STATES[number]

const reconcileBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60]
const queueBuckets = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000]

export class OperatorMetrics {
  readonly registry = new Registry()

  readonly reconcileTotal = new Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  })
  readonly reconcileErrors = new Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Total number of reconciliation errors per controller',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  })
  readonly reconcilePanics = new Counter({
    name: 'controller_runtime_reconcile_panics_total',
    help: 'Total number of reconciliation exceptions (unexpected throws) per controller',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  })
  readonly reconcileTime = new Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'] as const,
    buckets: reconcileBuckets,
    registers: [this.registry],
  })
  readonly maxConcurrentReconciles = new Gauge({
    name: 'controller_runtime_max_concurrent_reconciles',
    help: 'Maximum number of concurrent reconciles per controller',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  })
  readonly activeWorkers = new Gauge({
    name: 'controller_runtime_active_workers',
    help: 'Number of currently used workers per controller',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  })
  readonly workqueueDepth = new Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of workqueue',
    labelNames: ['name', 'controller'] as const,
    registers: [this.registry],
  })
  readonly workqueueAdds = new Counter({
    name: 'workqueue_adds_total',
    help: 'Total number of adds handled by workqueue',
    labelNames: ['name', 'controller'] as const,
    registers: [this.registry],
  })
  readonly workqueueQueueDuration = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long in seconds an item stays in workqueue before being requested',
    labelNames: ['name', 'controller'] as const,
    buckets: queueBuckets,
    registers: [this.registry],
  })
  readonly workqueueWorkDuration = new Histogram({
    name: 'workqueue_work_duration_seconds',
    help: 'How long in seconds processing an item from workqueue takes',
    labelNames: ['name', 'controller'] as const,
    buckets: queueBuckets,
    registers: [this.registry],
  })
  readonly workqueueRetries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Total number of retries handled by workqueue',
    labelNames: ['name', 'controller'] as const,
    registers: [this.registry],
  })
  readonly workqueueUnfinishedWork = new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration',
    labelNames: ['name', 'controller'] as const,
    registers: [this.registry],
  })
  readonly leaderElectionStatus = new Gauge({
    name: 'leader_election_master_status',
    help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
    labelNames: ['name'] as const,
    registers: [this.registry],
  })
  readonly restClientRequests = new Counter({
    name: 'rest_client_requests_total',
    help: 'Number of HTTP requests to the Kubernetes API server, partitioned by status code and method',
    labelNames: ['code', 'method'] as const,
    registers: [this.registry],
  })
  readonly watchRestarts = new Counter({
    name: 'polycrate_operator_watch_restarts_total',
    help: 'Watch connections restarted, by resource and reason (timeout, gone, error, idle)',
    labelNames: ['resource', 'reason'] as const,
    registers: [this.registry],
  })
  readonly cacheObjects = new Gauge({
    name: 'polycrate_operator_cache_objects',
    help: 'Objects held in the informer cache, by resource',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  })

  readonly featureStatus = new Gauge({
    name: 'polycrate_operator_feature_status',
    help: 'State of each feature on this replica: 1 for its current state, 0 for the others (running, standby, disabled, waiting_for_crds, crds_missing, failed, forbidden, paused_invalid_config)',
    labelNames: ['feature', 'state'] as const,
    registers: [this.registry],
  })
  readonly apiConnected = new Gauge({
    name: 'polycrate_operator_api_connected',
    help: 'Whether the last health report (heartbeat) to the Polycrate API succeeded (1) or not (0); the leader\'s, absent while API sync is off',
    labelNames: ['api_url'] as const,
    registers: [this.registry],
  })
  readonly apiLastHeartbeat = new Gauge({
    name: 'polycrate_operator_api_last_heartbeat_timestamp_seconds',
    help: 'When the last successful health report (heartbeat) to the Polycrate API was sent, in unix seconds; the leader\'s',
    labelNames: ['api_url'] as const,
    registers: [this.registry],
  })
  readonly apiSyncInterval = new Gauge({
    name: 'polycrate_operator_api_sync_interval_seconds',
    help: 'api_sync.sync_interval_seconds in force: the heartbeat\'s interval; the leader\'s',
    labelNames: ['api_url'] as const,
    registers: [this.registry],
  })

  constructor(options: {processMetrics?: boolean} = {}) {
    if (options.processMetrics ?? true) collectDefaultMetrics({register: this.registry})
  }

  /** One feature's state (`featureState` of its reported reason): its `state` series 1, the others 0. */
  setFeatureState(feature: string, state: FeatureState): void {
    for (const candidate of FEATURE_STATES) this.featureStatus.set({feature, state: candidate}, candidate === state ? 1 : 0)
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }
}
