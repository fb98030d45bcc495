/**
 * `npm run bench`: the endpoint bench (B, P1–P3: bench/endpoints.ts), then P4 (K8sApps and Artifacts at 10,000 pods:
 * bench/k8sapps.ts), each in a process and on a control plane of its own. Flags starting with `--p4-` go to P4
 * without that prefix (`--p4-idle-minutes 1`), the others to the endpoint bench; `--only endpoints|p4` runs one.
 */
import {spawnSync} from 'node:child_process'
import path from 'node:path'

const args = process.argv.slice(2)
let only: string | undefined
const endpointArgs: string[] = []
const p4Args: string[] = []
for (let i = 0; i < args.length; i++) {
  const arg = args[i]!
  const value = args[i + 1] !== undefined && !args[i + 1]!.startsWith('--') ? args[++i] : undefined
  if (arg === '--only') only = value
  else if (arg.startsWith('--p4-')) p4Args.push(`--${arg.slice('--p4-'.length)}`, ...(value !== undefined ? [value] : []))
  else endpointArgs.push(arg, ...(value !== undefined ? [value] : []))
}
if (only !== undefined && only !== 'endpoints' && only !== 'p4') {
  console.error('--only must be "endpoints" or "p4"')
  process.exit(2)
}
let status = 0
for (const [name, script, scriptArgs] of [['endpoints', 'endpoints.ts', endpointArgs], ['p4', 'k8sapps.ts', p4Args]] as const) {
  if (only && only !== name) continue
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, script), ...scriptArgs], {stdio: 'inherit'})
  if (result.status !== 0) status = result.status ?? 1
}
process.exit(status)
