import assert from 'node:assert/strict'
import net from 'node:net'
import {runCommand} from '@oclif/test'
import {execa} from 'execa'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import {KubeClient, type KubeObject} from '../../src/kube/client.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'
import {parsePromText} from '../support/prom-text.js'
import {selectorsOf} from '../support/promql.js'
import {alertRuleGroups, EXTERNAL_SERIES} from '../../src/operator/install/alerts.js'
import {dashboardExpressions, operatorDashboard} from '../../src/operator/install/dashboard.js'
import {FIELD_MANAGER, LEADER_POD_LABEL, OPERATOR_NAME} from '../../src/operator/conventions.js'
import {operatorManifests} from '../../src/operator/manifests.js'
import {operatorPermissions} from '../../src/operator/operator.js'
import {configRef, eventually} from '../support/helpers.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}

/** Whether a TCP connection to host:port is accepted. */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({host, port})
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

const condition = (object: OperatorConfigObject | undefined, type: string) => object?.status?.conditions?.find((c) => c.type === type)

describe('polycrate operator run (a real process against the real apiserver)', function () {
  this.timeout(180_000)
  let client: KubeClient
  const running: OperatorProcess[] = []
  const start = async (...args: Parameters<typeof startOperator>) => {
    const operator = await startOperator(...args)
    running.push(operator)
    return operator
  }

  before(async () => {
    await ensureCrds()
    client = adminClient()
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((operator) => operator.stop('SIGKILL')))
  })
  after(() => client.close())

  it('an invalid OperatorConfig gets a condition naming the field; once fixed, it is Ready — without a restart', async () => {
    const namespace = await freshNamespace(client, 'opcfg')
    // Created before the operator starts, so it is the first configuration it reads: never valid (with an invalid
    // one after a valid one, the last valid configuration stays in force: operator-transitions.test.ts).
    await client.create(configRef(namespace), {
      apiVersion: 'polycrate.io/v1alpha1',
      kind: 'OperatorConfig',
      metadata: {name: 'default', namespace},
      spec: {api_sync: {enabled: true, api_url: 'api.example.com'}, endpoint_discovery: {watch_namespaces: ['Prod_NS']}},
    })
    const operator = await start({kubeconfig: controlPlane().kubeconfigPath, namespace})
    const invalid = await eventually(async () => {
      const object = await client.get<OperatorConfigObject>(configRef(namespace))
      return condition(object, 'Valid')?.status === 'False' ? object : undefined
    }, 30_000, 'Valid=False')
    const message = condition(invalid, 'Valid')!.message!
    assert.match(message, /spec\.api_sync\.api_url: "api\.example\.com" is not an http\(s\) URL/)
    assert.match(message, /spec\.endpoint_discovery\.watch_namespaces\[0\]: "Prod_NS" is not a valid namespace name/)
    assert.equal(invalid.status?.phase, 'Error')
    assert.equal(condition(invalid, 'Ready')?.reason, 'DiscoveryPaused')

    const events = await client.request<{items: Array<{reason: string; type: string; message: string}>}>({
      path: `/api/v1/namespaces/${namespace}/events`,
      query: {fieldSelector: 'involvedObject.name=default'},
    })
    assert.ok(events.items.some((e) => e.type === 'Warning' && e.reason === 'InvalidSpec' && e.message.includes('spec.api_sync.api_url')))

    await client.mergePatch(configRef(namespace), {spec: {api_sync: {api_url: 'https://api.example.com'}, endpoint_discovery: {watch_namespaces: ['prod']}}})
    const fixed = await eventually(async () => {
      const object = await client.get<OperatorConfigObject>(configRef(namespace))
      return condition(object, 'Valid')?.status === 'True' ? object : undefined
    }, 30_000, 'Valid=True')
    assert.equal(fixed.status?.phase, 'Ready')
    assert.equal(fixed.status?.observed_generation, fixed.metadata?.generation)
    assert.equal(operator.child.exitCode, null, 'the operator exited')
    assert.equal(operator.logs().filter((l) => l.msg === 'starting polycrate operator').length, 1)
    assert.ok(operator.logs().some((l) => l.msg === 'OperatorConfig status updated' && l.controller === 'operatorconfig' && l.key === `${namespace}/default`),
      'reconcile lines carry controller and key')
    assert.equal(await operator.stop('SIGTERM'), 0)
  })

  it('survives an apiserver outage and reconciles what changed during it', async () => {
    const namespace = await freshNamespace(client, 'outage')
    const operator = await start({kubeconfig: controlPlane().kubeconfigPath, namespace})
    await client.create(configRef(namespace), {
      apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {},
    })
    await eventually(async () => condition(await client.get<OperatorConfigObject>(configRef(namespace)), 'Valid')?.status === 'True', 30_000, 'Ready before the outage')

    // The operator's apiserver goes away; a second one on the same etcd stays, and the change is made there.
    const extra = await controlPlane().startExtraApiServer()
    const other = KubeClient.from(loadKubeConfig({kubeconfig: extra.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
    const interruptions = () => operator.logs().filter((l) => l.msg === 'watch interrupted; retrying').length
    try {
      const before = interruptions()
      await controlPlane().stopApiServer()
      await other.mergePatch(configRef(namespace), {spec: {api_sync: {enabled: true, api_url: 'ftp://wrong'}}})
      // The positive signal: the operator saw the outage and retried its watches twice; it is still running.
      await eventually(async () => interruptions() >= before + 2, 30_000, 'two watch retries during the outage')
      assert.equal(operator.child.exitCode, null, 'the operator exited during the outage')
      await controlPlane().startApiServer()
      const after = await eventually(async () => {
        const object = await client.get<OperatorConfigObject>(configRef(namespace))
        return condition(object, 'Valid')?.status === 'False' ? object : undefined
      }, 90_000, 'the change made during the outage is reconciled')
      assert.match(condition(after, 'Valid')!.message!, /spec\.api_sync\.api_url: "ftp:\/\/wrong" is not an http\(s\) URL/)
      assert.ok(operator.logs().some((l) => l.msg === 'watch interrupted; retrying'), 'the watch errors were logged')
      assert.equal(operator.child.exitCode, null)
    } finally {
      other.close()
      await extra.stop()
    }
    assert.equal(await operator.stop('SIGTERM'), 0)
  })

  it('with --leader-elect exactly one of two reconciles and only its Pod is labelled leader; SIGKILL → the other takes over within 20 s; SIGTERM → lease released, label "false", exit 0', async () => {
    const namespace = await freshNamespace(client, 'leader')
    // Two Pods as the manifests' Deployment makes them (no kubelet runs them; the processes below play their part).
    const podRef = (name: string) => ({group: '', version: 'v1', plural: 'pods', namespace, name})
    for (const name of ['operator-a', 'operator-b']) {
      await eventually(() => client.create({group: '', version: 'v1', plural: 'pods', namespace}, {
        apiVersion: 'v1', kind: 'Pod', metadata: {name, namespace, labels: {'app.kubernetes.io/name': OPERATOR_NAME}},
        spec: {automountServiceAccountToken: false, containers: [{name: 'operator', image: 'unused'}]},
      }).then(() => true), 30_000, `Pod ${name} created (the namespace's ServiceAccount exists)`)
    }
    const a = await start({kubeconfig: controlPlane().kubeconfigPath, namespace, leaderElect: true, env: {POD_NAME: 'operator-a'}})
    const b = await start({kubeconfig: controlPlane().kubeconfigPath, namespace, leaderElect: true, args: ['--pod-name', 'operator-b']})
    const podOf = new Map([[a, 'operator-a'], [b, 'operator-b']])
    const leaderLabel = async (operator: OperatorProcess) => (await client.get<KubeObject>(podRef(podOf.get(operator)!))).metadata?.labels?.[LEADER_POD_LABEL]
    // What the webhook Service of `polycrate operator manifests` selects (every replica; the leader label only informs).
    const webhookService = operatorManifests({namespace, image: 'unused', replicas: 2, externalDnsWebhookPort: 8888, metricsPort: 8080, healthPort: 8081, vmServiceScrape: false}, operatorPermissions())
      .find((o) => o.kind === 'Service' && o.metadata?.name === OPERATOR_NAME) as KubeObject & {spec: {selector: Record<string, string>}}
    const selected = async () => (await client.request<{items: KubeObject[]}>({
      path: `/api/v1/namespaces/${namespace}/pods`,
      query: {labelSelector: Object.entries(webhookService.spec.selector).map(([key, value]) => `${key}=${value}`).join(',')},
    })).items.map((pod) => pod.metadata!.name!)
    const identity = async (operator: OperatorProcess) => (await operator.waitForLog((l) => l.msg === 'starting polycrate operator')).identity as string
    const [idA, idB] = [await identity(a), await identity(b)]
    const leaseRef = {group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace, name: 'polycrate-operator-leader'}
    type Lease = KubeObject & {spec?: {holderIdentity?: string; leaseDurationSeconds?: number}}
    const holder = await eventually(async () => (await client.getOrUndefined<Lease>(leaseRef))?.spec?.holderIdentity, 30_000, 'a lease holder')
    const [leader, standby] = holder === idA ? [a, b] : [b, a]
    assert.ok([idA, idB].includes(holder))

    // Two processes on one host cannot both serve the webhook port (in a cluster each Pod has its own network).
    await client.create(configRef(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {external_dns_webhook: {enabled: false}}})
    await leader.waitForLog((l) => l.msg === 'OperatorConfig status updated')
    // The standby reads the config too (it runs the features that serve on every replica), and writes nothing.
    await standby.waitForLog((l) => l.msg === 'controller started' && l.controller === 'operatorconfig')
    // The positive signals first: the standby is ready (caches synced) and has labelled its Pod a standby.
    const ready = await eventually(async () => {
      const response = await fetch(`${standby.probeUrl}/readyz?verbose`)
      return response.status === 200 ? response.text() : undefined
    }, 30_000, 'the standby is ready (caches synced)')
    assert.match(ready, /leader-election ok/)
    await eventually(async () => (await leaderLabel(leader)) === 'true' && (await leaderLabel(standby)) === 'false', 30_000, 'the leader\'s Pod labelled "true", the standby\'s "false"')
    assert.deepEqual(standby.logs().filter((l) => l.msg === 'controller started' && l.controller !== 'operatorconfig').map((l) => l.controller), [], 'the standby started controllers that write')
    assert.equal(standby.logs().some((l) => l.msg === 'OperatorConfig status updated'), false, 'the standby reconciled')
    assert.deepEqual((await selected()).sort(), ['operator-a', 'operator-b'], 'the webhook Service selects every replica (the webhooks serve on each)')

    const killedAt = Date.now()
    await leader.stop('SIGKILL')
    await standby.waitForLog((l) => l.msg === 'acquired leader lease', 25_000)
    const takeover = Date.now() - killedAt
    assert.ok(takeover < 20_000, `takeover took ${takeover} ms`)
    await standby.waitForLog((l) => l.msg === 'controller started')
    // The killed process could not take its label back; its container would be restarting (not ready) meanwhile.
    await eventually(async () => (await leaderLabel(standby)) === 'true', 30_000, 'the new leader\'s Pod labelled "true"')

    const code = await standby.stop('SIGTERM')
    assert.equal(code, 0)
    assert.equal(await leaderLabel(standby), 'false', 'a replica that shut down is labelled "false" before it exits')
    const lease = await client.get<Lease>(leaseRef)
    assert.equal(lease.spec?.holderIdentity ?? '', '', 'the lease was not released')
    assert.equal(lease.spec?.leaseDurationSeconds, 1)
  })

  it('out of a Pod, with no address given: /metrics, the probes and the external-dns webhook listen on loopback only', async function () {
    // The defaults' fixed ports must be free here (a developer's machine may run something on 8080).
    for (const port of [8080, 8081]) {
      if (await connects('127.0.0.1', port)) this.skip()
    }
    const namespace = await freshNamespace(client, 'loopback')
    const webhookPort = await freePort()
    await client.create(configRef(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {external_dns_webhook: {enabled: true, port: webhookPort}}})
    // No in-cluster service account here (and none pretended): what a laptop is.
    const operator = await start({kubeconfig: controlPlane().kubeconfigPath, namespace, defaultAddresses: true, env: {KUBERNETES_SERVICE_HOST: undefined, KUBERNETES_SERVICE_PORT: undefined}})
    const listening = async (msg: string) => (await operator.waitForLog((l) => l.msg === msg)).address
    assert.equal(await listening('metrics server listening'), '127.0.0.1:8080')
    assert.equal(await listening('health probe server listening'), '127.0.0.1:8081')
    assert.equal(await listening('external-dns webhook server listening'), `127.0.0.1:${webhookPort}`)
    const started = await operator.waitForLog((l) => l.msg === 'starting polycrate operator')
    assert.deepEqual([started.inPod, started.metrics, started.probes], [false, '127.0.0.1:8080', '127.0.0.1:8081'])
    for (const port of [8080, 8081, webhookPort]) {
      assert.equal(await connects('127.0.0.1', port), true, `127.0.0.1:${port} answers`)
      // Another address of this machine: 127.0.0.2 reaches a socket bound to every interface, not one bound to 127.0.0.1.
      assert.equal(await connects('127.0.0.2', port), false, `127.0.0.2:${port} is refused`)
    }
    assert.equal((await fetch(`${operator.probeUrl}/healthz`)).status, 200)
  })

  it('serves /metrics in Prometheus text format with controller-runtime\'s names, and /healthz + /readyz for `health`', async () => {
    const namespace = await freshNamespace(client, 'metrics')
    const operator = await start({kubeconfig: controlPlane().kubeconfigPath, namespace, leaderElect: true})
    await operator.waitForLog((l) => l.msg === 'controller started')
    await client.create(configRef(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {}})
    await operator.waitForLog((l) => l.msg === 'OperatorConfig status updated')

    const response = await fetch(operator.metricsUrl)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/)
    const text = await response.text()
    const families = parsePromText(text)
    for (const name of [
      'controller_runtime_reconcile_total', 'controller_runtime_reconcile_errors_total', 'controller_runtime_reconcile_time_seconds',
      'controller_runtime_max_concurrent_reconciles', 'controller_runtime_active_workers', 'workqueue_depth', 'workqueue_adds_total',
      'workqueue_queue_duration_seconds', 'workqueue_work_duration_seconds', 'workqueue_retries_total', 'leader_election_master_status',
      'rest_client_requests_total', 'process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes',
      'polycrate_operator_feature_status',
    ]) assert.ok(families.has(name), `${name} missing`)
    const endpointDiscovery = families.get('polycrate_operator_feature_status')!.samples.filter((s) => s.labels.feature === 'endpoint-discovery' && s.value === 1)
    assert.deepEqual(endpointDiscovery.map((s) => s.labels.state), ['running'])
    // What the alerting rules and the dashboard select is in this scrape, except the series of features that are off
    // here (API sync, the monitoring agent, the DNS webhooks register theirs when they start) and the external ones.
    const selected = [...alertRuleGroups({namespace}).flatMap((g) => g.rules.map((r) => r.expr)), ...dashboardExpressions(operatorDashboard({namespace}))]
      .flatMap((expr) => selectorsOf(expr).map((selector) => selector.metric))
    const missing = [...new Set(selected)].filter((metric) => !(metric in EXTERNAL_SERIES) && !/^(polycrate_api_|polycrate_agent_|probe_|polycrate_dns_webhook_)/.test(metric))
      .filter((metric) => !families.has(metric) && !families.has(metric.replace(/_(bucket|sum|count)$/, '')))
    assert.deepEqual(missing, [], 'selected by a rule or panel but not in /metrics')
    const reconciles = families.get('controller_runtime_reconcile_total')!.samples
    assert.ok(reconciles.some((s) => s.labels.controller === 'operatorconfig' && s.labels.result === 'success' && s.value >= 1))
    // .ci/run installs Debian's prometheus package for promtool; elsewhere the parser above is the check.
    if ((await execa('which', ['promtool'], {reject: false})).exitCode === 0) {
      const promtool = await execa('promtool', ['check', 'metrics'], {input: text, reject: false})
      const complaints = `${promtool.stdout}\n${promtool.stderr}`.split('\n').filter((line) => line.trim().length > 0)
      // Exit 3 = lint findings only (1 = unparsable). prom-client's own default gauges nodejs_active_*_total carry a
      // _total suffix promtool frowns on; everything of ours must be clean.
      const ours = complaints.filter((line) => !/^nodejs_active_(handles|requests|resources)_total non-counter/.test(line))
      assert.ok(promtool.exitCode === 0 || (promtool.exitCode === 3 && ours.length === 0), `promtool check metrics (${promtool.exitCode}): ${complaints.join('\n')}`)
    }

    assert.equal((await fetch(`${operator.probeUrl}/healthz`)).status, 200)
    // Ready once every informer has synced (a busy machine may take a moment): wait for it, then check the command.
    await eventually(async () => (await (await fetch(`${operator.probeUrl}/readyz`)).text()) === 'ok', 30_000, '/readyz ok')
    const {stdout, error} = await runCommand(['operator', 'health', '--url', operator.probeUrl])
    assert.equal(error, undefined)
    assert.match(stdout, /liveness\s+ok/)
    assert.match(stdout, /readiness\s+ok/)
    assert.equal(await operator.stop('SIGTERM'), 0)
  })
})
