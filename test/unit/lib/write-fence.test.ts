import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {PolycrateApiClient} from '../../../src/api/index.js'
import {isKubeWrite, isReview, KubeClient} from '../../../src/kube/client.js'
import {loadKubeConfig} from '../../../src/kube/kubeconfig.js'
import {WriteFencedError} from '../../../src/lib/write-fence.js'
import {ApiSession} from '../../../src/operator/agent/api-session.js'

describe('write fence: what counts as a write, and the clients asking the fence before a write goes out', () => {
  const cases: Array<[method: string, path: string, write: boolean]> = [
    ['POST', '/api/v1/namespaces/a/configmaps', true],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/a/leases/l', true],
    ['PATCH', '/apis/polycrate.io/v1alpha1/namespaces/a/endpoints/e/status', true],
    ['DELETE', '/api/v1/namespaces/a/secrets/s', true],
    ['GET', '/api/v1/namespaces/a/secrets', false],
    ['POST', '/apis/authentication.k8s.io/v1/tokenreviews', false],
    ['POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', false],
    ['POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', false],
    ['POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', false],
    ['POST', '/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews', false],
    ['POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', false],
    // A DELETE in those groups is not a review (and not served): still a write.
    ['DELETE', '/apis/authorization.k8s.io/v1/subjectaccessreviews', true],
  ]
  for (const [method, at, write] of cases) {
    it(`${method} ${at} → ${write ? 'a write' : 'not a write'}`, () => {
      assert.equal(isKubeWrite(method, at), write)
      if (!write && method === 'POST') assert.equal(isReview(method, at), true)
    })
  }

  let server: http.Server
  let dir: string
  let url: string
  const seen: string[] = []
  before(async () => {
    server = http.createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`)
      request.resume()
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({kind: 'ConfigMap', metadata: {name: 'x'}, id: 'x'}))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    dir = await mkdtemp(path.join(tmpdir(), 'fence-'))
  })
  after(async () => {
    await new Promise((resolve) => server.close(resolve))
    await rm(dir, {recursive: true, force: true})
  })
  beforeEach(() => {
    seen.length = 0
  })

  const kubeClient = async () => {
    const file = path.join(dir, 'kubeconfig')
    await writeFile(file, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
      clusters: [{name: 'test', cluster: {server: url, 'insecure-skip-tls-verify': true}}],
      users: [{name: 'user', user: {token: 't'}}],
      contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    }))
    return KubeClient.from(loadKubeConfig({kubeconfig: file}))
  }
  const cm = {group: '', version: 'v1', plural: 'configmaps', namespace: 'a', name: 'x'}

  it('kube: a closed fence refuses writes (nothing sent); reads, reviews and unfenced writes go out', async () => {
    const client = await kubeClient()
    try {
      client.writeFence = () => 'not the leader'
      await assert.rejects(client.mergePatch(cm, {data: {a: '1'}}), (error: unknown) => error instanceof WriteFencedError && /not the leader/.test(error.message) && error.method === 'PATCH')
      await assert.rejects(client.create(cm, {}), WriteFencedError)
      await assert.rejects(client.delete(cm), WriteFencedError)
      assert.deepEqual(seen, [])
      await client.get(cm)
      await client.create({group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews'}, {})
      await client.mergePatch({...cm, plural: 'pods'}, {metadata: {labels: {l: 'false'}}}, {unfenced: true})
      assert.deepEqual(seen, ['GET /api/v1/namespaces/a/configmaps/x', 'POST /apis/authorization.k8s.io/v1/subjectaccessreviews', 'PATCH /api/v1/namespaces/a/pods/x'])
      client.writeFence = () => undefined
      await client.mergePatch(cm, {data: {a: '1'}})
      assert.equal(seen.at(-1), 'PATCH /api/v1/namespaces/a/configmaps/x')
    } finally {
      client.close()
    }
  })

  it('kube: the fence is asked again at the last moment, once the connection is there (a process frozen in between sends nothing)', async () => {
    const client = await kubeClient()
    try {
      const answers = [undefined, 'renew deadline passed']
      let asked = 0
      client.writeFence = () => answers[asked++]
      await assert.rejects(client.mergePatch(cm, {data: {a: '1'}}), (error: unknown) => error instanceof WriteFencedError && /renew deadline passed/.test(error.message))
      assert.equal(asked, 2)
      assert.deepEqual(seen, [])
    } finally {
      client.close()
    }
  })

  it('Polycrate API: a closed fence refuses every method but GET before fetch is called, and a retry after the fence closed is not sent', async () => {
    let fence: string | undefined = 'not the leader'
    const calls: string[] = []
    let status = 200
    const client = new PolycrateApiClient({
      baseUrl: 'http://api.invalid', token: 't', retry: {maxAttempts: 2, baseDelayMs: 0}, writeFence: () => fence,
      fetch: (async (input: URL, init: RequestInit) => {
        calls.push(`${init.method} ${input.pathname}`)
        const answer = status
        status = 200
        if (answer !== 200) fence = 'renew deadline passed' // the fence closes while the first attempt is answered
        return new Response(JSON.stringify({id: 'e'}), {status: answer, headers: {'content-type': 'application/json'}})
      }) as typeof fetch,
    })
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      await assert.rejects(client.request({method, path: '/api/v1/endpoints/'}), (error: unknown) => error instanceof WriteFencedError && error.reason === 'not the leader')
    }
    assert.deepEqual(calls, [])
    await client.request({method: 'GET', path: '/api/v1/endpoints/'})
    assert.deepEqual(calls, ['GET /api/v1/endpoints/'])
    fence = undefined
    status = 502
    await assert.rejects(client.request({method: 'POST', path: '/api/v1/endpoints/', body: {}}), (error: unknown) => error instanceof WriteFencedError && error.reason === 'renew deadline passed')
    assert.deepEqual(calls, ['GET /api/v1/endpoints/', 'POST /api/v1/endpoints/'], 'the retry went out after the fence closed')
  })

  it('ApiSession: the reconciles\' client asks the fence; the DNS webhooks\' requestClient (a caller waits on it, on any replica) does not', async () => {
    const posts: string[] = []
    const server = http.createServer((req, res) => {
      posts.push(`${req.method} ${req.url}`)
      res.writeHead(201, {'content-type': 'application/json'}).end(JSON.stringify({id: 'r'}))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const session = new ApiSession({writeFence: () => 'not the leader'})
      session.clientFor(url, 't')
      assert.equal(session.requestClient, undefined, 'not before the workspace is resolved')
      session.connected({workspaceId: 'w', workspaceName: 'w'})
      await assert.rejects(session.client!.request({method: 'POST', path: '/api/v1/dnsrecords/', body: {}}), WriteFencedError)
      assert.deepEqual(posts, [])
      await session.requestClient!.request({method: 'POST', path: '/api/v1/dnsrecords/', body: {}})
      assert.deepEqual(posts, ['POST /api/v1/dnsrecords/'])
      assert.equal(session.requestClient, session.requestClient, 'one client while URL and token stay')
      const open = new ApiSession()
      open.clientFor(url, 't')
      open.connected({workspaceId: 'w', workspaceName: 'w'})
      assert.equal(open.requestClient, open.client, 'without a fence: the same client')
    } finally {
      server.close()
    }
  })
})
