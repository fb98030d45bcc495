import assert from 'node:assert/strict'
import {InventoryKeys} from '../../../src/operator/sync/inventory-keys.js'

describe('InventoryKeys (adopt-or-create lookups answered from one inventory listing)', () => {
  it('answers nothing as absent before a listing completed, nor while the first one runs', () => {
    const keys = new InventoryKeys()
    assert.equal(keys.absent('web'), false)
    keys.begin()
    assert.equal(keys.absent('web'), false)
    assert.equal(keys.loaded, false)
  })

  it('after a listing: listed keys are present, others absent', () => {
    const keys = new InventoryKeys()
    keys.complete(keys.begin(), ['web', 'api'])
    assert.equal(keys.loaded, true)
    assert.deepEqual(['web', 'api', 'shop'].map((key) => keys.absent(key)), [false, false, true])
  })

  it('a key added (a create about to be sent) is never absent again, also across later listings that miss it', () => {
    const cases: Array<{name: string; run(keys: InventoryKeys): void}> = [
      {name: 'added after the listing', run: (keys) => {
        keys.complete(keys.begin(), [])
        keys.add('web')
      }},
      {name: 'added while the listing ran (its create raced the pages)', run: (keys) => {
        const token = keys.begin()
        keys.add('web')
        keys.complete(token, [])
      }},
      {name: 'added while two listings ran, the older completing last', run: (keys) => {
        const older = keys.begin()
        keys.add('web')
        const newer = keys.begin()
        keys.complete(newer, [])
        keys.complete(older, []) // superseded: ignored
      }},
      {name: 'added before a listing began, which then ran after the create', run: (keys) => {
        keys.complete(keys.begin(), [])
        keys.add('web')
        keys.complete(keys.begin(), ['web'])
      }},
    ]
    for (const {name, run} of cases) {
      const keys = new InventoryKeys()
      run(keys)
      assert.equal(keys.absent('web'), false, name)
      assert.equal(keys.absent('other'), true, name)
    }
  })

  it('a newer listing replaces the keys: an object deleted since is absent again', () => {
    const keys = new InventoryKeys()
    keys.complete(keys.begin(), ['web', 'api'])
    keys.complete(keys.begin(), ['api'])
    assert.equal(keys.absent('web'), true)
    assert.equal(keys.absent('api'), false)
  })

  it('a listing that never completes (API brown-out) changes nothing; an older one completing after a newer one is ignored', () => {
    const keys = new InventoryKeys()
    keys.begin() // failed: never completed
    assert.equal(keys.loaded, false)
    const older = keys.begin()
    const newer = keys.begin()
    keys.complete(newer, ['api'])
    keys.complete(older, ['web'])
    assert.equal(keys.absent('api'), false)
    assert.equal(keys.absent('web'), true)
  })
})
