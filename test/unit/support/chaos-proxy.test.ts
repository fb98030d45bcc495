import assert from 'node:assert/strict'
import {classify, isWrite, listKey, statusBody, takeFailure, WriteCounter, writePoint, pointResource, type FailRule} from '../../support/chaos/kube-proxy.js'

describe('chaos kube fault proxy: decisions', () => {
  it('classifies core and group paths, namespaced or not, with verbs', () => {
    assert.deepEqual(classify('GET', '/api/v1/nodes?limit=500'), {verb: 'list', resource: 'core/nodes', namespace: undefined, name: undefined})
    assert.deepEqual(classify('GET', '/api/v1/nodes?watch=true&resourceVersion=5'), {verb: 'watch', resource: 'core/nodes', namespace: undefined, name: undefined})
    assert.deepEqual(classify('PATCH', '/apis/polycrate.io/v1alpha1/namespaces/ns/endpoints/a/status'), {verb: 'patch', resource: 'polycrate.io/endpoints/status', namespace: 'ns', name: 'a'})
    assert.deepEqual(classify('POST', '/apis/polycrate.io/v1alpha1/namespaces/ns/endpoints'), {verb: 'create', resource: 'polycrate.io/endpoints', namespace: 'ns', name: undefined})
    assert.equal(classify('DELETE', '/api/v1/namespaces/x/secrets/s').verb, 'delete')
    assert.equal(classify('PUT', '/apis/coordination.k8s.io/v1/namespaces/x/leases/l').verb, 'update')
    assert.equal(classify('GET', '/api/v1/namespaces/x').resource, 'core/namespaces')
    assert.equal(classify('GET', '/version').verb, 'other')
    assert.equal(classify('GET', '/apis/velero.io/v1/namespaces/v/backups/b').verb, 'get')
  })

  it('reviews (TokenReview, SubjectAccessReview, SelfSubjectAccessReview) are not writes; the Lease writes are', () => {
    for (const path of ['/apis/authentication.k8s.io/v1/tokenreviews', '/apis/authorization.k8s.io/v1/subjectaccessreviews', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews']) {
      assert.equal(classify('POST', path).verb, 'review', path)
      assert.equal(isWrite(classify('POST', path).verb), false)
    }
    assert.equal(isWrite(classify('PUT', '/apis/coordination.k8s.io/v1/namespaces/x/leases/polycrate-operator-leader').verb), true)
    assert.equal(writePoint('kube', 'polycrate-operator/1.4.0 controller/leader-election', 'update', 'coordination.k8s.io/leases'), 'kube leader-election update coordination.k8s.io/leases')
  })

  it('writes are POST/PUT/PATCH/DELETE only', () => {
    assert.deepEqual((['list', 'watch', 'get', 'create', 'update', 'patch', 'delete', 'review', 'other'] as const).filter(isWrite), ['create', 'update', 'patch', 'delete'])
  })

  it('list keys ignore paging and resourceVersion but keep selectors; continued pages are not cached', () => {
    assert.equal(listKey('/api/v1/pods?limit=500&labelSelector=a%3Db'), listKey('/api/v1/pods?labelSelector=a%3Db&resourceVersion=7&limit=10'))
    assert.notEqual(listKey('/api/v1/pods?labelSelector=a%3Db'), listKey('/api/v1/pods'))
    assert.equal(listKey('/api/v1/pods?continue=abc'), undefined)
  })

  it('the write counter fires exactly at write k of each target\'s write point, once each', () => {
    const counter = new WriteCounter([{point: 'kube sync create polycrate.io/endpoints', k: 2}, {point: 'api sync post endpoints', k: 1}])
    assert.equal(counter.record('kube sync create polycrate.io/endpoints'), false)
    assert.equal(counter.record('kube runtime create core/events'), false)
    assert.equal(counter.record('kube sync create polycrate.io/endpoints'), true)
    assert.equal(counter.record('kube sync create polycrate.io/endpoints'), false, 'disarmed after firing')
    assert.equal(counter.record('api sync post endpoints'), true, 'the second target stays armed')
    counter.add({point: 'api sync post endpoints', k: 3})
    assert.equal(counter.record('api sync post endpoints'), false)
    assert.equal(counter.record('api sync post endpoints'), true, 'a target added later fires at its write')
    assert.deepEqual(counter.points.slice(0, 5), ['kube sync create polycrate.io/endpoints#1', 'kube runtime create core/events#1', 'kube sync create polycrate.io/endpoints#2', 'kube sync create polycrate.io/endpoints#3', 'api sync post endpoints#1'])
  })

  it('a target that needs the process\'s history (an Event\'s count patch) fires first; the others move to their next write', () => {
    const events = 'kube runtime patch core/events'
    const counter = new WriteCounter([{point: 'kube sync create polycrate.io/endpoints', k: 1}, {point: events, k: 1}, {point: 'api sync post endpoints', k: 2}])
    assert.equal(counter.record('kube sync create polycrate.io/endpoints'), false, 'waits: a crash now would restart the process before its Event repeats')
    assert.equal(counter.record('api sync post endpoints'), false)
    assert.equal(counter.record('api sync post endpoints'), false, 'its write 2 came while the Event patch was pending: moved to write 3')
    assert.equal(counter.record(events), true)
    assert.equal(counter.record('kube sync create polycrate.io/endpoints'), true, 'moved from write 1 to write 2, armed now')
    assert.equal(counter.record('api sync post endpoints'), true, 'write 3')
  })

  it('a write point names the controller from the User-Agent (runtime without one), the verb and the resource', () => {
    assert.equal(writePoint('kube', 'polycrate-operator/1.4.0 controller/host-discovery', 'patch', 'polycrate.io/hosts/status'), 'kube host-discovery patch polycrate.io/hosts/status')
    assert.equal(writePoint('api', 'polycrate-operator/1.4.0', 'post', 'agent/health'), 'api runtime post agent/health')
    assert.equal(writePoint('kube', undefined, 'create', 'core/events'), 'kube runtime create core/events')
    assert.equal(pointResource('kube host-discovery patch polycrate.io/hosts/status'), 'polycrate.io/hosts/status')
  })

  it('fail rules match by verb and resource and are consumed', () => {
    const rules: FailRule[] = [{verb: 'watch', kind: 410}, {resource: 'core/nodes', kind: 503, times: 2}]
    assert.equal(takeFailure(rules, {verb: 'list', resource: 'core/pods'}), undefined)
    assert.equal(takeFailure(rules, {verb: 'list', resource: 'core/nodes'}), 503)
    assert.equal(takeFailure(rules, {verb: 'watch', resource: 'core/nodes'}), 410)
    assert.equal(takeFailure(rules, {verb: 'watch', resource: 'core/nodes'}), 503)
    assert.equal(takeFailure(rules, {verb: 'watch', resource: 'core/nodes'}), undefined)
    assert.equal(rules.length, 0)
  })

  it('status bodies look like the apiserver\'s', () => {
    assert.deepEqual(JSON.parse(statusBody(410, 'x')), {kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'x', reason: 'Expired', code: 410})
  })
})
