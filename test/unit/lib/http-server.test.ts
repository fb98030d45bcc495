import assert from 'node:assert/strict'
import {X509Certificate, createPrivateKey, type KeyObject} from 'node:crypto'
import {Agent, createServer, request as httpRequest, type IncomingHttpHeaders} from 'node:http'
import {request as httpsRequest, type RequestOptions} from 'node:https'
import type {Socket} from 'node:net'
import type {TLSSocket} from 'node:tls'
import {
  HttpError,
  allowMethods,
  formatAddress,
  parseBindAddress,
  readBody,
  sendJson,
  sendText,
  startHttpServer,
  type RunningHttpServer,
} from '../../../src/lib/http-server.js'
import {createLogger} from '../../../src/lib/logger.js'
import {createCertificate} from '../../../src/lib/x509.js'

const base = (server: RunningHttpServer) => `http://127.0.0.1:${server.address.port}`

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/** One request with node:http(s) (fetch cannot take a CA or a client certificate). */
function call(url: string, options: RequestOptions & {body?: string} = {}): Promise<Answer> {
  const {body, ...rest} = options
  const send = url.startsWith('https:') ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = send(url, rest, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString()}))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('parseBindAddress', () => {
  const valid: Array<[string, {host: string; port: number} | undefined]> = [
    [':8080', {host: '::', port: 8080}],
    [':0', {host: '::', port: 0}],
    ['127.0.0.1:8081', {host: '127.0.0.1', port: 8081}],
    ['0.0.0.0:9090', {host: '0.0.0.0', port: 9090}],
    ['[::1]:8081', {host: '::1', port: 8081}],
    ['[::]:8081', {host: '::', port: 8081}],
    ['localhost:8081', {host: 'localhost', port: 8081}],
    ['metrics.example.com:65535', {host: 'metrics.example.com', port: 65535}],
    ['  :8080  ', {host: '::', port: 8080}],
    ['0', undefined],
    ['', undefined],
    ['  ', undefined],
  ]
  for (const [input, expected] of valid) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(parseBindAddress(input), expected)
    })
  }

  const invalid: Array<[string, RegExp]> = [
    ['8080', /the port needs a leading colon \(":8080"\)/],
    ['localhost', /missing ":port"/],
    [':', /missing port/],
    [':http', /"http" is not a port number/],
    [':65536', /port 65536 is above 65535/],
    [':-1', /"-1" is not a port number/],
    ['::1:8080', /an IPv6 address needs brackets/],
    ['[::1]8080', /bracketed IPv6 address must be followed by ":port"/],
    ['[nope]:8080', /"nope" is not an IPv6 address/],
    ['bad_host!:8080', /"bad_host!" is neither an IP address nor a host name/],
  ]
  for (const [input, reason] of invalid) {
    it(`${JSON.stringify(input)} is rejected with a clear message`, () => {
      assert.throws(() => parseBindAddress(input), (error: Error) => {
        assert.match(error.message, new RegExp(`^Invalid bind address "${input.replace(/[[\]]/g, '\\$&')}": `))
        assert.match(error.message, reason)
        assert.match(error.message, /or "0" to disable/)
        return true
      })
    })
  }

  it('names the flag when given one', () => {
    assert.throws(() => parseBindAddress('8080', '--metrics-bind-address'), /^Error: Invalid --metrics-bind-address "8080": /)
  })

  it('formatAddress brackets IPv6 hosts', () => {
    assert.equal(formatAddress({host: '127.0.0.1', port: 80}), '127.0.0.1:80')
    assert.equal(formatAddress({host: '::1', port: 8081}), '[::1]:8081')
  })
})

