import assert from 'node:assert/strict'
import {renderOperatorConfig} from '../../../src/cli/status-view.js'

const now = Date.parse('2026-03-01T12:00:00Z')
const doc = (spec: Record<string, unknown>, status: Record<string, unknown>) => ({apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace: 'polycrate'}, spec, status})

describe('status view: the monitoring agent', () => {
  it('shows the assignment, the counts, the last report and the last result per endpoint', () => {
    const text = renderOperatorConfig(doc({agent: {enabled: true}}, {
      phase: 'Ready',
      monitoring: {
        reported_agent_id: 'polycrate-operator-abc', assigned_endpoints: 2, succeeding: 1, failing: 1, buffered_results: 3, dropped_results: 0,
        last_report_at: '2026-03-01T11:59:50Z',
        endpoints: [
          {id: 'b', name: 'prod-db-api', kind: 'http', success: false, checked_at: '2026-03-01T11:59:58Z', duration_ms: 12.4, status_code: 503, error: 'UNEXPECTED_STATUS: status 503 is not accepted', consecutive_failures: 4},
          {id: 'a', name: 'prod-shop', kind: 'http', success: true, checked_at: '2026-03-01T11:59:55Z', duration_ms: 40, status_code: 200},
        ],
      },
    }), {now})
    assert.match(text, /Monitoring agent:\s+2 endpoints assigned, 1 up, 1 failing; 3 results buffered, 0 dropped; last report 10s ago/)
    const rows = text.split('\n').filter((line) => /prod-(db-api|shop)/.test(line)).map((line) => line.trim().split(/\s{2,}/))
    assert.deepEqual(rows, [
      ['prod-db-api', 'http', 'failed', '2s ago', '12ms', '503', '4', 'UNEXPECTED_STATUS: status 503 is not accepted'],
      ['prod-shop', 'http', 'ok', '5s ago', '40ms', '200', '0', '-'],
    ])
    assert.match(text.split('\n').find((line) => line.includes('ENDPOINT'))!, /ENDPOINT\s+KIND\s+RESULT\s+CHECKED\s+DURATION\s+STATUS\s+FAILURES\s+ERROR/)
  })

  it('enabled without a summary says so; why it cannot fetch is shown; disabled without a summary shows nothing', () => {
    assert.match(renderOperatorConfig(doc({agent: {enabled: true}}, {}), {now}), /Monitoring agent:\s+enabled, no summary yet/)
    assert.match(
      renderOperatorConfig(doc({agent: {enabled: true}}, {monitoring: {assigned_endpoints: 0, message: 'Cannot fetch the assigned endpoints: not connected'}}), {now}),
      /0 endpoints assigned, 0 up, 0 failing; 0 results buffered, 0 dropped; no report yet; Cannot fetch the assigned endpoints: not connected/,
    )
    assert.doesNotMatch(renderOperatorConfig(doc({}, {}), {now}), /Monitoring/)
  })
})
