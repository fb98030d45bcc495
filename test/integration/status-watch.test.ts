/**
 * `polycrate operator status --watch` against the real apiserver, run as installed (bin/run.js, a child process):
 * with -o json one document per change (a CR created, its status written, an Ingress held by a finalizer and then
 * let go), Ctrl-C (SIGINT) ends it with exit 0; on a terminal (a pty from util-linux `script`) the table is redrawn
 * and ^C typed on the terminal ends it with exit 0.
 */
import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import path from 'node:path'
import type {StatusReport} from '../../src/cli/status-view.js'
import type {KubeClient} from '../../src/kube/client.js'
import {finalizers} from '../../src/operator/conventions.js'
import {assertBuilt} from '../support/cli-process.js'
import {adminClient, controlPlane, ensureCrds, freshNamespace} from '../support/cluster.js'

const root = path.resolve(import.meta.dirname, '../..')

/** A child's stdout as lines (and the raw text), with a way to wait for a line that matches. */
function lines(child: ChildProcess) {
  const seen: string[] = []
  let raw = ''
  let partial = ''
  const waiters: Array<() => void> = []
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (chunk: string) => {
    raw += chunk
    partial += chunk
    const parts = partial.split('\n')
    partial = parts.pop()!
    seen.push(...parts)
    for (const wake of waiters.splice(0)) wake()
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return {
    seen,
    raw: () => raw,
    exited,
    /** Resolves with the first line from `from` on that `matches`; fails after `ms` (a deadline, not a pause). */
    async next(matches: (line: string) => boolean, what: string, from = 0, ms = 60_000): Promise<{line: string; index: number}> {
      const deadline = Date.now() + ms
      for (;;) {
        const index = seen.findIndex((line, i) => i >= from && matches(line))
        if (index >= 0) return {line: seen[index]!, index}
        if (Date.now() > deadline) throw new Error(`no line for ${what} within ${ms} ms; got:\n${seen.join('\n')}\n${raw.slice(-2000)}`)
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited.then(() => {
          throw new Error(`exited before ${what}; output:\n${raw}`)
        }), new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref())])
      }
    },
  }
}

describe('polycrate operator status --watch (real apiserver)', function () {
  this.timeout(180_000)
  let client: KubeClient
  let ns: string
  const endpointRef = (name: string) => ({group: 'polycrate.io', version: 'v1alpha1', plural: 'endpoints', namespace: ns, name})
  const ingressRef = (name: string) => ({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: ns, name})

  before(async () => {
    assertBuilt()
    await ensureCrds()
    client = adminClient()
    ns = await freshNamespace(client, 'watch')
  })
  after(() => client.close())

  it('-o json: one JSON document per change; SIGINT ends it with exit 0', async () => {
    const child = spawn(process.execPath, [path.join(root, 'bin/run.js'), 'operator', 'status', '--watch', '-o', 'json', '-n', ns, '--kubeconfig', controlPlane().kubeconfigPath], {cwd: root, stdio: ['ignore', 'pipe', 'pipe']})
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const out = lines(child)
    try {
      const documents = (from: number) => out.seen.slice(from).map((line) => JSON.parse(line) as StatusReport)
      const first = await out.next(() => true, 'the first document')
      assert.deepEqual((JSON.parse(first.line) as StatusReport).resources, [], 'nothing in the namespace yet')

      await client.create({...endpointRef('shop-example-com'), name: undefined}, {
        apiVersion: 'polycrate.io/v1alpha1', kind: 'Endpoint', metadata: {name: 'shop-example-com', namespace: ns},
        spec: {remoteAddress: 'shop.example.com', remotePort: 443},
      })
      const created = await out.next((line) => line.includes('"shop-example-com"'), 'a document with the new Endpoint', first.index + 1)

      await client.mergePatch({...endpointRef('shop-example-com'), subresource: 'status'}, {status: {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-7'}})
      const synced = await out.next((line) => line.includes('"ep-7"'), 'a document with its status', created.index + 1)
      const row = (JSON.parse(synced.line) as StatusReport).resources.find((r) => r.name === 'shop-example-com')
      assert.deepEqual([row?.phase, row?.syncStatus, row?.apiID], ['Synced', 'synced', 'ep-7'])

      // An Ingress the operator holds (its finalizer), deleted: it shows as held, then goes when released.
      await client.create({...ingressRef('shop'), name: undefined}, {
        apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'shop', namespace: ns, finalizers: [finalizers.ingressDiscovery]},
        spec: {rules: [{host: 'shop.example.com'}]},
      })
      await client.delete(ingressRef('shop'))
      const held = await out.next((line) => (JSON.parse(line) as StatusReport).held.some((h) => h.kind === 'Ingress' && h.name === 'shop'), 'the Ingress held', synced.index + 1)
      await client.mergePatch(ingressRef('shop'), {metadata: {finalizers: []}})
      await out.next((line) => (JSON.parse(line) as StatusReport).held.length === 0, 'the Ingress let go', held.index + 1)

      for (const document of documents(0)) assert.equal(document.cluster, controlPlane().server)
      // Every document differs from the one before it (ages aside): printed on change only.
      const keys = documents(0).map((document) => JSON.stringify({...document, resources: document.resources.map(({age: _age, ...r}) => r)}))
      for (let i = 1; i < keys.length; i++) assert.notEqual(keys[i], keys[i - 1], `document ${i} repeats the one before`)

      child.kill('SIGINT')
      assert.equal(await out.exited, 0, stderr)
      assert.equal(stderr, '')
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('on a terminal: the table, redrawn on change; ^C typed on the terminal ends it with exit 0', async () => {
    // `exec`: script runs the command with $SHELL -c, or /bin/sh (dash) when SHELL is unset, as in CI; dash does not
    // exec a lone command, stays in the terminal's foreground group beside it, and dies of the ^C itself (exit 130,
    // whatever the CLI does). With exec the CLI is the terminal's only process, as when a user types the command.
    const command = `exec node bin/run.js operator status --watch -n ${ns} --kubeconfig ${controlPlane().kubeconfigPath}`
    const child = spawn('script', ['-qec', command, '/dev/null'], {cwd: root, stdio: ['pipe', 'pipe', 'pipe'], env: {...process.env, NO_COLOR: '1', COLUMNS: '200', LINES: '50'}})
    const out = lines(child)
    try {
      const first = await out.next((line) => line.includes('Ctrl-C to stop'), 'the first frame')
      // eslint-disable-next-line no-control-regex
      assert.match(out.raw(), /\u001B\[H\u001B\[2JPolycrate Operator Status/, 'the screen cleared, then the report')
      assert.match(out.raw(), /shop-example-com/)
      await client.mergePatch({...endpointRef('shop-example-com'), subresource: 'status'}, {status: {phase: 'Error', syncStatus: 'error'}})
      await out.next((line) => line.includes('Ctrl-C to stop'), 'a second frame', first.index + 1)
      assert.equal(out.raw().split('\u001B[H\u001B[2J').length - 1, 2, 'two frames, each after clearing the screen')
      assert.match(out.raw().split('\u001B[H\u001B[2J')[2]!, /shop-example-com +.*Error/)
      child.stdin!.write('\u0003')
      assert.equal(await out.exited, 0, out.raw())
    } finally {
      child.kill('SIGKILL')
    }
  })
})
