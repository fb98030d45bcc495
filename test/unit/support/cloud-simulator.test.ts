import assert from 'node:assert/strict'
import {ApiSimulator} from '../../support/api-simulator/index.js'

/** The simulator's cloud side (test/support/api-simulator/cloud.ts): load balancer IPs after a delay, the agent's PoP. */
describe('API simulator: load balancer IPs after a delay, agent PoP', () => {
  let sim: ApiSimulator
  let token: string
  let now = Date.parse('2026-01-01T00:00:00Z')
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${sim.url}${path}`, {
      method,
      headers: {authorization: `Bearer ${token}`, ...(body === undefined ? {} : {'content-type': 'application/json'})},
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return {status: response.status, body: await response.json() as Record<string, unknown>}
  }

  beforeEach(async () => {
    sim = await ApiSimulator.start({now: () => now})
    const org = sim.createOrganization('acme')
    const ws = sim.createWorkspace({name: 'prod', organizationId: org.id})
    token = sim.issueToken({kind: 'agent', workspaceId: ws.id})
  })
  afterEach(() => sim.close())

  it('an instance has ip_address null until the configured delay has passed on the simulator clock, then keeps its IP', async () => {
    sim.cloud.loadBalancerAddressDelayMs = 5_000
    const created = await call('POST', '/api/v1/loadbalancers/instances/', {name: 'a1', ports: [{port: 80, protocol: 'tcp', target_port: 30080}]})
    assert.equal(created.status, 201)
    assert.equal(created.body.ip_address, null)
    const path = `/api/v1/loadbalancers/instances/${String(created.body.id)}/`
    now += 4_999
    assert.equal((await call('GET', path)).body.ip_address, null)
    now += 1
    const ip = (await call('GET', path)).body.ip_address
    assert.match(String(ip), /^203\.0\.113\.\d+$/)
    sim.advanceTime(60_000)
    assert.equal((await call('GET', path)).body.ip_address, ip)
    const listed = await call('GET', '/api/v1/loadbalancers/instances/?name_exact=a1')
    assert.equal((listed.body.results as Array<Record<string, unknown>>)[0]?.ip_address, ip)
  })

  it('without a delay the IP is there at once; two instances get different IPs', async () => {
    const a = await call('POST', '/api/v1/loadbalancers/instances/', {name: 'a'})
    const b = await call('POST', '/api/v1/loadbalancers/instances/', {name: 'b'})
    assert.match(String(a.body.ip_address), /^203\.0\.113\.\d+$/)
    assert.notEqual(a.body.ip_address, b.body.ip_address)
  })

  it('the health report answers with the configured PoP', async () => {
    assert.equal((await call('POST', '/api/v1/agent/health/', {reported_agent_id: 'op-1', kind: 'operator', status: 'healthy'})).body.pop_name, '')
    sim.cloud.popName = 'fsn1'
    sim.cloud.popId = 'b6d9f1c2-0000-4000-8000-000000000001'
    const answer = await call('POST', '/api/v1/agent/health/', {reported_agent_id: 'op-1', kind: 'operator', status: 'healthy'})
    assert.equal(answer.body.pop_name, 'fsn1')
    assert.equal(answer.body.pop_id, 'b6d9f1c2-0000-4000-8000-000000000001')
  })
})
