import assert from 'node:assert/strict'
import type {RequestLogEntry} from '../../support/api-simulator/index.js'
import {changedFields, deletesOf, duplicateKeys, formatWrites, objectIdOf, updatesPerObject, writesByKind} from '../../support/api-writes.js'

const entry = (method: string, path: string, resource: string, status = 200): RequestLogEntry => ({method, path, resource, status, query: {}, at: 0})

describe('API write accounting (upgrade test, soak bench)', () => {
  it('objectIdOf: the segment after the collection, for one- and two-segment collections', () => {
    const cases: Array<[string, string, string | undefined]> = [
      ['/api/v1/endpoints/', 'endpoints', undefined],
      ['/api/v1/endpoints/e1/', 'endpoints', 'e1'],
      ['/api/v1/kubernetes/apps/a1/install/', 'kubernetes/apps', 'a1'],
      ['/api/v1/s3/buckets/b1/credentials/', 's3/buckets', 'b1'],
      ['/api/v1/agent/health/', 'agent/health', undefined],
    ]
    for (const [path, resource, id] of cases) assert.equal(objectIdOf({path, resource}), id, path)
  })

  it('writesByKind counts applied writes only (no GET, no 4xx, no dropped request), sorted', () => {
    const log = [
      entry('GET', '/api/v1/endpoints/', 'endpoints'),
      entry('PUT', '/api/v1/endpoints/e1/', 'endpoints'),
      entry('POST', '/api/v1/endpoints/', 'endpoints', 201),
      entry('PUT', '/api/v1/endpoints/e2/', 'endpoints', 409),
      entry('POST', '/api/v1/agent/health/', 'agent/health', 0),
      entry('DELETE', '/api/v1/backups/backups/b1/', 'backups/backups', 202),
    ]
    const writes = writesByKind(log)
    assert.deepEqual(writes, {'backups/backups': {DELETE: 1}, endpoints: {POST: 1, PUT: 1}})
    assert.equal(formatWrites(writes), 'backups/backups DELETE 1; endpoints POST 1, PUT 1')
    assert.equal(formatWrites({}), 'none')
  })

  it('updatesPerObject and deletesOf key by resource and id', () => {
    const log = [
      entry('PUT', '/api/v1/endpoints/e1/', 'endpoints'),
      entry('PATCH', '/api/v1/endpoints/e1/', 'endpoints'),
      entry('PUT', '/api/v1/hosts/h1/', 'hosts'),
      entry('PUT', '/api/v1/hosts/h2/', 'hosts', 500),
      entry('DELETE', '/api/v1/domains/dnsrecords/r1/', 'domains/dnsrecords', 204),
      entry('DELETE', '/api/v1/endpoints/e3/', 'endpoints', 404),
    ]
    assert.deepEqual([...updatesPerObject(log)], [['endpoints/e1', 2], ['hosts/h1', 1]])
    assert.deepEqual(deletesOf(log), ['domains/dnsrecords/r1'])
    assert.deepEqual(deletesOf(log, (e) => e.resource === 'domains/dnsrecords'), [])
  })

  it('changedFields: paths of the body that differ from the stored object; left-out fields and key order are no change', () => {
    const stored = {name: 'web', spec: {http: {path: '/', method: 'GET'}, interval: 60}, labels: ['a', 'b'], byoa: null}
    const cases: Array<[unknown, string[]]> = [
      [{name: 'web', spec: {interval: 60, http: {method: 'GET', path: '/'}}}, []],
      [{name: 'web', spec: {http: {path: '/health'}}}, ['spec.http.path']],
      [{labels: ['b', 'a']}, ['labels']],
      [{byoa: false, config_hash: 'x'}, ['byoa', 'config_hash']],
      [{spec: null}, ['spec']],
    ]
    for (const [body, changed] of cases) assert.deepEqual(changedFields(stored, body), changed, JSON.stringify(body))
    assert.deepEqual(changedFields(undefined, {name: 'x'}), ['name'])
  })

  it('duplicateKeys: live objects of one collection, name and scope; soft-deleted ones and other scopes do not count', () => {
    const collections = {
      endpoints: [
        {id: '1', name: 'a', workspace: 'w'}, {id: '2', name: 'a', workspace: 'w'}, {id: '3', name: 'a', workspace: 'w2'},
        {id: '4', name: 'b', workspace: 'w'}, {id: '5', name: 'b', workspace: 'w', is_deleted: true},
      ],
      hosts: [{id: '6', name: 'a', workspace: 'w'}],
    }
    assert.deepEqual(duplicateKeys(collections), {'endpoints|a|||w': 2})
  })
})
