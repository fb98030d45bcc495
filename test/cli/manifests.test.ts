import assert from 'node:assert/strict'
import {runCommand} from '@oclif/test'
import yaml from 'js-yaml'

type Container = {image: string}
type Obj = {apiVersion: string; kind: string; metadata: {name: string; namespace?: string}; spec?: {template?: {spec: {containers: Container[]}}}; rules?: unknown[]}

describe('polycrate operator manifests', () => {
  it('prints Namespace, ServiceAccount, RBAC, Deployment, Services and NetworkPolicy as multi-document YAML', async () => {
    const {stdout, error} = await runCommand(['operator', 'manifests', '--namespace', 'ops', '--image', 'registry.example.com/op:1'])
    assert.equal(error, undefined)
    const objects = yaml.loadAll(stdout).filter(Boolean) as Obj[]
    assert.deepEqual(objects.map((o) => o.kind), ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Role', 'RoleBinding', 'Deployment', 'Service', 'Service', 'NetworkPolicy'])
    // The second Role: the DNS01 webhook reads the front-proxy CA ConfigMap in kube-system.
    assert.deepEqual(objects.filter((o) => o.kind === 'Role').map((o) => o.metadata.namespace), ['ops', 'kube-system'])
    for (const o of objects.filter((o) => !['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind))) assert.equal(o.metadata.namespace, 'ops', o.kind)
    assert.equal(objects.find((o) => o.kind === 'Deployment')!.spec!.template!.spec.containers[0]!.image, 'registry.example.com/op:1')
  })

  it('-o json prints a List; --dns01-webhook and --vm-service-scrape add their objects', async () => {
    const {stdout, error} = await runCommand(['operator', 'manifests', '-o', 'json', '--dns01-webhook', '--vm-service-scrape', '--dns01-group-name', 'acme.example.org'])
    assert.equal(error, undefined)
    const list = JSON.parse(stdout) as {kind: string; items: Obj[]}
    assert.equal(list.kind, 'List')
    const kinds = list.items.map((o) => o.kind)
    for (const kind of ['APIService', 'Issuer', 'Certificate', 'VMServiceScrape']) assert.ok(kinds.includes(kind), kind)
    assert.equal(list.items.find((o) => o.kind === 'APIService')!.metadata.name, 'v1alpha1.acme.example.org')
  })

  it('a malformed --cert-manager-service-account exits 2 and says the form', async () => {
    const {error} = await runCommand(['operator', 'manifests', '--dns01-webhook', '--cert-manager-service-account', 'cert-manager'])
    assert.equal(error?.oclif?.exit, 2)
    assert.match(error!.message, /namespace\/name/)
  })
})
