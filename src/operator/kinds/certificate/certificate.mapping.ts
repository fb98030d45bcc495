/**
 * Certificate discovery (pure): a cert-manager Certificate → the polycrate.io Certificate CR the operator keeps for
 * it. No I/O; the clock is the parameter `now`.
 *
 * Mapping and its decisions:
 * - CR name = `certmanager-<namespace>-<name>` (the operator reference's example), in the Certificate's namespace; longer than 253
 *   characters → cut with a hash of the whole (`discoveredCrName`). A Certificate without a name →
 *   no CR and a `MissingName` problem; without a namespace (plain test objects only) → "default".
 * - Labels, as the operator reference's example: `certificates.polycrate.io/issuer` = the issuer name,
 *   `certificates.polycrate.io/source` = the Certificate name, `certificates.polycrate.io/ready` = "true"/"false"
 *   (= is_ready). Names go through `labelValue` (conventions.ts), so a name over 63 characters becomes a cut value
 *   with a hash (the full names are in the spec). No issuer name → no issuer label. The deprecated
 *   `operator.polycrate.io/discovered` of the example is NOT written (the generic discovery part adds
 *   `polycrate_discovered`).
 * - Issuer filter (`certificate_discovery.issuer_filter`): `include_issuers` non-empty and the issuer name not in it
 *   (a Certificate without issuer name is in no list), or the issuer name in `exclude_issuers` → no CR and
 *   `skipped` says why. Not a problem: the user asked for it. Names are compared exactly, whatever the issuer kind.
 *   The filter is applied right after the name check, so a skipped Certificate produces no problems.
 * - `name` = `apiSlug(<Certificate name>)` (the API validates it as `^[a-z0-9]+(?:-[a-z0-9]+)*$`).
 * - `display_name`: the example shows "api.example.com-tls" for dnsNames [api.example.com] → `<first DNS name>-tls`;
 *   no DNS names → `<commonName>-tls`; neither → `<first IP address>-tls`; none of them → the Certificate name.
 * - `namespace` = the Certificate's namespace; `secret_name` = `spec.secretName`. No secretName (cert-manager
 *   requires one; the API too) → no CR and a `MissingSecretName` problem.
 * - `dns_names` / `ip_addresses` = copies of `spec.dnsNames` / `spec.ipAddresses` when non-empty lists of strings;
 *   empty → absent; anything else (a string, a list with a non-string) → absent and an `InvalidDnsNames` /
 *   `InvalidIpAddresses` problem.
 * - `issuer_name` = `spec.issuerRef.name` (missing → absent and a `MissingIssuerName` problem). `issuer_kind` =
 *   `Issuer` → issuer, `ClusterIssuer` → clusterissuer (exact spelling, as cert-manager compares them); no kind →
 *   cert-manager's default `Issuer` → issuer; another kind (an external issuer such as `AWSPCAClusterIssuer`, which
 *   the API's enum cannot express) → absent and an `UnsupportedIssuerKind` problem. `issuer_group` =
 *   `spec.issuerRef.group`, default `cert-manager.io`.
 * - `certificate_status` = `certificateStatusOf(...)`, `is_ready` = the Ready condition's status is "True". A
 *   `status.conditions` that is not a list → no conditions and an `InvalidConditions` problem; a Ready condition
 *   whose status is not True/False/Unknown → treated as absent (pending) and an `UnknownConditionStatus` problem.
 * - `not_before` / `not_after` / `renewal_time` / `last_failure_time` from `status.notBefore` / `notAfter` /
 *   `renewalTime` / `lastFailureTime`, normalised to RFC 3339 UTC; unparsable ("soon") → absent and an
 *   `InvalidTimestamp` problem (and an unreadable notAfter plays no part in the status).
 * - `failure_reason`: when the last issuance failed (Ready=False classified failed below, also when the certificate
 *   has expired meanwhile): the message of the Issuing condition when it is False with reason Failed (the real
 *   error), else the Ready condition's message. Otherwise absent.
 * - `source_cert_manager` = {name, namespace, uid (when set), revision (status.revision when a positive integer;
 *   another value → left out and an `InvalidRevision` problem)}.
 * - Not mapped: `kind` (tls/mtls: cert-manager has no such notion), `current_challenge_*` / `challenge_reason` (they
 *   live on ACME Challenge objects this function does not see), `cert_manager_status` (the raw status changes with
 *   every condition timestamp and would make the API write for nothing).
 *
 * Status (`certificateStatusOf`), first rule that applies:
 * 1. NotAfter at or before `now` → `expired`, whatever Ready says (a certificate past NotAfter is unusable). At the
 *    NotAfter instant itself the certificate already counts as expired, so a requeue at `nextStatusChangeAt` sees
 *    the new status.
 * 2. Ready=True: NotAfter at most 30 days ahead (NotAfter − now ≤ 30 × 24 h) → `expiring_soon`, else `ready`
 *    (Ready=True with a failing renewal stays ready/expiring_soon: the certificate in use is valid).
 * 3. Ready=False:
 *    a. reason `Failed` (the operator reference's table), or `WindowError` / `ARIError` (cert-manager could not work out the
 *       renewal window / ACME renewal info: an error, not a "please (re)issue" trigger) → `failed`;
 *    b. an Issuing condition with status True → `pending` (an issuance, maybe a retry, is running);
 *    c. Issuing False with reason Failed, or `failedIssuanceAttempts` > 0, or `lastFailureTime` set (cert-manager
 *       clears both on success) → `failed`: the last issuance failed and cert-manager is backing off;
 *    d. otherwise → `pending`: DoesNotExist, MissingData, InvalidKeyPair, InvalidCertificate, SecretMismatch,
 *       IncorrectIssuer, IncorrectCertificate, RequestChanged, Expired, Renewing (and reasons cert-manager may add)
 *       all make cert-manager's trigger controller start an issuance.
 * 4. Ready absent or Unknown → `pending` (cert-manager has not looked at it yet).
 */
