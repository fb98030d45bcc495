/**
 * Real targets on loopback for the monitoring agent's tests: an HTTP/HTTPS server with routes that do one thing
 * each (redirect chains, slow answers, resets, bodies), certificates made with openssl (a test CA, a valid one,
 * a self-signed one, an expired one, one that expires in 5 days), a TCP banner server and a tiny UDP DNS responder.
 */
import {createSocket, type Socket as UdpSocket} from 'node:dgram'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import * as http from 'node:http'
import * as https from 'node:https'
import {createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {execa} from 'execa'
import type {TLSSocket} from 'node:tls'

const DAY = 24 * 60 * 60 * 1000

/** openssl's ca -startdate/-enddate format. */
function asn1Time(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z')
}

export interface CertPair {
  key: string
  cert: string
  notBefore: number
  notAfter: number
}

export interface TestCerts {
  ca: string
  valid: CertPair
  selfSigned: CertPair
  expired: CertPair
  expiresIn5Days: CertPair
}

/** Makes the certificates (CN=localhost, SAN localhost + 127.0.0.1) with the system openssl. */
export async function makeCerts(now = Date.now()): Promise<TestCerts> {
  const dir = await mkdtemp(join(tmpdir(), 'monitoring-certs-'))
  const run = (args: string[]) => execa('openssl', args, {cwd: dir})
  try {
    await writeFile(join(dir, 'ca.cnf'), [
      '[ca]', 'default_ca = d', '[d]', 'database = ./index.txt', 'new_certs_dir = .', 'serial = ./serial', 'default_md = sha256',
      'policy = p', 'copy_extensions = copy', 'unique_subject = no', '[p]', 'commonName = supplied', '',
    ].join('\n'))
    await writeFile(join(dir, 'index.txt'), '')
    await writeFile(join(dir, 'serial'), '01\n')
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
    await run(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/O=Monitoring Tests/CN=Test CA', '-days', '30'])
    const signed = async (name: string, notBefore: number, notAfter: number): Promise<CertPair> => {
      await run(['req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'])
      await run(['ca', '-batch', '-config', 'ca.cnf', '-notext', '-startdate', asn1Time(notBefore), '-enddate', asn1Time(notAfter), '-in', `${name}.csr`, '-out', `${name}.crt`, '-keyfile', 'ca.key', '-cert', 'ca.crt'])
      return {key: await readFile(join(dir, `${name}.key`), 'utf8'), cert: await readFile(join(dir, `${name}.crt`), 'utf8'), notBefore, notAfter}
    }
    const valid = await signed('valid', now - DAY, now + 20 * DAY)
    const expired = await signed('expired', now - 40 * DAY, now - 10 * DAY)
    const expiresIn5Days = await signed('soon', now - DAY, now + 5 * DAY + 2 * 60 * 60 * 1000)
    await run(['req', '-x509', ...ec, '-keyout', 'self.key', '-out', 'self.crt', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-days', '10'])
    const selfSigned = {key: await readFile(join(dir, 'self.key'), 'utf8'), cert: await readFile(join(dir, 'self.crt'), 'utf8'), notBefore: now, notAfter: now + 10 * DAY}
    return {ca: await readFile(join(dir, 'ca.crt'), 'utf8'), valid, selfSigned, expired, expiresIn5Days}
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

export interface Target {
  port: number
  close(): Promise<void>
}

/** What the HTTP target saw, per request path. */
export interface SeenRequest {
  method: string
  path: string
  userAgent?: string
  referer?: string
  /** The client's port: one per connection. */
  clientPort?: number
  /** The Connection header. */
  connection?: string
  /** Over TLS: whether the client resumed an earlier session. */
  sessionReused?: boolean
}

export const HEALTHY_BODY = '{"database":"connected","cache":"ok"}'
export const BIG_BODY_BYTES = 100_000

/**
 * Routes: `/ok` 200 with HEALTHY_BODY; `/degraded` 200 with `{"database":"down"}`; `/status/<code>`; `/redirect/<n>`
 * (302 chain of n hops, then `/ok`); `/slow/<ms>` (answers after ms); `/reset` (TCP RST without an answer);
 * `/big` (BIG_BODY_BYTES); `/echo` (method, user agent and referer as JSON).
 */
function handler(seen: SeenRequest[]): http.RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://target')
    const tls = req.socket as Partial<TLSSocket>
    seen.push({
      method: req.method ?? '', path: url.pathname, userAgent: req.headers['user-agent'], referer: req.headers.referer,
      clientPort: req.socket.remotePort, connection: req.headers.connection, sessionReused: tls.isSessionReused?.(),
    })
    const [, route, arg] = url.pathname.split('/')
    switch (route) {
      case 'ok': res.writeHead(200, {'content-type': 'application/json'}).end(HEALTHY_BODY); return
      case 'degraded': res.writeHead(200, {'content-type': 'application/json'}).end('{"database":"down"}'); return
      case 'status': res.writeHead(Number(arg)).end(`status ${arg}`); return
      case 'redirect': {
        const left = Number(arg)
        res.writeHead(302, {location: left > 1 ? `/redirect/${left - 1}` : '/ok'}).end()
        return
      }
      case 'slow': {
        const timer = setTimeout(() => res.writeHead(200).end('late'), Number(arg))
        res.on('close', () => clearTimeout(timer))
        return
      }
      case 'reset': req.socket.resetAndDestroy(); return
      case 'big': res.writeHead(200).end(Buffer.alloc(BIG_BODY_BYTES, 'x')); return
      case 'echo': res.writeHead(200).end(JSON.stringify({method: req.method, userAgent: req.headers['user-agent'], referer: req.headers.referer})); return
      default: res.writeHead(404).end('not found')
    }
  }
}

async function listen(server: http.Server | TcpServer): Promise<Target> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const sockets = new Set<Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    }),
  }
}