describe('startHttpServer with routes', () => {
  let server: RunningHttpServer
  const logLines: string[] = []

  before(async () => {
    server = await startHttpServer({
      name: 'test',
      address: {host: '127.0.0.1', port: 0},
      logger: createLogger({format: 'json', write: (line) => logLines.push(line)}),
      routes: {
        '/hello': {GET: (_req, res) => sendText(res, 200, 'hello\n')},
        '/records': {
          GET: (_req, res) => sendJson(res, 200, [{dnsName: 'a.example.com'}], 'application/external.dns.webhook+json;version=1'),
          POST: async (req, res) => {
            const body = await readBody(req, {limitBytes: 1024})
            sendJson(res, 200, {received: body.length, echo: JSON.parse(body.toString()) as unknown})
          },
        },
        '/empty': {DELETE: (_req, res) => sendJson(res, 204, undefined)},
        '/boom': {GET: () => Promise.reject(new Error('database on fire'))},
        '/sync-boom': {
          GET: () => {
            throw new Error('thrown synchronously')
          },
        },
        '/teapot': {GET: () => Promise.reject(new HttpError(418, 'short and stout', {'X-Why': 'tea'}))},
      },
    })
  })
  after(() => server.close())

  it('answers a route; the query string does not take part in matching', async () => {
    for (const path of ['/hello', '/hello?x=1']) {
      const res = await fetch(`${base(server)}${path}`)
      assert.equal(res.status, 200, path)
      assert.equal(await res.text(), 'hello\n')
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8')
      assert.equal(res.headers.get('cache-control'), 'no-store')
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    }
  })

  it('a GET route answers HEAD with the headers and no body', async () => {
    const res = await fetch(`${base(server)}/hello`, {method: 'HEAD'})
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-length'), '6')
    assert.equal(await res.text(), '')
  })

  it('sendJson takes a media type; several methods on one path', async () => {
    let res = await fetch(`${base(server)}/records`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/external.dns.webhook+json;version=1')
    assert.deepEqual(await res.json(), [{dnsName: 'a.example.com'}])
    res = await fetch(`${base(server)}/records`, {method: 'POST', body: JSON.stringify({changes: [1, 2]})})
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/json')
    assert.deepEqual(await res.json(), {received: 17, echo: {changes: [1, 2]}})
  })

  it('204 goes out without a body or content type', async () => {
    const res = await fetch(`${base(server)}/empty`, {method: 'DELETE'})
    assert.equal(res.status, 204)
    assert.equal(res.headers.get('content-type'), null)
    assert.equal(await res.text(), '')
  })

  it('a method the route does not have is 405 with Allow', async () => {
    let res = await fetch(`${base(server)}/hello`, {method: 'POST', body: 'x'})
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'GET, HEAD')
    assert.equal(await res.text(), 'method not allowed\n')
    res = await fetch(`${base(server)}/records`, {method: 'DELETE'})
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'GET, HEAD, POST')
    await res.body?.cancel()
    res = await fetch(`${base(server)}/empty`)
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'DELETE')
    await res.body?.cancel()
  })

  it('an unknown path is 404 for any method', async () => {
    for (const [path, method] of [['/', 'GET'], ['/hello/', 'GET'], ['/HELLO', 'GET'], ['/nope', 'POST'], ['//hello', 'GET']] as const) {
      const res = await fetch(`${base(server)}${path}`, {method})
      assert.equal(res.status, 404, `${method} ${path}`)
      assert.equal(await res.text(), '404 page not found\n')
    }
  })

  it('a body over the limit is 413 and the connection is not kept', async () => {
    const res = await fetch(`${base(server)}/records`, {method: 'POST', body: JSON.stringify({pad: 'x'.repeat(2000)})})
    assert.equal(res.status, 413)
    assert.equal(res.headers.get('connection'), 'close')
    assert.equal(await res.text(), 'request body larger than 1024 bytes\n')
  })

  it('a chunked body (no Content-Length) is cut off at the limit too', async () => {
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(`${base(server)}/records`, {method: 'POST', headers: {'transfer-encoding': 'chunked'}}, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({status: res.statusCode ?? 0, headers: res.headers, body}))
      })
      req.on('error', reject)
      for (let i = 0; i < 4; i++) req.write('y'.repeat(512))
      req.end()
    })
    assert.equal(answer.status, 413)
    assert.equal(answer.body, 'request body larger than 1024 bytes\n')
  })

  it('a declared Content-Length over the limit is refused before the body arrives', async () => {
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(`${base(server)}/records`, {method: 'POST', headers: {'content-length': String(10_000_000)}}, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => {
          req.destroy()
          resolve({status: res.statusCode ?? 0, headers: res.headers, body})
        })
      })
      req.on('error', reject)
      req.write('{"only":"the start"')
    })
    assert.equal(answer.status, 413)
    assert.equal(answer.body, 'request body larger than 1024 bytes\n')
  })

  it('a handler error is a 500 without details, and logged', async () => {
    for (const path of ['/boom', '/sync-boom']) {
      const res = await fetch(`${base(server)}${path}`)
      assert.equal(res.status, 500, path)
      assert.equal(await res.text(), 'internal server error\n')
    }
    assert.ok(logLines.some((l) => /"level":"error","msg":"test request failed","error":"database on fire","path":"\/boom"/.test(l)), logLines.join('\n'))
    assert.ok(logLines.some((l) => /"error":"thrown synchronously"/.test(l)), logLines.join('\n'))
  })

  it('an HttpError answers with its status, message and headers', async () => {
    const res = await fetch(`${base(server)}/teapot`)
    assert.equal(res.status, 418)
    assert.equal(res.headers.get('x-why'), 'tea')
    assert.equal(await res.text(), 'short and stout\n')
  })

  it('logs where it listens', () => {
    assert.ok(logLines.some((l) => l.includes(`"msg":"test server listening","address":"127.0.0.1:${server.address.port}"`)), logLines.join('\n'))
  })
})

