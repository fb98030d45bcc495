import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import {ApiSession} from '../../../src/operator/agent/api-session.js'
import {CloudNodeController} from '../../../src/operator/cloud/cloud-node-feature.js'
import {ServiceLoadBalancerController} from '../../../src/operator/cloud/service-load-balancer-feature.js'
import {defaultFeatures} from '../../../src/operator/registry.js'

describe('cloud controller features: OperatorConfig switches', () => {
  const session = new ApiSession()
  const nodeFeature = CloudNodeController(session)
  const lbFeature = ServiceLoadBalancerController(session)
  const config = (cloud: object | undefined) => operatorConfigSpec.parse(cloud === undefined ? {} : {cloud_controller: cloud})

  const cases: Array<{name: string; cloud?: object; node: boolean; lb: boolean}> = [
    {name: 'default: off (opt-in)', node: false, lb: false},
    {name: 'enabled: node init and load balancers (load_balancer.enabled defaults to true)', cloud: {enabled: true}, node: true, lb: true},
    {name: 'enabled without load balancers', cloud: {enabled: true, load_balancer: {enabled: false}}, node: true, lb: false},
    {name: 'load balancers alone do nothing while the cloud controller is off', cloud: {enabled: false, load_balancer: {enabled: true}}, node: false, lb: false},
  ]
  for (const testCase of cases) {
    it(testCase.name, () => {
      assert.equal(nodeFeature.enabled(config(testCase.cloud)), testCase.node)
      assert.equal(lbFeature.enabled(config(testCase.cloud)), testCase.lb)
    })
  }

  it('service_scope defaults to all; a change of it restarts the load balancer feature (its settings differ)', () => {
    const all = config({enabled: true})
    const optIn = config({enabled: true, load_balancer: {service_scope: 'opt-in'}})
    assert.equal(all.cloud_controller.load_balancer.service_scope, 'all')
    assert.notDeepEqual(lbFeature.settings(all, () => true), lbFeature.settings(optIn, () => true))
    assert.throws(() => config({enabled: true, load_balancer: {service_scope: 'some'}}))
  })

  it('both are in the operator\'s feature list', () => {
    const names = defaultFeatures(session).map((feature) => feature.name)
    assert.ok(names.includes('cloud-node'))
    assert.ok(names.includes('cloud-load-balancer'))
  })
})
