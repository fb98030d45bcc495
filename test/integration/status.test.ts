/** `polycrate operator status` against the run's real kube-apiserver, in a namespace of its own. */
import assert from 'node:assert/strict'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'
import type {ResourceRow, StatusReport} from '../../src/cli/status-view.js'
import {findCrd} from '../../src/crds/index.js'
import type {KubeClient} from '../../src/kube/client.js'
import {collectInventory, listAllPages, listPath} from '../../src/kube/resources-inventory.js'
import {Heartbeat} from '../../src/operator/runtime/heartbeat.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'
import {writeKubeconfig} from '../support/kubeconfig-file.js'

const ref = (kind: string, namespace: string, name: string) => {
  const def = findCrd(kind)
  assert.ok(def, kind)
  return {group: 'polycrate.io', version: 'v1alpha1', plural: def.plural, namespace, name}
}

async function createWithStatus(client: KubeClient, kind: string, namespace: string, name: string, spec: object, status?: object) {
  const target = ref(kind, namespace, name)
  await client.create(target, {apiVersion: 'polycrate.io/v1alpha1', kind, metadata: {name, namespace}, spec})
  if (status) await client.mergePatch({...target, subresource: 'status'}, {status})
}

const find = (report: StatusReport, kind: string, name: string): ResourceRow | undefined =>
  report.resources.find((row) => row.kind === kind && row.name === name)

/** A timestamp as Kubernetes writes them (whole seconds), `hours` ago. */
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z')

