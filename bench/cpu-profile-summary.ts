/**
 * What a V8 CPU profile (`node --cpu-prof`, e.g. `npm run bench -- --cpu-prof`) spent its time on: self time per
 * frame (function, file, line), the top frames, and the total by where the code lives — our modules (dist/ or src/),
 * each dependency (node_modules/<package>), Node's internals (node:…), and V8's own entries (GC, idle, program).
 *
 *   node --import tsx bench/cpu-profile-summary.ts FILE.cpuprofile [--top 10] [--json]
 */
import {readFile} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

interface ProfileNode {
  id: number
  callFrame: {functionName: string; url: string; lineNumber: number}
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface FrameTime {
  frame: string
  group: string
  ms: number
  share: number
}

/** Where a frame's code lives: `ours`, `dep:<package>`, `node`, or V8's own entry (`(garbage collector)`, …). */
export function frameGroup(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : 'node (native)'
  if (url.startsWith('node:')) return 'node'
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (dep) return `dep:${dep[1]}`
  if (/\/(dist|src|bin)\//.test(url)) return 'ours'
  return 'other'
}

/** Self time per frame and per group (pure): each sample's time delta goes to the node it hit. */
export function summarize(profile: CpuProfile): {totalMs: number; frames: FrameTime[]; groups: Array<{group: string; ms: number; share: number}>} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const frames = new Map<string, {group: string; us: number}>()
  for (const [id, us] of selfUs) {
    const {functionName, url, lineNumber} = byId.get(id)!.callFrame
    const file = url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|dist|src|bin)\//, '$1/')
    const frame = `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim()
    const entry = frames.get(frame) ?? {group: frameGroup(url, functionName), us: 0}
    entry.us += us
    frames.set(frame, entry)
  }
  const total = [...frames.values()].reduce((sum, {us}) => sum + us, 0)
  const share = (us: number) => (total > 0 ? us / total : 0)
  const groups = new Map<string, number>()
  for (const {group, us} of frames.values()) groups.set(group, (groups.get(group) ?? 0) + us)
  return {
    totalMs: total / 1000,
    frames: [...frames].map(([frame, {group, us}]) => ({frame, group, ms: us / 1000, share: share(us)})).sort((a, b) => b.ms - a.ms),
    groups: [...groups].map(([group, us]) => ({group, ms: us / 1000, share: share(us)})).sort((a, b) => b.ms - a.ms),
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const {values, positionals} = parseArgs({options: {top: {type: 'string', default: '10'}, json: {type: 'boolean', default: false}}, allowPositionals: true})
  if (positionals.length !== 1) {
    console.error('usage: node --import tsx bench/cpu-profile-summary.ts FILE.cpuprofile [--top 10] [--json]')
    process.exit(2)
  }
  const summary = summarize(JSON.parse(await readFile(positionals[0]!, 'utf8')) as CpuProfile)
  const top = Number(values.top)
  if (values.json) {
    console.log(JSON.stringify({...summary, frames: summary.frames.slice(0, top)}, null, 2))
  } else {
    const pct = (share: number) => `${(share * 100).toFixed(1).padStart(5)} %`
    console.log(`${summary.totalMs.toFixed(0)} ms sampled\n\nBy where the code lives:`)
    for (const {group, ms, share} of summary.groups.slice(0, 20)) console.log(`  ${pct(share)} ${ms.toFixed(0).padStart(7)} ms  ${group}`)
    console.log(`\nTop ${top} frames by self time:`)
    for (const {frame, group, ms, share} of summary.frames.slice(0, top)) console.log(`  ${pct(share)} ${ms.toFixed(0).padStart(7)} ms  ${frame}  [${group}]`)
  }
}