import type {CertificateSpec} from '../../../crds/certificate.js'
import {labelValue} from '../../conventions.js'
import {apiSlug} from '../../../lib/api-names.js'
import {withoutUndefined} from '../../../lib/objects.js'
import {discoveredCrName} from '../../discovery/names.js'
import {timestampField, timestampMillis} from '../../discovery/timestamps.js'
import {commonProblemReasons, type DiscoveryProblem, type TimestampLike} from '../../discovery/types.js'

export const certificateProblemReasons = {
  missingName: commonProblemReasons.missingName,
  missingSecretName: 'MissingSecretName',
  missingIssuerName: 'MissingIssuerName',
  unsupportedIssuerKind: 'UnsupportedIssuerKind',
  invalidTimestamp: commonProblemReasons.invalidTimestamp,
  invalidDnsNames: 'InvalidDnsNames',
  invalidIpAddresses: 'InvalidIpAddresses',
  invalidConditions: 'InvalidConditions',
  unknownConditionStatus: 'UnknownConditionStatus',
  invalidRevision: 'InvalidRevision',
} as const

export const certificateLabels = {
  issuer: 'certificates.polycrate.io/issuer',
  source: 'certificates.polycrate.io/source',
  ready: 'certificates.polycrate.io/ready',
} as const

export const DEFAULT_ISSUER_GROUP = 'cert-manager.io'
/** `expiring_soon` starts this long before NotAfter. */
export const EXPIRING_SOON_MS = 30 * 24 * 60 * 60 * 1000

export interface CertConditionLike {
  type?: string
  status?: string
  reason?: string
  message?: string
}

/** Only the fields certificate discovery reads; plain JSON from the API server fits. */
export interface CertManagerCertificateLike {
  metadata?: {
    name?: string
    namespace?: string
    uid?: string
  }
  spec?: {
    secretName?: string
    commonName?: string
    dnsNames?: readonly string[]
    ipAddresses?: readonly string[]
    issuerRef?: {name?: string; kind?: string; group?: string}
  }
  status?: {
    conditions?: readonly CertConditionLike[]
    notBefore?: TimestampLike
    notAfter?: TimestampLike
    renewalTime?: TimestampLike
    revision?: number
    lastFailureTime?: TimestampLike
    failedIssuanceAttempts?: number
  }
}

