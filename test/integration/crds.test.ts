import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import {execa} from 'execa'
import yaml from 'js-yaml'
import {allCrds} from '../../src/crds/index.js'
import {customResourceDefinitions} from '../../src/crds/render.js'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {applyCrd, CrdRejectedError, waitEstablished} from '../../src/kube/crd-install.js'
import {adminClient, controlPlane, freshNamespace} from '../support/cluster.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'
import {UPSTREAM_CRD_DIR, upstreamCrd} from '../support/upstream-crds.js'
import {eventually} from '../support/helpers.js'

const root = path.resolve(import.meta.dirname, '../..')
const crdRef = (name: string) => ({group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name})

interface CrdStatus extends KubeObject {
  status?: {conditions?: Array<{type: string; status: string}>}
}

/** Paths present in `expected` that are missing or different in `actual` (what the server pruned or changed). */
function prunedPaths(expected: unknown, actual: unknown, at = ''): string[] {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object') return [at || '.']
    return Object.entries(expected).flatMap(([key, value]) => prunedPaths(value, (actual as Record<string, unknown>)[key], `${at}.${key}`))
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return [at]
    return expected.flatMap((value, index) => prunedPaths(value, actual[index], `${at}[${index}]`))
  }
  return expected === actual ? [] : [`${at} (${JSON.stringify(expected)} → ${JSON.stringify(actual)})`]
}

