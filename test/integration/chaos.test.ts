/**
 * A bounded fault campaign (fixed seed, about 3 minutes): three workloads (Endpoint, Backup created before its Schedule,
 * pods before their meta Secret), their references, then crash-after-write-k and seeded faults through the kube fault
 * proxy; the differential oracle must find no violation. `npm run chaos` runs the full campaign.
 */
import assert from 'node:assert/strict'
import {installCampaignCrds, report, runCampaign} from '../support/chaos/campaign.js'

describe('fault campaign, bounded (operator processes behind the kube fault proxy, real apiserver, simulator)', function () {
  this.timeout(10 * 60_000)

  it('seed 7, about 3 minutes: 0 violations', async () => {
    await installCampaignCrds()
    const seed = 7
    const result = await runCampaign({seed, minutes: 2, workloads: ['endpoint', 'backup-backup-first', 'k8sapp-pods-first'], log: (line) => process.stderr.write(`[chaos] ${line}\n`)})
    const table = report(result, seed)
    process.stderr.write(`${table}\n`)
    assert.ok(result.coverage.every((c) => c.cases > 0), `every workload ran perturbed cases:\n${table}`)
    assert.equal(result.violations.length, 0, table)
  })
})
