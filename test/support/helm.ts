/**
 * The real helm (v4, test/helm/build.sh: built from the Go module proxy, cached by version) and the comparison of
 * `helm template` with `polycrate operator manifests --values`, object by object.
 */
import {execFile, execFileSync} from 'node:child_process'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import {captureOutput} from '@oclif/test'
import yaml from 'js-yaml'
import Manifests from '../../src/commands/operator/manifests.js'
import type {KubeObject} from '../../src/kube/client.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
let cachedHelm: string | undefined

/** The helm binary (built on first use: minutes cold, instant when cached). */
export function helmBinary(): string {
  cachedHelm ??= execFileSync('bash', [path.join(root, 'test/helm/build.sh')], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit']}).trim().split('\n').at(-1)!
  return cachedHelm
}

export async function helm(args: string[], options: {env?: NodeJS.ProcessEnv; timeout?: number} = {}): Promise<{stdout: string; stderr: string}> {
  return run(helmBinary(), args, {maxBuffer: 64 * 1024 * 1024, timeout: options.timeout ?? 120_000, env: {...process.env, HELM_CACHE_HOME: helmHome('cache'), HELM_CONFIG_HOME: helmHome('config'), HELM_DATA_HOME: helmHome('data'), ...options.env}})
    .catch((error: {stdout?: string; stderr?: string; code?: number; message: string}) => {
      throw new Error(`helm ${args.join(' ')} failed (${error.code}): ${error.stderr || error.message}`)
    })
}

let home: string | undefined
/** helm's own cache/config/data of this test process (not the user's ~/.config/helm). */
function helmHome(kind: string): string {
  home ??= mkdtempSync(path.join(tmpdir(), 'helm-home-'))
  return path.join(home, kind)
}

/** Objects of multi-document YAML (empty documents left out). */
export function parseObjects(text: string): KubeObject[] {
  return (yaml.loadAll(text) as unknown[]).filter((document): document is KubeObject => document !== null && typeof document === 'object')
}

/**
 * Values as both sides read them alike: JSON (which is YAML). A YAML dump leaves strings such as `9_` or `0o7`
 * plain, which js-yaml (YAML 1.2) reads back as strings and Helm's Go YAML reads as numbers.
 */
const valuesText = (values: unknown) => `${JSON.stringify(values ?? {}, null, 2)}\n`

const isHook = (object: KubeObject) => Boolean(object.metadata?.annotations?.['helm.sh/hook'])

/** `helm template` of the chart with these values (a map: the block's config) and API versions the cluster serves. */
export async function helmTemplate(chart: string, values: unknown, options: {apiVersions?: readonly string[]; hooks?: boolean} = {}): Promise<KubeObject[]> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'helm-values-')), 'values.yaml')
  writeFileSync(file, valuesText(values))
  const args = ['template', 'polycrate-operator', chart, '-f', file, ...(options.apiVersions ?? []).flatMap((api) => ['--api-versions', api])]
  if (!options.hooks) args.push('--no-hooks')
  return parseObjects((await helm(args)).stdout)
}

/** `polycrate operator manifests --values FILE [flags]` (the command itself, in this process). */
export async function manifestsOf(values: unknown, flags: readonly string[] = []): Promise<KubeObject[]> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'manifests-values-')), 'values.yaml')
  writeFileSync(file, typeof values === 'string' ? values : valuesText(values))
  // The command class itself (no build needed), as oclif runs it.
  const {stdout, error} = await captureOutput(() => Manifests.run(['--values', file, '-o', 'json', ...flags], root))
  if (error) throw error
  return (JSON.parse(stdout) as {items: KubeObject[]}).items
}

export interface Comparison {
  compared: number
  /** One line per difference: an object only on one side, or a path where two objects differ. */
  differences: string[]
  /** Helm's own: hook objects (helm.sh/hook) and helm.sh/ annotations of the chart's objects, left out of the comparison. */
  hooks: number
  helmAnnotations: string[]
}

const keyOf = (object: KubeObject) => `${object.apiVersion} ${object.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name}`

/** Object by object, by apiVersion, kind, namespace and name; values compared as parsed (key order is YAML's). */
export function compareObjects(chart: readonly KubeObject[], manifests: readonly KubeObject[]): Comparison {
  const differences: string[] = []
  const hooks = chart.filter(isHook).length
  const helmAnnotations: string[] = []
  const withoutHelms = (object: KubeObject): KubeObject => {
    const annotations = Object.entries(object.metadata?.annotations ?? {})
    const own = annotations.filter(([key]) => key.startsWith('helm.sh/'))
    if (own.length === 0) return object
    helmAnnotations.push(...own.map(([key, value]) => `${keyOf(object)} ${key}: ${value}`))
    const rest = annotations.filter(([key]) => !key.startsWith('helm.sh/'))
    const {annotations: _, ...metadata} = object.metadata!
    return {...object, metadata: rest.length > 0 ? {...metadata, annotations: Object.fromEntries(rest)} : metadata}
  }
  const fromChart = new Map(chart.filter((object) => !isHook(object)).map((object) => [keyOf(object), withoutHelms(object)]))
  const fromManifests = new Map(manifests.map((object) => [keyOf(object), object]))
  for (const key of fromManifests.keys()) if (!fromChart.has(key)) differences.push(`only in manifests: ${key}`)
  for (const key of fromChart.keys()) if (!fromManifests.has(key)) differences.push(`only in the chart: ${key}`)
  let compared = 0
  for (const [key, object] of fromChart) {
    const other = fromManifests.get(key)
    if (!other) continue
    compared++
    for (const where of differingPaths(object, other)) differences.push(`${key} ${where}`)
  }
  return {compared, differences, hooks, helmAnnotations}
}

function differingPaths(a: unknown, b: unknown, at = ''): string[] {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) return [`${at || '.'}: ${short(a)} ≠ ${short(b)}`]
  if (Array.isArray(a)) {
    const other = b as unknown[]
    if (a.length !== other.length) return [`${at}: ${a.length} items ≠ ${other.length}`]
    return a.flatMap((item, index) => differingPaths(item, other[index], `${at}[${index}]`))
  }
  if (a !== null && typeof a === 'object') {
    const left = a as Record<string, unknown>
    const right = b as Record<string, unknown>
    const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])]
    return keys.flatMap((key) => (key in left && key in right ? differingPaths(left[key], right[key], `${at}.${key}`) : [`${at}.${key}: ${key in left ? 'only in the chart' : 'only in manifests'}`]))
  }
  return a === b ? [] : [`${at}: ${short(a)} ≠ ${short(b)}`]
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 80 ? `${text.slice(0, 80)}…` : text
}
