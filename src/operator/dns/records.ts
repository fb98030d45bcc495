/**
 * The pure part of both DNS webhooks: external-dns' wire objects (Endpoint, Changes, DomainFilter) validated with
 * zod, the mapping between Polycrate DNS records (one value each) and external-dns Endpoints (one name + type
 * with all its values), and the per-Endpoint plan of record operations that a change needs.
 *
 * Record names: the API's record request model is not known; records are written with `name` =
 * the fully qualified name without the trailing dot, and read back whether the API keeps them that way, relative
 * to the zone, or as `@` for the apex.
 */
import {isIPv4, isIPv6} from 'node:net'
import {z} from 'zod'

/** The media type of the external-dns webhook protocol (exact bytes). */
export const EXTERNAL_DNS_MEDIA_TYPE = 'application/external.dns.webhook+json;version=1'

/** Record types the external-dns webhook reads and writes. */
export const SUPPORTED_RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'SRV', 'NS'] as const
export type SupportedRecordType = (typeof SUPPORTED_RECORD_TYPES)[number]

// ---------------------------------------------------------------------------------------------------------------------
// wire objects

const endpointWire = z.object({
  dnsName: z.string().min(1).max(254),
  targets: z.array(z.string().max(4096)).max(256).nullish(),
  recordType: z.string().min(1).max(16),
  setIdentifier: z.string().max(256).nullish(),
  recordTTL: z.number().int().min(0).max(2_147_483_647).nullish(),
  labels: z.record(z.string(), z.string()).nullish(),
  providerSpecific: z.array(z.object({name: z.string(), value: z.string()})).nullish(),
})
export type EndpointWire = z.infer<typeof endpointWire>

const endpointList = z.array(endpointWire).max(20_000).nullish()

/** external-dns ≥ 0.17 sends lower camel case keys, older ones upper camel case; both are accepted. */
const changesWire = z.object({
  create: endpointList,
  updateOld: endpointList,
  updateNew: endpointList,
  delete: endpointList,
  Create: endpointList,
  UpdateOld: endpointList,
  UpdateNew: endpointList,
  Delete: endpointList,
})

export const endpointArrayWire = z.array(endpointWire).max(20_000)

/** An Endpoint after validation: normalised name and targets, a supported type. */
export interface Endpoint {
  dnsName: string
  recordType: SupportedRecordType
  targets: string[]
  recordTTL?: number
}

export interface Changes {
  create: Endpoint[]
  updateOld: Endpoint[]
  updateNew: Endpoint[]
  delete: Endpoint[]
}

/** What the webhook answers external-dns with: the fields it sets, the rest left out. */
export function endpointToWire(endpoint: Endpoint): EndpointWire {
  return {
    dnsName: endpoint.dnsName,
    targets: endpoint.targets,
    recordType: endpoint.recordType,
    ...(endpoint.recordTTL ? {recordTTL: endpoint.recordTTL} : {}),
  }
}

export type Parsed<T> = {ok: true; value: T} | {ok: false; reason: string}

