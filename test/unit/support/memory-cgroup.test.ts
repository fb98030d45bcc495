import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {promisify} from 'node:util'
import {createMemoryCgroup} from '../../support/memory-cgroup.js'

describe('memory cgroup (bench support: the operator as a container with a memory limit runs)', () => {
  it('a process started through wrap runs under the limit: Node sees it and sizes V8 from it', async function () {
    const cgroup = await createMemoryCgroup(`unit-${process.pid}`, 512 * 1024 * 1024)
    if (!cgroup) return this.skip() // not root, or no cgroup hierarchy: the bench falls back to V8 flags
    try {
      const [command, ...args] = [...cgroup.wrap, process.execPath, '-e', 'console.log(process.constrainedMemory(), require("v8").getHeapStatistics().heap_size_limit)']
      const {stdout} = await promisify(execFile)(command!, args)
      const [limit, heapLimit] = stdout.trim().split(' ').map(Number)
      assert.equal(limit, 512 * 1024 * 1024)
      assert.ok(heapLimit! < 400 * 1024 * 1024, `V8 sized from the limit (heap limit ${heapLimit})`)
      assert.ok(await cgroup.workingSetBytes() >= 0)
    } finally {
      await cgroup.remove()
    }
  })
})
