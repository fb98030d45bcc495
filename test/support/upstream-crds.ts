import {readFileSync} from 'node:fs'
import path from 'node:path'
import yaml from 'js-yaml'

/**
 * The exact upstream CRDs the tests install (Gateway API, cert-manager, Velero, CloudNativePG): byte-for-byte copies of
 * `../shared/fixtures/crds`, kept in the repository so that any clean checkout runs the suite (provenance in its README).
 */
export const UPSTREAM_CRD_DIR = path.resolve(import.meta.dirname, '../fixtures/crds')

export interface UpstreamCrd {apiVersion: string; kind: string; metadata: {name: string}}

/** One of them, parsed (`<group>_<plural>.yaml`). */
export function upstreamCrd(file: string): UpstreamCrd {
  return yaml.load(readFileSync(path.join(UPSTREAM_CRD_DIR, file), 'utf8')) as UpstreamCrd
}
