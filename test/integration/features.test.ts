import assert from 'node:assert/strict'
import type {OperatorConfigStatus} from '../../src/crds/operatorconfig.js'
import type {KubeObject} from '../../src/kube/client.js'
import {applyCrd, waitEstablished} from '../../src/kube/crd-install.js'
import {Controller} from '../../src/operator/runtime/controller.js'
import type {Feature} from '../../src/operator/runtime/feature.js'
import type {OperatorConfig} from '../../src/operator/config/operator-config.js'
import {configRef as configOf, eventually} from '../support/helpers.js'
import {inProcessOperator} from '../support/operator-harness.js'

const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {name: 'widgets.example.com'},
  spec: {
    group: 'example.com',
    names: {kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList'},
    scope: 'Namespaced',
    versions: [{name: 'v1', served: true, storage: true, schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}}}],
  },
}
const crdRef = {group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'widgets.example.com'}

describe('features start and stop with the OperatorConfig and the CRD gate (in-process operator)', function () {
  this.timeout(120_000)
  const reconciled: string[] = []
  const witnessed: string[] = []
  /**
   * A feature that watches a CRD that may not exist (like HTTPRoute discovery) and records what it sees. The
   * witness watches the same CRD with an informer of its own (`own`: a transform makes it one) and is always
   * enabled: what it saw, a stopped widget-discovery would have seen.
   */
  const widgetFeature = (name: string, seen: string[], enabled: Feature<OperatorConfig>['enabled'], own = false): Feature<OperatorConfig> => ({
    name,
    enabled,
    requiredCrds: ['widgets.example.com'],
    permissions: [{group: 'example.com', resource: 'widgets', verbs: ['get', 'list', 'watch']}],
    settings: (config) => config.node_discovery.label_selector,
    start(manager) {
      const informer = manager.informer({resource: {group: 'example.com', version: 'v1', plural: 'widgets'}, ...(own ? {transform: (object: KubeObject) => object} : {})})
      const controller = new Controller({
        name,
        watches: [{informer}],
        reconcile: async ({key}) => void seen.push(key),
        logger: manager.logger,
        metrics: manager.metrics,
      })
      manager.addController(controller)
      return {
        async stop() {
          await manager.removeController(controller)
          await manager.releaseInformer(informer)
        },
      }
    },
  })
  const harness = inProcessOperator({
    spec: false,
    features: () => [widgetFeature('widget-discovery', reconciled, (config) => config.node_discovery.enabled), widgetFeature('widget-witness', witnessed, () => true, true)],
  })

  it('follows enabled flags and CRDs without a restart', async () => {
    const {client, namespace} = harness
    const configRef = configOf(namespace)
    const widgets = async () => (await client.get<KubeObject & {status?: OperatorConfigStatus}>(configRef)).status?.controllers?.find((c) => c.name === 'widget-discovery')
    try {
      await client.create(configRef, {apiVersion: 'polycrate.io/v1alpha1', kind: 'OperatorConfig', metadata: {name: 'default', namespace}, spec: {}})
      await eventually(async () => (await widgets())?.reason === 'WaitingForCRDs: widgets.example.com', 20_000, 'waiting for the CRD')

      await applyCrd(client, widgetCrd)
      await waitEstablished(client, 'widgets.example.com')
      await eventually(async () => (await widgets())?.running === true, 20_000, 'started when the CRD appeared')
      await client.create({group: 'example.com', version: 'v1', plural: 'widgets', namespace}, {apiVersion: 'example.com/v1', kind: 'Widget', metadata: {name: 'w1', namespace}})
      await eventually(async () => reconciled.includes(`${namespace}/w1`), 20_000, 'the feature reconciles')

      await client.mergePatch(configRef, {spec: {node_discovery: {enabled: false}}})
      await eventually(async () => {
        const state = await widgets()
        return state?.running === false && state.reason === 'Disabled'
      }, 20_000, 'stopped when disabled')
      const before = reconciled.length
      await client.create({group: 'example.com', version: 'v1', plural: 'widgets', namespace}, {apiVersion: 'example.com/v1', kind: 'Widget', metadata: {name: 'w2', namespace}})
      await eventually(async () => witnessed.includes(`${namespace}/w2`), 20_000, 'the witness, watching widgets too, saw w2')
      assert.equal(reconciled.length, before, 'a stopped feature reconciled')

      await client.mergePatch(configRef, {spec: {node_discovery: {enabled: true}}})
      await eventually(async () => reconciled.includes(`${namespace}/w2`), 20_000, 'restarted when enabled again, with a fresh cache')

      await client.delete(crdRef)
      await eventually(async () => (await widgets())?.reason === 'WaitingForCRDs: widgets.example.com', 30_000, 'stopped when the CRD went')
    } finally {
      await client.delete(crdRef).catch(() => {})
    }
  })
})
