import assert from 'node:assert/strict'
import {crdCatalog, findKindNames} from '../../../src/crds/catalog.js'
import {allCrds, findCrd} from '../../../src/crds/index.js'
import {toCustomResourceDefinition, type JSONSchemaProps} from '../../../src/crds/generate.js'
import {schemaAt, structuralViolations} from './structural.js'

const expectedKinds: Array<[kind: string, plural: string, shortNames: string[], scope: string]> = [
  ['OperatorConfig', 'operatorconfigs', ['oc', 'opcfg'], 'Namespaced'],
  ['K8sCluster', 'k8sclusters', ['k8sc'], 'Namespaced'],
  ['Endpoint', 'endpoints', ['ep', 'pep'], 'Namespaced'],
  ['Host', 'hosts', [], 'Namespaced'],
  ['K8sApp', 'k8sapps', ['app', 'pca'], 'Namespaced'],
  ['K8sVolume', 'k8svolumes', ['vol', 'pvol'], 'Namespaced'],
  ['Backup', 'backups', ['backup'], 'Namespaced'],
  ['BackupSchedule', 'backupschedules', ['bs'], 'Namespaced'],
  ['Certificate', 'certificates', ['cert', 'pcert'], 'Namespaced'],
  ['S3Bucket', 's3buckets', ['s3'], 'Namespaced'],
  ['Artifact', 'artifacts', [], 'Cluster'],
  ['Organization', 'organizations', [], 'Namespaced'],
]

describe('polycrate.io CRDs', () => {
  it('are the twelve kinds with the seeds\' names, short names and scopes', () => {
    assert.deepEqual(
      allCrds.map((d) => [d.kind, d.plural, d.shortNames, d.scope]),
      expectedKinds,
    )
  })

  for (const def of allCrds) {
    describe(def.kind, () => {
      const crd = toCustomResourceDefinition(def)
      const version = crd.spec.versions[0]!
      const root = version.schema.openAPIV3Schema

      it('has a structural schema (every node checked)', () => {
        assert.deepEqual(structuralViolations(root), [])
      })

      it('is named <plural>.polycrate.io, v1alpha1, with the status subresource', () => {
        assert.equal(crd.metadata.name, `${def.plural}.polycrate.io`)
        assert.equal(version.name, 'v1alpha1')
        assert.equal(version.served && version.storage, true)
        assert.deepEqual(version.subresources, {status: {}})
        assert.equal(crd.spec.names.singular, def.kind.toLowerCase())
      })

      it('has printer columns that point at typed schema fields', () => {
        for (const column of version.additionalPrinterColumns) {
          const jsonPath = column.jsonPath as string
          if (jsonPath === '.metadata.creationTimestamp') continue
          const node = schemaAt(root, jsonPath)
          assert.ok(node, `${jsonPath} is not in the schema`)
          const expected = column.type === 'date' ? 'string' : column.type
          assert.equal(node.type, expected, `${jsonPath}: column type ${column.type}, schema type ${node.type}`)
        }
        assert.equal(version.additionalPrinterColumns.at(-1)?.name, 'Age')
      })

      it('describes its fields for kubectl explain', () => {
        const undocumented: string[] = []
        const walk = (node: JSONSchemaProps, at: string) => {
          for (const [key, child] of Object.entries(node.properties ?? {})) {
            if (!child.description && child.type !== 'object') undocumented.push(`${at}.${key}`)
            walk(child, `${at}.${key}`)
          }
        }
        walk(root.properties!.spec!, 'spec')
        // Most spec fields carry a description; a few self-explanatory ones may not.
        const total = JSON.stringify(root.properties!.spec).match(/"type"/g)?.length ?? 0
        assert.ok(undocumented.length <= total / 2, `too many undocumented spec fields: ${undocumented.join(', ')}`)
      })
    })
  }

  it('short names and plurals are unique across kinds', () => {
    const names = allCrds.flatMap((d) => [d.plural, ...d.shortNames.filter((s) => s !== d.singular)])
    assert.equal(new Set(names).size, names.length)
  })

  describe('findCrd', () => {
    for (const [kind, plural, shortNames] of expectedKinds) {
      for (const name of [kind, kind.toUpperCase(), kind.toLowerCase(), plural, ...shortNames, ...shortNames.map((s) => s.toUpperCase())]) {
        it(`${name} → ${kind}`, () => assert.equal(findCrd(name)?.kind, kind))
      }
    }
    it('unknown names find nothing', () => {
      assert.equal(findCrd('Pod'), undefined)
      assert.equal(findCrd(''), undefined)
    })
  })
})

describe('the CRD catalog (names without schemas, for crds --list)', () => {
  it('equals allCrds: same kinds in the same order, same names and scope', () => {
    assert.deepEqual(
      crdCatalog.map((c) => ({kind: c.kind, plural: c.plural, singular: c.singular, shortNames: [...c.shortNames], scope: c.scope})),
      allCrds.map((d) => ({kind: d.kind, plural: d.plural, singular: d.singular, shortNames: [...d.shortNames], scope: d.scope})),
    )
    for (const name of ['ep', 'OPCFG', 'backupschedule', 'nope']) assert.equal(findKindNames(name)?.kind, findCrd(name)?.kind)
  })
})
