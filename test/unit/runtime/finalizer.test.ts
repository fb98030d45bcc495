import assert from 'node:assert/strict'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {Finalizer, finalizerStep, type FinalizerStep} from '../../../src/operator/runtime/finalizer.js'
import {ownerKeys} from '../../../src/operator/runtime/builder.js'

const NAME = 'example.polycrate.io/cleanup'
const object = (metadata: Record<string, unknown>): KubeObject => ({metadata: {name: 'a', namespace: 'ns', resourceVersion: '7', ...metadata}})

/** A client that records merge patches and answers the CRD lookup. */
function fakeClient(crd: KubeObject | undefined) {
  const patches: Array<{ref: ResourceRef; patch: unknown}> = []
  const client = {
    mergePatch: async (ref: ResourceRef, patch: unknown) => {
      patches.push({ref, patch})
      return {}
    },
    getOrUndefined: async () => crd,
  } as unknown as KubeClient
  return {client, patches}
}

describe('finalizer (kube-rs finalizer(): Apply / Cleanup)', () => {
  const steps: Array<[string, Record<string, unknown>, FinalizerStep]> = [
    ['live, no finalizer', {}, 'apply'],
    ['live, ours on', {finalizers: [NAME]}, 'apply'],
    ['deleted, ours on', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['other', NAME]}, 'cleanup'],
    ['deleted, only someone else\'s', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['other']}, 'ignore'],
    ['deleted, none', {deletionTimestamp: '2026-01-01T00:00:00Z'}, 'ignore'],
    ['finalizers not a list (malformed)', {deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: 'x'}, 'ignore'],
  ]
  for (const [name, metadata, step] of steps) it(`${name} → ${step}`, () => assert.equal(finalizerStep(object(metadata), NAME), step))

  const make = (crd: KubeObject | 'gone' = {metadata: {name: 'things.polycrate.io'}}) => {
    const {client, patches} = fakeClient(crd === 'gone' ? undefined : crd)
    const finalizer = new Finalizer<KubeObject>({client, name: NAME, resource: {group: 'polycrate.io', version: 'v1alpha1', plural: 'things'}, crd: 'things.polycrate.io'})
    return {finalizer, patches}
  }
  const signal = new AbortController().signal

  it('add: appends ours with the resourceVersion (optimistic lock); nothing when it is on', async () => {
    const {finalizer, patches} = make()
    await finalizer.add(object({finalizers: ['other']}), signal)
    assert.deepEqual(patches.map((p) => p.patch), [{metadata: {finalizers: ['other', NAME], resourceVersion: '7'}}])
    await finalizer.add(object({finalizers: [NAME]}), signal)
    assert.equal(patches.length, 1)
  })

  it('release: removes only ours; nothing when it is off', async () => {
    const {finalizer, patches} = make()
    await finalizer.release(object({finalizers: ['other', NAME]}), signal)
    assert.deepEqual(patches.map((p) => p.patch), [{metadata: {finalizers: ['other'], resourceVersion: '7'}}])
    await finalizer.release(object({finalizers: ['other']}), signal)
    assert.equal(patches.length, 1)
  })

  it('finalize: a live object → false, nothing written', async () => {
    const {finalizer, patches} = make()
    let cleaned = false
    assert.equal(await finalizer.finalize(object({finalizers: [NAME]}), signal, {cleanup: async () => { cleaned = true }}), false)
    assert.equal(cleaned, false)
    assert.equal(patches.length, 0)
  })

  it('finalize: deleted by a user → cleanup, then release', async () => {
    const {finalizer, patches} = make()
    const order: string[] = []
    const deleted = object({deletionTimestamp: 'x', finalizers: [NAME]})
    assert.equal(await finalizer.finalize(deleted, signal, {cleanup: async () => { order.push('cleanup') }, kept: () => order.push('kept')}), true)
    assert.deepEqual(order, ['cleanup'])
    assert.deepEqual(patches.map((p) => p.patch), [{metadata: {finalizers: [], resourceVersion: '7'}}])
  })

  it('finalize: a failing cleanup keeps the finalizer (the error retries the reconcile)', async () => {
    const {finalizer, patches} = make()
    await assert.rejects(finalizer.finalize(object({deletionTimestamp: 'x', finalizers: [NAME]}), signal, {cleanup: async () => { throw new Error('API down') }}), /API down/)
    assert.equal(patches.length, 0)
  })

  for (const [why, crd] of [['CRD gone', 'gone'], ['CRD being deleted', {metadata: {name: 'things.polycrate.io', deletionTimestamp: 'x'}}]] as Array<[string, KubeObject | 'gone']>) {
    it(`finalize: ${why} → no cleanup (the external state is kept), kept is told, finalizer released`, async () => {
      const {finalizer, patches} = make(crd)
      const order: string[] = []
      assert.equal(await finalizer.finalize(object({deletionTimestamp: 'x', finalizers: [NAME]}), signal, {cleanup: async () => { order.push('cleanup') }, kept: () => order.push('kept')}), true)
      assert.deepEqual(order, ['kept'])
      assert.equal(patches.length, 1)
    })
  }

  it('finalize: deleted without ours → true, nothing run or written', async () => {
    const {finalizer, patches} = make()
    let cleaned = false
    assert.equal(await finalizer.finalize(object({deletionTimestamp: 'x', finalizers: ['other']}), signal, {cleanup: async () => { cleaned = true }}), true)
    assert.equal(cleaned, false)
    assert.equal(patches.length, 0)
  })
})

describe('ownerKeys (builder.owns: owned object → its owner\'s key)', () => {
  const owner = {kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1'}
  const cases: Array<[string, KubeObject, string[]]> = [
    ['no ownerReferences', {metadata: {name: 's', namespace: 'ns'}}, []],
    ['one owner of the kind', {metadata: {name: 's', namespace: 'ns', ownerReferences: [{kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1', name: 'b'}]}}, ['ns/b']],
    ['another kind', {metadata: {name: 's', namespace: 'ns', ownerReferences: [{kind: 'Deployment', apiVersion: 'apps/v1', name: 'd'}]}}, []],
    ['same kind, another group', {metadata: {name: 's', namespace: 'ns', ownerReferences: [{kind: 'S3Bucket', apiVersion: 'other.io/v1', name: 'b'}]}}, []],
    ['a reference without a name', {metadata: {name: 's', namespace: 'ns', ownerReferences: [{kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1'}]}}, []],
    ['two owners', {metadata: {name: 's', namespace: 'ns', ownerReferences: [{kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1', name: 'a'}, {kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1', name: 'b'}]}}, ['ns/a', 'ns/b']],
    ['cluster-scoped', {metadata: {name: 's', ownerReferences: [{kind: 'S3Bucket', apiVersion: 'polycrate.io/v1alpha1', name: 'b'}]}}, ['b']],
  ]
  for (const [name, object, keys] of cases) it(`${name} → ${JSON.stringify(keys)}`, () => assert.deepEqual(ownerKeys(object, owner), keys))
})