export function zodReason(error: z.ZodError): string {
  return error.issues.slice(0, 3).map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`).join('; ')
}

/** Parses a JSON body text; the reason names what is wrong. */
export function parseJson(text: string): Parsed<unknown> {
  try {
    return {ok: true, value: JSON.parse(text) as unknown}
  } catch (error) {
    return {ok: false, reason: `the body is not valid JSON (${(error as Error).message})`}
  }
}

/** A Changes object (`POST /records`): every Endpoint checked; updateOld[i] pairs with updateNew[i]. */
export function parseChanges(body: unknown): Parsed<Changes> {
  const parsed = changesWire.safeParse(body)
  if (!parsed.success) return {ok: false, reason: zodReason(parsed.error)}
  const raw = parsed.data
  const lists = {
    create: [...(raw.create ?? []), ...(raw.Create ?? [])],
    updateOld: [...(raw.updateOld ?? []), ...(raw.UpdateOld ?? [])],
    updateNew: [...(raw.updateNew ?? []), ...(raw.UpdateNew ?? [])],
    delete: [...(raw.delete ?? []), ...(raw.Delete ?? [])],
  }
  const changes: Changes = {create: [], updateOld: [], updateNew: [], delete: []}
  for (const key of ['create', 'updateOld', 'updateNew', 'delete'] as const) {
    for (const [index, wire] of lists[key].entries()) {
      const endpoint = checkEndpoint(wire, key !== 'delete' && key !== 'updateOld')
      if (!endpoint.ok) return {ok: false, reason: `${key}[${index}] (${wire.dnsName} ${wire.recordType}): ${endpoint.reason}`}
      changes[key].push(endpoint.value)
    }
  }
  if (changes.updateOld.length !== changes.updateNew.length) {
    return {ok: false, reason: `updateOld has ${changes.updateOld.length} endpoints but updateNew has ${changes.updateNew.length}; they must pair up`}
  }
  for (const [index, next] of changes.updateNew.entries()) {
    const old = changes.updateOld[index]
    if (old && (old.dnsName !== next.dnsName || old.recordType !== next.recordType)) {
      return {ok: false, reason: `updateOld[${index}] (${old.dnsName} ${old.recordType}) and updateNew[${index}] (${next.dnsName} ${next.recordType}) name different records`}
    }
  }
  return {ok: true, value: changes}
}

const label = /^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$/

/** Lower case, without the trailing dot; undefined when it is not a DNS name. */
export function normalizeName(name: string): string | undefined {
  const lower = name.trim().toLowerCase().replace(/\.$/, '')
  if (lower === '' || lower.length > 253) return undefined
  const labels = lower.split('.')
  if (!labels.every((part) => label.test(part))) return undefined
  if (labels.slice(1).includes('*')) return undefined
  return lower
}

function checkEndpoint(wire: EndpointWire, needsTargets: boolean): Parsed<Endpoint> {
  const type = wire.recordType.toUpperCase()
  if (!(SUPPORTED_RECORD_TYPES as readonly string[]).includes(type)) {
    return {ok: false, reason: `record type "${wire.recordType}" is not supported (supported: ${SUPPORTED_RECORD_TYPES.join(', ')})`}
  }
  if (wire.setIdentifier) return {ok: false, reason: 'setIdentifier (routing policies) is not supported by the Polycrate DNS API'}
  const dnsName = normalizeName(wire.dnsName)
  if (!dnsName) return {ok: false, reason: `"${wire.dnsName}" is not a valid DNS name`}
  const targets: string[] = []
  for (const raw of wire.targets ?? []) {
    const target = normalizeTarget(type as SupportedRecordType, raw)
    if (target === undefined) return {ok: false, reason: `target "${raw}" is not valid for a ${type} record`}
    if (!targets.includes(target)) targets.push(target)
  }
  if (needsTargets && targets.length === 0) return {ok: false, reason: 'no targets'}
  return {ok: true, value: {dnsName, recordType: type as SupportedRecordType, targets, ...(wire.recordTTL ? {recordTTL: wire.recordTTL} : {})}}
}

/** The target in the form both sides compare; undefined when it is not valid for the type. */
export function normalizeTarget(type: SupportedRecordType, raw: string): string | undefined {
  const value = raw.trim()
  switch (type) {
    case 'A':
      return isIPv4(value) ? value : undefined
    case 'AAAA':
      return isIPv6(value) ? value.toLowerCase() : undefined
    case 'CNAME':
    case 'NS':
      return normalizeName(value)
    case 'MX': {
      const match = /^(\d{1,5})\s+(\S+)$/.exec(value)
      const host = match?.[2] !== undefined ? normalizeName(match[2]) : undefined
      return match && host && Number(match[1]) <= 65535 ? `${Number(match[1])} ${host}` : undefined
    }
    case 'SRV': {
      const match = /^(\d{1,5})\s+(\d{1,5})\s+(\d{1,5})\s+(\S+)$/.exec(value)
      if (!match || [match[1], match[2], match[3]].some((n) => Number(n) > 65535)) return undefined
      return `${Number(match[1])} ${Number(match[2])} ${Number(match[3])} ${match[4]}`
    }
    case 'TXT':
      // eslint-disable-next-line no-control-regex
      return raw.length > 0 && raw.length <= 4000 && !/[\u0000-\u001f]/.test(raw) ? raw : undefined
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Polycrate records ↔ Endpoints

export interface Zone {
  id: string
  name: string
}

/** One Polycrate record as the webhooks see it: a fully qualified name, a type and one target. */
export interface ZoneRecord {
  id: string
  zoneId: string
  fqdn: string
  type: string
  target: string
  ttl?: number
}

export interface ApiRecordFields {
  id: string
  name?: string | null
  type: string
  content: string
  ttl?: number | null
  priority?: number | null
}

/** The record's fully qualified name: FQDN as is, `@`/empty = apex, otherwise relative to the zone. */
export function recordFqdn(name: string | null | undefined, zoneName: string): string {
  const lower = (name ?? '').trim().toLowerCase().replace(/\.$/, '')
  if (lower === '' || lower === '@') return zoneName
  if (lower === zoneName || lower.endsWith(`.${zoneName}`)) return lower
  return `${lower}.${zoneName}`
}

/** MX and SRV keep their priority in its own field in the API, in front of the target in external-dns. */
export function recordFromApi(record: ApiRecordFields, zone: Zone): ZoneRecord {
  const type = record.type.toUpperCase()
  let target = record.content
  if ((type === 'MX' || type === 'SRV') && typeof record.priority === 'number' && !/^\d+\s/.test(target)) target = `${record.priority} ${target}`
  if (SUPPORTED_RECORD_TYPES.includes(type as SupportedRecordType) && type !== 'TXT') target = normalizeTarget(type as SupportedRecordType, target) ?? target
  return {id: record.id, zoneId: zone.id, fqdn: recordFqdn(record.name, zone.name), type, target, ...(record.ttl ? {ttl: record.ttl} : {})}
}

/** The body of a record create: content and priority split back for MX/SRV. */
export function recordRequest(zone: Zone, fqdn: string, type: SupportedRecordType, target: string, ttl: number | undefined) {
  let content = target
  let priority: number | null = null
  if (type === 'MX' || type === 'SRV') {
    const match = /^(\d+)\s+(.+)$/.exec(target)
    if (match?.[1] !== undefined && match[2] !== undefined) {
      priority = Number(match[1])
      content = match[2]
    }
  }
  return {name: fqdn, dns_zone: zone.id, type, content, ...(ttl ? {ttl} : {}), ...(priority === null ? {} : {priority})}
}

/** Records of supported types as Endpoints, one per name + type, sorted by name then type. */
export function endpointsFromRecords(records: readonly ZoneRecord[]): Endpoint[] {
  const byKey = new Map<string, Endpoint>()
  for (const record of records) {
    if (!SUPPORTED_RECORD_TYPES.includes(record.type as SupportedRecordType)) continue
    const key = `${record.fqdn} ${record.type}`
    let endpoint = byKey.get(key)
    if (!endpoint) {
      endpoint = {dnsName: record.fqdn, recordType: record.type as SupportedRecordType, targets: [], ...(record.ttl ? {recordTTL: record.ttl} : {})}
      byKey.set(key, endpoint)
    }
    if (!endpoint.targets.includes(record.target)) endpoint.targets.push(record.target)
  }
  return [...byKey.values()].sort((a, b) => a.dnsName.localeCompare(b.dnsName) || a.recordType.localeCompare(b.recordType))
}

/**
 * external-dns' DomainFilter for the zones the token can see. With no zone at all, a regex that matches no name:
 * an empty include list would match every name.
 */
export function domainFilter(zones: readonly Zone[]): {include: string[]} | {regexInclude: string} {
  if (zones.length === 0) return {regexInclude: '^$'}
  return {include: [...new Set(zones.map((zone) => zone.name))].sort()}
}

// ---------------------------------------------------------------------------------------------------------------------
// planning

export type ChangeAction = 'create' | 'update' | 'delete'

export type RecordOp =
  | {op: 'create'; fqdn: string; type: SupportedRecordType; target: string; ttl?: number}
  | {op: 'delete'; record: ZoneRecord}
  | {op: 'set-ttl'; record: ZoneRecord; ttl: number}

/**
 * The record operations that make one Endpoint change true, given the records of that name + type that exist
 * now: new values first, then TTL changes, then removals (so a name never goes without a value it keeps).
 * - create: adds the targets that are missing (existing ones stay: a repeated create is a no-op);
 * - update: adds the new targets, removes the old ones the new Endpoint no longer has;
 * - delete: removes the listed targets only.
 * Records that are not the Endpoint's are never touched.
 */
export function planEndpointChange(action: ChangeAction, next: Endpoint, current: readonly ZoneRecord[], old?: Endpoint): RecordOp[] {
  const mine = current.filter((record) => record.fqdn === next.dnsName && record.type === next.recordType)
  if (action === 'delete') {
    const remove = new Set(next.targets)
    return mine.filter((record) => remove.has(record.target)).map((record) => ({op: 'delete', record}))
  }
  const ops: RecordOp[] = []
  const have = new Set(mine.map((record) => record.target))
  for (const target of next.targets) {
    if (!have.has(target)) ops.push({op: 'create', fqdn: next.dnsName, type: next.recordType, target, ...(next.recordTTL ? {ttl: next.recordTTL} : {})})
  }
  const wanted = new Set(next.targets)
  if (next.recordTTL) {
    for (const record of mine) if (wanted.has(record.target) && record.ttl !== next.recordTTL) ops.push({op: 'set-ttl', record, ttl: next.recordTTL})
  }
  if (action === 'update' && old) {
    const previously = new Set(old.targets)
    for (const record of mine) if (previously.has(record.target) && !wanted.has(record.target)) ops.push({op: 'delete', record})
  }
  return ops
}

/** The operations that undo applied ones (in reverse order): a created record deleted, a deleted one re-created. */
export function undoOps(applied: ReadonlyArray<{op: RecordOp; created?: ZoneRecord}>): RecordOp[] {
  const undo: RecordOp[] = []
  for (const {op, created} of [...applied].reverse()) {
    if (op.op === 'create' && created) undo.push({op: 'delete', record: created})
    else if (op.op === 'delete') undo.push({op: 'create', fqdn: op.record.fqdn, type: op.record.type as SupportedRecordType, target: op.record.target, ...(op.record.ttl ? {ttl: op.record.ttl} : {})})
    else if (op.op === 'set-ttl' && op.record.ttl) undo.push({op: 'set-ttl', record: op.record, ttl: op.record.ttl})
  }
  return undo
}

/** TXT values as DNS01 writes them: quoted, as external-dns and PowerDNS keep TXT content. */
export function txtContent(value: string): string {
  return `"${value}"`
}

/** A TXT record's value without the surrounding quotes. */
export function txtValue(content: string): string {
  return content.length >= 2 && content.startsWith('"') && content.endsWith('"') ? content.slice(1, -1) : content
}
