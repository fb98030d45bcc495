import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {certificateSpec, type CertificateSpec} from '../../../../src/crds/certificate.js'
import {labelValue} from '../../../../src/operator/conventions.js'
import {
  certificate,
  certificateStatusOf,
  nextStatusChangeAt,
  type CertConditionLike,
  type CertificateDiscoveryResult,
  type CertificateIssuerFilter,
  type CertManagerCertificateLike,
  type IssuanceState,
} from '../../../../src/operator/kinds/certificate/certificate.mapping.js'
import type {DiscoveryProblem} from '../../../../src/operator/discovery/types.js'
import {certificatePayload} from '../../../../src/operator/kinds/certificate/certificate.payload.js'
import {sha8, checkedSpec, checkedName, checkedLabels, checkedProblems, checkedSlug} from '../../../support/helpers.js'

// ---------------------------------------------------------------------------------------------------------------
// helpers

const NOW = Date.parse('2024-03-15T12:00:00Z')
const DAY = 24 * 60 * 60 * 1000
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, 'Z')
const noFilter: CertificateIssuerFilter = {include_issuers: [], exclude_issuers: []}

type Patch = Record<string, unknown>
const isPlain = (v: unknown): v is Patch => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A deep merge of `patch` into a copy of `base`: objects merge, anything else replaces, null removes the key. */
function merge<T>(base: T, patch: Patch = {}): T {
  const out = structuredClone(base) as Record<string, unknown>
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else if (isPlain(value) && isPlain(out[key])) out[key] = merge(out[key], value as Patch)
    else out[key] = value
  }
  return out as T
}

const sha10 = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 10)

