import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {KubeClient} from '../../../src/kube/client.js'
import {loadKubeConfig} from '../../../src/kube/kubeconfig.js'
import {nameSignal} from '../../../src/lib/request-origin.js'
import {operatorVersion} from '../../../src/version.js'
import {createCertificate, type CertificateAndKey} from '../../../src/lib/x509.js'

/**
 * client-node's applyToHTTPSOptions puts a new https.Agent on every request; KubeClient must keep its pooled
 * keep-alive agent (one TLS handshake, not one per request) and still verify the server with the kubeconfig's CA.
 */
describe('KubeClient connections', () => {
  let serving: CertificateAndKey
  let stranger: CertificateAndKey
  let server: https.Server
  let url: string
  let dir: string
  let handshakes = 0
  const authorizations: Array<string | undefined> = []
  const userAgents: Array<string | undefined> = []

  before(async () => {
    serving = await createCertificate({commonName: 'apiserver', ipAddresses: ['127.0.0.1']})
    stranger = await createCertificate({commonName: 'someone else', ipAddresses: ['127.0.0.1']})
    server = https.createServer({cert: serving.cert, key: serving.key}, (request, response) => {
      authorizations.push(request.headers.authorization)
      userAgents.push(request.headers['user-agent'])
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({kind: 'Namespace', metadata: {name: 'x'}}))
    })
    server.on('secureConnection', () => handshakes++)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
    dir = await mkdtemp(path.join(tmpdir(), 'kube-client-'))
  })
  after(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await rm(dir, {recursive: true, force: true})
  })

  async function clientTrusting(ca: string): Promise<KubeClient> {
    const file = path.join(dir, `${Math.random().toString(16).slice(2)}.yaml`)
    await writeFile(file, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
      clusters: [{name: 'test', cluster: {server: url, 'certificate-authority-data': Buffer.from(ca).toString('base64')}}],
      users: [{name: 'user', user: {token: 'secret-token'}}],
      contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    }))
    return KubeClient.from(loadKubeConfig({kubeconfig: file}))
  }

  it('30 requests (20 one after another, 10 at once) reuse pooled connections: at most 10 TLS handshakes, not 30', async () => {
    const client = await clientTrusting(serving.cert)
    handshakes = 0
    authorizations.length = 0
    try {
      for (let i = 0; i < 20; i++) await client.request({path: '/api/v1/namespaces/x'})
      assert.equal(handshakes, 1, 'one after another: one connection')
      await Promise.all(Array.from({length: 10}, () => client.request({path: '/api/v1/namespaces/x'})))
      assert.ok(handshakes <= 10, `${handshakes} handshakes for 10 concurrent requests`)
      assert.equal(authorizations.length, 30)
      assert.ok(authorizations.every((value) => value === 'Bearer secret-token'), 'the kubeconfig user\'s token on every request')
    } finally {
      client.close()
    }
  })

  it('names the operator and version in its User-Agent, and the controller whose reconcile signal the request carries', async () => {
    const client = await clientTrusting(serving.cert)
    userAgents.length = 0
    try {
      const reconcile = new AbortController()
      nameSignal(reconcile.signal, 'host-discovery')
      await client.request({path: '/api/v1/namespaces/x'})
      await client.request({path: '/api/v1/namespaces/x', signal: new AbortController().signal})
      await client.mergePatch({group: '', version: 'v1', plural: 'namespaces', name: 'x'}, {}, {signal: reconcile.signal})
      const version = operatorVersion()
      assert.deepEqual(userAgents, [`polycrate-operator/${version}`, `polycrate-operator/${version}`, `polycrate-operator/${version} controller/host-discovery`])
    } finally {
      client.close()
    }
  })

  it('the pooled agent still verifies the server against the kubeconfig\'s CA', async () => {
    const client = await clientTrusting(stranger.cert)
    try {
      await assert.rejects(client.request({path: '/api/v1/namespaces/x'}), /certificate|self.signed|unable to verify/i)
    } finally {
      client.close()
    }
  })

  /** Listens with a plain HTTP server and gives a KubeClient for it (a kubeconfig with a token). */
  async function clientOf(plain: http.Server): Promise<KubeClient> {
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
    const file = path.join(dir, `${Math.random().toString(16).slice(2)}.yaml`)
    await writeFile(file, yaml.dump({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
      clusters: [{name: 'test', cluster: {server: `http://127.0.0.1:${(plain.address() as AddressInfo).port}`, 'insecure-skip-tls-verify': true}}],
      users: [{name: 'user', user: {token: 'secret-token'}}],
      contexts: [{name: 'test', context: {cluster: 'test', user: 'user'}}],
    }))
    return KubeClient.from(loadKubeConfig({kubeconfig: file}))
  }

  describe('a pooled connection the server closed as idle (the keep-alive race)', () => {
    /**
     * A plain HTTP server that drops the connection without an answer when a request arrives as the `drop`-th on its
     * connection: what a server closing an idle keep-alive connection while the client reuses it looks like to the
     * client (a reset before any answer).
     */
    async function dropping(drop: (nth: number) => boolean) {
      const seen: string[] = []
      const perSocket = new WeakMap<object, number>()
      const plain = http.createServer((request, response) => {
        const nth = (perSocket.get(request.socket) ?? 0) + 1
        perSocket.set(request.socket, nth)
        seen.push(`${request.method} #${nth}`)
        if (drop(nth)) return void request.socket.destroy()
        response.setHeader('content-type', 'application/json')
        response.end(JSON.stringify({kind: 'Namespace', metadata: {name: 'x'}}))
      })
      const client = await clientOf(plain)
      return {client, seen, async close() {
        client.close()
        plain.closeAllConnections()
        await new Promise((resolve) => plain.close(resolve))
      }}
    }

    it('a write sent on a reused connection that is reset before any answer goes again once, on a new connection', async () => {
      const server = await dropping((nth) => nth === 2)
      try {
        await server.client.request({path: '/api/v1/namespaces/x'})
        const patched = await server.client.mergePatch({group: '', version: 'v1', plural: 'namespaces', name: 'x'}, {metadata: {labels: {a: 'b'}}})
        assert.equal(patched.metadata?.name, 'x')
        assert.deepEqual(server.seen, ['GET #1', 'PATCH #2', 'PATCH #1'])
      } finally {
        await server.close()
      }
    })

    it('a reset on a new connection is not sent again: the caller gets the connection error', async () => {
      const server = await dropping(() => true)
      try {
        await assert.rejects(server.client.request({path: '/api/v1/namespaces/x'}), (error: Error) => error.name === 'KubeConnectionError' && /ECONNRESET/.test(error.message))
        assert.deepEqual(server.seen, ['GET #1'])
      } finally {
        await server.close()
      }
    })
  })
  describe('an answer that does not arrive whole', () => {
    /** A plain HTTP server that sends the headers and half of a 2,000-byte body, then resets or stalls. */
    async function halfBody(then: 'reset' | 'stall') {
      const plain = http.createServer((_request, response) => {
        response.writeHead(200, {'content-type': 'application/json', 'content-length': '2000'})
        response.write(`{"kind":"Namespace","pad":"${'x'.repeat(950)}`)
        if (then === 'reset') setTimeout(() => response.socket?.destroy(), 20)
      })
      const client = await clientOf(plain)
      return {client, async close() {
        client.close()
        plain.closeAllConnections()
        await new Promise((resolve) => plain.close(resolve))
      }}
    }

    it('cut mid-body: the request rejects with ECONNRESET', async () => {
      const server = await halfBody('reset')
      try {
        await assert.rejects(server.client.request({path: '/api/v1/namespaces/x'}), (error: NodeJS.ErrnoException) => error.code === 'ECONNRESET')
      } finally {
        await server.close()
      }
    })

    it('aborted mid-body: the request rejects at once, the rest of the answer never comes', async () => {
      const server = await halfBody('stall')
      try {
        const abort = new AbortController()
        setTimeout(() => abort.abort(), 50)
        await assert.rejects(server.client.request({path: '/api/v1/namespaces/x', signal: abort.signal}), (error: NodeJS.ErrnoException) => error.name === 'AbortError' || error.code === 'ECONNRESET')
        assert.ok(abort.signal.aborted)
      } finally {
        await server.close()
      }
    })
  })
})
