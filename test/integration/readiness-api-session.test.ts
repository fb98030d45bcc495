/**
 * A replica is not Ready until the API sync has given its first answer. Its DNS webhooks answer from the API session,
 * and the Service sends calls to Ready Pods only: a restarted container whose webhook listens before its API sync has
 * answered would answer 503 "not connected" meanwhile (CI saw it in the in-cluster SIGKILL takeover). The health
 * report is held here by the simulator's latency: the webhook answers 503, /readyz fails on `api-session`; once the
 * report is answered, both are well.
 */
import assert from 'node:assert/strict'
import {freePort} from '../support/control-plane.js'
import {eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'
import {EXTERNAL_DNS_MEDIA_TYPE} from '../../src/operator/dns/records.js'

describe('readiness: not Ready until the API sync has answered (in-process operator + simulator)', function () {
  this.timeout(120_000)
  let port: number
  const harness = inProcessOperator({
    spec: ({sim}) => ({
      api_sync: {enabled: true, api_url: sim.url, sync_interval_seconds: 5},
      local_cluster: {enabled: false},
      external_dns_webhook: {enabled: true, port},
    }),
    setup: async () => {
      port = await freePort()
    },
    probePort: true,
    start: false,
  })

  it('/readyz fails on api-session while the first health report is unanswered (the webhook says 503), and passes once it is', async () => {
    const heldMs = 6000
    harness.sim.faults.set({latencyMs: heldMs, match: (method, path) => method === 'POST' && path.includes('/agent/health')})
    harness.start()
    // The webhook listens and answers 503 (the session has no answer yet): then /readyz must fail, naming why.
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${port}/`, {headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}}).catch(() => undefined)
      return response?.status === 503 ? true : undefined
    }, 30_000, 'the webhook listening, answering 503')
    const held = await fetch(`${harness.probeUrl}/readyz?verbose`)
    const text = await held.text()
    assert.notEqual(held.status, 200, text)
    assert.match(text, /\[-\]api-session failed: the API sync has not given its first answer yet/)
    assert.match(text, /\[\+\]features ok/)
    harness.sim.faults.clear()
    await eventually(async () => (await fetch(`${harness.probeUrl}/readyz`)).status === 200, 30_000, '/readyz 200 once the health report is answered')
    const negotiated = await fetch(`http://127.0.0.1:${port}/`, {headers: {Accept: EXTERNAL_DNS_MEDIA_TYPE}})
    assert.equal(negotiated.status, 200, await negotiated.text())
  })
})