const readyTrue: CertConditionLike = {type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired'}

const base: CertManagerCertificateLike = {
  metadata: {name: 'api-example-com-tls', namespace: 'production', uid: 'uid-c1'},
  spec: {
    secretName: 'api-example-com-tls',
    dnsNames: ['api.example.com', 'www.example.com'],
    issuerRef: {name: 'letsencrypt-production', kind: 'ClusterIssuer', group: 'cert-manager.io'},
  },
  status: {
    conditions: [readyTrue],
    notBefore: '2024-03-01T00:00:00Z',
    notAfter: '2024-05-30T00:00:00Z',
    renewalTime: '2024-04-30T00:00:00Z',
    revision: 3,
  },
}
const cert = (patch?: Patch): CertManagerCertificateLike => merge(base, patch)

const baseSpec: CertificateSpec = {
  name: 'api-example-com-tls',
  display_name: 'api.example.com-tls',
  namespace: 'production',
  secret_name: 'api-example-com-tls',
  dns_names: ['api.example.com', 'www.example.com'],
  issuer_name: 'letsencrypt-production',
  issuer_kind: 'clusterissuer',
  issuer_group: 'cert-manager.io',
  certificate_status: 'ready',
  is_ready: true,
  not_before: '2024-03-01T00:00:00Z',
  not_after: '2024-05-30T00:00:00Z',
  renewal_time: '2024-04-30T00:00:00Z',
  source_cert_manager: {name: 'api-example-com-tls', namespace: 'production', uid: 'uid-c1', revision: 3},
}
/** The base spec with top-level fields replaced; `remove` drops fields. */
function spec(overrides: Partial<CertificateSpec> = {}, remove: Array<keyof CertificateSpec> = []): CertificateSpec {
  const out = {...baseSpec, ...overrides}
  for (const key of remove) delete out[key]
  return out
}
const baseLabels = {
  'certificates.polycrate.io/issuer': 'letsencrypt-production',
  'certificates.polycrate.io/source': 'api-example-com-tls',
  'certificates.polycrate.io/ready': 'true',
}
const notReadyLabels = {...baseLabels, 'certificates.polycrate.io/ready': 'false'}
const cr = (s: CertificateSpec = spec(), labels: Record<string, string> = baseLabels, name = 'certmanager-production-api-example-com-tls') =>
  ({name, labels, spec: s})

const C = 'cert-manager Certificate "production/api-example-com-tls"'
const problem = (reason: string, message: string): DiscoveryProblem => ({reason, message})
const timestampProblem = (path: string, value: string, field: string) =>
  problem('InvalidTimestamp', `${C}: ${path} ${value} is not an RFC 3339 timestamp such as "2024-01-01T00:00:00Z"; ${field} is left out.`)

/** The spec passes the CRD schema unchanged, has no undefined keys, names and labels are valid. */
function checked(result: CertificateDiscoveryResult): CertificateDiscoveryResult {
  if (result.cr) {
    checkedSpec(certificateSpec, result.cr.spec)
    checkedSlug(result.cr.spec.name, Infinity)
    checkedName(result.cr.name)
    checkedLabels(result.cr.labels)
    assert.ok(!('operator.polycrate.io/discovered' in result.cr.labels))
  }
  checkedProblems(result.problems)
  return result
}

// ---------------------------------------------------------------------------------------------------------------

describe('certificate discovery (pure)', () => {
  describe('certificate', () => {
    it('the seed\'s example: the same CR name, labels (minus the deprecated one) and spec', () => {
      const example: CertManagerCertificateLike = {
        metadata: {name: 'api-example-com-tls', namespace: 'production', uid: 'abc-123-...'},
        spec: {
          secretName: 'api-example-com-tls',
          dnsNames: ['api.example.com'],
          issuerRef: {name: 'letsencrypt-production', kind: 'ClusterIssuer', group: 'cert-manager.io'},
        },
        status: {
          conditions: [{type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired'}],
          notBefore: '2024-01-01T00:00:00Z',
          notAfter: '2024-04-01T00:00:00Z',
          renewalTime: '2024-03-01T00:00:00Z',
          revision: 1,
        },
      }
      assert.deepEqual(checked(certificate(example, noFilter, Date.parse('2024-01-15T10:30:00Z'))), {
        cr: {
          name: 'certmanager-production-api-example-com-tls',
          labels: {
            'certificates.polycrate.io/issuer': 'letsencrypt-production',
            'certificates.polycrate.io/source': 'api-example-com-tls',
            'certificates.polycrate.io/ready': 'true',
          },
          spec: {
            name: 'api-example-com-tls',
            display_name: 'api.example.com-tls',
            namespace: 'production',
            secret_name: 'api-example-com-tls',
            dns_names: ['api.example.com'],
            issuer_name: 'letsencrypt-production',
            issuer_kind: 'clusterissuer',
            issuer_group: 'cert-manager.io',
            certificate_status: 'ready',
            is_ready: true,
            not_before: '2024-01-01T00:00:00Z',
            not_after: '2024-04-01T00:00:00Z',
            renewal_time: '2024-03-01T00:00:00Z',
            source_cert_manager: {name: 'api-example-com-tls', namespace: 'production', uid: 'abc-123-...', revision: 1},
          },
        },
        problems: [],
      })
    })

    const issuing = (status: string, reason: string, message = '') => ({type: 'Issuing', status, reason, message})
    const cases: Array<{name: string; input: CertManagerCertificateLike; settings?: CertificateIssuerFilter; expected: CertificateDiscoveryResult}> = [
      {
        name: 'a ready certificate, two DNS names',
        input: cert(),
        expected: {cr: cr(), problems: []},
      },
      {
        name: 'Ready=True, NotAfter in 10 days → expiring_soon',
        input: cert({status: {notAfter: iso(NOW + 10 * DAY)}}),
        expected: {cr: cr(spec({certificate_status: 'expiring_soon', not_after: '2024-03-25T12:00:00Z'})), problems: []},
      },
      {
        name: 'Ready=True, NotAfter in the past → expired (is_ready stays true)',
        input: cert({status: {notAfter: '2024-03-01T00:00:00Z'}}),
        expected: {cr: cr(spec({certificate_status: 'expired', not_after: '2024-03-01T00:00:00Z'})), problems: []},
      },
      {
        name: 'Ready=False reason Expired, NotAfter in the past → expired',
        input: cert({status: {notAfter: '2024-03-01T00:00:00Z', conditions: [{type: 'Ready', status: 'False', reason: 'Expired', message: 'Certificate expired on Fri, 01 Mar 2024'}]}}),
        expected: {cr: cr(spec({certificate_status: 'expired', is_ready: false, not_after: '2024-03-01T00:00:00Z'}), notReadyLabels), problems: []},
      },
      {
        name: 'Ready=False DoesNotExist while Issuing=True → pending',
        input: cert({status: {notBefore: null, notAfter: null, renewalTime: null, revision: null, conditions: [
          {type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist'},
          issuing('True', 'DoesNotExist', 'Issuing certificate as Secret does not exist'),
        ]}}),
        expected: {
          cr: cr(spec({certificate_status: 'pending', is_ready: false, source_cert_manager: {name: 'api-example-com-tls', namespace: 'production', uid: 'uid-c1'}}, ['not_before', 'not_after', 'renewal_time']), notReadyLabels),
          problems: [],
        },
      },
      {
        name: 'Ready=False reason Failed → failed, failure_reason = the Ready message',
        input: cert({status: {conditions: [{type: 'Ready', status: 'False', reason: 'Failed', message: 'The certificate request has failed to complete and will be retried'}]}}),
        expected: {
          cr: cr(spec({certificate_status: 'failed', is_ready: false, failure_reason: 'The certificate request has failed to complete and will be retried'}), notReadyLabels),
          problems: [],
        },
      },
      {
        name: 'a failed issuance (Issuing=False/Failed, failedIssuanceAttempts, lastFailureTime) → failed with the Issuing message',
        input: cert({status: {
          conditions: [
            {type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuing certificate as Secret does not exist'},
            issuing('False', 'Failed', 'The certificate request has failed to complete and will be retried: 429 urn:ietf:params:acme:error:rateLimited'),
          ],
          lastFailureTime: '2024-03-15T11:00:00+01:00',
          failedIssuanceAttempts: 2,
        }}),
        expected: {
          cr: cr(spec({
            certificate_status: 'failed',
            is_ready: false,
            last_failure_time: '2024-03-15T10:00:00Z',
            failure_reason: 'The certificate request has failed to complete and will be retried: 429 urn:ietf:params:acme:error:rateLimited',
          }), notReadyLabels),
          problems: [],
        },
      },
      {
        name: 'a retry is running (Issuing=True) after failures → pending, last_failure_time kept, no failure_reason',
        input: cert({status: {
          conditions: [{type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'x'}, issuing('True', 'DoesNotExist')],
          lastFailureTime: '2024-03-15T10:00:00Z',
          failedIssuanceAttempts: 1,
        }}),
        expected: {cr: cr(spec({certificate_status: 'pending', is_ready: false, last_failure_time: '2024-03-15T10:00:00Z'}), notReadyLabels), problems: []},
      },
      {
        name: 'Ready=False RequestChanged, no Issuing condition yet, no failure → pending',
        input: cert({status: {conditions: [{type: 'Ready', status: 'False', reason: 'RequestChanged', message: 'Fields on existing CertificateRequest resource not up to date'}]}}),
        expected: {cr: cr(spec({certificate_status: 'pending', is_ready: false}), notReadyLabels), problems: []},
      },
      {
        name: 'Ready=False WindowError → failed',
        input: cert({status: {conditions: [{type: 'Ready', status: 'False', reason: 'WindowError', message: 'renewal window could not be computed'}]}}),
        expected: {cr: cr(spec({certificate_status: 'failed', is_ready: false, failure_reason: 'renewal window could not be computed'}), notReadyLabels), problems: []},
      },
      {
        name: 'no status yet → pending, no times, no revision',
        input: cert({status: null}),
        expected: {
          cr: cr(spec({certificate_status: 'pending', is_ready: false, source_cert_manager: {name: 'api-example-com-tls', namespace: 'production', uid: 'uid-c1'}}, ['not_before', 'not_after', 'renewal_time']), notReadyLabels),
          problems: [],
        },
      },
      {
        name: 'Ready=Unknown → pending',
        input: cert({status: {conditions: [{type: 'Ready', status: 'Unknown'}]}}),
        expected: {cr: cr(spec({certificate_status: 'pending', is_ready: false}), notReadyLabels), problems: []},
      },
      {
        name: 'a Ready condition with status "Maybe" → pending and a problem',
        input: cert({status: {conditions: [{type: 'Ready', status: 'Maybe'}]}}),
        expected: {
          cr: cr(spec({certificate_status: 'pending', is_ready: false}), notReadyLabels),
          problems: [problem('UnknownConditionStatus', `${C}: the Ready condition's status "Maybe" is not True, False or Unknown; it is treated as Unknown (pending).`)],
        },
      },
      {
        name: 'status.conditions not a list → no conditions and a problem',
        input: cert({status: {conditions: {Ready: 'True'}}}),
        expected: {
          cr: cr(spec({certificate_status: 'pending', is_ready: false}), notReadyLabels),
          problems: [problem('InvalidConditions', `${C}: status.conditions {"Ready":"True"} is not a list; the certificate is treated as having no conditions.`)],
        },
      },
      {
        name: 'no secretName → no CR, MissingSecretName',
        input: cert({spec: {secretName: null}}),
        expected: {problems: [problem('MissingSecretName', `${C}: spec.secretName is missing; the API needs the Secret the certificate is stored in, so no CR is created for it.`)]},
      },
      {
        name: 'issuerRef without kind → cert-manager\'s default Issuer → issuer; without group → cert-manager.io',
        input: cert({spec: {issuerRef: {name: 'letsencrypt-production', kind: null, group: null}}}),
        expected: {cr: cr(spec({issuer_kind: 'issuer'})), problems: []},
      },
      {
        name: 'an external issuer kind → issuer_kind absent and a problem; its group kept',
        input: cert({spec: {issuerRef: {name: 'pca', kind: 'AWSPCAClusterIssuer', group: 'awspca.cert-manager.io'}}}),
        expected: {
          cr: cr(spec({issuer_name: 'pca', issuer_group: 'awspca.cert-manager.io'}, ['issuer_kind']), {...baseLabels, 'certificates.polycrate.io/issuer': 'pca'}),
          problems: [problem('UnsupportedIssuerKind', `${C}: spec.issuerRef.kind "AWSPCAClusterIssuer" is neither Issuer nor ClusterIssuer (an external issuer?); the API only knows issuer and clusterissuer, so issuer_kind is left out.`)],
        },
      },
      {
        name: 'kind "clusterissuer" (wrong case) is not cert-manager\'s spelling → a problem',
        input: cert({spec: {issuerRef: {kind: 'clusterissuer'}}}),
        expected: {
          cr: cr(spec({}, ['issuer_kind'])),
          problems: [problem('UnsupportedIssuerKind', `${C}: spec.issuerRef.kind "clusterissuer" is neither Issuer nor ClusterIssuer (an external issuer?); the API only knows issuer and clusterissuer, so issuer_kind is left out.`)],
        },
      },
      {
        name: 'notAfter "soon" → not_after absent, a problem, and no part in the status',
        input: cert({status: {notAfter: 'soon'}}),
        expected: {cr: cr(spec({}, ['not_after'])), problems: [timestampProblem('status.notAfter', '"soon"', 'not_after')]},
      },
      {
        name: 'unreadable notBefore, renewalTime and lastFailureTime → absent, one problem each',
        input: cert({status: {notBefore: '2024-13-01T00:00:00Z', renewalTime: 1714435200, lastFailureTime: 'never'}}),
        expected: {
          cr: cr(spec({}, ['not_before', 'renewal_time'])),
          problems: [
            timestampProblem('status.notBefore', '"2024-13-01T00:00:00Z"', 'not_before'),
            timestampProblem('status.renewalTime', '1714435200', 'renewal_time'),
            timestampProblem('status.lastFailureTime', '"never"', 'last_failure_time'),
          ],
        },
      },
      {
        name: 'dnsNames not a list → dns_names absent, a problem; display_name from commonName',
        input: cert({spec: {dnsNames: 'api.example.com', commonName: 'api.example.com'}}),
        expected: {
          cr: cr(spec({}, ['dns_names'])),
          problems: [problem('InvalidDnsNames', `${C}: spec.dnsNames "api.example.com" is not a list of strings; dns_names is left out.`)],
        },
      },
      {
        name: 'an IP-only certificate: display_name from the first IP; ipAddresses with a non-string would be a problem',
        input: cert({spec: {dnsNames: [], ipAddresses: ['10.0.0.1', '10.0.0.2']}}),
        expected: {cr: cr(spec({display_name: '10.0.0.1-tls', ip_addresses: ['10.0.0.1', '10.0.0.2']}, ['dns_names'])), problems: []},
      },
      {
        name: 'ipAddresses with a number → absent and a problem',
        input: cert({spec: {ipAddresses: ['10.0.0.1', 7]}}),
        expected: {
          cr: cr(),
          problems: [problem('InvalidIpAddresses', `${C}: spec.ipAddresses ["10.0.0.1",7] is not a list of strings; ip_addresses is left out.`)],
        },
      },
      {
        name: 'no DNS names, IPs or commonName (e.g. an email certificate) → display_name = the Certificate name',
        input: cert({spec: {dnsNames: null}}),
        expected: {cr: cr(spec({display_name: 'api-example-com-tls'}, ['dns_names'])), problems: []},
      },
      {
        name: 'no issuer name → MissingIssuerName, no issuer label',
        input: cert({spec: {issuerRef: {name: ''}}}),
        expected: {
          cr: cr(spec({}, ['issuer_name']), {'certificates.polycrate.io/source': 'api-example-com-tls', 'certificates.polycrate.io/ready': 'true'}),
          problems: [problem('MissingIssuerName', `${C}: spec.issuerRef.name is missing; cert-manager cannot issue it and issuer_name is left out.`)],
        },
      },
      {
        name: 'revision "one" → left out and a problem',
        input: cert({status: {revision: 'one'}}),
        expected: {
          cr: cr(spec({source_cert_manager: {name: 'api-example-com-tls', namespace: 'production', uid: 'uid-c1'}})),
          problems: [problem('InvalidRevision', `${C}: status.revision "one" is not a positive integer; source_cert_manager.revision is left out.`)],
        },
      },
      {
        name: 'no namespace (plain object) → "default"',
        input: cert({metadata: {namespace: null}}),
        expected: {
          cr: cr(
            spec({namespace: 'default', source_cert_manager: {name: 'api-example-com-tls', namespace: 'default', uid: 'uid-c1', revision: 3}}),
            baseLabels,
            'certmanager-default-api-example-com-tls',
          ),
          problems: [],
        },
      },
      {
        name: 'an empty name → no CR, MissingName',
        input: cert({metadata: {name: ''}}),
        expected: {problems: [problem('MissingName', 'The cert-manager Certificate has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
      {
        name: 'an empty object → no CR, MissingName',
        input: {},
        expected: {problems: [problem('MissingName', 'The cert-manager Certificate has no metadata.name: there is nothing to name the CR after, so none is created for it.')]},
      },
      {
        name: 'issuer filter: include_issuers without the issuer → skipped, no problems (not even MissingSecretName)',
        input: cert({spec: {secretName: null}}),
        settings: {include_issuers: ['internal-ca'], exclude_issuers: []},
        expected: {problems: [], skipped: `${C}: issuer "letsencrypt-production" is not in certificate_discovery.issuer_filter.include_issuers (internal-ca)`},
      },
      {
        name: 'issuer filter: exclude_issuers with the issuer → skipped',
        input: cert(),
        settings: {include_issuers: [], exclude_issuers: ['selfsigned-issuer', 'letsencrypt-production']},
        expected: {problems: [], skipped: `${C}: issuer "letsencrypt-production" is in certificate_discovery.issuer_filter.exclude_issuers`},
      },
      {
        name: 'issuer filter: include_issuers and no issuer name → skipped',
        input: cert({spec: {issuerRef: null}}),
        settings: {include_issuers: ['letsencrypt-production'], exclude_issuers: []},
        expected: {problems: [], skipped: `${C}: no issuer is not in certificate_discovery.issuer_filter.include_issuers (letsencrypt-production)`},
      },
      {
        name: 'issuer filter: include_issuers with the issuer → kept',
        input: cert(),
        settings: {include_issuers: ['letsencrypt-production'], exclude_issuers: ['selfsigned-issuer']},
        expected: {cr: cr(), problems: []},
      },
    ]
    for (const {name, input, settings, expected} of cases) {
      it(name, () => assert.deepEqual(checked(certificate(input, settings ?? noFilter, NOW)), expected))
    }

    it('long names: CR name cut to 253 with a hash, label values cut to 63 with a hash, API name a slug', () => {
      const name = `${'very-long-certificate-name-'.repeat(9)}tls`
      const namespace = 'n'.repeat(63)
      const issuer = `issuer-${'x'.repeat(70)}`
      const result = checked(certificate(cert({metadata: {name, namespace}, spec: {issuerRef: {name: issuer}}}), noFilter, NOW))
      const joined = `certmanager-${namespace}-${name}`
      assert.deepEqual(result, {
        cr: {
          name: `${joined.slice(0, 242)}-${sha10(joined)}`,
          labels: {
            'certificates.polycrate.io/issuer': labelValue(issuer),
            'certificates.polycrate.io/source': labelValue(name),
            'certificates.polycrate.io/ready': 'true',
          },
          spec: spec({
            name: `${name.slice(0, 54).replace(/-+$/, '')}-${sha8(name)}`,
            namespace,
            issuer_name: issuer,
            source_cert_manager: {name, namespace, uid: 'uid-c1', revision: 3},
          }),
        },
        problems: [],
      })
      assert.equal(result.cr!.labels['certificates.polycrate.io/source']!.length, 63)
      assert.equal(result.cr!.labels['certificates.polycrate.io/issuer'], `${issuer.slice(0, 52)}-${sha10(issuer)}`)
    })

    it('is deterministic and does not touch its input', () => {
      const input = cert({status: {notAfter: 'soon'}})
      const before = structuredClone(input)
      assert.deepEqual(certificate(input, noFilter, NOW), certificate(input, noFilter, NOW))
      assert.deepEqual(input, before)
    })
  })

  describe('certificateStatusOf', () => {
    const ready = (status: string, reason?: string): CertConditionLike => ({type: 'Ready', status, reason})
    const issuingTrue: IssuanceState = {issuing: {type: 'Issuing', status: 'True'}}
    const cases: Array<[string, CertConditionLike | undefined, string | undefined, IssuanceState, ReturnType<typeof certificateStatusOf>]> = [
      ['Ready=True, far from NotAfter', ready('True', 'Ready'), iso(NOW + 60 * DAY), {}, 'ready'],
      ['Ready=True, no NotAfter', ready('True', 'Ready'), undefined, {}, 'ready'],
      ['Ready=True, NotAfter in 30 days and 1 ms', ready('True'), iso(NOW + 30 * DAY + 1), {}, 'ready'],
      ['Ready=True, NotAfter in exactly 30 days', ready('True'), iso(NOW + 30 * DAY), {}, 'expiring_soon'],
      ['Ready=True, NotAfter in 1 day', ready('True'), iso(NOW + DAY), {}, 'expiring_soon'],
      ['Ready=True, NotAfter 1 ms ahead', ready('True'), iso(NOW + 1), {}, 'expiring_soon'],
      ['Ready=True, NotAfter now', ready('True'), iso(NOW), {}, 'expired'],
      ['Ready=True, NotAfter past', ready('True'), iso(NOW - DAY), {}, 'expired'],
      ['Ready=False, NotAfter past', ready('False', 'Expired'), iso(NOW - DAY), {}, 'expired'],
      ['no Ready, NotAfter past', undefined, iso(NOW - DAY), {}, 'expired'],
      ['Ready=True, NotAfter unreadable', ready('True'), 'soon', {}, 'ready'],
      ['Ready=True with failed renewal attempts stays ready', ready('True'), iso(NOW + 60 * DAY), {failedIssuanceAttempts: 3}, 'ready'],
      ['Ready=False Failed', ready('False', 'Failed'), undefined, {}, 'failed'],
      ['Ready=False Failed even while Issuing', ready('False', 'Failed'), undefined, issuingTrue, 'failed'],
      ['Ready=False ARIError', ready('False', 'ARIError'), undefined, {}, 'failed'],
      ['Ready=False WindowError', ready('False', 'WindowError'), undefined, {}, 'failed'],
      ['Ready=False DoesNotExist, Issuing=True', ready('False', 'DoesNotExist'), undefined, issuingTrue, 'pending'],
      ['Ready=False MissingData, Issuing=True, earlier failures', ready('False', 'MissingData'), undefined, {...issuingTrue, failedIssuanceAttempts: 2, lastFailureTime: '2024-03-15T10:00:00Z'}, 'pending'],
      ['Ready=False DoesNotExist, Issuing=False Failed', ready('False', 'DoesNotExist'), undefined, {issuing: {type: 'Issuing', status: 'False', reason: 'Failed'}}, 'failed'],
      ['Ready=False IncorrectIssuer, failedIssuanceAttempts 1', ready('False', 'IncorrectIssuer'), undefined, {failedIssuanceAttempts: 1}, 'failed'],
      ['Ready=False SecretMismatch, lastFailureTime set', ready('False', 'SecretMismatch'), undefined, {lastFailureTime: '2024-03-15T10:00:00Z'}, 'failed'],
      ['Ready=False failedIssuanceAttempts 0', ready('False', 'InvalidKeyPair'), undefined, {failedIssuanceAttempts: 0}, 'pending'],
      ...['DoesNotExist', 'MissingData', 'InvalidKeyPair', 'InvalidCertificate', 'SecretMismatch', 'IncorrectIssuer', 'IncorrectCertificate', 'RequestChanged', 'Expired', 'Renewing', 'SomethingNew']
        .map((reason): [string, CertConditionLike, undefined, IssuanceState, 'pending'] => [`Ready=False ${reason}, no failure`, ready('False', reason), undefined, {}, 'pending']),
      ['Ready=False without reason', ready('False'), undefined, {}, 'pending'],
      ['Ready=Unknown', ready('Unknown'), iso(NOW + 60 * DAY), {}, 'pending'],
      ['no Ready condition', undefined, iso(NOW + 60 * DAY), {}, 'pending'],
      ['no Ready condition, NotAfter soon', undefined, iso(NOW + DAY), {}, 'pending'],
    ]
    for (const [name, readyCondition, notAfter, issuance, expected] of cases) {
      it(`${name} → ${expected}`, () => assert.equal(certificateStatusOf(readyCondition, notAfter, NOW, issuance), expected))
    }
  })

  describe('nextStatusChangeAt', () => {
    const cases: Array<[string, string | undefined, number | undefined]> = [
      ['NotAfter in 60 days → in 30 days (expiring_soon)', iso(NOW + 60 * DAY), NOW + 30 * DAY],
      ['NotAfter in 30 days + 1 ms → in 1 ms', iso(NOW + 30 * DAY + 1), NOW + 1],
      ['NotAfter in exactly 30 days → at NotAfter (already expiring_soon)', iso(NOW + 30 * DAY), NOW + 30 * DAY],
      ['NotAfter in 10 days → at NotAfter (expired)', iso(NOW + 10 * DAY), NOW + 10 * DAY],
      ['NotAfter now → nothing (already expired)', iso(NOW), undefined],
      ['NotAfter past → nothing', iso(NOW - DAY), undefined],
      ['no NotAfter → nothing', undefined, undefined],
      ['NotAfter unreadable → nothing', 'soon', undefined],
      ['NotAfter with an offset', '2024-05-14T14:00:00+02:00', Date.parse('2024-04-14T12:00:00Z')],
    ]
    for (const [name, notAfter, expected] of cases) {
      it(name, () => assert.equal(nextStatusChangeAt(notAfter, NOW), expected))
    }

    it('at the returned instant the status has changed', () => {
      const ready: CertConditionLike = {type: 'Ready', status: 'True'}
      const notAfter = iso(NOW + 45 * DAY)
      const first = nextStatusChangeAt(notAfter, NOW)!
      assert.equal(certificateStatusOf(ready, notAfter, first - 1), 'ready')
      assert.equal(certificateStatusOf(ready, notAfter, first), 'expiring_soon')
      const second = nextStatusChangeAt(notAfter, first)!
      assert.equal(certificateStatusOf(ready, notAfter, second - 1), 'expiring_soon')
      assert.equal(certificateStatusOf(ready, notAfter, second), 'expired')
      assert.equal(nextStatusChangeAt(notAfter, second), undefined)
    })
  })

  describe('certificatePayload', () => {
    it('a discovered ready certificate: every API field, cluster and component, no source', () => {
      assert.deepEqual(certificatePayload(certificate(cert(), noFilter, NOW).cr!.spec, 'cluster-uuid'), {
        name: 'api-example-com-tls',
        display_name: 'api.example.com-tls',
        namespace: 'production',
        secret_name: 'api-example-com-tls',
        dns_names: ['api.example.com', 'www.example.com'],
        ip_addresses: [],
        issuer_name: 'letsencrypt-production',
        issuer_kind: 'clusterissuer',
        issuer_group: 'cert-manager.io',
        certificate_status: 'ready',
        is_ready: true,
        not_before: '2024-03-01T00:00:00Z',
        not_after: '2024-05-30T00:00:00Z',
        renewal_time: '2024-04-30T00:00:00Z',
        last_failure_time: null,
        failure_reason: '',
        k8s_cluster: 'cluster-uuid',
        created_by_component: 'operator',
      })
    })

    it('a failed certificate whose Secret is gone: the dates are cleared with null, the failure is sent', () => {
      const discovered = certificate(cert({status: {
        notBefore: null, notAfter: null, renewalTime: null,
        conditions: [{type: 'Ready', status: 'False', reason: 'Failed', message: 'boom'}],
        lastFailureTime: '2024-03-15T10:00:00Z',
      }}), noFilter, NOW).cr!.spec
      const body = certificatePayload(discovered, 'c1')
      assert.deepEqual(body, {
        name: 'api-example-com-tls',
        display_name: 'api.example.com-tls',
        namespace: 'production',
        secret_name: 'api-example-com-tls',
        dns_names: ['api.example.com', 'www.example.com'],
        ip_addresses: [],
        issuer_name: 'letsencrypt-production',
        issuer_kind: 'clusterissuer',
        issuer_group: 'cert-manager.io',
        certificate_status: 'failed',
        is_ready: false,
        not_before: null,
        not_after: null,
        renewal_time: null,
        last_failure_time: '2024-03-15T10:00:00Z',
        failure_reason: 'boom',
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
      assert.deepEqual(JSON.parse(JSON.stringify(body)), body, 'the nulls survive JSON')
    })

    it('a hand-written minimal CR: name slugged, namespace from the source, challenge fields copied, lists not shared', () => {
      const handWritten: CertificateSpec = {
        name: 'Wildcard.Example',
        secret_name: 'wildcard-tls',
        kind: 'tls',
        dns_names: ['*.example.com'],
        current_challenge_type: 'dns01',
        current_challenge_status: 'pending',
        challenge_reason: 'Waiting for DNS-01 challenge propagation',
        cert_manager_status: {conditions: []},
        source_cert_manager: {name: 'wildcard', namespace: 'edge'},
      }
      const body = certificatePayload(handWritten, 'c1')
      assert.deepEqual(body, {
        name: `wildcard-example-${sha8('Wildcard.Example')}`,
        display_name: null,
        namespace: 'edge',
        secret_name: 'wildcard-tls',
        kind: 'tls',
        dns_names: ['*.example.com'],
        ip_addresses: [],
        issuer_name: '',
        issuer_group: '',
        not_before: null,
        not_after: null,
        renewal_time: null,
        last_failure_time: null,
        failure_reason: '',
        current_challenge_type: 'dns01',
        current_challenge_status: 'pending',
        challenge_reason: 'Waiting for DNS-01 challenge propagation',
        cert_manager_status: {conditions: []},
        k8s_cluster: 'c1',
        created_by_component: 'operator',
      })
      assert.notEqual(body.dns_names, handWritten.dns_names)
      assert.equal(certificatePayload({name: 'x', secret_name: 's'}, 'c1').namespace, 'default')
    })
  })
})
