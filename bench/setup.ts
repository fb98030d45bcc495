/** Shared set-up for benchmarks: CRDs and namespaces on a fresh control plane, the operator's heap probe. */
import path from 'node:path'
import {allCrds} from '../src/crds/index.js'
import {customResourceDefinitions} from '../src/crds/render.js'
import type {KubeClient} from '../src/kube/client.js'
import {installCrds} from '../src/kube/crd-install.js'
import {OPERATOR_NODE_OPTIONS} from '../src/operator/manifests.js'
import type {OperatorProcess} from '../test/support/operator-process.js'

export async function ensureCrdsWith(client: KubeClient): Promise<void> {
  await installCrds(client, customResourceDefinitions(allCrds))
}

export async function namespaceNamed(client: KubeClient, name: string): Promise<string> {
  await client.create({group: '', version: 'v1', plural: 'namespaces'}, {apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  return name
}

/**
 * NODE_OPTIONS for an operator a bench runs: the container's V8 settings (the Deployment's NODE_OPTIONS), the heap
 * probe, and `extra` (a setting to try, e.g. a bench's --node-options).
 */
export function benchNodeOptions(extra = ''): string {
  return [OPERATOR_NODE_OPTIONS, `--expose-gc --require ${path.join(import.meta.dirname, 'heap-probe.cjs')}`, extra].filter(Boolean).join(' ')
}

/**
 * The operator's V8 heap after a forced GC, and its RSS: needs the bench-only preload (NODE_OPTIONS="--expose-gc
 * --require bench/heap-probe.cjs"), which answers SIGUSR2 with one JSON log line.
 */
export interface HeapProbe {heapUsed: number; heapTotal: number; rss: number; external: number; arrayBuffers?: number; spaces?: Record<string, number>; code?: {codeAndMetadata: number; bytecodeAndMetadata: number}}

export async function heapProbe(operator: OperatorProcess): Promise<HeapProbe> {
  const before = operator.logs().filter((line) => line.msg === 'heap-probe').length
  process.kill(operator.pid, 'SIGUSR2')
  for (let i = 0; i < 200; i++) {
    const probes = operator.logs().filter((line) => line.msg === 'heap-probe')
    if (probes.length > before) return probes.at(-1) as unknown as HeapProbe
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('no heap probe answer')
}
