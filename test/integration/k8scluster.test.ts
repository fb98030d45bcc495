import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {runCommand} from '@oclif/test'
import {execa} from 'execa'
import type {KubeClient, KubeObject} from '../../src/kube/client.js'
import {adminClient, controlPlane, ensureCrds} from '../support/cluster.js'
import {freePort} from '../support/control-plane.js'
import {configRef, eventually} from '../support/helpers.js'
import {inProcessOperator, type OperatorHarness} from '../support/operator-harness.js'

type Cluster = KubeObject & {metadata: {name: string; uid: string; finalizers?: string[]}; status?: Record<string, unknown> & {phase?: string; reachable?: boolean; kubernetesVersion?: string; lastProbedAt?: string; apiID?: string; syncStatus?: string; message?: string; conditions?: Array<{type: string; status: string; reason: string; message: string}>}}

const clustersIn = (namespace: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'k8sclusters', namespace})
const secretsIn = (namespace: string) => ({group: '', version: 'v1', plural: 'secrets', namespace})

describe('K8sCluster (real apiservers)', function () {
  this.timeout(180_000)
  let client: KubeClient
  let extra: {server: string; stop(): Promise<void>}
  let ca: string
  let otherCa: string

  /** A second kube-apiserver, with a CA of its own (its cert dir is per port): the cluster the CRs register. */
  const startExtra = async () => {
    extra = await controlPlane().startExtraApiServer()
    ca = await readFile(path.join(controlPlane().dir, `certs-${new URL(extra.server).port}`, 'apiserver.crt'), 'utf8')
  }

  before(async () => {
    await ensureCrds()
    client = adminClient()
    await startExtra()
    otherCa = await readFile(path.join(controlPlane().dir, 'certs', 'apiserver.crt'), 'utf8')
  })
  after(async () => {
    await extra?.stop()
    client?.close()
  })

  /** The operator's captured log lines, as text. */
  const logText = (harness: OperatorHarness) => harness.logs.map((line) => JSON.stringify(line))
  const helpers = (namespace: string) => {
    const get = (name: string) => client.getOrUndefined<Cluster>({...clustersIn(namespace), name})
    return {
      get,
      secret: (name: string, token: string) => client.create(secretsIn(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name, namespace}, stringData: {token}}),
      create: (name: string, spec: Record<string, unknown>) => client.create(clustersIn(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'K8sCluster', metadata: {name, namespace}, spec}),
      phase: (name: string, phase: string, reason?: string) => eventually(async () => {
        const cluster = await get(name)
        const ready = cluster?.status?.conditions?.find((c) => c.type === 'Ready')
        return cluster?.status?.phase === phase && (reason === undefined || ready?.reason === reason) ? cluster : undefined
      }, 60_000, `K8sCluster ${name} in phase ${phase}${reason ? `/${reason}` : ''}`),
      events: async (name: string) =>
        (await client.request<{items: Array<{type: string; reason: string; message: string}>}>({path: `/api/v1/namespaces/${namespace}/events`, query: {fieldSelector: `involvedObject.name=${name}`}})).items,
      deleteAll: async () => {
        const left = (await client.request<{items: Cluster[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/k8sclusters`})).items
        for (const cluster of left) await client.delete({...clustersIn(namespace), name: cluster.metadata.name}).catch(() => {})
        await eventually(async () => (await client.request<{items: Cluster[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/k8sclusters`})).items.length === 0, 30_000, 'K8sClusters gone')
      },
    }
  }

  describe('probes (no API connection: the probe alone decides the phase)', () => {
    const harness = inProcessOperator({
      spec: false, logLevel: 'debug', start: false,
      cleanup: async ({namespace}) => {
        await helpers(namespace).deleteAll().catch((error) => process.stderr.write(`[k8scluster after] ${(error as Error).message}\n`))
      },
    })
    let namespace: string
    let h: ReturnType<typeof helpers>
    const wrongToken = randomBytes(24).toString('hex')

    before(async () => {
      namespace = harness.namespace
      // A long sync interval: whatever happens sooner is the Secret watch, not the periodic probe.
      await client.create(configRef(namespace), {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {api_sync: {enabled: false, sync_interval_seconds: 300}}})
      h = helpers(namespace)
      harness.start()
    })

    it('valid token → Ready; wrong token → Unauthorized; wrong CA → Error; closed port → Unreachable; each with a reason to act on', async () => {
      await h.secret('good-token', controlPlane().token)
      await h.secret('bad-token', wrongToken)
      const closed = `https://127.0.0.1:${await freePort()}`
      const auth = (secret: string) => ({serviceAccountToken: {secretRef: {name: secret, key: 'token'}}})
      await h.create('valid', {displayName: 'Valid', apiServer: extra.server, authentication: auth('good-token'), caCertificate: ca})
      await h.create('wrong-token', {apiServer: extra.server, authentication: auth('bad-token'), caCertificate: ca})
      await h.create('wrong-ca', {apiServer: extra.server, authentication: auth('good-token'), caCertificate: otherCa})
      await h.create('closed-port', {apiServer: closed, authentication: auth('good-token'), caCertificate: ca})

      const valid = await h.phase('valid', 'Ready', 'Reachable')
      assert.equal(valid.status?.reachable, true)
      assert.match(String(valid.status?.kubernetesVersion), /^v\d+\.\d+\.\d+/)
      assert.ok(Date.parse(String(valid.status?.lastProbedAt)) > Date.now() - 120_000)
      assert.equal(valid.status?.syncStatus, 'pending', 'not registered without an API connection')

      const expectations: Array<[name: string, phase: string, reason: string, reachable: boolean, message: RegExp]> = [
        ['wrong-token', 'Unauthorized', 'CredentialsRejected', true, new RegExp(`rejected the credentials from Secret ${namespace}/bad-token \\(401\\): put a valid token`)],
        ['wrong-ca', 'Error', 'TLSVerificationFailed', false, /could not be verified with spec\.caCertificate \(\w+\): set spec\.caCertificate to the CA that signed/],
        ['closed-port', 'Unreachable', 'Unreachable', false, /Cannot reach the API server at https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\): check spec\.apiServer/],
      ]
      for (const [name, phase, reason, reachable, message] of expectations) {
        const cluster = await h.phase(name, phase, reason)
        assert.equal(cluster.status?.reachable, reachable, name)
        assert.match(String(cluster.status?.message), message, name)
        assert.ok(cluster.status?.lastProbedAt, name)
        await eventually(async () => (await h.events(name)).find((e) => e.type === 'Warning' && e.reason === reason), 10_000, `Warning ${reason} on ${name}`)
      }
      const {stdout} = await execa('kubectl', ['--kubeconfig', controlPlane().kubeconfigPath, 'get', 'k8sclusters', '-n', namespace])
      for (const [name, phase] of [['valid', 'Ready'], ['wrong-token', 'Unauthorized'], ['wrong-ca', 'Error'], ['closed-port', 'Unreachable']]) {
        assert.match(stdout, new RegExp(`^${name} +https://127\\.0\\.0\\.1:\\d+ +.*${phase} +\\S+$`, 'm'), stdout)
      }
      const status = await runCommand(['operator', 'status', '--kubeconfig', controlPlane().kubeconfigPath, '--namespace', namespace])
      assert.equal(status.error, undefined, status.error?.message)
      assert.match(status.stdout, /^K8sClusters\n-+\n {2}NAMESPACE +NAME +API SERVER +VERSION +PHASE/m)
      for (const [name, phase] of [['valid', 'Ready'], ['wrong-token', 'Unauthorized'], ['wrong-ca', 'Error'], ['closed-port', 'Unreachable']]) {
        assert.match(status.stdout, new RegExp(`^ {2}${namespace} +${name} +https://127\\.0\\.0\\.1:\\d+ +.*${phase}`, 'm'), status.stdout)
      }
    })

    it('token rotated in the Secret → Ready again without a restart (the Secret is watched)', async () => {
      await h.secret('rotating', wrongToken)
      await h.create('rotate', {apiServer: extra.server, authentication: {serviceAccountToken: {secretRef: {name: 'rotating', key: 'token'}}}, caCertificate: ca})
      await h.phase('rotate', 'Unauthorized', 'CredentialsRejected')
      await client.mergePatch({...secretsIn(namespace), name: 'rotating'}, {stringData: {token: controlPlane().token}})
      // The sync interval is 300 s: only the Secret watch can bring it back this soon.
      await h.phase('rotate', 'Ready', 'Reachable')
      // The Event is recorded beside the status write, not before it: waited for, as the Warnings above.
      await eventually(async () => (await h.events('rotate')).some((e) => e.type === 'Normal' && e.reason === 'Reachable'), 10_000, 'Normal Reachable on rotate')
    })

    it('re-probed every sync interval: the API server going away turns a Ready CR Unreachable with no change to it', async () => {
      await client.mergePatch(configRef(namespace), {spec: {api_sync: {sync_interval_seconds: 2}}})
      const before = await h.phase('valid', 'Ready')
      await eventually(async () => String((await h.get('valid'))?.status?.lastProbedAt) > String(before.status?.lastProbedAt) || undefined, 30_000, 'a later probe')
      await extra.stop()
      try {
        const down = await h.phase('valid', 'Unreachable', 'Unreachable')
        assert.equal(down.status?.kubernetesVersion, before.status?.kubernetesVersion, 'the last known version is kept')
      } finally {
        await startExtra()
      }
    })

    it('no credential in logs, Events or statuses', async () => {
      const events = JSON.stringify((await client.request<{items: unknown[]}>({path: `/api/v1/namespaces/${namespace}/events`})).items)
      const statuses = JSON.stringify((await client.request<{items: Cluster[]}>({path: `/apis/polycrate.io/v1alpha1/namespaces/${namespace}/k8sclusters`})).items.map((c) => c.status))
      assert.ok(harness.logs.length > 0)
      for (const [where, text] of [['logs', logText(harness).join('\n')], ['events', events], ['statuses', statuses]] as const) {
        assert.ok(!text.includes(controlPlane().token) && !text.includes(wrongToken), `a token in the ${where}`)
      }
    })
  })

  describe('registration in the API (one cluster per workspace)', () => {
    const validSpec = async (namespace: string, extraSpec: Record<string, unknown> = {}) => {
      await client.create(secretsIn(namespace), {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'token', namespace}, stringData: {token: controlPlane().token}})
      return {apiServer: extra.server, authentication: {serviceAccountToken: {secretRef: {name: 'token', key: 'token'}}}, caCertificate: ca, ...extraSpec}
    }

    describe('the workspace has a cluster (the local one)', () => {
      const harness = inProcessOperator({
        logLevel: 'debug',
        cleanup: async ({namespace}) => {
          await helpers(namespace).deleteAll().catch((error) => process.stderr.write(`[k8scluster after] ${(error as Error).message}\n`))
        },
      })

      it('adopts the workspace\'s cluster (the local one), sets display name and description; a second CR → Error WorkspaceHasCluster; deleting the adopter keeps the API cluster and hands the slot over', async () => {
        const {namespace, sim} = harness
        const h = helpers(namespace)
        await eventually(async () => sim.list('kubernetes/clusters').some((c) => c.name === `cluster-${namespace}`) || undefined, 30_000, 'the local cluster registered')
        const local = sim.list('kubernetes/clusters').find((c) => c.name === `cluster-${namespace}`)!
        await h.create('first', await validSpec(namespace, {displayName: 'Production Cluster', description: 'registered by a CR'}))
        const first = await eventually(async () => {
          const c = await h.get('first')
          return c?.status?.syncStatus === 'synced' && c.status.phase === 'Ready' ? c : undefined
        }, 60_000, 'first registered').catch(async (error) => {
          throw new Error(`${(error as Error).message}: ${JSON.stringify((await h.get('first'))?.status)}\n${logText(harness).filter((l) => l.includes('k8s-cluster')).slice(-5).join('\n')}`)
        })
        assert.equal(first.status?.apiID, local.id)
        assert.equal(first.status?.conditions?.find((c) => c.type === 'Registered')?.reason, 'Adopted')
        const api = sim.get('kubernetes/clusters', String(local.id))!
        assert.deepEqual([api.display_name, api.description, api.kubernetes_version], ['Production Cluster', 'registered by a CR', first.status?.kubernetesVersion])

        await h.create('second', {apiServer: extra.server, authentication: {serviceAccountToken: {secretRef: {name: 'token', key: 'token'}}}, caCertificate: ca})
        const second = await h.phase('second', 'Error')
        assert.equal(second.status?.conditions?.find((c) => c.type === 'Synced')?.reason, 'WorkspaceHasCluster')
        assert.match(String(second.status?.message), new RegExp(`one cluster per workspace, and K8sCluster ${namespace}/first holds it`))
        assert.equal(sim.list('kubernetes/clusters').filter((c) => c.workspace === local.workspace).length, 1)

        await client.delete({...clustersIn(namespace), name: 'first'})
        await eventually(async () => (await h.get('first')) === undefined, 30_000, 'first gone')
        assert.ok(sim.get('kubernetes/clusters', String(local.id)), 'an adopted cluster stays in the API')
        const handedOver = await eventually(async () => {
          const c = await h.get('second')
          return c?.status?.syncStatus === 'synced' && c.status.phase === 'Ready' ? c : undefined
        }, 60_000, 'second takes the slot')
        assert.equal(handedOver.status?.apiID, local.id)
        await h.deleteAll()
      })
    })

    describe('the workspace has no cluster', () => {
      const harness = inProcessOperator({spec: {local_cluster: {enabled: false}}, waitForCluster: false})

      it('creates the cluster (kind from the spec) when the workspace has none; deleting the CR tries to delete it and says why it could not', async () => {
        const {namespace, sim} = harness
        const h = helpers(namespace)
        await h.create('created', await validSpec(namespace, {kind: 'generic'}))
        const created = await eventually(async () => {
          const c = await h.get('created')
          return c?.status?.syncStatus === 'synced' ? c : undefined
        }, 60_000, 'created registered')
        assert.equal(created.status?.conditions?.find((c) => c.type === 'Registered')?.reason, 'Created')
        const api = sim.get('kubernetes/clusters', String(created.status?.apiID))!
        assert.deepEqual([api.kind, api.name, api.display_name], ['generic', 'created', 'created'])
        await client.delete({...clustersIn(namespace), name: 'created'})
        await eventually(async () => (await h.get('created')) === undefined, 30_000, 'created gone')
        // Agent tokens may not delete clusters: the API refuses, and the Event says what to do.
        const events = await h.events('created')
        assert.ok(events.some((e) => e.reason === 'ClusterNotDeleted' && /delete it in the dashboard/.test(e.message)), JSON.stringify(events))
        assert.ok(sim.requests.some((r) => r.method === 'DELETE' && r.path === `/api/v1/kubernetes/clusters/${String(created.status?.apiID)}/` && r.status === 403))
      })
    })
  })
})