export async function startHttpTarget(seen: SeenRequest[] = []): Promise<Target> {
  return listen(http.createServer(handler(seen)))
}

export async function startHttpsTarget(pair: Pick<CertPair, 'key' | 'cert'>, seen: SeenRequest[] = []): Promise<Target> {
  return listen(https.createServer({key: pair.key, cert: pair.cert}, handler(seen)))
}

/** Sends `banner` on connect; answers `PONG` to a line `PING`. */
export async function startTcpTarget(banner: string): Promise<Target> {
  return listen(createTcpServer((socket) => {
    socket.on('error', () => {})
    socket.write(banner)
    socket.on('data', (data) => {
      if (data.toString().includes('PING')) socket.write('PONG\r\n')
    })
  }))
}

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const target = await listen(createTcpServer())
  await target.close()
  return target.port
}

export interface DnsZone {
  /** name (lower case, no trailing dot) → type → values (A: dotted quad, TXT: text). */
  [name: string]: {A?: string[]; TXT?: string[]}
}

/**
 * A UDP DNS responder written independently of the agent's client: answers A and TXT from `zone` (names compressed
 * to the question), NXDOMAIN for unknown names, and nothing at all for names starting with `drop.`.
 */
export async function startDnsTarget(zone: DnsZone, queries: Array<{name: string; type: number}> = []): Promise<Target> {
  const socket: UdpSocket = createSocket('udp4')
  socket.on('message', (message, remote) => {
    const id = message.readUInt16BE(0)
    const labels: string[] = []
    let offset = 12
    while (message[offset] !== 0) {
      const length = message[offset]!
      labels.push(message.toString('ascii', offset + 1, offset + 1 + length))
      offset += 1 + length
    }
    const questionEnd = offset + 5
    const type = message.readUInt16BE(offset + 1)
    const name = labels.join('.').toLowerCase()
    queries.push({name, type})
    if (name.startsWith('drop.')) return
    const entry = zone[name]
    const values = entry ? (type === 1 ? entry.A : type === 16 ? entry.TXT : undefined) ?? [] : []
    const answers = values.map((value) => {
      const data = type === 1
        ? Buffer.from(value.split('.').map(Number))
        : Buffer.concat([Buffer.from([Buffer.byteLength(value)]), Buffer.from(value)])
      const fixed = Buffer.alloc(12)
      fixed.writeUInt16BE(0xc00c, 0)
      fixed.writeUInt16BE(type, 2)
      fixed.writeUInt16BE(1, 4)
      fixed.writeUInt32BE(300, 6)
      fixed.writeUInt16BE(data.length, 10)
      return Buffer.concat([fixed, data])
    })
    const header = Buffer.alloc(12)
    header.writeUInt16BE(id, 0)
    header.writeUInt16BE(0x8180 | (entry ? 0 : 3), 2)
    header.writeUInt16BE(1, 4)
    header.writeUInt16BE(answers.length, 6)
    socket.send(Buffer.concat([header, message.subarray(12, questionEnd), ...answers]), remote.port, remote.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  return {port: socket.address().port, close: () => new Promise<void>((resolve) => socket.close(() => resolve()))}
}
