import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import {freePort} from '../support/control-plane.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

describe('polycrate operator install / uninstall (without a cluster)', () => {
  let dir: string
  let forbidden: http.Server
  let forbiddenUrl: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'install-'))
    // An apiserver that refuses everything, as it does for an identity without rights.
    forbidden = http.createServer((_request, response) => {
      response.writeHead(403, {'Content-Type': 'application/json'}).end(JSON.stringify({kind: 'Status', status: 'Failure', reason: 'Forbidden', message: 'customresourcedefinitions is forbidden: User "dev" cannot get resource', code: 403}))
    })
    await new Promise<void>((resolve) => forbidden.listen(0, '127.0.0.1', resolve))
    forbiddenUrl = `http://127.0.0.1:${(forbidden.address() as AddressInfo).port}`
  })
  after(async () => {
    await rm(dir, {recursive: true, force: true})
    await new Promise((resolve) => forbidden.close(resolve))
  })

  for (const command of ['install', 'uninstall']) {
    // uninstall asks first on a terminal and refuses without one: --yes, to reach the cluster.
    const yes = command === 'uninstall' ? ['--yes'] : []
    it(`${command}: invalid values exit 2 with every problem, before any cluster is contacted`, async () => {
      const values = path.join(dir, `${command}-bad.yaml`)
      await writeFile(values, 'namespace: ops\ndeployment:\n  replica: 2\noperator_config:\n  agent: {enabled: "yes"}\n')
      const {error} = await runCommand(['operator', command, '--values', values, '--kubeconfig', path.join(dir, 'never-read.yaml')])
      assert.equal(error?.oclif?.exit, 2)
      assert.match(error!.message, /config\.deployment\.replica: unknown setting \(did you mean "replicas"\?\)/)
      assert.match(error!.message, /config\.operator_config\.agent\.enabled: expected a boolean, got the string "yes"/)
    })

    it(`${command}: a missing kubeconfig says so, exit 1`, async () => {
      const {error} = await runCommand(['operator', command, '--kubeconfig', path.join(dir, 'nope.yaml'), ...yes])
      assert.equal(error?.oclif?.exit, 1)
      assert.match(error!.message, /nope\.yaml does not exist: check the --kubeconfig path/)
    })

    it(`${command}: an unreachable server says which, exit 1`, async () => {
      const port = await freePort()
      const file = await writeKubeconfig(path.join(dir, `${command}-down.yaml`), `https://127.0.0.1:${port}`, 't')
      const {error} = await runCommand(['operator', command, '--kubeconfig', file, ...yes])
      assert.equal(error?.oclif?.exit, 1)
      assert.match(error!.message, new RegExp(`Cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`))
    })

    it(`${command}: 403 says to use an identity with cluster-admin rights, exit 1`, async () => {
      const file = await writeKubeconfig(path.join(dir, `${command}-403.yaml`), forbiddenUrl, 't')
      const {error} = await runCommand(['operator', command, '--kubeconfig', file, ...yes])
      assert.equal(error?.oclif?.exit, 1)
      assert.match(error!.message, new RegExp(`Forbidden \\(403\\): your identity may not ${command} the operator .*cluster-admin`))
    })
  }
})
