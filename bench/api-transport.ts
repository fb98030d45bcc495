/**
 * What one Polycrate API call costs the client's CPU by transport: global fetch (undici, what src/api/client.ts uses
 * today) against src/api/http-transport.ts (node:http with keep-alive, what the client uses now), in one run against the same local
 * server: the POST of an endpoint, its JSON answer read and parsed, a response header read, 16 at a time; 200 calls
 * of warm-up, then N (default 4000) measured, 3 reps, each transport in a process of its own. Not a pass/fail test.
 *
 *   node --import tsx bench/api-transport.ts [N]
 */
import {execFileSync, fork} from 'node:child_process'
import http from 'node:http'
import {fileURLToPath} from 'node:url'
import {httpTransport} from '../src/api/http-transport.js'

const self = fileURLToPath(import.meta.url)
const [role, port, mode, count] = process.argv.slice(2)

if (role === 'server') {
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({id: 'ep-1', ...(JSON.parse(body || '{}') as object)}))
    })
  })
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as {port: number}).port))
} else if (role === 'client') {
  const n = Number(count)
  const url = `http://127.0.0.1:${port}/api/v1/endpoints/`
  const body = JSON.stringify({name: 'shop-example-com', remote_address: 'shop.example.com', remote_port: 443, kind: 'http', labels: {a: 'b'}})
  const headers = {accept: 'application/json', 'content-type': 'application/json', authorization: 'Bearer token', 'user-agent': 'bench'}
  const viaFetch = async (): Promise<unknown> => {
    const response = await fetch(url, {method: 'POST', headers, body, signal: new AbortController().signal})
    const text = await response.text()
    response.headers.get('retry-after')
    return JSON.parse(text)
  }
  const viaHttp = async (): Promise<unknown> => {
    const response = await httpTransport(url, {method: 'POST', headers, body, signal: new AbortController().signal})
    const text = await response.text()
    response.headers.get('retry-after')
    return JSON.parse(text)
  }
  const call = mode === 'fetch' ? viaFetch : viaHttp
  for (let i = 0; i < 200; i++) await call()
  const cpu = process.cpuUsage()
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({length: 16}, async () => {
    while (next++ < n) await call()
  }))
  const used = process.cpuUsage(cpu)
  console.log(JSON.stringify({mode, n, cpuMsPerCall: Number(((used.user + used.system) / 1000 / n).toFixed(3)), wallMs: Math.round(performance.now() - started)}))
  process.exit(0)
} else {
  const measured = role ?? '4000' // `api-transport.ts [N]`: the first argument is N here
  const server = fork(self, ['server'], {execArgv: ['--import', 'tsx']})
  const serverPort = await new Promise<number>((resolve) => server.once('message', (message) => resolve(message as number)))
  for (let rep = 1; rep <= 3; rep++) {
    for (const transport of ['fetch', 'http']) {
      console.log(execFileSync(process.execPath, ['--import', 'tsx', self, 'client', String(serverPort), transport, measured]).toString().trim())
    }
  }
  server.kill()
}
