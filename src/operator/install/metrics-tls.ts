/**
 * The serving certificate of /metrics with `--metrics-secure`, made by install (no cert-manager needed): a CA of its
 * own signs a certificate for the metrics Service's names, both in the kubernetes.io/tls Secret METRICS_TLS_SECRET
 * (`tls.crt`, `tls.key`, and `ca.crt` for the scrapers: the VMServiceScrape verifies with it). The CA's key is not kept:
 * a renewal makes a new CA and a new certificate together, one Secret update, so scrapers reading `ca.crt` from the
 * same Secret and the operator (which reloads the mounted files) change over together.
 *
 * A Secret that is usable is kept (re-running install changes nothing); one that is missing, not a matching pair,
 * made for other names, or within RENEW_BEFORE_DAYS of its end is made anew.
 */
import {X509Certificate, createPrivateKey} from 'node:crypto'
import {systemClock, type Clock} from '../../lib/clock.js'
import type {KubeClient, KubeObject} from '../../kube/client.js'
import {resources} from '../../kube/resources.js'
import {createCertificate} from '../../lib/x509.js'
import {METRICS_TLS_SECRET, OPERATOR_NAME} from '../conventions.js'
import {MANAGED_BY, metricsDnsNames} from '../manifests.js'
import {applyObject, resultOf, type ObjectResult} from './cluster-objects.js'

/** Validity of the CA and of the serving certificate, and how long before the end install makes new ones. */
export const METRICS_CA_DAYS = 3650
export const METRICS_CERT_DAYS = 1095
export const RENEW_BEFORE_DAYS = 365

/** What install must provide: the Secret's name and namespace, the names the certificate carries. */
export interface MetricsTlsPlan {
  namespace: string
  secretName: string
  dnsNames: string[]
}

export function metricsTlsPlan(namespace: string): MetricsTlsPlan {
  return {namespace, secretName: METRICS_TLS_SECRET, dnsNames: metricsDnsNames(namespace)}
}

type SecretObject = KubeObject & {type?: string; data?: Record<string, string>}

const labels = {'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/part-of': 'polycrate', 'app.kubernetes.io/managed-by': MANAGED_BY, 'app.kubernetes.io/component': 'metrics'}

/** A new Secret: a CA and a certificate it signs for the plan's names. */
export async function makeMetricsTlsSecret(plan: MetricsTlsPlan, now: Date): Promise<SecretObject> {
  const ca = await createCertificate({commonName: `${OPERATOR_NAME}-metrics-ca`, organization: 'polycrate-operator', isCa: true, validityDays: METRICS_CA_DAYS, now})
  const serving = await createCertificate({commonName: plan.dnsNames[2] ?? plan.dnsNames[0]!, dnsNames: plan.dnsNames, issuer: ca, validityDays: METRICS_CERT_DAYS, now})
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')
  return {
    apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls',
    metadata: {name: plan.secretName, namespace: plan.namespace, labels},
    data: {'tls.crt': base64(serving.cert), 'tls.key': base64(serving.key), 'ca.crt': base64(ca.cert)},
  }
}

/** Why an existing Secret cannot serve the plan (pure); undefined when it can. */
export function metricsTlsProblem(secret: SecretObject | undefined, plan: MetricsTlsPlan, now: Date): string | undefined {
  if (!secret) return 'missing'
  const text = (key: string) => (secret.data?.[key] ? Buffer.from(secret.data[key], 'base64').toString('utf8') : undefined)
  const [cert, key, caCert] = [text('tls.crt'), text('tls.key'), text('ca.crt')]
  if (!cert || !key || !caCert) return 'tls.crt, tls.key or ca.crt missing'
  let certificate: X509Certificate
  let ca: X509Certificate
  try {
    certificate = new X509Certificate(cert)
    ca = new X509Certificate(caCert)
    if (!certificate.checkPrivateKey(createPrivateKey(key))) return 'tls.key is not the key of tls.crt'
  } catch (error) {
    return `not PEM: ${(error as Error).message}`
  }
  if (!certificate.verify(ca.publicKey)) return 'tls.crt is not signed by ca.crt'
  const names = new Set((certificate.subjectAltName ?? '').split(', ').filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4)))
  const missing = plan.dnsNames.filter((name) => !names.has(name))
  if (missing.length > 0) return `made for other names (not ${missing.join(', ')})`
  const renewAt = now.getTime() + RENEW_BEFORE_DAYS * 86_400_000
  for (const [what, which] of [['tls.crt', certificate], ['ca.crt', ca]] as const) {
    if (Date.parse(which.validTo) < renewAt) return `${what} expires ${new Date(which.validTo).toISOString().slice(0, 10)}`
  }
  return undefined
}

/** Install's step: keeps a usable Secret, else makes a new CA and certificate (`updated` with why). */
export async function ensureMetricsTls(client: KubeClient, plan: MetricsTlsPlan, clock: Clock = systemClock): Promise<ObjectResult> {
  const now = new Date(clock.now())
  const existing = await client.getOrUndefined<SecretObject>({...resources.secrets, namespace: plan.namespace, name: plan.secretName})
  const problem = metricsTlsProblem(existing, plan, now)
  const object = {kind: 'Secret', metadata: {name: plan.secretName, namespace: plan.namespace}}
  if (problem === undefined) return resultOf(object, 'unchanged')
  const result = await applyObject(client, await makeMetricsTlsSecret(plan, now))
  return existing ? {...result, note: `new CA and certificate: ${problem}`} : result
}
