import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {httpTransport} from '../../../src/api/http-transport.js'

/** A local server answering with `handle`; every request it saw (method, path, headers, body). */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Array<{method: string; path: string; headers: IncomingMessage['headers']; body: string}> = []
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      seen.push({method: req.method!, path: req.url!, headers: req.headers, body})
      handle(req, res, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())), server}
}

const json = {accept: 'application/json', 'content-type': 'application/json', authorization: 'Bearer secret'}

describe('httpTransport (the API client\'s node:http transport, in fetch\'s shape)', () => {
  const servers: Array<{close(): Promise<void>; server: Server}> = []
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.server.closeAllConnections()
      await s.close()
    }
  })
  const started = async (handle: Parameters<typeof serve>[0]) => {
    const s = await serve(handle)
    servers.push(s)
    return s
  }

  it('sends method, headers and body (with its length); answers status, every header and the body as text', async () => {
    const s = await started((_req, res, body) => {
      res.setHeader('set-cookie', ['a=1', 'b=2'])
      res.setHeader('retry-after', '3')
      res.writeHead(201, {'content-type': 'application/json'}).end(JSON.stringify({echo: JSON.parse(body), ü: 'ö'}))
    })
    const answer = await httpTransport(`${s.url}/api/v1/endpoints/?a=1`, {method: 'POST', headers: json, body: JSON.stringify({name: 'ü'})})
    assert.equal(answer.status, 201)
    assert.deepEqual(JSON.parse(await answer.text()), {echo: {name: 'ü'}, ü: 'ö'})
    assert.equal(answer.headers.get('retry-after'), '3')
    assert.equal(answer.headers.get('set-cookie'), 'a=1, b=2')
    assert.deepEqual([s.seen[0]!.method, s.seen[0]!.path, s.seen[0]!.headers.authorization, s.seen[0]!.headers['content-length']], ['POST', '/api/v1/endpoints/?a=1', 'Bearer secret', '13'], 'the length in bytes, not characters')
  })

  const redirects: Array<[number, string, string | undefined]> = [
    [307, 'POST', '{"name":"x"}'],
    [308, 'POST', '{"name":"x"}'],
    [303, 'GET', ''],
    [302, 'GET', ''],
    [301, 'GET', ''],
  ]
  for (const [status, method, body] of redirects) {
    it(`follows a ${status} after a POST with ${method}${body ? ' and the body' : ' without a body'}, on the same origin with the token`, async () => {
      const s = await started((req, res) => {
        if (req.url === '/old/') res.writeHead(status, {location: '/new/'}).end()
        else res.writeHead(200).end('{}')
      })
      const answer = await httpTransport(`${s.url}/old/`, {method: 'POST', headers: json, body: '{"name":"x"}'})
      assert.equal(answer.status, 200)
      assert.deepEqual([s.seen[1]!.method, s.seen[1]!.path, s.seen[1]!.body, s.seen[1]!.headers.authorization], [method, '/new/', body, 'Bearer secret'])
    })
  }

  it('does not send the token to another origin it is redirected to', async () => {
    const other = await started((_req, res) => res.writeHead(200).end('{}'))
    const s = await started((_req, res) => res.writeHead(302, {location: `${other.url.replace('127.0.0.1', 'localhost')}/there/`}).end())
    const answer = await httpTransport(`${s.url}/here/`, {method: 'GET', headers: json})
    assert.equal(answer.status, 200)
    assert.equal(other.seen[0]!.headers.authorization, undefined)
  })

  it('stops after 20 redirects', async () => {
    const s = await started((_req, res) => res.writeHead(302, {location: '/again/'}).end())
    await assert.rejects(httpTransport(`${s.url}/`, {method: 'GET', headers: {}}), {code: 'ERR_TOO_MANY_REDIRECTS'})
    assert.equal(s.seen.length, 21)
  })

  it('rejects with the signal\'s reason when it aborts mid-request (a TimeoutError stays a TimeoutError), and at once when already aborted', async () => {
    const s = await started(() => {}) // never answers
    const controller = new AbortController()
    const pending = httpTransport(`${s.url}/`, {method: 'GET', headers: {}, signal: controller.signal})
    const reason = new DOMException('the attempt timed out', 'TimeoutError')
    setImmediate(() => controller.abort(reason))
    await assert.rejects(pending, (error) => error === reason)
    const aborted = AbortSignal.abort()
    await assert.rejects(httpTransport(`${s.url}/`, {method: 'GET', headers: {}, signal: aborted}), {name: 'AbortError'})
  })

  it('a refused connection rejects with ECONNREFUSED; an answer cut mid-body with ECONNRESET', async () => {
    const closed = await serve(() => {})
    await closed.close()
    await assert.rejects(httpTransport(`${closed.url}/`, {method: 'GET', headers: {}}), {code: 'ECONNREFUSED'})
    const s = await started((_req, res) => {
      res.writeHead(200, {'content-length': '100'})
      res.write('{"partial":')
      setImmediate(() => res.socket?.destroy())
    })
    await assert.rejects(httpTransport(`${s.url}/`, {method: 'GET', headers: {}}), {code: 'ECONNRESET'})
  })

  it('reuses its connection for calls one after the other (keep-alive)', async () => {
    const ports = new Set<number>()
    const s = await started((req, res) => {
      ports.add(req.socket.remotePort!)
      res.writeHead(200).end('{}')
    })
    for (let i = 0; i < 5; i++) await httpTransport(`${s.url}/`, {method: 'GET', headers: {}})
    assert.equal(ports.size, 1)
  })
})
