/**
 * A bounded fault campaign (fixed seed, about 4 minutes): three workloads (Endpoint, Backup created before its Schedule,
 * pods before their meta Secret), their references, then crashes after write points with a storm of stale LISTs and
 * watch closes, and seeded faults through the kube fault proxy; a leader handover; a leader frozen past its lease;
 * replays of what the API fault proxy found; the differential oracle must find no violation. `npm run chaos` runs the
 * full campaign.
 */
import assert from 'node:assert/strict'
import {clearLeftoverCrs, installCampaignCrds, report, runCampaign, type CampaignResult} from '../support/chaos/campaign.js'

describe('fault campaign, bounded (operator processes behind the kube fault proxy, real apiserver, simulator)', function () {
  this.timeout(10 * 60_000)
  beforeEach(clearLeftoverCrs)

  it('seed 7, about 4 minutes: 0 violations', async () => {
    await installCampaignCrds()
    const seed = 7
    // Two rounds exactly (a crash case, a drawn fault), whatever the machine's speed; the minutes only bound a slow one.
    const result = await runCampaign({seed, minutes: 6, rounds: 2, workloads: ['endpoint', 'backup-backup-first', 'k8sapp-pods-first'], log: (line) => process.stderr.write(`[chaos] ${line}\n`)})
    const table = report(result, seed)
    process.stderr.write(`${table}\n`)
    assert.ok(result.coverage.every((c) => c.cases > 0), `every workload ran perturbed cases:\n${table}`)
    assert.equal(result.violations.length, 0, table)
  })

  it('a leader handover (seed 7, endpoint:8): the partitioned leader steps down and exits, the standby takes over, never two leaders writing', async () => {
    const result = await replayCase(7, 'endpoint:8')
    assert.equal(result.coverage[0]?.faults.handover, 1, `the handover happened:\n${report(result, 7)}`)
  })

  it('a paused leader (seed 1, paused-leader:1): frozen (SIGSTOP) past the lease while users change sources, the standby takes over, the resumed one writes nothing: 0 writes after the takeover', async () => {
    const result = await replayCase(1, 'paused-leader:1')
    const [led] = result.coverage[0]!.leadership
    assert.ok(led && led.report.handoverMs !== undefined && led.report.afterTakeover === 0, `the handover happened, nobody wrote after it:\n${report(result, 1)}`)
  })

  it('regression (seed 2, api-faults:2): a host create whose answer was lost is not made a second time', async () => {
    // Found by the campaign's API fault proxy: the answer of a host POST lost after the API applied it (504, a reset,
    // a timeout); the client sent the POST again, and hosts keep no unique key in the API, so it made a second host.
    // A create is now sent again only after an answer that says nothing was applied.
    await replayCase(2, 'api-faults:2')
  })

  it('regression (seed 2, k8scluster-created:3): two K8sCluster CRs first reconciled by one fresh process do not both take the slot', async () => {
    // Found by the campaign: crashes before either CR had a status, then a process that reconciled both at once; each
    // took the other for not Ready and claimed the workspace's cluster slot. An older CR not probed yet now holds the
    // younger back; and the CR whose uid marks the API cluster holds it whatever the statuses say.
    await replayCase(2, 'k8scluster-created:3')
  })

  it('regression (seed 8, endpoint:2): a stale LIST (time travel) makes no API endpoint disappear or linger', async () => {
    // Found by the campaign, in two forms (which one a run draws depends on the write points its reference saw): a
    // stale list of Endpoint CRs brought a deleted CR back and the sync recreated its API endpoint, which nothing owned
    // once the cache caught up; a stale list of Ingresses made discovery delete the Endpoint CR of an Ingress that
    // exists, and with it its API endpoint. Now an informer refuses a list older than what it already saw, and the
    // status write after a create that finds its CR gone deletes the API object again.
    await replayCase(8, 'endpoint:2')
  })

  it('regression (seed 15, k8sapp-pods-first:2): an app seen external before its meta Secret keeps no stale byoa in the API', async () => {
    // Found by the campaign: with the Pod events held, the pods made an external K8sApp (byoa false sent) before the
    // meta Secret made it a block's app, whose payload left byoa out, so the API kept the external app's flag. The
    // payload now always says byoa (true only for an external bring-your-own app).
    await replayCase(15, 'k8sapp-pods-first:2')
  })

  it('regression (seed 3, backup-present:1): a CR deleted after a crash between its API create and its status write takes its API object along', async () => {
    // Found by the campaign: killed after the API create of a BackupSchedule but before its status recorded the API
    // id, the next process saw the CR deleted and released its finalizer without deleting anything, leaving the
    // schedule live in the API. A CR without a recorded id now finds its API object by its natural key on delete.
    await replayCase(3, 'backup-present:1')
  })
})


/** Replays one case of a campaign (its reference run, then the one perturbed run) and expects no violation. */
async function replayCase(seed: number, caseId: string): Promise<CampaignResult> {
  await installCampaignCrds()
  const result = await runCampaign({seed, minutes: 5, caseId, log: (line) => process.stderr.write(`[chaos] ${line}\n`)})
  const table = report(result, seed)
  assert.ok(result.coverage[0]?.cases === 1, table)
  assert.equal(result.violations.length, 0, table)
  return result
}
