/**
 * What a process's heap gained between V8 heap snapshots (bench:soak --heap-snapshots DIR writes them):
 *
 *   node --import tsx bench/heap-diff.ts A.heapsnapshot B.heapsnapshot [C.heapsnapshot …] [--top N]
 *
 * Snapshots of one process do not share object ids (each is numbered afresh), so objects are matched by where they
 * hang: every object is charged to its owner, the nearest object of a named class (not Object, Array, Map, a
 * closure's context, …) on its shortest retainer path from the GC roots, with the property it hangs from
 * (`ResultBuffer.items`, `SeenDeletions.seen`). The report: self sizes per snapshot split into JIT (V8's `code` and
 * `hidden` objects: machine code, bytecode, feedback vectors, deopt data — they grow while functions tier up and
 * level off) and data (everything else), then the owners whose data grew most from the first snapshot to the last,
 * with their size and object count in each. A leak is an owner that grows snapshot after snapshot.
 */
import {readFileSync} from 'node:fs'
import {parseArgs} from 'node:util'

interface RawSnapshot {
  snapshot: {meta: {node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]]}}
  nodes: number[]
  edges: number[]
  strings: string[]
}

/** Objects whose owner is rather the thing that holds them. */
const GENERIC = new Set(['', 'Object', 'Array', 'Map', 'Set', 'WeakMap', 'Promise', 'Generator', 'system / Context', 'system / PropertyArray'])

interface Owners {
  /** Self sizes of JIT objects and of data, bytes. */
  jit: number
  data: number
  /** Data per owner (`Class.property`): bytes and objects. */
  owners: Map<string, {bytes: number; count: number}>
}

function analyse(file: string): Owners {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as RawSnapshot
  const {node_fields: nodeFields, node_types: [nodeTypes], edge_fields: edgeFields, edge_types: [edgeTypes]} = raw.snapshot.meta
  const {nodes, edges, strings} = raw
  const N = nodeFields.length
  const E = edgeFields.length
  const count = nodes.length / N
  const [fType, fName, fSize, fEdges] = ['type', 'name', 'self_size', 'edge_count'].map((field) => nodeFields.indexOf(field)) as [number, number, number, number]
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((field) => edgeFields.indexOf(field)) as [number, number, number]
  const type = (i: number) => nodeTypes[nodes[i * N + fType]!]!
  const name = (i: number) => strings[nodes[i * N + fName]!]!
  const firstEdge = new Uint32Array(count + 1)
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e
    e += nodes[i * N + fEdges]! * E
  }
  firstEdge[count] = edges.length

  // The shortest retainer tree from the root (node 0), weak edges left out: parent and the property name it hangs from.
  const parent = new Int32Array(count).fill(-1)
  const via = new Array<string>(count)
  const queue = new Int32Array(count)
  let head = 0
  let tail = 0
  queue[tail++] = 0
  parent[0] = 0
  while (head < tail) {
    const i = queue[head++]!
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += E) {
      const edgeType = edgeTypes[edges[e + eType]!]
      if (edgeType === 'weak' || edgeType === 'shortcut') continue
      const to = edges[e + eTo]! / N
      if (parent[to] !== -1) continue
      parent[to] = i
      via[to] = edgeType === 'property' || edgeType === 'internal' || edgeType === 'context' ? strings[edges[e + eName]!]! : ''
      queue[tail++] = to
    }
  }

  const result: Owners = {jit: 0, data: 0, owners: new Map()}
  for (let i = 1; i < count; i++) {
    const size = nodes[i * N + fSize]!
    const t = type(i)
    if (t === 'code' || t === 'hidden') {
      result.jit += size
      continue
    }
    result.data += size
    let owner = parent[i] === -1 ? '(unreachable)' : '(roots)'
    let property = via[i] ?? ''
    for (let j = parent[i]!, steps = 0; j > 0 && steps < 50; j = parent[j]!, steps++) {
      const tj = type(j)
      if (tj === 'synthetic') break
      if ((tj === 'object' || tj === 'closure' || tj === 'native') && !GENERIC.has(name(j))) {
        owner = `${name(j).slice(0, 60)}${property ? `.${property}` : ''}`
        break
      }
      property = via[j] ?? ''
    }
    const entry = result.owners.get(owner) ?? {bytes: 0, count: 0}
    entry.bytes += size
    entry.count++
    result.owners.set(owner, entry)
  }
  return result
}

const {values, positionals: files} = parseArgs({args: process.argv.slice(2), allowPositionals: true, options: {top: {type: 'string', default: '30'}}})
if (files.length < 2) {
  console.error('usage: node --import tsx bench/heap-diff.ts A.heapsnapshot B.heapsnapshot [C.heapsnapshot …] [--top N]')
  process.exit(2)
}
const KiB = (bytes: number) => (bytes / 1024).toFixed(1)
const snapshots = files.map((file) => {
  process.stderr.write(`reading ${file}\n`)
  return analyse(file)
})
console.log(`self sizes, KiB, per snapshot (${files.length}):`)
console.log(`  JIT (code, bytecode, feedback): ${snapshots.map((s) => KiB(s.jit)).join(' → ')}`)
console.log(`  data:                           ${snapshots.map((s) => KiB(s.data)).join(' → ')}`)
const first = snapshots[0]!
const last = snapshots.at(-1)!
const owners = new Set(snapshots.flatMap((s) => [...s.owners.keys()]))
const growth = [...owners]
  .map((owner) => ({owner, delta: (last.owners.get(owner)?.bytes ?? 0) - (first.owners.get(owner)?.bytes ?? 0)}))
  .sort((a, b) => b.delta - a.delta)
  .slice(0, Number(values.top))
console.log('\ndata growth by owner, first → last (KiB per snapshot, objects per snapshot):')
for (const {owner, delta} of growth) {
  const sizes = snapshots.map((s) => KiB(s.owners.get(owner)?.bytes ?? 0)).join(' ')
  const counts = snapshots.map((s) => s.owners.get(owner)?.count ?? 0).join(' ')
  console.log(`${`${delta >= 0 ? '+' : ''}${KiB(delta)}`.padStart(9)}  ${owner}  [${sizes}] (${counts})`)
}
