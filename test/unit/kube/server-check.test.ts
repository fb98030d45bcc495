import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {KubeApiError, type KubeClient} from '../../../src/kube/client.js'
import {loadKubeConfig} from '../../../src/kube/kubeconfig.js'
import {KubeConfigError, loadLightKubeConfig} from '../../../src/kube/light-kubeconfig.js'
import {assertKubernetes, NotKubernetesError, versionAnswerProblem} from '../../../src/kube/server-check.js'

const answering = (answer: () => unknown) => ({request: async () => answer()}) as unknown as Pick<KubeClient, 'request'>

describe('is the server Kubernetes? (/version)', () => {
  const answers: Array<[string, unknown, string | undefined]> = [
    ['a Kubernetes answer', {major: '1', minor: '35', gitVersion: 'v1.35.4', platform: 'linux/amd64'}, undefined],
    ['nothing', undefined, 'it answered nothing'],
    ['a list', [], 'it answered a list'],
    ['a string', 'hello', 'it answered string'],
    ['another JSON document', {status: 'ok'}, 'its answer has no major, minor, gitVersion'],
    ['almost', {major: '1', minor: '35'}, 'its answer has no gitVersion'],
  ]
  for (const [name, body, problem] of answers) {
    it(`${name}: ${problem ?? 'Kubernetes'}`, () => assert.equal(versionAnswerProblem(body), problem))
  }

  it('a 404, a page that is not JSON: NotKubernetesError naming the server; 401/403 are Kubernetes\' own answers', async () => {
    await assert.rejects(assertKubernetes(answering(() => {
      throw new KubeApiError(404, '', '<html>not found</html>')
    }), 'https://web.example'), (error: unknown) => error instanceof NotKubernetesError && /^The server at https:\/\/web\.example does not answer \/version like a Kubernetes API server \(it answered HTTP 404\)/.test(error.message))
    await assert.rejects(assertKubernetes(answering(() => {
      throw new SyntaxError('Unexpected token <')
    }), 'https://web.example'), (error: unknown) => error instanceof NotKubernetesError && /its answer is not JSON/.test(error.message))
    await assert.rejects(assertKubernetes(answering(() => {
      throw new KubeApiError(401, 'Unauthorized', 'Unauthorized')
    }), 'https://k8s.example'), (error: unknown) => error instanceof KubeApiError)
    assert.equal((await assertKubernetes(answering(() => ({major: '1', minor: '35', gitVersion: 'v1.35.4'})), 'https://k8s')).gitVersion, 'v1.35.4')
  })
})

describe('an empty kubeconfig says it is empty', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'empty-kubeconfig-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  for (const [name, text] of [['empty', ''], ['only comments', '# nothing here\n'], ['a bare document marker', '---\n']] as const) {
    it(`${name}: both readers say so`, () => {
      const file = path.join(dir, `${name.replaceAll(' ', '-')}.yaml`)
      writeFileSync(file, text)
      const check = (error: unknown) => error instanceof KubeConfigError && error.message.startsWith(`The kubeconfig ${file} is empty (no clusters, users or contexts)`)
      assert.throws(() => loadLightKubeConfig({kubeconfig: file}), check)
      assert.throws(() => loadKubeConfig({kubeconfig: file}), check)
    })
  }
})
