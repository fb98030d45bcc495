import assert from 'node:assert/strict'
import type {KubeClient, KubeObject, ResourceRef} from '../../../src/kube/client.js'
import {NAMESPACE_INDEX} from '../../../src/operator/runtime/cache.js'
import type {InformerRequest} from '../../../src/operator/runtime/informer.js'
import {informerKey, Manager} from '../../../src/operator/runtime/manager.js'
import {OperatorMetrics} from '../../../src/operator/runtime/metrics.js'

// ---------------------------------------------------------------------------------------------------------------
// informerKey

const ingresses: ResourceRef = {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses'}
const secrets: ResourceRef = {group: '', version: 'v1', plural: 'secrets'}

/** Two functions with identical source text that are still two functions. */
function makeTransform() {
  return (object: KubeObject): KubeObject => ({...object, metadata: {...object.metadata, annotations: undefined}})
}
const transformA = makeTransform()
const transformB = makeTransform()

describe('informerKey', () => {
  it('the two transforms of this table really do have the same source text', () => {
    assert.notEqual(transformA, transformB)
    assert.equal(transformA.toString(), transformB.toString())
  })

  const base: InformerRequest<KubeObject> = {resource: ingresses, labelSelector: 'app=web', fieldSelector: 'metadata.name=x', metadataOnly: false, transform: transformA}

  const same: Array<[string, InformerRequest<KubeObject>]> = [
    ['an identical request', {...base}],
    ['a copy of the resource object', {...base, resource: {...ingresses}}],
    ['the same transform function', {...base, transform: transformA}],
  ]
  for (const [what, other] of same) {
    it(`same key: ${what}`, () => assert.equal(informerKey(other), informerKey(base)))
  }

  const different: Array<[string, InformerRequest<KubeObject>]> = [
    ['another transform function with identical source text', {...base, transform: transformB}],
    ['no transform', {...base, transform: undefined}],
    ['another resource', {...base, resource: secrets}],
    ['the same resource in one namespace', {...base, resource: {...ingresses, namespace: 'ns'}}],
    ['another label selector', {...base, labelSelector: 'app=shop'}],
    ['no label selector', {...base, labelSelector: undefined}],
    ['another field selector', {...base, fieldSelector: 'metadata.name=y'}],
    ['no field selector', {...base, fieldSelector: undefined}],
    ['metadata only', {...base, metadataOnly: true}],
  ]
  for (const [what, other] of different) {
    it(`different key: ${what}`, () => assert.notEqual(informerKey(other), informerKey(base)))
  }

  it('no transform is the same as no transform; transform vs none differ in both directions', () => {
    const plain = {resource: ingresses}
    assert.equal(informerKey(plain), informerKey({resource: {...ingresses}}))
    assert.notEqual(informerKey(plain), informerKey({...plain, transform: transformA}))
    assert.notEqual(informerKey({...plain, transform: transformB}), informerKey(plain))
  })

  it('an unset selector or metadataOnly is the same as its default', () => {
    assert.equal(informerKey({resource: ingresses}), informerKey({resource: ingresses, labelSelector: '', fieldSelector: '', metadataOnly: false}))
  })

  it('the key of a transform stays the same however often it is asked, and every new function gets a new key', () => {
    const keys = new Set<string>()
    for (let i = 0; i < 20; i++) keys.add(informerKey({resource: ingresses, transform: transformA}))
    assert.equal(keys.size, 1)
    for (let i = 0; i < 20; i++) keys.add(informerKey({resource: ingresses, transform: makeTransform()}))
    assert.equal(keys.size, 21)
  })

  it('a label selector cannot be confused with a field selector', () => {
    assert.notEqual(informerKey({resource: ingresses, labelSelector: 'a=b'}), informerKey({resource: ingresses, fieldSelector: 'a=b'}))
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The builder on a manager that never runs: informers are created but not started, so no client call is made.

function manager() {
  const client = {
    request: async () => {
      throw new Error('no API calls in this test')
    },
    stream: async () => {
      throw new Error('no API calls in this test')
    },
  } as unknown as KubeClient
  return new Manager({client, namespace: 'polycrate', leaderElection: false, metrics: new OperatorMetrics({processMetrics: false})})
}

describe('ControllerBuilder', () => {
  it('two controllers asking for the same informer share it; another transform or selector gets its own', async () => {
    const m = manager()
    const first = m.controller('first')
    const second = m.controller('second')
    const a = first.for({resource: ingresses})
    const b = second.watches({resource: {...ingresses}}, () => [])
    const c = second.reads({resource: ingresses, transform: transformA})
    const d = second.reads({resource: ingresses, labelSelector: 'x=y'})
    assert.equal(a, b)
    assert.notEqual(a, c)
    assert.notEqual(a, d)
    assert.notEqual(c, d)
    first.complete(async () => {})
    second.complete(async () => {})
  })

  it('the controller watches what for/watches asked and also waits for what reads asked', () => {
    const m = manager()
    const builder = m.controller('x')
    const primary = builder.for({resource: ingresses})
    const related = builder.watches({resource: secrets, metadataOnly: true})
    const read = builder.reads({resource: secrets})
    const running = builder.complete(async () => {})
    assert.deepEqual(running.controller.informers, [primary, related, read])
    assert.equal(running.controller.hasSynced(), false, 'nothing has synced on a manager that does not run')
  })

  it('indexes are added to the shared cache once; the first function wins', () => {
    const m = manager()
    const calls: string[] = []
    const first = m.controller('first').for({resource: ingresses}, {indexes: {host: (o) => (calls.push('first'), [o.metadata?.name ?? ''])}})
    const second = m.controller('second').for({resource: ingresses}, {indexes: {host: () => (calls.push('second'), ['other'])}})
    assert.equal(first, second)
    first.cache.upsert({metadata: {name: 'web', namespace: 'ns', resourceVersion: '1'}})
    assert.deepEqual(calls, ['first'])
    assert.deepEqual(first.cache.byIndex('host', 'web').map((o) => o.metadata?.name), ['web'])
    assert.deepEqual(first.cache.byIndex(NAMESPACE_INDEX, 'ns').length, 1)
  })

  it('complete twice, or asking for an informer after complete, throws', () => {
    const m = manager()
    const builder = m.controller('once')
    builder.for({resource: ingresses})
    builder.complete(async () => {})
    assert.throws(() => builder.complete(async () => {}), /once.*built already/)
    assert.throws(() => builder.watches({resource: secrets}), /built already/)
    assert.throws(() => builder.reads({resource: secrets}), /built already/)
  })

  it('stop releases the informers: a shared one lives on until its last user stops; stop is idempotent', async () => {
    const m = manager()
    const one = m.controller('one')
    const shared = one.for({resource: ingresses})
    const own = one.reads({resource: secrets})
    const runningOne = one.complete(async () => {})
    const two = m.controller('two')
    assert.equal(two.for({resource: ingresses}), shared)
    const runningTwo = two.complete(async () => {})

    const stopping = runningOne.stop()
    assert.equal(runningOne.stop(), stopping, 'the same promise')
    await stopping
    await runningOne.stop()

    // `secrets` had one user: gone, a new request gets a new informer. `ingresses` still has a user.
    const probe = m.controller('probe')
    assert.notEqual(probe.reads({resource: secrets}), own)
    assert.equal(probe.reads({resource: ingresses}), shared)
    probe.complete(async () => {})

    await runningTwo.stop()
    const after = m.controller('after')
    assert.equal(after.for({resource: ingresses}), shared, 'the probe still holds it')
    after.complete(async () => {})
  })

  it('an informer used twice by one controller is released twice, once per use', async () => {
    const m = manager()
    const builder = m.controller('twice')
    const a = builder.for({resource: ingresses})
    assert.equal(builder.reads({resource: ingresses}), a)
    const running = builder.complete(async () => {})
    const other = m.controller('other')
    assert.equal(other.reads({resource: ingresses}), a)
    other.complete(async () => {})
    await running.stop()
    const probe = m.controller('probe')
    assert.equal(probe.reads({resource: ingresses}), a, 'the other controller still holds it')
    probe.complete(async () => {})
  })

  it('the running controller has the manager\'s recorder for its name, and enqueue reaches its queue', () => {
    const m = manager()
    const builder = m.controller('named')
    builder.for({resource: ingresses})
    const running = builder.complete(async () => {})
    assert.equal(running.recorder, m.recorder('named'))
    running.enqueue('ns/a')
    assert.equal(running.controller.queue.length, 1)
  })
})
