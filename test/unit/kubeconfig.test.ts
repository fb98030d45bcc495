import assert from 'node:assert/strict'
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

describe('loadKubeConfig', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubeconfig-'))
    await mkdir(path.join(dir, 'home', '.kube'), {recursive: true})
    await writeKubeconfig(path.join(dir, 'home', '.kube', 'config'), 'https://home.example:6443', 't')
    await writeKubeconfig(path.join(dir, 'flag.yaml'), 'https://flag.example:6443', 't')
    await writeKubeconfig(path.join(dir, 'env.yaml'), 'https://env.example:6443', 't')
    const sa = path.join(dir, 'root', 'var/run/secrets/kubernetes.io/serviceaccount')
    await mkdir(sa, {recursive: true})
    await writeFile(path.join(sa, 'token'), 'sa-token')
    await writeFile(path.join(sa, 'ca.crt'), '')
    await writeFile(path.join(sa, 'namespace'), 'polycrate')
  })
  after(() => rm(dir, {recursive: true, force: true}))

  const inPod = {KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443'}
  const cases: Array<{name: string; flag?: boolean; env: NodeJS.ProcessEnv; pod?: boolean; server: RegExp; source: RegExp}> = [
    {name: '--kubeconfig wins over everything', flag: true, env: {KUBECONFIG: 'ENV', ...inPod}, pod: true, server: /flag\.example/, source: /flag\.yaml$/},
    {name: 'in a pod without a flag: the service account', env: {KUBECONFIG: 'ENV', ...inPod}, pod: true, server: /^https:\/\/10\.0\.0\.1:443$/, source: /in-cluster/},
    {name: 'then $KUBECONFIG', env: {KUBECONFIG: 'ENV'}, server: /env\.example/, source: /\$KUBECONFIG/},
    {name: 'a $KUBECONFIG list skips missing files', env: {KUBECONFIG: `/nope.yaml${path.delimiter}ENV`}, server: /env\.example/, source: /\$KUBECONFIG/},
    {name: 'then ~/.kube/config', env: {}, server: /home\.example/, source: /\.kube\/config$/},
  ]
  for (const c of cases) {
    it(c.name, () => {
      const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v?.replace('ENV', path.join(dir, 'env.yaml'))]))
      // client-node reads the service host and port from process.env itself.
      const saved = {host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT}
      Object.assign(process.env, {KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST ?? '', KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT ?? ''})
      let loaded
      try {
        loaded = loadKubeConfig({
          kubeconfig: c.flag ? path.join(dir, 'flag.yaml') : undefined,
          env,
          home: path.join(dir, 'home'),
          rootPrefix: c.pod ? path.join(dir, 'root') : path.join(dir, 'no-root'),
        })
      } finally {
        for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
      }
      assert.match(loaded.server, c.server)
      assert.match(loaded.source, c.source)
    })
  }

  it('says what to do when there is none', () => {
    assert.throws(() => loadKubeConfig({env: {}, home: path.join(dir, 'empty')}), /No kubeconfig found: pass --kubeconfig <file>, set \$KUBECONFIG, or create .*empty\/\.kube\/config\./)
    assert.throws(() => loadKubeConfig({env: {KUBECONFIG: '/nope.yaml'}}), /\$KUBECONFIG names \/nope\.yaml, which do\(es\) not exist/)
  })
})
