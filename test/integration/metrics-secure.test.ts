/**
 * `polycrate operator run --metrics-secure` as a real process against the real apiserver, scraped with real
 * ServiceAccount tokens (TokenRequest): no token → 401, a token the apiserver never issued → 401, a ServiceAccount
 * without the right → 403, one bound to a ClusterRole with `get` on the non-resource URL /metrics → 200 with the
 * metrics (promtool checks them where installed). The certificate of --metrics-cert-dir is rotated in place (a new
 * key from a new CA, swapped in as the kubelet swaps a mounted Secret) and served from the next handshake on by the
 * same process; without --metrics-cert-dir a self-signed certificate made at start is served.
 */
import assert from 'node:assert/strict'
import {X509Certificate} from 'node:crypto'
import {mkdir, mkdtemp, rename, rm, symlink, writeFile} from 'node:fs/promises'
import https from 'node:https'
import {tmpdir} from 'node:os'
import path from 'node:path'
import type {TLSSocket} from 'node:tls'
import {execa} from 'execa'
import type {KubeClient} from '../../src/kube/client.js'
import {createCertificate, type CertificateAndKey} from '../../src/lib/x509.js'
import {OPERATOR_NAME} from '../../src/operator/conventions.js'
import {METRICS_READER_RULE} from '../../src/operator/runtime/secure-metrics.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {eventually} from '../support/helpers.js'
import {startOperator, type OperatorProcess} from '../support/operator-process.js'
import {parsePromText} from '../support/prom-text.js'

interface Answer {
  status: number
  body: string
  /** SHA-256 fingerprint of the certificate the server presented. */
  fingerprint: string
}

/** GET /metrics over TLS (verifying against `ca` when given), with a bearer token when given. */
function scrape(port: number, options: {token?: string; ca?: string; servername?: string} = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = https.get({
      host: '127.0.0.1', port, path: '/metrics', agent: false,
      ...(options.ca ? {ca: options.ca, servername: options.servername ?? 'localhost'} : {rejectUnauthorized: false}),
      headers: options.token ? {Authorization: `Bearer ${options.token}`} : {},
    }, (response) => {
      const fingerprint = (response.socket as TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? ''
      let body = ''
      response.on('data', (chunk: Buffer) => (body += chunk.toString()))
      response.on('end', () => resolve({status: response.statusCode ?? 0, body, fingerprint}))
    })
    request.on('error', reject)
  })
}

const metricsPort = (operator: OperatorProcess) => Number(new URL(operator.metricsUrl).port)

