/**
 * Status that tells the truth (issue 14, defects 2–5): APIConnected and its Events, API sync stopped by an invalid
 * config, ignored OperatorConfigs, a monitored Ingress with nothing to monitor, and a deleted polycrate.io CRD.
 * One in-process operator (JSON logs captured), the API simulator, the shared control plane.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import {runCommand} from '@oclif/test'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import {endpointCrd} from '../../src/crds/endpoint.js'
import {customResourceDefinitions} from '../../src/crds/render.js'
import type {KubeObject} from '../../src/kube/client.js'
import {installCrds} from '../../src/kube/crd-install.js'
import {controlPlane, freshNamespace} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {configRef, eventually} from '../support/helpers.js'

type OperatorConfigObject = KubeObject & {status?: OperatorConfigStatus}
type Event = {type: string; reason: string; message: string; involvedObject: {kind: string; name: string}}
const condition = (object: OperatorConfigObject | undefined, type: string) => object?.status?.conditions?.find((c) => c.type === type)

describe('status that tells the truth (in-process operator + simulator)', function () {
  this.timeout(180_000)
  const harness = inProcessOperator({spec: {local_cluster: {enabled: true, cluster_name: 'truth'}}, logLevel: 'info', probePort: true, waitForCluster: false})
  const logs = harness.logs

  const config = () => harness.client.get<OperatorConfigObject>(configRef(harness.namespace))
  const events = async (ns: string, name: string) =>
    (await harness.client.request<{items: Event[]}>({path: `/api/v1/namespaces/${ns}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items
  const waitFor = (check: (object: OperatorConfigObject) => boolean, what: string, timeoutMs = 30_000) =>
    eventually(async () => {
      const object = await config()
      return check(object) ? object : undefined
    }, timeoutMs, what)


  it('APIConnected flips are Events; the unreachable message says "Cannot reach" once; recovery is logged', async () => {
    await waitFor((o) => condition(o, 'APIConnected')?.status === 'True', 'connected')
    await eventually(async () => (await events(harness.namespace, 'default')).some((e) => e.type === 'Normal' && e.reason === 'APIConnected'), 10_000, 'Normal APIConnected Event')

    const closed = await freePort()
    await harness.client.mergePatch(configRef(harness.namespace), {spec: {api_sync: {api_url: `http://127.0.0.1:${closed}`}}})
    const unreachable = await waitFor((o) => condition(o, 'APIConnected')?.reason === 'APIUnreachable', 'APIUnreachable', 60_000)
    const message = condition(unreachable, 'APIConnected')!.message!
    assert.equal(message.match(/Cannot reach/g)?.length, 1, message)
    assert.match(message, new RegExp(`^Cannot reach the Polycrate API at http://127\\.0\\.0\\.1:${closed} .*Check the API URL and the network\\. Retrying every 2 s\\.$`))
    await eventually(async () => (await events(harness.namespace, 'default')).some((e) => e.type === 'Warning' && e.reason === 'APIUnreachable' && e.message === message), 10_000, 'Warning APIUnreachable Event')

    await harness.client.mergePatch(configRef(harness.namespace), {spec: {api_sync: {api_url: harness.sim.url}}})
    await waitFor((o) => condition(o, 'APIConnected')?.status === 'True', 'connected again', 60_000)
    await eventually(async () => logs.find((l) => l.msg === 'Polycrate API connection restored'), 10_000, 'recovery log line')
  })

  it('an invalid OperatorConfig change: API sync keeps running on the last valid configuration — APIConnected stays True, no APISyncStopped', async () => {
    await waitFor((o) => condition(o, 'APIConnected')?.status === 'True', 'connected')
    await harness.client.mergePatch(configRef(harness.namespace), {spec: {api_sync: {api_url: 'api.example.com'}}})
    const invalid = await waitFor((o) => condition(o, 'Valid')?.status === 'False', 'Valid=False')
    assert.match(condition(invalid, 'Valid')!.message!, /spec\.api_sync\.api_url: .*the last valid configuration .*stays in force/)
    // Two more status rounds of API sync: it still runs, connected, with the last valid URL.
    const heartbeats = harness.sim.list('agent/health').length
    await eventually(async () => harness.sim.list('agent/health').length >= heartbeats + 2, 30_000, 'heartbeats go on')
    const connected = condition(await waitFor(() => true, 'read'), 'APIConnected')!
    assert.equal(connected.status, 'True', `${connected.reason}: ${connected.message}`)
    assert.equal(harness.operator!.api.problem, undefined)
    assert.equal((await events(harness.namespace, 'default')).some((e) => e.reason === 'APISyncStopped'), false, 'no APISyncStopped Event')

    await harness.client.mergePatch(configRef(harness.namespace), {spec: {api_sync: {api_url: harness.sim.url}}})
    await waitFor((o) => condition(o, 'Valid')?.status === 'True' && condition(o, 'APIConnected')?.status === 'True', 'valid and connected again', 60_000)
  })

  it('ignored OperatorConfigs (<operator ns>/main, other/default) say that they are ignored and why', async () => {
    const other = await freshNamespace(harness.client, 'other')
    const spec = {api_sync: {enabled: false}}
    await harness.client.create(configRef(harness.namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'main', namespace: harness.namespace}, spec})
    await harness.client.create(configRef(other), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: other}, spec})
    const cases: Array<[string, string, RegExp]> = [
      [harness.namespace, 'main', /only the OperatorConfig named "default" is read, not "main"/],
      [other, 'default', new RegExp(`reads its OperatorConfig from its own namespace ${harness.namespace}, not ${other}`)],
    ]
    for (const [ns, name, why] of cases) {
      const ignored = await eventually(async () => {
        const object = await harness.client.get<OperatorConfigObject>(configRef(ns, name))
        return object.status?.phase === 'Ignored' ? object : undefined
      }, 30_000, `${ns}/${name} Ignored`)
      const ready = condition(ignored, 'Ready')!
      assert.deepEqual([ready.status, ready.reason], ['False', 'Ignored'])
      assert.match(ready.message!, why)
      assert.match(ready.message!, new RegExp(`move its settings to OperatorConfig ${harness.namespace}/default`))
      await eventually(async () => (await events(ns, name)).some((e) => e.type === 'Warning' && e.reason === 'Ignored' && why.test(e.message)), 10_000, `Ignored Event on ${ns}/${name}`)
    }
  })

  it('a monitored Ingress with no rules gets a Normal Event: nothing to monitor', async () => {
    const apps = await freshNamespace(harness.client, 'norules')
    await harness.client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: apps}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'backend-only', namespace: apps, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {defaultBackend: {service: {name: 'web', port: {number: 80}}}},
    })
    const event = await eventually(async () => (await events(apps, 'backend-only')).find((e) => e.reason === 'NothingToMonitor'), 30_000, 'NothingToMonitor Event')
    assert.equal(event.type, 'Normal')
    assert.equal(event.message, `Ingress ${apps}/backend-only is monitored, but there is nothing to monitor: the Ingress has no rules (at most a default backend), so it has no host to check.`)
  })

  it('a webhook whose port is in use is not reported healthy: Failed in status.controllers, Ready=False, /readyz failing; a free port → Running', async () => {
    const busy = net.createServer()
    await new Promise<void>((resolve) => busy.listen(0, resolve))
    const busyPort = (busy.address() as net.AddressInfo).port
    try {
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {enabled: true, port: busyPort}}})
      const failed = await waitFor((o) => (o.status?.controllers ?? []).some((c) => c.name === 'external-dns-webhook' && c.reason?.startsWith('Failed:')), 'webhook Failed')
      const state = failed.status!.controllers!.find((c) => c.name === 'external-dns-webhook')!
      assert.equal(state.running, false)
      assert.match(state.reason!, /^Failed: could not start: .*is in use.* \(OperatorConfig external_dns_webhook\.port\)$/)
      assert.equal(failed.status?.phase, 'Degraded')
      assert.equal(condition(failed, 'Ready')?.reason, 'FeatureFailed')
      const readyz = await fetch(`${harness.probeUrl}/readyz?verbose`)
      assert.notEqual(readyz.status, 200)
      assert.match(await readyz.text(), /features.*external-dns-webhook: could not start.*is in use/)

      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {port: await freePort()}}})
      const running = await waitFor((o) => (o.status?.controllers ?? []).some((c) => c.name === 'external-dns-webhook' && c.running), 'webhook Running')
      assert.equal(condition(running, 'Ready')?.status, 'True')
      await eventually(async () => (await fetch(`${harness.probeUrl}/readyz`)).status === 200, 30_000, '/readyz 200 again')
    } finally {
      busy.close()
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {enabled: false}}})
    }
  })

  it('`kubectl delete crd endpoints.polycrate.io`: Ready=False and /readyz failing, both naming the CRD and how to install it; back → Ready', async () => {
    // An Endpoint CR, so that the CRD has instances when it goes.
    const apps = await freshNamespace(harness.client, 'crdgone')
    await harness.client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: apps}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'web', namespace: apps, annotations: {polycrate_endpoint_monitor: 'true'}},
      spec: {rules: [{host: 'web.truth.example'}]},
    })
    await eventually(async () => (await harness.client.request<{items: unknown[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${apps}/endpoints`})).items.length === 1, 30_000, 'Endpoint CR')
    assert.equal((await fetch(`${harness.probeUrl}/readyz`)).status, 200)

    const crdRef = {group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'endpoints.polycrate.io'}
    await harness.client.delete(crdRef)
    // Endpoint CRs left by operators of other test files keep their sync finalizer: let them go.
    await eventually(async () => {
      const list = await harness.client.request<{items: KubeObject[]}>({path: '/apis/polycrate.io/v1alpha1/endpoints'}).catch(() => ({items: [] as KubeObject[]}))
      for (const object of list.items.filter((o) => ((o.metadata?.finalizers as string[] | undefined) ?? []).length > 0)) {
        await harness.client.mergePatch({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace: object.metadata!.namespace, name: object.metadata!.name}, {metadata: {finalizers: null}}).catch(() => {})
      }
      return (await harness.client.getOrUndefined(crdRef)) === undefined
    }, 60_000, 'CRD gone')

    const degraded = await waitFor((o) => condition(o, 'Ready')?.status === 'False', 'Ready=False')
    const ready = condition(degraded, 'Ready')!
    assert.equal(ready.reason, 'CRDsMissing')
    assert.equal(degraded.status?.phase, 'Degraded')
    assert.match(ready.message!, /endpoints\.polycrate\.io \(needed by endpoint-discovery, endpoint-sync\)/)
    assert.match(ready.message!, /polycrate operator install-crds/)
    assert.match(ready.message!, /polycrate operator crds \| kubectl apply -f -/)
    const states = new Map((degraded.status?.controllers ?? []).map((c) => [c.name, c]))
    assert.equal(states.get('endpoint-discovery')?.running, false)
    assert.match(states.get('endpoint-sync')?.reason ?? '', /^CRDsMissing: endpoints\.polycrate\.io/)
    const readyz = await fetch(`${harness.probeUrl}/readyz?verbose`)
    assert.notEqual(readyz.status, 200)
    assert.match(await readyz.text(), /crds.*endpoints\.polycrate\.io.*polycrate operator install-crds/)

    await installCrds(harness.client, customResourceDefinitions([endpointCrd]))
    await waitFor((o) => condition(o, 'Ready')?.status === 'True', 'Ready again')
    await eventually(async () => (await fetch(`${harness.probeUrl}/readyz`)).status === 200, 30_000, '/readyz 200 again')
    // and discovery runs again: the Ingress's Endpoint CR comes back
    await eventually(async () => (await harness.client.request<{items: unknown[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${apps}/endpoints`})).items.length === 1, 30_000, 'Endpoint CR again')
  })

  it('one truth: through a failed feature, an invalid config on top and the recovery, the Ready condition, /readyz, `health` and `status` agree', async () => {
    /** The four views of readiness at one moment (once the condition shows `expected`). */
    const views = async (expected: {ready: 'True' | 'False'; reason: string; valid: 'True' | 'False'}) => {
      const object = await waitFor((o) => condition(o, 'Ready')?.status === expected.ready && condition(o, 'Ready')?.reason === expected.reason && condition(o, 'Valid')?.status === expected.valid,
        `Ready=${expected.ready} ${expected.reason}, Valid=${expected.valid}`)
      const readyz = await eventually(async () => {
        const response = await fetch(`${harness.probeUrl}/readyz?verbose`)
        return (response.status === 200) === (expected.ready === 'True') ? {status: response.status, text: await response.text()} : undefined
      }, 30_000, `/readyz ${expected.ready === 'True' ? '200' : 'failing'}`)
      const health = await runCommand(['operator', 'health', '--url', harness.probeUrl])
      const status = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath, '--operator-namespace', harness.namespace, '--kind', 'oc', '-n', harness.namespace])
      return {object, readyz, health, status}
    }
    const busy = net.createServer()
    await new Promise<void>((resolve) => busy.listen(0, resolve))
    const busyPort = (busy.address() as net.AddressInfo).port
    try {
      // 1. The external-dns webhook cannot start: its port is taken.
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {enabled: true, port: busyPort}}})
      const failed = await views({ready: 'False', reason: 'FeatureFailed', valid: 'True'})
      assert.match(failed.readyz.text, /\[-\]features failed: external-dns-webhook: could not start/)
      assert.equal(failed.health.error?.oclif?.exit, 1, 'health fails')
      assert.match(failed.health.stdout, /readiness\s+(failed|not ready)/)
      assert.equal(failed.status.error, undefined, 'the operator runs: status exits 0')
      assert.match(failed.status.stdout, /^ {2}Phase: +Degraded$/m)
      assert.match(failed.status.stdout, /^ {4}Ready +False +FeatureFailed +Not running: external-dns-webhook/m)

      // 2. Then an invalid config on top: the last valid configuration stays in force, and that hides nothing.
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {node_discovery: {label_selector: 'a b=c!!'}}})
      const invalid = await views({ready: 'False', reason: 'FeatureFailed', valid: 'False'})
      assert.match(invalid.object.status?.message ?? '', /^Not running: external-dns-webhook .*Invalid OperatorConfig: spec\.node_discovery\.label_selector/)
      assert.equal(invalid.health.error?.oclif?.exit, 1)
      assert.match(invalid.status.stdout, /^ {4}Ready +False +FeatureFailed /m)
      assert.doesNotMatch(invalid.status.stdout, /LastValidConfigInForce/)

      // 3. The spec fixed, the port still taken: valid, and still not ready — a change while invalid was not applied.
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {node_discovery: {label_selector: ''}}})
      const stillFailed = await views({ready: 'False', reason: 'FeatureFailed', valid: 'True'})
      assert.equal(stillFailed.health.error?.oclif?.exit, 1)

      // 4. A free port: Ready — all four say so.
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {port: await freePort()}}})
      const fixed = await views({ready: 'True', reason: 'ControllersRunning', valid: 'True'})
      assert.equal(fixed.readyz.status, 200)
      assert.equal(fixed.health.error, undefined)
      assert.match(fixed.status.stdout, /^ {2}Phase: +Ready$/m)

      // 5. An invalid change with nothing failing: ready on the last valid configuration (Degraded, Valid=False), and health agrees.
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {node_discovery: {label_selector: 'a b=c!!'}}})
      const lastValid = await views({ready: 'True', reason: 'LastValidConfigInForce', valid: 'False'})
      assert.equal(lastValid.readyz.status, 200)
      assert.equal(lastValid.health.error, undefined)
      assert.match(lastValid.status.stdout, /^ {4}Ready +True +LastValidConfigInForce /m)
      assert.match(lastValid.status.stdout, /^ {2}Phase: +Degraded$/m)
    } finally {
      busy.close()
      await harness.client.mergePatch(configRef(harness.namespace), {spec: {external_dns_webhook: {enabled: false}, node_discovery: {label_selector: ''}}})
    }
  })
})
