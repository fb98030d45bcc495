import assert from 'node:assert/strict'
import {rootCertificates} from 'node:tls'
import {clusterPayload, isTlsCode, probeResult, probeTarget, slotHolder, type ProbeOutcome} from '../../../../src/operator/kinds/k8scluster/k8scluster.mapping.js'

const tokenSpec = (extra: Record<string, unknown> = {}) => ({
  apiServer: 'https://api.example.com:6443',
  authentication: {serviceAccountToken: {secretRef: {name: 'prod-token', key: 'token'}}},
  ...extra,
})
/** Any real PEM certificate will do as a CA here. */
const PEM = rootCertificates[0]!
const kubeconfig = (user: string, server = 'https://kc.example.com:6443', ca = PEM) => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ${server}
    certificate-authority-data: ${Buffer.from(ca).toString('base64')}
users:
- name: u
  user:
${user}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

describe('K8sCluster (pure)', () => {
  describe('probe target from the spec and its Secret', () => {
    const cases: Array<[title: string, spec: Record<string, unknown>, data: Record<string, string> | undefined, expect: Record<string, unknown>]> = [
      ['token', tokenSpec(), {token: ' abc \n'}, {server: 'https://api.example.com:6443', token: 'abc'}],
      ['no authentication', {apiServer: 'https://x'}, undefined, {reason: 'NoCredentials'}],
      ['Secret missing', tokenSpec(), undefined, {reason: 'CredentialsSecretMissing', message: /Secret ns\/prod-token does not exist: create it with the token under the key "token"/}],
      ['key missing', tokenSpec(), {other: 'x'}, {reason: 'CredentialsKeyMissing', message: /has no key "token"/}],
      ['key empty', tokenSpec(), {token: '  '}, {reason: 'CredentialsKeyMissing'}],
      ['no apiServer', tokenSpec({apiServer: ''}), {token: 't'}, {reason: 'NoAPIServer'}],
      ['apiServer not a URL', tokenSpec({apiServer: 'https://api:port'}), {token: 't'}, {reason: 'InvalidAPIServer', message: /not a URL/}],
      ['apiServer http', tokenSpec({apiServer: 'http://api.example.com'}), {token: 't'}, {reason: 'InvalidAPIServer', message: /not https/}],
      ['caCertificate not PEM', tokenSpec({caCertificate: 'hello'}), {token: 't'}, {reason: 'InvalidCACertificate'}],
      ['kubeconfig with token: its server and CA',
        {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}}, {kubeconfig: kubeconfig('    token: kc-token')},
        {server: 'https://kc.example.com:6443', token: 'kc-token', ca: PEM}],
      ['kubeconfig; spec.apiServer wins',
        {apiServer: 'https://override:6443', authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}}, {kubeconfig: kubeconfig('    token: kc-token')},
        {server: 'https://override:6443', token: 'kc-token'}],
      ['kubeconfig with client certificate',
        {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}},
        {kubeconfig: kubeconfig(`    client-certificate-data: ${Buffer.from('CERT').toString('base64')}\n    client-key-data: ${Buffer.from('KEY').toString('base64')}`)},
        {cert: 'CERT', key: 'KEY'}],
      ['kubeconfig with an exec plugin', {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}},
        {kubeconfig: kubeconfig('    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}')}, {reason: 'UnsupportedKubeconfig'}],
      ['kubeconfig with a token-file: the operator\'s own files are never read', {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}},
        {kubeconfig: kubeconfig('    token-file: /var/run/secrets/kubernetes.io/serviceaccount/token')}, {reason: 'UnsupportedKubeconfig'}],
      ['kubeconfig with a broken CA', {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}},
        {kubeconfig: kubeconfig('    token: kc-token', undefined, 'CA-PEM')}, {reason: 'InvalidCACertificate', message: /certificate-authority-data of the kubeconfig in Secret ns\/kc/}],
      ['spec.caCertificate wins over the kubeconfig\'s CA', {caCertificate: rootCertificates[1], authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}},
        {kubeconfig: kubeconfig('    token: kc-token')}, {ca: rootCertificates[1]}],
      ['token with a valid caCertificate', tokenSpec({caCertificate: PEM}), {token: 't'}, {ca: PEM, token: 't'}],
      ['kubeconfig not YAML', {authentication: {kubeconfig: {secretRef: {name: 'kc', key: 'kubeconfig'}}}}, {kubeconfig: ': : ['}, {reason: 'InvalidKubeconfig'}],
    ]
    for (const [title, spec, data, expect] of cases) {
      it(title, () => {
        const target = probeTarget(spec as never, 'ns', data) as unknown as Record<string, unknown>
        for (const [key, value] of Object.entries(expect)) {
          if (value instanceof RegExp) assert.match(String(target[key]), value)
          else assert.equal(target[key], value, key)
        }
        if ('message' in target) assert.ok(!JSON.stringify(target).includes('kc-token') && !JSON.stringify(target).includes('abc'), 'no credential in a problem')
      })
    }
  })

  describe('probe outcome → phase and a reason that says what to fix', () => {
    const cases: Array<[outcome: ProbeOutcome, phase: string, reason: string, reachable: boolean, message: RegExp]> = [
      [{kind: 'ok', version: 'v1.35.4'}, 'Ready', 'Reachable', true, /Kubernetes v1\.35\.4/],
      [{kind: 'http', status: 401, path: '/version'}, 'Unauthorized', 'CredentialsRejected', true, /rejected the credentials from Secret ns\/t \(401\): put a valid token/],
      [{kind: 'http', status: 403, path: '/api'}, 'Unauthorized', 'Forbidden', true, /refused GET \/api \(403\): bind the identity to the system:discovery role/],
      [{kind: 'http', status: 503, path: '/version'}, 'Error', 'APIServerError', true, /answered 503/],
      [{kind: 'tls', code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'}, 'Error', 'TLSVerificationFailed', false, /set spec\.caCertificate to the CA that signed/],
      [{kind: 'tls', code: 'ERR_TLS_CERT_ALTNAME_INVALID'}, 'Error', 'TLSVerificationFailed', false, /does not name the host/],
      [{kind: 'network', code: 'ECONNREFUSED'}, 'Unreachable', 'Unreachable', false, /Cannot reach the API server at https:\/\/s \(ECONNREFUSED\): check spec\.apiServer/],
      [{kind: 'network', code: 'ETIMEDOUT'}, 'Unreachable', 'Unreachable', false, /ETIMEDOUT/],
    ]
    for (const [outcome, phase, reason, reachable, message] of cases) {
      it(`${JSON.stringify(outcome)} → ${phase}/${reason}`, () => {
        const result = probeResult(outcome, 'https://s', 'Secret ns/t')
        assert.deepEqual([result.phase, result.reason, result.reachable], [phase, reason, reachable])
        assert.match(result.message, message)
      })
    }
  })

  it('TLS failure codes are told apart from network failures', () => {
    for (const code of ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']) assert.ok(isTlsCode(code), code)
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH']) assert.ok(!isTlsCode(code), code)
  })

  describe('which CR holds the workspace\'s one cluster slot', () => {
    const t1 = '2026-01-01T00:00:00Z'
    const t2 = '2026-01-02T00:00:00Z'
    const cases: Array<[title: string, claims: Parameters<typeof slotHolder>[0], holder: string | undefined]> = [
      ['nobody', [], undefined],
      ['none Ready, none registered: nobody (a typo never takes the slot)', [{key: 'a/x', creationTimestamp: t1}], undefined],
      ['the oldest Ready one', [{key: 'b/x', creationTimestamp: t2, ready: true}, {key: 'a/y', creationTimestamp: t1, ready: true}], 'a/y'],
      ['same age: by key', [{key: 'b/x', creationTimestamp: t1, ready: true}, {key: 'a/y', creationTimestamp: t1, ready: true}], 'a/y'],
      ['an older CR that is not Ready does not take it', [{key: 'a/old', creationTimestamp: t1}, {key: 'b/new', creationTimestamp: t2, ready: true}], 'b/new'],
      ['the registered one keeps it, Ready or not', [{key: 'a/old', creationTimestamp: t1, ready: true}, {key: 'b/reg', creationTimestamp: t2, registered: true}], 'b/reg'],
      ['one being deleted lets go', [{key: 'a/reg', creationTimestamp: t1, registered: true, deleting: true}, {key: 'b/x', creationTimestamp: t2, ready: true}], 'b/x'],
      ['two registered (a race): the older', [{key: 'b/r', creationTimestamp: t2, registered: true}, {key: 'a/r', creationTimestamp: t1, registered: true}], 'a/r'],
      ['an older CR not probed yet: nobody until its probe says (it may answer)', [{key: 'a/old', creationTimestamp: t1, unprobed: true}, {key: 'b/new', creationTimestamp: t2, ready: true}], undefined],
      ['a younger CR not probed yet does not hold the older Ready one back', [{key: 'a/old', creationTimestamp: t1, ready: true}, {key: 'b/new', creationTimestamp: t2, unprobed: true}], 'a/old'],
      ['an older CR not probed yet, being deleted: ignored', [{key: 'a/old', creationTimestamp: t1, unprobed: true, deleting: true}, {key: 'b/new', creationTimestamp: t2, ready: true}], 'b/new'],
    ]
    for (const [title, claims, holder] of cases) it(title, () => assert.equal(slotHolder(claims), holder))
  })

  it('API body: display name (default: CR name), description, version when known', () => {
    assert.deepEqual(clusterPayload('prod', {displayName: 'Production Cluster', description: 'eu'} as never, 'v1.30.0'), {display_name: 'Production Cluster', description: 'eu', kubernetes_version: 'v1.30.0'})
    assert.deepEqual(clusterPayload('prod', {} as never, undefined), {display_name: 'prod', description: ''})
  })
})
