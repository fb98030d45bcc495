/**
 * Contract tests: the API client against the Polycrate API simulator (test/support/api-simulator), both written
 * from the Polycrate API's contract. Every resource the operator uses: create, get, list with filters and
 * pages, update, delete (202 soft-delete vs 204), 409, 404; agent side; rollout; and adopt-or-create under faults.
 */
import assert from 'node:assert/strict'
import {randomUUID} from 'node:crypto'
import {Registry, type Counter} from 'prom-client'
import {
  adoptOrCreate,
  ApiAuthError,
  ApiConflictError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiServerError,
  ApiValidationError,
  PolycrateApiClient,
  refId,
  type Filters,
  type ObjectRef,
  type PolycrateApiClientOptions,
  type Resource,
} from '../../src/api/index.js'
import {ApiSimulator} from '../support/api-simulator/index.js'

type ApiObject = {id: string; name?: string | null} & Record<string, unknown>
type AnyResource = Resource<ApiObject, Record<string, unknown>>

interface Tenant {
  org: {id: string; name: string}
  ws: {id: string; name: string}
  agentToken: string
  /** An agent (operator) token of the workspace. */
  agent: PolycrateApiClient
  /** A user token of the workspace (may delete what agents may not). */
  user: PolycrateApiClient
}

const fastRetry = {maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 20}

