/**
 * A throwaway local cluster for development: real etcd + kube-apiserver + kube-controller-manager, the
 * polycrate.io CRDs installed, the operator namespace created. Prints the kubeconfig path; Ctrl-C tears it down.
 *
 *   npm run dev-cluster            then, in another shell:
 *   ./bin/run.js operator run --kubeconfig <printed path>
 *
 * With --node it is a cluster with a real Node (test/support/node.ts; needs root and Debian's containerd, runc and
 * CNI plugins): kube-scheduler, kube-proxy, containerd and a kubelet run too, Pods run, and the image archives of
 * dist/image/*.tar (`npm run image`) or of --image are imported into the Node so the operator can run as a Pod.
 *
 *   npm run dev-cluster -- --node [--image path/to/image.tar …]
 */
import {existsSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import path from 'node:path'
import {parseArgs} from 'node:util'
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import {KubeClient} from '../src/kube/client.js'
import {installCrds} from '../src/kube/crd-install.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../src/operator/conventions.js'
import {startControlPlane, type ControlPlane} from '../test/support/control-plane.js'
import {startCluster, type NodeCluster} from '../test/support/node.js'

const usage = `Usage: npm run dev-cluster -- [--node] [--image ARCHIVE …]

  --node     a cluster with a real Node (root; containerd, runc, CNI plugins): Pods run
  --image    with --node: an image archive (OCI layout or docker-save tar) to import into the Node; repeatable.
             Default: every dist/image/*.tar (what \`npm run image\` writes)`

let values
try {
  ;({values} = parseArgs({
    options: {
      node: {type: 'boolean', default: false},
      image: {type: 'string', multiple: true},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  }))
} catch (error) {
  console.error(`dev-cluster: ${error instanceof Error ? error.message : String(error)}\n\n${usage}`)
  process.exit(2)
}
if (values.help) {
  console.log(usage)
  process.exit(0)
}
if (values.image && !values.node) {
  console.error(`dev-cluster: --image needs --node (only a cluster with a Node runs images)\n\n${usage}`)
  process.exit(2)
}
for (const image of values.image ?? []) {
  if (!existsSync(image)) {
    console.error(`dev-cluster: image archive ${image} does not exist; build it with \`npm run image\` or pass another path`)
    process.exit(2)
  }
}

const log = (line: string) => console.error(line)
let cluster: ControlPlane
let node: NodeCluster | undefined
try {
  if (values.node) cluster = node = await startCluster({log})
  else cluster = await startControlPlane({log})
} catch (error) {
  console.error(`dev-cluster: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  console.error('stopping …')
  await cluster.stop()
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())

const client = KubeClient.from(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
await installCrds(client, customResourceDefinitions(allCrds))
await client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: DEFAULT_NAMESPACE}})
client.close()

if (node) {
  const archives = values.image ?? (await readdir('dist/image').catch(() => [] as string[])).filter((f) => f.endsWith('.tar')).map((f) => path.join('dist/image', f))
  for (const archive of archives) {
    const names = await node.loadImage(archive)
    console.log(`image loaded from ${archive}: ${names.join(', ') || '(no name in the archive)'}`)
  }
  if (archives.length === 0) console.log('no image archive in dist/image/ (`npm run image` builds the operator image); --image PATH imports another')
  console.log(`node ${node.nodeName} Ready; Pods reach the host at ${node.hostIP}`)
  console.log(`images built here: ${node.images.pause} (sandbox), ${node.images.echo} (HTTP test server)`)
  console.log(`the Polycrate API simulator, reachable from Pods: npm run api-sim -- --host ${node.hostIP} --port 8000`)
  console.log(`  (then POLYCRATE_API_URL=http://${node.hostIP}:8000 in the operator's config)`)
}
console.log(`cluster ready: ${cluster.server}`)
console.log(`export KUBECONFIG=${cluster.kubeconfigPath}`)
console.log('Ctrl-C stops it and removes everything it started.')
setInterval(() => {}, 1 << 30)
