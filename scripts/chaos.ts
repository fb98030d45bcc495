/**
 * `npm run chaos -- [--seed S] [--minutes M] [--feature F] [--workload W,…] [--case ID [--carry 'point#k;…']]`: the seeded fault campaign against a control
 * plane of its own (the binaries of `npm run controlplane`) and API simulators. Prints the coverage table and every
 * violation with the command that replays it; exits 1 when there is a violation.
 */
import {parseArgs} from 'node:util'
import {installCampaignCrds, report, runCampaign} from '../test/support/chaos/campaign.js'
import {splitWrite} from '../test/support/chaos/kube-proxy.js'
import {startSharedControlPlane, stopSharedControlPlane} from '../test/support/cluster.js'

const {values} = parseArgs({options: {
  seed: {type: 'string', default: '1'},
  minutes: {type: 'string', default: '10'},
  feature: {type: 'string'},
  workload: {type: 'string'},
  case: {type: 'string'},
  carry: {type: 'string'},
  quiet: {type: 'boolean', default: false},
}})
const seed = Number(values.seed)
const minutes = Number(values.minutes)
if (!Number.isInteger(seed) || seed < 0 || !(minutes > 0) || (values.carry && !values.case)) {
  process.stderr.write('usage: npm run chaos -- [--seed <non-negative integer>] [--minutes <number > 0>] [--feature endpoint|host|volume|certificate|backup|k8sapp|s3bucket|k8scluster|loadbalancer|leader|api] [--workload <name>,…] [--case <workload>:<n> [--carry \'<point>#<k>;…\']]\n')
  process.exit(2)
}
const log = (line: string) => {
  if (!values.quiet) process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
}
await startSharedControlPlane()
// Ctrl-C: stop the control plane (its etcd and apiserver would outlive the script).
process.once('SIGINT', () => {
  void stopSharedControlPlane().finally(() => process.exit(130))
})
let code = 0
try {
  await installCampaignCrds()
  const result = await runCampaign({seed, minutes, feature: values.feature, workloads: values.workload?.split(','), caseId: values.case, carry: values.carry?.split(';').filter(Boolean).map(splitWrite), log})
  process.stdout.write(`${report(result, seed)}\n`)
  code = result.violations.length ? 1 : 0
} catch (error) {
  process.stderr.write(`chaos: ${(error as Error).stack ?? error}\n`)
  code = 2
} finally {
  await stopSharedControlPlane()
}
process.exit(code)
