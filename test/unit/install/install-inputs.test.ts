import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {
  emptyValuesMessage,
  flagProblems,
  imageReferenceProblem,
  imageTagProblem,
  namespaceProblem,
  registryProblem,
  replicasProblem,
  valuesTextKind,
} from '../../../src/operator/install/inputs.js'
import {loadBlockValues} from '../../../src/operator/install/values-file.js'
import {ValuesError} from '../../../src/operator/install/values.js'

describe('inputs: one rule per kind of input, for flags and values alike', () => {
  const namespaces: Array<[string, boolean]> = [
    ['polycrate', true], ['polycrate-dev', true], ['a', true], ['0ops', true], ['x'.repeat(63), true],
    ['Bad_NS', false], ['Polycrate', false], ['-ops', false], ['ops-', false], ['ops.dev', false], ['', false], ['x'.repeat(64), false], ['ops dev', false],
  ]
  for (const [name, ok] of namespaces) {
    it(`namespace ${JSON.stringify(name.length > 20 ? `${name.slice(0, 8)}…(${name.length})` : name)}: ${ok ? 'accepted' : 'refused'}`, () => {
      assert.equal(namespaceProblem(name) === undefined, ok, namespaceProblem(name))
    })
  }

  const images: Array<[string, true | RegExp]> = [
    ['cargo.ayedo.cloud/library/polycrate:0.57.1', true],
    ['polycrate', true],
    ['library/polycrate', true],
    ['localhost:5000/polycrate:dev', true],
    ['registry.example.com:5000/ops/polycrate-operator:1.0.0-rc.1', true],
    ['[::1]:5000/polycrate:x', true],
    [`ghcr.io/acme/polycrate@sha256:${'a'.repeat(64)}`, true],
    [`ghcr.io/acme/polycrate:1.0@sha256:${'0'.repeat(64)}`, true],
    ['a__b/c-d/e.f:TAG_1', true],
    ['', /must not be empty/],
    ['Not A Registry/library/polycrate:a b', /white space/],
    ['cargo.ayedo.cloud/Library/Polycrate:1', /upper-case/],
    ['cargo.ayedo.cloud/library/polycrate:', /not an image reference/],
    ['cargo.ayedo.cloud/library/polycrate:-x', /not an image reference/],
    ['cargo.ayedo.cloud//polycrate', /not an image reference/],
    ['polycrate@sha256:abc', /not an image reference/],
    [`r.io/${'a'.repeat(260)}`, /longer than 255/],
  ]
  for (const [reference, expected] of images) {
    it(`image ${JSON.stringify(reference.length > 50 ? `${reference.slice(0, 30)}…` : reference)}: ${expected === true ? 'accepted' : 'refused'}`, () => {
      const problem = imageReferenceProblem(reference)
      if (expected === true) assert.equal(problem, undefined)
      else assert.match(problem ?? '', expected)
    })
  }

  it('registries, tags and replicas', () => {
    assert.equal(registryProblem('cargo.ayedo.cloud'), undefined)
    assert.equal(registryProblem('registry.example.com:5000'), undefined)
    assert.match(registryProblem('Not A Registry') ?? '', /not a registry host/)
    assert.match(registryProblem('') ?? '', /must not be empty/)
    assert.equal(imageTagProblem('0.57.1'), undefined)
    assert.match(imageTagProblem('a b') ?? '', /not an image tag/)
    assert.match(imageTagProblem('.x') ?? '', /not an image tag/)
    assert.match(imageTagProblem('x'.repeat(129)) ?? '', /not an image tag/)
    assert.equal(replicasProblem(1), undefined)
    assert.equal(replicasProblem(3), undefined)
    assert.match(replicasProblem(0) ?? '', /at least 1 replica/)
    assert.match(replicasProblem(-1) ?? '', /at least 1 replica/)
    assert.match(replicasProblem(1.5) ?? '', /whole number/)
  })

  it('flagProblems names each flag; flags not given are not checked', () => {
    assert.deepEqual(flagProblems({}), [])
    assert.deepEqual(flagProblems({namespace: 'polycrate', image: 'polycrate:1', replicas: 2}), [])
    const problems = flagProblems({namespace: 'Bad_NS', image: '', replicas: 0, operatorNamespace: 'x_y'})
    assert.equal(problems.length, 4, problems.join('\n'))
    assert.match(problems[0]!, /^--namespace: "Bad_NS" is not a valid namespace name/)
    assert.match(problems[1]!, /^--operator-namespace: "x_y"/)
    assert.match(problems[2]!, /^--image: must not be empty/)
    assert.match(problems[3]!, /^--replicas: 0: at least 1 replica/)
  })
})

describe('inputs: empty values files', () => {
  const texts: Array<[string, string]> = [
    ['', 'empty'], ['\n\n  \n', 'empty'], ['# secrets\n', 'comments-only'], ['# a\n---\n  # b\n...\n', 'comments-only'],
    ['namespace: x\n', 'content'], ['# head\nconfig: {}\n', 'content'], ['{}', 'content'],
  ]
  for (const [text, kind] of texts) {
    it(`${JSON.stringify(text)} is ${kind}`, () => assert.equal(valuesTextKind(text), kind))
  }

  it('the message names the file, the likely cause and --allow-empty', () => {
    assert.match(emptyValuesMessage('secrets.poly', 'empty'), /^values file secrets\.poly is empty — did secrets\.poly fail to decrypt\?.*--allow-empty/)
    assert.match(emptyValuesMessage('/w/values.yaml', 'comments-only'), /^values file \/w\/values\.yaml holds only comments .*--allow-empty/)
  })

  it('loadBlockValues refuses an empty or comment-only file unless allowEmpty; later files still count', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'inputs-'))
    try {
      const empty = path.join(dir, 'secrets.poly')
      const workspace = path.join(dir, 'workspace.poly')
      writeFileSync(empty, '# encrypted with polycrate secrets encrypt\n')
      writeFileSync(workspace, 'namespace: ops\n')
      assert.throws(() => loadBlockValues([workspace, empty]), (error: unknown) => error instanceof ValuesError && /secrets\.poly holds only comments — did secrets\.poly fail to decrypt/.test(error.message))
      assert.equal(loadBlockValues([workspace, empty], {allowEmpty: true}).namespace, 'ops')
      assert.equal(loadBlockValues([empty], {allowEmpty: true}).namespace, 'polycrate')
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
