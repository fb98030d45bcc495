import assert from 'node:assert/strict'
import {once} from 'node:events'
import net from 'node:net'
import {campaignOrder, CarriedTargets, crashPoints, faultFor, faultLabel, FREEZES, OWNERS, ownerOf, replayCommand, withCarried} from '../../support/chaos/campaign.js'
import {apiFaultSchedule, API_FAULT_KINDS, faultClass, READ_FAULT_KINDS, requestClass} from '../../support/chaos/api-proxy.js'
import {Prng} from '../../support/chaos/prng.js'
import {leadershipFacts, pidOfLocalPort, twoLeaders} from '../../support/chaos/replicas.js'
import {diffStates, driveStorm, normalise, SHORT_FREEZE_MAX_MS, STORM_LAST_RETRY_MS, STORM_RETRY_MS, type Fault, type StormInjection} from '../../support/chaos/runner.js'
import {CASE_KINDS, emptyCaseNamespace, kindName, uncoveredKinds} from '../../support/chaos/cleanup.js'
import {KubeApiError, type KubeClient, type KubeObject, type ResourceRef} from '../../../src/kube/client.js'
import {workloads} from '../../support/chaos/workloads.js'

describe('chaos campaign: decisions and the oracle\'s normalisation', () => {
  it('the PRNG is a pure function of its seed', () => {
    const a = new Prng(42)
    const b = new Prng(42)
    const first = Array.from({length: 5}, () => a.next())
    assert.deepEqual(Array.from({length: 5}, () => b.next()), first)
    assert.notDeepEqual(Array.from({length: 5}, () => new Prng(43).next()), first)
    assert.ok(first.every((x) => x >= 0 && x < 1))
  })

  it('crash points: the first write of every write point, then the second, …; the workload\'s own points first, common ones it does not own after', () => {
    const workload = workloads.find((w) => w.name === 'endpoint')!
    const common = ['api api-sync post agent/health', 'kube runtime create core/events', 'kube operatorconfig patch polycrate.io/operatorconfigs/status']
    const owned = common.filter((point) => ownerOf(point) === 'endpoint')
    const writes = ['kube runtime create core/events#1', 'kube sync create polycrate.io/endpoints#1', 'kube sync create polycrate.io/endpoints#2', 'kube d patch networking.k8s.io/ingresses#1', 'api api-sync post agent/health#1', 'kube operatorconfig patch polycrate.io/operatorconfigs/status#1']
    const points = crashPoints(writes, workload)
    const firstRound = points.filter(([, k]) => k === 1).map(([point]) => point)
    assert.deepEqual(firstRound.slice(0, 2 + owned.length).sort(), ['kube d patch networking.k8s.io/ingresses', 'kube sync create polycrate.io/endpoints', ...owned].sort(), 'own points first')
    assert.deepEqual(points.at(-1), ['kube sync create polycrate.io/endpoints', 2], 'then the second writes')
    assert.equal(points.length, 6)
  })

  it('each common write point has one owner among all workloads, whatever a run selects; an ordering group starts its members at different points', () => {
    assert.equal(ownerOf('api api-sync post agent/health'), ownerOf('api api-sync post agent/health'))
    assert.ok(workloads.some((w) => w.name === ownerOf('kube runtime create core/events')))
    const group = workloads.filter((w) => w.orderingGroup === 'backup')
    assert.ok(group.length >= 2)
    const writes = Array.from({length: 9}, (_, i) => `kube backup-discovery patch polycrate.io/backups${i}#1`)
    const starts = new Set(group.map((w) => crashPoints(writes, w)[0]![0]))
    assert.equal(starts.size, group.length, 'each member of the group starts elsewhere')
  })

  it('faults: the same (seed, workload, n) gives the same fault; odd cases crash eight points with a storm, 2, 6, … draw another fault, 4, 8, … a storm with API faults or (one workload in three) a handover', () => {
    const workload = workloads.find((w) => w.name === 'endpoint')!
    const writes = Array.from({length: 10}, (_, i) => `kube s create polycrate.io/endpoints#${i + 1}`)
    const points = crashPoints(writes, workload)
    const lists = ['polycrate.io/endpoints', 'networking.k8s.io/ingresses']
    assert.deepEqual(faultFor(9, workload, 3, points, lists), faultFor(9, workload, 3, points, lists))
    const first = faultFor(9, workload, 1, points, lists)
    assert.ok(first.kind === 'crash')
    assert.deepEqual(first.targets, [1, 2, 3, 4, 5, 6, 7, 8].map((k) => ({point: 'kube s create polycrate.io/endpoints', k})))
    assert.ok(first.storm!.length >= 10 && first.storm!.every((i, n) => i.afterMs > (first.storm![n - 1]?.afterMs ?? 0)), 'a storm meanwhile, in time order')
    assert.ok(first.storm!.every((i) => i.kind === 'coalesce' || lists.includes(i.resource!)), 'stale lists aim at listed resources')
    assert.ok(!['crash', 'storm', 'handover'].includes(faultFor(9, workload, 2, points, lists).kind))
    const third = faultFor(9, workload, 3, points, lists)
    assert.ok(third.kind === 'crash' && third.targets.length === 2, 'the last crash points')
    const storm = faultFor(9, workload, 4, points, lists)
    assert.ok(storm.kind === 'storm' && storm.api, 'a storm with an API fault window')
    assert.ok(storm.injections.length >= 10 && storm.injections.length <= 20)
    assert.ok(faultFor(9, workload, 5, points, lists).kind === 'storm', 'every crash point used: a storm')
    const handover = faultFor(9, workload, 8, points, lists)
    assert.ok(handover.kind === 'handover' && handover.partitionMs > 10_000 && handover.atStep < workload.steps.length, 'the partition outlasts the renew deadline, and a user operation follows it')
    const handovers = workloads.filter((w) => faultFor(9, w, 4, [], lists).kind === 'handover')
    assert.ok(handovers.length >= 5 && handovers.length <= 6, `one workload in three has a handover at case 4 (${handovers.map((w) => w.name)})`)
  })

  it('carried crash targets: a crash case takes them first (once), a storm becomes a crash case with its storm and API faults, a single fault or a handover leaves them for later', () => {
    const carried = [{point: 'kube host-discovery delete polycrate.io/hosts', k: 1}, {point: 'kube s create polycrate.io/endpoints', k: 2}]
    const storm: StormInjection[] = [{afterMs: 400, kind: 'coalesce'}]
    const crash: Fault = {kind: 'crash', targets: [{point: 'kube s create polycrate.io/endpoints', k: 2}, {point: 'kube s patch polycrate.io/endpoints', k: 1}], storm}
    assert.equal(withCarried(crash, []), crash)
    assert.deepEqual(withCarried(crash, carried), {...crash, targets: [...carried, {point: 'kube s patch polycrate.io/endpoints', k: 1}]})
    const api = {outcome: 'error' as const, rate: 0.5, afterMs: 100, ms: 2000}
    assert.deepEqual(withCarried({kind: 'storm', injections: storm, api}, carried), {kind: 'crash', targets: carried, storm, api})
    assert.deepEqual(withCarried({kind: 'storm', injections: storm}, carried), {kind: 'crash', targets: carried, storm})
    for (const fault of [{kind: 'hold', ms: 900, atStep: 1}, {kind: 'handover', partitionMs: 12_000, atStep: 0}] as Fault[]) assert.equal(withCarried(fault, carried), fault)
    assert.equal(replayCommand(4, 'host:3', carried), "npm run chaos -- --seed 4 --case host:3 --carry 'kube host-discovery delete polycrate.io/hosts#1;kube s create polycrate.io/endpoints#2'")
    assert.equal(replayCommand(4, 'host:3'), 'npm run chaos -- --seed 4 --case host:3')
  })

  it('carried targets: a workload keeps its own lost points; lost common points go to a pool any workload whose reference saw them takes from; crashed points are dropped', () => {
    const carry = new CarriedTargets()
    const crashed = new Set<string>()
    const done = (point: string) => crashed.has(point)
    const own = {point: 'kube host-discovery delete polycrate.io/hosts', k: 1}
    const events = {point: 'kube runtime patch core/events', k: 3}
    const health = {point: 'api api-sync post agent/health', k: 1}
    crashed.add(health.point)
    carry.settle('host', [own, events, health], done)
    const hostPoints = new Map([[own.point, 1], [events.point, 5]])
    assert.deepEqual(carry.take('host', hostPoints, done), [own, events])
    assert.deepEqual(carry.take('volume', new Map([[events.point, 2]]), done), [{point: events.point, k: 2}], 'k at most what its reference saw')
    assert.deepEqual(carry.take('volume', new Map(), done), [], 'a point its reference never saw is not its to crash')
    carry.settle('volume', [{point: events.point, k: 2}], done)
    assert.deepEqual(carry.take('certificate', new Map([[events.point, 4]]), done), [events], 'lost again: still one entry in the pool')
    crashed.add(events.point)
    assert.deepEqual(carry.take('host', hostPoints, done), [own])
    carry.settle('host', [own], (point) => point === own.point || done(point))
    assert.deepEqual(carry.take('host', hostPoints, done), [])
  })

  it('two leaders: writers in time order form one block per process; a process writing again after another took over is a violation', () => {
    const w = (at: number, instance: string) => ({at, instance, what: `write ${at}`})
    assert.equal(twoLeaders([w(1, 'a0'), w(2, 'a0'), w(5, 'b0'), w(6, 'b0'), w(9, 'a1')]), undefined, 'a0, then b0, then the restarted a1')
    assert.equal(twoLeaders([]), undefined)
    assert.match(twoLeaders([w(1, 'a0'), w(5, 'b0'), w(3, 'b0'), w(6, 'a0')]) ?? '', /a0 wrote \(write 6\) after b0 had taken over \(write 5\)/)
  })

  it('never two writers: the lease writes say who holds it from when; a write by another replica after a takeover is counted, writes before any lease write count against nobody', () => {
    const lease = (at: number, instance: string) => ({at, instance})
    const w = (at: number, instance: string) => ({at, instance, what: `write ${at}`})
    const facts = leadershipFacts([lease(1, 'a0'), lease(3, 'a0'), lease(20, 'b0'), lease(22, 'b0')], [w(0, 'a0'), w(2, 'a0'), w(10, 'a0'), w(21, 'b0'), w(23, 'a0'), w(24, 'a1')])
    assert.deepEqual(facts.afterTakeover.map((x) => `${x.instance}@${x.at}`), ['a0@23', 'a1@24'])
    assert.deepEqual(facts.takeovers, [{at: 20, from: 'a0', to: 'b0'}])
    assert.equal(facts.firstWrite.get('b0'), 21)
    const kept = leadershipFacts([lease(1, 'a0'), lease(9, 'a0')], [w(2, 'a0'), w(12, 'a0')])
    assert.deepEqual([kept.afterTakeover.length, kept.takeovers.length], [0, 0], 'a leader that kept leading')
    assert.equal(leadershipFacts([], [w(1, 'b0')]).afterTakeover.length, 0)
  })

  it('paused-leader: every case freezes the leader — past the lease, shorter than the renew deadline, in between — before a step that has one after it', () => {
    const workload = workloads.find((w) => w.name === 'paused-leader')!
    for (let n = 1; n <= 9; n++) {
      const fault = faultFor(3, workload, n, [], [])
      assert.ok(fault.kind === 'pause', `case ${n}: ${fault.kind}`)
      const [low, high] = n % 3 === 1 ? FREEZES.long : n % 3 === 2 ? FREEZES.short : FREEZES.between
      assert.ok(fault.ms >= low && fault.ms <= high && fault.atStep < workload.steps.length, `case ${n}: ${fault.ms} ms at ${fault.atStep}`)
    }
    assert.ok(FREEZES.long[0] > 15_000, 'longer than the lease (15 s)')
    assert.ok(FREEZES.short[1] === SHORT_FREEZE_MAX_MS && SHORT_FREEZE_MAX_MS + 2400 < 10_000, 'shorter than the renew deadline less a jittered retry period')
    assert.ok(FREEZES.between[0] > 10_000 && FREEZES.between[1] < 15_000)
    assert.deepEqual(['pause past the lease', 'pause short', 'pause past the deadline'], [1, 2, 3].map((n) => faultLabel(faultFor(3, workload, n, [], []))))
  })

  it('API faults: plan `api` arms the seeded schedule in every case (odd ones with the crash points); the others get it at case 6, 14, …', () => {
    const apiWorkload = workloads.find((w) => w.name === 'api-faults')!
    const points: Array<[string, number]> = [['kube s create polycrate.io/endpoints', 1]]
    const requests = {writes: 40, reads: 200}
    const odd = faultFor(5, apiWorkload, 1, points, [], requests)
    assert.ok(odd.kind === 'crash' && odd.apiSchedule!.length >= 1 && odd.targets.length === 1)
    const even = faultFor(5, apiWorkload, 2, points, [], requests)
    assert.ok(even.kind === 'api' && even.schedule.length >= 1)
    assert.deepEqual(faultFor(5, apiWorkload, 2, points, [], requests), even, 'pure')
    const endpoint = workloads.find((w) => w.name === 'endpoint')!
    for (const n of [6, 14]) assert.equal(faultFor(5, endpoint, n, points, [], requests).kind, 'api')
    assert.notEqual(faultFor(5, endpoint, 2, points, [], requests).kind, 'api', 'case 2 keeps its single fault (the regressions replay it)')
    assert.deepEqual(withCarried(even, [{point: 'p', k: 1}]), {kind: 'crash', targets: [{point: 'p', k: 1}], apiSchedule: even.schedule})
  })

  it('the API fault schedule is pure in the PRNG, within the reference\'s requests, one fault per request, read faults only of the read kinds', () => {
    const a = apiFaultSchedule(new Prng(11), 30, 100)
    assert.deepEqual(apiFaultSchedule(new Prng(11), 30, 100), a)
    assert.ok(a.length >= 1 && a.length <= 11)
    assert.equal(new Set(a.map((s) => `${s.on}#${s.nth}`)).size, a.length)
    for (const step of a) {
      assert.ok(step.nth >= 1 && step.nth <= (step.on === 'write' ? 30 : 100))
      assert.ok((step.on === 'read' ? READ_FAULT_KINDS as readonly string[] : API_FAULT_KINDS as readonly string[]).includes(step.kind))
    }
    const many = Array.from({length: 40}, (_, i) => apiFaultSchedule(new Prng(i), 30, 100)).flat()
    assert.deepEqual(new Set(many.filter((s) => s.on === 'write').map((s) => s.kind)), new Set(API_FAULT_KINDS), 'every kind drawn on writes')
    assert.deepEqual(apiFaultSchedule(new Prng(3), 0, 0).every((s) => s.nth === 1), true, 'a reference without requests: the first of each class')
  })

  it('API requests: writes and reads under /api/v1/ count for the schedule, the heartbeat and error reports do not; fault classes', () => {
    assert.equal(requestClass('POST', '/api/v1/endpoints/'), 'write')
    assert.equal(requestClass('DELETE', '/api/v1/s3/buckets/x/'), 'write')
    assert.equal(requestClass('GET', '/api/v1/kubernetes/apps/'), 'read')
    assert.equal(requestClass('POST', '/api/v1/agent/health/'), undefined)
    assert.equal(requestClass('POST', '/api/v1/agent/errors/'), undefined)
    assert.equal(requestClass('GET', '/metrics'), undefined)
    assert.equal(faultClass('lost-502', 'POST', 201), 'applied-then-lost')
    assert.equal(faultClass('lost-timeout', 'PATCH', 200), 'applied-then-lost')
    assert.equal(faultClass('lost-reset', 'POST', 400), 'not-applied')
    assert.equal(faultClass('lost-reset', 'GET', 200), 'read-lost')
    assert.equal(faultClass('before-429', 'POST', 0), 'before')
    assert.equal(faultClass('slow', 'POST', 201), 'slow')
    assert.equal(faultClass('reset-mid-body', 'GET', 200), 'reset-mid-body')
  })

  it('the owners of common points are fixed workloads (a workload added later changes no earlier replay); a campaign\'s order turns with the seed', () => {
    const names = workloads.map((w) => w.name)
    assert.ok(OWNERS.every((owner) => names.includes(owner)), 'every owner is a workload')
    assert.deepEqual([...OWNERS].sort(), OWNERS)
    assert.deepEqual(campaignOrder([1, 2, 3, 4], 0), [1, 2, 3, 4])
    assert.deepEqual(campaignOrder([1, 2, 3, 4], 6), [3, 4, 1, 2])
    assert.deepEqual(campaignOrder([], 6), [])
  })

  it('pidOfLocalPort finds the process that owns a connection by its local port (how the API simulator tells replicas apart)', async () => {
    const accepted: net.Socket[] = []
    const server = net.createServer((socket) => accepted.push(socket)) // kept open: a closed socket has no inode
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1')
    await once(socket, 'connect')
    try {
      assert.equal(pidOfLocalPort(socket.localPort!, [999_999_999, process.pid]), process.pid)
      assert.equal(pidOfLocalPort(socket.localPort!, [999_999_999]), undefined, 'not a process of the list')
    } finally {
      socket.destroy()
      for (const other of accepted) other.destroy()
      server.close()
    }
  })

  it('a storm: each injection at its time; one that found nothing to act on is tried again until the next is due (the last for a while), and counts once when it acts', async () => {
    let now = 0
    const clock = {now: () => now, sleep: async (ms: number) => {
      now += ms
    }}
    const storm: StormInjection[] = [{afterMs: 300, kind: 'coalesce'}, {afterMs: 1000, kind: 'stale', resource: 'networking.k8s.io/ingresses'}, {afterMs: 2000, kind: 'coalesce', resource: 'polycrate.io/endpoints'}]
    const attempts: Array<[number, string]> = []
    // The first acts on its third try; the second never (no list kept); the last at once.
    const acts = (injection: StormInjection) => {
      attempts.push([now, injection.kind])
      const tries = attempts.filter(([, kind]) => kind === injection.kind).length
      return injection.kind === 'coalesce' && (injection.resource ? true : tries === 3)
    }
    assert.equal(await driveStorm(storm, acts, clock), 2)
    const times = attempts.map(([at]) => at)
    assert.deepEqual(times.slice(0, 3), [300, 300 + STORM_RETRY_MS, 300 + 2 * STORM_RETRY_MS], 'retried until it acted')
    const second = attempts.filter(([, kind]) => kind === 'stale').map(([at]) => at)
    assert.equal(second[0], 1000)
    assert.ok(second.length > 1 && second.every((at) => at < 2000), `retried only until the next injection was due: ${second}`)
    assert.deepEqual(attempts.at(-1), [2000, 'coalesce'], 'the next one still at its time')

    now = 0
    attempts.length = 0
    assert.equal(await driveStorm([{afterMs: 0, kind: 'coalesce'}], () => (attempts.push([now, 'coalesce']), false), clock), 0)
    assert.deepEqual(attempts.map(([at]) => at), Array.from({length: Math.ceil(STORM_LAST_RETRY_MS / STORM_RETRY_MS)}, (_, i) => i * STORM_RETRY_MS), 'the last one: tried for STORM_LAST_RETRY_MS, then given up')

    now = 0
    let stop = false
    const stopping = await driveStorm(storm, () => {
      stop = true
      return false
    }, clock, () => stop)
    assert.equal(stopping, 0, 'the case ending stops the storm')
  })

  it('cleanup: every kind an operator watches in a case namespace is emptied, or the case waits for the namespace to be gone', () => {
    for (const workload of workloads) assert.deepEqual(uncoveredKinds(workload.sources), [], `${workload.name}'s sources`)
    const seen = ['gateway.networking.k8s.io/httproutes', 'polycrate.io/operatorconfigs', 'apiextensions.k8s.io/customresourcedefinitions', 'core/secrets', 'polycrate.io/endpoints', 'polycrate.io/endpoints/status', 'core/namespaces', 'core/nodes', 'core/services', 'networking.k8s.io/ingresses', 'polycrate.io/k8sapps', 'coordination.k8s.io/leases', '']
    assert.deepEqual(uncoveredKinds(seen), [])
    assert.deepEqual(uncoveredKinds([...seen, 'apps/deployments', 'core/configmaps', 'apps/deployments']), ['apps/deployments', 'core/configmaps'], 'a namespaced kind nobody empties')
    assert.ok(CASE_KINDS.some((ref) => kindName(ref) === 'polycrate.io/s3buckets') && !CASE_KINDS.some((ref) => ref.plural === 'operatorconfigs' || ref.plural === 'artifacts'))
  })

  it('cleanup: deletes what is in the case namespace once each, waits until finalizers let it go, reports what is left at the deadline', async () => {
    const fake = fakeCluster()
    fake.put('networking.k8s.io/ingresses', 'a', ['polycrate.io/discovery-cleanup'])
    fake.put('polycrate.io/endpoints', 'a')
    fake.put('core/secrets', 'x.poly')
    // The operator releases the Ingress's finalizer a few passes after its delete.
    fake.onList = (passes) => {
      if (passes === 3) fake.release('networking.k8s.io/ingresses', 'a')
    }
    assert.deepEqual(await emptyCaseNamespace(fake.client, 'ns', [], Date.now() + 60_000), [])
    assert.deepEqual(fake.deletes.sort(), ['core/secrets x.poly', 'namespace ns', 'networking.k8s.io/ingresses a', 'polycrate.io/endpoints a'], 'each deleted once, the namespace too')

    const stuck = fakeCluster()
    stuck.put('networking.k8s.io/ingresses', 'b', ['polycrate.io/discovery-cleanup'])
    assert.deepEqual(await emptyCaseNamespace(stuck.client, 'ns', [], Date.now() - 1), ['networking.k8s.io/ingresses ns/b'], 'past the deadline: what is left')

    const other = fakeCluster()
    other.namespaceGoneAfter = 2
    assert.deepEqual(await emptyCaseNamespace(other.client, 'ns', ['apps/deployments'], Date.now() + 60_000), [], 'an uncovered kind: the namespace itself must be gone')
    assert.equal(other.namespaceReads, 3)
  })

  it('normalise drops identities and times, replaces the case names, and keeps the rest', () => {
    const value = normalise({id: 'x', name: 'ns-1-p7-a', created_at: 't', k8s_cluster: '3f2a0c1e-0000-4000-8000-000000000000', spec: {uid: 'u', hosts: ['p7-a.example.com'], note: 'see 3f2a0c1e-0000-4000-8000-000000000000'}},
      [['ns-1', '<ns>'], ['p7', '<P>']])
    assert.deepEqual(value, {name: '<ns>-<P>-a', spec: {hosts: ['<P>-a.example.com'], note: 'see <id>'}})
  })

  it('normalise replaces load balancer instance names (a + the uid without dashes, 32 characters) and the simulator\'s S3 keys', () => {
    const value = normalise({name: 'a0123456789abcdef0123456789abcde', credential: {api_user: `SIMS3AK${'0A'.repeat(10)}`}, note: `sim_s3sk_${'0a'.repeat(20)}`, other: 'a0123'},
      [])
    assert.deepEqual(value, {credential: {api_user: '<s3-key>'}, name: '<lb-name>', note: '<s3-key>', other: 'a0123'})
  })

  it('diffStates names missing, extra and differing objects', () => {
    assert.deepEqual(diffStates([{key: 'a', value: 1}], [{key: 'a', value: 1}]), [])
    const lines = diffStates([{key: 'a', value: 1}, {key: 'b', value: 2}], [{key: 'a', value: 3}, {key: 'c', value: 4}])
    assert.deepEqual(lines.map((l) => l.split(' ')[0]), ['differs', 'missing', 'extra'])
    assert.deepEqual(diffStates([{key: 'o', value: {a: 1, b: {c: 2}, d: 'same'}}], [{key: 'o', value: {a: 1, b: {c: 3}, d: 'same', e: true}}]),
      ['differs o: b: expected {"c":2} got {"c":3}; e: expected undefined got true'])
  })
})

