/**
 * VictoriaMetrics' vmagent (test/vmagent/build.sh) scraping as the VictoriaMetrics operator would have it scrape a
 * VMServiceScrape: `vmServiceScrapeConfig` renders the scrape job vm-operator generates for one (Kubernetes service
 * discovery of the Service's endpoints in its namespace, kept by the Service's labels and the endpoint's port name;
 * scheme, bearer token and TLS settings from the endpoint, the Secrets they name given as files, as vm-operator mounts
 * them), `startVmagent` runs vmagent on the host with it and a remote-write receiver, and reads its targets.
 */
import {execFile, spawn, type ChildProcess} from 'node:child_process'
import {mkdtemp, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import yaml from 'js-yaml'
import {freePort} from './control-plane.js'

const run = promisify(execFile)
const buildScript = path.resolve(import.meta.dirname, '../vmagent/build.sh')

/** A VMServiceScrape as the manifests write it (the fields this rendering knows). */
export interface VMServiceScrape {
  metadata: {name: string; namespace: string}
  spec: {
    selector: {matchLabels: Record<string, string>}
    endpoints: Array<{
      port: string
      path?: string
      scheme?: string
      bearerTokenSecret?: {name: string; key: string}
      tlsConfig?: {ca?: {secret?: {name: string; key: string}}; serverName?: string; insecureSkipVerify?: boolean}
    }>
  }
}

/** Where vmagent finds what the endpoints' Secrets hold (`<secret>/<key>` → a file), and its service discovery's kubeconfig. */
export interface ScrapeFiles {
  kubeconfig: string
  secretFiles: Record<string, string>
}

/** Kubernetes SD's label name for a Service label (every character that is not [a-zA-Z0-9_] becomes `_`). */
const sdLabel = (label: string) => `__meta_kubernetes_service_label_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`

/** The scrape jobs vm-operator generates for a VMServiceScrape (discoveryRole endpoints, its default). Pure. */
export function vmServiceScrapeConfig(scrape: VMServiceScrape, files: ScrapeFiles, scrapeInterval = '2s'): Record<string, unknown> {
  const file = (selector: {name: string; key: string}) => {
    const found = files.secretFiles[`${selector.name}/${selector.key}`]
    if (!found) throw new Error(`no file for Secret key ${selector.name}/${selector.key}`)
    return found
  }
  return {
    scrape_configs: scrape.spec.endpoints.map((endpoint, index) => ({
      job_name: `serviceScrape/${scrape.metadata.namespace}/${scrape.metadata.name}/${index}`,
      scrape_interval: scrapeInterval,
      kubernetes_sd_configs: [{role: 'endpoints', namespaces: {names: [scrape.metadata.namespace]}, kubeconfig_file: files.kubeconfig}],
      metrics_path: endpoint.path ?? '/metrics',
      scheme: endpoint.scheme ?? 'http',
      ...(endpoint.bearerTokenSecret ? {bearer_token_file: file(endpoint.bearerTokenSecret)} : {}),
      ...(endpoint.tlsConfig
        ? {
          tls_config: {
            ...(endpoint.tlsConfig.ca?.secret ? {ca_file: file(endpoint.tlsConfig.ca.secret)} : {}),
            ...(endpoint.tlsConfig.serverName ? {server_name: endpoint.tlsConfig.serverName} : {}),
            ...(endpoint.tlsConfig.insecureSkipVerify ? {insecure_skip_verify: true} : {}),
          },
        }
        : {}),
      relabel_configs: [
        ...Object.entries(scrape.spec.selector.matchLabels).map(([label, value]) => ({action: 'keep', source_labels: [sdLabel(label)], regex: value})),
        {action: 'keep', source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: endpoint.port},
        {source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod'},
        {source_labels: ['__meta_kubernetes_service_name'], target_label: 'job'},
      ],
    })),
  }
}

export interface VmagentTarget {
  health: 'up' | 'down' | 'unknown'
  lastError: string
  scrapeUrl: string
  labels: Record<string, string>
}

export interface Vmagent {
  /** Its active targets (GET /api/v1/targets). */
  targets(): Promise<VmagentTarget[]>
  /** Remote-write requests received (vmagent sends what it scraped). */
  readonly remoteWrites: number
  output(): string
  stop(): Promise<void>
}

/** Builds (or finds the cached) vmagent and runs it with `config` until stop(). */
export async function startVmagent(config: Record<string, unknown>): Promise<Vmagent> {
  const binary = (await run('bash', [buildScript], {maxBuffer: 16 * 1024 * 1024})).stdout.trim()
  const dir = await mkdtemp(path.join(tmpdir(), 'vmagent-'))
  const configFile = path.join(dir, 'scrape.yaml')
  await writeFile(configFile, yaml.dump(config))
  let remoteWrites = 0
  const receiver = http.createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      remoteWrites++
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const port = await freePort()
  let output = ''
  const child: ChildProcess = spawn(binary, [
    `-promscrape.config=${configFile}`,
    `-remoteWrite.url=http://127.0.0.1:${(receiver.address() as AddressInfo).port}/api/v1/write`,
    `-remoteWrite.tmpDataPath=${path.join(dir, 'queue')}`,
    `-httpListenAddr=127.0.0.1:${port}`,
    '-remoteWrite.flushInterval=1s',
  ], {stdio: ['ignore', 'pipe', 'pipe']})
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    async targets() {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/targets`)
      const body = await response.json() as {data?: {activeTargets?: VmagentTarget[]}}
      return body.data?.activeTargets ?? []
    },
    get remoteWrites() {
      return remoteWrites
    },
    output: () => output,
    async stop() {
      child.kill('SIGTERM')
      await exited
      await new Promise((resolve) => receiver.close(resolve))
    },
  }
}
