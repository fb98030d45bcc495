import assert from 'node:assert/strict'
import {once} from 'node:events'
import net from 'node:net'
import {CarriedTargets, crashPoints, faultFor, ownerOf, replayCommand, withCarried} from '../support/chaos/campaign.js'
import {Prng} from '../support/chaos/prng.js'
import {pidOfLocalPort, twoLeaders} from '../support/chaos/replicas.js'
import {diffStates, normalise, type Fault, type StormInjection} from '../support/chaos/runner.js'
import {workloads} from '../support/chaos/workloads.js'

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

  it('pidOfLocalPort finds the process that owns a connection by its local port (how the API simulator tells replicas apart)', async () => {
    const server = net.createServer((socket) => socket.end())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1')
    await once(socket, 'connect')
    try {
      assert.equal(pidOfLocalPort(socket.localPort!, [999_999_999, process.pid]), process.pid)
      assert.equal(pidOfLocalPort(socket.localPort!, [999_999_999]), undefined, 'not a process of the list')
    } finally {
      socket.destroy()
      server.close()
    }
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