describe('polycrate operator status on a real kube-apiserver', () => {
  let client: KubeClient
  let ns: string
  const completedAt = hoursAgo(50)
  let kubeconfig: string
  /** What an `operator run` without leader election in `ns` renews: status sees an operator running there. */
  let heartbeat: Heartbeat
  const status = (...args: string[]) => runCommand(['operator', 'status', '--kubeconfig', kubeconfig, '--operator-namespace', ns, ...args])

  before(async () => {
    await ensureCrds()
    client = adminClient()
    kubeconfig = controlPlane().kubeconfigPath
    ns = await freshNamespace(client, 'status')
    await createWithStatus(client, 'Endpoint', ns, 'app-example-com', {remoteAddress: 'app.example.com', remotePort: 443},
      {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-123'})
    await createWithStatus(client, 'K8sApp', ns, 'web', {block: {name: 'web'}},
      {phase: 'Error', sync_status: 'error', api_id: 'app-456', message: 'API answered 500'})
    await createWithStatus(client, 'Host', ns, 'node-1', {name: 'node-1', hostname: 'node-1'})
    await createWithStatus(client, 'Certificate', ns, 'app-tls',
      {name: 'app-tls', secret_name: 'app-tls', issuer_name: 'letsencrypt', is_ready: true, certificate_status: 'ready', not_after: hoursAgo(-24 * 60)},
      {phase: 'Synced', sync_status: 'synced', api_id: 'cert-7'})
    await createWithStatus(client, 'Backup', ns, 'daily', {name: 'daily', provider: 'velero', kind: 'cluster', status: 'completed', completed_at: completedAt},
      {phase: 'Synced', sync_status: 'synced', api_id: 'b-9'})
    await createWithStatus(client, 'OperatorConfig', ns, 'default', {api_sync: {enabled: true, api_url: 'https://api.example'}}, {
      phase: 'Ready',
      conditions: [
        {type: 'Ready', status: 'True', reason: 'Configured', message: 'configuration is valid', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z')},
        {type: 'ApiSynced', status: 'False', reason: 'Unauthorized', message: 'token rejected'},
      ],
      api_sync: {workspace_name: 'acme-prod', workspace_id: 'ws-1', organization_name: 'Acme', resolved_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z')},
      local_cluster: {cluster_name: 'prod-eu', cluster_id: 'c-42'},
      controllers: [{name: 'endpoint-discovery', enabled: true, running: true}, {name: 'backup-discovery', enabled: true, running: false, reason: 'CRDMissing'}],
    })
    heartbeat = new Heartbeat({client, namespace: ns, identity: 'status-test_1', host: 'status-test-host', pid: 4242, version: '0.1.0'})
    heartbeat.start()
    // The positive signal: its Lease is held.
    for (let found = false; !found;) {
      const leases = await client.request<{items: Array<{spec?: {holderIdentity?: string}}>}>({path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`})
      found = leases.items.some((lease) => lease.spec?.holderIdentity === 'status-test_1')
    }
  })
  after(async () => {
    await heartbeat.stop()
    client.close()
  })

  it('prints the OperatorConfig summary and one table per kind, both status spellings', async () => {
    const {stdout, stderr, error} = await status('--namespace', ns)
    assert.equal(error, undefined, error?.message)
    assert.equal(stderr, '')
    const lines = stdout.split('\n')
    assert.deepEqual(lines.slice(0, 3), ['Polycrate Operator Status', '=========================', `Cluster: ${controlPlane().server}`])
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(stdout, /\x1b\[/, 'no colours when stdout is not a TTY')

    // First what runs: the process whose heartbeat renews, outside the cluster.
    assert.match(stdout, new RegExp(`^ {2}Namespace: +${ns} \\(--operator-namespace\\)$`, 'm'))
    assert.match(stdout, /^ {2}State: +running: a process on host status-test-host \(pid 4242\), outside the cluster without leader election \(heartbeat renewed \d+s ago\)$/m)
    assert.match(stdout, /^ {4}status-test-host +4242 +0\.1\.0 +polycrate-operator-run-status-test-host-[0-9a-f]{8} +running, renewed \d+s ago$/m)
    assert.match(stdout, new RegExp(`^OperatorConfig ${ns}/default$`, 'm'))
    assert.match(stdout, /^ {2}Reported: +last reported \d+s ago \(.*\) by a process on host status-test-host \(pid 4242\), outside the cluster; it keeps it current$/m)
    assert.match(stdout, /^ {2}Phase: +Ready$/m)
    assert.match(stdout, /^ {2}Workspace: +acme-prod \(organization Acme\), resolved \d+s ago$/m)
    assert.match(stdout, /^ {2}Local cluster: +prod-eu \(id c-42\)$/m)
    assert.match(stdout, /^ {4}Ready +True +Configured +configuration is valid$/m)
    assert.match(stdout, /^ {4}ApiSynced +False +Unauthorized +token rejected$/m)
    assert.match(stdout, /^ {4}endpoint-discovery +yes +-$/m)
    assert.match(stdout, /^ {4}backup-discovery +no +CRDMissing$/m)

    // each kind's table has its kubectl get columns between NAME and PHASE
    const section = (heading: string, header: string, row: string) =>
      assert.match(stdout, new RegExp(`^${heading}\\n-+\\n {2}${header}\\n {2}${row}$`, 'm'), heading)
    section('OperatorConfigs', 'NAMESPACE +NAME +API SYNC +WORKSPACE +PHASE +SYNC +API ID +AGE', `${ns} +default +true +acme-prod +Ready +- +- +\\d+[sm]`)
    section('Endpoints', 'NAMESPACE +NAME +HOST +PORT +PATH +PHASE +SYNC +API ID +AGE',
      `${ns} +app-example-com +app\\.example\\.com +443 +- +Synced +synced +ep-123 +\\d+[sm]`)
    section('Hosts', 'NAMESPACE +NAME +HOSTNAME +IPV4 +ROLE +CPU +PHASE +SYNC +API ID +AGE', `${ns} +node-1 +node-1 +- +- +- +- +- +- +\\d+[sm]`)
    section('K8sApps', 'NAMESPACE +NAME +BLOCK +VERSION +ARTIFACTS +PHASE +SYNC +API ID +AGE', `${ns} +web +web +- +- +Error +error +app-456 +\\d+[sm]`)
    section('Backups', 'NAMESPACE +NAME +PROVIDER +KIND +STATUS +COMPLETED +PHASE +SYNC +API ID +AGE',
      `${ns} +daily +velero +cluster +completed +2d +Synced +synced +b-9 +\\d+[sm]`)
    section('Certificates', 'NAMESPACE +NAME +ISSUER +READY +STATUS +PHASE +SYNC +API ID +AGE',
      `${ns} +app-tls +letsencrypt +true +ready +Synced +synced +cert-7 +\\d+[sm]`)
    // sections in the order of allCrds; the cluster-scoped Artifacts are not part of a namespace's status
    const order = ['OperatorConfigs', 'Endpoints', 'Hosts', 'K8sApps', 'Backups', 'Certificates'].map((heading) => lines.indexOf(heading))
    assert.ok(order.every((index, i) => index > 0 && (i === 0 || index > order[i - 1]!)), `section order ${order}`)
    assert.equal(lines.includes('Artifacts'), false)
    assert.equal(lines.includes('K8sClusters'), false, 'kinds without objects are left out')
  })

  it('-o json, -o yaml and --json print the same document', async () => {
    const json = await status('--namespace', ns, '-o', 'json')
    assert.equal(json.error, undefined, json.error?.message)
    const report = JSON.parse(json.stdout) as StatusReport
    assert.equal(report.cluster, controlPlane().server)
    assert.equal(report.operatorConfigs.length, 1)
    const config = report.operatorConfigs[0]!
    assert.equal(config.kind, 'OperatorConfig')
    assert.equal((config.metadata as {name: string}).name, 'default')
    assert.equal('managedFields' in config.metadata, false)
    assert.equal((config.spec as {api_sync: {api_url: string}}).api_sync.api_url, 'https://api.example')
    assert.equal((config.status as {api_sync: {workspace_name: string}}).api_sync.workspace_name, 'acme-prod')

    const endpoint = find(report, 'Endpoint', 'app-example-com')
    assert.ok(endpoint)
    assert.deepEqual({...endpoint, age: undefined, creationTimestamp: undefined}, {
      kind: 'Endpoint', namespace: ns, name: 'app-example-com', columns: {Host: 'app.example.com', Port: '443', Path: null},
      phase: 'Synced', syncStatus: 'synced', apiID: 'ep-123', age: undefined, creationTimestamp: undefined,
    })
    assert.match(endpoint.age, /^\d+[sm]$/)
    assert.ok(!Number.isNaN(Date.parse(endpoint.creationTimestamp!)))
    assert.deepEqual(
      (({phase, syncStatus, apiID}) => ({phase, syncStatus, apiID}))(find(report, 'K8sApp', 'web')!),
      {phase: 'Error', syncStatus: 'error', apiID: 'app-456'})
    assert.deepEqual(find(report, 'Host', 'node-1')?.apiID, null)
    // the kind's columns as raw values: booleans and numbers as text, a date as its timestamp
    assert.deepEqual(find(report, 'Certificate', 'app-tls')?.columns, {Issuer: 'letsencrypt', Ready: 'true', Status: 'ready'})
    assert.deepEqual(find(report, 'Backup', 'daily')?.columns, {Provider: 'velero', Kind: 'cluster', Status: 'completed', Completed: completedAt})
    assert.deepEqual(find(report, 'OperatorConfig', 'default')?.columns, {'API Sync': 'true', Workspace: 'acme-prod'})
    assert.deepEqual(report.resources.map((r) => r.kind), ['OperatorConfig', 'Endpoint', 'Host', 'K8sApp', 'Backup', 'Certificate'])

    assert.equal(report.operator?.running, true)
    assert.equal(report.operatorConfigs[0]?.reported?.stale, false)
    // Ages move between two runs: the resources' AGE, the leases' "renewed … ago".
    const withoutAge = (r: StatusReport) => ({
      ...r,
      operator: {...r.operator, summary: '', instance: null},
      operatorConfigs: r.operatorConfigs.map((config) => ({...config, reported: {...config.reported, at: ''}})),
      resources: r.resources.map((row) => ({...row, age: ''})),
    })
    const fromYaml = await status('--namespace', ns, '-o', 'yaml')
    assert.equal(fromYaml.error, undefined)
    assert.deepEqual(withoutAge(yaml.load(fromYaml.stdout) as StatusReport), withoutAge(report))
    const fromJsonFlag = await status('--namespace', ns, '--json')
    assert.equal(fromJsonFlag.error, undefined)
    assert.deepEqual(withoutAge(JSON.parse(fromJsonFlag.stdout) as StatusReport), withoutAge(report))
  })

  it('--kind ep shows only Endpoints (the OperatorConfig summary stays)', async () => {
    const {stdout, error} = await status('--namespace', ns, '--kind', 'ep')
    assert.equal(error, undefined, error?.message)
    assert.match(stdout, /^Endpoints$/m)
    assert.match(stdout, /app-example-com/)
    assert.doesNotMatch(stdout, /^(K8sApps|Hosts|OperatorConfigs)$/m)
    assert.match(stdout, new RegExp(`^OperatorConfig ${ns}/default$`, 'm'))

    const json = await status('--namespace', ns, '-k', 'K8sApp', '-k', 'endpoints', '-o', 'json')
    const report = JSON.parse(json.stdout) as StatusReport
    assert.deepEqual(report.resources.map((r) => r.kind), ['Endpoint', 'K8sApp'])
  })

  it('without --namespace it reads all namespaces', async () => {
    const json = await status('-A', '-o', 'json', '--kind', 'ep')
    assert.equal(json.error, undefined, json.error?.message)
    const report = JSON.parse(json.stdout) as StatusReport
    assert.ok(report.resources.some((row) => row.namespace === ns && row.name === 'app-example-com'))
  })

  it('an unknown kind exits 2', async () => {
    const {error} = await status('--kind', 'widgets')
    assert.equal(error?.oclif?.exit, 2)
    assert.match(error!.message, /^Unknown kind "widgets"\. Valid kinds: /)
  })

  it('-n <a namespace without objects>: no resources there, but the operator and its OperatorConfig are shown (not filtered away)', async () => {
    const empty = await freshNamespace(client, 'status-empty')
    const {stdout, error} = await status('-n', empty)
    assert.equal(error, undefined, error?.message)
    assert.match(stdout, /^ {2}State: +running: /m)
    assert.match(stdout, new RegExp(`^OperatorConfig ${ns}/default$`, 'm'))
    assert.doesNotMatch(stdout, /No OperatorConfig/)
    assert.match(stdout, /^No polycrate\.io resources found\.$/m)
  })

  it('nothing runs (the process stopped): said plainly, the OperatorConfig STALE, exit 1 after printing it all', async () => {
    const stopped = await freshNamespace(client, 'status-stopped')
    await createWithStatus(client, 'OperatorConfig', stopped, 'default', {}, {
      phase: 'Ready',
      conditions: [{type: 'Ready', status: 'True', reason: 'ControllersRunning', message: 'Running: endpoint-discovery.', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z')}],
    })
    const other = new Heartbeat({client, namespace: stopped, identity: 'laptop_2', host: 'laptop', pid: 7, version: '0.1.0'})
    other.start()
    await other.stop()
    const {stdout, error} = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig, '--operator-namespace', stopped, '-n', stopped])
    assert.equal(error?.oclif?.exit, 1, 'nothing runs')
    assert.match(stdout, new RegExp(`^ {2}State: +NOTHING RUNS in namespace ${stopped}; last seen: heartbeat Lease polycrate-operator-run-laptop-[0-9a-f]{8} released \\d+s ago \\(the process stopped\\)$`, 'm'))
    assert.match(stdout, /^ {4}laptop +7 +0\.1\.0 +polycrate-operator-run-laptop-[0-9a-f]{8} +stopped \d+s ago$/m)
    assert.match(stdout, /^ {2}Reported: +STALE — last reported \d+s ago .*no operator runs to keep it current/m)
    assert.match(stdout, /^ {2}Phase: +Ready \(as last reported\)$/m)
    assert.match(stdout, /^OperatorConfigs$/m, 'and the rest of the report is printed')
    const json = await runCommand(['operator', 'status', '--kubeconfig', kubeconfig, '--operator-namespace', stopped, '-n', stopped, '--json'])
    assert.equal(json.error?.oclif?.exit, 1)
    const report = JSON.parse(json.stdout) as StatusReport
    assert.equal(report.operator?.running, false)
    assert.equal(report.operatorConfigs[0]?.reported?.stale, true)
  })

  it('an identity without RBAC rights gets the 403 line, exit 1', async () => {
    const nobody = await writeKubeconfig(path.join(controlPlane().dir, 'status-nobody'), controlPlane().server, controlPlane().unprivilegedToken)
    const {error} = await runCommand(['operator', 'status', '--kubeconfig', nobody])
    assert.equal(error?.oclif?.exit, 1)
    assert.match(error!.message, /^Forbidden \(403\): your identity may not list polycrate\.io resources\. /)
  })

  it('objects whose deletion waits on a finalizer of the operator are listed, with what to do', async () => {
    const held = await freshNamespace(client, 'status-held')
    const ingress = {group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: held, name: 'web'}
    await client.create({...ingress, name: undefined}, {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: {name: 'web', namespace: held, finalizers: ['endpoints.polycrate.io/discovery-cleanup', 'example.com/other']},
      spec: {rules: [{host: 'web.example.com'}]},
    })
    await client.delete(ingress)
    try {
      const {stdout, error} = await status('-n', held)
      assert.equal(error, undefined, error?.message)
      assert.match(stdout, /^Deleting, held by a finalizer of the operator$/m)
      assert.match(stdout, new RegExp(`^\\s+Ingress\\s+${held}\\s+web\\s+\\d+s\\s+endpoints\\.polycrate\\.io/discovery-cleanup$`, 'm'), 'only our finalizer is named')
      assert.match(stdout, /`polycrate operator uninstall` releases its finalizers without it\.$/m)
      const report = JSON.parse((await status('-n', held, '-o', 'json')).stdout) as StatusReport
      assert.deepEqual(report.held.map(({kind, namespace, name, finalizers}) => ({kind, namespace, name, finalizers})),
        [{kind: 'Ingress', namespace: held, name: 'web', finalizers: ['endpoints.polycrate.io/discovery-cleanup']}])
      const elsewhere = JSON.parse((await status('-n', ns, '-o', 'json')).stdout) as StatusReport
      assert.deepEqual(elsewhere.held, [], 'another namespace holds nothing')
    } finally {
      await client.mergePatch(ingress, {metadata: {finalizers: null}})
    }
  })

  it('paged lists follow real continue tokens', async () => {
    for (let i = 0; i < 5; i++) await createWithStatus(client, 'Host', ns, `paged-${i}`, {name: `paged-${i}`, hostname: `paged-${i}`})
    const hosts = findCrd('Host')!
    const names = (await listAllPages<{metadata: {name: string}}>(client, listPath(hosts, ns), 2)).map((h) => h.metadata.name)
    assert.deepEqual(names, ['node-1', 'paged-0', 'paged-1', 'paged-2', 'paged-3', 'paged-4'])
    const inventory = await collectInventory(client, {kinds: [hosts], namespace: ns, pageSize: 2})
    assert.equal(inventory.listings[0]?.items.length, 6)
  })
})