export interface CertificateIssuerFilter {
  include_issuers: readonly string[]
  exclude_issuers: readonly string[]
}

export interface CertificateDiscoveryResult {
  cr?: {name: string; labels: Record<string, string>; spec: CertificateSpec}
  problems: DiscoveryProblem[]
  /** Why the Certificate has no CR although nothing is wrong with it (the issuer filter). */
  skipped?: string
}

/** What besides the Ready condition tells a running issuance from a failed one (rule 3 of the top comment). */
export interface IssuanceState {
  issuing?: CertConditionLike
  failedIssuanceAttempts?: number
  lastFailureTime?: TimestampLike
}

type CertificateStatusValue = NonNullable<CertificateSpec['certificate_status']>

const failedReadyReasons = new Set(['Failed', 'WindowError', 'ARIError'])

/** Whether a Ready=False certificate's last issuance failed (rules 3a–3d). */
function issuanceFailed(ready: CertConditionLike | undefined, issuance: IssuanceState): boolean {
  if (ready?.status !== 'False') return false
  if (failedReadyReasons.has(ready.reason ?? '')) return true
  if (issuance.issuing?.status === 'True') return false
  if (issuance.issuing?.status === 'False' && issuance.issuing.reason === 'Failed') return true
  const attempts = issuance.failedIssuanceAttempts
  if (typeof attempts === 'number' && attempts > 0) return true
  return issuance.lastFailureTime !== undefined && issuance.lastFailureTime !== null && issuance.lastFailureTime !== ''
}

/** `certificate_status` from the Ready condition, NotAfter and the clock (see the top comment). */
export function certificateStatusOf(
  ready: CertConditionLike | undefined,
  notAfter: string | undefined,
  now: number,
  issuance: IssuanceState = {},
): CertificateStatusValue {
  const notAfterMs = timestampMillis(notAfter)
  if (notAfterMs !== undefined && notAfterMs <= now) return 'expired'
  if (ready?.status === 'True') return notAfterMs !== undefined && notAfterMs - now <= EXPIRING_SOON_MS ? 'expiring_soon' : 'ready'
  if (ready?.status === 'False') return issuanceFailed(ready, issuance) ? 'failed' : 'pending'
  return 'pending'
}

/**
 * The next instant (ms) after `now` at which `certificateStatusOf` changes by time alone: NotAfter − 30 days while
 * that is ahead (→ expiring_soon), else NotAfter while ahead (→ expired), else undefined (nothing changes any more,
 * or NotAfter is unknown). A controller requeues itself for then.
 */
export function nextStatusChangeAt(notAfter: string | undefined, now: number): number | undefined {
  const notAfterMs = timestampMillis(notAfter)
  if (notAfterMs === undefined) return undefined
  if (notAfterMs - EXPIRING_SOON_MS > now) return notAfterMs - EXPIRING_SOON_MS
  if (notAfterMs > now) return notAfterMs
  return undefined
}

function quoted(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : (JSON.stringify(value) ?? String(value))
}

function stringList(
  value: unknown,
  subject: string,
  path: string,
  field: string,
  reason: string,
  problems: DiscoveryProblem[],
): string[] | undefined {
  if (value === undefined || value === null) return undefined
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    problems.push({reason, message: `${subject}: ${path} ${quoted(value)} is not a list of strings; ${field} is left out.`})
    return undefined
  }
  return value.length > 0 ? [...value as string[]] : undefined
}

function issuerKind(
  kind: unknown,
  subject: string,
  problems: DiscoveryProblem[],
): CertificateSpec['issuer_kind'] {
  if (kind === undefined || kind === null || kind === '' || kind === 'Issuer') return 'issuer'
  if (kind === 'ClusterIssuer') return 'clusterissuer'
  problems.push({
    reason: certificateProblemReasons.unsupportedIssuerKind,
    message: `${subject}: spec.issuerRef.kind ${quoted(kind)} is neither Issuer nor ClusterIssuer (an external issuer?); `
      + 'the API only knows issuer and clusterissuer, so issuer_kind is left out.',
  })
  return undefined
}

