/**
 * Start-up cost of the short-lived commands, as the installed CLI runs them (`node bin/run.js …`, after `npm run
 * build`): CPU time (user + sys, from /usr/bin/time) of each command against `node -e 0` measured in the same loop,
 * rounds interleaved so that load from elsewhere hits every command alike. Each command runs three times per round: on
 * the fast path with its V8 code cache (written by a warm-up run, as after the first run of an installed CLI), on the
 * fast path without one (a first run), and with POLYCRATE_NO_FAST_PATH=1 (through oclif). Not a pass/fail test: it
 * prints the ratios and writes bench/results/startup.json.
 *
 *   npm run build && npm run bench:startup [-- --runs 10]
 */
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {mkdir, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {KubeClient} from '../src/kube/client.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {freePort, startControlPlane} from '../test/support/control-plane.js'
import {namespaceNamed} from './setup.js'

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 10) || 10
const root = path.resolve(import.meta.dirname, '..')
const bin = path.join(root, 'bin/run.js')

/** CPU seconds (user + sys) of one run, and its exit code. */
function cpu(args: string[], env: NodeJS.ProcessEnv): {seconds: number; status: number} {
  const result = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, ...args], {cwd: root, env, encoding: 'utf8'})
  const last = result.stderr.trim().split('\n').pop() ?? ''
  const match = /^(\d+\.\d+) (\d+\.\d+)$/.exec(last)
  if (!match) throw new Error(`no timing from /usr/bin/time for ${args.join(' ')}: ${result.stderr.slice(-500)}`)
  // /usr/bin/time reports "Command exited with non-zero status N" before the times.
  const status = Number(/Command exited with non-zero status (\d+)/.exec(result.stderr)?.[1] ?? 0)
  return {seconds: Number(match[1]) + Number(match[2]), status}
}

const cacheHome = mkdtempSync(path.join(tmpdir(), 'bench-startup-cache-'))
const controlPlane = await startControlPlane({controllerManager: false})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}))
// In another process: spawnSync blocks this one's event loop.
const probes = spawn(process.execPath, ['-e', `
  require('node:http').createServer((req, res) => res.end('[+]ping ok\\n' + req.url.slice(1, 7) + ' check passed\\n'))
    .listen(0, '127.0.0.1', function () { console.log(this.address().port) })`], {stdio: ['ignore', 'pipe', 'inherit']})
const probePort = await new Promise<number>((resolve) => probes.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))))
try {
  const namespace = await namespaceNamed(client, 'bench-startup')
  await client.create({group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace}, {
    apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {name: 'web', namespace, annotations: {polycrate_endpoint_monitor: 'true'}},
    spec: {ingressClassName: 'nginx', rules: [{host: 'web.example.com'}]},
  })
  const unreachable = `http://127.0.0.1:${await freePort()}`
  const commands: Record<string, {args: string[]; status: number}> = {
    'crds --list': {args: ['operator', 'crds', '--list'], status: 0},
    'health': {args: ['operator', 'health', '--url', `http://127.0.0.1:${probePort}`], status: 0},
    'health (cannot reach)': {args: ['operator', 'health', '--url', unreachable], status: 2},
    'explain': {args: ['operator', 'explain', 'ingress/web', '-n', namespace, '--kubeconfig', controlPlane.kubeconfigPath], status: 0},
  }
  const env = {...process.env, NODE_OPTIONS: '', XDG_CACHE_HOME: cacheHome}
  const samples: Record<string, number[]> = {'node -e 0': []}
  for (const [name, command] of Object.entries(commands)) {
    samples[name] = []
    samples[`${name} (first run, no code cache)`] = []
    samples[`${name} (oclif)`] = []
    cpu([bin, ...command.args], env) // warm-up: writes the code cache
  }
  for (let round = 0; round < runs; round++) {
    samples['node -e 0']!.push(cpu(['-e', '0'], env).seconds)
    for (const [name, command] of Object.entries(commands)) {
      const empty = mkdtempSync(path.join(tmpdir(), 'bench-cache-'))
      const variants: Array<[string, NodeJS.ProcessEnv]> = [
        [name, env],
        [`${name} (first run, no code cache)`, {...env, XDG_CACHE_HOME: empty}],
        [`${name} (oclif)`, {...env, POLYCRATE_NO_FAST_PATH: '1'}],
      ]
      for (const [label, variantEnv] of variants) {
        const {seconds, status} = cpu([bin, ...command.args], variantEnv)
        if (status !== command.status) throw new Error(`${label} exited ${status}, expected ${command.status}`)
        samples[label]!.push(seconds)
      }
      rmSync(empty, {recursive: true, force: true})
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
  const baseline = mean(samples['node -e 0']!)
  const rows = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, {
    cpuSeconds: Math.round(mean(values) * 1000) / 1000,
    ratio: Math.round((mean(values) / baseline) * 100) / 100,
  }]))
  console.table(rows)
  const result = {runs, node: process.version, baselineCpuSeconds: Math.round(baseline * 1000) / 1000, target: 'ratio ≤ 2.5', commands: rows}
  await mkdir(path.join(import.meta.dirname, 'results'), {recursive: true})
  await writeFile(path.join(import.meta.dirname, 'results', 'startup.json'), JSON.stringify(result, null, 2) + '\n')
} finally {
  client.close()
  probes.kill()
  await controlPlane.stop()
  rmSync(cacheHome, {recursive: true, force: true})
}
