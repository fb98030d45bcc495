import assert from 'node:assert/strict'
import {namespaceInScope, type NamespaceScope} from '../../../src/operator/discovery/namespace-scope.js'

describe('namespaceInScope: the one namespace rule of every discovery', () => {
  const cases: Array<[string, NamespaceScope, string | undefined, boolean]> = [
    // the seeds' table (operator reference: watch_namespaces / ignore_namespaces)
    ['empty watch list = all', {watch_namespaces: []}, 'anything', true],
    ['no lists at all = all', {}, 'anything', true],
    ['only listed namespaces', {watch_namespaces: ['prod', 'staging']}, 'prod', true],
    ['unlisted namespace', {watch_namespaces: ['prod', 'staging']}, 'dev', false],
    ['ignored always', {ignore_namespaces: ['kube-system']}, 'kube-system', false],
    ['not ignored', {ignore_namespaces: ['kube-system']}, 'apps', true],
    ['in both lists → ignored', {watch_namespaces: ['prod'], ignore_namespaces: ['prod']}, 'prod', false],
    ['names compare exactly (no case folding)', {watch_namespaces: ['prod']}, 'Prod', false],
    // an object without a namespace is in no namespace: out of scope, whatever the lists say
    ['undefined namespace, no lists', {}, undefined, false],
    ['undefined namespace, a watch list', {watch_namespaces: ['x']}, undefined, false],
    ['undefined namespace, an ignore list', {ignore_namespaces: ['kube-system']}, undefined, false],
    ['empty namespace = none', {}, '', false],
    ['empty namespace, even when "" is watched', {watch_namespaces: ['']}, '', false],
  ]
  for (const [name, scope, namespace, expected] of cases) {
    it(`${name}: ${JSON.stringify(namespace)} in ${JSON.stringify(scope)} → ${expected}`, () => assert.equal(namespaceInScope(namespace, scope), expected))
  }
})
