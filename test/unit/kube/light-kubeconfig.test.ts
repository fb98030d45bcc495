import assert from 'node:assert/strict'
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import type https from 'node:https'
import {tmpdir} from 'node:os'
import path from 'node:path'
import yaml from 'js-yaml'
import {loadKubeConfig, type KubeConfigOptions} from '../../../src/kube/kubeconfig.js'
import {KubeConfigError, loadLightKubeConfig} from '../../../src/kube/light-kubeconfig.js'

/**
 * The light reader of the CLI's fast path must read a kubeconfig exactly as `loadKubeConfig` (client-node) does, or
 * say "unsupported": each case loads with both and compares what a request gets (server, TLS options, token) and
 * the context's namespace, or the error message.
 */
describe('loadLightKubeConfig (the fast path\'s kubeconfig reader) reads as loadKubeConfig does', () => {
  let dir: string
  const file = (name: string) => path.join(dir, name)
  const b64 = (text: string) => Buffer.from(text).toString('base64')
  const config = (clusters: object[], users: object[], contexts: object[], current?: string) =>
    yaml.dump({apiVersion: 'v1', kind: 'Config', clusters, users, contexts, ...(current ? {'current-context': current} : {})})

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'light-kubeconfig-'))
    await mkdir(file('certs'))
    await writeFile(file('certs/ca.crt'), 'CA FROM FILE')
    await writeFile(file('certs/client.crt'), 'CERT FROM FILE')
    await writeFile(file('certs/client.key'), 'KEY FROM FILE')
    await writeFile(file('token'), 'token-from-file')
    const cluster = (name: string, extra: object = {}) => ({name, cluster: {server: `https://${name}.example:6443/`, ...extra}})
    await writeFile(file('token.yaml'), config(
      [cluster('one', {'certificate-authority-data': b64('CA DATA'), 'tls-server-name': 'api.internal'})],
      [{name: 'u', user: {token: 'secret-token'}}],
      [{name: 'ctx', context: {cluster: 'one', user: 'u', namespace: 'apps'}}], 'ctx'))
    await writeFile(file('token-file.yaml'), config(
      [cluster('one', {'insecure-skip-tls-verify': true})],
      [{name: 'u', user: {'token-file': file('token')}}],
      [{name: 'ctx', context: {cluster: 'one', user: 'u'}}], 'ctx'))
    await writeFile(file('cert-data.yaml'), config(
      [cluster('one', {'certificate-authority': 'certs/ca.crt'})], // relative to the file
      [{name: 'u', user: {'client-certificate-data': b64('CERT DATA'), 'client-key-data': b64('KEY DATA')}}],
      [{name: 'ctx', context: {cluster: 'one', user: 'u'}}], 'ctx'))
    await writeFile(file('cert-files.yaml'), config(
      [cluster('one', {'certificate-authority': file('certs/ca.crt')})],
      [{name: 'u', user: {'client-certificate': 'certs/client.crt', 'client-key': 'certs/client.key'}}],
      [{name: 'a', context: {cluster: 'one', user: 'u'}}, {name: 'b', context: {cluster: 'one', user: 'u', namespace: 'bee'}}], 'a'))
    // Two files for $KUBECONFIG: the later current-context wins (client-node's merge).
    await writeFile(file('first.yaml'), config([cluster('first')], [{name: 'u1', user: {token: 't1'}}], [{name: 'first', context: {cluster: 'first', user: 'u1'}}], 'first'))
    await writeFile(file('second.yaml'), config([cluster('second')], [{name: 'u2', user: {token: 't2'}}], [{name: 'second', context: {cluster: 'second', user: 'u2'}}], 'second'))
    await writeFile(file('no-current.yaml'), config([cluster('third')], [{name: 'u3', user: {token: 't3'}}], [{name: 'third', context: {cluster: 'third', user: 'u3'}}]))
    await writeFile(file('exec.yaml'), config([cluster('one')], [{name: 'u', user: {exec: {command: 'aws', apiVersion: 'client.authentication.k8s.io/v1'}}}], [{name: 'ctx', context: {cluster: 'one', user: 'u'}}], 'ctx'))
    await writeFile(file('auth-provider.yaml'), config([cluster('one')], [{name: 'u', user: {'auth-provider': {name: 'oidc', config: {}}}}], [{name: 'ctx', context: {cluster: 'one', user: 'u'}}], 'ctx'))
    await writeFile(file('no-user.yaml'), config([cluster('one')], [], [{name: 'ctx', context: {cluster: 'one'}}], 'ctx'))
    await writeFile(file('duplicate.yaml'), config([cluster('first')], [{name: 'u9', user: {token: 't9'}}], [{name: 'dup', context: {cluster: 'first', user: 'u9'}}]))
    await writeFile(file('broken.yaml'), 'clusters: [\n')
  })
  after(() => rm(dir, {recursive: true, force: true}))

  /** What one request gets: the options KubeClient sends with. */
  async function requestOptions(kubeConfig: {applyToHTTPSOptions(options: https.RequestOptions): Promise<void>}) {
    const options: https.RequestOptions = {headers: {Accept: 'application/json'}}
    await kubeConfig.applyToHTTPSOptions(options)
    const text = (value: unknown) => (value === undefined ? undefined : Buffer.from(value as Buffer).toString())
    return {
      ca: text(options.ca), cert: text(options.cert), key: text(options.key),
      rejectUnauthorized: options.rejectUnauthorized, servername: options.servername,
      authorization: (options.headers as Record<string, string>).Authorization,
    }
  }

  const env = (kubeconfigList?: string[]): NodeJS.ProcessEnv => (kubeconfigList ? {KUBECONFIG: kubeconfigList.map(file).join(path.delimiter)} : {})
  const cases: Array<{name: string; options: () => KubeConfigOptions; expect: Record<string, unknown>}> = [
    {name: 'token, CA data, tls-server-name, the context\'s namespace', options: () => ({kubeconfig: file('token.yaml')}),
      expect: {server: 'https://one.example:6443', namespace: 'apps', ca: 'CA DATA', authorization: 'Bearer secret-token', servername: 'api.internal'}},
    {name: 'token-file, insecure-skip-tls-verify', options: () => ({kubeconfig: file('token-file.yaml')}),
      expect: {authorization: 'Bearer token-from-file', rejectUnauthorized: false, namespace: undefined}},
    {name: 'client certificate and key data, CA file relative to the kubeconfig', options: () => ({kubeconfig: file('cert-data.yaml')}),
      expect: {ca: 'CA FROM FILE', cert: 'CERT DATA', key: 'KEY DATA', authorization: undefined}},
    {name: 'client certificate and key files, --context', options: () => ({kubeconfig: file('cert-files.yaml'), context: 'b'}),
      expect: {cert: 'CERT FROM FILE', key: 'KEY FROM FILE', namespace: 'bee'}},
    {name: '$KUBECONFIG list: the later file\'s current-context wins', options: () => ({env: env(['first.yaml', 'second.yaml'])}),
      expect: {server: 'https://second.example:6443', authorization: 'Bearer t2'}},
    {name: '$KUBECONFIG list: a file without current-context keeps the earlier one; --context reaches the later file', options: () => ({env: env(['first.yaml', 'no-current.yaml']), context: 'third'}),
      expect: {server: 'https://third.example:6443', authorization: 'Bearer t3'}},
    {name: '$KUBECONFIG list without current-context in the later file', options: () => ({env: env(['first.yaml', 'no-current.yaml'])}),
      expect: {server: 'https://first.example:6443', authorization: 'Bearer t1'}},
  ]

  for (const c of cases) {
    it(c.name, async () => {
      const light = loadLightKubeConfig(c.options())
      assert.ok(!('unsupported' in light), 'unsupported' in light ? light.unsupported : '')
      const full = loadKubeConfig(c.options())
      const fullNamespace = full.kubeConfig.getContextObject(full.kubeConfig.getCurrentContext())?.namespace
      const got = {server: light.server, source: light.source, namespace: light.namespace, ...await requestOptions(light.kubeConfig)}
      const want = {server: full.server, source: full.source, namespace: fullNamespace, ...await requestOptions(full.kubeConfig)}
      assert.deepEqual(got, want)
      for (const [key, value] of Object.entries(c.expect)) assert.deepEqual(got[key as keyof typeof got], value, key)
    })
  }

  const errors: Array<{name: string; options: () => KubeConfigOptions; message: RegExp}> = [
    {name: 'a context that is not there', options: () => ({kubeconfig: file('cert-files.yaml'), context: 'nope'}), message: /^Context "nope" is not in .*cert-files\.yaml; available: a, b\.$/},
    {name: 'no current context', options: () => ({kubeconfig: file('no-current.yaml')}), message: /has no current context with a cluster: set one with --context/},
    {name: 'a missing --kubeconfig', options: () => ({kubeconfig: file('missing.yaml')}), message: /missing\.yaml does not exist: check the --kubeconfig path\.$/},
    {name: 'no file in $KUBECONFIG', options: () => ({env: env(['missing.yaml'])}), message: /^No kubeconfig found: \$KUBECONFIG names/},
    {name: 'no kubeconfig at all', options: () => ({env: {}, home: file('empty-home')}), message: /^No kubeconfig found: pass --kubeconfig <file>/},
    {name: 'YAML that does not parse', options: () => ({kubeconfig: file('broken.yaml')}), message: /^Cannot read kubeconfig .*broken\.yaml: /},
  ]
  for (const c of errors) {
    it(`the same error: ${c.name}`, () => {
      let lightError: unknown
      let fullError: unknown
      try { loadLightKubeConfig(c.options()) } catch (error) { lightError = error }
      try { loadKubeConfig(c.options()) } catch (error) { fullError = error }
      assert.ok(lightError instanceof KubeConfigError, String(lightError))
      assert.ok(fullError instanceof KubeConfigError, String(fullError))
      assert.equal(lightError.message, fullError.message)
      assert.match(lightError.message, c.message)
    })
  }

  const unsupported: Array<{name: string; options: () => KubeConfigOptions; why: RegExp}> = [
    {name: 'an exec plugin', options: () => ({kubeconfig: file('exec.yaml')}), why: /uses exec/},
    {name: 'an auth-provider', options: () => ({kubeconfig: file('auth-provider.yaml')}), why: /uses auth-provider/},
    {name: 'a context without a user', options: () => ({kubeconfig: file('no-user.yaml')}), why: /has no user/},
    {name: 'a name in two files of $KUBECONFIG (client-node throws "Duplicate cluster")', options: () => ({env: env(['first.yaml', 'duplicate.yaml'])}), why: /same cluster name/},
  ]
  for (const c of unsupported) {
    it(`unsupported, so the CLI uses client-node: ${c.name}`, () => {
      const light = loadLightKubeConfig(c.options())
      assert.ok('unsupported' in light, 'expected unsupported')
      assert.match(light.unsupported, c.why)
    })
  }

  describe('the in-cluster service account (as client-node\'s loadFromCluster)', () => {
    const sa = () => path.join(dir, 'var/run/secrets/kubernetes.io/serviceaccount')
    const saved = {host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT}
    before(async () => {
      await mkdir(sa(), {recursive: true})
      await writeFile(path.join(sa(), 'token'), 'sa-token-1')
      await writeFile(path.join(sa(), 'ca.crt'), 'CLUSTER CA')
      await writeFile(path.join(sa(), 'namespace'), 'polycrate')
    })
    afterEach(() => {
      for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
    })

    for (const [host, port, server] of [['10.0.0.1', '443', 'https://10.0.0.1:443'], ['fd00::1', '6443', 'https://[fd00::1]:6443']]) {
      it(`${host}:${port} → ${server}, the mounted CA, token and namespace`, async () => {
        // client-node reads process.env; the light reader the env it is given (the same here, without a $KUBECONFIG
        // of the machine's, which comes first)
        process.env.KUBERNETES_SERVICE_HOST = host
        process.env.KUBERNETES_SERVICE_PORT = port
        const options = {env: {KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port}, rootPrefix: dir}
        const light = loadLightKubeConfig(options)
        assert.ok(!('unsupported' in light), 'unsupported' in light ? light.unsupported : '')
        const full = loadKubeConfig(options)
        const fullNamespace = full.kubeConfig.getContextObject(full.kubeConfig.getCurrentContext())?.namespace
        const got = {server: light.server, source: light.source, namespace: light.namespace, ...await requestOptions(light.kubeConfig)}
        const want = {server: full.server, source: full.source, namespace: fullNamespace, ...await requestOptions(full.kubeConfig)}
        assert.deepEqual(got, want)
        assert.deepEqual({server: got.server, ca: got.ca, authorization: got.authorization, namespace: got.namespace}, {server, ca: 'CLUSTER CA', authorization: 'Bearer sa-token-1', namespace: 'polycrate'})
      })
    }

    it('an http port (client-node refuses http without insecure-skip-tls-verify) is unsupported', () => {
      const light = loadLightKubeConfig({env: {KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '8080'}, rootPrefix: dir})
      assert.ok('unsupported' in light)
      assert.match(light.unsupported, /http port/)
    })

    it('reads a rotated token again once the one it has is a minute old (the kubelet rotates projected tokens)', async () => {
      let now = 1_000_000
      const light = loadLightKubeConfig({env: {KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443'}, rootPrefix: dir}, () => now)
      assert.ok(!('unsupported' in light))
      assert.equal((await requestOptions(light.kubeConfig)).authorization, 'Bearer sa-token-1')
      await writeFile(path.join(sa(), 'token'), 'sa-token-2')
      now += 59_000
      assert.equal((await requestOptions(light.kubeConfig)).authorization, 'Bearer sa-token-1')
      now += 2_000
      assert.equal((await requestOptions(light.kubeConfig)).authorization, 'Bearer sa-token-2')
      await writeFile(path.join(sa(), 'token'), 'sa-token-1')
    })
  })
})