describe('operator run --metrics-secure: HTTPS, TokenReview + SubjectAccessReview, real ServiceAccount tokens', function () {
  this.timeout(180_000)
  let client: KubeClient
  let namespace: string
  let dir: string
  const running: OperatorProcess[] = []
  const tokens: Record<'reader' | 'stranger', string> = {reader: '', stranger: ''}
  const clusterRole = `polycrate-metrics-reader-${Math.random().toString(16).slice(2, 8)}`
  let ca1: CertificateAndKey
  let ca2: CertificateAndKey

  const serving = (ca: CertificateAndKey) => createCertificate({commonName: `${OPERATOR_NAME}-metrics.${namespace}.svc`, dnsNames: ['localhost', `${OPERATOR_NAME}-metrics.${namespace}.svc`], ipAddresses: ['127.0.0.1'], issuer: ca})

  before(async () => {
    await ensureCrds()
    client = adminClient()
    namespace = await freshNamespace(client, 'metrics-secure')
    dir = await mkdtemp(path.join(tmpdir(), 'metrics-secure-'))
    // Two ServiceAccounts, one of them bound to a ClusterRole with the scraper's rule (kubebuilder's metrics-reader).
    for (const name of ['reader', 'stranger'] as const) {
      await client.create({group: '', version: 'v1', plural: 'serviceaccounts', namespace}, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name, namespace}})
    }
    await client.create({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles'}, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: {name: clusterRole}, rules: [{...METRICS_READER_RULE, nonResourceURLs: [...METRICS_READER_RULE.nonResourceURLs], verbs: [...METRICS_READER_RULE.verbs]}],
    })
    await client.create({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings'}, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: {name: clusterRole},
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole},
      subjects: [{kind: 'ServiceAccount', name: 'reader', namespace}],
    })
    // Real tokens, as the kubelet gets them for a Pod (TokenRequest), for the apiserver's default audience.
    for (const name of ['reader', 'stranger'] as const) {
      const answer = await client.request<{status?: {token?: string}}>({
        method: 'POST', path: `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
        body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {expirationSeconds: 3600}},
      })
      tokens[name] = answer.status!.token!
    }
    ;[ca1, ca2] = await Promise.all([createCertificate({commonName: 'metrics CA 1', isCa: true}), createCertificate({commonName: 'metrics CA 2', isCa: true})])
  })
  after(async () => {
    await Promise.all(running.splice(0).map((operator) => operator.stop('SIGKILL')))
    await client.delete({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings', name: clusterRole}).catch(() => {})
    await client.delete({group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', name: clusterRole}).catch(() => {})
    client.close()
    await rm(dir, {recursive: true, force: true})
  })

  it('no token → 401, an unknown token → 401, no right → 403, the metrics-reader right → 200; the cert dir rotates without a restart', async () => {
    // The certificate directory as a mounted Secret: tls.crt → ..data/tls.crt, ..data → ..v1 (the kubelet's layout).
    const certDir = path.join(dir, 'certs')
    const first = await serving(ca1)
    await mkdir(path.join(certDir, '..v1'), {recursive: true})
    await writeFile(path.join(certDir, '..v1', 'tls.crt'), first.cert)
    await writeFile(path.join(certDir, '..v1', 'tls.key'), first.key)
    await symlink('..v1', path.join(certDir, '..data'))
    await symlink('..data/tls.crt', path.join(certDir, 'tls.crt'))
    await symlink('..data/tls.key', path.join(certDir, 'tls.key'))

    const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace, args: ['--metrics-secure', '--metrics-cert-dir', certDir]})
    running.push(operator)
    const port = metricsPort(operator)
    await operator.waitForLog((l) => l.msg === 'metrics server listening')

    // Verified against the CA: the served certificate is the directory's.
    const noToken = await eventually(() => scrape(port, {ca: ca1.cert}), 30_000, 'a TLS answer')
    assert.equal(noToken.fingerprint, new X509Certificate(first.cert).fingerprint256)
    const answers = {
      'no token': noToken,
      'unknown token': await scrape(port, {ca: ca1.cert, token: 'eyJhbGciOiJSUzI1NiJ9.not-issued.by-this-apiserver'}),
      'ServiceAccount without the right': await scrape(port, {ca: ca1.cert, token: tokens.stranger}),
      'ServiceAccount with get /metrics': await scrape(port, {ca: ca1.cert, token: tokens.reader}),
    }
    const summary = Object.fromEntries(Object.entries(answers).map(([who, answer]) => [who, `${answer.status} ${answer.status === 200 ? `(${answer.body.length} bytes of metrics)` : answer.body.trim()}`]))
    process.stderr.write(`[metrics-secure] ${JSON.stringify(summary)}\n`)
    assert.deepEqual(summary, {
      'no token': '401 Unauthorized',
      'unknown token': '401 Unauthorized',
      'ServiceAccount without the right': `403 Authorization denied for user system:serviceaccount:${namespace}:stranger`,
      'ServiceAccount with get /metrics': summary['ServiceAccount with get /metrics'],
    })
    const metrics = answers['ServiceAccount with get /metrics']
    assert.equal(metrics.status, 200)
    const families = parsePromText(metrics.body)
    for (const name of ['controller_runtime_reconcile_total', 'rest_client_requests_total', 'process_resident_memory_bytes']) assert.ok(families.has(name), `${name} missing`)
    // The reviews reached the apiserver: its own counter of TokenReview and SubjectAccessReview creates.
    const reviews = families.get('rest_client_requests_total')!.samples.filter((s) => s.labels.method === 'POST' && s.labels.code === '201')
    assert.ok(reviews.length > 0)
    if ((await execa('which', ['promtool'], {reject: false})).exitCode === 0) {
      const promtool = await execa('promtool', ['check', 'metrics'], {input: metrics.body, reject: false})
      const complaints = `${promtool.stdout}\n${promtool.stderr}`.split('\n').filter((line) => line.trim().length > 0)
      // As in operator-run.test.ts: exit 3 = lint findings; prom-client's nodejs_active_*_total gauges are its own.
      const ours = complaints.filter((line) => !/^nodejs_active_(handles|requests|resources)_total non-counter/.test(line))
      assert.ok(promtool.exitCode === 0 || (promtool.exitCode === 3 && ours.length === 0), `promtool check metrics (${promtool.exitCode}): ${complaints.join('\n')}`)
    }
    // Plain http on the same port is no way around it.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`))

    // Rotation: a new key from a new CA, swapped in as the kubelet swaps a Secret volume (..data renamed over).
    const second = await serving(ca2)
    await mkdir(path.join(certDir, '..v2'))
    await writeFile(path.join(certDir, '..v2', 'tls.crt'), second.cert)
    await writeFile(path.join(certDir, '..v2', 'tls.key'), second.key)
    await symlink('..v2', path.join(certDir, '..data_tmp'))
    const changedAt = Date.now()
    await rename(path.join(certDir, '..data_tmp'), path.join(certDir, '..data'))
    const rotated = await eventually(async () => {
      const answer = await scrape(port, {token: tokens.reader})
      return answer.fingerprint === new X509Certificate(second.cert).fingerprint256 ? answer : undefined
    }, 30_000, 'the new certificate served')
    process.stderr.write(`[metrics-secure] the cert dir's new certificate served ${Date.now() - changedAt} ms after the swap (polled)\n`)
    assert.equal(rotated.status, 200)
    assert.equal((await scrape(port, {ca: ca2.cert, token: tokens.reader})).status, 200, 'verified against the new CA')
    assert.equal(operator.child.exitCode, null, 'the same process')
    assert.equal(operator.logs().filter((l) => l.msg === 'metrics server listening').length, 1, 'the server was not restarted')
    const reloaded = operator.logs().find((l) => l.msg === 'metrics: serving certificate reloaded')
    assert.equal(reloaded?.fingerprint, new X509Certificate(second.cert).fingerprint256)
    assert.ok(!operator.rawOutput().includes(tokens.reader) && !operator.rawOutput().includes('PRIVATE KEY'), 'no token or key in the logs')
  })

  it('without --metrics-cert-dir: a self-signed certificate for the metrics Service, made at start', async () => {
    const operator = await startOperator({kubeconfig: controlPlane().kubeconfigPath, namespace, args: ['--metrics-secure']})
    running.push(operator)
    const port = metricsPort(operator)
    const answer = await eventually(() => scrape(port, {token: tokens.reader}).catch(() => undefined), 30_000, 'the self-signed certificate served')
    assert.equal(answer.status, 200)
    const loaded = await operator.waitForLog((l) => l.msg === 'metrics: serving certificate loaded')
    assert.equal(loaded.source, 'self-signed, made at start')
    assert.equal(loaded.subject, `CN=${OPERATOR_NAME}-metrics.${namespace}.svc`)
    assert.equal(loaded.fingerprint, answer.fingerprint)
    assert.equal((await scrape(port)).status, 401)
  })
})