/** mulberry32: a small seeded PRNG, so the fault test draws the same faults on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof Error)
    return error
  }
  assert.fail('expected the promise to reject')
}

const idOf = (value: unknown): string | undefined => refId(value as ObjectRef | null | undefined)

describe('Polycrate API contract: client ↔ simulator', function () {
  this.timeout(60_000)
  let sim: ApiSimulator
  let admin: PolycrateApiClient
  let tenants = 0

  const clientFor = (token: string, options: Partial<PolycrateApiClientOptions> = {}) =>
    new PolycrateApiClient({baseUrl: sim.url, token, retry: fastRetry, timeoutMs: 5_000, ...options})

  function tenant(label: string): Tenant {
    tenants++
    const org = sim.createOrganization(`${label}-org-${tenants}`)
    const ws = sim.createWorkspace({name: `${label}-ws-${tenants}`, organizationId: org.id})
    const agentToken = sim.issueToken({kind: 'agent', workspaceId: ws.id})
    const userToken = sim.issueToken({kind: 'user', workspaceId: ws.id})
    return {org, ws, agentToken, agent: clientFor(agentToken), user: clientFor(userToken)}
  }

  before(async () => {
    sim = await ApiSimulator.start({port: 0, host: '127.0.0.1'})
    admin = clientFor(sim.issueToken({kind: 'platform-admin'}))
  })
  after(async () => {
    await sim?.close()
  })
  afterEach(() => {
    sim.faults.clear()
  })

  describe('auth and the agent side', () => {
    let t: Tenant
    before(() => {
      t = tenant('agent')
    })

    it('health report: 201 with the workspace and organization of the token, registers the agent', async () => {
      const reply = await t.agent.agent.health({reported_agent_id: 'op-abc', kind: 'operator', version: '1.4.2', status: 'healthy'})
      assert.equal(reply.status, 'success')
      assert.equal(reply.workspace_id, t.ws.id)
      assert.equal(reply.workspace_name, t.ws.name)
      assert.equal(reply.organization_id, t.org.id)
      assert.equal(reply.organization_name, t.org.name)
      assert.equal(reply.reported_agent_id, 'op-abc')

      const agents = await t.agent.agents.listAll({kind: 'operator'})
      assert.deepEqual(agents.map((a) => a.id), [reply.agent_id])
      const detail = await t.agent.agents.get(reply.agent_id)
      assert.equal(detail.kind, 'operator')
      assert.equal(detail.version, '1.4.2')
      assert.ok(detail.last_seen, 'last_seen is the heartbeat')
    })

    it('assigned endpoints: a plain array, asked for with X-Agent-ID', async () => {
      sim.clearRequests()
      await t.agent.endpoints.create({name: 'assigned-example-com', remote_address: 'assigned.example.com', kind: 'http', remote_port: 443, spec: {http: {path: '/'}}})
      const endpoints = await t.agent.agent.endpoints('op-abc')
      assert.ok(Array.isArray(endpoints))
      const assigned = endpoints.find((e) => e.name === 'assigned-example-com')
      assert.ok(assigned, 'the workspace endpoint is assigned to the agent')
      assert.equal(assigned.kind, 'http')
      assert.equal(assigned.remote_port, 443)
      assert.equal(assigned.spec?.http?.path, '/')
      assert.equal(assigned.spec?.http?.expected_status_code, 200, 'spec defaults filled in')
      await assert.rejects(t.agent.agent.endpoints('never-reported'), ApiNotFoundError)
      const logged = sim.requests.filter((r) => r.path === '/api/v1/agent/endpoints/' && r.method === 'GET')
      assert.deepEqual(logged.map((r) => r.status), [200, 404])
    })

    it('error report: 201', async () => {
      const reply = await t.agent.agent.errors({
        agent_id: 'op-abc',
        timestamp: new Date().toISOString(),
        total_errors: 1,
        error_counts: {api: 1},
        critical_errors: [],
        recent_errors: [{message: 'boom'}],
        system_info: {os: 'linux'},
      })
      assert.equal(typeof reply.status, 'string')
    })

    it('a revoked token → ApiAuthError (401, not forbidden), not retried', async () => {
      const token = sim.issueToken({kind: 'agent', workspaceId: t.ws.id})
      sim.revokeToken(token)
      sim.clearRequests()
      const error = await rejection(clientFor(token).k8sClusters.listAll())
      assert.ok(error instanceof ApiAuthError)
      assert.equal(error.status, 401)
      assert.equal(error.forbidden, false)
      assert.equal(sim.requests.length, 1)
      assert.equal(error.message.includes(token), false)
    })

    it('agents may not write read-only collections: 403 → ApiAuthError forbidden', async () => {
      const error = await rejection(t.agent.blocks.create({name: 'not-allowed'}))
      assert.ok(error instanceof ApiAuthError)
      assert.equal(error.forbidden, true)
    })
  })

  describe('CRUD for every resource the operator writes', () => {
    let t: Tenant
    let clusterId: string

    before(async () => {
      t = tenant('crud')
      const cluster = await t.agent.k8sClusters.create({name: 'crud-cluster', kind: 'generic'})
      clusterId = cluster.id
    })

    interface CrudCase {
      title: string
      resource: (c: PolycrateApiClient) => AnyResource
      collection: string
      body: () => Record<string, unknown>
      lookup: (body: Record<string, unknown>) => Filters
      patch: Record<string, unknown>
      /** 202 + is_deleted (soft) or 204. */
      soft: boolean
      /** Agent tokens may not delete these (contract table): delete with the user token, expect 403 for the agent. */
      agentMayDelete: boolean
      /** A second create with the same body answers 409. */
      conflicts: boolean
    }

    const cases: CrudCase[] = [
      {
        title: 'endpoints',
        resource: (c) => c.endpoints as unknown as AnyResource,
        collection: 'endpoints',
        body: () => ({name: 'shop-example-com', remote_address: 'shop.example.com', kind: 'http', remote_port: 443, k8s_cluster: clusterId, spec: {http: {path: '/healthz', tls: true, expected_status_code: 200}}}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId}),
        patch: {remote_port: 8443},
        soft: true,
        agentMayDelete: true,
        conflicts: true,
      },
      {
        title: 'kubernetes/apps',
        resource: (c) => c.k8sApps as unknown as AnyResource,
        collection: 'kubernetes/apps',
        body: () => ({name: 'shop', namespace: 'shop', kind: 'helm', k8s_cluster: clusterId, installed_version: '1.0.0'}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId}),
        patch: {installed_version: '1.1.0'},
        soft: true,
        agentMayDelete: false,
        conflicts: true,
      },
      {
        title: 'kubernetes/volumes',
        resource: (c) => c.k8sVolumes as unknown as AnyResource,
        collection: 'kubernetes/volumes',
        body: () => ({name: 'pvc-0d1e', k8s_cluster: clusterId, provider_object_name: 'pvc-0d1e', capacity_bytes: 1_073_741_824, capacity_string: '1Gi', phase: 'Bound', pvc_name: 'data', pvc_namespace: 'shop'}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId}),
        patch: {phase: 'Released'},
        soft: false,
        agentMayDelete: true,
        conflicts: false,
      },
      {
        title: 'hosts',
        resource: (c) => c.hosts as unknown as AnyResource,
        collection: 'hosts',
        body: () => ({name: 'node-1', hostname: 'node-1.cluster.local', role: 'k8s-worker', k8s_cluster: clusterId}),
        lookup: (b) => ({name_exact: b.name as string}),
        patch: {role: 'k8s-controlplane'},
        soft: true,
        agentMayDelete: true,
        conflicts: false,
      },
      {
        title: 'backups/backups',
        resource: (c) => c.backups as unknown as AnyResource,
        collection: 'backups/backups',
        body: () => ({name: 'daily-20260106', k8s_cluster: clusterId, provider: 'velero', kind: 'cluster', source_namespace: 'velero', status: 'running'}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId, provider: 'velero'}),
        patch: {status: 'completed'},
        soft: false,
        agentMayDelete: true,
        conflicts: true,
      },
      {
        title: 'backups/backup-schedules',
        resource: (c) => c.backupSchedules as unknown as AnyResource,
        collection: 'backups/backup-schedules',
        body: () => ({name: 'daily', k8s_cluster: clusterId, provider: 'velero', source_namespace: 'velero', schedule_cron: '0 3 * * *', status: 'active'}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId}),
        patch: {paused: true, status: 'paused'},
        soft: false,
        agentMayDelete: true,
        conflicts: true,
      },
      {
        title: 'certificates',
        resource: (c) => c.certificates as unknown as AnyResource,
        collection: 'certificates',
        body: () => ({name: 'shop-tls', secret_name: 'shop-tls', namespace: 'shop', k8s_cluster: clusterId, dns_names: ['shop.example.com'], issuer_name: 'letsencrypt', issuer_kind: 'clusterissuer', is_ready: false}),
        lookup: (b) => ({name_exact: b.name as string, k8s_cluster: clusterId}),
        patch: {is_ready: true, certificate_status: 'ready'},
        soft: false,
        agentMayDelete: true,
        conflicts: true,
      },
      {
        title: 's3/buckets',
        resource: (c) => c.s3Buckets as unknown as AnyResource,
        collection: 's3/buckets',
        body: () => ({name: 'shop-assets', region: '7d3f0c6e-1111-4c1b-9f55-0b5f3c1e2d4a'}),
        lookup: (b) => ({name_exact: b.name as string}),
        patch: {labels: {team: 'shop'}},
        soft: false,
        agentMayDelete: true,
        conflicts: true,
      },
      {
        title: 'loadbalancers/instances',
        resource: (c) => c.loadBalancers as unknown as AnyResource,
        collection: 'loadbalancers/instances',
        body: () => ({workspace: t.ws.id, organization: t.org.id, display_name: 'shop-lb', ports: [{port: 443, name: 'https', protocol: 'tcp', target_port: 30443}]}),
        lookup: () => ({workspaces: t.ws.id}),
        patch: {display_name: 'shop-lb-2'},
        soft: false,
        agentMayDelete: true,
        conflicts: false,
      },
    ]

    for (const c of cases) {
      describe(c.title, () => {
        let created: ApiObject

        it('create → 201, get, update (PATCH), replace (PUT)', async () => {
          const resource = c.resource(t.agent)
          const body = c.body()
          created = await resource.create(body)
          assert.equal(typeof created.id, 'string')
          if (typeof body.name === 'string') assert.equal(created.name, body.name)
          assert.equal(idOf(created.workspace), t.ws.id, 'an agent token fills in the workspace')
          assert.ok(sim.get(c.collection, created.id), 'the simulator stored it')

          const got = await resource.get(created.id)
          assert.equal(got.id, created.id)

          const patched = await resource.update(created.id, c.patch)
          for (const [key, value] of Object.entries(c.patch)) assert.deepEqual(patched[key], value, key)
          assert.deepEqual(sim.get(c.collection, created.id)?.[Object.keys(c.patch)[0] ?? ''], Object.values(c.patch)[0])

          const replaced = await resource.replace(created.id, {...body, ...c.patch})
          assert.equal(replaced.id, created.id)
        })

        it('list with the natural-key filters, findOne, and adoptOrCreate adopts it', async () => {
          const resource = c.resource(t.agent)
          const body = c.body()
          const found = await resource.listAll(c.lookup(body))
          assert.deepEqual(found.map((o) => o.id), [created.id])
          assert.equal((await resource.findOne(c.lookup(body)))?.id, created.id)
          assert.equal(await resource.findOne({name_exact: 'no-such-object-anywhere'}), undefined)
          const adopted = await adoptOrCreate(resource, {lookup: c.lookup(body), body})
          assert.deepEqual({id: adopted.object.id, created: adopted.created}, {id: created.id, created: false})
        })

        if (c.conflicts) {
          it('a second create with the same natural key → 409 ApiConflictError', async () => {
            const error = await rejection(c.resource(t.agent).create(c.body()))
            assert.ok(error instanceof ApiConflictError, String(error))
            assert.equal(error.status, 409)
            assert.notEqual(error.code, '')
          })
        }

        it('get of an unknown id → 404 ApiNotFoundError', async () => {
          const error = await rejection(c.resource(t.agent).get(randomUUID()))
          assert.ok(error instanceof ApiNotFoundError)
        })

        it(`delete → ${c.soft ? '202 soft-deleted' : '204 deleted'}, then not-found`, async () => {
          if (!c.agentMayDelete) {
            const error = await rejection(c.resource(t.agent).delete(created.id))
            assert.ok(error instanceof ApiAuthError && error.forbidden, String(error))
          }
          const resource = c.resource(c.agentMayDelete ? t.agent : t.user)
          assert.equal(await resource.delete(created.id), c.soft ? 'soft-deleted' : 'deleted')
          if (c.soft) {
            // "poll GET /{id}/ until is_deleted=true and then 404": either answer is fine right after the 202.
            try {
              const after = await resource.get(created.id)
              assert.equal(after.is_deleted, true)
            } catch (error) {
              assert.ok(error instanceof ApiNotFoundError)
            }
          } else {
            await assert.rejects(resource.get(created.id), ApiNotFoundError)
          }
          const again = await resource.delete(created.id)
          assert.ok(c.soft ? ['soft-deleted', 'not-found'].includes(again) : again === 'not-found', again)
          assert.equal(await resource.delete(randomUUID()), 'not-found')
          assert.deepEqual((await resource.listAll(c.lookup(c.body()))).map((o) => o.id), [], 'a deleted object is not listed')
        })
      })
    }

    it('kubernetes/clusters: one per workspace (409), found with ?workspaces=, agents may not delete', async () => {
      const error = await rejection(t.agent.k8sClusters.create({name: 'second', kind: 'generic'}))
      assert.ok(error instanceof ApiConflictError)
      assert.equal(error.code, 'unique_k8s_cluster_per_workspace')
      const found = await t.agent.k8sClusters.listAll({workspaces: t.ws.id})
      assert.deepEqual(found.map((c) => c.id), [clusterId])
      const patched = await t.agent.k8sClusters.update(clusterId, {kubernetes_version: 'v1.35.0'})
      assert.equal(patched.kubernetes_version, 'v1.35.0')
      const denied = await rejection(t.agent.k8sClusters.delete(clusterId))
      assert.ok(denied instanceof ApiAuthError && denied.forbidden)
    })

    it('a bad body → 400 ApiValidationError naming the field', async () => {
      const error = await rejection(t.agent.hosts.create({name: 'no-hostname'} as never))
      assert.ok(error instanceof ApiValidationError)
      assert.equal(error.attr, 'hostname')
      assert.ok(error.fieldErrors.hostname?.length)
      const badName = await rejection(t.agent.backups.create({name: 'Not_A_Slug', k8s_cluster: clusterId}))
      assert.ok(badName instanceof ApiValidationError)
      assert.equal(badName.attr, 'name')
    })

    it('certificates.sync creates or updates from the raw cert-manager CR', async () => {
      const reply = await t.agent.certificates.sync({
        cert_data: {apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: {name: 'synced-tls', namespace: 'shop'}, spec: {secretName: 'synced-tls', dnsNames: ['synced.example.com']}},
        k8s_cluster_id: clusterId,
        organization_id: t.org.id,
        workspace_id: t.ws.id,
      })
      assert.ok(reply.cert_data)
    })

    it('s3Buckets.credentials returns access and secret keys; 404 for an unknown bucket', async () => {
      const bucket = await t.agent.s3Buckets.create({name: 'creds-bucket'})
      const creds = await t.agent.s3Buckets.credentials(bucket.id)
      assert.equal(creds.data.bucket_id, bucket.id)
      assert.ok(creds.data.credentials.length > 0)
      assert.equal(typeof creds.data.credentials[0]?.access_key, 'string')
      assert.equal(typeof creds.data.credentials[0]?.secret_key, 'string')
      await assert.rejects(t.agent.s3Buckets.credentials(randomUUID()), ApiNotFoundError)
    })

    it('lists across pages following `next` (page_size 3, 7 objects → 3 requests)', async () => {
      for (let i = 0; i < 7; i++) await t.agent.hosts.create({name: `paged-${i}`, hostname: `paged-${i}.local`, role: 'generic'})
      sim.clearRequests()
      const all = await t.agent.hosts.listAll({search: 'paged-', page_size: 3})
      assert.deepEqual(all.map((h) => h.name).sort(), ['paged-0', 'paged-1', 'paged-2', 'paged-3', 'paged-4', 'paged-5', 'paged-6'])
      const gets = sim.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/hosts/')
      assert.equal(gets.length, 3)
      const first = await t.agent.hosts.listPage({search: 'paged-', page_size: 3, page: 3})
      assert.equal(first.count, 7)
      assert.equal(first.results.length, 1)
      assert.equal(first.next ?? null, null)
    })

    it('a call signal aborted between pages ends the listing: no further page request', async () => {
      for (let i = 0; i < 5; i++) await t.agent.hosts.create({name: `cancel-${i}`, hostname: `cancel-${i}.local`, role: 'generic'})
      sim.clearRequests()
      const controller = new AbortController()
      const seen: string[] = []
      await assert.rejects((async () => {
        for await (const h of t.agent.hosts.list({search: 'cancel-', page_size: 2}, {signal: controller.signal})) {
          seen.push(h.name)
          if (seen.length === 2) controller.abort()
        }
      })(), (error: unknown) => error instanceof ApiNetworkError && error.cause === 'aborted')
      assert.equal(seen.length, 2)
      assert.equal(sim.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/hosts/').length, 1)
    })

    it('adoptOrCreate with an aborted signal sends nothing and creates nothing', async () => {
      sim.clearRequests()
      await assert.rejects(
        adoptOrCreate(t.agent.hosts, {lookup: {name_exact: 'never-created'}, body: {name: 'never-created', hostname: 'never.local'}, signal: AbortSignal.abort()}),
        (error: unknown) => error instanceof ApiNetworkError && error.cause === 'aborted',
      )
      assert.equal(sim.requests.length, 0)
      assert.equal(sim.list('hosts').filter((o) => o.name === 'never-created').length, 0)
    })

    it('multi-valued filters are repeated query parameters (kind=http&kind=tcp)', async () => {
      await t.agent.endpoints.create({name: 'multi-http', remote_address: 'm.example.com', kind: 'http'})
      await t.agent.endpoints.create({name: 'multi-tcp', remote_address: 'm.example.com', kind: 'tcp', remote_port: 5432})
      await t.agent.endpoints.create({name: 'multi-icmp', remote_address: 'm.example.com', kind: 'icmp'})
      const found = await t.agent.endpoints.listAll({kind: ['http', 'tcp'], remote_address: 'm.example.com'})
      assert.deepEqual(found.map((e) => e.name).sort(), ['multi-http', 'multi-tcp'])
    })

    it('an object deleted behind the operator\'s back → 404 on get, not-found on delete', async () => {
      const host = await t.agent.hosts.create({name: 'vanishing', hostname: 'vanishing.local'})
      sim.deleteBehindBack('hosts', host.id)
      await assert.rejects(t.agent.hosts.get(host.id), ApiNotFoundError)
      assert.equal(await t.agent.hosts.delete(host.id), 'not-found')
    })
  })

  describe('read-side resources', () => {
    let t: Tenant
    before(() => {
      t = tenant('read')
    })

    it('artifacts: listed for agents with filters, read-only', async () => {
      const inserted = sim.insert('artifacts', {name: 'polycrate-operator', kind: 'oci', version: '1.4.2', app_version: '1.4.2'})
      sim.insert('artifacts', {name: 'other', kind: 'helm', version: '0.1.0'})
      const found = await t.agent.artifacts.listAll({kind: 'oci', version: '1.4.2'})
      assert.ok(found.some((a) => a.id === inserted.id))
      assert.ok(found.every((a) => a.kind === 'oci'))
      assert.equal((await t.agent.artifacts.get(String(inserted.id))).name, 'polycrate-operator')
      assert.equal('create' in t.agent.artifacts, false)
    })

    it('workspaces: the agent sees its own workspace and its maintenance-window status', async () => {
      const list = await t.agent.workspaces.listAll()
      assert.deepEqual(list.map((w) => w.id), [t.ws.id])
      const ws = await t.agent.workspaces.get(t.ws.id)
      assert.equal(ws.name, t.ws.name)
    })

    it('workspaces.maintenanceWindowStatus (GET /workspaces/{id}/maintenance-window-status/)', async () => {
      const status = await t.agent.workspaces.maintenanceWindowStatus(t.ws.id)
      assert.equal(typeof status.in_maintenance_window, 'boolean')
    })

    it('blocks and maintenances: created by an admin, read by the agent', async () => {
      const blockObject = await admin.blocks.create({name: 'polycrate-operator', version: '1.4.2', workspace: t.ws.id, organization: t.org.id})
      const blocks = await t.agent.blocks.listAll({name_exact: 'polycrate-operator', workspaces: t.ws.id})
      assert.deepEqual(blocks.map((b) => b.id), [blockObject.id])

      const start = new Date(Date.now() - 60_000).toISOString()
      const end = new Date(Date.now() + 3_600_000).toISOString()
      const m = await admin.maintenances.create({name: 'kernel-upgrade', start, end, affected_workspace: t.ws.id, organization: t.org.id})
      const seen = await t.agent.maintenances.listAll({affected_workspace: t.ws.id})
      assert.ok(seen.some((x) => x.id === m.id))
      assert.equal(await admin.maintenances.delete(m.id), 'deleted')
    })

    it('DNS: zones resolve by longest match (404 → undefined); records with composite ids', async () => {
      const zone = await admin.dnsZones.create({name: 'example.com', kind: 'external', provider: 'cloudflare', primary_zone: true, organization: t.org.id})
      const sub = await admin.dnsZones.create({name: 'apps.example.com', kind: 'internal', organization: t.org.id})
      assert.equal((await t.agent.dnsZones.resolve('_acme-challenge.shop.apps.example.com'))?.id, sub.id)
      assert.equal((await t.agent.dnsZones.resolve('www.example.com'))?.id, zone.id)
      assert.equal(await t.agent.dnsZones.resolve('nothing.invalid'), undefined)

      const record = await t.agent.dnsRecords.create({name: '_acme-challenge.www', dns_zone: zone.id, type: 'TXT', content: '"token-value"', ttl: 60})
      assert.ok(record.id.startsWith(`${zone.id}::`), `external-zone record id is <zone>::<provider_id>: ${record.id}`)
      const got = await t.agent.dnsRecords.get(record.id)
      assert.equal(got.content, '"token-value"')
      const listed = await t.agent.dnsRecords.listAll({dns_zone: zone.id, type: 'TXT'})
      assert.ok(listed.some((r) => r.id === record.id))
      const patched = await t.agent.dnsRecords.update(record.id, {content: '"new"'})
      assert.equal(patched.content, '"new"')
      assert.equal(await t.agent.dnsRecords.delete(record.id), 'deleted')
      assert.equal(await t.agent.dnsRecords.delete(record.id), 'not-found')
    })

    it('SystemConfig: extra keys kept; agents may not patch it', async () => {
      const patched = await admin.systemConfig.patch({OPERATOR_BLOCK_VERSION: '2.0.0', OPERATOR_ROLLOUT_PERCENTAGE: 100, MY_EXTRA_KEY: 'kept'})
      assert.equal(patched.OPERATOR_BLOCK_VERSION, '2.0.0')
      assert.equal(patched.MY_EXTRA_KEY, 'kept')
      const config = await admin.systemConfig.get()
      assert.equal(config.MY_EXTRA_KEY, 'kept')
      assert.equal(sim.systemConfig.OPERATOR_BLOCK_VERSION, '2.0.0')
      const error = await rejection(t.agent.systemConfig.patch({OPERATOR_BLOCK_VERSION: '9.9.9'}))
      assert.ok(error instanceof ApiAuthError && error.forbidden)
    })
  })

  describe('operator rollout', () => {
    let t: Tenant
    let clusterId: string

    before(async () => {
      t = tenant('rollout')
      clusterId = (await t.agent.k8sClusters.create({name: 'rollout-cluster', kind: 'generic'})).id
      await t.agent.k8sApps.create({name: 'polycrate-operator', namespace: 'polycrate', k8s_cluster: clusterId, installed_version: '1.0.0'})
      await t.agent.agent.health({reported_agent_id: 'rollout-op', kind: 'operator', version: '1.0.0'})
      await admin.systemConfig.patch({OPERATOR_BLOCK_VERSION: '1.1.0', OPERATOR_ROLLOUT_PERCENTAGE: 100})
    })

    it('status: the dashboard with our cluster, validated against rolloutDashboard', async () => {
      const dashboard = await admin.operatorRollout.status()
      assert.equal(dashboard.desired_version, '1.1.0')
      const row = dashboard.clusters.find((c) => c.id === clusterId)
      assert.ok(row)
      assert.equal(row.installed_version, '1.0.0')
      assert.equal(row.workspace.id, t.ws.id)
      assert.equal(row.up_to_date, false)
      assert.ok(dashboard.fleet.some((f) => f.version === '1.0.0' && f.count >= 1))
    })

    it('pause, resume and force return the cluster row', async () => {
      const paused = await admin.operatorRollout.pause(clusterId)
      assert.equal(paused.id, clusterId)
      assert.equal(paused.paused, true)
      assert.equal(paused.in_current_batch, false)
      const resumed = await admin.operatorRollout.resume(clusterId)
      assert.equal(resumed.paused, false)
      const forced = await admin.operatorRollout.force(clusterId)
      assert.equal(forced.forced, true)
      assert.equal(forced.in_current_batch, true)
      await assert.rejects(admin.operatorRollout.force(randomUUID()), ApiNotFoundError)
    })

    it('as an agent: 403 → ApiAuthError forbidden, not retried', async () => {
      sim.clearRequests()
      for (const call of [() => t.agent.operatorRollout.status(), () => t.agent.operatorRollout.force(clusterId), () => t.agent.operatorRollout.pause(clusterId), () => t.agent.operatorRollout.resume(clusterId)]) {
        const error = await rejection(call())
        assert.ok(error instanceof ApiAuthError, String(error))
        assert.equal(error.forbidden, true)
        assert.equal(error.status, 403)
      }
      assert.equal(sim.requests.length, 4)
    })
  })

  describe('faults: adopt-or-create under ≈50 % failing requests', () => {
    it('completes, and leaves exactly one cluster (and one app per name) for the workspace', async function () {
      this.timeout(120_000)
      const t = tenant('faults')
      const registry = new Registry()
      // Enough attempts that 0.5^n is negligible; tiny delays keep the test fast.
      const c = clientFor(t.agentToken, {registry, retry: {maxAttempts: 25, baseDelayMs: 1, maxDelayMs: 5}})
      sim.faults.set({errorRate: 0.3, rateLimitRate: 0.2, retryAfterSeconds: 0, dropRate: 0.05, errorStatuses: [500, 502, 503, 504], random: seeded(20260106)})
      // A create whose answer leaves open whether it was applied (500, 502, 504, a dropped connection) is not resent
      // by the client; the reconcile fails and its work queue runs it again, through adoptOrCreate's lookup first.
      let redone = 0
      const reconcile = async <T>(attempt: () => Promise<T>): Promise<T> => {
        for (let run = 1; ; run++) {
          try {
            return await attempt()
          } catch (error) {
            if (!(error instanceof ApiServerError || error instanceof ApiNetworkError) || run === 20) throw error
            redone++
          }
        }
      }

      const clusterResults = []
      // Several reconciles, two racing at a time, as if the status write after each create had been lost.
      for (let round = 0; round < 4; round++) {
        clusterResults.push(...(await Promise.all([0, 1].map(() => reconcile(() =>
          adoptOrCreate(c.k8sClusters, {lookup: {workspaces: t.ws.id}, body: {name: 'faulty-cluster', kind: 'generic'}, conflictLookupDelayMs: 5}))))))
      }
      const clusterIds = new Set(clusterResults.map((r) => r.object.id))
      assert.equal(clusterIds.size, 1, 'every call got the same cluster')
      assert.equal(clusterResults.filter((r) => r.created).length, 1, 'created exactly once')
      const clusterId = [...clusterIds][0] ?? ''

      const appNames = ['polycrate-operator', 'shop', 'cert-manager']
      const appResults = await Promise.all(appNames.flatMap((name) => [0, 1, 2].map(() => reconcile(() =>
        adoptOrCreate(c.k8sApps, {lookup: {name_exact: name, k8s_cluster: clusterId}, body: {name, k8s_cluster: clusterId, namespace: name}, conflictLookupDelayMs: 5})))))
      sim.faults.clear()

      const clusters = sim.list('kubernetes/clusters').filter((o) => idOf(o.workspace) === t.ws.id && o.is_deleted !== true)
      assert.equal(clusters.length, 1, `clusters of the workspace: ${clusters.length}`)
      for (const name of appNames) {
        const apps = sim.list('kubernetes/apps').filter((o) => o.name === name && idOf(o.k8s_cluster) === clusterId && o.is_deleted !== true)
        assert.equal(apps.length, 1, `apps named ${name}: ${apps.length}`)
        assert.equal(new Set(appResults.filter((r) => r.object.name === name).map((r) => r.object.id)).size, 1)
      }

      // The faults really happened: the client saw 429s, 5xx and dropped connections, and retried them.
      const counter = await (registry.getSingleMetric('polycrate_api_requests_total') as Counter | undefined)?.get()
      const byCode = new Map<string, number>()
      for (const v of counter?.values ?? []) byCode.set(String(v.labels.code), (byCode.get(String(v.labels.code)) ?? 0) + v.value)
      const failed = [...byCode].filter(([code]) => code === '429' || code === 'network' || code.startsWith('5')).reduce((sum, [, n]) => sum + n, 0)
      const total = [...byCode.values()].reduce((sum, n) => sum + n, 0)
      assert.ok(byCode.get('429'), 'saw 429s')
      assert.ok(failed / total > 0.25, `failed share ${failed}/${total}`)
      assert.ok(redone > 0, 'some creates ended without knowing whether they were applied, and were redone by the reconcile')
    })
  })
})
