import assert from 'node:assert/strict'
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {loadKubeConfig} from '../../../src/kube/kubeconfig.js'
import {inClusterServiceAccount, loadLightKubeConfig} from '../../../src/kube/light-kubeconfig.js'
import {writeKubeconfig} from '../../support/kubeconfig-file.js'

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

  // client-go's order (controller-runtime's GetConfig): --kubeconfig, $KUBECONFIG, the in-cluster service account,
  // ~/.kube/config. The fake in-cluster mount is `root/` (rootPrefix); every case has a ~/.kube/config.
  const inPod = {KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443'}
  const cases: Array<{name: string; flag?: boolean; env: NodeJS.ProcessEnv; pod?: boolean; server: RegExp; source: RegExp}> = [
    {name: '--kubeconfig wins over everything', flag: true, env: {KUBECONFIG: 'ENV', ...inPod}, pod: true, server: /flag\.example/, source: /flag\.yaml$/},
    {name: '$KUBECONFIG wins over the in-cluster service account (a CI job or toolbox Pod acting on another cluster)', env: {KUBECONFIG: 'ENV', ...inPod}, pod: true, server: /env\.example/, source: /\$KUBECONFIG/},
    {name: 'in a Pod without $KUBECONFIG: the service account, before ~/.kube/config', env: inPod, pod: true, server: /^https:\/\/10\.0\.0\.1:443$/, source: /in-cluster/},
    {name: 'the service host without the mounted token is no Pod: ~/.kube/config', env: inPod, server: /home\.example/, source: /\.kube\/config$/},
    {name: 'the mounted token without the service host is no Pod: ~/.kube/config', env: {}, pod: true, server: /home\.example/, source: /\.kube\/config$/},
    {name: 'out of a Pod: $KUBECONFIG', env: {KUBECONFIG: 'ENV'}, server: /env\.example/, source: /\$KUBECONFIG/},
    {name: 'a $KUBECONFIG list skips missing files', env: {KUBECONFIG: `/nope.yaml${path.delimiter}ENV`}, server: /env\.example/, source: /\$KUBECONFIG/},
    {name: 'then ~/.kube/config', env: {}, server: /home\.example/, source: /\.kube\/config$/},
  ]
  for (const c of cases) {
    it(`${c.name} (both readers)`, () => {
      const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v?.replace('ENV', path.join(dir, 'env.yaml'))]))
      const options = {
        kubeconfig: c.flag ? path.join(dir, 'flag.yaml') : undefined,
        env,
        home: path.join(dir, 'home'),
        rootPrefix: c.pod ? path.join(dir, 'root') : path.join(dir, 'no-root'),
      }
      // client-node reads the service host and port from process.env itself.
      const saved = {host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT}
      Object.assign(process.env, {KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST ?? '', KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT ?? ''})
      let loaded
      try {
        loaded = loadKubeConfig(options)
      } finally {
        for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
      }
      assert.match(loaded.server, c.server)
      assert.match(loaded.source, c.source)
      const light = loadLightKubeConfig(options)
      assert.ok(!('unsupported' in light), 'unsupported' in light ? light.unsupported : '')
      assert.deepEqual({server: light.server, source: light.source}, {server: loaded.server, source: loaded.source})
      assert.equal(inClusterServiceAccount(options), c.pod === true && env.KUBERNETES_SERVICE_HOST !== undefined)
    })
  }

  it('says what to do when there is none', () => {
    assert.throws(() => loadKubeConfig({env: {}, home: path.join(dir, 'empty')}), /No kubeconfig found: pass --kubeconfig <file>, set \$KUBECONFIG, or create .*empty\/\.kube\/config\./)
    assert.throws(() => loadKubeConfig({env: {KUBECONFIG: '/nope.yaml'}}), /\$KUBECONFIG names \/nope\.yaml, which do\(es\) not exist/)
  })
})
