/**
 * Idle cost of the operator: resident memory and Kubernetes API requests per minute once it has settled,
 * measured on a real control plane. Not a pass/fail test; it prints a table and writes bench/results/idle.json.
 *
 *   npm run bench:idle [-- --minutes 2]
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {KubeClient} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {startControlPlane} from '../test/support/control-plane.js'
import {ensureCrdsWith, namespaceNamed} from './setup.js'
import {startOperator} from '../test/support/operator-process.js'
import {parsePromText} from '../test/support/prom-text.js'
import {FIELD_MANAGER} from '../src/operator/conventions.js'

const minutes = Number(process.argv[process.argv.indexOf('--minutes') + 1] || 1) || 1
const controlPlane = await startControlPlane()
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
try {
  await ensureCrdsWith(client)
  const namespace = await namespaceNamed(client, 'polycrate')
  await client.create({group: 'polycrate.io', version: 'v1alpha1', plural: 'operatorconfigs', namespace}, {
    apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {},
  })
  const operator = await startOperator({kubeconfig: controlPlane.kubeconfigPath, namespace, leaderElect: true, logLevel: 'info'})
  await operator.waitForLog((l) => l.msg === 'OperatorConfig status updated')
  const requests = async () => {
    const families = parsePromText(await (await fetch(operator.metricsUrl)).text())
    return families.get('rest_client_requests_total')!.samples.reduce((sum, s) => sum + s.value, 0)
  }
  const rss = async () => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${operator.pid}/status`, 'utf8'))![1]) / 1024
  await new Promise((resolve) => setTimeout(resolve, 15_000)) // settle
  const startRequests = await requests()
  const started = Date.now()
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000))
  const perMinute = ((await requests()) - startRequests) / ((Date.now() - started) / 60_000)
  const result = {idleRssMiB: Math.round(await rss()), apiserverRequestsPerMinute: Math.round(perMinute * 10) / 10, windowMinutes: minutes, leaderElection: true}
  console.table(result)
  await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
  await writeFile(path.join(import.meta.dirname, 'results', 'idle.json'), JSON.stringify(result, null, 2) + '\n')
  await operator.stop('SIGTERM')
} finally {
  client.close()
  await controlPlane.stop()
}
