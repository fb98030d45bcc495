import assert from 'node:assert/strict'
import {X509Certificate, createPrivateKey} from 'node:crypto'
import {execFile} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {createServer, request, type Server} from 'node:https'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import {createCertificate, type CertificateAndKey} from '../../../src/lib/x509.js'

/**
 * src/lib/x509.ts (certificates made by @peculiar/x509) read back by the parsers that use them: Node's X509Certificate
 * (OpenSSL), the openssl command, and a TLS handshake.
 */
describe('x509: certificates made by @peculiar/x509', () => {
  const now = new Date('2026-06-01T12:00:00Z')
  let ca: CertificateAndKey
  let leaf: CertificateAndKey
  before(async () => {
    ca = await createCertificate({commonName: 'test-ca', organization: 'Polycrate Tests', isCa: true, validityDays: 30, now})
    leaf = await createCertificate({
      commonName: 'polycrate-operator.ns.svc', dnsNames: ['polycrate-operator.ns.svc', 'localhost'], ipAddresses: ['127.0.0.1', '::1'],
      issuer: ca, validityDays: 10, now,
    })
  })

  it('a self-signed CA: subject = issuer, CA:TRUE, signs certificates, key matches', () => {
    const cert = new X509Certificate(ca.cert)
    assert.equal(cert.subject, 'O=Polycrate Tests\nCN=test-ca')
    assert.equal(cert.issuer, cert.subject)
    assert.equal(cert.ca, true)
    assert.equal(cert.keyUsage, undefined, 'Node lists only extended key usages; a CA has none')
    assert.ok(cert.verify(cert.publicKey))
    assert.ok(cert.checkPrivateKey(createPrivateKey(ca.key)))
    assert.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1')
  })

  it('a leaf: SANs, validity (5 minutes of skew before now), issuer, server auth, key match', () => {
    const cert = new X509Certificate(leaf.cert)
    assert.equal(cert.subject, 'CN=polycrate-operator.ns.svc')
    assert.equal(cert.issuer, 'O=Polycrate Tests\nCN=test-ca')
    assert.equal(cert.subjectAltName, 'DNS:polycrate-operator.ns.svc, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1')
    assert.equal(new Date(cert.validFrom).toISOString(), '2026-06-01T11:55:00.000Z')
    assert.equal(new Date(cert.validTo).toISOString(), '2026-06-11T12:00:00.000Z')
    assert.equal(cert.ca, false)
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1'])
    assert.ok(cert.checkIssued(new X509Certificate(ca.cert)))
    assert.ok(cert.verify(new X509Certificate(ca.cert).publicKey))
    assert.ok(cert.checkPrivateKey(createPrivateKey(leaf.key)))
    assert.ok(!cert.checkPrivateKey(createPrivateKey(ca.key)))
    assert.match(cert.serialNumber, /^[4-7][0-9A-F]{31}$/, '16 bytes, positive, no leading zero byte')
    assert.equal(cert.checkHost('localhost'), 'localhost')
    assert.equal(cert.checkIP('::1'), '::1')
  })

  it('client usage; GeneralizedTime from 2050 on (RFC 5280)', async () => {
    const client = await createCertificate({commonName: 'front-proxy-client', usages: ['client'], issuer: ca, now: new Date('2049-12-31T00:00:00Z'), validityDays: 2})
    const cert = new X509Certificate(client.cert)
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2'])
    assert.equal(new Date(cert.validTo).toISOString(), '2050-01-02T00:00:00.000Z')
    assert.equal(cert.subjectAltName, undefined)
  })

  it('refuses an IP address that is not one', async () => {
    await assert.rejects(createCertificate({commonName: 'x', ipAddresses: ['300.1.1.1']}), /not an IP address/)
  })

  it('openssl reads the same: key usage and basic constraints critical, the chain verifies', async function () {
    const run = promisify(execFile)
    const text = async (pem: string) => {
      const child = run('openssl', ['x509', '-noout', '-text'])
      child.child.stdin?.end(pem)
      return (await child).stdout
    }
    let leafText: string
    try {
      leafText = await text(leaf.cert)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return this.skip()
      throw error
    }
    assert.match(leafText, /Signature Algorithm: ecdsa-with-SHA256/)
    assert.match(leafText, /X509v3 Basic Constraints: critical\s+CA:FALSE/)
    assert.match(leafText, /X509v3 Key Usage: critical\s+Digital Signature\n/)
    assert.match(leafText, /X509v3 Extended Key Usage: \s*TLS Web Server Authentication/)
    assert.match(leafText, /DNS:polycrate-operator\.ns\.svc, DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/)
    const caText = await text(ca.cert)
    assert.match(caText, /X509v3 Basic Constraints: critical\s+CA:TRUE/)
    assert.match(caText, /X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/)
    const dir = await mkdtemp(path.join(tmpdir(), 'x509-'))
    try {
      await writeFile(path.join(dir, 'ca.crt'), ca.cert)
      await writeFile(path.join(dir, 'leaf.crt'), leaf.cert)
      const at = String(Math.floor(now.getTime() / 1000) + 86_400)
      const verified = await run('openssl', ['verify', '-attime', at, '-purpose', 'sslserver', '-CAfile', path.join(dir, 'ca.crt'), path.join(dir, 'leaf.crt')])
      assert.match(verified.stdout, /leaf\.crt: OK/)
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })

  it('serves TLS: a client that trusts the CA completes the handshake for localhost', async () => {
    // `ca` is valid from 2026-06-01 (fixed for the asserts above): the handshake needs a CA valid now.
    const liveCa = await createCertificate({commonName: 'live-ca', isCa: true})
    const live = await createCertificate({commonName: 'localhost', dnsNames: ['localhost'], issuer: liveCa})
    const server: Server = createServer({cert: live.cert, key: live.key}, (_req, res) => res.end('ok'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const {port} = server.address() as AddressInfo
      const body = await new Promise<string>((resolve, reject) => {
        request({host: '127.0.0.1', port, servername: 'localhost', ca: liveCa.cert, path: '/'}, (res) => {
          let text = ''
          res.on('data', (chunk: Buffer) => (text += chunk.toString()))
          res.on('end', () => resolve(text))
        }).on('error', reject).end()
      })
      assert.equal(body, 'ok')
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
