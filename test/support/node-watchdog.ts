/**
 * Started by node.ts as a detached process: waits until the process that started a cluster with a real Node is gone
 * and, unless that process stopped the cluster itself (then it kills this watchdog first), takes back everything the
 * Node changed on the host (node-host.ts). Usage: node --import tsx node-watchdog.ts <owner pid>
 */
import {alive, cleanupNode, readState} from './node-host.js'

const owner = Number(process.argv[2])
if (!Number.isInteger(owner) || owner <= 0) {
  console.error('usage: node-watchdog.ts <owner pid>')
  process.exit(2)
}
while (alive(owner)) await new Promise((resolve) => setTimeout(resolve, 1000))
const state = await readState()
// a later run may have taken the host over meanwhile (it cleans up by itself then)
if (state?.ownerPid === owner) await cleanupNode((line) => console.error(line))
