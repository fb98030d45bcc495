import assert from 'node:assert/strict'
import {X509Certificate} from 'node:crypto'
import {mkdir, mkdtemp, rename, rm, symlink, writeFile} from 'node:fs/promises'
import https from 'node:https'
import {tmpdir} from 'node:os'
import path from 'node:path'
import type {TLSSocket} from 'node:tls'
import {startHttpServer, sendText, type RunningHttpServer} from '../../../src/lib/http-server.js'
import {createLogger} from '../../../src/lib/logger.js'
import {CertificateReloader, checkKeyPair, watchCertificateDir, type KeyPair} from '../../../src/lib/serving-certificate.js'
import {createCertificate, createCertificateOffThread} from '../../../src/lib/x509.js'
import {FakeTimers} from '../../support/fake-timers.js'

/** The certificate a TLS handshake with the server gets (its SHA-256 fingerprint), and the answer over it. */
function handshake(port: number): Promise<{fingerprint: string; body: string}> {
  return new Promise((resolve, reject) => {
    const request = https.get({host: '127.0.0.1', port, path: '/', rejectUnauthorized: false, agent: false}, (response) => {
      const fingerprint = (response.socket as TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? ''
      let body = ''
      response.on('data', (chunk: Buffer) => (body += chunk.toString()))
      response.on('end', () => resolve({fingerprint, body}))
    })
    request.on('error', reject)
  })
}

const fingerprintOf = (pair: KeyPair) => new X509Certificate(pair.cert).fingerprint256

describe('serving certificates that change while the server runs (serving-certificate.ts)', function () {
  this.timeout(20_000)
  let first: KeyPair
  let second: KeyPair
  let dir: string
  before(async () => {
    ;[first, second] = await Promise.all([createCertificate({commonName: 'first', dnsNames: ['localhost']}), createCertificate({commonName: 'second', dnsNames: ['localhost']})])
    dir = await mkdtemp(path.join(tmpdir(), 'serving-cert-'))
  })
  after(() => rm(dir, {recursive: true, force: true}))

  describe('checkKeyPair', () => {
    const cases: Array<{name: string; pair: () => KeyPair; error?: RegExp}> = [
      {name: 'a certificate and its key', pair: () => first},
      {name: 'a key of another certificate', pair: () => ({cert: first.cert, key: second.key}), error: /the private key does not belong to the certificate/},
      {name: 'no PEM certificate', pair: () => ({cert: 'garbage', key: first.key}), error: /the certificate is not PEM X\.509/},
      {name: 'no PEM key', pair: () => ({cert: first.cert, key: 'garbage'}), error: /the private key is not a PEM key/},
    ]
    for (const c of cases) {
      it(c.name, () => {
        if (c.error) return assert.throws(() => checkKeyPair(c.pair()), c.error)
        const summary = checkKeyPair(c.pair())
        assert.equal(summary.fingerprint, fingerprintOf(first))
        assert.equal(summary.subject, 'CN=first')
      })
    }
  })

  describe('CertificateReloader on a running https server', () => {
    let server: RunningHttpServer
    let reloader: CertificateReloader
    const logs: Array<Record<string, unknown>> = []
    before(async () => {
      server = await startHttpServer({name: 'test', address: {host: '127.0.0.1', port: 0}, tls: {}, handler: (_req, res) => sendText(res, 200, 'ok')})
      reloader = new CertificateReloader(server as RunningHttpServer & {setCertificate: (pair: KeyPair) => void}, createLogger({format: 'json', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>)}), 'test')
    })
    after(() => server.close())

    it('a server started without a certificate fails handshakes until it gets one', async () => {
      await assert.rejects(handshake(server.address.port), /handshake failure|alert/)
      assert.equal(reloader.offer(first, 'first'), true)
      assert.deepEqual(await handshake(server.address.port), {fingerprint: fingerprintOf(first), body: 'ok'})
      assert.equal(logs.at(-1)?.msg, 'test: serving certificate loaded')
    })

    it('a new pair is served from the next handshake on; the same pair again changes nothing', async () => {
      const before = logs.length
      assert.equal(reloader.offer(first, 'first again'), true)
      assert.equal(logs.length, before, 'a repeated pair is not logged')
      assert.equal(reloader.offer(second, 'second'), true)
      assert.equal((await handshake(server.address.port)).fingerprint, fingerprintOf(second))
      assert.deepEqual({msg: logs.at(-1)?.msg, source: logs.at(-1)?.source, fingerprint: logs.at(-1)?.fingerprint}, {msg: 'test: serving certificate reloaded', source: 'second', fingerprint: fingerprintOf(second)})
      assert.equal(reloader.serving?.fingerprint, fingerprintOf(second))
    })

    it('a pair that does not check out is logged and the one in use stays', async () => {
      assert.equal(reloader.offer({cert: first.cert, key: second.key}, 'torn'), false)
      assert.equal((await handshake(server.address.port)).fingerprint, fingerprintOf(second))
      assert.equal(logs.at(-1)?.msg, 'test: new serving certificate not used, the current one stays')
      assert.match(String(logs.at(-1)?.reason), /does not belong/)
      assert.ok(!JSON.stringify(logs).includes('PRIVATE KEY'), 'no key in the logs')
    })
  })

  describe('watchCertificateDir', () => {
    it('sees files written in place, a kubelet-style ..data symlink swap, and skips a half-written pair', async () => {
      // A mounted Secret: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/ (the kubelet's atomic writer).
      const mount = path.join(dir, 'mount')
      await mkdir(path.join(mount, '..v1'), {recursive: true})
      await writeFile(path.join(mount, '..v1', 'tls.crt'), first.cert)
      await writeFile(path.join(mount, '..v1', 'tls.key'), first.key)
      await symlink('..v1', path.join(mount, '..data'))
      await symlink('..data/tls.crt', path.join(mount, 'tls.crt'))
      await symlink('..data/tls.key', path.join(mount, 'tls.key'))

      const clock = new FakeTimers()
      const seen: string[] = []
      const errors: string[] = []
      let wake: (() => void) | undefined
      const next = (fingerprint: string) => new Promise<void>((resolve) => {
        const check = () => (seen.at(-1) === fingerprint ? resolve() : (wake = check))
        check()
      })
      const watcher = watchCertificateDir(mount, {
        clock,
        onPair: (pair) => {
          try {
            seen.push(checkKeyPair(pair).fingerprint)
          } catch {
            seen.push('torn')
          }
          wake?.()
        },
        onError: (error) => errors.push(error.message),
      })
      try {
        // The poll reads what is there (no file-system event needed).
        await clock.advance(10_000)
        await next(fingerprintOf(first))

        // The kubelet's swap: a new timestamped directory, then ..data renamed over: one event on the directory.
        await mkdir(path.join(mount, '..v2'))
        await writeFile(path.join(mount, '..v2', 'tls.crt'), second.cert)
        await writeFile(path.join(mount, '..v2', 'tls.key'), second.key)
        await symlink('..v2', path.join(mount, '..data_tmp'))
        await rename(path.join(mount, '..data_tmp'), path.join(mount, '..data'))
        await next(fingerprintOf(second))

        // Files written in place, the certificate first: a read in between sees a torn pair (which checkKeyPair
        // refuses); the read after the key's event gets both.
        const plain = path.join(dir, 'plain')
        await mkdir(plain)
        await writeFile(path.join(plain, 'tls.crt'), first.cert)
        await writeFile(path.join(plain, 'tls.key'), first.key)
        const seenPlain: string[] = []
        let wakePlain: (() => void) | undefined
        const plainWatcher = watchCertificateDir(plain, {
          clock,
          onPair: (pair) => {
            try {
              seenPlain.push(checkKeyPair(pair).fingerprint)
            } catch {
              seenPlain.push('torn')
            }
            wakePlain?.()
          },
          onError: (error) => errors.push(error.message),
        })
        try {
          await writeFile(path.join(plain, 'tls.crt'), second.cert)
          await writeFile(path.join(plain, 'tls.key'), second.key)
          await new Promise<void>((resolve) => {
            const check = () => (seenPlain.at(-1) === fingerprintOf(second) ? resolve() : (wakePlain = check))
            check()
          })
          assert.ok(seenPlain.every((seenOne) => [fingerprintOf(first), fingerprintOf(second), 'torn'].includes(seenOne)))
        } finally {
          plainWatcher.stop()
        }
        assert.deepEqual(errors, [])
      } finally {
        watcher.stop()
      }
    })

    it('a missing file is an error for the caller; the poll keeps reading', async () => {
      const empty = path.join(dir, 'empty')
      await mkdir(empty)
      const clock = new FakeTimers()
      const errors: string[] = []
      const pairs: KeyPair[] = []
      let wake: (() => void) | undefined
      const watcher = watchCertificateDir(empty, {clock, onPair: (pair) => (pairs.push(pair), wake?.()), onError: (error) => (errors.push(error.message), wake?.())})
      try {
        await clock.advance(10_000)
        await new Promise<void>((resolve) => (errors.length > 0 ? resolve() : (wake = resolve)))
        assert.match(errors[0]!, /ENOENT/)
        await writeFile(path.join(empty, 'tls.key'), first.key)
        await writeFile(path.join(empty, 'tls.crt'), first.cert)
        await clock.advance(10_000)
        await new Promise<void>((resolve) => {
          const check = () => (pairs.some((pair) => pair.cert === first.cert && pair.key === first.key) ? resolve() : (wake = check))
          check()
        })
      } finally {
        watcher.stop()
      }
    })
  })

  it('createCertificateOffThread: the certificate of createCertificate, made in a worker thread', async () => {
    const pair = await createCertificateOffThread({commonName: 'worker.example', dnsNames: ['worker.example'], ipAddresses: ['127.0.0.1']})
    const summary = checkKeyPair(pair)
    assert.equal(summary.subject, 'CN=worker.example')
    assert.equal(new X509Certificate(pair.cert).subjectAltName, 'DNS:worker.example, IP Address:127.0.0.1')
  })
})