describe('startHttpServer', () => {
  it('with routes and a handler, the handler gets the paths no route matches', async () => {
    const server = await startHttpServer({
      name: 'mixed',
      address: {host: '127.0.0.1', port: 0},
      routes: {'/exact': {GET: (_req, res) => sendText(res, 200, 'route')}},
      handler: (req, res) => {
        if (!allowMethods(req, res, ['GET', 'PUT'])) return
        sendText(res, 200, `fallback ${req.method} ${req.url}`)
      },
    })
    try {
      assert.equal(await (await fetch(`${base(server)}/exact`)).text(), 'route')
      assert.equal(await (await fetch(`${base(server)}/other/x?y=1`)).text(), 'fallback GET /other/x?y=1')
      const res = await fetch(`${base(server)}/other`, {method: 'DELETE'})
      assert.equal(res.status, 405)
      assert.equal(res.headers.get('allow'), 'GET, HEAD, PUT')
      await res.body?.cancel()
    } finally {
      await server.close()
    }
  })

  it('a bindAddress of "0" starts nothing; a bad one names the flag', async () => {
    const handler = () => {}
    assert.equal(await startHttpServer({name: 'x', bindAddress: '0', handler}), undefined)
    assert.equal(await startHttpServer({name: 'x', bindAddress: '', handler}), undefined)
    await assert.rejects(startHttpServer({name: 'x', bindAddress: '9000', flag: '--webhook-bind-address', handler}), /^Error: Invalid --webhook-bind-address "9000": /)
  })

  it('needs routes or a handler', async () => {
    await assert.rejects(startHttpServer({name: 'nothing', address: {host: '127.0.0.1', port: 0}}), TypeError)
  })

  it('a port in use: the message names the server, the address and the remedy', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const {port} = blocker.address() as {port: number}
    const handler = () => {}
    try {
      await assert.rejects(startHttpServer({name: 'webhook', bindAddress: ` 127.0.0.1:${port} `, flag: '--webhook-bind-address', handler}), {
        message: `webhook bind address 127.0.0.1:${port} is in use: pass --webhook-bind-address with a free port, or 0 to disable`,
      })
      await assert.rejects(startHttpServer({name: 'webhook', address: {host: '127.0.0.1', port}, handler}), {
        message: `webhook bind address 127.0.0.1:${port} is in use: use a free port`,
      })
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
    }
  })

  it('close() ends a keep-alive connection at once, and may be called twice', async () => {
    const server = await startHttpServer({name: 'ka', address: {host: '127.0.0.1', port: 0}, handler: (_req, res) => sendText(res, 200, 'ok')})
    const agent = new Agent({keepAlive: true, maxSockets: 1})
    try {
      const answer = await call(`${base(server)}/`, {agent})
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.connection, 'keep-alive')
      const idle = Object.values(agent.freeSockets).flat()
      assert.equal(idle.length, 1, 'the agent keeps the connection open')
      const socket = idle[0] as Socket
      const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
      const started = performance.now()
      await Promise.all([server.close(), server.close()])
      await socketClosed
      // Without ending it, server.close() would wait for the keep-alive timeout (5 s).
      assert.ok(performance.now() - started < 1000, `close took ${Math.round(performance.now() - started)} ms`)
      await assert.rejects(fetch(`${base(server)}/`))
    } finally {
      agent.destroy()
      await server.close()
    }
  })

  it('close() also drops a request still in progress', async () => {
    let arrived!: () => void
    const inFlight = new Promise<void>((resolve) => (arrived = resolve))
    const server = await startHttpServer({name: 'slow', address: {host: '127.0.0.1', port: 0}, handler: () => arrived()})
    const pending = call(`${base(server)}/`)
    await inFlight
    await server.close()
    await assert.rejects(pending, /socket hang up|ECONNRESET/)
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// https

/** A self-signed P-256 certificate for `commonName`, valid for 127.0.0.1 and localhost, for servers and clients. */
async function selfSignedCertificate(commonName: string): Promise<{key: string; cert: string; privateKey: KeyObject}> {
  const made = await createCertificate({commonName, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usages: ['server', 'client'], validityDays: 1})
  return {key: made.key, cert: made.cert, privateKey: createPrivateKey(made.key)}
}

describe('startHttpServer over TLS', () => {
  let serverCert: Awaited<ReturnType<typeof selfSignedCertificate>>
  let clientCert: Awaited<ReturnType<typeof selfSignedCertificate>>
  before(async () => {
    serverCert = await selfSignedCertificate('webhook.test')
    clientCert = await selfSignedCertificate('client.test')
  })

  it('the test certificate is well-formed and self-signed', () => {
    const x509 = new X509Certificate(serverCert.cert)
    assert.equal(x509.subject, 'CN=webhook.test')
    assert.equal(x509.issuer, 'CN=webhook.test')
    assert.match(x509.subjectAltName ?? '', /IP Address:127\.0\.0\.1/)
    assert.ok(x509.verify(x509.publicKey))
    assert.ok(x509.checkPrivateKey(serverCert.privateKey))
  })

  it('serves https with the given key and certificate', async () => {
    const server = await startHttpServer({
      name: 'tls',
      address: {host: '127.0.0.1', port: 0},
      tls: {key: serverCert.key, cert: serverCert.cert},
      routes: {'/hello': {GET: (req, res) => sendJson(res, 200, {encrypted: (req.socket as TLSSocket).encrypted === true})}},
    })
    const url = `https://127.0.0.1:${server.address.port}/hello`
    try {
      const answer = await call(url, {ca: serverCert.cert})
      assert.equal(answer.status, 200)
      assert.deepEqual(JSON.parse(answer.body), {encrypted: true})
      await assert.rejects(call(url), /self[- ]signed certificate/i)
      await assert.rejects(fetch(`http://127.0.0.1:${server.address.port}/hello`), 'plain http is not served')
    } finally {
      await server.close()
    }
  })

  it('with requestCert and ca, only clients with a certificate from ca get in (mutual TLS)', async () => {
    const server = await startHttpServer({
      name: 'mtls',
      address: {host: '127.0.0.1', port: 0},
      tls: {key: serverCert.key, cert: serverCert.cert, ca: clientCert.cert, requestCert: true},
      handler: (req, res) => sendText(res, 200, `hello ${(req.socket as TLSSocket).getPeerCertificate().subject.CN}`),
    })
    const url = `https://127.0.0.1:${server.address.port}/`
    try {
      const answer = await call(url, {ca: serverCert.cert, key: clientCert.key, cert: clientCert.cert})
      assert.equal(answer.status, 200)
      assert.equal(answer.body, 'hello client.test')
      await assert.rejects(call(url, {ca: serverCert.cert}))
      await assert.rejects(call(url, {ca: serverCert.cert, key: serverCert.key, cert: serverCert.cert}), 'a certificate not from ca')
    } finally {
      await server.close()
    }
  })

  it('close() ends keep-alive TLS connections too', async () => {
    const server = await startHttpServer({
      name: 'tls-ka',
      address: {host: '127.0.0.1', port: 0},
      tls: {key: serverCert.key, cert: serverCert.cert},
      handler: (_req, res) => sendText(res, 200, 'ok'),
    })
    const {Agent: HttpsAgent} = await import('node:https')
    const agent = new HttpsAgent({keepAlive: true, maxSockets: 1, ca: serverCert.cert})
    try {
      assert.equal((await call(`https://127.0.0.1:${server.address.port}/`, {agent})).status, 200)
      const idle = Object.values(agent.freeSockets).flat()
      assert.equal(idle.length, 1)
      const socketClosed = new Promise<void>((resolve) => (idle[0] as Socket).once('close', () => resolve()))
      const started = performance.now()
      await server.close()
      await socketClosed
      assert.ok(performance.now() - started < 1000)
    } finally {
      agent.destroy()
    }
  })
})
