/**
 * Certificate discovery (`CertificateDiscoveryReconciler`): every
 * cert-manager Certificate → a polycrate.io Certificate CR `certmanager-<namespace>-<name>` in its namespace, as a
 * declaration on the generic discovery feature; it starts when cert-manager's Certificate CRD is Established and
 * stops when it goes. The mapping is pure (certificate.mapping.ts), with `issuer_filter` and the namespace filters.
 * `expiring_soon` and `expired` change with time alone: the reconcile asks to run again at the next such instant
 * (`notAfter − 30 d`, then `notAfter`), so the CR (and through its sync the API) flips without any change to the
 * cert-manager object. Sources get no finalizer; the CR has an owner reference to its Certificate.
 */
import {certificateCrd} from '../../../crds/certificate.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import {namespaceInScope} from '../../discovery/namespace-scope.js'
import {finalizers} from '../../conventions.js'
import {certificate, nextStatusChangeAt} from './certificate.mapping.js'
import {defineDiscovery} from '../../discovery/engine.js'
import {desiredOfOneSource, type DesiredState} from '../../discovery/plan.js'
import type {KubeObject} from '../../../kube/client.js'
import {resources} from '../../../kube/resources.js'

type CertificateSettings = OperatorConfig['certificate_discovery']

export const certManagerCrds = {certificates: 'certificates.cert-manager.io'} as const
const apiVersion = 'cert-manager.io/v1'

/** The Certificate CR of one cert-manager Certificate (pure). */
export function desiredCertificate(key: string, object: KubeObject | undefined, settings: CertificateSettings, now: number): DesiredState {
  const [namespace = '', name = ''] = key.split('/')
  return desiredOfOneSource({kind: 'Certificate', apiVersion, namespace, name, object}, namespace, (found) => {
    if (!namespaceInScope(namespace, settings)) return {problems: []}
    const {cr, problems} = certificate(found as never, settings.issuer_filter, now)
    const next = nextStatusChangeAt((found as {status?: {notAfter?: string}}).status?.notAfter, now)
    return {cr, problems, ...(cr && next !== undefined ? {requeueAfterMs: next - now} : {})}
  })
}

export const CertificateDiscoveryReconciler = defineDiscovery<CertificateSettings>({
  name: 'certificate-discovery',
  target: certificateCrd,
  enabled: (config) => config.certificate_discovery.enabled,
  requiredCrds: [certManagerCrds.certificates],
  settings: (config) => config.certificate_discovery,
  staleCleanupMinutes: (config) => config.certificate_discovery.stale_cleanup_minutes,
  sources: () => [{
    id: 'certificate',
    kind: 'Certificate',
    apiVersion,
    request: {resource: resources.certManagerCertificates, kind: 'Certificate'},
    groupsOf: (object) => [`${object.metadata?.namespace}/${object.metadata?.name}`],
  }],
  targetGroup: (object) => `${object.metadata.namespace}/${(object.spec as {source_cert_manager?: {name?: string}} | undefined)?.source_cert_manager?.name ?? object.metadata.name}`,
  targetSource: (object) => {
    const name = (object.spec as {source_cert_manager?: {name?: string}} | undefined)?.source_cert_manager?.name
    return name ? {kind: 'Certificate', apiVersion, namespace: object.metadata.namespace, name} : undefined
  },
  desired: (key, caches, settings, {now}) => desiredCertificate(key, caches.get('certificate', key), settings, now),
  syncFinalizer: finalizers.certificateSync,
})

/** The seeds' other name for `CertificateDiscoveryReconciler` (their architecture diagram and controller table). */
export const CertificateDiscoveryController = CertificateDiscoveryReconciler