/** The issuer filter's verdict: why the certificate is skipped, or undefined when it is kept. */
export function issuerFilterSkip(issuerName: string | undefined, settings: CertificateIssuerFilter): string | undefined {
  const shown = issuerName === undefined ? 'no issuer' : `issuer "${issuerName}"`
  if (settings.include_issuers.length > 0 && (issuerName === undefined || !settings.include_issuers.includes(issuerName))) {
    return `${shown} is not in certificate_discovery.issuer_filter.include_issuers (${settings.include_issuers.join(', ')})`
  }
  if (issuerName !== undefined && settings.exclude_issuers.includes(issuerName)) {
    return `${shown} is in certificate_discovery.issuer_filter.exclude_issuers`
  }
  return undefined
}

/** The Certificate CR for a cert-manager Certificate (see the top comment for every decision). */
export function certificate(
  cert: CertManagerCertificateLike,
  settings: CertificateIssuerFilter,
  now: number,
): CertificateDiscoveryResult {
  const problems: DiscoveryProblem[] = []
  const meta = cert.metadata
  const name = meta?.name
  if (!name || typeof name !== 'string') {
    return {
      problems: [{
        reason: certificateProblemReasons.missingName,
        message: 'The cert-manager Certificate has no metadata.name: there is nothing to name the CR after, so none is created for it.',
      }],
    }
  }
  const namespace = meta?.namespace || 'default'
  const subject = `cert-manager Certificate "${namespace}/${name}"`
  const spec = cert.spec ?? {}
  const status = cert.status ?? {}
  const issuerRef = spec.issuerRef ?? {}
  const issuerName = typeof issuerRef.name === 'string' && issuerRef.name !== '' ? issuerRef.name : undefined

  const skipped = issuerFilterSkip(issuerName, settings)
  if (skipped) return {problems: [], skipped: `${subject}: ${skipped}`}

  const secretName = typeof spec.secretName === 'string' && spec.secretName !== '' ? spec.secretName : undefined
  if (!secretName) {
    return {
      problems: [{
        reason: certificateProblemReasons.missingSecretName,
        message: `${subject}: spec.secretName is missing; the API needs the Secret the certificate is stored in, so no CR is created for it.`,
      }],
    }
  }
  if (!issuerName) {
    problems.push({
      reason: certificateProblemReasons.missingIssuerName,
      message: `${subject}: spec.issuerRef.name is missing; cert-manager cannot issue it and issuer_name is left out.`,
    })
  }

  const {ready, issuing} = readyAndIssuing(status, subject, problems)
  const {notBefore, notAfter, renewalTime, lastFailureTime, certificateStatus, isReady, failureReason} = issuanceFields(status, ready, issuing, subject, now, problems)
  const revision = revisionOf(status.revision, subject, problems)

  const dnsNames = stringList(spec.dnsNames, subject, 'spec.dnsNames', 'dns_names', certificateProblemReasons.invalidDnsNames, problems)
  const ipAddresses = stringList(spec.ipAddresses, subject, 'spec.ipAddresses', 'ip_addresses', certificateProblemReasons.invalidIpAddresses, problems)
  const commonName = typeof spec.commonName === 'string' && spec.commonName !== '' ? spec.commonName : undefined
  const shownName = dnsNames?.[0] ?? commonName ?? ipAddresses?.[0]

  const result: CertificateSpec = withoutUndefined({
    name: apiSlug(name),
    display_name: shownName === undefined ? name : `${shownName}-tls`,
    namespace,
    secret_name: secretName,
    dns_names: dnsNames,
    ip_addresses: ipAddresses,
    issuer_name: issuerName,
    issuer_kind: issuerKind(issuerRef.kind, subject, problems),
    issuer_group: typeof issuerRef.group === 'string' && issuerRef.group !== '' ? issuerRef.group : DEFAULT_ISSUER_GROUP,
    certificate_status: certificateStatus,
    is_ready: isReady,
    not_before: notBefore,
    not_after: notAfter,
    renewal_time: renewalTime,
    last_failure_time: lastFailureTime,
    failure_reason: failureReason,
    source_cert_manager: withoutUndefined({name, namespace, uid: meta?.uid || undefined, revision}),
  })
  const labels: Record<string, string> = withoutUndefined({
    [certificateLabels.issuer]: issuerName === undefined ? undefined : labelValue(issuerName),
    [certificateLabels.source]: labelValue(name),
    [certificateLabels.ready]: isReady ? 'true' : 'false',
  }) as Record<string, string>
  return {cr: {name: discoveredCrName('certmanager', namespace, name), labels, spec: result}, problems}
}

