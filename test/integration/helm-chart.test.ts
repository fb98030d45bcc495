/**
 * The Helm chart as `npm run chart` packs it, checked with the real helm v4 (test/helm/build.sh): `helm lint`, the
 * values schema, and `helm template` against `polycrate operator manifests --values` object by object — for the
 * default values, the operator block README's full example, and generated values (fast-check over the chart's
 * values.schema.json). The only objects the chart adds are Helm's own: the pre-delete hook (`--no-hooks` leaves it out).
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import fc from 'fast-check'
import yaml from 'js-yaml'
import {GATED_APIS} from '../../src/operator/chart/chart.js'
import {RELEASE_HOOK_NAME} from '../../src/operator/chart/release-hook.js'
import {parseBlockValues, selectBlockConfig} from '../../src/operator/install/values.js'
import {operatorVersion} from '../../src/version.js'
import {compareObjects, helm, helmTemplate, manifestsOf, type Comparison} from '../support/helm.js'
import {valuesArbitrary} from '../support/values-arbitrary.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
const VICTORIA_METRICS = [GATED_APIS.vmServiceScrape, GATED_APIS.vmRule]

describe('the Helm chart: npm run chart, helm lint, helm template = manifests --values', function () {
  this.timeout(300_000)
  let archive: string
  let chartDir: string
  const figures: string[] = []

  /** Compares and records the counts; the differences are listed in the assertion's message. */
  async function compare(name: string, values: unknown, options: {apiVersions?: string[]; flags?: string[]; manifestsValues?: string} = {}): Promise<Comparison> {
    const chart = await helmTemplate(archive, values, {apiVersions: options.apiVersions ?? VICTORIA_METRICS})
    const manifests = await manifestsOf(options.manifestsValues ?? values, options.flags)
    const result = compareObjects(chart, manifests)
    figures.push(`${name}: ${result.compared} objects compared, ${result.differences.length} differences (Helm's own: ${result.helmAnnotations.length} annotation${result.helmAnnotations.length === 1 ? '' : 's'})`)
    assert.deepEqual(result.helmAnnotations.map((line) => line.replace(/^.* (\S+: \S+)$/, '$1')), ['helm.sh/resource-policy: keep'], 'Helm\'s own annotations: the Namespace is kept by helm uninstall')
    return result
  }

  before(async function () {
    this.timeout(30 * 60 * 1000) // a cold helm build takes minutes
    const {stdout} = await run(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/chart.ts')], {cwd: root})
    archive = stdout.trim()
    chartDir = path.join(path.dirname(archive), 'polycrate-operator')
    await helm(['version'])
  })

  after(() => {
    for (const line of figures) process.stderr.write(`[helm-chart] ${line}\n`)
  })

  it('npm run chart writes dist/chart/polycrate-operator-<version>.tgz; helm lint passes on it', async () => {
    assert.equal(path.basename(archive), `polycrate-operator-${operatorVersion()}.tgz`)
    const {stdout} = await helm(['lint', archive])
    assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/)
    assert.doesNotMatch(stdout, /\[(ERROR|WARNING)\]/)
    const shown = yaml.load((await helm(['show', 'chart', archive])).stdout) as {version: string; appVersion: string}
    assert.deepEqual([shown.version, shown.appVersion], [operatorVersion(), operatorVersion()])
  })

  it('values.yaml is the block\'s config with its defaults: parsed, the same values as no values at all', async () => {
    const values = yaml.load((await helm(['show', 'values', archive])).stdout) as Record<string, unknown>
    const inForce = (parsed: ReturnType<typeof parseBlockValues>) => ({...parsed, given: undefined})
    assert.deepEqual(inForce(parseBlockValues(values)), inForce(parseBlockValues({})))
    assert.deepEqual(Object.keys(values).sort(), ['deployment', 'external_dns_webhook', 'image_credentials', 'image_name', 'image_registry', 'metrics', 'namespace', 'operator_config', 'security'])
    assert.deepEqual(values.operator_config, {}, 'the OperatorConfig carries what is written, as with install')
  })

  it('values.schema.json refuses an unknown key and a wrong type, naming where', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'helm-bad-values-'))
    const attempt = async (values: unknown) => {
      writeFileSync(path.join(dir, 'values.yaml'), yaml.dump(values))
      return helm(['template', 'x', archive, '-f', path.join(dir, 'values.yaml')]).then(() => '', (error: Error) => error.message)
    }
    assert.match(await attempt({deployment: {replica: 2}}), /at '\/deployment': additional properties 'replica' not allowed/)
    assert.match(await attempt({operator_config: {api_sync: {enabled: 'yes please'}}}), /at '\/operator_config\/api_sync\/enabled': got string, want boolean/)
    assert.match(await attempt({security: {add_capabilities: ['net_raw']}}), /at '\/security\/add_capabilities\/0'/)
  })

  it('the default values: the same objects as manifests --values (with VictoriaMetrics\' APIs; without them, as install leaves its objects out)', async () => {
    const served = await compare('default values, VictoriaMetrics APIs served', {})
    assert.deepEqual(served.differences, [])
    assert.ok(served.compared >= 13, `${served.compared} objects`)
    const plain = await compare('default values, no VictoriaMetrics', {}, {apiVersions: [], flags: ['--no-vm-service-scrape', '--no-vm-rule']})
    assert.deepEqual(plain.differences, [])
    assert.equal(plain.compared, served.compared - 1, 'only the VMServiceScrape is left out')
  })

  it('the operator block README\'s full example (its workspace.poly as --values, its config: as -f)', async () => {
    const file = path.join(root, 'test/fixtures/block-values/block-readme-example.poly')
    const config = selectBlockConfig(yaml.load(readFileSync(file, 'utf8')))
    const result = await compare('block README example', config, {manifestsValues: readFileSync(file, 'utf8')})
    assert.deepEqual(result.differences, [])
    // The README's with everything the chart can switch on, and the Prometheus operator's API.
    const everything = {
      ...config,
      image_tag: '1.2.3',
      image_credentials: {enabled: true, username: 'robot$ci', password: 'p"a\\ss{{ x }}'},
      deployment: {replicas: 3, resources: {limits: {memory: '2Gi'}}},
      operator_config: {...config.operator_config as object, dns01_webhook: {enabled: true, group_name: 'acme.example.org'}, api_sync: {enabled: true, api_url: 'https://api.polycrate.io', credentials: {api_token: 'not-a-real-token'}}},
      metrics: {alerts: true, dashboard: true, runbook_base_url: 'https://wiki.example.org/polycrate'},
      security: {add_capabilities: ['NET_RAW', 'NET_RAW']},
    }
    const full = await compare('block README example + every switch on, Prometheus operator API served', everything, {apiVersions: Object.values(GATED_APIS), flags: ['--prometheus-rule']})
    assert.deepEqual(full.differences, [])
  })

  it('generated values (fast-check over values.schema.json) and served APIs: the same objects, 0 differences', async () => {
    const schema = JSON.parse(readFileSync(path.join(chartDir, 'values.schema.json'), 'utf8'))
    let runs = 0
    let compared = 0
    const apis = fc.subarray(Object.keys(GATED_APIS) as Array<keyof typeof GATED_APIS>)
    await fc.assert(fc.asyncProperty(valuesArbitrary(schema), apis, async (values, served) => {
      const metrics = (values.metrics ?? {}) as {alerts?: boolean}
      const flags = [
        ...(served.includes('vmServiceScrape') ? [] : ['--no-vm-service-scrape']),
        ...(served.includes('vmRule') ? [] : ['--no-vm-rule']),
        ...(served.includes('prometheusRule') && metrics.alerts ? ['--prometheus-rule'] : []),
      ]
      const chart = await helmTemplate(archive, values, {apiVersions: served.map((api) => GATED_APIS[api])})
      const result = compareObjects(chart, await manifestsOf(values, flags))
      runs++
      compared += result.compared
      assert.deepEqual(result.differences, [], `values: ${JSON.stringify(values)}, served: ${served.join(', ')}`)
    }), {
      numRuns: Number(process.env.HELM_CHART_RUNS ?? 100),
      // Found by CI: a string that YAML 1.1 (Helm) would read as a number if the values file were not JSON.
      examples: [[{image_credentials: {username: '9_'}}, []]],
    })
    figures.push(`generated values: ${runs} value sets, ${compared} objects compared, 0 differences`)
  })

  it('Helm\'s own objects: the pre-delete hook runs uninstall --release-only with the operator\'s image, under its own RBAC', async () => {
    const values = {namespace: 'ops', image_tag: '9.9.9', image_credentials: {enabled: true, username: 'u', password: 'p'}}
    const objects = await helmTemplate(archive, values, {hooks: true})
    const hooks = objects.filter((object) => object.metadata?.annotations?.['helm.sh/hook'])
    assert.deepEqual(hooks.map((object) => object.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Job', 'Role', 'RoleBinding', 'ServiceAccount'])
    for (const hook of hooks) assert.equal(hook.metadata!.annotations!['helm.sh/hook'], 'pre-delete')
    type Job = {spec: {template: {spec: {serviceAccountName: string; imagePullSecrets: unknown[]; containers: Array<{image: string; args: string[]}>}}}}
    const job = hooks.find((object) => object.kind === 'Job') as unknown as Job
    const deployment = objects.find((object) => object.kind === 'Deployment') as unknown as Job
    assert.equal(job.spec.template.spec.containers[0]!.image, deployment.spec.template.spec.containers[0]!.image)
    assert.equal(job.spec.template.spec.containers[0]!.image, 'cargo.ayedo.cloud/library/polycrate:9.9.9')
    assert.deepEqual(job.spec.template.spec.imagePullSecrets, deployment.spec.template.spec.imagePullSecrets)
    assert.deepEqual(job.spec.template.spec.containers[0]!.args.slice(0, 6), ['operator', 'uninstall', '--release-only', '--yes', '--namespace', 'ops'])
    assert.equal(job.spec.template.spec.serviceAccountName, RELEASE_HOOK_NAME)
    const withoutHooks = await helmTemplate(archive, values)
    assert.equal(withoutHooks.length, objects.length - hooks.length)
  })
})
