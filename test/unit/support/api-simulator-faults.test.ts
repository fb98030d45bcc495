/** Fault injection of the Polycrate API simulator: error statuses, 429 + Retry-After, dropped connections, latency. */
import assert from 'node:assert/strict'
import {ApiSimulator} from '../../support/api-simulator/index.js'

describe('ApiSimulator faults', () => {
  let sim: ApiSimulator
  let token: string
  let workspaceId: string
  const get = (path = '/api/v1/endpoints/') => fetch(`${sim.url}${path}`, {headers: {authorization: `Bearer ${token}`}})
  const post = (body: unknown) =>
    fetch(`${sim.url}/api/v1/endpoints/`, {
      method: 'POST',
      headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'},
      body: JSON.stringify(body),
    })

  beforeEach(async () => {
    sim = await ApiSimulator.start()
    const org = sim.createOrganization('o')
    workspaceId = sim.createWorkspace({name: 'w', organizationId: org.id}).id
    token = sim.issueToken({kind: 'agent', workspaceId})
  })
  afterEach(async () => {
    sim.faults.clear()
    await sim.close()
  })

  it('errorRate 1 answers every matching request with one of the error statuses, and changes nothing', async () => {
    sim.faults.set({errorRate: 1})
    for (let index = 0; index < 10; index++) {
      const response = await post({name: `e${index}`, remote_address: 'x'})
      assert.ok([500, 502, 503].includes(response.status), String(response.status))
      const body = (await response.json()) as {type: string; errors: Array<{code: string}>}
      assert.equal(body.type, 'server_error')
    }
    assert.equal(sim.list('endpoints').length, 0, 'a faulted request never reaches the store')
    sim.faults.set({errorRate: 1, errorStatuses: [502]})
    assert.equal((await get()).status, 502)
    sim.faults.clear()
    assert.equal((await get()).status, 200)
  })

  it('rateLimitRate 1 answers 429 with Retry-After', async () => {
    sim.faults.set({rateLimitRate: 1, retryAfterSeconds: 7})
    const response = await get()
    assert.equal(response.status, 429)
    assert.equal(response.headers.get('retry-after'), '7')
    const body = (await response.json()) as {errors: Array<{code: string}>}
    assert.equal(body.errors[0]?.code, 'throttled')
    sim.faults.set({rateLimitRate: 1})
    assert.equal((await get()).headers.get('retry-after'), '1')
  })

  it('dropRate 1 destroys the connection: fetch rejects, and the log shows status 0', async () => {
    sim.faults.set({dropRate: 1})
    await assert.rejects(get(), TypeError)
    assert.equal(sim.requests.at(-1)?.status, 0)
    sim.faults.clear()
    assert.equal((await get()).status, 200)
  })

  it('adds latencyMs to every matching request', async () => {
    const started = performance.now()
    await get()
    const fast = performance.now() - started
    sim.faults.set({latencyMs: 200})
    const slowStart = performance.now()
    assert.equal((await get()).status, 200)
    const slow = performance.now() - slowStart
    assert.ok(slow >= 190, `took ${slow.toFixed(0)} ms`)
    assert.ok(slow > fast + 150, `fast ${fast.toFixed(0)} ms, slow ${slow.toFixed(0)} ms`)
  })

  it('applies only to requests `match` accepts, at the rate `random` decides', async () => {
    sim.faults.set({errorRate: 1, errorStatuses: [503], match: (method) => method === 'POST'})
    assert.equal((await get()).status, 200)
    assert.equal((await post({name: 'a', remote_address: 'x'})).status, 503)

    const draws = [0.1, 0.9, 0.49, 0.5]
    sim.faults.set({errorRate: 0.5, errorStatuses: [500], random: () => draws.shift() ?? 0.99})
    const statuses = []
    for (let index = 0; index < 4; index++) statuses.push((await get()).status)
    assert.deepEqual(statuses, [500, 200, 500, 200])
  })

  it('rejects rates outside 0..1', () => {
    assert.throws(() => sim.faults.set({errorRate: 1.5}), RangeError)
    assert.throws(() => sim.faults.set({dropRate: -0.1}), RangeError)
  })
})
