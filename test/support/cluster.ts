/** The one control plane of an integration run, plus helpers to use it from tests. */
import {randomBytes} from 'node:crypto'
import {allCrds} from '../../src/crds/index.js'
import {customResourceDefinitions} from '../../src/crds/render.js'
import {KubeClient} from '../../src/kube/client.js'
import {installCrds} from '../../src/kube/crd-install.js'
import {loadKubeConfig} from '../../src/kube/kubeconfig.js'
import {startControlPlane, type ControlPlane} from './control-plane.js'
import {FIELD_MANAGER} from '../../src/operator/conventions.js'

let current: ControlPlane | undefined

export async function startSharedControlPlane(): Promise<ControlPlane> {
  const started = Date.now()
  current = await startControlPlane({log: (line) => process.stderr.write(`[control plane] ${line}\n`)})
  process.stderr.write(`[control plane] ready at ${current.server} after ${((Date.now() - started) / 1000).toFixed(1)}s\n`)
  return current
}

export async function stopSharedControlPlane(): Promise<void> {
  await current?.stop()
  current = undefined
}

export function controlPlane(): ControlPlane {
  if (!current) throw new Error('no control plane: run integration tests with --require test/support/integration-hooks.ts')
  return current
}

/** A client for the test cluster, with admin rights. Close it in `after`. */
export function adminClient(): KubeClient {
  return KubeClient.from(loadKubeConfig({kubeconfig: controlPlane().kubeconfigPath}), {fieldManager: FIELD_MANAGER})
}

let crdsInstalled: Promise<unknown> | undefined

/** Installs the polycrate.io CRDs once per run (idempotent). */
export function ensureCrds(): Promise<unknown> {
  crdsInstalled ??= (async () => {
    const client = adminClient()
    try {
      await installCrds(client, customResourceDefinitions(allCrds))
    } finally {
      client.close()
    }
  })()
  return crdsInstalled
}

/** Creates a namespace with a unique name (deleted namespaces stay Terminating for a while). */
export async function freshNamespace(client: KubeClient, prefix = 'test'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`
  await client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  return name
}
