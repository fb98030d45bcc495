/** Mocha root hooks of the integration layer: one real control plane for the whole run. */
import {startSharedControlPlane, stopSharedControlPlane} from './cluster.js'

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    // A cold build of etcd + kube-apiserver + kube-controller-manager takes a while on 2 cores.
    this.timeout(60 * 60 * 1000)
    await startSharedControlPlane()
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000)
    await stopSharedControlPlane()
  },
}
