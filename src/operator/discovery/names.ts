/** The names of discovered CRs (pure). */
import {createHash} from 'node:crypto'

const MAX_CR_NAME = 253
const CR_HASH_LENGTH = 10
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/**
 * The name of a discovered CR: `parts` joined with "-" when that is a DNS subdomain of at most 253 characters,
 * else made one (lower-cased, every character outside [a-z0-9-] → "-", runs collapsed, cut) with "-" + 10 hex
 * digits of the SHA-256 of the joined name appended, so two long names never share a CR.
 */
export function discoveredCrName(...parts: string[]): string {
  const joined = parts.join('-')
  if (joined.length <= MAX_CR_NAME && dnsSubdomain.test(joined)) return joined
  const hash = createHash('sha256').update(joined).digest('hex').slice(0, CR_HASH_LENGTH)
  const readable = joined.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '')
  const head = readable.slice(0, MAX_CR_NAME - CR_HASH_LENGTH - 1).replace(/-+$/, '')
  return head === '' ? hash : `${head}-${hash}`
}
