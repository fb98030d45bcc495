import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {KubeApiError, KubeClient, retryAfterMs} from '../../../src/kube/client.js'
import {loadKubeConfig} from '../../../src/kube/kubeconfig.js'

describe('KubeClient: answers that ask to come back later (Retry-After, as client-go)', () => {
  const cases: Array<[status: number, header: string | undefined, attempt: number, expected: number | undefined]> = [
    [429, '1', 1, 1000],
    [429, ' 2 ', 1, 2000],
    [503, '1', 1, 1000],
    [500, '0', 3, 0],
    [429, '60', 1, 10_000], // capped
    [429, undefined, 1, undefined], // no header: the caller's backoff decides
    [429, 'Wed, 21 Oct 2026 07:28:00 GMT', 1, undefined], // an HTTP date: not what the apiserver sends
    [409, '1', 1, undefined],
    [404, '1', 1, undefined],
    [200, '1', 1, undefined],
    [429, '1', 10, 1000],
    [429, '1', 11, undefined], // at most 10 retries
  ]
  for (const [status, header, attempt, expected] of cases) {
    it(`${status} Retry-After ${JSON.stringify(header)}, attempt ${attempt} → ${expected ?? 'no retry'}`, () => {
      assert.equal(retryAfterMs(status, header, attempt), expected)
    })
  }

  let server: http.Server
  let dir: string
  let client: KubeClient
  let answers: Array<{status: number; retryAfter?: string}> = []
  let requests = 0
  before(async () => {
    server = http.createServer((request, response) => {
      requests++
      const answer = answers.shift() ?? {status: 200}
      response.statusCode = answer.status
      if (answer.retryAfter !== undefined) response.setHeader('retry-after', answer.retryAfter)
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify(answer.status === 200
        ? {kind: 'Namespace', metadata: {name: 'x'}}
        : {kind: 'Status', status: 'Failure', message: 'storage is (re)initializing', reason: 'TooManyRequests', code: answer.status}))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    dir = await mkdtemp(path.join(tmpdir(), 'kube-retry-'))
    const file = path.join(dir, 'kubeconfig')
    await writeFile(file, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
      clusters: [{name: 'test', cluster: {server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'insecure-skip-tls-verify': true}}], // plain HTTP: client-node asks for this
      users: [{name: 'user', user: {token: 't'}}],
      contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    }))
    client = KubeClient.from(loadKubeConfig({kubeconfig: file}))
  })
  after(async () => {
    client.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await rm(dir, {recursive: true, force: true})
  })
  beforeEach(() => {
    requests = 0
  })

  it('429 with Retry-After (twice), then 200 → the 200, three requests', async () => {
    answers = [{status: 429, retryAfter: '0'}, {status: 429, retryAfter: '0'}]
    const namespace = await client.get({group: '', version: 'v1', plural: 'namespaces', name: 'x'})
    assert.equal(namespace.metadata?.name, 'x')
    assert.equal(requests, 3)
  })

  it('429 without Retry-After → the error at once (one request)', async () => {
    answers = [{status: 429}]
    await assert.rejects(client.get({group: '', version: 'v1', plural: 'namespaces', name: 'x'}), (error: unknown) => error instanceof KubeApiError && error.status === 429)
    assert.equal(requests, 1)
  })

  it('a write is retried too (the apiserver did not take it)', async () => {
    answers = [{status: 429, retryAfter: '0'}]
    await client.create({group: '', version: 'v1', plural: 'namespaces'}, {metadata: {name: 'x'}})
    assert.equal(requests, 2)
  })

  it('the abort signal ends the wait', async () => {
    answers = [{status: 429, retryAfter: '5'}]
    const controller = new AbortController()
    const pending = client.request({path: '/api/v1/namespaces/x', signal: controller.signal})
    // Positive signal first: the server answered once, so the client is in its wait.
    while (requests < 1) await new Promise((resolve) => setImmediate(resolve))
    controller.abort()
    await assert.rejects(pending, (error: Error) => error.name === 'AbortError')
    assert.equal(requests, 1)
  })
})
