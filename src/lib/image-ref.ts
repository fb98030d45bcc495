/**
 * Container image references (pure): their parts, registry filters, the digest of a container status' imageID, and
 * the name of the Artifact CR of a reference (Artifact discovery makes it, K8sApp discovery lists it in an app's status).
 *
 * Decisions where the operator reference is silent:
 * - The reference is taken as the pod spec writes it (`spec.containers[].image`, init containers included); the
 *   digest comes from `status.containerStatuses[].imageID` when the reference has none (the runtime's resolved
 *   digest; `docker-pullable://` and similar prefixes dropped).
 * - Parsing (the Docker reference grammar): the first path component is the registry host when it holds a `.` or a
 *   `:` (a port) or is `localhost`; otherwise the registry is `docker.io`, and a one-component repository gets
 *   `library/`. The tag follows the last `:` of the last component; `@sha256:…` is the digest. No tag and no digest
 *   → tag `latest` (what the runtime pulls); a digest only → no tag.
 * - Name: the reference as written, lower-cased (so tags `V1` and `X2` do not both become `-`), every character
 *   outside `[a-z0-9]` → `-`, runs collapsed, leading/trailing `-` dropped; longer than 253 → cut with a `-` and a 10-hex hash of the reference.
 *   A reference that leaves nothing (empty, only symbols) → no Artifact and an `InvalidImageReference` problem.
 * - Registry filters: `exclude_registries` always wins; a non-empty `include_registries` admits only its hosts.
 *   Hosts compare case-insensitively; `docker.io`, `index.docker.io` and `registry-1.docker.io` are one registry.
 */
import {createHash} from 'node:crypto'

export interface ImageReference {
  image: string
  registry: string
  repository: string
  tag?: string
  digest?: string
}

const MAX_NAME = 253
const DOCKER_HUB = 'docker.io'
const dockerHubAliases = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io'])

export function normalizeRegistry(host: string): string {
  const lower = host.toLowerCase()
  return dockerHubAliases.has(lower) ? DOCKER_HUB : lower
}

const parsed = new Map<string, ImageReference | undefined>()

/** The parts of an image reference; undefined when it is empty or has no repository. Memoized (pure). */
export function parseImage(image: string): ImageReference | undefined {
  if (parsed.has(image)) return parsed.get(image)
  const result = parse(image)
  if (parsed.size > 50_000) parsed.clear()
  parsed.set(image, result)
  return result
}

function parse(image: string): ImageReference | undefined {
  const trimmed = image.trim()
  if (!trimmed || /\s/.test(trimmed)) return undefined
  let rest = trimmed
  let digest: string | undefined
  const at = rest.indexOf('@')
  if (at >= 0) {
    digest = rest.slice(at + 1)
    rest = rest.slice(0, at)
    if (!/^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest)) return undefined
  }
  const parts = rest.split('/')
  let registry = DOCKER_HUB
  if (parts.length > 1 && (parts[0]!.includes('.') || parts[0]!.includes(':') || parts[0] === 'localhost')) registry = normalizeRegistry(parts.shift()!)
  let last = parts.pop() ?? ''
  let tag: string | undefined
  const colon = last.lastIndexOf(':')
  if (colon >= 0) {
    tag = last.slice(colon + 1)
    last = last.slice(0, colon)
    if (!tag) return undefined
  }
  parts.push(last)
  if (parts.some((part) => !part)) return undefined
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library')
  if (!tag && !digest) tag = 'latest'
  return {image: trimmed, registry, repository: parts.join('/'), ...(tag ? {tag} : {}), ...(digest ? {digest} : {})}
}

/** The Artifact CR name of a reference (see the header); undefined when nothing is left. */
export function artifactName(image: string): string | undefined {
  const name = image.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  if (!name) return undefined
  if (name.length <= MAX_NAME) return name
  const hash = createHash('sha256').update(image.trim()).digest('hex').slice(0, 10)
  return `${name.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, '')}-${hash}`
}

/** The digest in a container status' imageID (`docker-pullable://repo@sha256:…`, `sha256:…`). */
export function digestOfImageID(imageID: string | undefined): string | undefined {
  if (!imageID) return undefined
  const match = /(sha256:[a-f0-9]{64})/.exec(imageID)
  return match?.[1]
}

export interface RegistryFilter {
  include_registries: readonly string[]
  exclude_registries: readonly string[]
}

export function registryAllowed(registry: string, filter: RegistryFilter): boolean {
  const host = normalizeRegistry(registry)
  if (filter.exclude_registries.some((excluded) => normalizeRegistry(excluded) === host)) return false
  return filter.include_registries.length === 0 || filter.include_registries.some((included) => normalizeRegistry(included) === host)
}
