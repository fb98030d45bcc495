/**
 * A memory cgroup with a limit (cgroup v2, or v1's memory hierarchy), to run a process as a container with that limit
 * runs it: Node sizes V8 from the limit it finds at start, and the cgroup's working set (usage minus inactive file
 * pages, what the kubelet reports and evicts by) is the container's memory. Needs root; `undefined` without it.
 */
import {existsSync, readFileSync} from 'node:fs'
import {mkdir, readFile, rmdir, writeFile} from 'node:fs/promises'
import path from 'node:path'

export interface MemoryCgroup {
  dir: string
  /** A command prefix that moves the process into the cgroup before it starts: `[...wrap, node, args…]`. */
  wrap: string[]
  /** usage − inactive_file, in bytes. */
  workingSetBytes(): Promise<number>
  /** Removes the cgroup (once its processes are gone). */
  remove(): Promise<void>
}

/** Where this process's own cgroup is: the unified (v2) one, else the v1 memory hierarchy's. */
function ownCgroupDir(): {dir: string; v2: boolean} | undefined {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n')
  const unified = lines.find((line) => line.startsWith('0::'))
  if (unified && existsSync('/sys/fs/cgroup/cgroup.controllers')) return {dir: path.join('/sys/fs/cgroup', unified.slice(3)), v2: true}
  const memory = lines.map((line) => line.split(':')).find((fields) => fields[1]?.split(',').includes('memory'))
  if (memory && existsSync('/sys/fs/cgroup/memory')) return {dir: path.join('/sys/fs/cgroup/memory', memory[2] ?? '/'), v2: false}
  return undefined
}

export async function createMemoryCgroup(name: string, limitBytes: number): Promise<MemoryCgroup | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const own = ownCgroupDir()
  if (!own) return undefined
  const dir = path.join(own.dir, name)
  try {
    await mkdir(dir, {recursive: true})
    await writeFile(path.join(dir, own.v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(limitBytes))
  } catch {
    return undefined
  }
  const stat = async (key: string) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(await readFile(path.join(dir, 'memory.stat'), 'utf8'))?.[1] ?? 0)
  return {
    dir,
    wrap: ['sh', '-c', `echo $$ > ${path.join(dir, 'cgroup.procs')} && exec "$@"`, 'sh'],
    async workingSetBytes() {
      const usage = Number(await readFile(path.join(dir, own.v2 ? 'memory.current' : 'memory.usage_in_bytes'), 'utf8'))
      return Math.max(0, usage - await stat(own.v2 ? 'inactive_file' : 'total_inactive_file'))
    },
    async remove() {
      await rmdir(dir).catch(() => {})
    },
  }
}
