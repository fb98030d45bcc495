/** The Polycrate API simulator over plain fetch: auth, CRUD, filters, pagination, conflicts, deletes, agents, S3, DNS, log. */
import assert from 'node:assert/strict'
import {ApiSimulator} from '../../support/api-simulator/index.js'

type Obj = Record<string, unknown>
interface ErrorBody {
  type: string
  errors: Array<{code: string; detail: string; attr: string | null}>
}
interface Page {
  count: number
  next: string | null
  previous: string | null
  results: Obj[]
}
interface Answer<T> {
  status: number
  body: T
  headers: Headers
}

/** One request; `path` is relative to the simulator or an absolute URL (next/previous links). */
async function request<T = Obj>(
  sim: ApiSimulator,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const response = await fetch(path.startsWith('http') ? path : `${sim.url}${path}`, {
    method,
    headers: {
      ...(token ? {authorization: `Bearer ${token}`} : {}),
      ...(body === undefined ? {} : {'content-type': 'application/json'}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return {status: response.status, body: (text ? JSON.parse(text) : undefined) as T, headers: response.headers}
}

function assertError(answer: Answer<unknown>, status: number, code: string, attr: string | null = null): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body))
  const body = answer.body as ErrorBody
  assert.equal(body.type, status === 400 && code !== 'parse_error' ? 'validation_error' : status >= 500 ? 'server_error' : 'client_error')
  assert.equal(body.errors.length >= 1, true)
  assert.equal(body.errors[0]?.code, code)
  assert.equal(body.errors[0]?.attr, attr)
  assert.equal(typeof body.errors[0]?.detail, 'string')
}

interface World {
  sim: ApiSimulator
  org: {id: string; name: string}
  ws: {id: string; name: string}
  otherWs: {id: string; name: string}
  agent: string
  otherAgent: string
  admin: string
  user: string
  cluster: Obj
}

async function world(options: Parameters<typeof ApiSimulator.start>[0] = {}): Promise<World> {
  const sim = await ApiSimulator.start(options)
  const org = sim.createOrganization('Acme Corp')
  const ws = sim.createWorkspace({name: 'prod', organizationId: org.id})
  const otherOrg = sim.createOrganization('Other')
  const otherWs = sim.createWorkspace({name: 'elsewhere', organizationId: otherOrg.id})
  const cluster = sim.insert('kubernetes/clusters', {name: 'prod-cluster', kind: 'generic', workspace: ws.id})
  return {
    sim,
    org,
    ws,
    otherWs,
    agent: sim.issueToken({kind: 'agent', workspaceId: ws.id}),
    otherAgent: sim.issueToken({kind: 'agent', workspaceId: otherWs.id}),
    admin: sim.issueToken({kind: 'platform-admin'}),
    user: sim.issueToken({kind: 'user', organizationId: org.id}),
    cluster,
  }
}

describe('ApiSimulator', () => {
  let w: World
  beforeEach(async () => {
    w = await world()
  })
  afterEach(async () => {
    await w.sim.close()
  })

  describe('auth', () => {
    it('answers 401 not_authenticated without a token and authentication_failed for unknown, revoked or non-Bearer ones', async () => {
      assertError(await request(w.sim, undefined, 'GET', '/api/v1/endpoints/'), 401, 'not_authenticated')
      const unknown = await request<ErrorBody>(w.sim, 'nope', 'GET', '/api/v1/endpoints/')
      assert.deepEqual(unknown.body, {
        type: 'client_error',
        errors: [{code: 'authentication_failed', detail: 'Invalid token.', attr: null}],
      })
      assert.equal(unknown.status, 401)
      assert.match(unknown.headers.get('www-authenticate') ?? '', /^Bearer/)

      const token = w.sim.issueToken({kind: 'agent', workspaceId: w.ws.id})
      assert.equal((await request(w.sim, token, 'GET', '/api/v1/endpoints/')).status, 200)
      w.sim.revokeToken(token)
      assertError(await request(w.sim, token, 'GET', '/api/v1/endpoints/'), 401, 'authentication_failed')
      const basic = await request(w.sim, undefined, 'GET', '/api/v1/endpoints/', undefined, {authorization: 'Basic dTpw'})
      assertError(basic, 401, 'authentication_failed')
    })

    it('keeps the operator rollout to platform admins (403 with the error shape otherwise)', async () => {
      for (const token of [w.agent, w.user]) {
        const answer = await request<ErrorBody>(w.sim, token, 'GET', '/api/v1/operator-rollout/')
        assertError(answer, 403, 'permission_denied')
      }
      assert.equal((await request(w.sim, w.admin, 'GET', '/api/v1/operator-rollout/')).status, 200)
      assertError(await request(w.sim, w.agent, 'PATCH', '/api/v1/system/config/', {OPERATOR_BLOCK_VERSION: 'x'}), 403, 'permission_denied')
    })

    it('applies the agent-token permission table: no DELETE of K8sApps/K8sClusters, artifacts read-only', async () => {
      const app = await request(w.sim, w.agent, 'POST', '/api/v1/kubernetes/apps/', {name: 'grafana', k8s_cluster: w.cluster.id})
      assert.equal(app.status, 201)
      assertError(await request(w.sim, w.agent, 'DELETE', `/api/v1/kubernetes/apps/${String(app.body.id)}/`), 403, 'permission_denied')
      assertError(await request(w.sim, w.agent, 'DELETE', `/api/v1/kubernetes/clusters/${String(w.cluster.id)}/`), 403, 'permission_denied')
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/artifacts/', {name: 'polycrate-cli'}), 403, 'permission_denied')

      w.sim.insert('artifacts', {name: 'polycrate-cli', version: '0.34.0', kind: 'polycrate'})
      const artifacts = await request<Page>(w.sim, w.otherAgent, 'GET', '/api/v1/artifacts/')
      assert.equal(artifacts.body.count, 1, 'artifacts are global')
      assert.equal((await request(w.sim, w.user, 'DELETE', `/api/v1/kubernetes/apps/${String(app.body.id)}/`)).status, 202)
    })

    it('isolates workspaces: an agent token neither lists nor reads another workspace’s objects', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'mine', remote_address: 'a.example.com'})
      assert.equal(created.status, 201)
      assert.equal((await request<Page>(w.sim, w.otherAgent, 'GET', '/api/v1/endpoints/')).body.count, 0)
      assertError(await request(w.sim, w.otherAgent, 'GET', `/api/v1/endpoints/${String(created.body.id)}/`), 404, 'not_found')
      assert.equal((await request<Page>(w.sim, w.admin, 'GET', '/api/v1/endpoints/')).body.count, 1)
      const workspaces = await request<Page>(w.sim, w.agent, 'GET', '/api/v1/workspaces/')
      assert.deepEqual(workspaces.body.results.map((workspace) => workspace.id), [w.ws.id])
    })
  })

  describe('create, read, list', () => {
    it('fills id, timestamps, workspace and organization from an agent token on create', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {
        name: 'app-example-com',
        remote_address: 'app.example.com',
        remote_port: 443,
        kind: 'http',
        workspace: w.otherWs.id, // ignored: the token decides
        spec: {http: {path: '/healthz', expected_status_code: 200}},
      })
      assert.equal(created.status, 201)
      assert.match(String(created.body.id), /^[0-9a-f-]{36}$/)
      assert.equal(created.body.workspace, w.ws.id)
      assert.equal(created.body.organization, w.org.id)
      assert.equal(created.body.is_deleted, false)
      assert.equal(typeof created.body.created_at, 'string')
      assert.equal(created.body.url, `${w.sim.url}/api/v1/endpoints/${String(created.body.id)}/`)
      const read = await request(w.sim, w.agent, 'GET', `/api/v1/endpoints/${String(created.body.id)}/`)
      assert.equal(read.status, 200)
      assert.deepEqual(read.body.spec, {http: {path: '/healthz', expected_status_code: 200}})
      assert.equal(w.sim.get('endpoints', String(created.body.id))?.remote_port, 443)
    })

    it('answers 400 validation errors naming the field, and 404 for unknown ids', async () => {
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'x'}), 400, 'required', 'remote_address')
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/kubernetes/clusters/', {name: 'c'}), 400, 'required', 'kind')
      assertError(
        await request(w.sim, w.agent, 'POST', '/api/v1/backups/backups/', {name: 'Not_A_Slug', k8s_cluster: w.cluster.id}),
        400,
        'invalid',
        'name',
      )
      assertError(
        await request(w.sim, w.agent, 'POST', '/api/v1/certificates/', {name: 'c', secret_name: 's', namespace: 'n', k8s_cluster: crypto.randomUUID()}),
        400,
        'does_not_exist',
        'k8s_cluster',
      )
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/hosts/', {name: 'h', hostname: 'h', kind: 'cloud'}), 400, 'invalid_choice', 'kind')
      const parse = await fetch(`${w.sim.url}/api/v1/endpoints/`, {method: 'POST', headers: {authorization: `Bearer ${w.agent}`}, body: '{nope'})
      assert.equal(parse.status, 400)
      assertError(await request(w.sim, w.agent, 'GET', `/api/v1/endpoints/${crypto.randomUUID()}/`), 404, 'not_found')
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/no-such-thing/'), 404, 'not_found')
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/endpoints'), 404, 'not_found')
      assertError(await request(w.sim, w.agent, 'PUT', '/api/v1/endpoints/'), 405, 'method_not_allowed')
    })

    it('filters lists by name_exact, workspaces, organizations, kind, search, archived and resource filters', async () => {
      const other = w.sim.insert('kubernetes/clusters', {name: 'other-cluster', kind: 'generic', workspace: w.otherWs.id})
      const app = w.sim.insert('kubernetes/apps', {name: 'web', k8s_cluster: w.cluster.id})
      w.sim.insert('endpoints', {name: 'a', remote_address: 'a.example.com', remote_port: 443, kind: 'http', k8s_cluster: w.cluster.id, k8s_app: app.id, workspace: w.ws.id})
      w.sim.insert('endpoints', {name: 'b', remote_address: 'b.example.com', remote_port: 80, kind: 'http', k8s_cluster: w.cluster.id, workspace: w.ws.id})
      w.sim.insert('endpoints', {name: 'c', remote_address: '10.0.0.1', remote_port: 53, kind: 'dns', k8s_cluster: other.id, workspace: w.otherWs.id})
      w.sim.insert('endpoints', {name: 'old', remote_address: 'old.example.com', kind: 'tcp', workspace: w.ws.id, archived: true})
      assert.equal(w.sim.get('endpoints', String(w.sim.list('endpoints')[0]?.id))?.organization, w.org.id, 'organization derived from workspace')

      const names = async (query: string, token = w.admin) =>
        (await request<Page>(w.sim, token, 'GET', `/api/v1/endpoints/?${query}`)).body.results.map((endpoint) => endpoint.name)
      assert.deepEqual(await names('name_exact=a'), ['a'])
      assert.deepEqual(await names(`workspaces=${w.ws.id}`), ['a', 'b'])
      assert.deepEqual(await names(`workspaces=${w.ws.id}&workspaces=${w.otherWs.id}`), ['a', 'b', 'c'])
      assert.deepEqual(await names(`organizations=${w.org.id}`), ['a', 'b'])
      assert.deepEqual(await names('kind=dns'), ['c'])
      assert.deepEqual(await names('kind=dns,http'), ['a', 'b', 'c'])
      assert.deepEqual(await names('search=B.EXAMPLE'), ['b'])
      assert.deepEqual(await names('archived=true'), ['old'])
      assert.deepEqual(await names(`k8s_cluster=${String(w.cluster.id)}`), ['a', 'b'])
      assert.deepEqual(await names(`k8s_app=${app.id}`), ['a'])
      assert.deepEqual(await names('remote_address=b.example.com&remote_port=80'), ['b'])
      assert.deepEqual(await names('remote_port=443'), ['a'])
      assert.deepEqual(await names('ordering=-name'), ['c', 'b', 'a'])
      assert.deepEqual(await names('unknown_filter=1'), ['a', 'b', 'c'], 'unknown parameters are ignored')

      const clusters = await request<Page>(w.sim, w.admin, 'GET', `/api/v1/kubernetes/clusters/?workspaces=${w.ws.id}`)
      assert.deepEqual(clusters.body.results.map((cluster) => cluster.id), [w.cluster.id])
      assert.deepEqual((clusters.body.results[0]?.kubernetes_apps as Obj[]).map((entry) => entry.name), ['web'])
    })

    it('answers the K8sApp alias /api/v1/k8sapps/?name= and the apps filter k8s_cluster', async () => {
      const other = w.sim.insert('kubernetes/clusters', {name: 'b', kind: 'generic', workspace: w.otherWs.id})
      w.sim.insert('kubernetes/apps', {name: 'polycrate-operator', k8s_cluster: w.cluster.id, installed_version: '0.35.0'})
      w.sim.insert('kubernetes/apps', {name: 'polycrate-operator', k8s_cluster: other.id, installed_version: '0.34.0'})
      w.sim.insert('kubernetes/apps', {name: 'grafana', k8s_cluster: w.cluster.id})
      const alias = await request<Page>(w.sim, w.admin, 'GET', '/api/v1/k8sapps/?name=polycrate-operator')
      assert.deepEqual(alias.body.results.map((app) => app.installed_version).sort(), ['0.34.0', '0.35.0'])
      const perCluster = await request<Page>(w.sim, w.agent, 'GET', `/api/v1/kubernetes/apps/?k8s_cluster=${String(w.cluster.id)}&name_exact=polycrate-operator`)
      assert.deepEqual(perCluster.body.results.map((app) => app.installed_version), ['0.35.0'])
      assert.equal(w.sim.requests.at(-2)?.resource, 'k8sapps')
    })

    it('pages with page/page_size and absolute next/previous URLs that work', async () => {
      for (let index = 0; index < 25; index++) {
        w.sim.insert('endpoints', {name: `ep-${String(index).padStart(2, '0')}`, remote_address: `h${index}.example.com`, workspace: w.ws.id})
      }
      const first = await request<Page>(w.sim, w.agent, 'GET', '/api/v1/endpoints/?page_size=10&kind=http')
      assert.equal(first.body.count, 25)
      assert.equal(first.body.results.length, 10)
      assert.equal(first.body.previous, null)
      assert.equal(first.body.next, `${w.sim.url}/api/v1/endpoints/?page_size=10&kind=http&page=2`)
      const second = await request<Page>(w.sim, w.agent, 'GET', String(first.body.next))
      assert.equal(second.body.results[0]?.name, 'ep-10')
      assert.equal(second.body.previous, `${w.sim.url}/api/v1/endpoints/?page_size=10&kind=http`, 'the link to page 1 drops page')
      const third = await request<Page>(w.sim, w.agent, 'GET', String(second.body.next))
      assert.deepEqual(third.body.results.map((endpoint) => endpoint.name), ['ep-20', 'ep-21', 'ep-22', 'ep-23', 'ep-24'])
      assert.equal(third.body.next, null)
      const back = await request<Page>(w.sim, w.agent, 'GET', String(third.body.previous))
      assert.equal(back.body.results[0]?.name, 'ep-10')

      const defaults = await request<Page>(w.sim, w.agent, 'GET', '/api/v1/endpoints/')
      assert.equal(defaults.body.results.length, 25)
      assert.equal(defaults.body.next, null)
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/endpoints/?page=4&page_size=10'), 404, 'not_found')
      const empty = await request<Page>(w.sim, w.agent, 'GET', '/api/v1/hosts/')
      assert.deepEqual(empty.body, {count: 0, next: null, previous: null, results: []})
    })

    it('honours pageSizeDefault', async () => {
      const sim = await ApiSimulator.start({pageSizeDefault: 2})
      try {
        const org = sim.createOrganization('o')
        const ws = sim.createWorkspace({name: 'w', organizationId: org.id})
        for (const name of ['a', 'b', 'c']) sim.insert('blocks', {name, workspace: ws.id})
        const page = await request<Page>(sim, sim.issueToken({kind: 'agent', workspaceId: ws.id}), 'GET', '/api/v1/blocks/')
        assert.equal(page.body.results.length, 2)
        assert.notEqual(page.body.next, null)
      } finally {
        await sim.close()
      }
    })

    it('updates with PATCH (partial) and PUT (required fields checked); workspace cannot move', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/hosts/', {name: 'node-1', hostname: 'node-1.internal'})
      const path = `/api/v1/hosts/${String(created.body.id)}/`
      const patched = await request(w.sim, w.agent, 'PATCH', path, {resource_cpu_cores: 8, workspace: w.otherWs.id})
      assert.equal(patched.status, 200)
      assert.equal(patched.body.resource_cpu_cores, 8)
      assert.equal(patched.body.workspace, w.ws.id)
      assert.equal(patched.body.hostname, 'node-1.internal')
      assertError(await request(w.sim, w.agent, 'PATCH', path, {hostname: ''}), 400, 'blank', 'hostname')
      assertError(await request(w.sim, w.agent, 'PUT', path, {name: 'node-1'}), 400, 'required', 'hostname')
      const put = await request(w.sim, w.agent, 'PUT', path, {name: 'node-1', hostname: 'node-1.example.com'})
      assert.equal(put.body.hostname, 'node-1.example.com')
      assert.equal(put.body.resource_cpu_cores, 8, 'fields a PUT leaves out keep their values')
      assertError(await request(w.sim, w.agent, 'PATCH', `/api/v1/hosts/${crypto.randomUUID()}/`, {role: 'generic'}), 404, 'not_found')
    })

    it('serves blocks by name_exact + workspaces (and ignores ?name=), maintenances, workspaces and label keys', async () => {
      w.sim.insert('blocks', {name: 'polycrate-operator', version: '0.36.0', workspace: w.ws.id})
      w.sim.insert('blocks', {name: 'grafana', workspace: w.ws.id})
      w.sim.insert('blocks', {name: 'polycrate-operator', workspace: w.otherWs.id})
      const blocks = await request<Page>(w.sim, w.admin, 'GET', `/api/v1/blocks/?name_exact=polycrate-operator&workspaces=${w.ws.id}`)
      assert.deepEqual(blocks.body.results.map((block) => block.version), ['0.36.0'])
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', '/api/v1/blocks/?name=grafana')).body.count, 2)

      w.sim.insert('maintenances', {name: 'upgrade', affected_workspace: w.ws.id, is_active: true})
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', '/api/v1/maintenances/')).body.count, 1)
      assert.equal((await request<Page>(w.sim, w.otherAgent, 'GET', '/api/v1/maintenances/')).body.count, 0)

      const keys = await request<{label_keys: string[]}>(w.sim, w.agent, 'GET', '/api/v1/label-keys/')
      assert.ok(keys.body.label_keys.includes('polycrate_endpoint_remote_address'))
      assert.ok(keys.body.label_keys.includes('polycrate_k8sapp_byoa'))
      const created = await request(w.sim, w.user, 'POST', '/api/v1/workspaces/', {name: 'staging'})
      assert.equal(created.status, 201)
      assert.equal(created.body.organization, w.org.id)
      const named = await request<Page>(w.sim, w.user, 'GET', '/api/v1/workspaces/?name=staging')
      assert.deepEqual(named.body.results.map((workspace) => workspace.id), [created.body.id])
    })
  })

  describe('409 on each uniqueness rule', () => {
    const cases: Array<{title: string; resource: string; body: (w: World) => Obj; code: string; distinct: (w: World) => Obj}> = [
      {
        title: 'one K8sCluster per workspace',
        resource: 'kubernetes/clusters',
        body: () => ({name: 'second', kind: 'generic'}),
        code: 'unique_k8s_cluster_per_workspace',
        distinct: (w) => ({name: 'x', kind: 'generic', workspace: w.otherWs.id}),
      },
      {
        title: 'Endpoint name per workspace',
        resource: 'endpoints',
        body: () => ({name: 'dup', remote_address: 'a.example.com'}),
        code: 'unique_endpoint_name_per_workspace',
        distinct: (w) => ({name: 'dup', remote_address: 'a.example.com', workspace_id: w.otherWs.id}),
      },
      {
        title: 'K8sApp name per cluster',
        resource: 'kubernetes/apps',
        body: (w) => ({name: 'grafana', k8s_cluster: w.cluster.id}),
        code: 'unique_k8s_app_name_per_cluster',
        distinct: () => ({name: 'grafana'}),
      },
      {
        title: 'Backup identity name+provider+source_namespace+cluster',
        resource: 'backups/backups',
        body: (w) => ({name: 'daily-1', provider: 'velero', source_namespace: 'shop', k8s_cluster: w.cluster.id}),
        code: 'unique_backup_identity',
        distinct: (w) => ({name: 'daily-1', provider: 'velero', source_namespace: 'blog', k8s_cluster: w.cluster.id}),
      },
      {
        title: 'BackupSchedule identity',
        resource: 'backups/backup-schedules',
        body: (w) => ({name: 'daily', provider: 'velero', source_namespace: 'shop', k8s_cluster: w.cluster.id}),
        code: 'unique_backup_schedule_identity',
        distinct: (w) => ({name: 'daily', provider: 'cloudnativepg', source_namespace: 'shop', k8s_cluster: w.cluster.id}),
      },
      {
        title: 'Certificate name+namespace+cluster',
        resource: 'certificates',
        body: (w) => ({name: 'web-tls', secret_name: 'web-tls', namespace: 'shop', k8s_cluster: w.cluster.id}),
        code: 'unique_certificate_per_cluster_namespace',
        distinct: (w) => ({name: 'web-tls', secret_name: 'web-tls', namespace: 'blog', k8s_cluster: w.cluster.id}),
      },
      {
        title: 'S3 bucket name+region',
        resource: 's3/buckets',
        body: () => ({name: 'backups'}),
        code: 'unique_s3_bucket_name_per_region',
        distinct: (w) => ({name: 'backups', region: crypto.randomUUID(), workspace: w.ws.id}),
      },
    ]
    for (const testCase of cases) {
      it(`${testCase.title} → 409 ${testCase.code}`, async () => {
        const path = `/api/v1/${testCase.resource}/`
        if (testCase.resource !== 'kubernetes/clusters') assert.equal((await request(w.sim, w.agent, 'POST', path, testCase.body(w))).status, 201)
        const again = await request(w.sim, w.agent, 'POST', path, testCase.body(w))
        assert.equal(again.status, 409)
        assert.equal((again.body as unknown as ErrorBody).type, 'client_error')
        assert.equal((again.body as unknown as ErrorBody).errors[0]?.code, testCase.code)
        assert.equal((await request(w.sim, w.admin, 'POST', path, testCase.distinct(w))).status, 201, 'a different key is fine')
      })
    }

    it('frees the name once the object is soft-deleted, and checks PATCH too', async () => {
      const first = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'a', remote_address: 'a'})
      const second = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'b', remote_address: 'b'})
      assertError(await request(w.sim, w.agent, 'PATCH', `/api/v1/endpoints/${String(second.body.id)}/`, {name: 'a'}), 409, 'unique_endpoint_name_per_workspace')
      assert.equal((await request(w.sim, w.agent, 'DELETE', `/api/v1/endpoints/${String(first.body.id)}/`)).status, 202)
      assert.equal((await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'a', remote_address: 'a'})).status, 201)
      assert.throws(() => w.sim.insert('endpoints', {name: 'b', remote_address: 'b', workspace: w.ws.id}), /unique_endpoint_name_per_workspace/)
    })
  })

  describe('delete', () => {
    it('soft-deletes with 202: one more GET shows is_deleted, then 404; lists hide it; DELETE again is 202', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'gone', remote_address: 'gone.example.com'})
      const path = `/api/v1/endpoints/${String(created.body.id)}/`
      const deleted = await request(w.sim, w.agent, 'DELETE', path)
      assert.equal(deleted.status, 202)
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', '/api/v1/endpoints/')).body.count, 0)
      const polled = await request(w.sim, w.agent, 'GET', path)
      assert.equal(polled.status, 200)
      assert.equal(polled.body.is_deleted, true)
      assert.equal(typeof polled.body.deleted_at, 'string')
      assertError(await request(w.sim, w.agent, 'GET', path), 404, 'not_found')
      assert.equal((await request(w.sim, w.agent, 'DELETE', path)).status, 202)
      assertError(await request(w.sim, w.agent, 'PATCH', path, {remote_port: 1}), 404, 'not_found')
      assert.equal(w.sim.get('endpoints', String(created.body.id))?.is_deleted, true, 'get() still shows soft-deleted objects')
      assert.equal(w.sim.list('endpoints').length, 0)
      assert.equal(w.sim.list('endpoints', {includeDeleted: true}).length, 1)
    })

    it('hard-deletes the rest with 204; unknown ids are 404', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/backups/backups/', {name: 'b-1', k8s_cluster: w.cluster.id, provider: 'velero'})
      const path = `/api/v1/backups/backups/${String(created.body.id)}/`
      const deleted = await fetch(`${w.sim.url}${path}`, {method: 'DELETE', headers: {authorization: `Bearer ${w.agent}`}})
      assert.equal(deleted.status, 204)
      assert.equal(await deleted.text(), '')
      assertError(await request(w.sim, w.agent, 'GET', path), 404, 'not_found')
      assertError(await request(w.sim, w.agent, 'DELETE', path), 404, 'not_found')
    })

    it('deleteBehindBack removes an object at once, even a soft-delete one', async () => {
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/kubernetes/apps/', {name: 'web', k8s_cluster: w.cluster.id})
      w.sim.deleteBehindBack('kubernetes/apps', String(created.body.id))
      assertError(await request(w.sim, w.agent, 'GET', `/api/v1/kubernetes/apps/${String(created.body.id)}/`), 404, 'not_found')
      assert.throws(() => w.sim.deleteBehindBack('kubernetes/apps', String(created.body.id)), /no kubernetes\/apps/)
    })
  })

  describe('agents', () => {
    const health = (reportedAgentId: string, extra: Obj = {}) => ({reported_agent_id: reportedAgentId, kind: 'operator', version: '0.35.0', status: 'healthy', ...extra})

    it('registers an agent once per reported_agent_id and answers the token’s workspace and organization', async () => {
      const first = await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-1'))
      assert.equal(first.status, 201)
      assert.equal(first.body.status, 'success')
      assert.equal(first.body.reported_agent_id, 'op-1')
      assert.equal(first.body.workspace_id, w.ws.id)
      assert.equal(first.body.workspace_name, 'prod')
      assert.equal(first.body.organization_id, w.org.id)
      assert.equal(first.body.organization_name, 'Acme Corp')
      assert.equal(typeof first.body.health_data_id, 'string')
      for (const key of ['agent_id', 'pop_name', 'pop_id', 'endpoint_monitoring_mode', 'operator_global_endpoint_monitor']) assert.ok(key in first.body, key)

      const second = await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-1', {version: '0.36.0'}))
      assert.equal(second.body.agent_id, first.body.agent_id)
      await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-2'))
      const agents = await request<Page>(w.sim, w.agent, 'GET', '/api/v1/agents/?kind=operator')
      assert.equal(agents.body.count, 2)
      const agent = await request(w.sim, w.agent, 'GET', `/api/v1/agents/${String(first.body.agent_id)}/`)
      assert.equal(agent.body.version, '0.36.0')
      assert.equal(agent.body.kind, 'operator')
      assert.equal(agent.body.state, 'OK')
      assert.equal(typeof agent.body.last_seen, 'string')
      assert.equal(w.sim.list('agent/health').length, 3)

      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', {kind: 'operator'}), 400, 'required', 'reported_agent_id')
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('x', {kind: 'robot'})), 400, 'invalid_choice', 'kind')
    })

    it('makes a silent agent CRITICAL after heartbeatCriticalAfterMs, opens a downtime, and closes it on the next heartbeat', async () => {
      const first = await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-1'))
      const agentPath = `/api/v1/agents/${String(first.body.agent_id)}/`
      w.sim.advanceTime(14 * 60_000)
      assert.equal((await request(w.sim, w.agent, 'GET', agentPath)).body.state, 'OK')
      assert.equal(w.sim.list('downtimes').length, 0)
      w.sim.advanceTime(2 * 60_000)
      assert.equal((await request(w.sim, w.agent, 'GET', agentPath)).body.state, 'CRITICAL')
      const [downtime] = w.sim.list('downtimes')
      assert.ok(downtime)
      assert.equal(downtime.ended_at, null)
      assert.equal(downtime.is_active, true)
      assert.deepEqual(downtime.affected_objects, [first.body.agent_id])
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', '/api/v1/downtimes/')).body.count, 1)
      w.sim.advanceTime(60 * 60_000)
      assert.equal(w.sim.list('downtimes').length, 1, 'one downtime per silence')

      await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-1'))
      assert.equal((await request(w.sim, w.agent, 'GET', agentPath)).body.state, 'OK')
      assert.equal(typeof w.sim.get('downtimes', String(downtime.id))?.ended_at, 'string')
    })

    it('uses options.now plus advanceTime as the clock', async () => {
      let clock = Date.parse('2026-03-01T12:00:00Z')
      const sim = await ApiSimulator.start({now: () => clock, heartbeatCriticalAfterMs: 1000})
      try {
        const org = sim.createOrganization('o')
        const ws = sim.createWorkspace({name: 'w', organizationId: org.id})
        const token = sim.issueToken({kind: 'agent', workspaceId: ws.id})
        await request(sim, token, 'POST', '/api/v1/agent/health/', {reported_agent_id: 'a'})
        assert.equal(sim.list('agents')[0]?.last_seen, '2026-03-01T12:00:00.000Z')
        clock += 1500
        assert.equal(sim.list('agents')[0]?.state, 'CRITICAL')
        sim.advanceTime(500)
        assert.equal(sim.requests.length, 1)
        assert.equal((await request(sim, token, 'GET', '/api/v1/agents/')).status, 200)
        assert.equal(sim.requests[1]?.at, Date.parse('2026-03-01T12:00:02Z'))
      } finally {
        await sim.close()
      }
    })

    it('lists assigned endpoints for X-Agent-ID as a plain array (400 without the header) and takes error reports', async () => {
      await request(w.sim, w.agent, 'POST', '/api/v1/agent/health/', health('op-1'))
      const endpoint = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'shop', remote_address: 'shop.example.com', remote_port: 443, spec: {http: {path: '/'}}})
      w.sim.insert('endpoints', {name: 'skip', remote_address: 'x', workspace: w.ws.id, do_not_monitor: true})
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/agent/endpoints/'), 400, 'required', 'X-Agent-ID')
      const assigned = await request<Obj[]>(w.sim, w.agent, 'GET', '/api/v1/agent/endpoints/', undefined, {'x-agent-id': 'op-1'})
      assert.equal(assigned.status, 200)
      assert.ok(Array.isArray(assigned.body))
      assert.deepEqual(assigned.body, [
        {
          id: endpoint.body.id,
          name: 'shop',
          kind: 'http',
          remote_address: 'shop.example.com',
          remote_port: 443,
          workspace: {id: w.ws.id, name: 'prod'},
          organization: {id: w.org.id, name: 'Acme Corp'},
          spec: {http: {path: '/'}},
        },
      ])
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/agent/endpoints/', undefined, {'x-agent-id': 'unknown'}), 404, 'not_found')

      const report = {agent_id: 'op-1', timestamp: new Date().toISOString(), total_errors: 1, error_counts: {}, critical_errors: [], recent_errors: [], system_info: {}}
      const accepted = await request(w.sim, w.agent, 'POST', '/api/v1/agent/errors/', report)
      assert.equal(accepted.status, 201)
      assert.equal(accepted.body.agent_id, 'op-1')
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/agent/errors/', {agent_id: 'op-1'}), 400, 'required', 'timestamp')
    })
  })

  describe('certificates, S3, DNS, SystemConfig', () => {
    it('syncs a cert-manager Certificate: creates, then updates the same one', async () => {
      const cr = {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: {name: 'shop-tls', namespace: 'shop'},
        spec: {secretName: 'shop-tls', dnsNames: ['shop.example.com'], issuerRef: {name: 'letsencrypt', kind: 'ClusterIssuer'}},
        status: {conditions: [{type: 'Ready', status: 'False', reason: 'Pending'}]},
      }
      const body = {cert_data: cr, k8s_cluster_id: w.cluster.id, organization_id: w.org.id}
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/certificates/sync/', body)
      assert.equal(created.status, 200)
      assert.equal(created.body.created, true)
      const ready = {...cr, status: {notAfter: '2099-01-01T00:00:00Z', conditions: [{type: 'Ready', status: 'True'}]}}
      const updated = await request(w.sim, w.agent, 'POST', '/api/v1/certificates/sync/', {...body, cert_data: ready})
      assert.equal(updated.body.created, false)
      assert.equal(updated.body.certificate_id, created.body.certificate_id)
      const certificate = await request(w.sim, w.agent, 'GET', `/api/v1/certificates/${String(created.body.certificate_id)}/`)
      assert.equal(certificate.body.is_ready, true)
      assert.equal(certificate.body.certificate_status, 'ready')
      assert.equal(certificate.body.issuer_kind, 'clusterissuer')
      assert.deepEqual(certificate.body.dns_names, ['shop.example.com'])
      const listed = await request<Page>(w.sim, w.agent, 'GET', `/api/v1/certificates/?k8s_cluster=${String(w.cluster.id)}&is_ready=true`)
      assert.equal(listed.body.count, 1)
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/certificates/sync/', {cert_data: cr}), 400, 'required', 'k8s_cluster_id')
    })

    it('creates S3 buckets in the default region and hands out per-bucket credentials', async () => {
      const bucket = await request(w.sim, w.agent, 'POST', '/api/v1/s3/buckets/', {name: 'velero'})
      assert.equal(bucket.status, 201)
      assert.equal(bucket.body.s3_cluster, w.sim.systemConfig.default_s3_bucket_cluster)
      assert.equal(typeof bucket.body.s3_endpoint, 'string')
      assert.equal(typeof bucket.body.s3_region, 'string')
      assert.equal(bucket.body.workspace, w.ws.id)
      const credentials = await request<{success: boolean; data: {bucket_id: string; bucket_name: string; credentials: Obj[]}; meta: Obj}>(
        w.sim,
        w.agent,
        'GET',
        `/api/v1/s3/buckets/${String(bucket.body.id)}/credentials/`,
      )
      assert.equal(credentials.status, 200)
      assert.equal(credentials.body.success, true)
      assert.equal(credentials.body.data.bucket_id, bucket.body.id)
      assert.equal(credentials.body.data.bucket_name, 'velero')
      const [credential] = credentials.body.data.credentials
      assert.ok(credential)
      assert.match(String(credential.access_key), /^\S{16,}$/)
      assert.match(String(credential.secret_key), /^\S{30,}$/)
      assert.equal(credential.access_key, credential.api_user)
      assert.ok(!JSON.stringify(bucket.body).includes(String(credential.secret_key)), 'the bucket object carries no secret')

      const other = await request(w.sim, w.agent, 'POST', '/api/v1/s3/buckets/', {name: 'loki'})
      const otherCredentials = await request<{data: {credentials: Obj[]}}>(w.sim, w.agent, 'GET', `/api/v1/s3/buckets/${String(other.body.id)}/credentials/`)
      assert.notEqual(otherCredentials.body.data.credentials[0]?.secret_key, credential.secret_key)
      assertError(await request(w.sim, w.otherAgent, 'GET', `/api/v1/s3/buckets/${String(bucket.body.id)}/credentials/`), 404, 'not_found')
      assertError(await request(w.sim, w.admin, 'POST', '/api/v1/s3/buckets/', {name: 'nowhere'}), 400, 'required', 'workspace')

      w.sim.systemConfig.default_s3_bucket_cluster = null
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/s3/buckets/', {name: 'no-region'}), 400, 'required', 'region')
    })

    it('resolves a zone: longest internal match first, else the longest external primary zone; 404 when none', async () => {
      const zone = (name: string, kind: string, extra: Obj = {}) =>
        w.sim.insert('domains/dnszones', {name, kind, provider: kind === 'external' ? 'cloudflare' : null, organization: w.org.id, workspace: w.ws.id, ...extra})
      const internal = zone('example.com', 'internal')
      const internalSub = zone('dev.example.com', 'internal')
      zone('sub.example.com', 'external')
      const shop = zone('shop.io', 'external')
      zone('eu.shop.io', 'external', {primary_zone: false})
      zone('other.net', 'internal', {organization: crypto.randomUUID(), workspace: w.otherWs.id})

      const resolve = async (fqdn: string) => request(w.sim, w.agent, 'GET', `/api/v1/domains/dnszones/resolve/?fqdn=${fqdn}`)
      assert.equal((await resolve('_acme-challenge.a.sub.example.com')).body.id, internal.id)
      assert.equal((await resolve('x.dev.example.com.')).body.id, internalSub.id)
      const external = await resolve('www.eu.shop.io')
      assert.equal(external.body.id, shop.id)
      assert.deepEqual(Object.keys(external.body).sort(), ['id', 'kind', 'name', 'primary_zone', 'provider', 'url'])
      assertError(await resolve('x.other.net'), 404, 'not_found')
      assertError(await request(w.sim, w.agent, 'GET', '/api/v1/domains/dnszones/resolve/'), 400, 'required', 'fqdn')
    })

    it('does DNS record CRUD; external records get <zone>::<id> ids and need ?dns_zone= on list', async () => {
      const internal = w.sim.insert('domains/dnszones', {name: 'example.com', kind: 'internal', organization: w.org.id})
      const external = w.sim.insert('domains/dnszones', {name: 'shop.io', kind: 'external', provider: 'cloudflare', organization: w.org.id})
      const a = await request(w.sim, w.agent, 'POST', '/api/v1/domains/dnsrecords/', {dns_zone: internal.id, name: 'www', type: 'A', content: '203.0.113.10'})
      assert.equal(a.status, 201)
      assert.equal((a.body.dns_zone as Obj).name, 'example.com')
      assert.equal(a.body.ttl, 3600)
      const txt = await request(w.sim, w.agent, 'POST', '/api/v1/domains/dnsrecords/', {dns_zone: external.id, name: '_acme-challenge', type: 'TXT', content: 'token'})
      assert.match(String(txt.body.id), new RegExp(`^${external.id}::`))
      const path = `/api/v1/domains/dnsrecords/${encodeURIComponent(String(txt.body.id))}/`
      assert.equal((await request(w.sim, w.agent, 'GET', path)).body.content, 'token')
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', '/api/v1/domains/dnsrecords/')).body.count, 1)
      assert.equal((await request<Page>(w.sim, w.agent, 'GET', `/api/v1/domains/dnsrecords/?dns_zone=${external.id}&type=TXT`)).body.count, 1)
      assert.equal((await request(w.sim, w.agent, 'PATCH', path, {content: 'other'})).body.content, 'other')
      assert.equal((await request(w.sim, w.agent, 'DELETE', path)).status, 204)
      assertError(await request(w.sim, w.agent, 'POST', '/api/v1/domains/dnsrecords/', {dns_zone: external.id, name: 'x', type: 'BOGUS', content: 'y'}), 400, 'invalid_choice', 'type')
      assert.equal(w.sim.requests.at(-3)?.resource, 'domains/dnsrecords')
    })

    it('creates load balancer instances and serves SystemConfig (PATCH for admins, blank clears foreign keys)', async () => {
      const lb = await request(w.sim, w.agent, 'POST', '/api/v1/loadbalancers/instances/', {ports: [{port: 443, name: 'https', protocol: 'tcp', target_port: 30443}]})
      assert.equal(lb.status, 201)
      assert.match(String(lb.body.ip_address), /^203\.0\.113\.\d+$/)
      assertError(await request(w.sim, w.admin, 'POST', '/api/v1/loadbalancers/instances/', {}), 400, 'required', 'workspace')

      const config = await request(w.sim, w.agent, 'GET', '/api/v1/system/config/')
      assert.equal(config.body.OPERATOR_ROLLOUT_PERCENTAGE, 100)
      const patched = await request(w.sim, w.admin, 'PATCH', '/api/v1/system/config/', {OPERATOR_BLOCK_VERSION: '0.36.0', default_s3_bucket_cluster: ''})
      assert.equal(patched.body.OPERATOR_BLOCK_VERSION, '0.36.0')
      assert.equal(patched.body.default_s3_bucket_cluster, null)
      assert.equal(w.sim.systemConfig.OPERATOR_BLOCK_VERSION, '0.36.0')
    })
  })

  describe('request log', () => {
    it('logs method, path, query, status, resource and body — and never a token', async () => {
      w.sim.clearRequests()
      await request(w.sim, w.agent, 'GET', '/api/v1/endpoints/?name_exact=a&kind=http&kind=tcp')
      const created = await request(w.sim, w.agent, 'POST', '/api/v1/endpoints/', {name: 'leaky', remote_address: 'x', labels: {note: `token ${w.agent}`}})
      await request(w.sim, w.agent, 'GET', `/api/v1/endpoints/${String(created.body.id)}/`)
      await request(w.sim, 'wrong-token', 'GET', '/api/v1/hosts/')
      await request(w.sim, w.admin, 'POST', `/api/v1/operator-rollout/${String(w.cluster.id)}/pause/`)

      assert.deepEqual(
        w.sim.requests.map(({method, path, status, resource}) => ({method, path, status, resource})),
        [
          {method: 'GET', path: '/api/v1/endpoints/', status: 200, resource: 'endpoints'},
          {method: 'POST', path: '/api/v1/endpoints/', status: 201, resource: 'endpoints'},
          {method: 'GET', path: `/api/v1/endpoints/${String(created.body.id)}/`, status: 200, resource: 'endpoints'},
          {method: 'GET', path: '/api/v1/hosts/', status: 401, resource: 'hosts'},
          {method: 'POST', path: `/api/v1/operator-rollout/${String(w.cluster.id)}/pause/`, status: 200, resource: 'operator-rollout'},
        ],
      )
      assert.deepEqual(w.sim.requests[0]?.query, {name_exact: 'a', kind: 'http,tcp'})
      assert.equal((w.sim.requests[1]?.body as Obj).name, 'leaky')
      assert.equal(typeof w.sim.requests[0]?.at, 'number')
      const log = JSON.stringify(w.sim.requests)
      for (const token of [w.agent, w.admin]) assert.ok(!log.includes(token), 'no token in the request log')
      assert.ok(!/authorization|bearer/i.test(log))
      w.sim.clearRequests()
      assert.equal(w.sim.requests.length, 0)
    })
  })
})
