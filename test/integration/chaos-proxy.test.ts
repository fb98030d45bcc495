/**
 * The kube fault proxy of the fault campaign against the real apiserver: it forwards with the admin token, counts
 * writes per resource and calls the crash hook after write k took effect (before the client sees the answer), keeps a
 * LIST and answers it once stale (time travel) before catching up, cuts watches and answers the next one 410 Gone,
 * holds watch events, injects failures, and refuses connections for a while.
 */
import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {nameSignal} from '../../src/lib/request-origin.js'
import {KubeApiError, KubeClient, type KubeObject} from '../../src/kube/client.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {startKubeFaultProxy, type KubeFaultProxy} from '../support/chaos/kube-proxy.js'
import {adminClient, controlPlane, freshNamespace} from '../support/cluster.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'
import {eventually} from '../support/helpers.js'

const configMaps = (namespace: string, name?: string) => ({group: '', version: 'v1', plural: 'configmaps', namespace, name})
type List = {metadata: {resourceVersion: string}; items: KubeObject[]}

describe('chaos kube fault proxy (real apiserver)', function () {
  this.timeout(60_000)
  let proxy: KubeFaultProxy
  let viaProxy: KubeClient
  let admin: KubeClient
  let namespace: string
  let dir: string

  before(async () => {
    admin = adminClient()
    namespace = await freshNamespace(admin, 'proxy')
    proxy = await startKubeFaultProxy({upstream: controlPlane().server, token: controlPlane().token})
    dir = await mkdtemp(path.join(os.tmpdir(), 'chaos-proxy-'))
    // A token the apiserver does not know: the proxy forwards with the admin token.
    const kubeconfig = await writeKubeconfig(path.join(dir, 'kubeconfig'), proxy.url, 'not-a-real-token')
    viaProxy = KubeClient.from(loadKubeConfig({kubeconfig}), {fieldManager: 'chaos-test'})
  })
  after(async () => {
    viaProxy?.close()
    admin?.close()
    await proxy?.close()
    await rm(dir, {recursive: true, force: true})
  })

  const cm = (name: string, data: Record<string, string> = {}) => ({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name, namespace}, data})

  it('forwards with the admin token and counts successful writes per write point (controller, verb, resource); a failed write is not one', async () => {
    proxy.writes.reset()
    const reconcile = new AbortController()
    nameSignal(reconcile.signal, 'config-writer')
    await viaProxy.create(configMaps(namespace), cm('a'))
    await viaProxy.mergePatch(configMaps(namespace, 'a'), {data: {x: '1'}}, {signal: reconcile.signal})
    await viaProxy.mergePatch(configMaps(namespace, 'a'), {data: {x: '2'}}, {signal: reconcile.signal})
    await assert.rejects(viaProxy.create(configMaps(namespace), cm('a')), (error: unknown) => error instanceof KubeApiError && error.status === 409)
    assert.deepEqual(proxy.writes.points, ['kube runtime create core/configmaps#1', 'kube config-writer patch core/configmaps#1', 'kube config-writer patch core/configmaps#2'])
  })

  it('crash after write k: the hook runs once the apiserver answered write k (the write took effect), before the client has the answer', async () => {
    proxy.writes.reset()
    const seen: string[] = []
    let clientHadAnswer = false
    proxy.onCrash = (point) => seen.push(`${point} answered-to-client=${clientHadAnswer}`)
    proxy.crashAfterWrites([{point: 'kube runtime create core/configmaps', k: 2}])
    await viaProxy.create(configMaps(namespace), cm('k1'))
    const second = viaProxy.create(configMaps(namespace), cm('k2')).then(() => {
      clientHadAnswer = true
    })
    await second
    await viaProxy.create(configMaps(namespace), cm('k3'))
    proxy.onCrash = undefined
    assert.deepEqual(seen, ['kube runtime create core/configmaps#2 answered-to-client=false'])
    assert.ok(await admin.getOrUndefined(configMaps(namespace, 'k2')), 'write 2 took effect')
  })

  it('stale LIST: the relist after a watch answered 410 gets the first body the proxy kept, once; a new lister never does; then it catches up', async () => {
    const path = `/api/v1/namespaces/${namespace}/configmaps`
    const first = await viaProxy.request<List>({path, query: {limit: 500}})
    await admin.create(configMaps(namespace), cm('later'))
    assert.equal(proxy.staleList('core/configmaps'), true)
    const newcomer = await viaProxy.request<List>({path, query: {limit: 500}})
    assert.ok(newcomer.items.some((item) => item.metadata?.name === 'later'), 'a first list (no watch answered 410 before it) is current')
    proxy.closeWatches('core/configmaps')
    await assert.rejects(viaProxy.request({path, query: {watch: true, resourceVersion: newcomer.metadata.resourceVersion}}), (error: unknown) => error instanceof KubeApiError && error.status === 410)
    const stale = await viaProxy.request<List>({path, query: {limit: 500}})
    assert.equal(stale.metadata.resourceVersion, first.metadata.resourceVersion, 'time travel: the older list')
    assert.ok(!stale.items.some((item) => item.metadata?.name === 'later'))
    const fresh = await viaProxy.request<List>({path, query: {limit: 500}})
    assert.ok(fresh.items.some((item) => item.metadata?.name === 'later'), 'caught up')
    assert.equal(proxy.counts.staleLists, 1)
  })

  it('watches are forwarded line by line; held events arrive late; closing cuts the watch and the next watch gets 410 Gone', async () => {
    const path = `/api/v1/namespaces/${namespace}/configmaps`
    const {metadata} = await viaProxy.request<List>({path})
    proxy.holdWatches(800, 'core/configmaps', 5_000)
    const stream = await viaProxy.stream({path, query: {watch: true, resourceVersion: metadata.resourceVersion}})
    const lines: Array<{at: number; line: string}> = []
    let partial = ''
    const ended = new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => {
        partial += chunk.toString()
        let newline: number
        while ((newline = partial.indexOf('\n')) >= 0) {
          lines.push({at: Date.now(), line: partial.slice(0, newline)})
          partial = partial.slice(newline + 1)
        }
      })
      stream.on('end', resolve)
      stream.on('close', resolve)
    })
    const created = Date.now()
    await admin.create(configMaps(namespace), cm('watched'))
    const event = await eventually(() => lines.find((l) => l.line.includes('"watched"')), 5_000, 'the ADDED event through the proxy')
    assert.equal(JSON.parse(event.line).type, 'ADDED')
    assert.ok(event.at - created >= 700, `held about 800 ms (got ${event.at - created} ms)`)
    proxy.holdWatches(0, undefined, 0)
    assert.equal(proxy.closeWatches('core/configmaps'), 1)
    await ended
    await assert.rejects(viaProxy.request({path, query: {watch: true, resourceVersion: metadata.resourceVersion}}), (error: unknown) => error instanceof KubeApiError && error.status === 410)
  })

  it('injected failures: 429 with Retry-After, 503, and they are consumed', async () => {
    const before = {...proxy.counts.failures}
    proxy.fail({verb: 'get', resource: 'core/configmaps', kind: 429})
    proxy.fail({verb: 'get', resource: 'core/configmaps', kind: 503})
    // The client honours the 429's Retry-After (as client-go does); its retry meets the 503, which names no wait.
    await assert.rejects(viaProxy.get(configMaps(namespace, 'a')), (error: unknown) => error instanceof KubeApiError && error.status === 503)
    assert.equal((proxy.counts.failures['429'] ?? 0) - (before['429'] ?? 0), 1, 'the 429 was answered once')
    assert.equal((await viaProxy.get(configMaps(namespace, 'a'))).metadata?.name, 'a')
    const response = await fetch(`${proxy.url}/api/v1/namespaces/${namespace}/configmaps/a`)
    assert.equal(response.status, 200)
    proxy.fail({kind: 429})
    const limited = await fetch(`${proxy.url}/api/v1/namespaces/${namespace}/configmaps/a`)
    assert.equal(limited.status, 429)
    assert.equal(limited.headers.get('retry-after'), '1')
  })

  it('refuses connections for T, then serves again', async () => {
    proxy.refuseFor(1500)
    await assert.rejects(fetch(`${proxy.url}/api/v1/namespaces/${namespace}/configmaps/a`))
    const served = await eventually(() => fetch(`${proxy.url}/api/v1/namespaces/${namespace}/configmaps/a`), 10_000, 'the proxy serving again')
    assert.equal(served.status, 200)
  })
})
