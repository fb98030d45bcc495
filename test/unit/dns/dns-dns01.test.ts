import assert from 'node:assert/strict'
import {X509Certificate} from 'node:crypto'
import {authenticate, frontProxyAuthFrom, parseChallenge} from '../../../src/operator/dns/dns01-webhook.js'
import {createCertificate, type CertificateAndKey} from '../../../src/lib/x509.js'

describe('DNS01 webhook (pure)', () => {
  describe('parseChallenge', () => {
    const request = (fields: Record<string, unknown>) => ({request: {uid: '', action: 'Present', type: 'dns-01', dnsName: 'www.example.com', key: 'abc', ...fields}})
    it('takes the record name from resolvedFQDN', () => {
      const parsed = parseChallenge(request({resolvedFQDN: '_acme-challenge.WWW.example.com.'}))
      assert.ok(parsed.ok)
      assert.equal(parsed.value.fqdn, '_acme-challenge.www.example.com')
    })
    it('derives it from dnsName without resolvedFQDN (a wildcard shares the apex name)', () => {
      const parsed = parseChallenge(request({dnsName: '*.example.com'}))
      assert.ok(parsed.ok)
      assert.equal(parsed.value.fqdn, '_acme-challenge.example.com')
    })
    it('accepts a payload without apiVersion/kind, as cert-manager sends it', () => assert.ok(parseChallenge(request({action: 'CleanUp'})).ok))
    const refusals: Array<[string, unknown, RegExp]> = [
      ['unknown action', request({action: 'present'}), /unknown/],
      ['not dns-01', request({type: 'http-01'}), /not dns-01/],
      ['empty key', request({key: ''}), /key/],
      ['key with spaces', request({key: 'a b'}), /key/],
      ['bad resolvedFQDN', request({resolvedFQDN: '_acme-challenge..example.com'}), /resolvedFQDN/],
      ['a wildcard resolvedFQDN', request({resolvedFQDN: '*.example.com'}), /resolvedFQDN/],
      ['no request', {}, /request/],
    ]
    for (const [name, body, reason] of refusals) {
      it(`refuses: ${name}`, () => {
        const parsed = parseChallenge(body)
        assert.equal(parsed.ok, false)
        assert.match((parsed as {reason: string}).reason, reason)
      })
    }
  })

  describe('authenticate', () => {
    const now = new Date()
    let ca: CertificateAndKey
    let other: CertificateAndKey
    before(async () => {
      ca = await createCertificate({commonName: 'front-proxy-ca', isCa: true})
      other = await createCertificate({commonName: 'other-ca', isCa: true})
    })
    const auth = () => frontProxyAuthFrom({'requestheader-client-ca-file': ca.cert, 'requestheader-allowed-names': '["front-proxy-client"]'})
    const cert = async (cn: string, issuer = () => ca, at = now) => new X509Certificate((await createCertificate({commonName: cn, usages: ['client'], issuer: issuer(), now: at, validityDays: 1})).cert)
    const table: Array<[string, () => Promise<X509Certificate | undefined>, () => ReturnType<typeof frontProxyAuthFrom>, string]> = [
      ['the front-proxy client', () => cert('front-proxy-client'), auth, 'ok'],
      ['no certificate', async () => undefined, auth, '401'],
      ['another CA', () => cert('front-proxy-client', () => other), auth, '401'],
      ['a name that is not allowed', () => cert('someone'), auth, '403'],
      ['an expired certificate', () => cert('front-proxy-client', () => ca, new Date(now.getTime() - 3 * 86_400_000)), auth, '401'],
      ['no front-proxy CA known', () => cert('front-proxy-client'), () => undefined, '401'],
      ['any name when no names are configured', () => cert('someone'), () => frontProxyAuthFrom({'requestheader-client-ca-file': ca.cert}), 'ok'],
    ]
    for (const [name, peer, config, expected] of table) {
      it(name, async () => {
        const result = authenticate(await peer(), config(), now)
        assert.equal(result.ok ? 'ok' : String(result.status), expected, result.ok ? '' : result.reason)
      })
    }
    it('reads every CA of the bundle and ignores broken allowed names', () => {
      const both = frontProxyAuthFrom({'requestheader-client-ca-file': `${ca.cert}${other.cert}`, 'requestheader-allowed-names': 'not json'})
      assert.equal(both?.cas.length, 2)
      assert.deepEqual(both?.allowedNames, [])
      assert.equal(frontProxyAuthFrom({}), undefined)
    })
  })

  it('makes certificates whose SANs and issuer check out', async () => {
    for (let i = 0; i < 20; i++) {
      const ca = await createCertificate({commonName: 'ca', isCa: true})
      const leaf = new X509Certificate((await createCertificate({commonName: 'svc', dnsNames: ['svc.ns.svc'], ipAddresses: ['127.0.0.1', '::1'], issuer: ca})).cert)
      assert.ok(leaf.checkIssued(new X509Certificate(ca.cert)) && leaf.verify(new X509Certificate(ca.cert).publicKey))
      assert.equal(leaf.subjectAltName, 'DNS:svc.ns.svc, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1')
    }
  })
})
