/**
 * The names the Polycrate API accepts as an object's `name`, and how an arbitrary Kubernetes name (a node, a PV, a
 * Velero backup, a Certificate) becomes one. Pure: the same name always gives the same slug, so every sync of an
 * object lands on the same API object.
 */
import {createHash} from 'node:crypto'

const MAX_SLUG_LENGTH = 63
const HASH_LENGTH = 8

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, HASH_LENGTH)
}

/**
 * The API slug of an object name; always matches `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` and is at most 63 characters.
 * Different names never share a slug (barring a SHA-256 collision in 8 hex digits), so two nodes or PVs never end
 * up on one API object:
 * - A name that already is such a slug (lower-case, only [a-z0-9-], no leading, trailing or double "-", ≤ 63
 *   characters) is kept as is: `node-1` → `node-1`. This is also the API's stricter rule for backup and
 *   certificate names (`^[a-z0-9]+(?:-[a-z0-9]+)*$`), so `apiSlug(spec.name)` is their API name.
 * - Any other name is made readable (lower-case, every character outside [a-z0-9-] → "-", runs of "-" collapsed,
 *   "-" trimmed at both ends), cut so that the whole fits 63 characters without a trailing "-", and gets "-" + the
 *   first 8 hex digits of the SHA-256 of the original name: `ip-10-0-0-1.ec2.internal` →
 *   `ip-10-0-0-1-ec2-internal-<hash8>`, so `X-node.zone1` and `X-node-zone1` get different slugs. A name without
 *   any usable character gives just the 8 hex digits.
 */
export function apiSlug(name: string): string {
  if (name.length <= MAX_SLUG_LENGTH && /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name)) return name
  const readable = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '')
  const head = readable.slice(0, MAX_SLUG_LENGTH - HASH_LENGTH - 1).replace(/-+$/, '')
  return head === '' ? shortHash(name) : `${head}-${shortHash(name)}`
}

/**
 * What the API accepts as a host or volume `name` (`^[-a-zA-Z0-9_]+$`), within the 63 characters the operator
 * keeps to: a hand-written CR's name that passes is sent as it is, any other gets its `apiSlug`.
 */
export function isApiSlug(name: string): boolean {
  return /^[-a-zA-Z0-9_]{1,63}$/.test(name)
}