type CertStatusLike = NonNullable<CertManagerCertificateLike['status']>

/** The Ready and Issuing conditions; a status.conditions that is no list, or a Ready status not True/False/Unknown, is a problem. */
function readyAndIssuing(status: CertStatusLike, subject: string, problems: DiscoveryProblem[]): {ready?: CertConditionLike; issuing?: CertConditionLike} {
  let conditions: readonly CertConditionLike[] = []
  if (Array.isArray(status.conditions)) conditions = status.conditions
  else if (status.conditions !== undefined && status.conditions !== null) {
    problems.push({
      reason: certificateProblemReasons.invalidConditions,
      message: `${subject}: status.conditions ${quoted(status.conditions)} is not a list; the certificate is treated as having no conditions.`,
    })
  }
  let ready = conditions.find((c) => c?.type === 'Ready')
  if (ready && !['True', 'False', 'Unknown'].includes(ready.status as string)) {
    problems.push({
      reason: certificateProblemReasons.unknownConditionStatus,
      message: `${subject}: the Ready condition's status ${quoted(ready.status)} is not True, False or Unknown; it is treated as Unknown (pending).`,
    })
    ready = undefined
  }
  const issuing = conditions.find((c) => c?.type === 'Issuing')
  return {ready, issuing}
}

/** The times, the certificate status and the failure reason (problems for malformed timestamps). */
function issuanceFields(status: CertStatusLike, ready: CertConditionLike | undefined, issuing: CertConditionLike | undefined, subject: string, now: number, problems: DiscoveryProblem[]) {
  const notBefore = timestampField(status.notBefore, subject, 'status.notBefore', 'not_before', problems)
  const notAfter = timestampField(status.notAfter, subject, 'status.notAfter', 'not_after', problems)
  const renewalTime = timestampField(status.renewalTime, subject, 'status.renewalTime', 'renewal_time', problems)
  const lastFailureTime = timestampField(status.lastFailureTime, subject, 'status.lastFailureTime', 'last_failure_time', problems)
  const issuance: IssuanceState = {issuing, failedIssuanceAttempts: status.failedIssuanceAttempts, lastFailureTime: status.lastFailureTime}
  const certificateStatus = certificateStatusOf(ready, notAfter, now, issuance)
  const isReady = ready?.status === 'True'
  let failureReason: string | undefined
  if (issuanceFailed(ready, issuance)) {
    const issuingMessage = issuing?.status === 'False' && issuing.reason === 'Failed' ? issuing.message : undefined
    failureReason = issuingMessage || ready?.message || undefined
  }
  return {notBefore, notAfter, renewalTime, lastFailureTime, certificateStatus, isReady, failureReason}
}

/** status.revision when it is a positive integer; anything else present is a problem. */
function revisionOf(value: unknown, subject: string, problems: DiscoveryProblem[]): number | undefined {
  let revision: number | undefined
  if (value !== undefined && value !== null) {
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) revision = value
    else {
      problems.push({
        reason: certificateProblemReasons.invalidRevision,
        message: `${subject}: status.revision ${quoted(value)} is not a positive integer; source_cert_manager.revision is left out.`,
      })
    }
  }
  return revision
}
