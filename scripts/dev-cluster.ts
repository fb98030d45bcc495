/**
 * A throwaway local cluster for development: real etcd + kube-apiserver + kube-controller-manager, the
 * polycrate.io CRDs installed, the operator namespace created. Prints the kubeconfig path; Ctrl-C tears it down.
 *
 *   npm run dev-cluster            then, in another shell:
 *   ./bin/run.js operator run --kubeconfig <printed path>
 */
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import {KubeClient} from '../src/kube/client.js'
import {installCrds} from '../src/kube/crd-install.js'
import {loadKubeConfig} from '../src/kube/kubeconfig.js'
import {DEFAULT_NAMESPACE, FIELD_MANAGER} from '../src/operator/conventions.js'
import {startControlPlane} from '../test/support/control-plane.js'

const controlPlane = await startControlPlane({log: (line) => console.error(line)})
const client = KubeClient.from(loadKubeConfig({kubeconfig: controlPlane.kubeconfigPath}), {fieldManager: FIELD_MANAGER})
await installCrds(client, customResourceDefinitions(allCrds))
await client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: DEFAULT_NAMESPACE}})
client.close()
console.log(`cluster ready: ${controlPlane.server}`)
console.log(`export KUBECONFIG=${controlPlane.kubeconfigPath}`)
const stop = async () => {
  await controlPlane.stop()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
setInterval(() => {}, 1 << 30)