describe('CRDs on a real kube-apiserver', () => {
  let client: KubeClient
  let kubeconfig: string
  before(() => {
    client = adminClient()
    kubeconfig = controlPlane().kubeconfigPath
  })
  after(() => client.close())

  it('install-crds installs all twelve CRDs and waits until each is Established', async () => {
    const {stdout, error} = await runCommand(['operator', 'install-crds', '--kubeconfig', kubeconfig])
    assert.equal(error, undefined, error?.message)
    assert.match(stdout, /^Installing 12 CRDs on https:\/\/127\.0\.0\.1:\d+$/m)
    // Other test files of the run may have installed them already (deleting CRDs whose objects carry finalizers of
    // stopped operators would hang), so each is created, or found as it is.
    for (const def of allCrds) assert.match(stdout, new RegExp(`^(created|unchanged|updated)\\s+${def.plural}\\.polycrate\\.io$`, 'm'))
    assert.match(stdout, /12 CRDs Established: \d+ created, \d+ updated, \d+ unchanged\./)
    for (const def of allCrds) {
      const crd = await client.get<CrdStatus>(crdRef(`${def.plural}.polycrate.io`))
      assert.ok(crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'), def.kind)
    }
  })

  it('running it again reports every CRD unchanged', async () => {
    const {stdout, error} = await runCommand(['operator', 'install-crds', '--kubeconfig', kubeconfig, '--json'])
    assert.equal(error, undefined)
    const result = JSON.parse(stdout) as {results: Array<{name: string; outcome: string}>}
    assert.equal(result.results.length, 12)
    assert.deepEqual(new Set(result.results.map((r) => r.outcome)), new Set(['unchanged']))
  })

  it('--dry-run shows what would change and writes nothing', async () => {
    const name = 'organizations.polycrate.io'
    await client.delete(crdRef(name))
    await eventually(async () => !(await client.getOrUndefined(crdRef(name))), 10_000, `CRD ${name} gone`)
    await client.mergePatch(crdRef('endpoints.polycrate.io'), {spec: {names: {shortNames: ['xep']}}})

    const {stdout, error} = await runCommand(['operator', 'install-crds', '--kubeconfig', kubeconfig, '--dry-run'])
    assert.equal(error, undefined, error?.message)
    assert.match(stdout, /^would be created\s+organizations\.polycrate\.io$/m)
    assert.match(stdout, /^would be updated\s+endpoints\.polycrate\.io$/m)
    assert.match(stdout, /^unchanged\s+hosts\.polycrate\.io$/m)
    assert.match(stdout, /Dry run: 1 created, 1 updated, 10 unchanged \(nothing was written\)\./)
    assert.equal(await client.getOrUndefined(crdRef(name)), undefined, 'dry run created a CRD')
    const endpoints = await client.get<KubeObject & {spec: {names: {shortNames?: string[]}}}>(crdRef('endpoints.polycrate.io'))
    assert.deepEqual(endpoints.spec.names.shortNames, ['xep'], 'dry run changed a CRD')

    const again = await runCommand(['operator', 'install-crds', '--kubeconfig', kubeconfig])
    assert.match(again.stdout, /12 CRDs Established: 1 created, 1 updated, 10 unchanged\./)
    const restored = await client.get<KubeObject & {spec: {names: {shortNames?: string[]}}}>(crdRef('endpoints.polycrate.io'))
    assert.deepEqual(restored.spec.names.shortNames, ['ep', 'pep'])
  })

  it('`crds | kubectl apply --server-side -f -` works too', async function () {
    const kubectl = await execa('kubectl', ['version', '--client'], {reject: false})
    if (kubectl.failed) this.skip()
    const crds = execa('node', [path.join(root, 'bin/run.js'), 'operator', 'crds'])
    const applied = await crds.pipe('kubectl', ['apply', '--server-side', '--kubeconfig', kubeconfig, '-f', '-'])
    const lines = applied.stdout.trim().split('\n')
    assert.equal(lines.length, 12)
    for (const line of lines) assert.match(line, /^customresourcedefinition\.apiextensions\.k8s\.io\/\S+\.polycrate\.io serverside-applied$/)
  })

  it('401 and 403 each give one line saying what to do', async () => {
    const bad = await writeKubeconfig(path.join(controlPlane().dir, 'bad-token'), controlPlane().server, 'not-a-token')
    const unauthorized = await runCommand(['operator', 'install-crds', '--kubeconfig', bad])
    assert.equal(unauthorized.error?.oclif?.exit, 1)
    assert.match(unauthorized.error!.message, /rejected the credentials \(401 Unauthorized\): refresh the token/)

    const nobody = await writeKubeconfig(path.join(controlPlane().dir, 'nobody'), controlPlane().server, controlPlane().unprivilegedToken)
    const forbidden = await runCommand(['operator', 'install-crds', '--kubeconfig', nobody])
    assert.equal(forbidden.error?.oclif?.exit, 1)
    assert.match(forbidden.error!.message, /Forbidden \(403\): your identity may not install CustomResourceDefinitions\. Use a kubeconfig with cluster-admin rights/)
  })

  it('a CRD the server rejects is reported with the server\'s reason', async () => {
    const [good] = customResourceDefinitions(allCrds.filter((d) => d.kind === 'Organization'))
    const broken = structuredClone(good!) as unknown as {metadata: {name: string}; spec: {names: {plural: string}}}
    broken.spec.names.plural = 'Not_A_Plural'
    await assert.rejects(applyCrd(client, broken), (error: Error) => {
      assert.ok(error instanceof CrdRejectedError)
      assert.match(error.message, /organizations\.polycrate\.io was rejected: .*(plural|name)/i)
      return true
    })
  })

  describe('every polycrate.io example manifest of the seeds', () => {
    const dir = path.join(root, 'test/fixtures/seed-examples')
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()
    it('there are examples for every kind the seeds show', () => {
      const kinds = new Set(files.flatMap((f) => yaml.loadAll(readFileSync(path.join(dir, f), 'utf8')) as KubeObject[]).map((d) => d.kind))
      for (const kind of ['OperatorConfig', 'K8sCluster', 'Endpoint', 'K8sApp', 'Certificate', 'S3Bucket']) assert.ok(kinds.has(kind), kind)
    })
    for (const file of files) {
      it(`${file} is accepted and reads back with no field pruned`, async () => {
        const namespace = await freshNamespace(client, 'seed')
        for (const doc of yaml.loadAll(readFileSync(path.join(dir, file), 'utf8')) as Array<KubeObject & {status?: unknown}>) {
          const def = allCrds.find((d) => d.kind === doc.kind)!
          const body = structuredClone(doc)
          // The seeds' owners (a meta Secret with a made-up uid) do not exist here; the garbage collector would
          // delete the object, so the owner references are left out.
          delete body.metadata!.ownerReferences
          body.metadata!.namespace = namespace
          const ref = {group: 'polycrate.io', version: 'v1alpha1', plural: def.plural, namespace, name: doc.metadata!.name!}
          await client.create(ref, body)
          if (doc.status) await client.mergePatch({...ref, subresource: 'status'}, {status: doc.status})
          const back = await client.get<KubeObject & {status?: unknown}>(ref)
          const {ownerReferences: _, namespace: __, ...metadata} = doc.metadata!
          assert.deepEqual(prunedPaths({...doc, metadata}, back), [], `${file}: fields pruned or changed`)
        }
      })
    }
  })

  describe('the upstream CRDs of test/fixtures/crds', () => {
    const files = readdirSync(UPSTREAM_CRD_DIR).filter((f) => f.endsWith('.yaml'))
    for (const file of files) {
      it(`${file} installs and becomes Established`, async () => {
        const crd = upstreamCrd(file)
        await applyCrd(client, crd)
        await waitEstablished(client, crd.metadata.name)
      })
    }
  })
})
