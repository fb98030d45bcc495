/**
 * A local Polycrate API (the simulator of test/support/api-simulator) for running the operator end to end
 * without the hosted API. Creates an organization and a workspace, issues an agent token (what the operator's
 * OperatorConfig secret holds) and a platform-admin token (for `polycrate operator rollout …`: POLYCRATE_API_TOKEN,
 * the variable those commands read, as `npm start` names it too), prints them, and
 * serves until Ctrl-C. A local development tool: printing the tokens is the point.
 *
 *   npm run api-sim -- --port 8000 [--workspace NAME] [--organization NAME] [--cluster NAME]
 *                      [--operator-version 0.36.0] [--rollout-percentage 25] [--quiet]
 */
import {parseArgs} from 'node:util'
import {ApiSimulator} from '../test/support/api-simulator/index.js'

const usage = `Usage: npm run api-sim -- [--port 8000] [--host 127.0.0.1] [--workspace NAME] [--organization NAME]
                       [--cluster NAME] [--operator-version VERSION] [--rollout-percentage N] [--quiet]

  --port                port to listen on (default 8000; 0 = any free port)
  --host                address to bind (default 127.0.0.1)
  --workspace           workspace to create (default "dev")
  --organization        organization to create (default "dev-org")
  --cluster             also create a K8sCluster of that name in the workspace
  --operator-version    SystemConfig OPERATOR_BLOCK_VERSION (the rollout's desired version)
  --rollout-percentage  SystemConfig OPERATOR_ROLLOUT_PERCENTAGE
  --quiet               do not print one line per request`

function fail(message: string): never {
  console.error(`api-sim: ${message}\n\n${usage}`)
  process.exit(2)
}

let values
try {
  ;({values} = parseArgs({
    options: {
      port: {type: 'string', default: '8000'},
      host: {type: 'string', default: '127.0.0.1'},
      workspace: {type: 'string', default: 'dev'},
      organization: {type: 'string', default: 'dev-org'},
      cluster: {type: 'string'},
      'operator-version': {type: 'string'},
      'rollout-percentage': {type: 'string'},
      quiet: {type: 'boolean', default: false},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  }))
} catch (error) {
  fail(error instanceof Error ? error.message : String(error))
}
if (values.help) {
  console.log(usage)
  process.exit(0)
}

const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port "${values.port}" is not a port number`)
const percentage = values['rollout-percentage']
if (percentage !== undefined && !(Number(percentage) >= 0 && Number(percentage) <= 100)) fail(`--rollout-percentage "${percentage}" is not in 0..100`)

const simulator = await ApiSimulator.start({
  port,
  host: values.host,
  onRequest: values.quiet
    ? undefined
    : (entry) => {
        const query = new URLSearchParams(entry.query).toString()
        console.error(`${new Date(entry.at).toISOString()} ${entry.method} ${entry.path}${query ? `?${query}` : ''} → ${entry.status === 0 ? 'dropped' : entry.status}`)
      },
})

const organization = simulator.createOrganization(values.organization)
const workspace = simulator.createWorkspace({name: values.workspace, organizationId: organization.id})
if (values.cluster) simulator.insert('kubernetes/clusters', {name: values.cluster, kind: 'generic', workspace: workspace.id})
if (values['operator-version']) simulator.systemConfig.OPERATOR_BLOCK_VERSION = values['operator-version']
if (percentage !== undefined) simulator.systemConfig.OPERATOR_ROLLOUT_PERCENTAGE = Number(percentage)
const agentToken = simulator.issueToken({kind: 'agent', workspaceId: workspace.id})
const adminToken = simulator.issueToken({kind: 'platform-admin'})

console.log(`Polycrate API simulator listening on ${simulator.url}`)
console.log(`organization ${organization.name} (${organization.id}), workspace ${workspace.name} (${workspace.id})`)
console.log('')
console.log(`POLYCRATE_API_URL=${simulator.url}`)
console.log(`POLYCRATE_AGENT_TOKEN=${agentToken}    # the operator's token (its Secret polycrate-api-token)`)
console.log(`POLYCRATE_API_TOKEN=${adminToken}    # platform-admin: what \`polycrate operator rollout\` reads (POLYCRATE_ADMIN_TOKEN works too)`)
console.log('')
console.log('Ctrl-C stops it (everything is in memory and is lost).')

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await simulator.close()
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