/** An apiserver of one namespace `ns` for cleanup.ts: objects by kind, deletes honouring finalizers. */
function fakeCluster() {
  const objects = new Map<string, KubeObject>()
  let passes = 0
  const state = {
    deletes: [] as string[],
    onList: (_passes: number) => {},
    namespaceGoneAfter: 0,
    namespaceReads: 0,
    put(kind: string, name: string, finalizers: string[] = []) {
      objects.set(`${kind} ${name}`, {metadata: {name, namespace: 'ns', uid: `${kind}-${name}`, finalizers}})
    },
    release(kind: string, name: string) {
      const object = objects.get(`${kind} ${name}`)!
      object.metadata!.finalizers = []
      if (object.metadata!.deletionTimestamp) objects.delete(`${kind} ${name}`)
    },
    client: undefined as unknown as KubeClient,
  }
  const kindOf = (ref: ResourceRef) => kindName(ref)
  state.client = {
    async request<T>({path}: {path: string}): Promise<T> {
      const plural = path.split('/').at(-1)!
      const ref = CASE_KINDS.find((r) => path === `${r.group ? `/apis/${r.group}` : '/api'}/${r.version}/namespaces/ns/${r.plural}`)
      assert.ok(ref, `a list of a case kind: ${path} (${plural})`)
      if (ref === CASE_KINDS[0]) state.onList(++passes)
      return {items: [...objects].filter(([key]) => key.startsWith(`${kindOf(ref)} `)).map(([, object]) => object)} as T
    },
    async delete(ref: ResourceRef) {
      if (ref.plural === 'namespaces') {
        state.deletes.push(`namespace ${ref.name}`)
        return
      }
      const key = `${kindOf(ref)} ${ref.name}`
      const object = objects.get(key)
      if (!object) throw new KubeApiError(404, 'NotFound', 'not found')
      state.deletes.push(key)
      if ((object.metadata!.finalizers as string[]).length) object.metadata!.deletionTimestamp = 'now'
      else objects.delete(key)
    },
    async getOrUndefined(ref: ResourceRef) {
      assert.equal(ref.plural, 'namespaces')
      state.namespaceReads++
      return state.namespaceReads > state.namespaceGoneAfter ? undefined : {metadata: {name: ref.name}}
    },
  } as unknown as KubeClient
  return state
}
